#!/usr/bin/env bash
# After a run: prove that each codec case really wrote batches with that codec,
# by reading the broker's segment files with Kafka's own kafka-dump-log
# (kafka.tools.DumpLogSegments). Needs local access to the broker's log dir:
#   ./check-codecs.sh LOG_DIR RUN_ID
# e.g. ./check-codecs.sh .cache/kafka-ref-9092/data 113424-14458
# (Against Strata this doubles as the DESIGN.md check that kafka-dump-log reads its segments.)
set -uo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
DIR="$1"; RID="$2"; bad=0; n=0
for d in "$DIR"/compat-"$RID"-*-{none,gzip,snappy,lz4,zstd}-0; do
  [ -d "$d" ] || continue
  want="${d%-0}"; want="${want##*-}"
  got=$(java -Dlog4j2.configurationFile="$HERE/lib/log4j2-tools.properties" -cp "$HERE/.cache/kafka-libs/*" \
        kafka.tools.DumpLogSegments --files "$d"/00000000000000000000.log 2>/dev/null \
        | grep -o 'compresscodec: [a-z0-9]*' | awk '{print $2}' | sort -u | tr '\n' ' ')
  n=$((n+1))
  if [ "$got" = "$want " ]; then echo "ok   $(basename "$d"): $got"; else echo "BAD  $(basename "$d"): want $want, got '$got'"; bad=$((bad+1)); fi
done
echo "$((n-bad)) passed, $bad failed"
[ "$bad" -eq 0 ] && [ "$n" -gt 0 ]
