# Shared harness for compat test scripts (sourced). Each test script defines
# case functions and calls `case_run TAG NAME FUNCTION`; the harness prints one
# line per case:   PASS [core] java.topics.create (1.2s)
#                  FAIL [core] kcat.metadata (0.3s) -- <last log lines>
# Filters (env): ONLY_TAG=core|groups, CASE_FILTER=<grep -E regex on name>,
#                CASE_TIMEOUT=<seconds per case, default 180>.
# Logs of each case go to $OUT/<name>.log.
set -uo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CACHE="$HERE/.cache"
export BOOTSTRAP="${BOOTSTRAP:-127.0.0.1:9092}"
export RUN_ID="${RUN_ID:-$(date +%H%M%S)-$RANDOM}"
export OUT="${OUT:-$HERE/out/$RUN_ID}"
mkdir -p "$OUT"
export KAFKA_LIBS="$CACHE/kafka-libs"
export KAFKA_LATEST_LIBS="$CACHE/kafka-libs-latest"
export PY="$CACHE/venv/bin/python"
export NODE_PATH="$CACHE/node/node_modules"
export FRANZ="$CACHE/bin/franz-roundtrip"
# Java tools: plain `java -cp`, warnings to stderr, small heap.
export KAFKA_JAVA_OPTS="${KAFKA_JAVA_OPTS:--Xmx256m -XX:TieredStopAtLevel=1 -XX:+UseSerialGC}"
PASSED=0; FAILED=0; SKIPPED=0

# jk MAINCLASS args...  -- run a Kafka Java tool from the cached jars
jk() {
  # shellcheck disable=SC2086
  java $KAFKA_JAVA_OPTS -Dlog4j2.configurationFile="$HERE/lib/log4j2-tools.properties" \
    -cp "$KAFKA_LIBS/*" "$@"
}
kafka_topics()  { jk org.apache.kafka.tools.TopicCommand --bootstrap-server "$BOOTSTRAP" "$@"; }
kafka_configs() { jk kafka.admin.ConfigCommand --bootstrap-server "$BOOTSTRAP" "$@"; }
kafka_console_producer() { jk org.apache.kafka.tools.ConsoleProducer --bootstrap-server "$BOOTSTRAP" "$@"; }
kafka_console_consumer() { jk org.apache.kafka.tools.consumer.ConsoleConsumer --bootstrap-server "$BOOTSTRAP" "$@"; }
kafka_consumer_groups()  { jk org.apache.kafka.tools.consumer.group.ConsumerGroupCommand --bootstrap-server "$BOOTSTRAP" "$@"; }

# topic NAME -> unique per run
topic() { echo "compat-$RUN_ID-$1"; }

# create_topic NAME PARTITIONS  (via confluent-kafka admin: fast, no JVM)
create_topic() { "$PY" "$HERE/lib/admin.py" create "$1" "${2:-1}"; }

fail() { echo "ASSERTION FAILED: $*" >&2; return 1; }
# A case function that cannot run in this environment: `skip "reason"` (exit code SKIP_RC).
SKIP_RC=77
skip() { echo "SKIPPED: $*"; exit "$SKIP_RC"; }

case_run() {
  local tag="$1" name="$2" fn="$3"
  if [ -n "${ONLY_TAG:-}" ] && [ "$ONLY_TAG" != "$tag" ]; then return 0; fi
  if [ -n "${CASE_FILTER:-}" ] && ! grep -qE "$CASE_FILTER" <<<"$name"; then return 0; fi
  local logf="$OUT/$name.log" t0 t1 rc
  t0=$(date +%s.%N)
  # capture.sh: tell capture_proxy.py which case opens the next connections
  if [ -n "${CAPTURE_LABEL_FILE:-}" ]; then echo "$name" > "$CAPTURE_LABEL_FILE"; fi
  ( set -e; "$fn" ) >"$logf" 2>&1 </dev/null &
  local pid=$!
  # watchdog: its own stdout is /dev/null so it never holds run.sh's pipe open
  ( sleep "${CASE_TIMEOUT:-180}" & sp=$!; trap 'kill $sp 2>/dev/null; exit 0' TERM; wait $sp
    echo "TIMEOUT after ${CASE_TIMEOUT:-180}s" >>"$logf"; pkill -TERM -P "$pid"; kill -TERM "$pid" ) >/dev/null 2>&1 &
  local wd=$!
  wait "$pid"; rc=$?
  kill "$wd" 2>/dev/null; wait "$wd" 2>/dev/null
  t1=$(date +%s.%N)
  local dt; dt=$(awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.1f", b-a}')
  if [ "$rc" -eq 0 ]; then
    PASSED=$((PASSED+1)); echo "PASS [$tag] $name (${dt}s)"
  elif [ "$rc" -eq "$SKIP_RC" ]; then
    # A case that cannot run here (e.g. needs a binary that is not built) says why.
    SKIPPED=$((SKIPPED+1)); echo "SKIP [$tag] $name -- $(grep -v '^\s*$' "$logf" | tail -1 | cut -c1-200)"
  else
    FAILED=$((FAILED+1))
    echo "FAIL [$tag] $name (${dt}s) -- $(grep -v '^\s*$' "$logf" | tail -3 | tr '\n' ' ' | cut -c1-300) [log: $logf]"
  fi
}

case_summary() {
  # Standalone runs end with the plain summary; run.sh sums the PASS/FAIL lines.
  [ -n "${UNDER_RUN_SH:-}" ] || echo "$PASSED passed, $FAILED failed"
  [ "$FAILED" -eq 0 ]
}
