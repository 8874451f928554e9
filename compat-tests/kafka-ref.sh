#!/usr/bin/env bash
# Start/stop a single-node KRaft Apache Kafka (broker+controller in one JVM)
# from the Maven Central jars that setup.sh cached in .cache/kafka-libs.
#   ./kafka-ref.sh start|stop|status|restart
# Env: KAFKA_PORT (9092) client listener, KAFKA_CONTROLLER_PORT (9093),
#      KAFKA_REF_DIR (.cache/kafka-ref-$KAFKA_PORT) state+logs,
#      KAFKA_HEAP (-Xmx1g -Xms1g), KAFKA_REF_FRESH=1 wipes the log dir on start,
#      KAFKA_ADVERTISED (127.0.0.1:$KAFKA_PORT) address given to clients (capture.sh
#      points it at capture_proxy.py), KAFKA_EXTRA_PROPS: extra server.properties lines (newline separated),
#      KAFKA_REF_LIBS (.cache/kafka-libs) the jars to run, e.g. .cache/kafka-libs-latest for the
#      newest Kafka (KAFKA_LATEST_VERSION); a relative path is taken from this directory.
#      KAFKA_REF_FEATURES: feature levels to finalize once the broker is up (space or comma
#      separated name=level, e.g. share.version=1), with kafka-features upgrade; empty (the
#      default) leaves the levels a fresh format chose. Kafka 4.2+ formats with share.version=1
#      already (share groups, KIP-932); Kafka 4.1 had them as a preview at share.version=0.
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
LIBS="${KAFKA_REF_LIBS:-$HERE/.cache/kafka-libs}"
case "$LIBS" in /*) ;; *) LIBS="$HERE/$LIBS" ;; esac
PORT="${KAFKA_PORT:-9092}"
CPORT="${KAFKA_CONTROLLER_PORT:-$((PORT + 1))}"
DIR="${KAFKA_REF_DIR:-$HERE/.cache/kafka-ref-$PORT}"
HEAP="${KAFKA_HEAP:--Xmx1g -Xms1g}"
PIDF="$DIR/kafka.pid"
log() { printf '[kafka-ref] %s\n' "$*"; }

port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
running() { [ -f "$PIDF" ] && kill -0 "$(cat "$PIDF")" 2>/dev/null; }

start() {
  [ -f "$LIBS/.done" ] || { log "no jars in $LIBS: run ./setup.sh first"; exit 1; }
  if running; then log "already running (pid $(cat "$PIDF")) on 127.0.0.1:$PORT"; return 0; fi
  if port_open "$PORT"; then log "port $PORT is already in use by something else"; exit 1; fi
  [ "${KAFKA_REF_FRESH:-0}" = 1 ] && rm -rf "$DIR"
  mkdir -p "$DIR/data" "$DIR/logs"
  cat > "$DIR/server.properties" <<PROPS
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@127.0.0.1:$CPORT
listeners=PLAINTEXT://127.0.0.1:$PORT,CONTROLLER://127.0.0.1:$CPORT
advertised.listeners=PLAINTEXT://${KAFKA_ADVERTISED:-127.0.0.1:$PORT}
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT
log.dirs=$DIR/data
num.partitions=1
default.replication.factor=1
offsets.topic.replication.factor=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
group.initial.rebalance.delay.ms=0
auto.create.topics.enable=true
delete.topic.enable=true
${KAFKA_EXTRA_PROPS:-}
PROPS
  local JAVA_OPTS=(-cp "$LIBS/*" -Dkafka.logs.dir="$DIR/logs"
    -Dlog4j2.configurationFile="$HERE/lib/log4j2-broker.properties")
  if [ ! -f "$DIR/data/meta.properties" ]; then
    local cid
    cid=$(java "${JAVA_OPTS[@]}" kafka.tools.StorageTool random-uuid)
    log "formatting $DIR/data (cluster id $cid)"
    java "${JAVA_OPTS[@]}" kafka.tools.StorageTool format -t "$cid" \
      -c "$DIR/server.properties" --ignore-formatted >"$DIR/logs/format.log" 2>&1 \
      || { cat "$DIR/logs/format.log"; exit 1; }
  fi
  log "starting Apache Kafka $(ls "$LIBS" | sed -n 's/^kafka_2.13-\(.*\)\.jar$/\1/p') on 127.0.0.1:$PORT (controller $CPORT), dir $DIR"
  # shellcheck disable=SC2086
  nohup java $HEAP -XX:+UseG1GC -XX:MaxGCPauseMillis=20 -Djava.awt.headless=true \
    "${JAVA_OPTS[@]}" kafka.Kafka "$DIR/server.properties" \
    >"$DIR/logs/stdout.log" 2>&1 </dev/null &
  echo $! > "$PIDF"
  for _ in $(seq 1 120); do
    if ! running; then log "broker exited; tail of logs:"; tail -30 "$DIR/logs/stdout.log" "$DIR/logs/server.log" 2>/dev/null; exit 1; fi
    if port_open "$PORT" && grep -q 'Kafka Server started' "$DIR/logs/server.log" 2>/dev/null; then
      log "ready (pid $(cat "$PIDF"))"; finalize_features; return 0
    fi
    sleep 0.5
  done
  log "timed out waiting for port $PORT"; exit 1
}

finalize_features() {
  local f args=() feats="${KAFKA_REF_FEATURES:-}"
  for f in ${feats//,/ }; do args+=(--feature "$f"); done
  [ ${#args[@]} -gt 0 ] || return 0
  local fc=(java -cp "$LIBS/*" -Dlog4j2.configurationFile="$HERE/lib/log4j2-tools.properties"
    org.apache.kafka.tools.FeatureCommand --bootstrap-server "127.0.0.1:$PORT")
  log "kafka-features upgrade ${args[*]}"
  "${fc[@]}" upgrade "${args[@]}" >"$DIR/logs/features.log" 2>&1 || { cat "$DIR/logs/features.log"; exit 1; }
  "${fc[@]}" describe 2>/dev/null | awk '{print "[kafka-ref]   " $2, "finalized", $8}'
}

stop() {
  if ! running; then log "not running"; rm -f "$PIDF"; return 0; fi
  local pid; pid=$(cat "$PIDF")
  log "stopping pid $pid"
  kill "$pid"
  for _ in $(seq 1 60); do kill -0 "$pid" 2>/dev/null || { rm -f "$PIDF"; log "stopped"; return 0; }; sleep 0.5; done
  log "still running after 30s, sending SIGKILL"; kill -9 "$pid" 2>/dev/null || true; rm -f "$PIDF"
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  restart) stop; start ;;
  status) if running; then log "running (pid $(cat "$PIDF")) on 127.0.0.1:$PORT"; else log "not running"; exit 1; fi ;;
  *) echo "usage: $0 start|stop|restart|status" >&2; exit 2 ;;
esac
