#!/usr/bin/env bash
# Share groups (KIP-932) with Kafka 4.3.1's Java client and tools (.cache/kafka-libs-latest):
# KafkaShareConsumer (tests/ShareCheck.java), kafka-share-groups (ShareGroupCommand),
# kafka-console-share-consumer (ConsoleShareConsumer) and kafka-configs --entity-type groups.
# Validated against Apache Kafka 4.3.1 (kafka-ref.sh with KAFKA_REF_LIBS=.cache/kafka-libs-latest;
# a fresh 4.3.1 cluster finalizes share.version=1 at format time, nothing else to enable).
#
# They run against Strata and against Kafka 4.3.1 alike:
#   BOOTSTRAP=127.0.0.1:9192 ./run.sh --clients java_share
# Each Java client run also writes its NetworkClient DEBUG log (every request with its API
# version and fields) to out/<run>/share-*-client.log, and the case log lists the APIs sent.
source "$(dirname "$0")/../lib/harness.sh"

SHARE_CLS="$OUT/share-classes"
# share_prep: compile ShareCheck once per run, write the client log config.
share_prep() {
  local cls="$SHARE_CLS"
  if [ ! -f "$cls/ShareCheck.class" ]; then
    mkdir -p "$cls"
    javac -d "$cls" -cp "$KAFKA_LATEST_LIBS/*" "$HERE/tests/ShareCheck.java"
  fi
  [ -f "$OUT/share-log4j2.properties" ] || printf '%s\n' 'status = warn' \
    'appender.err.type = Console' 'appender.err.name = STDERR' 'appender.err.target = SYSTEM_ERR' \
    'appender.err.layout.type = PatternLayout' 'appender.err.layout.pattern = [%d] %p %m (%c)%n' \
    'appender.err.filter.t.type = ThresholdFilter' 'appender.err.filter.t.level = WARN' \
    'appender.f.type = File' 'appender.f.name = F' 'appender.f.fileName = ${sys:share.client.log}' \
    'appender.f.layout.type = PatternLayout' 'appender.f.layout.pattern = [%d] %p [%t] %m (%c)%n' \
    'rootLogger.level = WARN' 'rootLogger.appenderRef.err.ref = STDERR' 'rootLogger.appenderRef.f.ref = F' \
    'logger.nc.name = org.apache.kafka.clients.NetworkClient' 'logger.nc.level = DEBUG' \
    > "$OUT/share-log4j2.properties"
}
# share_java NAME MODE ARGS...: run ShareCheck, its client DEBUG log in out/<run>/share-NAME-client.log
share_java() {
  share_prep
  local log="$OUT/share-$1-client.log"; shift
  # shellcheck disable=SC2086
  java $KAFKA_JAVA_OPTS -Dlog4j2.configurationFile="$OUT/share-log4j2.properties" \
    -Dshare.client.log="$log" -cp "$SHARE_CLS:$KAFKA_LATEST_LIBS/*" ShareCheck "$@"
}
# The request types and versions a client log shows it sent.
apis_sent() {
  grep -ho 'Sending [A-Z_]* request with header RequestHeader(apiKey=[A-Z_]*, apiVersion=[0-9]*' "$@" \
    | sed 's/.*apiKey=\([A-Z_]*\), apiVersion=\([0-9]*\)/\1 v\2/' | sort | uniq -c | awk '{printf "%s %s (%d)  ", $2, $3, $1} END {print ""}'
}

# 1. Three share consumers (threads of one JVM, implicit acknowledgement, max.poll.records=10 with
#    share.acquire.mode=record_limit) on a 1-partition topic of 300 records: each record exactly
#    once overall, more than one consumer gets records, lag 0 afterwards.
share_cooperative() {
  local t; t=$(topic share-coop)
  share_java coop cooperative "$BOOTSTRAP" "$t" "$t-g"
  echo "APIs sent: $(apis_sent "$OUT/share-coop-client.log")"
}

# 2. Explicit acknowledgement: the first 10 records RELEASEd come back with deliveryCount 2 and
#    are ACCEPTed; every 7th (offset % 7 == 3) is REJECTed and never comes back; lag 0 afterwards.
share_release_redeliver() {
  local t; t=$(topic share-release)
  share_java release release "$BOOTSTRAP" "$t" "$t-g"
  echo "APIs sent: $(apis_sent "$OUT/share-release-client.log")"
}

