#!/usr/bin/env bash
# Authorization with real clients (issue 13): Kafka's kafka-acls tool against a broker whose
# StandardAuthorizer is on, and confluent-kafka (librdkafka) refused and then served.
#
# Both brokers are PLAINTEXT, so every client is User:ANONYMOUS:
#  - "admin": super.users=User:ANONYMOUS. kafka-acls adds, lists (exact and MATCH filters) and
#    removes topic, group, prefixed, transactional-id and DENY/host ACLs; the listings are
#    checked line by line.
#  - "open": allow.everyone.if.no.acl.found=true and no super user. Resources without ACLs are
#    open, so ANONYMOUS may manage ACLs (the cluster has none); a DENY for User:ANONYMOUS on one
#    topic makes confluent-kafka's produce fail with TOPIC_AUTHORIZATION_FAILED and hides the
#    topic from kafka-topics --list, a DENY on a group makes the consumer fail with
#    GROUP_AUTHORIZATION_FAILED; once kafka-acls removes them, the same client succeeds.
source "$(dirname "$0")/../../lib/harness.sh"
source "$(dirname "$0")/../lib.sh"

AUTHZ="authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer"
ADMIN_PORT=$CASE_PORT_BASE
OPEN_PORT=$((CASE_PORT_BASE + 1))
start_broker acl-admin "listeners=PLAINTEXT://127.0.0.1:$ADMIN_PORT" "$AUTHZ" \
  "super.users=User:ANONYMOUS" || exit 1
start_broker acl-open "listeners=PLAINTEXT://127.0.0.1:$OPEN_PORT" "$AUTHZ" \
  "allow.everyone.if.no.acl.found=true" || exit 1

kafka_acls() { jk org.apache.kafka.tools.AclCommand "$@"; }
acls_admin() { kafka_acls --bootstrap-server "127.0.0.1:$ADMIN_PORT" "$@"; }
acls_open() { kafka_acls --bootstrap-server "127.0.0.1:$OPEN_PORT" "$@"; }

# expect_line FILE PATTERN...: some line of FILE matches every pattern (fixed strings).
expect_line() {
  local file="$1"; shift
  local lines; lines=$(cat "$file")
  for p in "$@"; do lines=$(grep -F -- "$p" <<<"$lines" || true); done
  [ -n "$lines" ] || fail "no line with: $* in $(cat "$file")"
}

acl_topic_add_list_remove() {
  acls_admin --add --allow-principal User:alice --operation Read --operation Write --topic orders
  acls_admin --list --topic orders | tee "$OUT/acl-topic.txt"
  expect_line "$OUT/acl-topic.txt" "resourceType=TOPIC, name=orders, patternType=LITERAL"
  expect_line "$OUT/acl-topic.txt" "principal=User:alice" "operation=READ" "permissionType=ALLOW"
  expect_line "$OUT/acl-topic.txt" "principal=User:alice" "operation=WRITE" "permissionType=ALLOW"
  acls_admin --remove --force --allow-principal User:alice --operation Read --topic orders
  acls_admin --list --topic orders | tee "$OUT/acl-topic2.txt"
  if grep -q "operation=READ" "$OUT/acl-topic2.txt"; then fail "READ still listed"; fi
  expect_line "$OUT/acl-topic2.txt" "operation=WRITE"
  acls_admin --remove --force --topic orders
  acls_admin --list --topic orders | tee "$OUT/acl-topic3.txt"
  if grep -q "principal=" "$OUT/acl-topic3.txt"; then fail "ACLs left after removing all"; fi
}

acl_group_prefixed_match() {
  acls_admin --add --allow-principal User:bob --operation Read --group app- \
    --resource-pattern-type prefixed
  acls_admin --add --allow-principal User:bob --operation Describe --group app-1
  # MATCH: every ACL that applies to group app-1 (the prefixed one and the literal one).
  acls_admin --list --group app-1 --resource-pattern-type match | tee "$OUT/acl-match.txt"
  expect_line "$OUT/acl-match.txt" "resourceType=GROUP, name=app-, patternType=PREFIXED"
  expect_line "$OUT/acl-match.txt" "resourceType=GROUP, name=app-1, patternType=LITERAL"
  # A prefixed listing shows only the prefixed pattern.
  acls_admin --list --group app- --resource-pattern-type prefixed | tee "$OUT/acl-prefixed.txt"
  expect_line "$OUT/acl-prefixed.txt" "principal=User:bob" "operation=READ"
  if grep -q "name=app-1" "$OUT/acl-prefixed.txt"; then fail "literal ACL in prefixed listing"; fi
  acls_admin --remove --force --group app- --resource-pattern-type prefixed
  acls_admin --remove --force --group app-1
}

