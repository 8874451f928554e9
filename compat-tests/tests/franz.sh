#!/usr/bin/env bash
# franz-go (kgo) produce + direct partition consume (ConsumePartitions), per codec.
# The program (franz-go/main.go) also creates its topic through kadm (CreateTopics).
source "$(dirname "$0")/../lib/harness.sh"
for codec in none gzip snappy lz4 zstd; do
  eval "franz_$codec() { \"\$FRANZ\" -brokers \"\$BOOTSTRAP\" -topic \"\$(topic franz-$codec)\" -n 1000 -codec $codec; }"
  case_run core "franz-go.roundtrip.$codec" "franz_$codec"
done
case_summary
