#!/usr/bin/env bash
# A Java consumer re-bootstraps when its whole cluster comes back on new addresses (KIP-899,
# KIP-1102; issue 16). Needs the cluster of cluster.sh running (cluster/run.sh starts it and
# runs this after tools.sh).
#
#   cluster.rebootstrap.java-latest  A Kafka 4.3.1 consumer (RebootstrapCheck.java, group,
#       metadata.recovery.strategy=rebootstrap, metadata.recovery.rebootstrap.trigger.ms=5000)
#       bootstraps from tcpfwd.py on CLUSTER_PORT_BASE+20, which forwards each connection to
#       the first broker port that accepts, of base+1..3 and base+21..23. 15 records in a
#       3-partition RF-3 topic are read and committed; then all three nodes are stopped at
#       once (SIGTERM) and started again on their data with broker ports base+21..23 and
#       controller ports base+31..33 (same node ids; every address new, so the quorum must
#       form at its configured voters), 15 more are produced; then the same back to
#       base+1..3 and 15 more. The one consumer process must print exactly the 45 records
#       (partition, offset, value) and its log must show it went back to the bootstrap
#       address ("Rebootstrapping with") at least twice.
#
# Ports: CLUSTER_PORT_BASE+20 (forwarder), +21..23 and +31..33 (the brokers and controllers
# while moved).
# REBOOTSTRAP_GROUP_PROTOCOL=consumer: the consumer uses KIP-848's protocol instead of classic.
source "$(dirname "$0")/../lib/harness.sh"
CL="$HERE/cluster/cluster.sh"
BASE=${CLUSTER_PORT_BASE:-19400}
MOVED=$((BASE + 20))  # brokers at MOVED+N, controllers at MOVED+10+N while moved; the forwarder on MOVED
FWD="127.0.0.1:$MOVED"
PER_BATCH=15           # 5 records in each of 3 partitions

# produce_batch BOOTSTRAP TOPIC BATCH: 5 records "BATCH-P-I" in each partition P (acks=all);
# prints "PARTITION OFFSET VALUE" per delivery report. With BATCH "create" it creates TOPIC
# (3 partitions, RF 3) instead and waits until every partition has a leader.
produce_batch() {
  "$PY" - "$@" <<'EOF'
import sys, time
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic
bs, topic, batch = sys.argv[1:4]
if batch == "create":
    a = AdminClient({"bootstrap.servers": bs})
    a.create_topics([NewTopic(topic, 3, 3)], operation_timeout=30)[topic].result()
    for _ in range(100):
        t = a.list_topics(topic, timeout=10).topics.get(topic)
        if t and t.error is None and len(t.partitions) == 3 and all(p.leader >= 0 for p in t.partitions.values()):
            sys.exit(0)
        time.sleep(0.2)
    sys.exit(f"topic {topic} has no leader for every partition")
p = Producer({"bootstrap.servers": bs, "acks": "all", "enable.idempotence": True,
              "message.timeout.ms": 40000})
got, errs = [], []
def report(err, m):
    if err: errs.append(str(err))
    else: got.append((m.partition(), m.offset(), m.value().decode()))
for part in range(3):
    for i in range(5):
        p.produce(topic, f"{batch}-{part}-{i}".encode(), partition=part, on_delivery=report)
left = p.flush(45)
for r in sorted(got): print(*r)
if errs or left: sys.exit(f"produce: errors {errs}, {left} undelivered")
EOF
}

# move_cluster PORT_BASE: stop every node (SIGTERM to all three at once, as a whole-cluster
# shutdown; one after the other took 15-20 s, the last node waiting 5 s for a controlled
# shutdown no quorum can grant), start them all on their data with broker N on PORT_BASE+N
# and controller N on PORT_BASE+10+N (every address new), wait until each lists the 3 brokers.
move_cluster() {
  local t0=$SECONDS n pids=()
  for n in 1 2 3; do bash "$CL" stop-node "$n" & pids+=($!); done
  wait "${pids[@]}"
  CLUSTER_BROKER_PORT_BASE=$1 CLUSTER_CONTROLLER_PORT_BASE=$1 bash "$CL" start
  CLUSTER_BROKER_PORT_BASE=$1 CLUSTER_CONTROLLER_PORT_BASE=$1 bash "$CL" wait-ready 60 2>&1 \
    | grep -v '^%' | tail -1
  echo "cluster moved to broker ports $(( $1 + 1 ))..$(( $1 + 3 )), controller ports" \
    "$(( $1 + 11 ))..$(( $1 + 13 )) in $(( SECONDS - t0 )) s"
}

# wait_committed DIR N TIMEOUT_S: until the consumer has committed after N records
wait_committed() {
  local out="$1/consumer.out" i last
  for i in $(seq $(( $3 * 4 ))); do
    last=$(sed -n 's/^committed //p' "$out" | tail -1)
    [ -n "$last" ] && [ "$last" -ge "$2" ] && return 0
    kill -0 "$cons_pid" 2>/dev/null || { fail "the consumer exited before committing $2 records"; return 1; }
    sleep 0.25
  done
  tail -5 "$1/consumer.log" >&2
  fail "no commit after $2 records within $3 s (last: '${last}')"
}

