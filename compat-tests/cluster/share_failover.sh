#!/usr/bin/env bash
# Share groups (KIP-932) across a leader failover (issue 17). Needs the cluster of cluster.sh
# running (cluster/run.sh starts it and runs this).
#
#   cluster.share.failover  kafka-configs --entity-type groups sets the group's
#       share.auto.offset.reset=earliest; then a Kafka 4.3.1 KafkaShareConsumer
#       (tests/ShareFailover.java, explicit acknowledgement, commitSync per poll) ACCEPTs,
#       slowly, the 300 records of an RF-3 1-partition topic (min.insync.replicas=2, acks=all).
#       After 100 are accepted, the partition leader is killed with SIGKILL (cluster.sh kill);
#       50 more records are produced once a new leader is known. Every one of the 350 must be
#       accepted, none delivered again once its acknowledgement was committed (above all none
#       of those accepted before the kill: the new leader must know them, from
#       __share_group_state), and after the killed node is restarted nothing comes back and the
#       group's lag is 0. The client's NetworkClient DEBUG log: out/<run>/share-failover-client.log.
#   cluster.share.failover-coordinator  the same, but the node killed is the share coordinator:
#       the leader of the __share_group_state partition that holds this share-partition's state
#       (Kafka's placement: abs("<group>:<topic id>:0".hashCode()) % partitions). The group,
#       "<name>-<k>", is chosen so that this is not the topic partition's leader (when
#       __share_group_state exists already, as after the first case; the log says which node
#       was killed as what); its share.auto.offset.reset=earliest set with the Admin API.
#
# Against Kafka this needs 4.2+ brokers (share.version=1 finalized at format):
#   CLUSTER_IMPL=kafka CLUSTER_KAFKA_LIBS=compat-tests/.cache/kafka-libs-latest \
#     compat-tests/cluster/run.sh --filter share
# Standalone, on a cluster started with cluster.sh (same CLUSTER_PORT_BASE):
#   compat-tests/cluster/share_failover.sh
# Env: SHARE_FAILOVER_RECORDS (300), SHARE_FAILOVER_MORE (50), CASE_FILTER, CASE_TIMEOUT (300).
# Standalone (a cluster already started with cluster.sh): its bootstrap list by default.
[ -n "${BOOTSTRAP:-}" ] || BOOTSTRAP=$(bash "$(dirname "$0")/cluster.sh" bootstrap)
source "$(dirname "$0")/../lib/harness.sh"
CL="$HERE/cluster/cluster.sh"

# share_failover_run NAME TARGET: TARGET leader or share-coordinator
share_failover_run() {
  local t g dir="$OUT/$1"; t=$(topic "$1"); g="$t-g"
  mkdir -p "$dir"
  # Whatever happens, every node is up again afterwards for the cases that follow.
  trap 'for n in 1 2 3; do
          bash "$CL" status | grep -q "^node $n: down" && bash "$CL" restart "$n" >>"$OUT/share-failover-restore.log" 2>&1
        done; true' EXIT
  trap 'exit 143' TERM
  javac -d "$dir/classes" -cp "$KAFKA_LATEST_LIBS/*" "$HERE/tests/ShareFailover.java"
  printf '%s\n' 'status = warn' \
    'appender.err.type = Console' 'appender.err.name = STDERR' 'appender.err.target = SYSTEM_ERR' \
    'appender.err.layout.type = PatternLayout' 'appender.err.layout.pattern = [%d] %p %m (%c)%n' \
    'appender.err.filter.t.type = ThresholdFilter' 'appender.err.filter.t.level = WARN' \
    'appender.f.type = File' 'appender.f.name = F' "appender.f.fileName = $OUT/$1-client.log" \
    'appender.f.layout.type = PatternLayout' 'appender.f.layout.pattern = [%d] %p [%t] %m (%c)%n' \
    'rootLogger.level = WARN' 'rootLogger.appenderRef.err.ref = STDERR' 'rootLogger.appenderRef.f.ref = F' \
    'logger.nc.name = org.apache.kafka.clients.NetworkClient' 'logger.nc.level = DEBUG' \
    >"$dir/log4j2.properties"
  # The group config first, as a user would, before any member joins. (The share-coordinator
  # run picks its group once the topic exists and sets the config itself.)
  if [ "$2" = leader ]; then
    KAFKA_LIBS="$KAFKA_LATEST_LIBS" kafka_configs --alter --entity-type groups --entity-name "$g" \
      --add-config share.auto.offset.reset=earliest
  fi
  # shellcheck disable=SC2086
  java $KAFKA_JAVA_OPTS -Dlog4j2.configurationFile="$dir/log4j2.properties" \
    -cp "$dir/classes:$KAFKA_LATEST_LIBS/*" ShareFailover "$BOOTSTRAP" "$t" "$g" "$CL" \
    "${SHARE_FAILOVER_RECORDS:-300}" "${SHARE_FAILOVER_MORE:-50}" "$2"
}
share_failover() { share_failover_run share-failover leader; }
share_failover_coordinator() { share_failover_run share-failover-coordinator share-coordinator; }

CASE_TIMEOUT="${CASE_TIMEOUT:-300}" case_run cluster cluster.share.failover share_failover
CASE_TIMEOUT="${CASE_TIMEOUT:-300}" case_run cluster cluster.share.failover-coordinator share_failover_coordinator
case_summary
