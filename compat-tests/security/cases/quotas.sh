#!/usr/bin/env bash
# Client quotas with real clients (issue 13): kafka-configs adds, describes and removes client,
# user and default quotas (AlterClientQuotas / DescribeClientQuotas), a confluent-kafka
# producer limited to 1 MB/s by a client-id quota is held within 10 % of it over 20 s, and a
# consumer limited the same way stays below it; both see throttle_time_ms in responses
# (librdkafka's throttle callback). controller_mutation_rate (KIP-599), set with kafka-configs:
# kafka-topics (CreateTopics v7, a strict quota) meets THROTTLING_QUOTA_EXCEEDED and reports
# it (the tool turns the admin client's retry off), while Java's admin client with its default
# options retries after the throttle time it was given, so its topic is created late; confluent-kafka's admin (CreateTopics v4, a permissive quota) gets its topics and a
# throttle. request_percentage on Metadata: librdkafka sees the throttle.
# shellcheck source=../../lib/harness.sh
source "$(dirname "$0")/../../lib/harness.sh"
# shellcheck source=../lib.sh
source "$(dirname "$0")/../lib.sh"

PORT=$CASE_PORT_BASE
export BOOTSTRAP="127.0.0.1:$PORT"
# Quotas are measured over Kafka's sample windows, `quota.window.num` of
# `quota.window.size.seconds` each, and a client is throttled only once its rate over at least
# `quota.window.num - 1` windows passes the quota: with Kafka's defaults (11 x 1 s) a fresh
# client sends 10 s worth at once and again each time that sample expires, so a 20 s span
# holds one or two such bursts. Apache Kafka 4.1.2 itself, measured with quota_rate.py at
# 1 MB/s with the default windows, gave 134 % over the first 20 s and 124 % over 12..32 s
# (Strata: 139 % and 126 %); with 2 windows of 1 s, 95.2 % over 2..22 s (Strata: 95.2 %).
# So this broker uses 2 windows of 1 s: the burst is one second's worth and "held within
# 10 % over 20 s" means what the issue asks.
start_broker quotas "listeners=PLAINTEXT://127.0.0.1:$PORT" \
  "quota.window.num=2" "quota.window.size.seconds=1" || exit 1
QPY="$(dirname "$0")/../quota_rate.py"
RATE=1048576

# The output is checked line by line; the exit status is not: kafka-configs --describe for
# users also asks for SCRAM credentials (DescribeUserScramCredentials), which a broker without
# that API refuses after the quota lines are printed.
describe() { kafka_configs --describe "$@" 2>&1 || true; }

quotas_clients() {
  local c="app-$RUN_ID"
  kafka_configs --alter --entity-type clients --entity-name "$c" \
    --add-config "producer_byte_rate=$RATE,consumer_byte_rate=2097152"
  out=$(describe --entity-type clients --entity-name "$c"); echo "$out"
  grep -q "producer_byte_rate=1048576" <<<"$out" || fail "producer_byte_rate not described"
  grep -q "consumer_byte_rate=2097152" <<<"$out" || fail "consumer_byte_rate not described"
  kafka_configs --alter --entity-type clients --entity-name "$c" --delete-config consumer_byte_rate
  out=$(describe --entity-type clients --entity-name "$c"); echo "$out"
  grep -q "producer_byte_rate=1048576" <<<"$out" || fail "producer_byte_rate lost"
  ! grep -q "consumer_byte_rate" <<<"$out" || fail "consumer_byte_rate not removed"
  kafka_configs --alter --entity-type clients --entity-name "$c" --delete-config producer_byte_rate
  out=$(describe --entity-type clients --entity-name "$c"); echo "$out"
  ! grep -q "byte_rate" <<<"$out" || fail "quota not removed"
}

quotas_defaults() {
  kafka_configs --alter --entity-type clients --entity-default --add-config "request_percentage=50"
  out=$(describe --entity-type clients --entity-default); echo "$out"
  grep -q "request_percentage=50" <<<"$out" || fail "default client quota not described"
  kafka_configs --alter --entity-type users --entity-default --add-config "controller_mutation_rate=10"
  out=$(describe --entity-type users --entity-default); echo "$out"
  grep -q "controller_mutation_rate=10" <<<"$out" || fail "default user quota not described"
  kafka_configs --alter --entity-type clients --entity-default --delete-config request_percentage
  kafka_configs --alter --entity-type users --entity-default --delete-config controller_mutation_rate
  out=$(describe --entity-type clients --entity-default); echo "$out"
  ! grep -q "request_percentage" <<<"$out" || fail "default client quota not removed"
}

