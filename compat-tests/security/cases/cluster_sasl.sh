#!/usr/bin/env bash
# A 3-process cluster whose inter-broker and controller listeners are SASL_SSL with
# SCRAM-SHA-512 (issue 13): the admin user comes from `strata storage format --add-scram`
# (Kafka's KIP-900), so the Raft quorum, replica fetchers, forwarding and heartbeats log in
# with it before anyone could create a user. Kafka's kafka-topics (Java, SASL_SSL with a
# client.properties) creates an RF-3 topic, confluent-kafka produces with acks=all, the
# partition leader is killed with SIGKILL, and confluent-kafka reads every record back from
# the survivors. Also: `--add-scram` with a bad argument fails with Kafka's message.
#
# Ports: node n's SASL_SSL broker listener is CASE_PORT_BASE+n, its controller listener
# CASE_PORT_BASE+10+n (n = 1..3).
source "$(dirname "$0")/../../lib/harness.sh"
source "$(dirname "$0")/../lib.sh"

CERTS="$(certs_dir)" || exit 1
cat "$CERTS/broker.key" "$CERTS/broker.pem" >"$CERTS/broker.keystore.pem"
B=$CASE_PORT_BASE
NODES="1 2 3"
CLUSTER="$OUT/cluster-sasl"
rm -rf "$CLUSTER"; mkdir -p "$CLUSTER"
JAAS='org.apache.kafka.common.security.scram.ScramLoginModule required username="admin" password="admin-secret";'
export BOOTSTRAP="127.0.0.1:$((B + 1)),127.0.0.1:$((B + 2)),127.0.0.1:$((B + 3))"

# The clients' settings (Java tools): SASL_SSL, SCRAM-SHA-512 as admin, the CA as PEM.
cat >"$CLUSTER/client.properties" <<PROPS
security.protocol=SASL_SSL
sasl.mechanism=SCRAM-SHA-512
sasl.jaas.config=$JAAS
ssl.truststore.type=PEM
ssl.truststore.location=$CERTS/ca.pem
PROPS

voters=""
for n in $NODES; do voters="${voters:+$voters,}$n@127.0.0.1:$((B + 10 + n))"; done
for n in $NODES; do
  cat >"$CLUSTER/n$n.properties" <<PROPS
node.id=$n
process.roles=broker,controller
listeners=BROKER://127.0.0.1:$((B + n)),CONTROLLER://127.0.0.1:$((B + 10 + n))
listener.security.protocol.map=BROKER:SASL_SSL,CONTROLLER:SASL_SSL
inter.broker.listener.name=BROKER
controller.listener.names=CONTROLLER
controller.quorum.voters=$voters
log.dirs=$CLUSTER/n$n
sasl.enabled.mechanisms=SCRAM-SHA-512
sasl.mechanism.inter.broker.protocol=SCRAM-SHA-512
sasl.mechanism.controller.protocol=SCRAM-SHA-512
listener.name.broker.scram-sha-512.sasl.jaas.config=$JAAS
listener.name.controller.scram-sha-512.sasl.jaas.config=$JAAS
ssl.keystore.type=PEM
ssl.keystore.location=$CERTS/broker.keystore.pem
ssl.truststore.type=PEM
ssl.truststore.location=$CERTS/ca.pem
default.replication.factor=3
min.insync.replicas=2
offsets.topic.replication.factor=3
transaction.state.log.replication.factor=3
broker.heartbeat.interval.ms=500
broker.session.timeout.ms=4000
replica.lag.time.max.ms=4000
strata.admin.listeners=
PROPS
done

CLUSTER_ID=$("$STRATA_BIN" storage random-uuid)
for n in $NODES; do
  "$STRATA_BIN" storage format --cluster-id "$CLUSTER_ID" --config "$CLUSTER/n$n.properties" \
    --add-scram 'SCRAM-SHA-512=[name=admin,password=admin-secret]' \
    >>"$CLUSTER/format.log" 2>&1 || { cat "$CLUSTER/format.log" >&2; exit 1; }
done
for n in $NODES; do
  "$STRATA_BIN" --config "$CLUSTER/n$n.properties" >"$OUT/broker-cluster-sasl-n$n.log" 2>&1 &
  echo $! >"$CLUSTER/n$n.pid"
  SEC_PIDS="$SEC_PIDS $!"
done
for n in $NODES; do
  for _ in $(seq 1 100); do
    (exec 3<>"/dev/tcp/127.0.0.1/$((B + n))") 2>/dev/null && break
    sleep 0.1
  done
done

TOPIC="$(topic cluster-sasl)"

# The partition leader's node id, from kafka-topics --describe over SASL_SSL.
leader_of() {
  kafka_topics --describe --topic "$1" --command-config "$CLUSTER/client.properties" \
    | sed -nE 's/.*Leader: ([0-9]+).*/\1/p' | head -1
}