# 3. Acquisition locks (group config share.record.lock.duration.ms=15000, the broker's minimum).
#    a) consumer A (own JVM) acquires 10 of 30 records and is frozen with SIGSTOP (connection
#       open, no acknowledgement): consumer B gets the other 20 at once with deliveryCount 1 and
#       A's 10 only when their locks expire (12-25 s after A got them) with deliveryCount 2.
#    b) consumer A2 acquires 10 new records and is killed with SIGKILL: its connection closes,
#       and Kafka releases a departed member's records at once (ShareSessionCache's disconnect
#       listener -> SharePartitionManager.releaseSession), so B2 gets them with deliveryCount 2
#       well before a lock could expire (under 12 s after the kill).
share_hold() {  # NAME ARGS...: start a holder in the background, wait for its ACQUIRED line
  local name=$1; shift
  share_prep
  # java itself in the background (not a function's subshell), so $! is the JVM to stop and kill
  # shellcheck disable=SC2086
  java $KAFKA_JAVA_OPTS -Dlog4j2.configurationFile="$OUT/share-log4j2.properties" \
    -Dshare.client.log="$OUT/share-$name-client.log" -cp "$SHARE_CLS:$KAFKA_LATEST_LIBS/*" \
    ShareCheck hold "$BOOTSTRAP" "$@" > "$OUT/$name.out" 2>&1 &
  echo $! > "$OUT/$name.pid"
  local i
  for i in $(seq 150); do grep -q '^ACQUIRED ' "$OUT/$name.out" && break; sleep 0.2; done
  cat "$OUT/$name.out"
  grep -q '^ACQUIRED ' "$OUT/$name.out" || fail "$name acquired nothing"
}
share_lock_timeout() {
  local t g a a2; t=$(topic share-lock); g="$t-g"
  trap 'for p in "${a:-}" "${a2:-}"; do [ -n "$p" ] && kill -9 "$p" 2>/dev/null; done; true' EXIT
  share_hold hold-a "$t" "$g" 30 1; a=$(cat "$OUT/hold-a.pid")
  kill -STOP "$a"
  local l t0 offs; l=$(grep '^ACQUIRED ' "$OUT/hold-a.out"); t0=$(cut -d' ' -f2 <<<"$l"); offs=$(cut -d' ' -f3 <<<"$l")
  echo "A (pid $a) stopped holding $offs"
  share_java take-b take "$BOOTSTRAP" "$t" "$g" 0 30 "$offs" "$t0" 12000 25000
  kill -9 "$a"; wait "$a" 2>/dev/null || true; a=""
  share_hold hold-a2 "$t" "$g" 10 0; a2=$(cat "$OUT/hold-a2.pid")
  l=$(grep '^ACQUIRED ' "$OUT/hold-a2.out"); offs=$(cut -d' ' -f3 <<<"$l")
  kill -9 "$a2"; t0=$(date +%s%3N); wait "$a2" 2>/dev/null || true; a2=""
  echo "A2 killed holding $offs"
  share_java take-b2 take "$BOOTSTRAP" "$t" "$g" 30 40 "$offs" "$t0" 0 12000
  echo "APIs sent: $(apis_sent "$OUT"/share-{hold-a,take-b,hold-a2,take-b2}-client.log)"
}

