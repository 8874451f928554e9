#!/usr/bin/env bash
# Apache Kafka's own Java tools (kafka-topics, console producer/consumer,
# kafka-configs, kafka-consumer-groups, producer perf) from Maven Central jars.
source "$(dirname "$0")/../lib/harness.sh"
T=$(topic java-admin)

java_topics_create() {
  kafka_topics --create --topic "$T" --partitions 3 --replication-factor 1
}
java_topics_list() {
  kafka_topics --list > "$OUT/list.txt"; cat "$OUT/list.txt"
  grep -qx "$T" "$OUT/list.txt" || fail "topic $T not listed"
}
java_topics_describe() {
  kafka_topics --describe --topic "$T" | tee "$OUT/describe.txt"
  grep -q "PartitionCount: 3" "$OUT/describe.txt" || fail "PartitionCount: 3 missing"
  [ "$(grep -c 'Partition: [0-9]' "$OUT/describe.txt")" -eq 3 ] || fail "expected 3 partition lines"
  grep 'Partition: [0-9]' "$OUT/describe.txt" | grep -q 'Leader: 1' || true
}
# kafka-topics 3.8+ describes with DescribeTopicPartitions (KIP-966), a page at a time: 1,000
# partitions in pages of 300 take four requests, each resuming at the broker's cursor.
java_topics_describe_1000() {
  local t; t=$(topic java-1000)
  kafka_topics --create --topic "$t" --partitions 1000 --replication-factor 1
  local before=0 after=0
  if [ -n "${STRATA_ADMIN:-}" ]; then before=$(dtp_requests); fi
  kafka_topics --describe --topic "$t" --partition-size-limit-per-response 300 > "$OUT/d1000.txt"
  head -2 "$OUT/d1000.txt"
  grep -q "PartitionCount: 1000" "$OUT/d1000.txt" || fail "PartitionCount: 1000 missing"
  [ "$(grep -o 'Partition: [0-9]*' "$OUT/d1000.txt" | sort -u | wc -l)" -eq 1000 ] \
    || fail "expected partitions 0-999 once each"
  if [ -n "${STRATA_ADMIN:-}" ]; then
    after=$(dtp_requests)
    echo "DescribeTopicPartitions requests: $((after - before))"
    [ $((after - before)) -ge 4 ] || fail "kafka-topics did not page with DescribeTopicPartitions"
  fi
}
# DescribeTopicPartitions requests the broker under test has served, from its /metrics.
dtp_requests() {
  curl -s "http://$STRATA_ADMIN/metrics" \
    | awk '/^kafka_network_requestmetrics_requests_total\{request="DescribeTopicPartitions"/ {s+=$2} END {print s+0}'
}
java_topics_alter() {
  kafka_topics --alter --topic "$T" --partitions 4
  for _ in $(seq 20); do
    kafka_topics --describe --topic "$T" > "$OUT/describe4.txt"
    grep -q "PartitionCount: 4" "$OUT/describe4.txt" && { cat "$OUT/describe4.txt"; return 0; }
    sleep 0.5
  done
  cat "$OUT/describe4.txt"; fail "PartitionCount did not become 4"
}
java_topics_delete() {
  kafka_topics --delete --topic "$T"
  for _ in $(seq 20); do
    kafka_topics --list | grep -qx "$T" || return 0
    sleep 0.5
  done
  fail "topic $T still listed after delete"
}

java_console_roundtrip() {
  local t; t=$(topic java-console)
  kafka_topics --create --topic "$t" --partitions 1 --replication-factor 1
  seq -f 'line-%05g some payload text' 1 10000 > "$OUT/in.txt"
  kafka_console_producer --topic "$t" --property parse.key=false < "$OUT/in.txt"
  kafka_console_consumer --topic "$t" --partition 0 --offset earliest \
      --max-messages 10000 --timeout-ms 30000 > "$OUT/out.txt"
  cmp "$OUT/in.txt" "$OUT/out.txt" || fail "consumed content differs ($(wc -l < "$OUT/out.txt") lines)"
}

java_console_keys() {
  local t; t=$(topic java-keys)
  kafka_topics --create --topic "$t" --partitions 1 --replication-factor 1
  for i in $(seq 1 200); do echo "k$i:v$i"; done > "$OUT/kin.txt"
  kafka_console_producer --topic "$t" --property parse.key=true --property key.separator=: \
      --compression-codec gzip < "$OUT/kin.txt"
  kafka_console_consumer --topic "$t" --partition 0 --offset earliest --max-messages 200 \
      --timeout-ms 30000 --property print.key=true --property key.separator=: \
      --property print.offset=false > "$OUT/kout.txt"
  cmp "$OUT/kin.txt" "$OUT/kout.txt" || fail "keyed content differs"
}

