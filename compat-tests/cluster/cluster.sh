#!/usr/bin/env bash
# A 3-node Strata cluster of real processes (every node broker+controller, KRaft-style static
# voters), for the cluster compat tests and for poking at by hand.
#
#   cluster.sh start          start nodes 1..3 (refuses if any port is busy)
#   cluster.sh wait-ready [S] wait (default 60 s) until every broker port accepts and a
#                             Metadata request (confluent-kafka admin) lists 3 brokers and
#                             a controller id
#   cluster.sh stop           stop the nodes this script started (SIGTERM, then SIGKILL)
#   cluster.sh kill N         kill -9 node N
#   cluster.sh restart N      (stop node N if it runs, then) start node N on its data
#   cluster.sh pause N        SIGSTOP node N
#   cluster.sh resume N       SIGCONT node N
#   cluster.sh observer N     start node N (4..9) with process.roles=broker only: it follows
#                             the voters' metadata log as a quorum observer
#   cluster.sh controller N   start node N (4..9) with process.roles=controller and only
#                             controller.quorum.bootstrap.servers (no voters): it follows the
#                             quorum until `kafka-metadata-quorum add-controller` makes it a
#                             voter (KIP-853; Strata only)
#   cluster.sh stop-node N    stop node N (1..9)
#   cluster.sh pid N          print node N's pid
#   cluster.sh status         one line per node
#   cluster.sh bootstrap      print the bootstrap list
#   cluster.sh log N          print node N's log path
#
# Environment:
#   STRATA_BIN          binary (default <repo>/target/release/strata)
#   CLUSTER_PORT_BASE   default 19400: broker N listens on base+N, controller N on base+10+N
#   CLUSTER_BROKER_PORT_BASE  default CLUSTER_PORT_BASE: broker N listens on this base+N instead
#                       (controllers: see below); restarting a stopped
#                       cluster with another value moves every broker to new addresses
#   CLUSTER_CONTROLLER_PORT_BASE  default CLUSTER_PORT_BASE: controller N listens on this
#                       base+10+N instead (with the voters named there); the raft log's
#                       stored addresses then follow the configured ones
#   CLUSTER_DIR         data, logs and pid files: DIR/nN/ (log.dirs), DIR/nN.log, DIR/nN.pid.
#                       Default: `start` makes a fresh mktemp dir and records it in
#                       /tmp/strata-cluster-<base>.dir, which the other commands read.
#   CLUSTER_EXTRA_OVERRIDES  extra "key=value" words passed as --override to every node
#   CLUSTER_IMPL        strata (default) or kafka: the same cluster of reference Apache Kafka
#                       brokers from the cached jars (.cache/kafka-libs), to check that a test
#                       holds against Kafka itself; heap KAFKA_HEAP (default -Xmx512m)
#   CLUSTER_KAFKA_LIBS  with CLUSTER_IMPL=kafka, the jars to run (default .cache/kafka-libs),
#                       e.g. .cache/kafka-libs-latest for the newest Kafka (share groups need
#                       4.2+); a relative path is taken from compat-tests/ unless it exists
#                       from the current directory. Recorded at start for later restarts.
#
# Only processes whose pid is in a pid file of CLUSTER_DIR, and whose command line is the
# node's own, are ever signalled.
set -uo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
STRATA_BIN="${STRATA_BIN:-$ROOT/target/release/strata}"
BASE="${CLUSTER_PORT_BASE:-19400}"
BROKER_BASE="${CLUSTER_BROKER_PORT_BASE:-$BASE}"
CONTROLLER_BASE="${CLUSTER_CONTROLLER_PORT_BASE:-$BASE}"
STATE="/tmp/strata-cluster-$BASE.dir"
PY="${PY:-$ROOT/compat-tests/.cache/venv/bin/python}"
IMPL="${CLUSTER_IMPL:-strata}"
LIBS="${CLUSTER_KAFKA_LIBS:-$ROOT/compat-tests/.cache/kafka-libs}"
case "$LIBS" in /*) ;; *) if [ -d "$LIBS" ]; then LIBS="$(cd "$LIBS" && pwd)"; else LIBS="$ROOT/compat-tests/$LIBS"; fi ;; esac
NODES="1 2 3"

die() { echo "cluster.sh: $*" >&2; exit 1; }
broker_port() { echo $((BROKER_BASE + $1)); }
controller_port() { echo $((CONTROLLER_BASE + 10 + $1)); }
bootstrap() { echo "127.0.0.1:$(broker_port 1),127.0.0.1:$(broker_port 2),127.0.0.1:$(broker_port 3)"; }
port_busy() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
check_node() { case "${1:-}" in 1|2|3) ;; *) die "node must be 1, 2 or 3 (got '${1:-}')" ;; esac; }

resolve_dir() {
  if [ -z "${CLUSTER_DIR:-}" ]; then
    [ -f "$STATE" ] || die "no CLUSTER_DIR and no running cluster recorded in $STATE"
    CLUSTER_DIR=$(cat "$STATE")
  fi
  [ -d "$CLUSTER_DIR" ] || die "CLUSTER_DIR $CLUSTER_DIR does not exist"
  # The implementation a cluster was started with wins over the environment.
  [ -f "$CLUSTER_DIR/impl" ] && IMPL=$(cat "$CLUSTER_DIR/impl")
  [ -f "$CLUSTER_DIR/kafka-libs" ] && LIBS=$(cat "$CLUSTER_DIR/kafka-libs")
}

# The pid of node N if that process is alive and really is node N of this cluster
# (guards against a recycled pid); empty otherwise.
live_pid() {
  local f="$CLUSTER_DIR/n$1.pid" pid
  [ -f "$f" ] || return 0
  pid=$(cat "$f")
  [ -n "$pid" ] && [ -r "/proc/$pid/cmdline" ] || return 0
  local marker="log.dirs=$CLUSTER_DIR/n$1 "
  [ "$IMPL" = kafka ] && marker="$CLUSTER_DIR/n$1.properties "
  if tr '\0' ' ' <"/proc/$pid/cmdline" | grep -qF -- "$marker"; then
    # a zombie (exited, not yet reaped) counts as dead
    [ "$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null)" = Z ] || echo "$pid"
  fi
}

launch() {
  local n=$1 roles=${2:-broker,controller} voters="" v
  for v in $NODES; do voters="${voters:+$voters,}$v@127.0.0.1:$(controller_port "$v")"; done
  local bp cp; bp=$(broker_port "$n"); cp=$(controller_port "$n")
  for p in "$bp" "$cp"; do port_busy "$p" && die "port $p is busy (node $n); not starting"; done
  local listeners="PLAINTEXT://127.0.0.1:$bp,CONTROLLER://127.0.0.1:$cp"
  [ "$roles" = broker ] && listeners="PLAINTEXT://127.0.0.1:$bp"
  # A joining controller knows the quorum only by its bootstrap servers (KIP-853).
  local quorum="controller.quorum.voters=$voters"
  if [ "$roles" = controller-join ]; then
    roles=controller listeners="CONTROLLER://127.0.0.1:$cp"
    quorum="controller.quorum.bootstrap.servers=$(for v in $NODES; do printf '127.0.0.1:%s,' "$(controller_port "$v")"; done)"
    quorum=${quorum%,}
  fi
  mkdir -p "$CLUSTER_DIR/n$n"
  local extra=() kv
  for kv in ${CLUSTER_EXTRA_OVERRIDES:-}; do extra+=(--override "$kv"); done
  echo "=== $(date -u +%FT%T.%3NZ) cluster.sh: starting node $n" >>"$CLUSTER_DIR/n$n.log"
  if [ "$IMPL" = kafka ]; then launch_kafka "$n" "$bp" "$cp" "$voters" "$roles" "$listeners"; return; fi
  "$STRATA_BIN" --override "node.id=$n" --override "process.roles=$roles" \
    --override "listeners=$listeners" \
    --override controller.listener.names=CONTROLLER \
    --override "$quorum" --override "strata.admin.listeners=" \
    --override "log.dirs=$CLUSTER_DIR/n$n" --override default.replication.factor=3 \
    --override min.insync.replicas=2 --override offsets.topic.replication.factor=3 \
    --override transaction.state.log.replication.factor=3 \
    --override share.coordinator.state.topic.replication.factor=3 \
    --override broker.heartbeat.interval.ms=500 --override broker.session.timeout.ms=4000 \
    --override replica.lag.time.max.ms=4000 "${extra[@]}" \
    </dev/null >>"$CLUSTER_DIR/n$n.log" 2>&1 &
  echo $! >"$CLUSTER_DIR/n$n.pid"
}

# Reference Apache Kafka with the same settings (KRaft, static voters, combined mode).
launch_kafka() {
  local n=$1 bp=$2 cp=$3 voters=$4 roles=$5 listeners=$6 props="$CLUSTER_DIR/n$1.properties" kv
  cat >"$props" <<PROPS
process.roles=$roles
node.id=$n
controller.quorum.voters=$voters
listeners=$listeners
advertised.listeners=PLAINTEXT://127.0.0.1:$bp
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT
log.dirs=$CLUSTER_DIR/n$n
default.replication.factor=3
min.insync.replicas=2
offsets.topic.replication.factor=3
transaction.state.log.replication.factor=3
broker.heartbeat.interval.ms=500
broker.session.timeout.ms=4000
replica.lag.time.max.ms=4000
group.initial.rebalance.delay.ms=0
PROPS
  for kv in ${CLUSTER_EXTRA_OVERRIDES:-}; do echo "$kv" >>"$props"; done
  local jopts=(-cp "$LIBS/*" -Dkafka.logs.dir="$CLUSTER_DIR/n$n-logs"
    -Dlog4j2.configurationFile="$ROOT/compat-tests/lib/log4j2-broker.properties")
  if [ ! -f "$CLUSTER_DIR/n$n/meta.properties" ]; then
    [ -f "$CLUSTER_DIR/cluster.id" ] || java "${jopts[@]}" kafka.tools.StorageTool random-uuid >"$CLUSTER_DIR/cluster.id"
    java "${jopts[@]}" kafka.tools.StorageTool format -t "$(cat "$CLUSTER_DIR/cluster.id")" -c "$props" \
      --ignore-formatted >>"$CLUSTER_DIR/n$n.log" 2>&1 || die "node $n: kafka storage format failed"
  fi
  # shellcheck disable=SC2086
  java ${KAFKA_HEAP:--Xmx512m} -XX:+UseG1GC -XX:MaxGCPauseMillis=20 -Djava.awt.headless=true \
    "${jopts[@]}" kafka.Kafka "$props" </dev/null >>"$CLUSTER_DIR/n$n.log" 2>&1 &
  echo $! >"$CLUSTER_DIR/n$n.pid"
}

# Whether the process launch() just started for node N is still alive. Unlike live_pid this
# does not look at the command line: right after `cmd &` the child may still be the forked
# shell that has not exec'd the node yet (on a busy machine that gap lasted long enough for
# a CI run to report "exited at start-up" for a node that then came up fine).
launched_alive() {
  local pid; pid=$(cat "$CLUSTER_DIR/n$1.pid" 2>/dev/null) || return 1
  [ -n "$pid" ] && [ -r "/proc/$pid/stat" ] && [ "$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null)" != Z ]
}

# Wait until node N's broker port (with `controller`, its controller port) accepts (or it exits).
wait_port() {
  local n=$1 i port; port=$(broker_port "$n")
  [ "${2:-}" = controller ] && port=$(controller_port "$n")
  for i in $(seq 600); do
    port_busy "$port" && [ -n "$(live_pid "$n")" ] && return 0
    launched_alive "$n" || { tail -20 "$CLUSTER_DIR/n$n.log" >&2; die "node $n exited at start-up"; }
    sleep 0.1
  done
  die "node $n: port $port not accepting after 60 s"
}

stop_node() {
  local n=$1 pid i
  pid=$(live_pid "$n")
  if [ -z "$pid" ]; then
    if [ -f "$CLUSTER_DIR/n$n.pid" ] && kill -0 "$(cat "$CLUSTER_DIR/n$n.pid")" 2>/dev/null; then
      echo "cluster.sh: pid $(cat "$CLUSTER_DIR/n$n.pid") of node $n is alive but not node $n's command line; left alone" >&2
    fi
    rm -f "$CLUSTER_DIR/n$n.pid"
    return 0
  fi
  kill -CONT "$pid" 2>/dev/null  # a paused node cannot handle SIGTERM
  kill -TERM "$pid" 2>/dev/null
  for i in $(seq 150); do [ -n "$(live_pid "$n")" ] || break; sleep 0.1; done
  if [ -n "$(live_pid "$n")" ]; then
    echo "cluster.sh: node $n ignored SIGTERM for 15 s, SIGKILL" >&2
    kill -KILL "$pid" 2>/dev/null
    for i in $(seq 50); do [ -n "$(live_pid "$n")" ] || break; sleep 0.1; done
  fi
  rm -f "$CLUSTER_DIR/n$n.pid"
}

signal_node() {
  local sig=$1 n=$2 pid
  check_node "$n"; resolve_dir
  pid=$(live_pid "$n")
  [ -n "$pid" ] || die "node $n is not running"
  kill "-$sig" "$pid" || die "kill -$sig $pid failed"
  if [ "$sig" = KILL ]; then
    local i
    for i in $(seq 50); do [ -n "$(live_pid "$n")" ] || break; sleep 0.1; done
    rm -f "$CLUSTER_DIR/n$n.pid"
  fi
  echo "node $n (pid $pid): SIG$sig"
}

cmd=${1:-}; shift || true
case "$cmd" in
  start)
    [ "$IMPL" = kafka ] || [ -x "$STRATA_BIN" ] || die "$STRATA_BIN not built (cargo build --release --bin strata)"
    for n in $NODES; do
      for p in $(broker_port "$n") $(controller_port "$n"); do
        port_busy "$p" && die "port $p is busy; not starting (another cluster on CLUSTER_PORT_BASE=$BASE?)"
      done
    done
    if [ -z "${CLUSTER_DIR:-}" ]; then
      CLUSTER_DIR=$(mktemp -d /tmp/strata-cluster.XXXXXX)
    fi
    mkdir -p "$CLUSTER_DIR"; CLUSTER_DIR=$(cd "$CLUSTER_DIR" && pwd)
    [ -f "$CLUSTER_DIR/impl" ] && [ "$(cat "$CLUSTER_DIR/impl")" != "$IMPL" ] \
      && die "$CLUSTER_DIR holds a $(cat "$CLUSTER_DIR/impl") cluster, not $IMPL"
    for n in $NODES; do [ -z "$(live_pid "$n")" ] || die "node $n already running"; done
    echo "$CLUSTER_DIR" >"$STATE"
    echo "$IMPL" >"$CLUSTER_DIR/impl"
    if [ "$IMPL" = kafka ]; then
      [ -d "$LIBS" ] || die "CLUSTER_KAFKA_LIBS: no directory $LIBS"
      # a restarted cluster keeps the jars it was first started with
      if [ -f "$CLUSTER_DIR/kafka-libs" ]; then LIBS=$(cat "$CLUSTER_DIR/kafka-libs"); else echo "$LIBS" >"$CLUSTER_DIR/kafka-libs"; fi
    fi
    for n in $NODES; do launch "$n"; done
    for n in $NODES; do wait_port "$n"; done
    echo "cluster started: bootstrap $(bootstrap), dir $CLUSTER_DIR"
    ;;
  stop)
    resolve_dir
    for n in $NODES 4 5 6 7 8 9; do stop_node "$n"; done
    [ "$(cat "$STATE" 2>/dev/null)" = "$CLUSTER_DIR" ] && rm -f "$STATE"
    echo "cluster stopped (dir $CLUSTER_DIR kept)"
    ;;
  kill) signal_node KILL "${1:-}" ;;
  pause) signal_node STOP "${1:-}" ;;
  resume) signal_node CONT "${1:-}" ;;
  restart)
    n=${1:-}; check_node "$n"; resolve_dir
    stop_node "$n"
    launch "$n"; wait_port "$n"
    echo "node $n restarted (pid $(live_pid "$n"))"
    ;;
  observer)
    n=${1:-}; case "$n" in [4-9]) ;; *) die "an observer is node 4..9 (got '$n')" ;; esac
    resolve_dir
    [ -z "$(live_pid "$n")" ] || die "node $n already running"
    launch "$n" broker; wait_port "$n"
    echo "broker-only node $n started (pid $(live_pid "$n"))"
    ;;
  controller)
    n=${1:-}; case "$n" in [4-9]) ;; *) die "a joining controller is node 4..9 (got '$n')" ;; esac
    resolve_dir
    [ "$IMPL" = strata ] || die "controller N is implemented for Strata clusters only"
    [ -z "$(live_pid "$n")" ] || die "node $n already running"
    launch "$n" controller-join; wait_port "$n" controller
    echo "joining controller $n started (pid $(live_pid "$n"))"
    ;;
  stop-node)
    n=${1:-}; case "$n" in [1-9]) ;; *) die "node must be 1..9 (got '$n')" ;; esac
    resolve_dir; stop_node "$n"
    ;;
  pid)
    n=${1:-}; check_node "$n"; resolve_dir
    pid=$(live_pid "$n"); [ -n "$pid" ] || die "node $n is not running"
    echo "$pid"
    ;;
  status)
    resolve_dir
    for n in $NODES; do
      pid=$(live_pid "$n")
      if [ -z "$pid" ]; then st=down
      elif [ "$(awk '{print $3}' "/proc/$pid/stat")" = T ]; then st="paused (pid $pid)"
      else st="up (pid $pid)"; fi
      echo "node $n: $st broker 127.0.0.1:$(broker_port "$n") controller 127.0.0.1:$(controller_port "$n")"
    done
    ;;
  bootstrap) bootstrap ;;
  log)
    n=${1:-}; check_node "$n"; resolve_dir
    if [ "$IMPL" = kafka ]; then echo "$CLUSTER_DIR/n$n-logs/server.log"; else echo "$CLUSTER_DIR/n$n.log"; fi
    ;;
  wait-ready)
    resolve_dir
    timeout_s=${1:-60}
    deadline=$(( $(date +%s) + timeout_s ))
    for n in $NODES; do
      until port_busy "$(broker_port "$n")"; do
        [ -n "$(live_pid "$n")" ] || die "node $n is not running"
        [ "$(date +%s)" -lt "$deadline" ] || die "node $n: broker port $(broker_port "$n") not accepting"
        sleep 0.2
      done
    done
    left=$(( deadline - $(date +%s) )); [ "$left" -gt 0 ] || left=1
    # One admin client per bootstrap address, so that every node is asked at least once.
    "$PY" - "$left" $(for n in $NODES; do echo "127.0.0.1:$(broker_port "$n")"; done) <<'EOF' || die "cluster not ready after ${timeout_s} s"
import sys, time
from confluent_kafka.admin import AdminClient
deadline = time.time() + float(sys.argv[1])
last = {}
for addr in sys.argv[2:]:
    admin = AdminClient({"bootstrap.servers": addr, "socket.timeout.ms": 3000})
    while True:
        try:
            md = admin.list_topics(timeout=3)
            brokers = sorted(md.brokers)
            last[addr] = {"brokers": brokers, "controller": md.controller_id}
            # Admin requests (CreateTopics ...) go to the controller id of Metadata.
            if len(brokers) == 3 and md.controller_id in (1, 2, 3):
                break
        except Exception as e:  # KafkaException while the cluster forms
            last[addr] = repr(e)
        if time.time() > deadline:
            print(f"not ready: {last}", file=sys.stderr)
            sys.exit(1)
        time.sleep(0.5)
print(f"cluster ready: brokers {last}")
EOF
    ;;
  *) awk 'NR>1 && /^#/ {sub(/^# ?/, ""); print; next} NR>1 {exit}' "$0"; [ -z "$cmd" ] || exit 2 ;;
esac
