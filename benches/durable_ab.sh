#!/usr/bin/env bash
# Before/after of Strata's durable mode alone: two broker binaries, alternating, one round of
# benches/durable_compare.py (strata-durable only) per binary and pair. Prints each run's
# "[durable]   <scenario>: <records/s>, <CPU-s/GB> <rounds>" lines, as BENCHMARKS.md's A/B
# tables quote them.
#
#   benches/durable_ab.sh /tmp/ab/before/strata /tmp/ab/after/strata
#
# Env: AB_PAIRS (3), AB_IOPS (space-separated BENCH_DUR_WRITE_IOPS values, "2000 0": the
# throttled disk, then the unthrottled one), AB_SCENARIOS (comma-separated durable_compare.py
# scenarios; default p1_100B_acksall_small,p4x4_100B_acksall_small,p1x8_100B_acksall_small).
set -euo pipefail
before=${1:?before binary}
after=${2:?after binary}
cd "$(dirname "$0")/.."
py=compat-tests/.cache/venv/bin/python
scenarios=${AB_SCENARIOS:-p1_100B_acksall_small,p4x4_100B_acksall_small,p1x8_100B_acksall_small}
for iops in ${AB_IOPS:-2000 0}; do
  for pair in $(seq 1 "${AB_PAIRS:-3}"); do
    for kind in before after; do
      bin=$before
      [ "$kind" = after ] && bin=$after
      echo "== $kind iops=$iops pair=$pair"
      STRATA_BIN=$bin BENCH_DUR_WRITE_IOPS=$iops BENCH_DUR_ROUNDS=1 \
        BENCH_DUR_CONFIGS=strata-durable BENCH_DUR_SCENARIOS=$scenarios \
        nice -n -10 "$py" benches/durable_compare.py 2>&1 >/dev/null | grep '^\[durable\]   ' || true
    done
  done
done