java_configs() {
  local t; t=$(topic "java-configs${1:-}")
  kafka_topics --create --topic "$t" --partitions 1 --replication-factor 1
  kafka_configs --describe --entity-type topics --entity-name "$t" | tee "$OUT/cfg0.txt"
  grep -q "retention.ms=1000" "$OUT/cfg0.txt" && fail "retention.ms already set"
  kafka_configs --alter --entity-type topics --entity-name "$t" --add-config retention.ms=1000
  kafka_configs --describe --entity-type topics --entity-name "$t" | tee "$OUT/cfg1.txt"
  grep -q "retention.ms=1000" "$OUT/cfg1.txt" || fail "retention.ms=1000 not shown after alter"
  kafka_configs --alter --entity-type topics --entity-name "$t" --delete-config retention.ms
  kafka_configs --describe --entity-type topics --entity-name "$t" | tee "$OUT/cfg2.txt"
  if grep -q "retention.ms=1000" "$OUT/cfg2.txt"; then fail "retention.ms still set after delete-config"; fi
  # broker-level describe (DescribeConfigs on the broker resource)
  kafka_configs --describe --entity-type brokers --entity-name 1 --all | grep -q "log.retention" \
    || fail "broker configs missing log.retention*"
}

PERF_T=$(topic java-perf)
java_producer_perf() {
  kafka_topics --create --topic "$PERF_T" --partitions 1 --replication-factor 1
  jk org.apache.kafka.tools.ProducerPerformance --topic "$PERF_T" --num-records 50000 --record-size 100 \
    --throughput -1 --producer-props bootstrap.servers="$BOOTSTRAP" acks=all | tee "$OUT/perf.txt"
  grep -q "50000 records sent" "$OUT/perf.txt" || fail "perf did not send 50000"
}

# ---- groups (need the classic group coordinator) ---------------------------
# Console consumer options for client properties and formatter properties: Kafka 4.1 knows only
# --consumer-property/--property; the newest tools deprecate them (with a notice on stdout, in
# the consumed data) for --command-property/--formatter-property. The java-latest cases shadow these.
CONS_PROP=--consumer-property FMT_PROP=--property
# groups_console_share [N [PROTOCOL [NAME_SUFFIX]]]: N console consumers (default 2) in one group
# share a 4-partition topic: each gets data, none twice, nothing lost.
groups_console_share() {
  local n=${1:-2} proto=${2:-classic} sfx=${3:-} t g
  t=$(topic "grp-share$n-$proto$sfx"); g="compat-$RUN_ID-share$n-$proto$sfx"
  local names; names=$(echo a b c d | cut -d' ' -f1-"$n")
  kafka_topics --create --topic "$t" --partitions 4 --replication-factor 1
  # --timeout-ms runs from each consumer's start, through the wait for a stable group below
  # (18 s in a loaded CI run, where it then ended before the producer's records came): 40 s.
  for c in $names; do
    kafka_console_consumer --topic "$t" --group "$g" --from-beginning --timeout-ms 40000 \
      "$CONS_PROP" group.protocol="$proto" \
      "$FMT_PROP" print.key=true "$FMT_PROP" key.separator=: > "$OUT/cons-$c.txt" 2>"$OUT/cons-$c.err" &
    echo $! > "$OUT/cons-$c.pid"
  done
  # wait for a stable group with both members
  local ok=0
  for _ in $(seq 60); do
    kafka_consumer_groups --describe --group "$g" --members > "$OUT/members.txt" 2>&1 || true
    if [ "$(grep -c "console-consumer" "$OUT/members.txt")" -ge "$n" ] && ! grep -q "rebalancing" "$OUT/members.txt"; then ok=1; break; fi
    sleep 1
  done
  cat "$OUT/members.txt"
  [ $ok = 1 ] || fail "group $g did not get $n members"
  for i in $(seq 1 2000); do echo "key$i:msg$i"; done > "$OUT/in.txt"
  kafka_console_producer --topic "$t" --property parse.key=true --property key.separator=: < "$OUT/in.txt"
  local files=()
  for c in $names; do
    wait "$(cat "$OUT/cons-$c.pid")" || true
    local k; k=$(wc -l < "$OUT/cons-$c.txt"); echo "consumer $c: $k"
    [ "$k" -gt 0 ] || fail "consumer $c got no partition's data"
    files+=("$OUT/cons-$c.txt")
  done
  sort "${files[@]}" > "$OUT/all.txt"
  [ -z "$(uniq -d "$OUT/all.txt")" ] || fail "duplicates: $(uniq -d "$OUT/all.txt" | head -3)"
  sort "$OUT/in.txt" | cmp - "$OUT/all.txt" || fail "lost or unexpected messages ($(wc -l < "$OUT/all.txt") of 2000)"
}

