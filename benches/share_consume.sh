#!/usr/bin/env bash
# Share-group consume throughput with 1 and 8 share consumers on one partition, Strata next to
# Apache Kafka 4.3.1 (issue 17). Everything is in benches/share_consume.py (knobs BENCH_SHARE_*
# in its header); this wrapper checks the Kafka 4.3.1 jars and the release binary and runs it
# at a higher priority, as compare.sh does.
#
#   benches/share_consume.sh      # 3 rounds, 2,000,000 x 100 B records, 1 and 8 consumers
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
ROOT="$(dirname "$HERE")"
cd "$ROOT"
[ -f compat-tests/.cache/kafka-libs-latest/.done ] || compat-tests/setup.sh >/dev/null
[ -x "${STRATA_BIN:-target/release/strata}" ] || cargo build --release --bin strata
PY="$ROOT/compat-tests/.cache/venv/bin/python"   # has confluent-kafka (topic creation)
# BENCH_NICE (default -10; needs root, ignored otherwise), as in compare.sh.
NICE=(); if [ "$(id -u)" = 0 ]; then NICE=(nice -n "${BENCH_NICE:--10}"); fi
exec "${NICE[@]}" "$PY" "$HERE/share_consume.py"
