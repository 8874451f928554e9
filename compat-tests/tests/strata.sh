#!/usr/bin/env bash
# Cases that need their own Strata: they read its data files after a clean stop, or restart
# it. Each starts target/release/strata on a spare port with a private data dir under
# $OUT (the broker at $BOOTSTRAP is not used), and SKIPs with the reason if the binary is
# not built (cargo build --release --bin strata).
source "$(dirname "$0")/../lib/harness.sh"
STRATA_BIN="${STRATA_BIN:-$HERE/../target/release/strata}"

spare_port() { "$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# strata_start DIR PORT [--override k=v ...]: data in DIR/data, log in DIR/broker.log,
# pid in DIR/pid; returns once the "strata started" line is logged.
strata_start() {
  local dir="$1" port="$2"; shift 2
  mkdir -p "$dir"
  "$STRATA_BIN" --override "listeners=PLAINTEXT://127.0.0.1:$port" \
    --override "strata.admin.listeners=" \
    --override "log.dirs=$dir/data" "$@" >>"$dir/broker.log" 2>&1 &
  echo $! > "$dir/pid"
  # A failing case must not leave its broker behind (the case runs in its own subshell).
  trap '[ -f "'"$dir"'/pid" ] && kill -9 "$(cat "'"$dir"'/pid")" 2>/dev/null' EXIT
  for _ in $(seq 300); do
    grep -q "strata started" "$dir/broker.log" && return 0
    kill -0 "$(cat "$dir/pid")" 2>/dev/null || { tail -5 "$dir/broker.log"; fail "strata exited at start-up"; }
    sleep 0.1
  done
  fail "strata did not start within 30 s"
}

# strata_stop DIR: SIGTERM (clean shutdown) and wait for the exit.
strata_stop() {
  local pid; pid=$(cat "$1/pid")
  kill -TERM "$pid"
  for _ in $(seq 300); do kill -0 "$pid" 2>/dev/null || { rm -f "$1/pid"; return 0; }; sleep 0.1; done
  fail "strata did not stop within 30 s of SIGTERM"
}

# kafka-dump-log (kafka.tools.DumpLogSegments) over every segment Strata wrote for Java
# console producer and confluent-kafka topics (every codec): no errors of any kind (bad
# batches, trailing bytes, non-consecutive offsets, offset index entries that do not name
# their batch, time index entries whose offset or timestamp does not match the log), the
# right record count and codec per topic, and every index passes Kafka's sanity check.
# A confluent-kafka transactional producer aborts one transaction, so a `.txnindex` is written;
# kafka-dump-log must read its AbortedTxn entries.
dump_log() {
  [ -x "$STRATA_BIN" ] || skip "$STRATA_BIN not built (cargo build --release --bin strata)"
  local dir="$OUT/dump-log" port; port=$(spare_port)
  # Small segments so that sealed and active segments (and their indexes) are both checked.
  strata_start "$dir" "$port" --override log.segment.bytes=262144
  export BOOTSTRAP="127.0.0.1:$port"
  local tj tg; tj=$(topic dump-java); tg=$(topic dump-java-gzip)
  create_topic "$tj" 1; create_topic "$tg" 1
  seq -f 'line-%05g some payload text for the console producer' 1 10000 \
    | kafka_console_producer --topic "$tj"
  for i in $(seq 1 2000); do echo "k$i:v$i-$(printf '%040d' "$i")"; done \
    | kafka_console_producer --topic "$tg" --property parse.key=true --property key.separator=: \
        --compression-codec gzip
  local tl; tl=$(topic dump-java-lz4); create_topic "$tl" 1
  seq -f 'lz4 line %05g' 1 1000 | kafka_console_producer --topic "$tl" --compression-codec lz4
  local want="$tj 10000 none"$'\n'"$tg 2000 gzip"$'\n'"$tl 1000 lz4"
  for codec in none gzip snappy lz4 zstd; do
    "$PY" "$HERE/tests/py_clients.py" cf-roundtrip "$codec"
    want+=$'\n'"$(topic "cf-$codec") 500 $codec"
  done
  "$PY" "$HERE/tests/py_clients.py" cf-txn-abort
  strata_stop "$dir"

  local files=() f
  for f in "$dir"/data/compat-"$RUN_ID"-*-0/*.{log,index,timeindex}; do files+=("$f"); done
  echo "${#files[@]} files"
  [ "${#files[@]}" -ge 24 ] || fail "expected at least 8 segments x 3 files, got ${#files[@]}"
  local txnidx=()
  for f in "$dir"/data/compat-"$RUN_ID"-*-0/*.txnindex; do [ -e "$f" ] && txnidx+=("$f"); done
  [ "${#txnidx[@]}" -ge 1 ] || fail "no .txnindex written for the aborted transaction"
  files+=("${txnidx[@]}")
  local list; list=$(IFS=,; echo "${files[*]}")
  jk kafka.tools.DumpLogSegments --deep-iteration --files "$list" >"$dir/dump.out" 2>"$dir/dump.err" \
    || { tail -20 "$dir/dump.err"; fail "kafka-dump-log exited non-zero"; }
  # Errors DumpLogSegments reports (on stdout or stderr).
  if grep -E 'isvalid: false|invalid bytes at the end|Mismatches in|Non-consecutive offsets|not found in the log|timestamp mismatch|out of order timestamp|Exception' \
       "$dir/dump.out" "$dir/dump.err"; then
    fail "kafka-dump-log reported problems (see $dir/dump.out, $dir/dump.err)"
  fi
  # Records and codecs per topic, from the deep iteration of the .log files.
  awk '
    /^Dumping .*\.log$/ { n = split($2, p, "/"); t = p[n-1]; sub(/-0$/, "", t); inlog = 1; next }
    /^Dumping / { inlog = 0; next }
    inlog && /^\| offset: / { count[t]++ }
    inlog && /compresscodec: / { for (i = 1; i <= NF; i++) if ($i == "compresscodec:") seen[t, $(i+1)] = 1 }
    END {
      for (tk in seen) { split(tk, a, SUBSEP); codecs[a[1]] = codecs[a[1]] (codecs[a[1]] == "" ? "" : ",") a[2] }
      for (t in count) print t, count[t], codecs[t]
    }
  ' "$dir/dump.out" | { grep -v "^$(topic cf-txn) " || true; } | sort > "$dir/got.txt"
  # librdkafka enables LZ4 only if the broker advertises FindCoordinator (its stand-in for
  # "Kafka >= 0.8.2"); until Strata has a group coordinator it sends lz4 batches uncompressed.
  if ! "$STRATA_BIN" api-table | grep -q '^| 10 | FindCoordinator'; then
    grep -q "$(topic cf-lz4) 500 none" "$dir/got.txt" &&
      echo "NOTE: confluent-kafka sent lz4 uncompressed (no FindCoordinator advertised); accepted"
    sed -i "s/^\($(topic cf-lz4) 500\) none$/\1 lz4/" "$dir/got.txt"
  fi
  # librdkafka sends a batch uncompressed when compressing does not make it smaller (a small
  # batch on a loaded machine: rd_kafka_msgset_writer_compress), so a confluent-kafka topic may
  # also hold uncompressed batches; each is still checked by DumpLogSegments above.
  for codec in gzip snappy lz4 zstd; do
    local t; t=$(topic "cf-$codec")
    if grep -Eq "^$t 500 ($codec,none|none,$codec)$" "$dir/got.txt"; then
      echo "NOTE: confluent-kafka sent some $codec batches uncompressed (no gain); accepted"
      sed -i -E "s/^($t 500) ($codec,none|none,$codec)$/\1 $codec/" "$dir/got.txt"
    fi
  done
  sort <<<"$want" > "$dir/want.txt"
  cat "$dir/got.txt"
  diff "$dir/want.txt" "$dir/got.txt" || fail "record counts or codecs differ (want left, got right)"
  # The check Kafka runs at start-up to decide whether an index must be rebuilt.
  local idx=() n
  for f in "${files[@]}"; do case "$f" in *.index|*.timeindex) idx+=("$f");; esac; done
  jk kafka.tools.DumpLogSegments --index-sanity-check --files "$(IFS=,; echo "${idx[*]}")" \
    >"$dir/sanity.out" 2>&1 || { tail -20 "$dir/sanity.out"; fail "index sanity check failed"; }
  n=$(grep -cE 'passed sanity check|is empty' "$dir/sanity.out")
  [ "$n" -eq "${#idx[@]}" ] || { cat "$dir/sanity.out"; fail "$n of ${#idx[@]} index files passed the sanity check"; }
  # The aborted transaction (offsets 0-99, ABORT marker at 100), as DumpLogSegments prints a
  # .txnindex entry.
  grep -qE 'producerId: [0-9]+ firstOffset: 0 lastOffset: 100 ' "$dir/dump.out" \
    || { grep -A3 'txnindex' "$dir/dump.out"; fail "kafka-dump-log did not show the aborted transaction"; }
  echo "kafka-dump-log: ${#files[@]} files, no errors; ${#idx[@]} indexes pass the sanity check"
}

# confluent-kafka idempotent producer across a kill -9 of the broker: a retry of batches the
# broker wrote (but whose responses were lost) is deduplicated after the restart.
idem_restart() {
  [ -x "$STRATA_BIN" ] || skip "$STRATA_BIN not built (cargo build --release --bin strata)"
  "$PY" "$HERE/tests/restart_clients.py" "$STRATA_BIN" "$OUT/idem-restart" "$(topic idem-restart)"
}

# kafka-configs on BROKER and BROKER_LOGGER resources (dynamic broker configs, issue 14):
# a cluster-wide default retention takes effect without a restart (the log start offset that
# GetOffsetShell --time -2 reports moves past the deleted segments), --describe shows it per
# broker and for <default>, a per-broker value wins, a read-only key is refused with Kafka's
# message, and broker-loggers are described and altered. Own broker: the default retention
# would delete the shared broker's data.
dyn_configs() {
  [ -x "$STRATA_BIN" ] || skip "$STRATA_BIN not built (cargo build --release --bin strata)"
  local dir="$OUT/dyn-configs" port; port=$(spare_port)
  strata_start "$dir" "$port" --override log.segment.bytes=65536 \
    --override log.retention.check.interval.ms=300
  export BOOTSTRAP="127.0.0.1:$port"
  local t; t=$(topic dyn-retention)
  create_topic "$t" 1
  seq -f 'retention line %05g with some padding to fill segments' 1 10000 \
    | kafka_console_producer --topic "$t"
  earliest() { jk org.apache.kafka.tools.GetOffsetShell --bootstrap-server "$BOOTSTRAP" \
      --topic "$t" --time -2 | awk -F: '{print $NF}'; }
  [ "$(earliest)" = 0 ] || fail "log start offset is $(earliest) before the alter"
  kafka_configs --alter --entity-type brokers --entity-default --add-config log.retention.ms=1000
  local start=0
  for _ in $(seq 60); do
    start=$(earliest); [ "$start" -gt 0 ] && break; sleep 0.5
  done
  [ "$start" -gt 0 ] || fail "retention did not move the log start offset (still $start)"
  echo "log start offset after the alter: $start"
  kafka_configs --describe --entity-type brokers --entity-default | tee "$OUT/dyn-default.txt"
  grep -q "log.retention.ms=1000 sensitive=false synonyms={DYNAMIC_DEFAULT_BROKER_CONFIG:log.retention.ms=1000}" \
    "$OUT/dyn-default.txt" || fail "--entity-default --describe does not show log.retention.ms"
  kafka_configs --alter --entity-type brokers --entity-name 1 --add-config log.retention.ms=600000
  kafka_configs --describe --entity-type brokers --entity-name 1 | tee "$OUT/dyn-broker.txt"
  grep -q "log.retention.ms=600000 sensitive=false synonyms={DYNAMIC_BROKER_CONFIG:log.retention.ms=600000, DYNAMIC_DEFAULT_BROKER_CONFIG:log.retention.ms=1000" \
    "$OUT/dyn-broker.txt" || fail "per-broker --describe does not show both layers"
  kafka_configs --describe --entity-type brokers --entity-name 1 --all > "$OUT/dyn-all.txt"
  grep -q "log.retention.ms=600000 sensitive=false synonyms={DYNAMIC_BROKER_CONFIG" "$OUT/dyn-all.txt" \
    || fail "--all does not show the per-broker value"
  if kafka_configs --alter --entity-type brokers --entity-name 1 --add-config num.partitions=3 \
      > "$OUT/dyn-refused.txt" 2>&1; then
    fail "num.partitions was accepted"
  fi
  cat "$OUT/dyn-refused.txt"
  grep -q "InvalidRequestException: Cannot update these configs dynamically: Set(num.partitions)" \
    "$OUT/dyn-refused.txt" || fail "no Kafka message for a read-only key"
  kafka_configs --describe --entity-type broker-loggers --entity-name 1 | tee "$OUT/loggers.txt"
  grep -q "root=INFO" "$OUT/loggers.txt" || fail "root logger not listed"
  kafka_configs --alter --entity-type broker-loggers --entity-name 1 --add-config strata.storage=DEBUG
  kafka_configs --describe --entity-type broker-loggers --entity-name 1 | tee "$OUT/loggers2.txt"
  grep -q "strata.storage=DEBUG" "$OUT/loggers2.txt" || fail "logger level not changed"
  grep -q "Updated the log level of strata.storage to DEBUG" "$dir/broker.log" \
    || fail "the broker did not log the level change"
  # Kafka 4's clients push telemetry only to brokers that advertise it: nothing to warn about.
  if grep -qi "telemetry" "$OUT"/dyn-*.txt "$OUT"/loggers*.txt; then fail "telemetry noise in tool output"; fi
  strata_stop "$dir"
}

# Feature versioning with Kafka's own kafka-features tool (FeatureCommand), the pinned one and
# the newest (which pads its columns with spaces where older ones put tabs): describe shows the levels a new Strata node starts at and the ranges it supports;
# a safe downgrade and an upgrade of group.version and transaction.version are read back; a
# level Strata does not implement is refused with Kafka's INVALID_UPDATE_VERSION message. Own
# broker, since the changes would switch KIP-848 and transactions v2 off for the other cases.
features() {
  local libs=$1
  [ -x "$STRATA_BIN" ] || skip "$STRATA_BIN not built (cargo build --release --bin strata)"
  local dir="$OUT/features-$2" port; port=$(spare_port)
  strata_start "$dir" "$port"
  kafka_features() {
    # shellcheck disable=SC2086
    java $KAFKA_JAVA_OPTS -Dlog4j2.configurationFile="$HERE/lib/log4j2-tools.properties" \
      -cp "$libs/*" org.apache.kafka.tools.FeatureCommand --bootstrap-server "127.0.0.1:$port" "$@"
  }
  kafka_features describe | tee "$dir/features-1.txt"
  grep -qP "^Feature: group.version\s+SupportedMinVersion: 0\s+SupportedMaxVersion: 1\s+FinalizedVersionLevel: 1\s+Epoch: [0-9]+$" \
    "$dir/features-1.txt" || fail "group.version not finalized at 1"
  grep -qP "^Feature: kraft.version\s+SupportedMinVersion: 1\s+SupportedMaxVersion: 1\s+FinalizedVersionLevel: 1\s+" \
    "$dir/features-1.txt" || fail "kraft.version not finalized at 1"
  grep -qP "^Feature: metadata.version\s+SupportedMinVersion: 3.7-IV2\s+SupportedMaxVersion: 4.1-IV0\s+FinalizedVersionLevel: 4.1-IV0\s+" \
    "$dir/features-1.txt" || fail "metadata.version not 4.1-IV0"
  grep -qP "^Feature: transaction.version\s+SupportedMinVersion: 0\s+SupportedMaxVersion: 2\s+FinalizedVersionLevel: 2\s+" \
    "$dir/features-1.txt" || fail "transaction.version not finalized at 2"
  kafka_features downgrade --feature group.version=0 --feature transaction.version=1 \
    | tee "$dir/features-down.txt"
  grep -q "group.version was downgraded to 0." "$dir/features-down.txt" || fail "downgrade not reported"
  grep -q "transaction.version was downgraded to 1." "$dir/features-down.txt" || fail "downgrade not reported"
  kafka_features describe | tee "$dir/features-2.txt"
  grep -qP "^Feature: group.version\s+SupportedMinVersion: 0\s+SupportedMaxVersion: 1\s+FinalizedVersionLevel: 0\s+" \
    "$dir/features-2.txt" || fail "group.version not 0 after the downgrade"
  grep -qP "^Feature: transaction.version\s+.*\s+FinalizedVersionLevel: 1\s+" "$dir/features-2.txt" \
    || fail "transaction.version not 1 after the downgrade"
  kafka_features upgrade --feature group.version=1 --feature transaction.version=2 \
    | tee "$dir/features-up.txt"
  grep -q "group.version was upgraded to 1." "$dir/features-up.txt" || fail "upgrade not reported"
  grep -q "transaction.version was upgraded to 2." "$dir/features-up.txt" || fail "upgrade not reported"
  kafka_features describe | tee "$dir/features-3.txt"
  grep -qP "^Feature: group.version\s+.*\s+FinalizedVersionLevel: 1\s+" "$dir/features-3.txt" \
    || fail "group.version not back at 1"
  grep -qP "^Feature: transaction.version\s+.*\s+FinalizedVersionLevel: 2\s+" "$dir/features-3.txt" \
    || fail "transaction.version not back at 2"
  if kafka_features upgrade --feature transaction.version=3 > "$dir/features-tv.txt" 2>&1; then
    fail "transaction.version=3 was accepted"
  fi
  cat "$dir/features-tv.txt"
  grep -q "Could not upgrade transaction.version to 3. The update failed for all features since the following feature had an error: Invalid update version 3 for feature transaction.version. Local controller 1 only supports versions 0-2" \
    "$dir/features-tv.txt" || fail "no Kafka message for an unsupported level"
  strata_stop "$dir"
}
features_pinned() { features "$KAFKA_LIBS" pinned; }
features_latest() { features "$KAFKA_LATEST_LIBS" latest; }

case_run core kafka-dump-log dump_log
case_run core confluent.idempotent-restart idem_restart
case_run core java.configs.dynamic-broker dyn_configs
case_run core java.features.describe-upgrade-downgrade features_pinned
case_run core java-latest.features.describe-upgrade-downgrade features_latest
case_summary
