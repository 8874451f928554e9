#!/usr/bin/env bash
# Start-up measurements of the release binary (results and method: docs/measurements.md):
#   1. idle RSS of a fresh broker with an empty data dir (VmRSS from /proc/PID/status);
#   2. recovery after kill -9 of a ~SIZE_MB single-partition log (default 1024 MiB, written
#      by kafka-producer-perf-test in 16 KiB batches): wall time from exec until the port
#      accepts, and the startup_ms the "strata started" line reports;
#   3. the same for a clean restart (SIGTERM, then start) of the same data.
# Needs: cargo build --release --bin strata; compat-tests/setup.sh (Kafka jars, Python venv).
#   benches/recovery.sh [SIZE_MB]        env: PORT (19411), DIR (a new /tmp dir), KEEP=1,
#     WAIT_S=N: wait N s between producing and kill -9 (65 lets the 60 s recovery-point
#     checkpoint record the flush of the rolled segments, so only the active one is recovered)
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
BIN="$ROOT/target/release/strata"
LIBS="$ROOT/compat-tests/.cache/kafka-libs"
PY="$ROOT/compat-tests/.cache/venv/bin/python"
SIZE_MB="${1:-1024}"
PORT="${PORT:-19411}"
DIR="${DIR:-$(mktemp -d /tmp/strata-recovery.XXXXXX)}"
RECORD_BYTES=1024
RECORDS=$(( SIZE_MB * 1024 * 1024 / (RECORD_BYTES + 8) ))   # ~8 bytes of record framing each
TOPIC=recovery
export NO_COLOR=1 BOOTSTRAP="127.0.0.1:$PORT"
[ -x "$BIN" ] || { echo "build first: cargo build --release --bin strata" >&2; exit 1; }
PID=""
trap '[ -n "$PID" ] && kill -9 "$PID" 2>/dev/null; [ "${KEEP:-0}" = 1 ] || rm -rf "$DIR"' EXIT

now_ms() { echo $(( $(date +%s%N) / 1000000 )); }
rss_kib() { awk '/^VmRSS:/ {print $2}' "/proc/$1/status"; }

# start DATA_DIR: exec the broker; sets PID, READY_MS (until the port accepts: the listener
# is bound once the logs are open, i.e. after recovery) and SERVING_MS (until the "strata
# started" line: partitions opened, producer state rebuilt, requests served).
start() {
  local data="$1" t0 t1 lines
  lines=$(grep -c 'strata started' "$DIR/broker.log" 2>/dev/null || true)
  t0=$(now_ms)
  "$BIN" --override "listeners=PLAINTEXT://127.0.0.1:$PORT" --override "log.dirs=$data" --override "strata.admin.listeners=" \
    >>"$DIR/broker.log" 2>&1 &
  PID=$!
  until (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null; do
    kill -0 "$PID" 2>/dev/null || { tail -5 "$DIR/broker.log"; exit 1; }
    sleep 0.01
  done
  t1=$(now_ms)
  READY_MS=$(( t1 - t0 ))
  until [ "$(grep -c 'strata started' "$DIR/broker.log")" -gt "${lines:-0}" ]; do sleep 0.01; done
  SERVING_MS=$(( $(now_ms) - t0 ))
}
startup_ms() { grep 'strata started' "$DIR/broker.log" | tail -1 | sed -E 's/.*startup_ms=([0-9]+).*/\1/'; }
stop() {
  local t0; t0=$(now_ms)
  kill -TERM "$PID"; wait "$PID" || true
  STOP_MS=$(( $(now_ms) - t0 )); PID=""
}
kill9() { kill -9 "$PID"; wait "$PID" 2>/dev/null || true; PID=""; }
high_watermark() {
  "$PY" -c "
from confluent_kafka import Consumer, TopicPartition
c = Consumer({'bootstrap.servers': '$BOOTSTRAP', 'group.id': 'unused'})
print(c.get_watermark_offsets(TopicPartition('$TOPIC', 0), timeout=30)[1])"
}

echo "# data in $DIR; $(nproc) cores; $(uname -r); strata $(git -C "$ROOT" rev-parse --short HEAD)"

start "$DIR/idle"
sleep 2
echo "idle: port after ${READY_MS} ms, serving after ${SERVING_MS} ms (startup_ms=$(startup_ms)), VmRSS $(rss_kib "$PID") KiB"
stop

start "$DIR/data"
"$PY" "$ROOT/compat-tests/lib/admin.py" create "$TOPIC" 1
t0=$(now_ms)
java -Xmx512m -Dlog4j2.configurationFile="$ROOT/compat-tests/lib/log4j2-tools.properties" -cp "$LIBS/*" \
  org.apache.kafka.tools.ProducerPerformance --topic "$TOPIC" --num-records "$RECORDS" \
  --record-size "$RECORD_BYTES" --throughput -1 \
  --producer-props "bootstrap.servers=$BOOTSTRAP" acks=1 linger.ms=5 batch.size=16384 \
  | tail -1
echo "produced $RECORDS records in $(( $(now_ms) - t0 )) ms;" \
  "log $(du -sb "$DIR/data/$TOPIC-0" | cut -f1) bytes in $(ls "$DIR/data/$TOPIC-0"/*.log | wc -l) segment(s);" \
  "VmRSS $(rss_kib "$PID") KiB"
if [ "${WAIT_S:-0}" -gt 0 ]; then sleep "$WAIT_S"; fi
echo "recovery-point-offset-checkpoint before kill -9: $(tail -n +3 "$DIR/data/recovery-point-offset-checkpoint" | tr '\n' ' ')"
kill9

start "$DIR/data"
echo "after kill -9: port after ${READY_MS} ms, serving after ${SERVING_MS} ms (startup_ms=$(startup_ms)); high watermark $(high_watermark);" \
  "VmRSS $(rss_kib "$PID") KiB"
grep -E 'truncated|recover' "$DIR/broker.log" | tail -3 || true
stop
echo "clean shutdown took ${STOP_MS} ms"

start "$DIR/data"
echo "clean restart: port after ${READY_MS} ms, serving after ${SERVING_MS} ms (startup_ms=$(startup_ms)); high watermark $(high_watermark);" \
  "VmRSS $(rss_kib "$PID") KiB"
stop