# Kafka's kafka-topics creates the RF-3 topic once the three brokers have registered (they
# must log in to the controllers first); retried while the cluster is still forming.
create_rf3_topic() {
  local ok=""
  for _ in $(seq 1 30); do
    if kafka_topics --create --topic "$TOPIC" --partitions 1 --replication-factor 3 \
      --config min.insync.replicas=2 --command-config "$CLUSTER/client.properties" \
      >"$CLUSTER/create.out" 2>&1; then
      ok=1; break
    fi
    grep -q "already exists" "$CLUSTER/create.out" && { ok=1; break; }
    sleep 1
  done
  cat "$CLUSTER/create.out"
  [ -n "$ok" ] || fail "kafka-topics could not create an RF-3 topic over SASL_SSL"
  kafka_topics --describe --topic "$TOPIC" --command-config "$CLUSTER/client.properties" \
    | tee "$CLUSTER/describe.out"
  grep -qE "Replicas: [0-9],[0-9],[0-9]" "$CLUSTER/describe.out" \
    || fail "the topic does not have three replicas"
  # The ISR fills once both followers have fetched over the SASL_SSL inter-broker listener.
  for _ in $(seq 1 30); do
    kafka_topics --describe --topic "$TOPIC" --command-config "$CLUSTER/client.properties" \
      >"$CLUSTER/describe.out" 2>&1
    grep -qE "Isr: [0-9],[0-9],[0-9]" "$CLUSTER/describe.out" && return 0
    sleep 1
  done
  cat "$CLUSTER/describe.out"
  fail "the ISR never held all three replicas"
}

# confluent-kafka over SASL_SSL/SCRAM-SHA-512 produces 500 records with acks=all; the leader
# is killed with SIGKILL; every acknowledged record is read back from the survivors.
acks_all_survives_kill_9_of_the_leader() {
  local leader pid
  leader=$(leader_of "$TOPIC")
  [ -n "$leader" ] || fail "no leader for $TOPIC"
  "$PY" - "$BOOTSTRAP" "$TOPIC" "$CERTS/ca.pem" produce <<'PY'
import sys
from confluent_kafka import Producer
bootstrap, topic, ca = sys.argv[1:4]
conf = {"bootstrap.servers": bootstrap, "security.protocol": "SASL_SSL",
        "sasl.mechanism": "SCRAM-SHA-512", "sasl.username": "admin",
        "sasl.password": "admin-secret", "ssl.ca.location": ca}
acked, errors = [], []
def report(err, msg):
    (errors if err else acked).append(err or msg.offset())
p = Producer({**conf, "acks": "all", "enable.idempotence": True})
for i in range(500):
    p.produce(topic, value=f"m{i}".encode(), on_delivery=report)
assert p.flush(30) == 0, "unflushed messages"
assert not errors, errors[:3]
assert sorted(acked) == list(range(500)), acked[:5]
print("500 records acknowledged with acks=all")
PY
  pid=$(cat "$CLUSTER/n$leader.pid")
  kill -9 "$pid"
  echo "killed node $leader (pid $pid) with SIGKILL"
  "$PY" - "$BOOTSTRAP" "$TOPIC" "$CERTS/ca.pem" <<'PY'
import sys, time
from confluent_kafka import Consumer, TopicPartition, OFFSET_BEGINNING
bootstrap, topic, ca = sys.argv[1:4]
conf = {"bootstrap.servers": bootstrap, "security.protocol": "SASL_SSL",
        "sasl.mechanism": "SCRAM-SHA-512", "sasl.username": "admin",
        "sasl.password": "admin-secret", "ssl.ca.location": ca}
c = Consumer({**conf, "group.id": topic, "enable.auto.commit": False})
c.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
got, t0 = [], time.time()
while len(got) < 500 and time.time() - t0 < 60:
    m = c.poll(1)
    if m is None or m.error():
        continue
    got.append(m.value().decode())
c.close()
assert got == [f"m{i}" for i in range(500)], (len(got), got[:3])
print(f"all 500 records read back from the survivors in {time.time() - t0:.1f} s")
PY
  # Each survivor's log names the lost peer, never a SASL failure of its own.
  for n in $NODES; do
    [ "$n" = "$leader" ] && continue
    if grep -q "SASL authentication to a peer failed" "$OUT/broker-cluster-sasl-n$n.log"; then
      fail "node $n reports a failed peer login"
    fi
  done
}

add_scram_refuses_bad_arguments_with_kafkas_messages() {
  local out
  out=$("$STRATA_BIN" storage format --cluster-id "$CLUSTER_ID" --config "$CLUSTER/n1.properties" \
    --add-scram 'SCRAM-SHA-512=[name=admin,password=x,iterations=99]' 2>&1) \
    && fail "format accepted 99 iterations"
  echo "$out"
  grep -q "The 'iterations' value must be >= 4096 for add-scram using SCRAM_SHA_512" <<<"$out" \
    || fail "not Kafka's message: $out"
  out=$("$STRATA_BIN" storage format --cluster-id "$CLUSTER_ID" --config "$CLUSTER/n1.properties" \
    --add-scram 'SCRAM-SHA-1=[name=admin,password=x]' 2>&1) && fail "format accepted SCRAM-SHA-1"
  echo "$out"
  grep -q "The add-scram mechanism SCRAM-SHA-1 is not supported." <<<"$out" \
    || fail "not Kafka's message: $out"
}

case_run security cluster_sasl.kafka_topics_creates_an_rf3_topic_over_sasl_ssl create_rf3_topic
case_run security cluster_sasl.confluent_kafka.acks_all_survives_kill_9_of_the_leader \
  acks_all_survives_kill_9_of_the_leader
case_run security cluster_sasl.storage_format.add_scram_bad_arguments \
  add_scram_refuses_bad_arguments_with_kafkas_messages
case_summary
