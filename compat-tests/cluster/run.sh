#!/usr/bin/env bash
# The 3-process cluster suite: starts a fresh 3-node cluster (cluster.sh), runs chaos.py and
# tools.sh as harness cases, stops the cluster (also on error or Ctrl-C). Prints one
# PASS/FAIL line per case and finally exactly "N passed, M failed"; on a failure, the last
# 40 lines of each node's log.
#
#   compat-tests/cluster/run.sh                   against target/release/strata
#   CLUSTER_IMPL=kafka compat-tests/cluster/run.sh   against reference Apache Kafka brokers
#   compat-tests/cluster/run.sh --filter chaos    only cases whose name matches (grep -E)
#
# Cases: cluster.chaos (chaos.py), cluster.txn.* (txn.py), cluster.librdkafka.* (librdkafka's
# own tests 0103 and 0129, rdkafka_tests.sh), cluster.share.failover* (share_failover.sh: a
# KafkaShareConsumer while the partition leader, or the share coordinator, is killed),
# cluster.tools.* (tools.sh), last cluster.rebootstrap.* (rebootstrap.sh: moves every broker
# and controller to new ports and back).
# Env: STRATA_BIN, CLUSTER_PORT_BASE (default 19400; uses base+1..4, base+11..15, base+20..23, base+31..33),
# CLUSTER_DIR (default out/<run>/cluster), CHAOS_DURATION (default 30 s), CLUSTER_KAFKA_LIBS (with
# CLUSTER_IMPL=kafka: .cache/kafka-libs-latest runs the newest Kafka, which the share case needs).
set -uo pipefail
CLDIR="$(cd "$(dirname "$0")" && pwd)"
while [ $# -gt 0 ]; do
  case "$1" in
    --filter) export CASE_FILTER="$2"; shift 2 ;;
    -h|--help) sed -n '2,18p' "$0"; exit 0 ;;
    *) echo "unknown argument $1" >&2; exit 2 ;;
  esac
done
export RUN_ID="${RUN_ID:-$(date +%H%M%S)-$RANDOM}"
export OUT="$CLDIR/../out/$RUN_ID"
mkdir -p "$OUT"
OUT="$(cd "$OUT" && pwd)"
export CLUSTER_DIR="${CLUSTER_DIR:-$OUT/cluster}"
export UNDER_RUN_SH=1
CL="$CLDIR/cluster.sh"
BOOTSTRAP=$(bash "$CL" bootstrap); export BOOTSTRAP
SUMMARY="$OUT/cluster-summary.txt"
: >"$SUMMARY"

dump_logs() {
  local n f
  for n in 1 2 3; do
    f=$(bash "$CL" log "$n" 2>/dev/null) || continue
    echo "--- node $n log, last 40 lines ($f) ---"
    tail -40 "$f" 2>/dev/null
  done
}
cleanup() { bash "$CL" stop >/dev/null 2>&1 || true; }
trap cleanup EXIT
trap 'exit 130' INT TERM

echo "# cluster run $RUN_ID (${CLUSTER_IMPL:-strata}); logs in $OUT, cluster in $CLUSTER_DIR"
T0=$(date +%s)
if ! bash "$CL" start >"$OUT/cluster-start.log" 2>&1 || ! bash "$CL" wait-ready 60 >>"$OUT/cluster-start.log" 2>&1; then
  echo "FAIL [cluster] cluster.start -- $(tail -3 "$OUT/cluster-start.log" | tr '\n' ' ' | cut -c1-300)" | tee -a "$SUMMARY"
  dump_logs
  echo "0 passed, 1 failed"
  exit 1
fi
echo "PASS [cluster] cluster.start ($(( $(date +%s) - T0 ))s)" | tee -a "$SUMMARY"

{
  # shellcheck source=../lib/harness.sh
  source "$CLDIR/../lib/harness.sh"
  chaos() { "$PY" -u "$CLDIR/chaos.py" --topic "$(topic chaos)" --duration "${CHAOS_DURATION:-30}"; }
  CASE_TIMEOUT=360 case_run cluster cluster.chaos chaos
  # chaos.py must leave every node up; bring back any it left down so the tools still run.
  revive_nodes() {
    local n st
    for n in 1 2 3; do
      st=$(bash "$CL" status | sed -n "s/^node $n: \([a-z]*\).*/\1/p")
      [ "$st" = down ] && bash "$CL" restart "$n" >/dev/null
      [ "$st" = paused ] && bash "$CL" resume "$n" >/dev/null
    done
    true
  }
  revive_nodes
  # Transactions over RF-1 and RF-3 topics led apart from the coordinator (issue 12, item 9),
  # and the scenarios of librdkafka's transaction tests 0103 and 0129 (txn.py says why they
  # are written with confluent-kafka).
  txn_rf() { "$PY" -u "$CLDIR/txn.py" rf-cases "$(topic txn)"; }
  txn_0129() { "$PY" -u "$CLDIR/txn.py" rdkafka-0129 "$(topic txn)"; }
  txn_0103() { "$PY" -u "$CLDIR/txn.py" rdkafka-0103 "$(topic txn)"; }
  CASE_TIMEOUT=240 case_run cluster cluster.txn.rf1-rf3 txn_rf
  CASE_TIMEOUT=240 case_run cluster cluster.txn.rdkafka-0129 txn_0129
  CASE_TIMEOUT=240 case_run cluster cluster.txn.rdkafka-0103 txn_0103
  # Transactions version 2 with the newest Java client over an RF-3 topic: partitions added
  # by their leaders through a coordinator that is usually another broker, markers with their
  # transaction version (WriteTxnMarkers v2).
  txn_java_v2() {
    mkdir -p "$OUT/java-latest-txn-v2"
    javac -d "$OUT/java-latest-txn-v2" -cp "$KAFKA_LATEST_LIBS/*" "$CLDIR/../tests/TxnCheck.java" \
      "$CLDIR/../tests/TxnV2Check.java"
    java -cp "$OUT/java-latest-txn-v2:$KAFKA_LATEST_LIBS/*" TxnV2Check "$BOOTSTRAP" "$(topic txn-v2)" 3
  }
  CASE_TIMEOUT=240 case_run cluster cluster.txn.java-latest-v2 txn_java_v2
  # Share groups (KIP-932, issue 17): a Kafka 4.3.1 share consumer keeps going when the
  # partition leader is killed, and nothing it accepted before comes back (share_failover.sh).
  CASE_TIMEOUT=300 bash "$CLDIR/share_failover.sh"
  revive_nodes
  # librdkafka's own transaction tests, built from Debian's source package by setup.sh.
  rdk_0129() { bash "$CLDIR/rdkafka_tests.sh" 0129; }
  rdk_0103() { bash "$CLDIR/rdkafka_tests.sh" 0103; }
  CASE_TIMEOUT=240 case_run cluster cluster.librdkafka.0129 rdk_0129
  CASE_TIMEOUT=600 case_run cluster cluster.librdkafka.0103 rdk_0103
  bash "$CLDIR/tools.sh"
  # Last, as it stops the whole cluster twice: a Java consumer that must follow it to new
  # broker addresses by re-bootstrapping (KIP-899/KIP-1102).
  bash "$CLDIR/rebootstrap.sh"
} 2>&1 | tee -a "$SUMMARY"

P=$(grep -c '^PASS ' "$SUMMARY"); F=$(grep -c '^FAIL ' "$SUMMARY")
echo "# $(( $(date +%s) - T0 ))s"
if [ "$F" -ne 0 ]; then dump_logs; fi
echo "$P passed, $F failed"
[ "$F" -eq 0 ] && [ "$P" -gt 1 ]
