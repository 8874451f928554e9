#!/usr/bin/env bash
# End-to-end comparison of Strata with Apache Kafka on this machine (issue 5).
#
#   benches/compare.sh            # full run: 3 pairs (Kafka, Strata alternating)
#
# From a fresh clone this installs the pinned Kafka jars (compat-tests/setup.sh, cached under
# compat-tests/.cache), builds the release broker, runs benches/compare.py (raw results in
# benches/results/compare-<time>.json) and benches/report.py (Markdown table with medians and
# Strata/Kafka ratios in benches/results/compare-<time>.md, also spliced into BENCHMARKS.md).
# Knobs (environment, defaults in compare.py): BENCH_PAIRS=3, BENCH_N100=2000000,
# BENCH_N1K=400000, BENCH_NSCALE=1000000, BENCH_SCALES=100,1000, BENCH_CONNS=1000,10000,
# BENCH_N_RDK=5000000 (rdkafka_performance 100 B runs; 1 KiB runs use a fifth), BENCH_E2E_N=5000, BENCH_LOADED_SECONDS=20, BENCH_KAFKA_HEAP="-Xmx1g -Xms1g",
# BENCH_KAFKA_PORT=29092 (and +1 for its controller), BENCH_STRATA_PORT=29192, BENCH_NICE=-10,
# BENCH_ONLY=prefix,... (run only the scenarios whose names start so; start-up is always measured),
# BENCH_BROKERS=kafka,strata,
# BENCH_CONSUMERS=confluent,confluent-qb10,kafka-python,kafkajs,franz (client consumers reading
# the 100 B and 1 KiB topics: consume_rdk_*, consume_rdkqb10_* (confluent-kafka with
# fetch.queue.backoff.ms=10), consume_kpy_*, consume_kjs_*, consume_franz_*; each adds two reads
# per run; franz-go's program is built with `go build` on first use). benches/consumer_parity.py
# runs only these, alternating the brokers run by run (BENCHMARKS.md, "Consumer parity").
# Consumer parity inside this harness (issue 15), ~10 min:
#   BENCH_ONLY=produce_p1_100B_acks1,produce_p1_1024B_acks1,consume_p1,consume_rdk_p1,consume_rdkqb10,consume_kpy,consume_kjs,consume_franz \
#   BENCH_N100=1000000 BENCH_N1K=200000 benches/compare.sh
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
ROOT="$(dirname "$HERE")"
cd "$ROOT"
compat-tests/setup.sh >/dev/null
"$HERE/build-rdkafka-perf.sh" >/dev/null
cargo build --release --bin strata
PY="$ROOT/compat-tests/.cache/venv/bin/python"   # has confluent-kafka (librdkafka)
# 10,000 idle connections need that many descriptors in the client and both brokers.
ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)"
# BENCH_NICE (default -10; needs root, ignored otherwise): the brokers and clients run at a
# higher priority than other jobs on a shared machine, so their load disturbs the figures less.
NICE=(); if [ "$(id -u)" = 0 ]; then NICE=(nice -n "${BENCH_NICE:--10}"); fi
out=$("${NICE[@]}" "$PY" "$HERE/compare.py")
"$PY" "$HERE/report.py" "$out" --splice "$ROOT/BENCHMARKS.md"
