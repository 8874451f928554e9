#!/usr/bin/env bash
# Transactions (exactly-once) with confluent-kafka.
source "$(dirname "$0")/../lib/harness.sh"
py() { "$PY" "$HERE/tests/py_txn.py" "$@"; }
cf_txn() { py commit-abort; };  case_run txn confluent.txn.commit-abort cf_txn
cf_ctp() { py ctp; };           case_run txn confluent.txn.consume-transform-produce cf_ctp
kjs_txn() { node "$HERE/tests/kafkajs_clients.js" txn; }; case_run txn kafkajs.txn.commit-abort kjs_txn
java_txn() {
  mkdir -p "$OUT/java-txn"
  javac -d "$OUT/java-txn" -cp "$KAFKA_LIBS/*" "$HERE/tests/TxnCheck.java"
  java -cp "$OUT/java-txn:$KAFKA_LIBS/*" TxnCheck "$BOOTSTRAP" "compat-$RUN_ID-java-txn"
}
case_run txn java.txn.commit-abort java_txn
# Transactions version 2 (KIP-890 part 2) as the Java client drives it, with the pinned client
# and with the newest one; AddPartitionsToTxn and AddOffsetsToTxn must not be sent at all.
java_txn_v2() {
  local libs=$1 name=$2
  mkdir -p "$OUT/$name"
  javac -d "$OUT/$name" -cp "$libs/*" "$HERE/tests/TxnCheck.java" "$HERE/tests/TxnV2Check.java"
  local before=0
  if [ -n "${STRATA_ADMIN:-}" ]; then before=$(classic_txn_requests); fi
  java -cp "$OUT/$name:$libs/*" TxnV2Check "$BOOTSTRAP" "compat-$RUN_ID-$name"
  if [ -n "${STRATA_ADMIN:-}" ]; then
    local after; after=$(classic_txn_requests)
    echo "AddPartitionsToTxn + AddOffsetsToTxn requests: $((after - before))"
    [ "$after" -eq "$before" ] || fail "the producer ran transactions version 1"
  fi
}
# AddPartitionsToTxn and AddOffsetsToTxn requests the broker has served, from its /metrics.
classic_txn_requests() {
  curl -s "http://$STRATA_ADMIN/metrics" \
    | awk '/^kafka_network_requestmetrics_requests_total\{request="(AddPartitionsToTxn|AddOffsetsToTxn)"/ {s+=$2} END {print s+0}'
}
java_txn_v2_pinned() { java_txn_v2 "$KAFKA_LIBS" java-txn-v2; }
java_txn_v2_latest() { java_txn_v2 "$KAFKA_LATEST_LIBS" java-latest-txn-v2; }
case_run txn java.txn.v2 java_txn_v2_pinned
case_run txn java-latest.txn.v2 java_txn_v2_latest
# kafka-transactions (4.3) lists by transactional id pattern (ListTransactions v2, KIP-1152):
# the two ids the case above used, and no other.
java_latest_transactions_list() {
  local prefix="compat-$RUN_ID-java-latest-txn-v2"
  # shellcheck disable=SC2086
  java $KAFKA_JAVA_OPTS -Dlog4j2.configurationFile="$HERE/lib/log4j2-tools.properties" \
    -cp "$KAFKA_LATEST_LIBS/*" org.apache.kafka.tools.TransactionsCommand \
    --bootstrap-server "$BOOTSTRAP" list --transactional-id-pattern "$prefix-.*" | tee "$OUT/txn-list.txt"
  [ "$(grep -c "^$prefix-" "$OUT/txn-list.txt")" -eq 2 ] || fail "expected the 2 ids of $prefix"
  grep -qP "^$prefix-tx\s" "$OUT/txn-list.txt" || fail "$prefix-tx not listed"
  grep -qP "^$prefix-slow\s" "$OUT/txn-list.txt" || fail "$prefix-slow not listed"
}
case_run txn java-latest.transactions.list-pattern java_latest_transactions_list
case_summary
