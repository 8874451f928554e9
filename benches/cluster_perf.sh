#!/usr/bin/env bash
# Replicated produce on a 3-node cluster of real processes (compat-tests/cluster/cluster.sh),
# Strata and Apache Kafka in turn: one partition with replication factor 3 and
# min.insync.replicas=2, Kafka's own ProducerPerformance at saturation with acks=all (every
# acknowledgement waits for the followers' fetches to move the high watermark), then with
# acks=1 on the same topic. Prints the tool's summary line per run.
#
#   benches/cluster_perf.sh                 # both implementations
#   IMPLS=strata RECORDS=100000 benches/cluster_perf.sh
#
# Needs a release build (`cargo build --release --bin strata`) and `compat-tests/setup.sh`.
# Environment: IMPLS (default "strata kafka"), RECORDS (200000), SIZE (1024 bytes),
# CLUSTER_PORT_BASE (29400: brokers on base+1..3, controllers on base+11..13).
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
ROOT="$(cd "$HERE/.." && pwd)"
CL="$ROOT/compat-tests/cluster/cluster.sh"
LIBS="$ROOT/compat-tests/.cache/kafka-libs"
RECORDS="${RECORDS:-200000}"
SIZE="${SIZE:-1024}"
export CLUSTER_PORT_BASE="${CLUSTER_PORT_BASE:-29400}"
JAVA_OPTS="-Xmx1g -Xms256m"

jk() {
  # shellcheck disable=SC2086
  java $JAVA_OPTS -Dlog4j2.configurationFile="$ROOT/compat-tests/lib/log4j2-tools.properties" \
    -cp "$LIBS/*" "$@"
}

for impl in ${IMPLS:-strata kafka}; do
  dir=$(mktemp -d "/tmp/cluster-perf-$impl.XXXXXX")
  export CLUSTER_DIR="$dir" CLUSTER_IMPL="$impl"
  trap 'bash "$CL" stop >/dev/null 2>&1 || true' EXIT
  bash "$CL" start >/dev/null
  bash "$CL" wait-ready 120 >/dev/null
  bootstrap=$(bash "$CL" bootstrap)
  jk org.apache.kafka.tools.TopicCommand --bootstrap-server "$bootstrap" --create \
    --topic perf --partitions 1 --replication-factor 3 --config min.insync.replicas=2 >/dev/null
  for acks in all 1; do
    line=$(jk org.apache.kafka.tools.ProducerPerformance --topic perf \
      --num-records "$RECORDS" --record-size "$SIZE" --throughput -1 \
      --producer-props bootstrap.servers="$bootstrap" acks="$acks" linger.ms=5 \
      batch.size=16384 enable.idempotence=false compression.type=none 2>/dev/null | tail -1)
    echo "$impl RF3 acks=$acks: $line"
  done
  bash "$CL" stop >/dev/null
  trap - EXIT
  rm -rf "$dir"
done
