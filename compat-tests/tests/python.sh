#!/usr/bin/env bash
# confluent-kafka (librdkafka) and kafka-python round trips.
source "$(dirname "$0")/../lib/harness.sh"
py() { "$PY" "$HERE/tests/py_clients.py" "$@"; }
for codec in none gzip snappy lz4 zstd; do
  eval "cf_rt_$codec() { py cf-roundtrip $codec; }"
  case_run core "confluent.roundtrip.$codec" "cf_rt_$codec"
done
cf_idem() { py cf-idempotent; }; case_run core confluent.idempotent cf_idem
cf_adm() { py cf-admin; };       case_run core confluent.admin cf_adm
for codec in none gzip snappy lz4 zstd; do
  eval "kp_rt_$codec() { py kp-roundtrip $codec; }"
  case_run core "kafka-python.roundtrip.$codec" "kp_rt_$codec"
done
cf_grp() { py cf-group; }; case_run groups confluent.groups.subscribe-commit cf_grp
kp_grp() { py kp-group; }; case_run groups kafka-python.groups.subscribe-commit kp_grp
cf_848() { "$PY" "$HERE/tests/py_kip848.py" share; }
case_run groups confluent.groups.kip848-share cf_848
case_summary
