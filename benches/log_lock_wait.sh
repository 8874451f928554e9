#!/bin/bash
# How often a read of a partition log waits for the log's lock, and for how long (BENCHMARKS.md,
# "How often a read still waits for the log's lock"). Needs a broker built with
# benches/results/log-read-lock-wait-20261206.diff applied (it prints LOCKSTATS lines every 5 s)
# and benches/build-rdkafka-perf.sh's latency_probe. One broker per call, on 127.0.0.1:9092:
#   STRATA_LOCKSTATS_BIN=/tmp/strata-lockstats benches/log_lock_wait.sh PARTITIONS RATE ACKS
# prints the counters before and after one 15 s probe run at RATE records/s (acks ACKS), and
# the probe's own figures.
set -eu
P=$1; R=$2; A=$3
BIN=${STRATA_LOCKSTATS_BIN:?a broker built with the lock-wait patch}
HERE=$(cd "$(dirname "$0")" && pwd)
PROBE="$HERE/../compat-tests/.cache/bin/latency_probe"
D=$(mktemp -d /tmp/lock-wait-XXXX)
"$BIN" --override log.dirs="$D/data" --override num.partitions="$P" > "$D/log" 2>&1 &
PID=$!
trap 'kill $PID 2>/dev/null; wait $PID 2>/dev/null; rm -rf "$D"' EXIT
sleep 1.5
IDEM=false; [ "$A" = all ] && IDEM=true
run() {
  "$PROBE" 127.0.0.1:9092 t "$1" "$2" 100 "$3" -n "$P" -P acks="$A" -P linger.ms=0 \
    -P enable.idempotence=$IDEM -P compression.type=none \
    -C fetch.wait.max.ms=500 -C fetch.min.bytes=1
}
run 1000 2 1 > /dev/null 2>&1          # creates topic t
sleep 5.5; before=$(grep LOCKSTATS "$D/log" | tail -1)
run "$R" 15 3 > "$D/probe.txt" 2>&1
sleep 5.5; after=$(grep LOCKSTATS "$D/log" | tail -1)
echo "partitions=$P rate=$R acks=$A"
echo "  before: $before"
echo "  after:  $after"
grep p99 "$D/probe.txt" | head -1
