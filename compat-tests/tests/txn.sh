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
case_summary
