#!/usr/bin/env bash
# Apache Kafka's own admin tools against the 3-node cluster of cluster.sh (tag `cluster`).
# Needs the cluster running (cluster/run.sh starts it; or `cluster.sh start` by hand with
# the same CLUSTER_DIR / CLUSTER_PORT_BASE). Each case leaves every node up and every
# replica of its topic in the ISR, or fails.
#
#   cluster.tools.topics-describe   kafka-topics --describe: 3 replicas, full ISR, leader in ISR
#   cluster.tools.replica-assignment  kafka-topics --create --replica-assignment 1:2,2:3,3:1
#   cluster.tools.leader-moves      kill -9 the leader of partition 0: describe shows another
#                                   leader and the dead broker out of the ISR; it rejoins after restart
#   cluster.tools.metadata-quorum   kafka-metadata-quorum describe --status / --replication
#   cluster.tools.reassign          kafka-reassign-partitions --execute / --verify moves an RF-2
#                                   partition from brokers [a,b] to [b,c]; c serves the data alone
#   cluster.tools.leader-election   kafka-leader-election --election-type PREFERRED
#                                   --all-topic-partitions puts the preferred leader back
#   cluster.tools.broker-only       a 4th process with process.roles=broker joins: it registers,
#                                   kafka-metadata-quorum lists it as an Observer, it leads a
#                                   partition that console tools write and read through it alone
#   cluster.tools.forward-timeout   a CreateTopics sent to a broker that forwards it to an
#                                   active controller that has stopped (SIGSTOP) is answered
#                                   REQUEST_TIMED_OUT at the request's own timeout, and is not
#                                   sent again: after the controller resumes, a retry is told
#                                   the topic exists or creates it, and it has one partition
#   cluster.tools.add-controller    a 5th process, controller-only with just
#                                   controller.quorum.bootstrap.servers, is made a voter by
#                                   kafka-metadata-quorum add-controller (KIP-853), listed in
#                                   CurrentVoters, then removed again by remove-controller
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
  st=$(jk org.apache.kafka.tools.MetadataQuorumCommand --bootstrap-server "$BOOTSTRAP" describe --status 2>&1) \
    || { echo "$st"; fail "describe --status failed"; }
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
  rep=$(jk org.apache.kafka.tools.MetadataQuorumCommand --bootstrap-server "$BOOTSTRAP" describe --replication 2>&1) \
    || { echo "$rep"; fail "describe --replication failed"; }
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
  # Every voter has fetched (LastFetchTimestamp is a time, not -1)
  tail -n +2 <<<"$rep" | awk '$NF != "Observer" && !($5 ~ /^[0-9]+$/ && $5 > 0) {bad=1} END {exit bad}' \
    || fail "--replication: a voter without a LastFetchTimestamp"
}

