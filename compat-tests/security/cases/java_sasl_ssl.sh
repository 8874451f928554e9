#!/usr/bin/env bash
# Kafka's own Java tools over SASL_SSL with SCRAM-SHA-512 against a broker whose
# StandardAuthorizer is on (issue 13): kafka-configs makes SCRAM users and quotas, kafka-acls
# adds, lists and removes ACLs, kafka-topics creates, describes and lists (filtered by what the
# caller may describe), the console producer and consumer run as a non-super user holding only
# the ACLs given to her, and kafka-consumer-groups describes her group. Every tool but the very
# first kafka-configs (which creates the admin's credential) talks SASL_SSL.
#
# One broker: PLAINTEXT (the inter-broker listener; its User:ANONYMOUS is a super user, as in
# Kafka's own docs for a plaintext inter-broker listener) and SASL_SSL for every client.
source "$(dirname "$0")/../../lib/harness.sh"
source "$(dirname "$0")/../lib.sh"

CERTS="$(certs_dir)" || exit 1
PLAIN_PORT=$CASE_PORT_BASE
SASL_SSL_PORT=$((CASE_PORT_BASE + 1))
SASL_SSL="127.0.0.1:$SASL_SSL_PORT"

start_broker java-sasl-ssl \
  "listeners=PLAINTEXT://127.0.0.1:$PLAIN_PORT,SASL_SSL://127.0.0.1:$SASL_SSL_PORT" \
  "sasl.enabled.mechanisms=SCRAM-SHA-512" \
  "ssl.keystore.type=PEM" \
  "ssl.keystore.location=$CERTS/broker.keystore.pem" \
  "authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer" \
  "super.users=User:admin;User:ANONYMOUS" || exit 1

# client_props USER PASSWORD: a Java client config for SASL_SSL + SCRAM-SHA-512 (PEM trust).
client_props() {
  local f="$OUT/$1.properties"
  cat >"$f" <<EOF
security.protocol=SASL_SSL
sasl.mechanism=SCRAM-SHA-512
sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username="$1" password="$2";
ssl.truststore.type=PEM
ssl.truststore.location=$CERTS/ca.pem
EOF
  echo "$f"
}
ADMIN_PROPS=""
ALICE_PROPS=""
kafka_acls() { jk org.apache.kafka.tools.AclCommand --bootstrap-server "$SASL_SSL" "$@"; }
as_admin() { BOOTSTRAP="$SASL_SSL" "$@"; }

# The first user can only come over the plaintext inter-broker listener (or from `strata
# storage format --add-scram`); everything after it is SASL_SSL.
BOOTSTRAP="127.0.0.1:$PLAIN_PORT" kafka_configs --alter --entity-type users --entity-name admin \
  --add-config 'SCRAM-SHA-512=[password=admin-secret]' >"$OUT/admin-user.txt" 2>&1 || {
  echo "could not create the admin SCRAM user:"; cat "$OUT/admin-user.txt"; exit 1; }
ADMIN_PROPS=$(client_props admin admin-secret)
ALICE_PROPS=$(client_props alice alice-secret)
TOPIC=$(topic java-sasl-orders)
HIDDEN=$(topic java-sasl-hidden)
GROUP="java-sasl-$RUN_ID"

scram_user_for_alice() {
  as_admin kafka_configs --command-config "$ADMIN_PROPS" --alter --entity-type users \
    --entity-name alice --add-config 'SCRAM-SHA-512=[iterations=4096,password=alice-secret]'
  as_admin kafka_configs --command-config "$ADMIN_PROPS" --describe --entity-type users \
    --entity-name alice | tee "$OUT/alice-describe.txt"
  grep -q "SCRAM-SHA-512=iterations=4096" "$OUT/alice-describe.txt" \
    || fail "kafka-configs --describe does not show alice's credential"
}

topics_as_admin() {
  as_admin kafka_topics --command-config "$ADMIN_PROPS" --create --topic "$TOPIC" \
    --partitions 3 --replication-factor 1
  as_admin kafka_topics --command-config "$ADMIN_PROPS" --create --topic "$HIDDEN" \
    --partitions 1 --replication-factor 1
  as_admin kafka_topics --command-config "$ADMIN_PROPS" --describe --topic "$TOPIC" \
    | tee "$OUT/describe.txt"
  grep -q "PartitionCount: 3" "$OUT/describe.txt" || fail "describe over SASL_SSL"
  as_admin kafka_topics --command-config "$ADMIN_PROPS" --list | tee "$OUT/admin-list.txt"
  grep -qx "$HIDDEN" "$OUT/admin-list.txt" || fail "admin does not see $HIDDEN"
}

acls_for_alice() {
  kafka_acls --command-config "$ADMIN_PROPS" --add --allow-principal User:alice \
    --producer --topic "$TOPIC"
  kafka_acls --command-config "$ADMIN_PROPS" --add --allow-principal User:alice \
    --consumer --topic "$TOPIC" --group "$GROUP"
  kafka_acls --command-config "$ADMIN_PROPS" --list --principal User:alice \
    | tee "$OUT/alice-acls.txt"
  for op in WRITE READ DESCRIBE CREATE; do
    grep -q "principal=User:alice.*operation=$op.*permissionType=ALLOW" "$OUT/alice-acls.txt" \
      || fail "kafka-acls --list shows no $op for alice"
  done
  grep -q "resourceType=GROUP, name=$GROUP, patternType=LITERAL" "$OUT/alice-acls.txt" \
    || fail "kafka-acls --list shows no group ACL"
  # Alice sees only the topic she may describe.
  as_admin kafka_topics --command-config "$ALICE_PROPS" --list | tee "$OUT/alice-list.txt"
  grep -qx "$TOPIC" "$OUT/alice-list.txt" || fail "alice does not see $TOPIC"
  if grep -qx "$HIDDEN" "$OUT/alice-list.txt"; then fail "alice sees $HIDDEN"; fi
}