# ConsumerPerformance always subscribe()s, so it needs the group coordinator.
groups_consumer_perf() {
  jk org.apache.kafka.tools.ConsumerPerformance --bootstrap-server "$BOOTSTRAP" --topic "$PERF_T" \
    --messages 50000 --timeout 30000 | tee "$OUT/cperf.txt"
  # data line: start.time, end.time, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, ...
  tail -1 "$OUT/cperf.txt" | awk -F', *' '{ exit !($5 == 50000) }' || fail "consumer perf did not read 50000"
}

groups_describe_lag() {
  local sfx=${1:-} t g; t=$(topic "grp-lag$sfx"); g="compat-$RUN_ID-lag$sfx"
  kafka_topics --create --topic "$t" --partitions 1 --replication-factor 1
  seq 1 100 | kafka_console_producer --topic "$t"
  kafka_console_consumer --topic "$t" --group "$g" --from-beginning --max-messages 40 \
    "$CONS_PROP" max.poll.records=10 --timeout-ms 30000 > "$OUT/c.txt"
  [ "$(wc -l < "$OUT/c.txt")" -eq 40 ] || fail "consumed $(wc -l < "$OUT/c.txt") not 40"
  kafka_consumer_groups --list | tee "$OUT/list.txt"
  grep -qx "$g" "$OUT/list.txt" || fail "group not listed"
  kafka_consumer_groups --describe --group "$g" | tee "$OUT/desc.txt"
  # GROUP TOPIC PARTITION CURRENT-OFFSET LOG-END-OFFSET LAG ...
  awk -v t="$t" '$2==t && $3==0 {print $4, $5, $6}' "$OUT/desc.txt" | grep -qx "40 100 60" \
    || fail "expected CURRENT-OFFSET 40, LOG-END-OFFSET 100, LAG 60"
}

groups_three() { groups_console_share 3; }
# KIP-848: the same with `group.protocol=consumer`, then kafka-consumer-groups --describe
# (ConsumerGroupDescribe) shows the consumer-type group, its members and committed offsets.
groups_kip848_share() {
  local sfx=${1:-}
  groups_console_share 2 consumer "$sfx"
  local g="compat-$RUN_ID-share2-consumer$sfx"
  kafka_consumer_groups --describe --group "$g" --state | tee "$OUT/state.txt"
  grep -q "consumer" "$OUT/state.txt" || fail "describe --state does not show the consumer protocol"
  kafka_consumer_groups --describe --group "$g" | tee "$OUT/offsets.txt"
  [ "$(awk '$1 == "'"$g"'" && $6 == 0' "$OUT/offsets.txt" | wc -l)" -eq 4 ] \
    || fail "expected 4 partitions with committed offsets and lag 0"
}

# kafka-consumer-groups --reset-offsets moves a group, --delete-offsets and --delete remove it.
groups_reset_delete() {
  local t g; t=$(topic grp-reset); g="compat-$RUN_ID-reset"
  kafka_topics --create --topic "$t" --partitions 1 --replication-factor 1
  seq 1 50 | kafka_console_producer --topic "$t"
  kafka_console_consumer --topic "$t" --group "$g" --from-beginning --max-messages 50 --timeout-ms 30000 > /dev/null
  kafka_consumer_groups --reset-offsets --group "$g" --topic "$t" --to-offset 10 --execute | tee "$OUT/reset.txt"
  kafka_consumer_groups --describe --group "$g" > "$OUT/desc.txt" 2>&1
  awk -v t="$t" '$2==t && $3==0 {print $4, $6}' "$OUT/desc.txt" | grep -qx "10 40" || fail "after reset: $(cat "$OUT/desc.txt")"
  kafka_consumer_groups --delete-offsets --group "$g" --topic "$t" | tee "$OUT/delo.txt"
  kafka_consumer_groups --delete --group "$g" | tee "$OUT/del.txt"
  kafka_consumer_groups --list > "$OUT/list.txt"
  ! grep -qx "$g" "$OUT/list.txt" || fail "group still listed after --delete"
}

