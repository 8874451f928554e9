#!/usr/bin/env bash
# Transactions (exactly-once) with confluent-kafka.
source "$(dirname "$0")/../lib/harness.sh"
py() { "$PY" "$HERE/tests/py_txn.py" "$@"; }
cf_txn() { py commit-abort; };  case_run txn confluent.txn.commit-abort cf_txn
cf_ctp() { py ctp; };           case_run txn confluent.txn.consume-transform-produce cf_ctp
case_summary
