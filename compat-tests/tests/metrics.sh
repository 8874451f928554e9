#!/usr/bin/env bash
# The admin listener of the broker under test ($STRATA_ADMIN, host:port of its
# strata.admin.listeners): /metrics after real Java console-tool traffic, the series Strimzi's
# alert rules read, consumer lag against kafka-consumer-groups, and the health probes.
# SKIPs when STRATA_ADMIN is not set (e.g. against the reference Kafka, which has no such port).
source "$(dirname "$0")/../lib/harness.sh"
prom() { "$PY" "$HERE/lib/prom.py" "$1" "$STRATA_ADMIN" "${@:2}"; }
need_admin() { [ -n "${STRATA_ADMIN:-}" ] || skip "STRATA_ADMIN not set (no admin listener to scrape)"; }

# Produce N records with kafka-console-producer: messagesin for the topic says N, bytesin
# grew, and a console consumer's read shows in bytesout and totalfetchrequests.
console_counters() {
  need_admin
  local t n=500; t=$(topic metrics-console); create_topic "$t" 1
  local all_before; all_before=$(prom value kafka_server_brokertopicmetrics_messagesin_total)
  seq -f 'metrics line %05g' 1 $n | kafka_console_producer --topic "$t"
  local got; got=$(prom value kafka_server_brokertopicmetrics_messagesin_total topic="$t")
  [ "$got" = "$n" ] || fail "messagesin_total{topic=$t} = $got, want $n"
  local all_after; all_after=$(prom value kafka_server_brokertopicmetrics_messagesin_total)
  [ $((all_after - all_before)) -ge $n ] || fail "all-topics messagesin grew by $((all_after - all_before)) < $n"
  local bytes; bytes=$(prom value kafka_server_brokertopicmetrics_bytesin_total topic="$t")
  [ "$bytes" -gt $((n * 15)) ] || fail "bytesin_total{topic=$t} = $bytes for $n records of 18 bytes"
  kafka_console_consumer --topic "$t" --from-beginning --max-messages $n --timeout-ms 30000 >"$OUT/metrics-consumed.txt"
  [ "$(wc -l <"$OUT/metrics-consumed.txt")" -eq $n ] || fail "consumed $(wc -l <"$OUT/metrics-consumed.txt") of $n"
  local out; out=$(prom value kafka_server_brokertopicmetrics_bytesout_total topic="$t")
  [ "$out" -ge "$bytes" ] || fail "bytesout_total{topic=$t} = $out < bytes in $bytes"
  local fetches; fetches=$(prom value kafka_server_brokertopicmetrics_totalfetchrequests_total topic="$t")
  [ "$fetches" -ge 1 ] || fail "totalfetchrequests_total{topic=$t} = $fetches"
  local produce; produce=$(prom value kafka_network_requestmetrics_totaltimems_count request=Produce)
  [ "$produce" -ge 1 ] || fail "no Produce request timed: $produce"
  # The console consumer's fetches count as Fetch and as FetchConsumer, with all five phases.
  local consumer; consumer=$(prom value kafka_network_requestmetrics_remotetimems_count request=FetchConsumer)
  [ "$consumer" != absent ] && [ "$consumer" -ge 1 ] || fail "no FetchConsumer request timed: $consumer"
  local queued; queued=$(prom value kafka_network_requestmetrics_requestqueuetimems_count request=Produce)
  [ "$queued" = "$produce" ] || fail "requestqueuetimems_count{Produce} $queued != totaltimems_count $produce"
}

