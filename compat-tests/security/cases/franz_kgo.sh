#!/usr/bin/env bash
# franz-go's own pkg/kgo integration tests (compat-tests/tests/franz_kgo.sh, the same
# allow-list as the single-broker suite) with franz-go's own security switches set, against a
# secured broker:
#  - every allow-listed test over mutual TLS (KGO_TEST_TLS=ca:..,cert:..,key:.. makes every
#    test client of the suite dial TLS with that CA and client certificate), except
#    TestIssue769, which sets its own Dialer and so cannot be combined with KGO_TEST_TLS
#    against any broker (franz-go refuses both options: the test dereferences a nil client);
#  - TestSCRAMAuth with KGO_TEST_SCRAM (SCRAM-SHA-256 and again SCRAM-SHA-512; the user is
#    made with kafka-configs) and TestSCRAMAuthBadCredentials on KGO_TEST_SCRAM_SEEDS, and
#    TestOAuthAuth on KGO_TEST_OAUTH_SEEDS (an unsecured token accepted, an expired one failing
#    with SASL_AUTHENTICATION_FAILED naming invalid_token). These tests build their own
#    clients without TLS, so both seeds are a SASL_PLAINTEXT listener.
source "$(dirname "$0")/../../lib/harness.sh"
source "$(dirname "$0")/../lib.sh"

CERTS="$(certs_dir)" || exit 1
PLAIN_PORT=$CASE_PORT_BASE
SSL_PORT=$((CASE_PORT_BASE + 1))
SCRAM_PORT=$((CASE_PORT_BASE + 2))
start_broker kgo-secured \
  "listeners=PLAINTEXT://127.0.0.1:$PLAIN_PORT,SSL://127.0.0.1:$SSL_PORT,SASL_PLAINTEXT://127.0.0.1:$SCRAM_PORT" \
  "ssl.keystore.type=PEM" "ssl.keystore.location=$CERTS/broker.keystore.pem" \
  "ssl.truststore.type=PEM" "ssl.truststore.location=$CERTS/ca.pem" \
  "listener.name.ssl.ssl.client.auth=required" \
  "listener.name.sasl_plaintext.sasl.enabled.mechanisms=SCRAM-SHA-256,SCRAM-SHA-512,OAUTHBEARER" \
  || exit 1

for mech in SCRAM-SHA-256 SCRAM-SHA-512; do
  BOOTSTRAP="127.0.0.1:$PLAIN_PORT" kafka_configs --alter --entity-type users --entity-name kgo \
    --add-config "$mech=[password=kgo-secret]" >>"$OUT/kgo-users.txt" 2>&1 \
    || { echo "could not create the kgo SCRAM user:"; cat "$OUT/kgo-users.txt"; exit 1; }
done

KGO_RUNNER="$(dirname "$0")/../../tests/franz_kgo.sh"
export KGO_TEST_TLS="ca:$CERTS/ca.pem,cert:$CERTS/alice.pem,key:$CERTS/alice.key"
grep -v '^TestIssue769$' "$(dirname "$0")/../../franz-kgo/allowlist.txt" >"$OUT/kgo-tls-allowlist.txt"
BOOTSTRAP="127.0.0.1:$SSL_PORT" KGO_CASE_PREFIX=franz-kgo-tls \
  KGO_ALLOWLIST="$OUT/kgo-tls-allowlist.txt" bash "$KGO_RUNNER"

printf '%s\n' TestSCRAMAuth TestSCRAMAuthBadCredentials TestOAuthAuth >"$OUT/kgo-sasl-allowlist.txt"
export KGO_TEST_SCRAM_SEEDS="127.0.0.1:$SCRAM_PORT" KGO_TEST_OAUTH_SEEDS="127.0.0.1:$SCRAM_PORT"
BOOTSTRAP="127.0.0.1:$SSL_PORT" KGO_TEST_SCRAM="kgo:kgo-secret" KGO_CASE_PREFIX=franz-kgo-sasl \
  KGO_ALLOWLIST="$OUT/kgo-sasl-allowlist.txt" bash "$KGO_RUNNER"
echo TestSCRAMAuth >"$OUT/kgo-sasl512-allowlist.txt"
BOOTSTRAP="127.0.0.1:$SSL_PORT" KGO_TEST_SCRAM="kgo:kgo-secret:512" \
  KGO_CASE_PREFIX=franz-kgo-sasl512 KGO_ALLOWLIST="$OUT/kgo-sasl512-allowlist.txt" bash "$KGO_RUNNER"
