#!/usr/bin/env bash
# Apache Kafka's own admin tools against the 3-node cluster of cluster.sh (tag `cluster`).
# Needs the cluster running (cluster/run.sh starts it; or `cluster.sh start` by hand with
# the same CLUSTER_DIR / CLUSTER_PORT_BASE). Each case leaves every node up and every
# replica of its topic in the ISR, or fails.
#
#   cluster.tools.topics-describe   kafka-topics --describe: 3 replicas, full ISR, leader in ISR
#   cluster.tools.leader-moves      kill -9 the leader of partition 0: describe shows another
#                                   leader and the dead broker out of the ISR; it rejoins after restart
#   cluster.tools.metadata-quorum   kafka-metadata-quorum describe --status / --replication
#   cluster.tools.reassign          kafka-reassign-partitions --execute / --verify moves an RF-2
#                                   partition from brokers 1,2 to 2,3; broker 3 serves the data alone
#   cluster.tools.leader-election   kafka-leader-election --election-type PREFERRED
#                                   --all-topic-partitions puts the preferred leader back
source "$(dirname "$0")/../lib/harness.sh"
CL="$HERE/cluster/cluster.sh"
BROKERS=$(bash "$CL" bootstrap)
export BOOTSTRAP="$BROKERS"
CASE_TIMEOUT="${CASE_TIMEOUT:-240}"

# wait_md TOPIC TIMEOUT_S EXPR: every broker that answers agrees that EXPR holds for its
# Metadata view `d` = {partition: (leader, replicas, isr)} (see kmeta.py)
wait_md() { "$PY" "$HERE/cluster/kmeta.py" wait "$BROKERS" "$1" "$2" "$3"; }
full_isr='len(d) > 0 and all(l in r and sorted(i) == sorted(r) for l, r, i in d.values())'

# Bring back any node a failed case left down or paused.
heal() {
  local n st
  for n in 1 2 3; do
    st=$(bash "$CL" status | sed -n "s/^node $n: \([a-z]*\).*/\1/p")
    case "$st" in
      down) bash "$CL" restart "$n" ;;
      paused) bash "$CL" resume "$n" ;;
    esac
  done
}

# describe TOPIC: kafka-topics --describe output, echoed into the case log
describe() {
  local out; out=$(kafka_topics --describe --topic "$1") || return 1
  printf '%s\n' "$out" >&2
  printf '%s\n' "$out"
}
# parts: describe output on stdin -> "PARTITION LEADER REPLICAS ISR" per partition
parts() {
  awk '/Partition: /{ p=l=r=s="";
    for (i = 1; i < NF; i++) { if ($i == "Partition:") p = $(i+1); if ($i == "Leader:") l = $(i+1);
      if ($i == "Replicas:") r = $(i+1); if ($i == "Isr:") s = $(i+1) }
    if (s == "Elr:" || s == "LastKnownElr:") s = "";
    print p, l, r, s }'
}
# same_set A B: comma lists with the same members
same_set() { [ "$(tr , '\n' <<<"$1" | sort -n | paste -sd,)" = "$(tr , '\n' <<<"$2" | sort -n | paste -sd,)" ]; }
in_list() { tr , '\n' <<<"$2" | grep -qx "$1"; }

topics_describe() {
  heal
  local t; t=$(topic describe)
  kafka_topics --create --topic "$t" --partitions 3 --replication-factor 3
  wait_md "$t" 30 "len(d) == 3 and $full_isr"
  local out; out=$(describe "$t")
  grep -q "PartitionCount: 3" <<<"$out" || fail "no PartitionCount: 3"
  grep -q "ReplicationFactor: 3" <<<"$out" || fail "no ReplicationFactor: 3"
  local n=0 p l r s
  while read -r p l r s; do
    n=$((n+1))
    same_set "$r" 1,2,3 || fail "partition $p: Replicas $r, want the 3 brokers"
    same_set "$s" "$r" || fail "partition $p: Isr '$s' is not the replica set $r"
    in_list "$l" "$s" || fail "partition $p: Leader $l not in Isr $s"
  done < <(parts <<<"$out")
  [ "$n" = 3 ] || fail "$n partition lines, want 3"
}