# 4. The tools a user runs: kafka-configs for the group, kafka-console-share-consumer
#    --max-messages, kafka-share-groups --list/--describe (offsets, --members, --state),
#    --reset-offsets --to-earliest (refused while a member is active), --delete.
kafka_share_groups() { jk org.apache.kafka.tools.consumer.group.ShareGroupCommand --bootstrap-server "$BOOTSTRAP" "$@"; }
kafka_console_share_consumer() { jk org.apache.kafka.tools.consumer.ConsoleShareConsumer --bootstrap-server "$BOOTSTRAP" "$@"; }
# the START-OFFSET and LAG of partition 0 of $t in `kafka-share-groups --describe` output
share_row() { awk -v g="$g" -v t="$t" '$1 == g && $2 == t && $3 == 0 {print $4, $5}' "$1"; }
share_tools() {
  local KAFKA_LIBS="$KAFKA_LATEST_LIBS" t g bg=""; t=$(topic share-tools); g="$t-g"
  trap '[ -n "${bg:-}" ] && kill "$bg" 2>/dev/null; true' EXIT
  kafka_topics --create --topic "$t" --partitions 1 --replication-factor 1
  seq 1 100 | kafka_console_producer --topic "$t"
  kafka_configs --alter --entity-type groups --entity-name "$g" --add-config share.auto.offset.reset=earliest
  # The broker applies the change from the metadata log a moment later (on a fresh Kafka 4.3.1 an
  # immediate describe still showed the default): consume only once describe shows it.
  local i
  for i in $(seq 20); do
    kafka_configs --describe --entity-type groups --entity-name "$g" > "$OUT/gcfg.txt" 2>&1
    grep -q "share.auto.offset.reset=earliest" "$OUT/gcfg.txt" && break
    sleep 0.5
  done
  cat "$OUT/gcfg.txt"
  grep -q "share.auto.offset.reset=earliest" "$OUT/gcfg.txt" || fail "group config not shown"
  kafka_console_share_consumer --topic "$t" --group "$g" --max-messages 40 --timeout-ms 30000 \
    --formatter-property print.offset=true --formatter-property print.delivery=true \
    > "$OUT/c40.txt" 2> "$OUT/c40.err"
  cat "$OUT/c40.err"; head -2 "$OUT/c40.txt"
  # Offset:0	Delivery:1	1 ... Offset:39	Delivery:1	40
  seq 0 39 | awk '{printf "Offset:%d\tDelivery:1\t%d\n", $1, $1 + 1}' | cmp - "$OUT/c40.txt" \
    || fail "console share consumer did not print offsets 0-39, delivery 1, values 1-40"
  grep -q "Processed a total of 40 messages" "$OUT/c40.err" || fail "no 'Processed a total of 40 messages'"

  # Read-only views of the now empty group, in parallel (each is a JVM).
  kafka_share_groups --list > "$OUT/list.txt" 2>&1 &
  kafka_share_groups --list --state > "$OUT/list-state.txt" 2>&1 &
  kafka_share_groups --describe --group "$g" > "$OUT/d1.txt" 2>&1 &
  kafka_share_groups --describe --group "$g" --state > "$OUT/d1-state.txt" 2>&1 &
  wait
  cat "$OUT/list.txt" "$OUT/list-state.txt" "$OUT/d1.txt" "$OUT/d1-state.txt"
  grep -qx "$g" "$OUT/list.txt" || fail "--list does not show $g"
  awk -v g="$g" '$1 == g {print $2}' "$OUT/list-state.txt" | grep -qx Empty || fail "--list --state: $g not Empty"
  grep -qE '^GROUP +TOPIC +PARTITION +START-OFFSET +LAG *$' "$OUT/d1.txt" || fail "--describe header differs"
  [ "$(share_row "$OUT/d1.txt")" = "40 60" ] || fail "--describe: expected START-OFFSET 40 LAG 60"
  grep -qE '^GROUP +COORDINATOR \(ID\) +STATE +#MEMBERS *$' "$OUT/d1-state.txt" || fail "--describe --state header differs"
  awk -v g="$g" '$1 == g {print $(NF-1), $NF}' "$OUT/d1-state.txt" | grep -qx "Empty 0" \
    || fail "--describe --state: expected Empty with 0 members"

  kafka_share_groups --reset-offsets --group "$g" --topic "$t" --to-earliest --execute | tee "$OUT/reset.txt"
  grep -qE '^GROUP +TOPIC +PARTITION +NEW-OFFSET *$' "$OUT/reset.txt" || fail "--reset-offsets header differs"
  awk -v g="$g" -v t="$t" '$1 == g && $2 == t && $3 == 0 {print $4}' "$OUT/reset.txt" | grep -qx 0 \
    || fail "--reset-offsets: expected NEW-OFFSET 0"
  kafka_share_groups --describe --group "$g" | tee "$OUT/d2.txt"
  [ "$(share_row "$OUT/d2.txt")" = "0 100" ] || fail "after reset: expected START-OFFSET 0 LAG 100"

  # An active member: it reads all 100 again (the reset made them available, first delivery).
  # shellcheck disable=SC2086
  java $KAFKA_JAVA_OPTS -Dlog4j2.configurationFile="$HERE/lib/log4j2-tools.properties" -cp "$KAFKA_LIBS/*" \
    org.apache.kafka.tools.consumer.ConsoleShareConsumer --bootstrap-server "$BOOTSTRAP" \
    --topic "$t" --group "$g" --formatter-property print.delivery=true > "$OUT/call.txt" 2> "$OUT/call.err" &
  bg=$!
  for i in $(seq 60); do [ "$(wc -l < "$OUT/call.txt")" -ge 100 ] && break; sleep 0.5; done
  [ "$(wc -l < "$OUT/call.txt")" -eq 100 ] || fail "active consumer read $(wc -l < "$OUT/call.txt") of 100"
  [ "$(grep -c $'^Delivery:1\t' "$OUT/call.txt")" -eq 100 ] || fail "expected delivery count 1 for all 100 after the reset"
  kafka_share_groups --describe --group "$g" --members > "$OUT/m.txt" 2>&1 &
  local mp=$!
  kafka_share_groups --describe --group "$g" --state > "$OUT/s.txt" 2>&1 &
  local sp=$!
  kafka_share_groups --reset-offsets --group "$g" --topic "$t" --to-earliest --execute > "$OUT/reset-busy.txt" 2>&1 &
  local rp=$! rrc=0
  wait "$rp" || rrc=$?
  wait "$mp" "$sp" || true  # (a bare wait would wait for the consumer too)
  cat "$OUT/m.txt" "$OUT/s.txt" "$OUT/reset-busy.txt"
  grep -qE '^GROUP +CONSUMER-ID +HOST +CLIENT-ID +#PARTITIONS +ASSIGNMENT *$' "$OUT/m.txt" || fail "--members header differs"
  [ "$(awk -v g="$g" '$1 == g' "$OUT/m.txt" | wc -l)" -eq 1 ] || fail "--members: expected 1 member"
  awk -v g="$g" '$1 == g {print $4, $5, $6}' "$OUT/m.txt" | grep -qx "console-share-consumer 1 $t:0" \
    || fail "--members: expected client console-share-consumer, 1 partition, assignment $t:0"
  awk -v g="$g" '$1 == g {print $(NF-1), $NF}' "$OUT/s.txt" | grep -qx "Stable 1" || fail "--state: expected Stable with 1 member"
  [ "$rrc" -ne 0 ] || fail "--reset-offsets succeeded on a group with an active member"
  grep -q "Share group '$g' is not empty." "$OUT/reset-busy.txt" || fail "no 'is not empty' refusal"
  # What the member read is acknowledged with its next fetch: lag 0.
  for i in $(seq 20); do
    kafka_share_groups --describe --group "$g" > "$OUT/d3.txt" 2>&1
    [ "$(share_row "$OUT/d3.txt" | cut -d' ' -f2)" = 0 ] && break
    sleep 0.5
  done
  cat "$OUT/d3.txt"
  [ "$(share_row "$OUT/d3.txt" | cut -d' ' -f2)" = 0 ] || fail "lag not 0 after the active member read everything"
  kill -TERM "$bg"; wait "$bg" 2>/dev/null || true; bg=""
  cat "$OUT/call.err"

  # The member left on close; a delete racing its departure is refused ("is not empty"): retry.
  for i in $(seq 10); do
    kafka_share_groups --delete --group "$g" > "$OUT/del.txt" 2>&1 || true
    grep -q "was successful" "$OUT/del.txt" && break
    sleep 0.5
  done
  cat "$OUT/del.txt"
  grep -qF "Deletion of requested share groups ('$g') was successful." "$OUT/del.txt" || fail "--delete did not report success"
  kafka_share_groups --list > "$OUT/list2.txt" 2>&1
  if grep -qx "$g" "$OUT/list2.txt"; then fail "$g still listed after --delete"; fi
}

share_case() { case_run share "$1" "$2"; }
share_case java-latest.share.cooperative share_cooperative
share_case java-latest.share.release-redeliver share_release_redeliver
share_case java-latest.share.lock-timeout share_lock_timeout
share_case java-latest.share.tools share_tools
case_summary