# The series Strimzi's Kafka alert rules evaluate exist, and their expressions hold on a
# healthy single broker: UnderReplicatedPartitions (> 0 alerts), AbnormalControllerState
# (sum of activecontrollercount != 1), OfflinePartitions (> 0), UnderMinIsrPartitionCount,
# OfflineLogDirectoryCount.
strimzi_alert_series() {
  need_admin
  prom series kafka_server_replicamanager_underreplicatedpartitions \
    kafka_server_replicamanager_underminisrpartitioncount \
    kafka_server_replicamanager_partitioncount kafka_server_replicamanager_leadercount \
    kafka_controller_kafkacontroller_activecontrollercount \
    kafka_controller_kafkacontroller_offlinepartitionscount \
    kafka_log_logmanager_offlinelogdirectorycount \
    kafka_network_requestmetrics_requests_total \
    kafka_server_socket_server_metrics_connection_count \
    kafka_server_replicamanager_isrshrinks_total kafka_server_replicamanager_isrexpands_total \
    kafka_controller_controllerstats_uncleanleaderelections_total \
    kafka_server_group_coordinator_metrics_offset_commit_count \
    process_cpu_seconds_total process_resident_memory_bytes process_open_fds
  [ "$(prom value kafka_server_replicamanager_underreplicatedpartitions)" = 0 ] || fail "under-replicated partitions on one broker"
  [ "$(prom value kafka_server_replicamanager_underminisrpartitioncount)" = 0 ] || fail "under-min-ISR partitions on one broker"
  [ "$(prom value kafka_controller_kafkacontroller_activecontrollercount)" = 1 ] || fail "activecontrollercount is not 1"
  [ "$(prom value kafka_controller_kafkacontroller_offlinepartitionscount)" = 0 ] || fail "offline partitions"
  [ "$(prom value kafka_log_logmanager_offlinelogdirectorycount)" = 0 ] || fail "offline log dirs"
}

# A group that read at least 120 of 400 records over 2 partitions: kafka_consumergroup_lag per partition
# equals the LAG column of kafka-consumer-groups --describe.
lag_matches_tool() {
  need_admin
  local t g; t=$(topic metrics-lag); g="compat-$RUN_ID-lag-group"; create_topic "$t" 2
  seq -f 'lag %05g' 1 400 | kafka_console_producer --topic "$t"
  kafka_console_consumer --topic "$t" --group "$g" --from-beginning --max-messages 120 \
    --timeout-ms 30000 >/dev/null
  kafka_consumer_groups --describe --group "$g" >"$OUT/metrics-lag-describe.txt" 2>&1
  cat "$OUT/metrics-lag-describe.txt"
  # GROUP TOPIC PARTITION CURRENT-OFFSET LOG-END-OFFSET LAG ...
  local tool; tool=$(awk -v t="$t" '$2 == t { print $2, $3, $6 }' "$OUT/metrics-lag-describe.txt" | sort)
  local ours; ours=$(prom lag "$g" | sort)
  echo "tool:"; echo "$tool"; echo "metrics:"; echo "$ours"
  [ -n "$tool" ] || fail "kafka-consumer-groups printed no partition of $t"
  [ "$tool" = "$ours" ] || fail "lag differs: tool [$tool] metrics [$ours]"
  # The console consumer commits its position, which may pass the 120 records it printed
  # (a poll returns whole batches), so the total is checked against the tool, not 280.
  local total; total=$(awk '{ s += $3 } END { print s }' <<<"$tool")
  [ "$total" -gt 0 ] && [ "$total" -lt 400 ] || fail "total lag $total is not between 0 and 400"
  [ "$(prom value kafka_consumergroup_lag_sum group="$g")" = "$total" ] || fail "lag_sum is not $total"
  # The consumer committed (one offset per partition at least).
  local commits; commits=$(prom value kafka_server_group_coordinator_metrics_offset_commit_count)
  [ "$commits" != absent ] && [ "$commits" -ge 2 ] || fail "offset_commit_count = $commits"
}

# The probes and the listener's answers to what it does not serve.
health_and_routes() {
  need_admin
  [ "$(prom status GET /health/live)" = 200 ] || fail "/health/live"
  [ "$(prom status GET /health/ready)" = 200 ] || fail "/health/ready"
  [ "$(prom status GET /nope)" = 404 ] || fail "unknown path is not 404"
  [ "$(prom status POST /metrics)" = 405 ] || fail "POST /metrics is not 405"
}

case_run core metrics.console_counters console_counters
case_run core metrics.strimzi_alert_series strimzi_alert_series
case_run groups metrics.lag_matches_tool lag_matches_tool
case_run core metrics.health_and_routes health_and_routes
case_summary