rebootstrap_java() {
  local t g dir="$OUT/rebootstrap" home
  t=$(topic rebootstrap); g="compat-$RUN_ID-rebootstrap-group"
  mkdir -p "$dir"
  home=$(bash "$CL" bootstrap)
  fwd_pid="" cons_pid="" moved_now=""  # global: the EXIT trap reads them
  # Whatever happens: our consumer and forwarder go, the brokers go back to their own ports.
  # (Quietly: the failure's own message stays the log's last line.)
  trap 'kill $cons_pid $fwd_pid 2>/dev/null
        if [ -n "$moved_now" ]; then { bash "$CL" stop; bash "$CL" start && bash "$CL" wait-ready 60; } \
          >"$OUT/rebootstrap/restore.log" 2>&1; fi' EXIT
  trap 'exit 143' TERM
  javac -d "$dir/classes" -cp "$KAFKA_LATEST_LIBS/*" "$HERE/tests/RebootstrapCheck.java"
  "$PY" -u "$HERE/cluster/tcpfwd.py" "$MOVED" $(for n in 1 2 3; do echo "127.0.0.1:$(( BASE + n ))"; done) \
    $(for n in 1 2 3; do echo "127.0.0.1:$(( MOVED + n ))"; done) >"$dir/fwd.out" 2>"$dir/fwd.log" &
  fwd_pid=$!
  local i
  for i in $(seq 40); do grep -q '^listening' "$dir/fwd.out" && break; sleep 0.1; done
  grep -q '^listening' "$dir/fwd.out" || { cat "$dir/fwd.log"; fail "forwarder did not start on $FWD"; }

  produce_batch "$home" "$t" create
  : >"$dir/want"
  produce_batch "$home" "$t" a >>"$dir/want"
  # The client's INFO lines (rebootstrap, coordinator, group) go to its log.
  printf '%s\n' 'appender.err.type = Console' 'appender.err.name = STDERR' \
    'appender.err.target = SYSTEM_ERR' 'appender.err.layout.type = PatternLayout' \
    'appender.err.layout.pattern = [%d] %p %m (%c)%n' 'rootLogger.level = WARN' \
    'rootLogger.appenderRef.err.ref = STDERR' 'logger.clients.name = org.apache.kafka.clients' \
    'logger.clients.level = INFO' >"$dir/log4j2.properties"
  # shellcheck disable=SC2086
  java $KAFKA_JAVA_OPTS -Dlog4j2.configurationFile="$dir/log4j2.properties" \
    -cp "$dir/classes:$KAFKA_LATEST_LIBS/*" RebootstrapCheck "$FWD" "$t" "$g" $(( 3 * PER_BATCH )) 150 ${REBOOTSTRAP_GROUP_PROTOCOL:-} \
    >"$dir/consumer.out" 2>"$dir/consumer.log" &
  cons_pid=$!
  wait_committed "$dir" "$PER_BATCH" 60

  moved_now=1
  move_cluster "$MOVED"
  produce_batch "$(CLUSTER_BROKER_PORT_BASE=$MOVED bash "$CL" bootstrap)" "$t" b >>"$dir/want"
  wait_committed "$dir" $(( 2 * PER_BATCH )) 60

  move_cluster "$BASE"
  moved_now=""
  produce_batch "$home" "$t" c >>"$dir/want"
  wait_committed "$dir" $(( 3 * PER_BATCH )) 60

  local rc=0
  wait "$cons_pid" || rc=$?
  cons_pid=""
  echo "consumer exited $rc; forwarder connections: $(grep -c ' conn ' "$dir/fwd.log") ($(grep -c 'no upstream' "$dir/fwd.log") refused)"
  grep -E '^(assigned|revoked|lost|done)' "$dir/consumer.out" || true
  # The client's rebootstraps and the coordinators it found, repeats counted
  sed -n 's/.*\] \(Rebootstrapping with .*\|Discovered group coordinator .*\) (org\..*/\1/p' \
    "$dir/consumer.log" | uniq -c | cut -c1-200 || true
  # Offsets continue across both moves: batch b at 5..9 and c at 10..14 in every partition.
  local p k expect=""
  for p in 0 1 2; do for k in 0 1 2; do for i in 0 1 2 3 4; do
    expect+="$p $(( 5 * k + i )) $(cut -c$(( k + 1 )) <<<abc)-$p-$i"$'\n'
  done; done; done
  diff <(sort "$dir/want") <(printf '%s' "$expect" | sort) >&2 || fail "delivery reports differ from the 45 records expected"
  sed -n 's/^record //p' "$dir/consumer.out" | sort >"$dir/got"
  diff <(sort "$dir/want") "$dir/got" >&2 || fail "the consumer's records (>) differ from those produced (<)"
  [ "$rc" = 0 ] || fail "the consumer exited $rc"
  local n; n=$(grep -c 'Rebootstrapping with' "$dir/consumer.log" || true)
  [ "$n" -ge 2 ] || fail "the consumer rebootstrapped $n times, want at least 2 (one per move)"
}

CASE_TIMEOUT="${CASE_TIMEOUT:-240}" case_run cluster cluster.rebootstrap.java-latest rebootstrap_java
case_summary