reassign() {
  heal
  local t; t=$(topic reassign)
  kafka_topics --create --topic "$t" --partitions 1 --replication-factor 2
  wait_md "$t" 30 "len(d) == 1 and len(d[0][1]) == 2 and $full_isr"
  # replicas [a,b] move to [b,c], c the broker that had none: b then c lead in turn below
  local line r a b c; line=$(describe "$t" | parts | awk '$1 == 0')
  read -r _ _ r _ <<<"$line"
  a=${r%%,*}; b=${r##*,}; c=$(( 6 - a - b ))
  [[ "$a$b$c" =~ ^[123]{3}$ ]] && [ "$a" != "$b" ] || fail "replicas '$r' of a new RF-2 topic"
  echo "replicas [$a,$b] -> [$b,$c]"
  seq -f 'reassign-%g' 1 100 | kafka_console_producer --topic "$t" --producer-property acks=all
  # KIP-860 (AlterPartitionReassignments v1): a plan that grows the partition to three
  # replicas, run with --disallow-replication-factor-change, is refused and changes nothing.
  local grow="$OUT/reassign-grow-$t.json" refused
  printf '{"version":1,"partitions":[{"topic":"%s","partition":0,"replicas":[%s,%s,%s]}]}\n' "$t" "$a" "$b" "$c" >"$grow"
  refused=$(jk org.apache.kafka.tools.reassign.ReassignPartitionsCommand --bootstrap-server "$BOOTSTRAP" \
    --reassignment-json-file "$grow" --execute --disallow-replication-factor-change 2>&1) || true
  grep -q "The replication factor is changed from 2 to 3" <<<"$refused" \
    || { echo "$refused" | grep -v '^\s*at ' | tail -5; fail "an RF change was not refused"; }
  [ "$(describe "$t" | parts | awk '$1 == 0 {print $3}')" = "$r" ] || fail "the refused plan changed the replicas"
  local plan="$OUT/reassign-$t.json"
  printf '{"version":1,"partitions":[{"topic":"%s","partition":0,"replicas":[%s,%s]}]}\n' "$t" "$b" "$c" >"$plan"
  local out
  out=$(jk org.apache.kafka.tools.reassign.ReassignPartitionsCommand --bootstrap-server "$BOOTSTRAP" \
    --reassignment-json-file "$plan" --execute 2>&1) || { echo "$out" | grep -v '^\s*at '; fail "--execute failed"; }
  echo "$out"
  grep -q "Successfully started partition reassignment" <<<"$out" || fail "--execute did not start the reassignment"
  local done_=0
  for _ in $(seq 30); do
    out=$(jk org.apache.kafka.tools.reassign.ReassignPartitionsCommand --bootstrap-server "$BOOTSTRAP" \
      --reassignment-json-file "$plan" --verify 2>&1) || true
    echo "$out" | grep -v '^\s*at '
    if grep -q "Reassignment of partition $t-0 is completed" <<<"$out"; then done_=1; break; fi
    sleep 2
  done
  [ "$done_" = 1 ] || fail "--verify never reported $t-0 completed"
  wait_md "$t" 30 "d[0][1] == [$b, $c] and $full_isr" || fail "metadata: replicas of $t-0 not [$b,$c] with full ISR"
  line=$(describe "$t" | parts | awk '$1 == 0')
  read -r _ l r s <<<"$line"
  [ "$r" = "$b,$c" ] || fail "kafka-topics: Replicas $r, want $b,$c"
  same_set "$s" "$b,$c" || fail "kafka-topics: Isr $s, want $b,$c"
  # Broker c got the data: with broker b dead it leads and serves all 100 records.
  bash "$CL" kill "$b"
  wait_md "$t" 30 "d[0][0] == $c" || fail "broker $c did not take over $t-0 with broker $b dead"
  seq -f 'reassign-%g' 1 100 >"$OUT/reassign-$t.want"
  kafka_console_consumer --topic "$t" --partition 0 --offset earliest --max-messages 100 \
    --timeout-ms 30000 >"$OUT/reassign-$t.got"
  bash "$CL" restart "$b"
  cmp "$OUT/reassign-$t.want" "$OUT/reassign-$t.got" || fail "records read from broker $c differ from those produced"
  wait_md "$t" 30 "$full_isr" || fail "broker $b not back in the ISR of $t-0"
}

leader_election() {
  heal
  local t; t=$(topic elect)
  kafka_topics --create --topic "$t" --partitions 3 --replication-factor 3
  wait_md "$t" 30 "len(d) == 3 and $full_isr"
  local pref; pref=$(describe "$t" | parts | awk '$1 == 0 {print $3}'); pref=${pref%%,*}
  [[ "$pref" =~ ^[123]$ ]] || fail "preferred replica of $t-0: '$pref'"
  bash "$CL" kill "$pref"
  wait_md "$t" 30 "d[0][0] in (1, 2, 3) and d[0][0] != $pref and $pref not in d[0][2]" \
    || fail "no new leader for $t-0 with broker $pref dead"
  bash "$CL" restart "$pref"
  wait_md "$t" 30 "$full_isr" || fail "broker $pref not back in every ISR of $t"
  local before; before=$(describe "$t" | parts | awk '$1 == 0 {print $2}')
  echo "leader of $t-0 before the election: $before (preferred: $pref)"
  # Every partition of every topic must have its preferred replica in the ISR, or the tool
  # reports an error for it: wait for the whole cluster to have healed.
  local out rc=0
  out=$(jk org.apache.kafka.tools.LeaderElectionCommand --bootstrap-server "$BOOTSTRAP" \
    --election-type PREFERRED --all-topic-partitions 2>&1) || rc=$?
  echo "$out" | grep -v '^\s*at '
  [ "$rc" = 0 ] || fail "kafka-leader-election exited $rc: $(grep -m1 -E 'Exception|Error' <<<"$out")"
  if [ "$before" != "$pref" ]; then
    grep -q "Successfully completed leader election (PREFERRED) for partitions.*$t-0" <<<"$out" \
      || fail "kafka-leader-election did not report electing $t-0"
  fi
  wait_md "$t" 30 "all(l == r[0] for l, r, i in d.values())" || fail "leaders of $t are not the preferred replicas"
  local p l r s
  while read -r p l r s; do
    [ "$l" = "${r%%,*}" ] || fail "kafka-topics: $t-$p leader $l, preferred ${r%%,*}"
  done < <(describe "$t" | parts)
}

# kafka-topics --create --replica-assignment: CreateTopics with assignments and
# num_partitions = replication_factor = -1; describe shows exactly that placement.
replica_assignment() {
  heal
  local t; t=$(topic assign)
  kafka_topics --create --topic "$t" --replica-assignment 1:2,2:3,3:1
  wait_md "$t" 30 "len(d) == 3 and $full_isr"
  local got; got=$(describe "$t" | parts | awk '{print $1 ":" $3}' | sort | paste -sd' ')
  [ "$got" = "0:1,2 1:2,3 2:3,1" ] || fail "kafka-topics: placement '$got', want '0:1,2 1:2,3 2:3,1'"
}

# quorum_voter_ids: the ids in CurrentVoters of describe --status, as "1,2,3"
quorum_voter_ids() {
  local st; st=$(jk org.apache.kafka.tools.MetadataQuorumCommand --bootstrap-server "$BROKERS" describe --status 2>&1) \
    || return 1
  grep '^CurrentVoters:' <<<"$st" | grep -oE '"id": *[0-9]+' | grep -oE '[0-9]+' | sort -n | paste -sd,
}

add_controller() {
  heal
  local base=${CLUSTER_PORT_BASE:-19400} n=5
  local cp=$(( base + 10 + n )) cp1=$(( base + 11 )) props="$OUT/controller-$n.properties"
  bash "$CL" controller "$n" || fail "joining controller $n did not start"
  local dir="$CLUSTER_DIR/n$n"
  # What add-controller reads: node.id, process.roles, the controller listener, and the
  # directory id from meta.properties in the first log dir.
  cat >"$props" <<PROPS
node.id=$n
process.roles=controller
controller.listener.names=CONTROLLER
listeners=CONTROLLER://127.0.0.1:$cp
log.dirs=$dir
PROPS
  local i out=""
  for i in $(seq 40); do [ -f "$dir/meta.properties" ] && break; sleep 0.25; done
  # The new controller must have caught up as an observer before the leader accepts it.
  for i in $(seq 20); do
    out=$(jk org.apache.kafka.tools.MetadataQuorumCommand --bootstrap-controller "127.0.0.1:$cp1" \
      --command-config "$props" add-controller 2>&1) && break
    sleep 1
  done
  echo "$out" | grep -v '^\s*at '
  grep -q "Added controller $n with directory id" <<<"$out" \
    || { bash "$CL" stop-node "$n"; fail "add-controller did not add controller $n"; }
  local ids=""
  for i in $(seq 40); do ids=$(quorum_voter_ids) && [ "$ids" = "1,2,3,$n" ] && break; sleep 0.5; done
  [ "$ids" = "1,2,3,$n" ] || { bash "$CL" stop-node "$n"; fail "CurrentVoters '$ids' after add-controller, want 1,2,3,$n"; }
  # The grown quorum still commits metadata.
  local t; t=$(topic fourvoters)
  kafka_topics --create --topic "$t" --partitions 1 --replication-factor 3 \
    || { bash "$CL" stop-node "$n"; fail "create a topic with 4 voters"; }
  local dir_id; dir_id=$(sed -n 's/^directory.id=//p' "$dir/meta.properties")
  out=$(jk org.apache.kafka.tools.MetadataQuorumCommand --bootstrap-controller "127.0.0.1:$cp1" \
    remove-controller --controller-id "$n" --controller-directory-id "$dir_id" 2>&1)
  echo "$out" | grep -v '^\s*at '
  grep -qE "Removed +KRaft controller $n " <<<"$out" \
    || { bash "$CL" stop-node "$n"; fail "remove-controller did not remove controller $n"; }
  for i in $(seq 40); do ids=$(quorum_voter_ids) && [ "$ids" = 1,2,3 ] && break; sleep 0.5; done
  bash "$CL" stop-node "$n"
  [ "$ids" = 1,2,3 ] || fail "CurrentVoters '$ids' after remove-controller, want 1,2,3"
}

broker_only() {
  heal
  local port4=$(( ${CLUSTER_PORT_BASE:-19400} + 4 ))
  bash "$CL" observer 4 || fail "broker-only node 4 did not start"
  local rep i seen=""
  for i in $(seq 60); do
    rep=$(jk org.apache.kafka.tools.MetadataQuorumCommand --bootstrap-server "$BROKERS" describe --replication 2>&1) || true
    if tail -n +2 <<<"$rep" | awk '$1 == 4 && $NF == "Observer"' | grep -q .; then seen=1; break; fi
    sleep 0.5
  done
  echo "$rep"
  [ -n "$seen" ] || { bash "$CL" stop-node 4; fail "--replication: node 4 never listed as Observer"; }
  # Voters stay 1,2,3: the broker-only node does not vote.
  [ "$(tail -n +2 <<<"$rep" | awk '$NF == "Leader" || $NF == "Follower" {print $1}' | sort -n | paste -sd,)" = 1,2,3 ] \
    || { bash "$CL" stop-node 4; fail "--replication: voters are not 1,2,3"; }
  local t; t=$(topic observer)
  kafka_topics --create --topic "$t" --replica-assignment 4:1:2 \
    || { bash "$CL" stop-node 4; fail "create with node 4 as preferred leader"; }
  local ok=""
  for i in $(seq 60); do
    [ "$(describe "$t" 2>/dev/null | parts | awk '{print $2}')" = 4 ] && { ok=1; break; }
    sleep 0.5
  done
  [ -n "$ok" ] || { bash "$CL" stop-node 4; fail "node 4 never led $t"; }
  printf 'x1\nx2\nx3\n' | BOOTSTRAP="127.0.0.1:$port4" kafka_console_producer --topic "$t" \
    --producer-property acks=all >/dev/null || { bash "$CL" stop-node 4; fail "produce through node 4"; }
  local got; got=$(BOOTSTRAP="127.0.0.1:$port4" kafka_console_consumer --topic "$t" --from-beginning \
    --max-messages 3 --timeout-ms 20000 2>/dev/null | paste -sd,)
  bash "$CL" stop-node 4
  [ "$got" = x1,x2,x3 ] || fail "consumed '$got' through node 4, want x1,x2,x3"
}

# Issue 12, item 3: a forwarded request whose controller stops answering gets an answer at
# its own timeout (Kafka's forwarding manager answers REQUEST_TIMED_OUT) and is never re-sent
# (a re-send would tell the client TOPIC_ALREADY_EXISTS for the topic it is creating).
forward_timeout() {
  heal
  local st leader other t answer code took
  st=$(jk org.apache.kafka.tools.MetadataQuorumCommand --bootstrap-server "$BOOTSTRAP" describe --status 2>&1) \
    || { echo "$st"; fail "describe --status failed"; return 1; }
  leader=$(sed -n 's/^LeaderId:[[:space:]]*\([0-9-]*\).*/\1/p' <<<"$st")
  [[ "$leader" =~ ^[123]$ ]] || { fail "LeaderId '$leader'"; return 1; }
  for other in 1 2 3; do [ "$other" != "$leader" ] && break; done
  t=$(topic forward)
  bash "$CL" pause "$leader"
  answer=$("$PY" "$HERE/cluster/kmeta.py" create "127.0.0.1:$(( ${CLUSTER_PORT_BASE:-19400} + other ))" "$t" 3000)
  bash "$CL" resume "$leader"
  echo "controller $leader paused; broker $other answered: $answer"
  read -r code took <<<"$answer"
  [ "$code" = 7 ] || { fail "error code '$code' after ${took} ms, want 7 (REQUEST_TIMED_OUT)"; return 1; }
  [ "$took" -ge 2900 ] && [ "$took" -le 8000 ] \
    || { fail "answered after ${took} ms, want the request's own 3000 ms"; return 1; }
  # The controller is back (or another leads): the same request again, as a client retries.
  local i
  for i in $(seq 20); do
    answer=$("$PY" "$HERE/cluster/kmeta.py" create "127.0.0.1:$(( ${CLUSTER_PORT_BASE:-19400} + other ))" "$t" 10000)
    read -r code took <<<"$answer"
    case "$code" in 0|36) break ;; esac
    sleep 1
  done
  echo "retry answered: $answer"
  case "$code" in 0|36) ;; *) fail "retry: error code '$code', want 0 or 36 (TOPIC_ALREADY_EXISTS)"; return 1 ;; esac
  wait_md "$t" 30 "len(d) == 1 and $full_isr" || fail "$t: not one partition with a full ISR"
}

case_run cluster cluster.tools.topics-describe topics_describe
case_run cluster cluster.tools.replica-assignment replica_assignment
case_run cluster cluster.tools.leader-moves leader_moves
case_run cluster cluster.tools.metadata-quorum metadata_quorum
case_run cluster cluster.tools.reassign reassign
case_run cluster cluster.tools.leader-election leader_election
case_run cluster cluster.tools.broker-only broker_only
case_run cluster cluster.tools.forward-timeout forward_timeout
case_run cluster cluster.tools.add-controller add_controller
case_summary
