#!/usr/bin/env bash
# Run the compat suite against the broker at $BOOTSTRAP (default 127.0.0.1:9092).
#   ./run.sh                   all cases
#   ./run.sh --only core       only single-node core cases (no consumer groups)
#   ./run.sh --only groups     only consumer-group cases
#   ./run.sh --filter REGEX    only cases whose name matches (grep -E)
#   ./run.sh --clients "java kcat"   only these test scripts (tests/<name>.sh)
#   ./run.sh --ref             start the reference Apache Kafka first (kafka-ref.sh), stop it after
# Prints one line per case and finally exactly "N passed, M failed".
set -uo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
ONLY_TAG=""; CASE_FILTER=""; CLIENTS="java kcat python kafkajs franz rdkafka strata txn franz_kgo metrics console java_share"; REF=0
while [ $# -gt 0 ]; do
  case "$1" in
    --only) ONLY_TAG="$2"; shift 2 ;;
    --filter) CASE_FILTER="$2"; shift 2 ;;
    --clients) CLIENTS="$2"; shift 2 ;;
    --ref) REF=1; shift ;;
    -h|--help) sed -n '2,9p' "$0"; exit 0 ;;
    *) echo "unknown argument $1" >&2; exit 2 ;;
  esac
done
export ONLY_TAG CASE_FILTER UNDER_RUN_SH=1
export BOOTSTRAP="${BOOTSTRAP:-127.0.0.1:9092}"
export RUN_ID="${RUN_ID:-$(date +%H%M%S)-$RANDOM}"
export OUT="$HERE/out/$RUN_ID"
mkdir -p "$OUT"
if [ "$REF" = 1 ]; then
  KAFKA_PORT="${BOOTSTRAP##*:}" "$HERE/kafka-ref.sh" start || exit 1
  trap 'KAFKA_PORT="${BOOTSTRAP##*:}" "$HERE/kafka-ref.sh" stop' EXIT
fi
if ! (exec 3<>"/dev/tcp/${BOOTSTRAP%:*}/${BOOTSTRAP##*:}") 2>/dev/null; then
  echo "nothing listening at $BOOTSTRAP (start a broker, or use --ref)" >&2; exit 1
fi
[ -x "$HERE/.cache/bin/franz-roundtrip" ] || { echo "run ./setup.sh first" >&2; exit 1; }
echo "# compat run $RUN_ID against $BOOTSTRAP${ONLY_TAG:+ (only $ONLY_TAG)}${CASE_FILTER:+ (filter $CASE_FILTER)}; logs in $OUT"
T0=$(date +%s)
for c in $CLIENTS; do
  bash "$HERE/tests/$c.sh" 2>&1
done | tee "$OUT/summary.txt"
P=$(grep -c '^PASS ' "$OUT/summary.txt"); F=$(grep -c '^FAIL ' "$OUT/summary.txt")
echo "# $(( $(date +%s) - T0 ))s"
echo "$P passed, $F failed"
[ "$F" -eq 0 ] && [ "$P" -gt 0 ]
