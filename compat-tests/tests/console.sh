#!/usr/bin/env bash
# The web console of the broker under test ($STRATA_ADMIN, host:port of its
# strata.admin.listeners) in headless Chromium (Debian's /usr/bin/chromium driven by
# playwright-core, browser/console_check.js): with topics written by kcat and groups made by
# Kafka's console consumer and a live kcat consumer, the rendered pages show what Kafka's tools
# report (kafka-topics --describe leader and ISR, GetOffsetShell end offsets,
# kafka-consumer-groups --describe LAG), a client id that is markup shows as text, and the
# throughput plot moves while a producer runs. Screenshots: $OUT/console-*.png.
# SKIPs when STRATA_ADMIN is not set or Chromium / playwright-core are not installed.
source "$(dirname "$0")/../lib/harness.sh"

console_pages() {
  [ -n "${STRATA_ADMIN:-}" ] || skip "STRATA_ADMIN not set (no admin listener)"
  [ -x /usr/bin/chromium ] || skip "no /usr/bin/chromium (run setup.sh)"
  [ -d "$CACHE/browser/node_modules/playwright-core" ] || skip "no playwright-core (run setup.sh)"
  local t load g live evil
  t=$(topic console); load=$(topic console-load); create_topic "$t" 2; create_topic "$load" 1
  g="compat-$RUN_ID-console-group"; live="compat-$RUN_ID-console-live"
  evil='<img src=x onerror=alert(1)>'
  seq -f 'console a%05g' 1 300 | kcat -P -b "$BOOTSTRAP" -t "$t" -p 0
  seq -f 'console b%05g' 1 120 | kcat -P -b "$BOOTSTRAP" -t "$t" -p 1
  # A finished group with lag (it commits its position and leaves: Empty).
  kafka_console_consumer --topic "$t" --group "$g" --from-beginning --max-messages 100 \
    --timeout-ms 30000 >/dev/null
  # A live group member whose client id is markup.
  kcat -b "$BOOTSTRAP" -G "$live" -X client.id="$evil" -o beginning -q "$t" >/dev/null 2>&1 &
  local consumer=$!
  # Load for the plot: ~15 s of records while the browser reads the overview twice.
  ( for i in $(seq 1 75); do seq -f "load $i-%g" 1 200; sleep 0.2; done ) \
    | kcat -P -b "$BOOTSTRAP" -t "$load" &
  local producer=$!
  trap 'kill $consumer $producer 2>/dev/null; wait $consumer $producer 2>/dev/null || true' RETURN
  # Kafka's tools, the numbers the pages must show.
  kafka_topics --describe --topic "$t" >"$OUT/console-topics-describe.txt"
  local tool_parts; tool_parts=$(awk '$1 == "Topic:" && $3 == "Partition:" { print $4, $6, $10 }' \
    "$OUT/console-topics-describe.txt" | sort)
  jk org.apache.kafka.tools.GetOffsetShell --bootstrap-server "$BOOTSTRAP" --topic "$t" \
    | sort >"$OUT/console-getoffsetshell.txt"
  kafka_consumer_groups --describe --group "$g" >"$OUT/console-groups-describe.txt" 2>&1
  local tool_lag; tool_lag=$(awk -v t="$t" '$2 == t { print $2, $3, $6 }' "$OUT/console-groups-describe.txt" | sort)
  # Wait until the live member has joined (the page lists it once the group is Stable).
  local i; for i in $(seq 1 60); do
    curl -sf "http://$STRATA_ADMIN/api/v1/groups/$live" | grep -q '"client_id"' && break; sleep 0.5
  done
  ADMIN="$STRATA_ADMIN" TOPIC="$t" GROUP="$g" LIVE_GROUP="$live" EVIL_CLIENT="$evil" OUT="$OUT" \
    NODE_PATH="$CACHE/browser/node_modules" node "$HERE/browser/console_check.js"
  echo "tool partitions (partition leader isr):"; echo "$tool_parts"
  echo "page:"; cat "$OUT/console-page-partitions.txt"
  [ -n "$tool_parts" ] || fail "kafka-topics --describe printed no partitions"
  [ "$tool_parts" = "$(sort "$OUT/console-page-partitions.txt")" ] || fail "leader/ISR differ"
  echo "GetOffsetShell:"; cat "$OUT/console-getoffsetshell.txt"; echo "page:"; cat "$OUT/console-page-ends.txt"
  [ "$(cat "$OUT/console-getoffsetshell.txt")" = "$(sort "$OUT/console-page-ends.txt")" ] || fail "end offsets differ"
  grep -qx "$t:0:300" "$OUT/console-page-ends.txt" || fail "partition 0 end offset is not 300"
  echo "tool lag:"; echo "$tool_lag"; echo "page:"; cat "$OUT/console-page-lag.txt"
  [ -n "$tool_lag" ] || fail "kafka-consumer-groups printed no partitions"
  [ "$tool_lag" = "$(sort "$OUT/console-page-lag.txt")" ] || fail "LAG differs"
  echo "members:"; cat "$OUT/console-page-members.txt"
  grep -qF "$t: 0,1" "$OUT/console-page-members.txt" || fail "the live member's assignment is not shown"
  echo "throughput:"; cat "$OUT/console-page-throughput.txt"
  # Under a steady load the latest rate may read the same twice; the drawn history may not.
  grep -q '^plot_changed=true$' "$OUT/console-page-throughput.txt" || fail "the plot did not change"
  awk '$1 == "second" { split($2, a, "="); exit !(a[2] > 0) }' "$OUT/console-page-throughput.txt" \
    || fail "no messages in while the producer ran"
  ls "$OUT"/console-*.png
}

case_run groups console.pages console_pages
case_summary