quotas_users() {
  local u="alice-$RUN_ID" c="app-$RUN_ID"
  kafka_configs --alter --entity-type users --entity-name "$u" --add-config "producer_byte_rate=4096"
  kafka_configs --alter --entity-type users --entity-name "$u" --entity-type clients \
    --entity-name "$c" --add-config "consumer_byte_rate=8192"
  out=$(describe --entity-type users --entity-name "$u"); echo "$out"
  grep -q "producer_byte_rate=4096" <<<"$out" || fail "user quota not described"
  out=$(describe --entity-type users --entity-name "$u" --entity-type clients --entity-name "$c")
  echo "$out"
  grep -q "consumer_byte_rate=8192" <<<"$out" || fail "user+client quota not described"
  kafka_configs --alter --entity-type users --entity-name "$u" --delete-config producer_byte_rate
  out=$(describe --entity-type users --entity-name "$u"); echo "$out"
  ! grep -q "producer_byte_rate" <<<"$out" || fail "user quota not removed"
}

quotas_invalid() {
  # kafka-configs itself refuses a key that is not a quota key before asking the broker
  # (the broker's own refusals are checked in tests/quotas.rs).
  out=$(kafka_configs --alter --entity-type clients --entity-name bad \
    --add-config "producer_bytes_rate=10" 2>&1) && fail "unknown key accepted"
  echo "$out"
  grep -qi "Unexpected config names: Set(producer_bytes_rate)\|Invalid configuration key" <<<"$out" \
    || fail "unexpected error for an unknown key"
}

# check_rate JSON MIN MAX -> asserts the rate is within [MIN, MAX] x RATE and was throttled
check_rate() {
  echo "$1"
  "$PY" - "$1" "$RATE" "$2" "$3" <<'PYEOF' || return 1
import json, sys
r = json.loads(sys.argv[1]); rate = float(sys.argv[2]); lo, hi = float(sys.argv[3]), float(sys.argv[4])
share = r["rate"] / rate
print(f"measured {r['rate']:.0f} B/s = {100 * share:.1f} % of the quota (allowed {100 * lo:.0f}"
      f"..{100 * hi:.0f} %); {r['throttle_events']} throttled responses, "
      f"max {r['max_throttle_ms']:.0f} ms")
assert lo <= share <= hi, "rate outside the allowed range"
assert r["throttle_events"] > 0, "no response carried throttle_time_ms"
PYEOF
}

quotas_producer_held_to_1mb() {
  local c="perf-$RUN_ID" t; t=$(topic quota-produce)
  create_topic "$t" 1
  kafka_configs --alter --entity-type clients --entity-name "$c" --add-config "producer_byte_rate=$RATE"
  # Acknowledged bytes over 20 s after a 2 s warm-up (the first window's burst): the issue's
  # criterion, within 10 % of the quota.
  out=$("$PY" "$QPY" produce "$BOOTSTRAP" "$t" "$c" 2 20) || fail "producer failed"
  check_rate "$out" 0.90 1.10
}

quotas_consumer_held_to_1mb() {
  local c="cons-$RUN_ID" t; t=$(topic quota-consume)
  create_topic "$t" 1
  # 48 MB to read, more than 1 MB/s can take in the time.
  "$PY" - "$BOOTSTRAP" "$t" <<'PYEOF' || fail "seeding failed"
import sys
from confluent_kafka import Producer
p = Producer({"bootstrap.servers": sys.argv[1], "linger.ms": 20})
for _ in range(4800):
    while True:
        try:
            p.produce(sys.argv[2], b"y" * 10_000); break
        except BufferError:
            p.poll(0.05)
p.flush(60)
PYEOF
  kafka_configs --alter --entity-type clients --entity-name "$c" --add-config "consumer_byte_rate=$RATE"
  # A throttled fetch is answered empty (its bytes un-recorded) and the consumer waits out
  # the throttle before fetching again, so consumers settle below the quota: Apache Kafka
  # 4.1.2 gave 40 % over 2..22 s with these windows (88 % with the default ones), Strata
  # 68 % (106 %). Held means never above it; 25 % guards against a consumer starved outright.
  out=$("$PY" "$QPY" consume "$BOOTSTRAP" "$t" "$c" 2 20) || fail "consumer failed"
  check_rate "$out" 0.25 1.10
}

