#!/usr/bin/env bash
# OAUTHBEARER with signed JWTs (KIP-768, issue 13 oauth slice): the broker's SASL_PLAINTEXT
# listener uses Kafka's OAuthBearerValidatorCallbackHandler with a JWKS file; confluent-kafka
# (librdkafka) gets its token with `sasl.oauthbearer.method=oidc` from a tiny OAuth token
# endpoint served here in Python (client_credentials grant, an RS256 JWT signed with openssl),
# then produces and consumes. A token endpoint signing with a key the JWKS does not hold gets
# the client an authentication error promptly, not a hang, and the broker logs why.
source "$(dirname "$0")/../../lib/harness.sh"
source "$(dirname "$0")/../lib.sh"

PLAIN_PORT=$CASE_PORT_BASE
SASL_PORT=$((CASE_PORT_BASE + 1))
IDP_PORT=$((CASE_PORT_BASE + 2))
ROGUE_IDP_PORT=$((CASE_PORT_BASE + 3))
SASL="127.0.0.1:$SASL_PORT"
ISSUER="http://127.0.0.1:$IDP_PORT"
KEYS="$OUT/oauth-keys"
mkdir -p "$KEYS"
openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out "$KEYS/idp.key" 2>/dev/null \
  && openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out "$KEYS/rogue.key" 2>/dev/null \
  || { echo "openssl could not make the keys" >&2; exit 1; }

# The JWKS the broker reads: the identity provider's public key, as kid "idp-1".
"$PY" - "$KEYS/idp.key" "$KEYS/jwks.json" <<'PY' || exit 1
import base64, json, subprocess, sys
modulus = subprocess.run(["openssl", "rsa", "-in", sys.argv[1], "-noout", "-modulus"],
                         check=True, capture_output=True, text=True).stdout
n = bytes.fromhex(modulus.strip().split("=", 1)[1])
b64 = lambda b: base64.urlsafe_b64encode(b).rstrip(b"=").decode()
jwk = {"kty": "RSA", "use": "sig", "alg": "RS256", "kid": "idp-1",
       "n": b64(n), "e": b64((65537).to_bytes(3, "big"))}
open(sys.argv[2], "w").write(json.dumps({"keys": [jwk]}))
PY

# idp PORT KEY: an OAuth token endpoint (POST /token, client_credentials, HTTP Basic client
# authentication) answering a JWT signed by KEY under kid "idp-1".
idp() {
  "$PY" - "$1" "$2" "$ISSUER" <<'PY' &
import base64, json, subprocess, sys, time, urllib.parse
from http.server import BaseHTTPRequestHandler, HTTPServer
port, key, issuer = int(sys.argv[1]), sys.argv[2], sys.argv[3]
b64 = lambda b: base64.urlsafe_b64encode(b).rstrip(b"=").decode()
class Token(BaseHTTPRequestHandler):
    def do_POST(self):
        form = urllib.parse.parse_qs(self.rfile.read(int(self.headers["Content-Length"])).decode())
        auth = self.headers.get("Authorization", "")
        client = base64.b64decode(auth[6:]).decode() if auth.startswith("Basic ") else ""
        if form.get("grant_type") != ["client_credentials"] or client != "orders-app:orders-secret":
            self.send_response(401); self.end_headers(); return
        now = int(time.time())
        header = {"alg": "RS256", "typ": "JWT", "kid": "idp-1"}
        claims = {"sub": "orders-app", "iss": issuer, "aud": "kafka", "iat": now,
                  "exp": now + 3600, "scope": form.get("scope", ["kafka"])[0]}
        signing_input = b64(json.dumps(header).encode()) + "." + b64(json.dumps(claims).encode())
        sig = subprocess.run(["openssl", "dgst", "-sha256", "-sign", key],
                             input=signing_input.encode(), check=True, capture_output=True).stdout
        body = json.dumps({"access_token": signing_input + "." + b64(sig),
                           "token_type": "Bearer", "expires_in": 3600}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *args):
        pass
HTTPServer(("127.0.0.1", port), Token).serve_forever()
PY
  SEC_PIDS="$SEC_PIDS $!"
}
idp "$IDP_PORT" "$KEYS/idp.key"
idp "$ROGUE_IDP_PORT" "$KEYS/rogue.key"
# librdkafka backs off for seconds after a refused token request: wait until both listen.
for port in "$IDP_PORT" "$ROGUE_IDP_PORT"; do
  for _ in $(seq 1 100); do
    (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break
    sleep 0.1
  done
done

start_broker oauth \
  "listeners=PLAINTEXT://127.0.0.1:$PLAIN_PORT,SASL_PLAINTEXT://127.0.0.1:$SASL_PORT" \
  "sasl.enabled.mechanisms=OAUTHBEARER" \
  "listener.name.sasl_plaintext.oauthbearer.sasl.server.callback.handler.class=org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler" \
  "sasl.oauthbearer.jwks.endpoint.url=file://$KEYS/jwks.json" \
  "sasl.oauthbearer.expected.audience=kafka" \
  "sasl.oauthbearer.expected.issuer=$ISSUER" || exit 1

# The client settings of an OIDC client whose token comes from the endpoint on PORT.
oidc_conf() {
  echo security.protocol=SASL_PLAINTEXT sasl.mechanism=OAUTHBEARER sasl.oauthbearer.method=oidc \
    sasl.oauthbearer.client.id=orders-app sasl.oauthbearer.client.secret=orders-secret \
    sasl.oauthbearer.scope=kafka "sasl.oauthbearer.token.endpoint.url=http://127.0.0.1:$1/token"
}

oidc_produce_consume() {
  # shellcheck disable=SC2046
  "$PY" - "$SASL" "$(topic oauth-oidc)" $(oidc_conf "$IDP_PORT") <<'PY'
import sys
from confluent_kafka import Consumer, Producer
bootstrap, topic = sys.argv[1:3]
conf = {"bootstrap.servers": bootstrap}
conf.update(kv.split("=", 1) for kv in sys.argv[3:])
# The topic is auto-created: an AdminClient here timed out before its OIDC token arrived
# (librdkafka reported unserved background events), while the producer and consumer poll.
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
print("20 records produced and consumed with an OIDC token signed by the JWKS key")
PY
}

token_from_another_key_is_refused() {
  # shellcheck disable=SC2046
  "$PY" - "$SASL" $(oidc_conf "$ROGUE_IDP_PORT") <<'PY'
import sys, time
from confluent_kafka import KafkaError, Producer
errors = []
conf = {"bootstrap.servers": sys.argv[1], "error_cb": errors.append}
conf.update(kv.split("=", 1) for kv in sys.argv[2:])
p = Producer(conf)
t0 = time.time()
while not errors and time.time() - t0 < 15:
    p.poll(0.5)
assert errors, "no error reported within 15 s"
e = errors[0]
assert e.code() == KafkaError._AUTHENTICATION, e
print("refused in", round(time.time() - t0, 1), "s:", e.str())
PY
  grep -q "signature is invalid" "$OUT/broker-oauth.log" \
    || fail "the broker log does not say why the token was refused"
}

case_run security oauth.confluent_kafka.oidc_produce_consume oidc_produce_consume
case_run security oauth.confluent_kafka.token_from_another_key_is_refused token_from_another_key_is_refused
case_summary
