#!/usr/bin/env bash
# Delegation tokens (KIP-48) with Kafka's own kafka-delegation-tokens tool
# (org.apache.kafka.tools.DelegationTokenCommand) and the Java admin client: a SCRAM user
# creates a token with a renewer and describes it, a Java client logs in with the token
# (SCRAM-SHA-256, `tokenauth="true"`, the token id and HMAC) and may list topics but not
# create tokens, the owner renews it and expires it, after which the token login fails.
#
# One broker: PLAINTEXT (admin tools) and SASL_PLAINTEXT with SCRAM-SHA-256 and -512.
source "$(dirname "$0")/../../lib/harness.sh"
source "$(dirname "$0")/../lib.sh"

PLAIN_PORT=$CASE_PORT_BASE
SASL_PORT=$((CASE_PORT_BASE + 1))
ADMIN="127.0.0.1:$PLAIN_PORT"
SASL="127.0.0.1:$SASL_PORT"

start_broker tokens \
  "listeners=PLAINTEXT://127.0.0.1:$PLAIN_PORT,SASL_PLAINTEXT://127.0.0.1:$SASL_PORT" \
  "sasl.enabled.mechanisms=SCRAM-SHA-256,SCRAM-SHA-512" \
  "delegation.token.secret.key=compat-token-secret" \
  "delegation.token.expiry.check.interval.ms=500" || exit 1

delegation_tokens() { jk org.apache.kafka.tools.DelegationTokenCommand --bootstrap-server "$SASL" "$@"; }

# props FILE MECHANISM USER PASSWORD [EXTRA-JAAS]: client settings for a SCRAM login.
props() {
  cat >"$1" <<P
security.protocol=SASL_PLAINTEXT
sasl.mechanism=$2
sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username="$3" password="$4" ${5:-};
P
}

token_lifecycle() {
  BOOTSTRAP="$ADMIN" kafka_configs --alter --entity-type users --entity-name alice \
    --add-config 'SCRAM-SHA-512=[iterations=8192,password=alice-secret]' || return 1
  props "$OUT/alice.props" SCRAM-SHA-512 alice alice-secret
  delegation_tokens --create --max-life-time-period -1 --renewer-principal User:bob \
    --command-config "$OUT/alice.props" | tee "$OUT/create.txt" || return 1
  # The table's data row: TOKENID HMAC OWNER REQUESTER RENEWERS ...
  read -r id hmac owner requester renewers _ < <(grep -A2 '^TOKENID' "$OUT/create.txt" | grep -v '^TOKENID' | grep -v '^$' | head -1)
  [ -n "$id" ] && [ -n "$hmac" ] || fail "no token in the create output"
  [ "$owner" = "User:alice" ] || fail "owner $owner"
  [ "$requester" = "User:alice" ] || fail "requester $requester"
  [ "$renewers" = "[User:bob]" ] || fail "renewers $renewers"
  # With an owner: without one the tool sends an empty owner list, which Kafka answers with
  # no tokens (KafkaApis: `ownersListEmpty`), so Strata does too.
  delegation_tokens --describe --owner-principal User:alice --command-config "$OUT/alice.props" \
    | tee "$OUT/describe.txt"
  grep -q "^$id  *$hmac  *User:alice" "$OUT/describe.txt" || fail "describe does not show the token"
  grep -q "Total number of tokens : 1" "$OUT/describe.txt" || fail "describe count"

  # A Java admin client logs in with the token and lists topics.
  props "$OUT/token.props" SCRAM-SHA-256 "$id" "$hmac" 'tokenauth="true"'
  BOOTSTRAP="$SASL" kafka_topics --list --command-config "$OUT/token.props" \
    >"$OUT/token-list.txt" || fail "the token login could not list topics"
  # ... but may not create tokens over that connection.
  if delegation_tokens --create --max-life-time-period -1 --command-config "$OUT/token.props" \
    >"$OUT/token-create.txt" 2>&1; then
    fail "a token-authenticated connection created a token"
  fi
  grep -qi "not allowed" "$OUT/token-create.txt" || fail "unexpected error: $(tail -3 "$OUT/token-create.txt")"

  delegation_tokens --renew --hmac "$hmac" --renew-time-period 600000 \
    --command-config "$OUT/alice.props" | tee "$OUT/renew.txt"
  grep -q "Completed renew operation" "$OUT/renew.txt" || fail "renew"
  delegation_tokens --expire --hmac "$hmac" --expiry-time-period -1 \
    --command-config "$OUT/alice.props" | tee "$OUT/expire.txt"
  grep -q "Completed expire operation" "$OUT/expire.txt" || fail "expire"
  delegation_tokens --describe --owner-principal User:alice --command-config "$OUT/alice.props" \
    | tee "$OUT/describe2.txt"
  grep -q "Total number of tokens : 0" "$OUT/describe2.txt" || fail "the expired token is still described"
  if BOOTSTRAP="$SASL" kafka_topics --list --command-config "$OUT/token.props" \
    >"$OUT/token-list2.txt" 2>&1; then
    fail "the expired token still logs in"
  fi
  grep -qi "authentication" "$OUT/token-list2.txt" || fail "unexpected error: $(tail -3 "$OUT/token-list2.txt")"
}

case_run security tokens.kafka_delegation_tokens token_lifecycle
case_summary
