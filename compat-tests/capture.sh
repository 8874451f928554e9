#!/usr/bin/env bash
# Capture real request frames from every client of the suite.
# Starts a separate reference Kafka (port 9192/9193) that ADVERTISES the proxy
# address 127.0.0.1:19092, runs capture_proxy.py in front of it, runs the whole
# suite through the proxy (each case labels its connections), then stops both.
#   ./capture.sh [OUTDIR [run.sh args...]]   OUTDIR default .cache/capture/<timestamp>
#   KAFKA_REF_LIBS=.cache/kafka-libs-latest ./capture.sh DIR --clients "java txn" --filter '^java-latest\.'
#                              the newest Java client and tools against the newest Kafka
# Afterwards: OUTDIR/index.tsv has every frame (case, client, api, version, size,
# client software); lib/select_golden.py copies a small set into golden/.
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
OUTDIR="${1:-$HERE/.cache/capture/$(date +%Y%m%d-%H%M%S)}"
[ $# -gt 0 ] && shift
mkdir -p "$OUTDIR"
export KAFKA_PORT=9192 KAFKA_CONTROLLER_PORT=9193 KAFKA_ADVERTISED=127.0.0.1:19092 KAFKA_REF_FRESH=1
export KAFKA_REF_DIR="$HERE/.cache/kafka-capture"
"$HERE/kafka-ref.sh" start
LABEL="$OUTDIR/.label"; echo "setup.start" > "$LABEL"
"$HERE/.cache/venv/bin/python" "$HERE/capture_proxy.py" --listen 127.0.0.1:19092 \
  --upstream 127.0.0.1:9192 --out "$OUTDIR" --label-file "$LABEL" > "$OUTDIR/proxy.log" 2>&1 &
PROXY=$!
trap 'kill $PROXY 2>/dev/null; "$HERE/kafka-ref.sh" stop' EXIT
sleep 1
set +e
BOOTSTRAP=127.0.0.1:19092 CAPTURE_LABEL_FILE="$LABEL" "$HERE/run.sh" "$@" ${CAPTURE_RUN_ARGS:-}
rc=$?
set -e
echo "frames: $(($(wc -l < "$OUTDIR/index.tsv"))) in $OUTDIR/index.tsv"
exit $rc