acl_transactional_id_and_deny_host() {
  acls_admin --add --allow-principal User:alice --operation Write --transactional-id tx-1
  acls_admin --add --deny-principal User:mallory --deny-host 10.1.2.3 --operation All --topic '*'
  acls_admin --list | tee "$OUT/acl-all.txt"
  expect_line "$OUT/acl-all.txt" "resourceType=TRANSACTIONAL_ID, name=tx-1"
  expect_line "$OUT/acl-all.txt" "principal=User:alice" "host=*" "operation=WRITE"
  expect_line "$OUT/acl-all.txt" "resourceType=TOPIC, name=*, patternType=LITERAL"
  expect_line "$OUT/acl-all.txt" "principal=User:mallory" "host=10.1.2.3" "operation=ALL" \
    "permissionType=DENY"
  acls_admin --list --principal User:mallory | tee "$OUT/acl-mallory.txt"
  if grep -q "User:alice" "$OUT/acl-mallory.txt"; then fail "principal filter ignored"; fi
  acls_admin --remove --force --transactional-id tx-1
  acls_admin --remove --force --topic '*'
}

# produce_code PORT TOPIC -> prints "OK" or librdkafka's error name for one message
produce_code() {
  "$PY" - "$1" "$2" <<'PYEOF'
import sys
from confluent_kafka import Producer
p = Producer({"bootstrap.servers": "127.0.0.1:" + sys.argv[1], "message.timeout.ms": 10000})
out = []
p.produce(sys.argv[2], b"v", on_delivery=lambda err, msg: out.append(err))
p.flush(15)
err = out[0] if out else "TIMEOUT"
print("OK" if err is None else (err.name() if hasattr(err, "name") else err))
PYEOF
}

# consume_code PORT TOPIC GROUP -> "OK" once a message arrives, or the first error's name
consume_code() {
  "$PY" - "$1" "$2" "$3" <<'PYEOF'
import sys, time
from confluent_kafka import Consumer
c = Consumer({"bootstrap.servers": "127.0.0.1:" + sys.argv[1], "group.id": sys.argv[3],
              "auto.offset.reset": "earliest"})
c.subscribe([sys.argv[2]])
deadline, result = time.time() + 20, "TIMEOUT"
while time.time() < deadline:
    m = c.poll(0.5)
    if m is None:
        continue
    if m.error():
        result = m.error().name()
        break
    result = "OK"
    break
c.close()
print(result)
PYEOF
}

acl_denial_then_grant_with_confluent_kafka() {
  local t="acl-secret"
  # No ACL anywhere yet: allow.everyone.if.no.acl.found lets ANONYMOUS create and produce.
  create_topic "$t" 1
  [ "$(produce_code "$OPEN_PORT" "$t")" = OK ] || fail "produce before any ACL refused"
  acls_open --add --deny-principal User:ANONYMOUS --operation Write --topic "$t"
  local code; code=$(produce_code "$OPEN_PORT" "$t")
  echo "with DENY WRITE: $code"
  [ "$code" = TOPIC_AUTHORIZATION_FAILED ] || fail "expected TOPIC_AUTHORIZATION_FAILED, got $code"
  # The topic now has ACLs and none allows DESCRIBE: kafka-topics no longer lists it.
  BOOTSTRAP="127.0.0.1:$OPEN_PORT" kafka_topics --list | tee "$OUT/open-list.txt"
  if grep -qx "$t" "$OUT/open-list.txt"; then fail "$t listed to a principal denied DESCRIBE"; fi
  acls_open --remove --force --deny-principal User:ANONYMOUS --operation Write --topic "$t"
  code=$(produce_code "$OPEN_PORT" "$t")
  [ "$code" = OK ] || fail "produce after removing the DENY: $code"
  # Groups: a DENY READ on the group refuses the consumer, its removal lets it read.
  acls_open --add --deny-principal User:ANONYMOUS --operation Read --group blocked
  code=$(consume_code "$OPEN_PORT" "$t" blocked)
  echo "consumer in denied group: $code"
  [ "$code" = GROUP_AUTHORIZATION_FAILED ] || fail "expected GROUP_AUTHORIZATION_FAILED, got $code"
  acls_open --remove --force --group blocked
  code=$(consume_code "$OPEN_PORT" "$t" blocked)
  [ "$code" = OK ] || fail "consume after removing the DENY: $code"
}

export BOOTSTRAP="127.0.0.1:$OPEN_PORT"
case_run security acl.topic.add_list_remove acl_topic_add_list_remove
case_run security acl.group.prefixed_match acl_group_prefixed_match
case_run security acl.transactional_id_and_deny_host acl_transactional_id_and_deny_host
case_run security acl.confluent_kafka.denied_then_allowed acl_denial_then_grant_with_confluent_kafka
case_summary