leader_moves() {
  heal
  local t; t=$(topic moves)
  kafka_topics --create --topic "$t" --partitions 3 --replication-factor 3
  wait_md "$t" 30 "len(d) == 3 and $full_isr"
  local l0; l0=$(describe "$t" | parts | awk '$1 == 0 {print $2}')
  [[ "$l0" =~ ^[123]$ ]] || fail "partition 0 has leader '$l0'"
  echo "leader of partition 0: $l0; kill -9"
  bash "$CL" kill "$l0"
  wait_md "$t" 30 "d[0][0] in (1, 2, 3) and d[0][0] != $l0 and $l0 not in d[0][2]" \
    || fail "partition 0: no new leader with broker $l0 out of the ISR within 30 s"
  local line; line=$(describe "$t" | parts | awk '$1 == 0')
  read -r _ l r s <<<"$line"
  { [[ "$l" =~ ^[123]$ ]] && [ "$l" != "$l0" ]; } || fail "kafka-topics: partition 0 leader '$l', want another than $l0"
  same_set "$r" 1,2,3 || fail "kafka-topics: partition 0 Replicas $r changed"
  in_list "$l0" "$s" && fail "kafka-topics: dead broker $l0 still in Isr $s"
  in_list "$l" "$s" || fail "kafka-topics: leader $l not in Isr $s"
  bash "$CL" restart "$l0"
  wait_md "$t" 30 "$full_isr" || fail "broker $l0 not back in every ISR of $t within 30 s of its restart"
  line=$(describe "$t" | parts | awk '$1 == 0')
  read -r _ l r s <<<"$line"
  same_set "$s" 1,2,3 || fail "kafka-topics after restart: partition 0 Isr $s"
}

metadata_quorum() {
  heal
  local st rep
  st=$(jk org.apache.kafka.tools.MetadataQuorumCommand --bootstrap-server "$BOOTSTRAP" describe --status)
  echo "$st"
  local leader; leader=$(sed -n 's/^LeaderId:[[:space:]]*\([0-9-]*\).*/\1/p' <<<"$st")
  [[ "$leader" =~ ^[123]$ ]] || fail "--status: LeaderId '$leader', want one of the voters 1,2,3"
  grep -qE '^LeaderEpoch:[[:space:]]*[0-9]+' <<<"$st" || fail "--status: no LeaderEpoch"
  grep -qE '^HighWatermark:[[:space:]]*[0-9]+' <<<"$st" || fail "--status: no HighWatermark"
  [ "$(sed -n 's/^HighWatermark:[[:space:]]*//p' <<<"$st")" -gt 0 ] || fail "--status: HighWatermark not > 0"
  local voters; voters=$(grep '^CurrentVoters:' <<<"$st") || fail "--status: no CurrentVoters"
  local ids; ids=$(grep -oE '"id": *[0-9]+' <<<"$voters" | grep -oE '[0-9]+' | sort -n | paste -sd,)
  [ "$ids" = 1,2,3 ] || fail "--status: CurrentVoters ids '$ids', want 1,2,3"
  for n in 1 2 3; do
    grep -q "CONTROLLER://127.0.0.1:$(( ${CLUSTER_PORT_BASE:-19400} + 10 + n ))" <<<"$voters" \
      || fail "--status: voter $n's endpoint missing from $voters"
  done
  rep=$(jk org.apache.kafka.tools.MetadataQuorumCommand --bootstrap-server "$BOOTSTRAP" describe --replication)
  echo "$rep"
  head -1 <<<"$rep" | grep -qE 'NodeId.*LogEndOffset.*Lag.*Status' || fail "--replication: no header"
  local rows; rows=$(tail -n +2 <<<"$rep" | awk '{print $1, $NF}' | sort)
  [ "$(awk '{print $1}' <<<"$rows" | paste -sd,)" = 1,2,3 ] || fail "--replication: node rows '$rows', want 1,2,3"
  [ "$(awk '$2 == "Leader"' <<<"$rows" | wc -l)" = 1 ] || fail "--replication: not exactly one Leader: $rows"
  [ "$(awk '$2 == "Follower"' <<<"$rows" | wc -l)" = 2 ] || fail "--replication: not 2 Followers: $rows"
  # The leader row is the LeaderId of --status (leadership may change in between: then ask again)
  local rl; rl=$(awk '$2 == "Leader" {print $1}' <<<"$rows")
  if [ "$rl" != "$leader" ]; then
    st=$(jk org.apache.kafka.tools.MetadataQuorumCommand --bootstrap-server "$BOOTSTRAP" describe --status)
    grep -qE "^LeaderId:[[:space:]]*$rl\$" <<<"$st" || fail "--replication Leader $rl, --status LeaderId $leader"
  fi
  # Lag and LogEndOffset are numbers
  tail -n +2 <<<"$rep" | awk '$3 !~ /^[0-9]+$/ || $4 !~ /^[0-9]+$/ {bad=1} END {exit bad}' \
    || fail "--replication: non-numeric LogEndOffset/Lag"
}