# The newest Java client and tools (KAFKA_LATEST_VERSION, .cache/kafka-libs-latest): the same
# commands in a few cases, with their own topic and group names (jk reads KAFKA_LIBS, which
# these functions shadow). capture.sh runs them against the newest Kafka for golden/.
java_latest_topics() {
  local KAFKA_LIBS="$KAFKA_LATEST_LIBS" T; T=$(topic java-latest-admin)
  java_topics_create; java_topics_list; java_topics_describe; java_topics_alter; java_topics_delete
}
java_latest_configs() { local KAFKA_LIBS="$KAFKA_LATEST_LIBS"; java_configs -latest; }
# Group configs (`kafka-configs --entity-type groups`, KIP-848) and client-metrics subscriptions
# (`kafka-client-metrics`, KIP-714), which the 4.x tools find with ListConfigResources v1.
java_latest_group_configs() {
  local KAFKA_LIBS="$KAFKA_LATEST_LIBS" g s; g=$(topic java-latest-gcfg); s=$(topic java-latest-sub)
  kafka_configs --alter --entity-type groups --entity-name "$g" \
    --add-config consumer.session.timeout.ms=50000,consumer.heartbeat.interval.ms=6000
  kafka_configs --describe --entity-type groups --entity-name "$g" | tee "$OUT/g1.txt"
  grep -q "consumer.session.timeout.ms=50000" "$OUT/g1.txt" || fail "session timeout not shown"
  grep -q "consumer.heartbeat.interval.ms=6000" "$OUT/g1.txt" || fail "heartbeat interval not shown"
  # Without a name every group with configs is described (ListGroups + ListConfigResources).
  kafka_configs --describe --entity-type groups | tee "$OUT/gall.txt"
  grep -q "$g" "$OUT/gall.txt" || fail "group $g not found by describe-all"
  # A session timeout below the broker's group.consumer.min.session.timeout.ms is refused.
  if kafka_configs --alter --entity-type groups --entity-name "$g" \
      --add-config consumer.session.timeout.ms=1000 > "$OUT/bad.txt" 2>&1; then
    fail "a session timeout below the minimum was accepted"
  fi
  grep -q "must be greater than or equal to group.consumer.min.session.timeout.ms" "$OUT/bad.txt" \
    || { cat "$OUT/bad.txt"; fail "no bounds error"; }
  kafka_configs --alter --entity-type groups --entity-name "$g" \
    --delete-config consumer.session.timeout.ms,consumer.heartbeat.interval.ms
  kafka_configs --describe --entity-type groups --entity-name "$g" | tee "$OUT/g2.txt"
  if grep -q "consumer.session.timeout.ms=50000" "$OUT/g2.txt"; then fail "override still set"; fi
  local cm=org.apache.kafka.tools.ClientMetricsCommand
  jk $cm --bootstrap-server "$BOOTSTRAP" --alter --name "$s" \
    --metrics org.apache.kafka.producer. --interval 60000
  jk $cm --bootstrap-server "$BOOTSTRAP" --list | tee "$OUT/cm-list.txt"
  grep -qx "$s" "$OUT/cm-list.txt" || fail "subscription $s not listed"
  jk $cm --bootstrap-server "$BOOTSTRAP" --describe --name "$s" | tee "$OUT/cm.txt"
  grep -q "interval.ms=60000" "$OUT/cm.txt" || fail "interval not shown"
  grep -q "metrics=org.apache.kafka.producer." "$OUT/cm.txt" || fail "metrics not shown"
  jk $cm --bootstrap-server "$BOOTSTRAP" --delete --name "$s"
  jk $cm --bootstrap-server "$BOOTSTRAP" --list > "$OUT/cm-list2.txt"
  if grep -qx "$s" "$OUT/cm-list2.txt"; then fail "subscription $s still listed after delete"; fi
}
java_latest_describe_lag() {
  local KAFKA_LIBS="$KAFKA_LATEST_LIBS" CONS_PROP=--command-property FMT_PROP=--formatter-property
  groups_describe_lag -latest
}
java_latest_kip848() {
  local KAFKA_LIBS="$KAFKA_LATEST_LIBS" CONS_PROP=--command-property FMT_PROP=--formatter-property
  groups_kip848_share -latest
}

case_run core java.topics.create java_topics_create
case_run core java.topics.list java_topics_list
case_run core java.topics.describe java_topics_describe
case_run core java.topics.describe-1000-paged java_topics_describe_1000
case_run core java.topics.alter-partitions java_topics_alter
case_run core java.topics.delete java_topics_delete
case_run core java.console.roundtrip-10k java_console_roundtrip
case_run core java.console.keys-gzip java_console_keys
case_run core java.configs.alter-describe java_configs
case_run core java.perf.producer java_producer_perf
case_run groups java.groups.console-share groups_console_share
case_run groups java.groups.describe-lag groups_describe_lag
case_run groups java.groups.consumer-perf groups_consumer_perf
case_run groups java.groups.three-consumers groups_three
case_run groups java.groups.kip848-share groups_kip848_share
case_run groups java.groups.reset-delete groups_reset_delete
case_run core java-latest.topics.admin java_latest_topics
case_run core java-latest.configs.alter-describe java_latest_configs
case_run core java-latest.configs.groups-client-metrics java_latest_group_configs
case_run groups java-latest.groups.describe-lag java_latest_describe_lag
case_run groups java-latest.groups.kip848-share java_latest_kip848
case_summary
