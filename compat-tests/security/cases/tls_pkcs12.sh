#!/usr/bin/env bash
# PKCS12 keystores and truststores made by keytool (issue 13): the broker's keystore is made
# the way Kafka's documentation does it (keytool -genkeypair, a signing request signed by the
# CA, the CA and the signed certificate imported back), its truststore by keytool
# -importcert; both are keytool's default PKCS12 (PBES2/AES-256, HmacSHA256). Mutual TLS is
# required. Kafka's Java console tools connect with PKCS12 client stores (alice's key in a
# keytool keystore), kcat (librdkafka) with alice's PKCS12 keystore and the PEM CA.
source "$(dirname "$0")/../../lib/harness.sh"
source "$(dirname "$0")/../lib.sh"

CERTS="$(certs_dir)" || exit 1
PORT=$CASE_PORT_BASE
BROKER="127.0.0.1:$PORT"
STORES="$OUT/pkcs12"
mkdir -p "$STORES"
KS_PASS=broker-store-pw
TS_PASS=trust-store-pw
ALICE_PASS=alice-store-pw

make_stores() {
  local kt=(keytool -noprompt -storetype PKCS12)
  (
    set -e
    cd "$STORES"
    "${kt[@]}" -genkeypair -alias broker -keyalg RSA -keysize 2048 -validity 2 \
      -dname "CN=broker" -ext "SAN=dns:localhost,ip:127.0.0.1" \
      -keystore broker.p12 -storepass "$KS_PASS"
    "${kt[@]}" -certreq -alias broker -keystore broker.p12 -storepass "$KS_PASS" \
      -ext "SAN=dns:localhost,ip:127.0.0.1" -file broker.csr
    printf 'basicConstraints=CA:FALSE\nkeyUsage=digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth,clientAuth\nsubjectAltName=DNS:localhost,IP:127.0.0.1\n' >broker.ext
    openssl x509 -req -in broker.csr -CA "$CERTS/ca.pem" -CAkey "$CERTS/ca.key" \
      -CAcreateserial -CAserial ca.srl -days 2 -extfile broker.ext -out broker-signed.pem 2>/dev/null
    "${kt[@]}" -importcert -alias ca -file "$CERTS/ca.pem" -keystore broker.p12 -storepass "$KS_PASS"
    "${kt[@]}" -importcert -alias broker -file broker-signed.pem -keystore broker.p12 -storepass "$KS_PASS"
    "${kt[@]}" -importcert -alias ca -file "$CERTS/ca.pem" -keystore truststore.p12 -storepass "$TS_PASS"
    # Alice's client keystore: her PEM key and certificate, moved into keytool's format.
    openssl pkcs12 -export -name alice -inkey "$CERTS/alice.key" -in "$CERTS/alice.pem" \
      -certfile "$CERTS/ca.pem" -out alice-openssl.p12 -passout "pass:$ALICE_PASS"
    "${kt[@]}" -importkeystore -srcstoretype PKCS12 -srckeystore alice-openssl.p12 \
      -srcstorepass "$ALICE_PASS" -destkeystore alice.p12 -deststoretype PKCS12 \
      -deststorepass "$ALICE_PASS"
  ) >"$OUT/make-stores.log" 2>&1
}
make_stores || { cat "$OUT/make-stores.log" >&2; exit 1; }

start_broker pkcs12 "listeners=SSL://127.0.0.1:$PORT" \
  "ssl.keystore.type=PKCS12" "ssl.keystore.location=$STORES/broker.p12" \
  "ssl.keystore.password=$KS_PASS" "ssl.key.password=$KS_PASS" \
  "ssl.truststore.type=PKCS12" "ssl.truststore.location=$STORES/truststore.p12" \
  "ssl.truststore.password=$TS_PASS" "ssl.client.auth=required" || exit 1

stores_are_keytool_defaults() {
  openssl pkcs12 -info -noout -in "$STORES/broker.p12" -passin "pass:$KS_PASS" 2>&1 \
    | tee "$OUT/broker-p12-info.txt"
  grep -q "AES-256-CBC" "$OUT/broker-p12-info.txt" || fail "broker.p12 is not PBES2/AES-256"
  grep -q "MAC: sha256" "$OUT/broker-p12-info.txt" || fail "broker.p12 has no HmacSHA256 MAC"
  # The served certificate is the one signed into the keystore.
  openssl s_client -connect "$BROKER" -cert "$CERTS/alice.pem" -key "$CERTS/alice.key" \
    -CAfile "$CERTS/ca.pem" </dev/null 2>/dev/null | openssl x509 -noout -fingerprint -sha256 \
    >"$OUT/served.txt"
  openssl x509 -in "$STORES/broker-signed.pem" -noout -fingerprint -sha256 | cmp - "$OUT/served.txt" \
    || fail "the broker serves another certificate than the keystore's"
}

java_tools_pkcs12() {
  local t; t=$(topic tls-p12-java)
  cat >"$OUT/client-p12.properties" <<EOF2
security.protocol=SSL
ssl.truststore.type=PKCS12
ssl.truststore.location=$STORES/truststore.p12
ssl.truststore.password=$TS_PASS
ssl.keystore.type=PKCS12
ssl.keystore.location=$STORES/alice.p12
ssl.keystore.password=$ALICE_PASS
EOF2
  BOOTSTRAP="$BROKER" kafka_topics --command-config "$OUT/client-p12.properties" --create --topic "$t" \
    --partitions 2 --replication-factor 1
  seq 1 50 | BOOTSTRAP="$BROKER" kafka_console_producer --producer.config "$OUT/client-p12.properties" \
    --topic "$t"
  BOOTSTRAP="$BROKER" kafka_console_consumer --consumer.config "$OUT/client-p12.properties" --topic "$t" \
    --from-beginning --max-messages 50 --timeout-ms 30000 | sort -n >"$OUT/java-out.txt"
  [ "$(wc -l <"$OUT/java-out.txt")" = 50 ] || fail "consumed $(wc -l <"$OUT/java-out.txt") of 50"
  seq 1 50 | cmp - "$OUT/java-out.txt" || fail "console round trip over TLS differs"
}

kcat_pkcs12() {
  local t; t=$(topic tls-p12-kcat)
  local k=(-X security.protocol=SSL -X "ssl.ca.location=$CERTS/ca.pem"
    -X "ssl.keystore.location=$STORES/alice.p12" -X "ssl.keystore.password=$ALICE_PASS")
  kcat_round_trip "$BROKER" "$t" "${k[@]}" || return 1
  # Without a client certificate the broker refuses the connection.
  if kcat -b "$BROKER" -X security.protocol=SSL -X "ssl.ca.location=$CERTS/ca.pem" -L -m 5 \
      >"$OUT/kcat-nocert.txt" 2>&1; then
    fail "kcat without a certificate got metadata"
  fi
}

case_run security tls_pkcs12.keytool_stores_served stores_are_keytool_defaults
case_run security tls_pkcs12.java.console_tools java_tools_pkcs12
case_run security tls_pkcs12.kcat.mutual_tls kcat_pkcs12
case_summary
