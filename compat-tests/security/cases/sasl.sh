#!/usr/bin/env bash
# SASL listeners with real clients (issue 13): confluent-kafka (librdkafka) with PLAIN,
# SCRAM-SHA-512 and OAUTHBEARER (librdkafka's unsecured JWT) on SASL_PLAINTEXT, a wrong
# password answered with an authentication failure (not a hang), Kafka's kafka-configs adding
# and describing a SCRAM user that then logs in, SCRAM over SASL_SSL (TLS, then SASL), and
# kafkajs with SASL PLAIN.
#
# One broker: PLAINTEXT (the inter-broker listener, used by the admin tools here),
# SASL_PLAINTEXT and SASL_SSL.
source "$(dirname "$0")/../../lib/harness.sh"
source "$(dirname "$0")/../lib.sh"

CERTS="$(certs_dir)" || exit 1
PLAIN_PORT=$CASE_PORT_BASE
SASL_PORT=$((CASE_PORT_BASE + 1))
SASL_SSL_PORT=$((CASE_PORT_BASE + 2))
ADMIN="127.0.0.1:$PLAIN_PORT"
SASL="127.0.0.1:$SASL_PORT"
SASL_SSL="127.0.0.1:$SASL_SSL_PORT"
JAAS='org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="alice-secret";'

start_broker sasl \
  "listeners=PLAINTEXT://127.0.0.1:$PLAIN_PORT,SASL_PLAINTEXT://127.0.0.1:$SASL_PORT,SASL_SSL://127.0.0.1:$SASL_SSL_PORT" \
  "sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-512,OAUTHBEARER" \
  "listener.name.sasl_plaintext.plain.sasl.jaas.config=$JAAS" \
  "listener.name.sasl_ssl.plain.sasl.jaas.config=$JAAS" \
  "ssl.keystore.type=PEM" \
  "ssl.keystore.location=$CERTS/broker.keystore.pem" || exit 1

# roundtrip BOOTSTRAP TOPIC KEY=VALUE...: produce 20 records and consume them back with the
# given client settings; exits non-zero on any error.
roundtrip() {
  "$PY" - "$@" <<'PY'
import sys
from confluent_kafka import Producer, Consumer
from confluent_kafka.admin import AdminClient, NewTopic
bootstrap, topic = sys.argv[1:3]
conf = {"bootstrap.servers": bootstrap}
for kv in sys.argv[3:]:
    k, v = kv.split("=", 1)
    conf[k] = v
admin = AdminClient(conf)
for f in admin.create_topics([NewTopic(topic, 1, 1)]).values():
    f.result(15)
p = Producer(conf)
for i in range(20):
    p.produce(topic, value=f"m{i}".encode())
assert p.flush(15) == 0, "unflushed messages"
c = Consumer({**conf, "group.id": topic, "auto.offset.reset": "earliest"})
c.subscribe([topic])
got = []
while len(got) < 20:
    m = c.poll(15)
    assert m is not None, f"timed out after {len(got)} messages"
    assert m.error() is None, m.error()
    got.append(m.value().decode())
c.close()
assert got == [f"m{i}" for i in range(20)], got[:5]
print(f"20 records round-tripped with {conf.get('sasl.mechanism')} over {conf.get('security.protocol')}")
PY
}

plain() {
  roundtrip "$SASL" "$(topic sasl-plain)" security.protocol=SASL_PLAINTEXT \
    sasl.mechanism=PLAIN sasl.username=alice sasl.password=alice-secret
}

wrong_password() {
  "$PY" - "$SASL" <<'PY'
import sys, time
from confluent_kafka import KafkaError, Producer
errors = []
p = Producer({
    "bootstrap.servers": sys.argv[1],
    "security.protocol": "SASL_PLAINTEXT",
    "sasl.mechanism": "PLAIN",
    "sasl.username": "alice",
    "sasl.password": "wrong",
    "error_cb": errors.append,
})
t0 = time.time()
while not errors and time.time() - t0 < 15:
    p.poll(0.5)
assert errors, "no error reported within 15 s"
e = errors[0]
assert e.code() == KafkaError._AUTHENTICATION, e
assert "Invalid username or password" in e.str(), e.str()
print("refused in", round(time.time() - t0, 1), "s:", e.str())
PY
}

scram_user_from_kafka_configs() {
  BOOTSTRAP="$ADMIN" kafka_configs --alter --entity-type users --entity-name bob \
    --add-config 'SCRAM-SHA-512=[iterations=8192,password=bob-secret]'
  BOOTSTRAP="$ADMIN" kafka_configs --describe --entity-type users --entity-name bob \
    | tee "$OUT/scram-describe.txt"
  grep -q "SCRAM-SHA-512=iterations=8192" "$OUT/scram-describe.txt" \
    || fail "kafka-configs --describe does not show bob's SCRAM-SHA-512 credential"
  roundtrip "$SASL" "$(topic sasl-scram)" security.protocol=SASL_PLAINTEXT \
    sasl.mechanism=SCRAM-SHA-512 sasl.username=bob sasl.password=bob-secret
  # And over SASL_SSL: TLS first, then the same SCRAM exchange.
  roundtrip "$SASL_SSL" "$(topic sasl-ssl-scram)" security.protocol=SASL_SSL \
    "ssl.ca.location=$CERTS/ca.pem" sasl.mechanism=SCRAM-SHA-512 sasl.username=bob \
    sasl.password=bob-secret
}

oauthbearer_unsecured() {
  roundtrip "$SASL" "$(topic sasl-oauth)" security.protocol=SASL_PLAINTEXT \
    sasl.mechanism=OAUTHBEARER enable.sasl.oauthbearer.unsecure.jwt=true \
    sasl.oauthbearer.config=principal=carol
}

kafkajs_plain() {
  node - "$SASL" "$(topic sasl-kjs)" <<'JS'
const { Kafka, logLevel } = require("kafkajs");
const [bootstrap, topic] = process.argv.slice(2);
const kafka = new Kafka({
  clientId: "sasl-kjs", brokers: [bootstrap], logLevel: logLevel.ERROR,
  sasl: { mechanism: "plain", username: "alice", password: "alice-secret" },
});
(async () => {
  const admin = kafka.admin();
  await admin.connect();
  await admin.createTopics({ topics: [{ topic, numPartitions: 1 }] });
  await admin.disconnect();
  const producer = kafka.producer();
  await producer.connect();
  await producer.send({ topic, messages: [...Array(10).keys()].map((i) => ({ value: `m${i}` })) });
  await producer.disconnect();
  const consumer = kafka.consumer({ groupId: topic });
  await consumer.connect();
  await consumer.subscribe({ topic, fromBeginning: true });
  const got = [];
  await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`timed out after ${got.length}`)), 30000);
    consumer.run({ eachMessage: async ({ message }) => {
      got.push(message.value.toString());
      if (got.length === 10) { clearTimeout(timer); resolve(); }
    } });
  });
  await consumer.disconnect();
  if (got.join() !== [...Array(10).keys()].map((i) => `m${i}`).join()) throw new Error(got.join());
  console.log("kafkajs: 10 records over SASL PLAIN");
})().catch((e) => { console.error(e); process.exit(1); });
JS
}

case_run security sasl.confluent_kafka.plain plain
case_run security sasl.confluent_kafka.wrong_password_fails_fast wrong_password
case_run security sasl.kafka_configs.scram_user_then_login_plaintext_and_ssl scram_user_from_kafka_configs
case_run security sasl.confluent_kafka.oauthbearer_unsecured oauthbearer_unsecured
case_run security sasl.kafkajs.plain kafkajs_plain
case_summary
