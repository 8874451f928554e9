#!/usr/bin/env bash
# TLS listeners with real clients (issue 13): confluent-kafka (librdkafka) with mutual TLS,
# including a client whose certificate comes from a CA the broker does not trust; kcat over
# SSL; Kafka's Java console producer/consumer and kafka-topics over SSL with a PEM truststore
# (ssl.truststore.type=PEM) and a PEM keystore.
#
# Two brokers: MTLS requires client certificates (ssl.client.auth=required) and maps the
# certificate subject with ssl.principal.mapping.rules; SERVER-only TLS has no client auth.
source "$(dirname "$0")/../../lib/harness.sh"
source "$(dirname "$0")/../lib.sh"

CERTS="$(certs_dir)" || exit 1
# Kafka's PEM keystore: the private key and the certificate chain in one file.
MTLS_PORT=$CASE_PORT_BASE
TLS_PORT=$((CASE_PORT_BASE + 1))
MTLS="127.0.0.1:$MTLS_PORT"
TLS="127.0.0.1:$TLS_PORT"

tls_keys=(
  "ssl.keystore.type=PEM"
  "ssl.keystore.location=$CERTS/broker.keystore.pem"
  "ssl.truststore.type=PEM"
  "ssl.truststore.location=$CERTS/ca.pem"
)
start_broker mtls "listeners=SSL://127.0.0.1:$MTLS_PORT" "${tls_keys[@]}" \
  "ssl.client.auth=required" \
  "ssl.principal.mapping.rules=RULE:^CN=([a-z]+),OU=eng.*\$/\$1/L,DEFAULT" || exit 1
start_broker tls "listeners=SSL://127.0.0.1:$TLS_PORT" "${tls_keys[@]}" || exit 1

# confluent-kafka with mutual TLS: produce and consume; the rogue certificate is refused.
py_mtls() {
  "$PY" - "$MTLS" "$CERTS" "$(topic tls-py)" <<'PY'
import sys
from confluent_kafka import Producer, Consumer, KafkaException
from confluent_kafka.admin import AdminClient, NewTopic
bootstrap, certs, topic = sys.argv[1:4]
ssl = {
    "bootstrap.servers": bootstrap,
    "security.protocol": "SSL",
    "ssl.ca.location": f"{certs}/ca.pem",
    "ssl.certificate.location": f"{certs}/alice.pem",
    "ssl.key.location": f"{certs}/alice.key",
}
admin = AdminClient(ssl)
for f in admin.create_topics([NewTopic(topic, 1, 1)]).values():
    f.result(15)
p = Producer(ssl)
for i in range(100):
    p.produce(topic, value=f"m{i}".encode(), key=b"k")
assert p.flush(15) == 0, "unflushed messages"
c = Consumer({**ssl, "group.id": "tls-py", "auto.offset.reset": "earliest"})
c.subscribe([topic])
got = []
while len(got) < 100:
    m = c.poll(15)
    assert m is not None, f"timed out after {len(got)} messages"
    assert m.error() is None, m.error()
    got.append(m.value().decode())
c.close()
assert got == [f"m{i}" for i in range(100)], got[:5]
print("produced and consumed 100 over mutual TLS")
PY
}

py_rogue_refused() {
  "$PY" - "$MTLS" "$CERTS" <<'PY'
import sys
from confluent_kafka.admin import AdminClient
bootstrap, certs = sys.argv[1:3]
errors = []
def on_error(e):
    errors.append(e)
admin = AdminClient({
    "bootstrap.servers": bootstrap,
    "security.protocol": "SSL",
    "ssl.ca.location": f"{certs}/ca.pem",
    "ssl.certificate.location": f"{certs}/rogue.pem",
    "ssl.key.location": f"{certs}/rogue.key",
    "error_cb": on_error,
})
try:
    md = admin.list_topics(timeout=8)
    raise SystemExit(f"the rogue client got metadata: {md.brokers}")
except SystemExit:
    raise
except Exception as e:
    print("refused as expected:", e, errors[:2])
PY
  grep -q "TLS handshake failed" "$OUT/broker-mtls.log" || fail "the broker did not log the failed handshake"
}

kcat_ssl() {
  local t; t=$(topic tls-kcat)
  local k=(-X security.protocol=SSL -X "ssl.ca.location=$CERTS/ca.pem")
  kcat_round_trip "$TLS" "$t" "${k[@]}" || return 1
  # With mutual TLS: metadata with alice's certificate.
  kcat -b "$MTLS" "${k[@]}" -X "ssl.certificate.location=$CERTS/alice.pem" \
    -X "ssl.key.location=$CERTS/alice.key" -L | grep -q "broker 1 at" || fail "no metadata over mTLS"
}

java_tools_pem() {
  local t; t=$(topic tls-java)
  cat >"$OUT/client-ssl.properties" <<EOF2
security.protocol=SSL
ssl.truststore.type=PEM
ssl.truststore.location=$CERTS/ca.pem
ssl.keystore.type=PEM
ssl.keystore.location=$CERTS/alice.keystore.pem
EOF2
  BOOTSTRAP="$MTLS" kafka_topics --command-config "$OUT/client-ssl.properties" --create --topic "$t" \
    --partitions 2 --replication-factor 1
  BOOTSTRAP="$MTLS" kafka_topics --command-config "$OUT/client-ssl.properties" --describe --topic "$t" \
    | tee "$OUT/describe.txt"
  grep -q "PartitionCount: 2" "$OUT/describe.txt" || fail "kafka-topics --describe over TLS"
  seq 1 50 | BOOTSTRAP="$MTLS" kafka_console_producer --producer.config "$OUT/client-ssl.properties" \
    --topic "$t"
  BOOTSTRAP="$MTLS" kafka_console_consumer --consumer.config "$OUT/client-ssl.properties" --topic "$t" \
    --from-beginning --max-messages 50 --timeout-ms 30000 | sort -n >"$OUT/java-out.txt"
  [ "$(wc -l <"$OUT/java-out.txt")" = 50 ] || fail "consumed $(wc -l <"$OUT/java-out.txt") of 50"
  seq 1 50 | cmp - "$OUT/java-out.txt" || fail "console round trip over TLS differs"
}

plaintext_on_tls_port_closed() {
  # A Kafka ApiVersions request in plaintext: the broker closes the connection.
  "$PY" - "$TLS_PORT" <<'PY'
import socket, struct, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=5)
body = struct.pack(">hhih", 18, 0, 1, -1)
s.sendall(struct.pack(">i", len(body)) + body)
data = s.recv(100)
# Either nothing (closed) or a TLS alert record (content type 21), never a Kafka response.
assert data == b"" or data[0] == 21, data
print("closed:", data)
PY
}

case_run security tls.confluent_kafka.mutual_tls py_mtls
case_run security tls.confluent_kafka.rogue_certificate_refused py_rogue_refused
case_run security tls.kcat.ssl kcat_ssl
case_run security tls.java.tools_pem_truststore java_tools_pem
case_run security tls.plaintext_on_tls_port_closed plaintext_on_tls_port_closed
case_summary