console_round_trip_as_alice() {
  seq 1 60 | as_admin kafka_console_producer --producer.config "$ALICE_PROPS" --topic "$TOPIC"
  as_admin kafka_console_consumer --consumer.config "$ALICE_PROPS" --topic "$TOPIC" \
    --group "$GROUP" --from-beginning --max-messages 60 --timeout-ms 30000 \
    | sort -n >"$OUT/alice-out.txt"
  seq 1 60 | cmp - "$OUT/alice-out.txt" || fail "alice's console round trip differs"
  as_admin kafka_consumer_groups --command-config "$ADMIN_PROPS" --describe --group "$GROUP" \
    | tee "$OUT/group.txt"
  # Three partitions, 60 records, all committed: the offsets sum to 60 and every lag is 0.
  awk -v t="$TOPIC" '$2 == t { s += $4; if ($6 != 0) bad = 1 } END { exit !(s == 60 && !bad) }' \
    "$OUT/group.txt" || fail "kafka-consumer-groups does not show 60 committed records, lag 0"
}

alice_denied_without_acls() {
  # Reading the topic she has no ACL for fails with an authorization error, not a hang (the
  # console consumer prints the error and exits 0, so the output is what is checked).
  as_admin kafka_console_consumer --consumer.config "$ALICE_PROPS" --topic "$HIDDEN" \
    --group "$GROUP" --from-beginning --max-messages 1 --timeout-ms 20000 \
    >"$OUT/denied.txt" 2>&1 || true
  grep -q "TopicAuthorizationException" "$OUT/denied.txt" \
    || { cat "$OUT/denied.txt"; fail "no authorization error for $HIDDEN"; }
  grep -q "Processed a total of 0 messages" "$OUT/denied.txt" || fail "alice consumed $HIDDEN"
  # Once her WRITE is removed, her producer is refused too: the idempotent Java producer's
  # InitProducerId needs IDEMPOTENT_WRITE on the cluster, which Kafka implies from WRITE on any
  # topic (KIP-679), so it now fails with ClusterAuthorizationException first.
  kafka_acls --command-config "$ADMIN_PROPS" --remove --force --allow-principal User:alice \
    --operation Write --topic "$TOPIC"
  echo x | as_admin kafka_console_producer --producer.config "$ALICE_PROPS" --topic "$TOPIC" \
    --request-required-acks all >"$OUT/denied-produce.txt" 2>&1 || true
  grep -q "ClusterAuthorizationException" "$OUT/denied-produce.txt" \
    || { cat "$OUT/denied-produce.txt"; fail "no authorization error for the producer"; }
  # And nothing was appended: the topic still holds the 60 records of the round trip.
  as_admin kafka_console_consumer --consumer.config "$ADMIN_PROPS" --topic "$TOPIC" \
    --from-beginning --timeout-ms 8000 2>/dev/null | wc -l >"$OUT/after-denied.txt" || true
  [ "$(cat "$OUT/after-denied.txt")" = 60 ] || fail "topic holds $(cat "$OUT/after-denied.txt") records, not 60"
}

quotas_over_sasl_ssl() {
  as_admin kafka_configs --command-config "$ADMIN_PROPS" --alter --entity-type users \
    --entity-name alice --add-config 'producer_byte_rate=1048576,consumer_byte_rate=2097152'
  as_admin kafka_configs --command-config "$ADMIN_PROPS" --alter --entity-type clients \
    --entity-default --add-config 'request_percentage=200'
  as_admin kafka_configs --command-config "$ADMIN_PROPS" --describe --entity-type users \
    --entity-name alice | tee "$OUT/quota-user.txt"
  grep -q "producer_byte_rate=1048576" "$OUT/quota-user.txt" || fail "user quota not described"
  grep -q "consumer_byte_rate=2097152" "$OUT/quota-user.txt" || fail "user quota not described"
  as_admin kafka_configs --command-config "$ADMIN_PROPS" --describe --entity-type clients \
    --entity-default | tee "$OUT/quota-default.txt"
  grep -q "request_percentage=200" "$OUT/quota-default.txt" || fail "default quota not described"
  # Alice may not change quotas (ALTER_CONFIGS on the cluster).
  if as_admin kafka_configs --command-config "$ALICE_PROPS" --alter --entity-type users \
      --entity-name alice --delete-config producer_byte_rate >"$OUT/quota-denied.txt" 2>&1; then
    fail "alice changed her own quota"
  fi
  grep -q "ClusterAuthorizationException\|not authorized" "$OUT/quota-denied.txt" \
    || { cat "$OUT/quota-denied.txt"; fail "no cluster authorization error"; }
}

case_run security java_sasl_ssl.kafka_configs.scram_user scram_user_for_alice
case_run security java_sasl_ssl.kafka_topics.create_describe_list topics_as_admin
case_run security java_sasl_ssl.kafka_acls.add_list_and_filtered_list acls_for_alice
case_run security java_sasl_ssl.console_and_consumer_groups console_round_trip_as_alice
case_run security java_sasl_ssl.denied_then_acl_removed alice_denied_without_acls
case_run security java_sasl_ssl.kafka_configs.quotas quotas_over_sasl_ssl
case_summary