# controller_mutation_rate=2 with the default controller.quota.window.num (11) and size (1 s):
# a bucket of 22 tokens refilled at 2 a second.
quotas_mutation_rate_kafka_topics() {
  local c="mut-$RUN_ID" t1 t2 t3 cfg src start took
  t1=$(topic mutation-big); t2=$(topic mutation-refused); t3=$(topic mutation-retried)
  cfg="$OUT/mutation-$RUN_ID.properties"
  echo "client.id=$c" >"$cfg"
  kafka_configs --alter --entity-type clients --entity-name "$c" \
    --add-config "controller_mutation_rate=2"
  # 60 partitions: accepted while the bucket is not empty (22 - 60 = -38 tokens left, 19 s
  # to refill; each JVM below takes seconds to start).
  kafka_topics --command-config "$cfg" --create --topic "$t1" --partitions 60 \
    --replication-factor 1 || fail "the first topic was refused"
  # The next is refused (CreateTopics v7: strict) with a throttle of -tokens / 2 s. kafka-topics
  # asks its admin client not to retry a quota violation (retryOnQuotaViolation(false), as
  # KIP-599 has the tool do), so it reports the error, as it does against Kafka.
  out=$(kafka_topics --command-config "$cfg" --create --topic "$t2" --partitions 1 \
    --replication-factor 1 2>&1) && { echo "$out"; fail "the second topic was not throttled"; }
  echo "$out"
  grep -q "ThrottlingQuotaExceededException\|THROTTLING_QUOTA_EXCEEDED" <<<"$out" \
    || fail "kafka-topics did not report the quota violation"
  # The admin client with its default options retries the refused topic once the throttle
  # time it was given has passed, and reports success.
  src="$OUT/MutationRetry.java"
  cat >"$src" <<'JAVA'
import java.util.List;
import java.util.Properties;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;

public class MutationRetry {
    public static void main(String[] args) throws Exception {
        Properties p = new Properties();
        p.put("bootstrap.servers", args[0]);
        p.put("client.id", args[1]);
        try (Admin admin = Admin.create(p)) {
            long start = System.nanoTime();
            admin.createTopics(List.of(new NewTopic(args[2], 1, (short) 1))).all().get();
            System.out.println("created " + args[2] + " after "
                + (System.nanoTime() - start) / 1_000_000 + " ms");
        }
    }
}
JAVA
  start=$(date +%s%N)
  # shellcheck disable=SC2086
  out=$(java $KAFKA_JAVA_OPTS -cp "$KAFKA_LIBS/*" \
    -Dlog4j2.configurationFile="$HERE/lib/log4j2-tools.properties" \
    "$src" "$BOOTSTRAP" "$c" "$t3" 2>&1) || { echo "$out"; fail "the admin client gave up"; }
  took=$(( ($(date +%s%N) - start) / 1000000 ))
  echo "$out"
  ms=$(sed -nE 's/^created .* after ([0-9]+) ms$/\1/p' <<<"$out")
  [ -n "$ms" ] || fail "no creation reported"
  # The bucket was still below zero; the retry waits until it is back to zero.
  [ "$ms" -ge 1500 ] || fail "created after $ms ms: the quota did not hold it back"
  echo "whole run $took ms"
  kafka_configs --alter --entity-type clients --entity-name "$c" \
    --delete-config controller_mutation_rate
}

quotas_mutation_rate_librdkafka() {
  local c="mutrd-$RUN_ID"
  kafka_configs --alter --entity-type clients --entity-name "$c" \
    --add-config "controller_mutation_rate=2"
  "$PY" - "$BOOTSTRAP" "$c" "$(topic mutation-rd)" <<'PYEOF' || fail "confluent-kafka admin"
import sys
from confluent_kafka.admin import AdminClient, NewTopic
throttles = []
a = AdminClient({"bootstrap.servers": sys.argv[1], "client.id": sys.argv[2],
                 "throttle_cb": lambda e: throttles.append(e.throttle_time)})
# librdkafka sends CreateTopics v4: a permissive quota creates all 30 partitions (-8 tokens)
# and answers with a throttle of about 4 s.
fs = a.create_topics([NewTopic(f"{sys.argv[3]}-{i}", 10, 1) for i in range(3)],
                     operation_timeout=10)
for t, f in fs.items():
    f.result()
    print("created", t)
a.poll(1)
print("throttle events (s):", throttles)
assert throttles and max(throttles) >= 3.0, "no throttle of about 4 s"
PYEOF
}

quotas_request_percentage_metadata() {
  local c="req-$RUN_ID"
  kafka_configs --alter --entity-type clients --entity-name "$c" \
    --add-config "request_percentage=0.01"
  "$PY" - "$BOOTSTRAP" "$c" <<'PYEOF' || fail "confluent-kafka metadata loop"
import sys, time
from confluent_kafka.admin import AdminClient
throttles = []
a = AdminClient({"bootstrap.servers": sys.argv[1], "client.id": sys.argv[2],
                 "throttle_cb": lambda e: throttles.append(e.throttle_time)})
deadline = time.time() + 20
n = 0
while not throttles and time.time() < deadline:
    a.list_topics(timeout=10)
    a.poll(0)
    n += 1
print(f"{n} Metadata requests; throttle events (s): {throttles[:5]}")
assert throttles, "no Metadata response carried throttle_time_ms"
PYEOF
  kafka_configs --alter --entity-type clients --entity-name "$c" --delete-config request_percentage
}

case_run security quotas.kafka_configs.clients quotas_clients
case_run security quotas.kafka_configs.defaults quotas_defaults
case_run security quotas.kafka_configs.users quotas_users
case_run security quotas.kafka_configs.invalid quotas_invalid
case_run security quotas.producer_held_to_1mb quotas_producer_held_to_1mb
case_run security quotas.consumer_held_to_1mb quotas_consumer_held_to_1mb
case_run security quotas.mutation_rate.kafka_topics quotas_mutation_rate_kafka_topics
case_run security quotas.mutation_rate.librdkafka quotas_mutation_rate_librdkafka
case_run security quotas.request_percentage.metadata quotas_request_percentage_metadata
case_summary
