#!/usr/bin/env bash
# franz-go (kgo) produce + direct partition consume (ConsumePartitions), per codec.
# The program (franz-go/main.go) also creates its topic through kadm (CreateTopics).
source "$(dirname "$0")/../lib/harness.sh"
for codec in none gzip snappy lz4 zstd; do
  eval "franz_$codec() { \"\$FRANZ\" -brokers \"\$BOOTSTRAP\" -topic \"\$(topic franz-$codec)\" -n 1000 -codec $codec; }"
  case_run core "franz-go.roundtrip.$codec" "franz_$codec"
done
# KIP-848: two kgo group consumers with kgo.ServerSideBalancer() (ConsumerGroupHeartbeat v1),
# described through kadm (ConsumerGroupDescribe); every record read once.
franz_848() { "$FRANZ" -brokers "$BOOTSTRAP" -topic "$(topic franz-848)" -group848 "compat-$RUN_ID-franz848" -n 1000; }
case_run groups franz-go.groups.kip848-share franz_848
case_summary