reassign() {
  heal
  local t; t=$(topic reassign)
  kafka_topics --create --topic "$t" --replica-assignment 1:2
  wait_md "$t" 30 "len(d) == 1 and sorted(d[0][1]) == [1, 2] and $full_isr"
  seq -f 'reassign-%g' 1 100 | kafka_console_producer --topic "$t" --producer-property acks=all
  local plan="$OUT/reassign-$t.json"
  printf '{"version":1,"partitions":[{"topic":"%s","partition":0,"replicas":[2,3]}]}\n' "$t" >"$plan"
  local out
  out=$(jk org.apache.kafka.tools.reassign.ReassignPartitionsCommand --bootstrap-server "$BOOTSTRAP" \
    --reassignment-json-file "$plan" --execute)
  echo "$out"
  grep -q "Successfully started partition reassignment" <<<"$out" || fail "--execute did not start the reassignment"
  local done_=0
  for _ in $(seq 30); do
    out=$(jk org.apache.kafka.tools.reassign.ReassignPartitionsCommand --bootstrap-server "$BOOTSTRAP" \
      --reassignment-json-file "$plan" --verify) || true
    echo "$out"
    if grep -q "Reassignment of partition $t-0 is completed" <<<"$out"; then done_=1; break; fi
    sleep 2
  done
  [ "$done_" = 1 ] || fail "--verify never reported $t-0 completed"
  wait_md "$t" 30 "d[0][1] == [2, 3] and $full_isr" || fail "metadata: replicas of $t-0 not [2,3] with full ISR"
  local line; line=$(describe "$t" | parts | awk '$1 == 0')
  read -r _ l r s <<<"$line"
  [ "$r" = 2,3 ] || fail "kafka-topics: Replicas $r, want 2,3"
  same_set "$s" 2,3 || fail "kafka-topics: Isr $s, want 2,3"
  # Broker 3 got the data: with broker 2 dead it leads and serves all 100 records.
  bash "$CL" kill 2
  wait_md "$t" 30 "d[0][0] == 3" || fail "broker 3 did not take over $t-0 with broker 2 dead"
  seq -f 'reassign-%g' 1 100 >"$OUT/reassign-$t.want"
  kafka_console_consumer --topic "$t" --partition 0 --offset earliest --max-messages 100 \
    --timeout-ms 30000 >"$OUT/reassign-$t.got"
  bash "$CL" restart 2
  cmp "$OUT/reassign-$t.want" "$OUT/reassign-$t.got" || fail "records read from broker 3 differ from those produced"
  wait_md "$t" 30 "$full_isr" || fail "broker 2 not back in the ISR of $t-0"
}

leader_election() {
  heal
  local t; t=$(topic elect)
  kafka_topics --create --topic "$t" --replica-assignment 1:2:3,2:3:1,3:1:2
  wait_md "$t" 30 "len(d) == 3 and $full_isr"
  bash "$CL" kill 1
  wait_md "$t" 30 "d[0][0] in (2, 3) and 1 not in d[0][2]" || fail "no new leader for $t-0 with broker 1 dead"
  bash "$CL" restart 1
  wait_md "$t" 30 "$full_isr" || fail "broker 1 not back in every ISR of $t"
  local before; before=$(describe "$t" | parts | awk '$1 == 0 {print $2}')
  echo "leader of $t-0 before the election: $before (preferred: 1)"
  # Every partition of every topic must have its preferred replica in the ISR, or the tool
  # reports an error for it: wait for the whole cluster to have healed.
  local out rc=0
  out=$(jk org.apache.kafka.tools.LeaderElectionCommand --bootstrap-server "$BOOTSTRAP" \
    --election-type PREFERRED --all-topic-partitions 2>&1) || rc=$?
  echo "$out"
  [ "$rc" = 0 ] || fail "kafka-leader-election exited $rc"
  if [ "$before" != 1 ]; then
    grep -q "Successfully completed leader election (PREFERRED) for partitions.*$t-0" <<<"$out" \
      || fail "kafka-leader-election did not report electing $t-0"
  fi
  wait_md "$t" 30 "all(l == r[0] for l, r, i in d.values())" || fail "leaders of $t are not the preferred replicas"
  local p l r s
  while read -r p l r s; do
    [ "$l" = "${r%%,*}" ] || fail "kafka-topics: $t-$p leader $l, preferred ${r%%,*}"
  done < <(describe "$t" | parts)
}

case_run cluster cluster.tools.topics-describe topics_describe
case_run cluster cluster.tools.leader-moves leader_moves
case_run cluster cluster.tools.metadata-quorum metadata_quorum
case_run cluster cluster.tools.reassign reassign
case_run cluster cluster.tools.leader-election leader_election
case_summary
