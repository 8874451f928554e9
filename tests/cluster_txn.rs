//! Transactions and consumer-group state across the brokers of a three-node cluster (in one
//! process, over loopback TCP): a transaction whose partitions are led by brokers other than
//! its coordinator (markers sent with WriteTxnMarkers), an abort invisible to read_committed,
//! the transaction coordinator stopped in the middle of a transaction, and a classic group
//! whose coordinator stops.
mod common;

use std::time::Duration;

use common::cluster::{produce_batch_retrying_as, Cluster};
use common::coord::*;
use common::txn::{init_producer_id_once, txn_batch, visible};
use common::{api_call, create_topic_rf, Client};
use strata::protocol::messages::*;

fn init_tracing() {
    if let Ok(filter) = tracing_subscriber::EnvFilter::try_from_env("STRATA_LOG") {
        let _ = tracing_subscriber::fmt().with_env_filter(filter).try_init();
    }
}

/// Produces a transactional batch to the leader of partition 0 of `topic`.
async fn produce_txn(
    cluster: &Cluster,
    transactional_id: &str,
    topic: &str,
    values: &[&str],
    producer: (i64, i16, i32),
) {
    let leader = cluster.wait_leader(live(cluster), topic, None, 1).await;
    let mut c = Client::connect(cluster.addr(cluster.index_of(leader))).await;
    let (code, _) = produce_batch_retrying_as(
        &mut c,
        Some(transactional_id),
        topic,
        txn_batch(values, producer),
    )
    .await;
    assert_eq!(code, 0, "transactional produce to {topic}");
}

/// Some running node's index.
fn live(cluster: &Cluster) -> usize {
    cluster
        .nodes
        .iter()
        .position(|n| n.running.is_some())
        .expect("a running node")
}

/// What a read_committed consumer sees of `topic` on its current leader, and whether the
/// last stable offset has reached the high watermark (no transaction open).
async fn committed_view(cluster: &Cluster, topic: &str) -> (Vec<String>, bool) {
    let leader = cluster.wait_leader(live(cluster), topic, None, 1).await;
    let i = cluster.index_of(leader);
    let mut c = Client::connect(cluster.addr(i)).await;
    let (values, lso) = visible(&mut c, topic, 1).await;
    let hw = fetch_from(cluster, i, topic, 0).await.high_watermark;
    (values, lso == hw)
}

/// Polls `topic` until read_committed shows exactly `want` and no transaction is open.
async fn wait_committed(cluster: &Cluster, topic: &str, want: &[&str]) {
    let mut last = (Vec::new(), false);
    for _ in 0..150 {
        last = committed_view(cluster, topic).await;
        for v in &last.0 {
            assert!(
                want.contains(&v.as_str()),
                "{topic}: {v} must not be visible"
            );
        }
        if last.0 == want && last.1 {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("{topic}: read_committed saw {last:?}, wanted {want:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn transaction_across_leaders_survives_its_coordinator() {
    init_tracing();
    let mut cluster = Cluster::start().await;
    cluster.wait_brokers(0, 3).await;

    // Topics until their leaders cover the brokers; then a transactional id whose coordinator
    // leads neither of two topics with different leaders, so every marker goes remote.
    let mut c = Client::connect(cluster.addr(0)).await;
    let mut leaders = Vec::new();
    for n in 0..6 {
        let topic = format!("tx-{n}");
        let code = create_topic_rf(&mut c, &topic, 1, 3, &[("min.insync.replicas", "2")]).await;
        assert_eq!(code, 0);
        let leader = cluster.wait_leader(0, &topic, None, 3).await;
        leaders.push((topic, leader));
    }
    let mut chosen = None;
    'search: for n in 0..40 {
        let tid = format!("producer-{n}");
        let coord = find_coordinator(&cluster, &tid, KEY_TXN).await;
        for (a, la) in &leaders {
            for (b, lb) in &leaders {
                if la != lb && *la != coord && *lb != coord {
                    chosen = Some((tid.clone(), coord, a.clone(), b.clone()));
                    break 'search;
                }
            }
        }
    }
    let (tid, coord, a, b) = chosen.expect("a coordinator apart from two leaders");
    let (a, b) = (a.as_str(), b.as_str());

    // 1. Commit across two remote leaders.
    let pid = init_producer_id(&cluster, &tid, 60_000).await;
    add_partitions(&cluster, &tid, pid, &[a, b]).await;
    produce_txn(&cluster, &tid, a, &["a1", "a2"], (pid.0, pid.1, 0)).await;
    produce_txn(&cluster, &tid, b, &["b1"], (pid.0, pid.1, 0)).await;
    let (seen, closed) = committed_view(&cluster, a).await;
    assert!(
        seen.is_empty() && !closed,
        "nothing visible before the commit"
    );
    assert_eq!(end_txn(&cluster, &tid, pid, true).await, 0, "EndTxn commit");
    wait_committed(&cluster, a, &["a1", "a2"]).await;
    wait_committed(&cluster, b, &["b1"]).await;
    for topic in [a, b] {
        let leader = cluster.wait_leader(0, topic, None, 1).await;
        let p = fetch_from(&cluster, cluster.index_of(leader), topic, 0).await;
        assert_eq!(
            control_batches(&p),
            1,
            "COMMIT marker on the remote leader of {topic}"
        );
    }

    // 2. An aborted transaction stays invisible.
    add_partitions(&cluster, &tid, pid, &[a, b]).await;
    produce_txn(&cluster, &tid, a, &["x1"], (pid.0, pid.1, 2)).await;
    produce_txn(&cluster, &tid, b, &["x2"], (pid.0, pid.1, 1)).await;
    assert_eq!(end_txn(&cluster, &tid, pid, false).await, 0, "EndTxn abort");
    wait_committed(&cluster, a, &["a1", "a2"]).await;
    wait_committed(&cluster, b, &["b1"]).await;

    // 3. The coordinator stops in the middle of two transactions (records produced, offsets
    // committed in one, no EndTxn): its successor reloads them; the first is committed by the
    // client's retried EndTxn, the second times out and is aborted.
    let group = "txn-group";
    add_partitions(&cluster, &tid, pid, &[a, b]).await;
    add_offsets(&cluster, &tid, pid, group).await;
    produce_txn(&cluster, &tid, a, &["m1"], (pid.0, pid.1, 3)).await;
    produce_txn(&cluster, &tid, b, &["m2"], (pid.0, pid.1, 2)).await;
    txn_offset_commit(&cluster, &tid, pid, group, a, 3).await;
    let other = (0..100)
        .map(|n| format!("short-{n}"))
        .find(|t| {
            // Same coordinator, found without a lookup per candidate.
            t != &tid && same_partition(t, &tid)
        })
        .expect("another id on the same coordinator partition");
    let pid2 = init_producer_id(&cluster, &other, 4_000).await;
    add_partitions(&cluster, &other, pid2, &[a]).await;
    produce_txn(&cluster, &other, a, &["z"], (pid2.0, pid2.1, 0)).await;

    cluster.stop_node(cluster.index_of(coord)).await;
    let successor = find_coordinator(&cluster, &tid, KEY_TXN).await;
    assert_ne!(successor, coord);
    let (seen, _) = committed_view(&cluster, a).await;
    assert_eq!(
        seen,
        vec!["a1", "a2"],
        "nothing of the open transactions is visible"
    );
    assert_eq!(
        end_txn(&cluster, &tid, pid, true).await,
        0,
        "EndTxn retried on the successor"
    );
    wait_committed(&cluster, b, &["b1", "m2"]).await;
    // `z` is aborted by the successor once its 4 s timeout passes.
    wait_committed(&cluster, a, &["a1", "a2", "m1"]).await;
    assert_eq!(
        offset_fetch(&cluster, group, a).await,
        3,
        "TxnOffsetCommit survived"
    );

    // The stopped coordinator comes back as a follower; the fenced producer of `other` must
    // start again (the abort bumped its epoch).
    let back = cluster.index_of(coord);
    cluster.start_node(back).await;
    let pid2b = init_producer_id(&cluster, &other, 60_000).await;
    assert_eq!(pid2b.0, pid2.0);
    assert!(
        pid2b.1 > pid2.1,
        "epoch bumped past the aborted transaction"
    );
    for i in 0..3 {
        cluster.stop_node(i).await;
    }
}

/// Whether two transactional ids map to the same `__transaction_state` partition (3 of them in
/// the test cluster), as the broker computes it.
fn same_partition(x: &str, y: &str) -> bool {
    strata::coordinator::partition_for(x, 3) == strata::coordinator::partition_for(y, 3)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn classic_group_survives_its_coordinator() {
    use strata::error::ErrorCode;
    init_tracing();
    let mut cluster = Cluster::start().await;
    cluster.wait_brokers(0, 3).await;
    let group = "classic";
    let topic = "grp-topic";
    let mut c = Client::connect(cluster.addr(0)).await;
    assert_eq!(create_topic_rf(&mut c, topic, 1, 3, &[]).await, 0);
    // `__transaction_state` (RF 3) is created while three brokers are up, as Kafka too
    // refuses to create it with fewer; it is probed at the end.
    find_coordinator(&cluster, "probe-0", KEY_TXN).await;

    // Join (KIP-394: the first join asks for a member id), sync, commit.
    let coord = find_coordinator(&cluster, group, KEY_GROUP).await;
    let mut gc = coordinator(&cluster, group, KEY_GROUP).await;
    let join = |member_id: String| join_group_request::JoinGroupRequest {
        group_id: group.into(),
        session_timeout_ms: 30_000,
        rebalance_timeout_ms: 30_000,
        member_id,
        protocol_type: "consumer".into(),
        protocols: vec![join_group_request::JoinGroupRequestProtocol {
            name: "range".into(),
            metadata: bytes::Bytes::from_static(b"m"),
            ..Default::default()
        }],
        ..Default::default()
    };
    let first = api_call!(
        gc,
        join_group_request::JoinGroupRequest,
        join_group_response::JoinGroupResponse,
        5,
        join(String::new())
    );
    assert_eq!(first.error_code, ErrorCode::MEMBER_ID_REQUIRED.code());
    let member = first.member_id.clone();
    let joined = api_call!(
        gc,
        join_group_request::JoinGroupRequest,
        join_group_response::JoinGroupResponse,
        5,
        join(member.clone())
    );
    assert_eq!(joined.error_code, 0, "JoinGroup");
    let generation = joined.generation_id;
    let synced = api_call!(
        gc,
        sync_group_request::SyncGroupRequest,
        sync_group_response::SyncGroupResponse,
        3,
        sync_group_request::SyncGroupRequest {
            group_id: group.into(),
            generation_id: generation,
            member_id: member.clone(),
            assignments: vec![sync_group_request::SyncGroupRequestAssignment {
                member_id: member.clone(),
                assignment: bytes::Bytes::from_static(b"assigned"),
                ..Default::default()
            }],
            ..Default::default()
        }
    );
    assert_eq!(synced.error_code, 0, "SyncGroup");
    let committed = api_call!(
        gc,
        offset_commit_request::OffsetCommitRequest,
        offset_commit_response::OffsetCommitResponse,
        7,
        offset_commit(group, generation, &member, topic, 42)
    );
    assert_eq!(
        committed.topics[0].partitions[0].error_code, 0,
        "OffsetCommit"
    );

    // The coordinator stops: its successor knows the member, its generation and the offsets.
    cluster.stop_node(cluster.index_of(coord)).await;
    let mut code = -1;
    for _ in 0..150 {
        let mut nc = coordinator(&cluster, group, KEY_GROUP).await;
        let r = api_call!(
            nc,
            heartbeat_request::HeartbeatRequest,
            heartbeat_response::HeartbeatResponse,
            3,
            heartbeat_request::HeartbeatRequest {
                group_id: group.into(),
                generation_id: generation,
                member_id: member.clone(),
                ..Default::default()
            }
        );
        code = r.error_code;
        if code != ErrorCode::NOT_COORDINATOR.code()
            && code != ErrorCode::COORDINATOR_NOT_AVAILABLE.code()
            && code != ErrorCode::COORDINATOR_LOAD_IN_PROGRESS.code()
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert_eq!(
        code, 0,
        "the successor knows generation {generation} and its member"
    );
    let successor = find_coordinator(&cluster, group, KEY_GROUP).await;
    assert_ne!(successor, coord);
    assert_eq!(offset_fetch(&cluster, group, topic).await, 42);

    // With the only other replica stopped too, no coordinator write can reach
    // min.insync.replicas: it is answered COORDINATOR_NOT_AVAILABLE, never acknowledged.
    let others: Vec<usize> = (0..3)
        .filter(|&i| cluster.nodes[i].running.is_some() && cluster.nodes[i].id != successor)
        .collect();
    assert_eq!(others.len(), 1);
    let mut probe = None;
    for n in 0..30 {
        let tid = format!("probe-{n}");
        if find_coordinator(&cluster, &tid, KEY_TXN).await == successor {
            // Known beforehand, so that the later InitProducerId needs no new producer id
            // (whose block the controller, without a quorum, could not hand out).
            init_producer_id(&cluster, &tid, 60_000).await;
            probe = Some(tid);
            break;
        }
    }
    cluster.stop_node(others[0]).await;
    let mut sc = Client::connect(cluster.addr(cluster.index_of(successor))).await;
    let unavailable = ErrorCode::COORDINATOR_NOT_AVAILABLE.code();
    let r = api_call!(
        sc,
        offset_commit_request::OffsetCommitRequest,
        offset_commit_response::OffsetCommitResponse,
        7,
        offset_commit(group, generation, &member, topic, 43)
    );
    assert_eq!(
        r.topics[0].partitions[0].error_code, unavailable,
        "OffsetCommit"
    );
    // A KIP-848 group on the same `__consumer_offsets` partition: joining writes records.
    let kip848 = (0..100)
        .map(|n| format!("consumer-{n}"))
        .find(|g| {
            strata::coordinator::partition_for(g, 3) == strata::coordinator::partition_for(group, 3)
        })
        .expect("a group on the same partition");
    let r = api_call!(
        sc,
        consumer_group_heartbeat_request::ConsumerGroupHeartbeatRequest,
        consumer_group_heartbeat_response::ConsumerGroupHeartbeatResponse,
        0,
        consumer_group_heartbeat_request::ConsumerGroupHeartbeatRequest {
            group_id: kip848,
            member_id: "m-1".into(),
            member_epoch: 0,
            rebalance_timeout_ms: 30_000,
            subscribed_topic_names: Some(vec![topic.into()]),
            topic_partitions: Some(vec![]),
            ..Default::default()
        }
    );
    assert_eq!(r.error_code, unavailable, "ConsumerGroupHeartbeat");
    // The transaction coordinator on the same node, likewise.
    if let Some(tid) = probe {
        let r = api_call!(
            sc,
            init_producer_id_request::InitProducerIdRequest,
            init_producer_id_response::InitProducerIdResponse,
            4,
            init_producer_id_request::InitProducerIdRequest {
                transactional_id: Some(tid),
                transaction_timeout_ms: 60_000,
                producer_id: -1,
                producer_epoch: -1,
                ..Default::default()
            }
        );
        assert_eq!(r.error_code, unavailable, "InitProducerId");
    }
    for i in 0..3 {
        cluster.stop_node(i).await;
    }
}

fn offset_commit(
    group: &str,
    generation: i32,
    member: &str,
    topic: &str,
    offset: i64,
) -> offset_commit_request::OffsetCommitRequest {
    use offset_commit_request::*;
    OffsetCommitRequest {
        group_id: group.into(),
        generation_id_or_member_epoch: generation,
        member_id: member.into(),
        retention_time_ms: -1,
        topics: vec![OffsetCommitRequestTopic {
            name: topic.into(),
            partitions: vec![OffsetCommitRequestPartition {
                partition_index: 0,
                committed_offset: offset,
                committed_leader_epoch: -1,
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    }
}

/// The `min.insync.replicas` of `topic` (its own setting, or the broker default), as
/// DescribeConfigs on node index `i` reports it.
async fn topic_min_isr(cluster: &Cluster, i: usize, topic: &str) -> (String, i8) {
    use describe_configs_request::*;
    let mut c = Client::connect(cluster.addr(i)).await;
    let r = api_call!(
        c,
        describe_configs_request::DescribeConfigsRequest,
        describe_configs_response::DescribeConfigsResponse,
        4,
        DescribeConfigsRequest {
            resources: vec![DescribeConfigsResource {
                resource_type: 2,
                resource_name: topic.into(),
                configuration_keys: Some(vec!["min.insync.replicas".into()]),
                ..Default::default()
            }],
            ..Default::default()
        }
    );
    assert_eq!(r.results[0].error_code, 0);
    let e = &r.results[0].configs[0];
    (e.value.clone().unwrap_or_default(), e.config_source)
}

/// Polls node index `i` until every partition of the transaction log has an ISR of `size`.
async fn wait_txn_log_isr(cluster: &Cluster, i: usize, size: usize) {
    for _ in 0..300 {
        let m = cluster.metadata(i, "__transaction_state").await;
        let ready = m.topics.first().is_some_and(|t| {
            !t.partitions.is_empty() && t.partitions.iter().all(|p| p.isr_nodes.len() == size)
        });
        if ready {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("the transaction log never had an ISR of {size}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_transaction_log_needs_transaction_state_log_min_isr_replicas() {
    use strata::error::ErrorCode;
    init_tracing();
    // The broker default lets one replica acknowledge: only the transaction log's own
    // `min.insync.replicas`, from `transaction.state.log.min.isr`, can refuse its writes.
    let mut cluster = Cluster::start_with(
        1,
        &["min.insync.replicas=1", "transaction.state.log.min.isr=3"],
    )
    .await;
    cluster.wait_brokers(0, 3).await;
    let tid = "isr-bound";
    init_producer_id(&cluster, tid, 60_000).await;
    assert_eq!(
        topic_min_isr(&cluster, 0, "__transaction_state").await,
        ("3".to_string(), 1),
        "a topic config (DYNAMIC_TOPIC_CONFIG) of the transaction log"
    );

    // A follower of every transaction log partition stops: once the ISR has shrunk to 2, the
    // coordinator's writes are refused before they are appended.
    let coord = find_coordinator(&cluster, tid, KEY_TXN).await;
    let coord_index = cluster.index_of(coord);
    let stopped = (0..3).find(|i| *i != coord_index).expect("another node");
    cluster.stop_node(stopped).await;
    wait_txn_log_isr(&cluster, coord_index, 2).await;
    let mut c = Client::connect(cluster.addr(coord_index)).await;
    assert_eq!(
        init_producer_id_once(&mut c, tid, 60_000).await.error_code,
        ErrorCode::COORDINATOR_NOT_AVAILABLE.code(),
        "NOT_ENOUGH_REPLICAS on the transaction log, as Kafka maps it"
    );

    // Back to three in-sync replicas: the coordinator writes again.
    cluster.start_node(stopped).await;
    wait_txn_log_isr(&cluster, coord_index, 3).await;
    init_producer_id(&cluster, tid, 60_000).await;
    for i in 0..3 {
        cluster.stop_node(i).await;
    }
}

/// Issue 12, item 9: the transaction coordinator must accept partitions it hosts no replica
/// of. With replication factor 1, each partition lives on one broker only; the coordinator
/// used to check its own replicas and answered UNKNOWN_TOPIC_OR_PARTITION for every partition
/// led elsewhere (replication factor 3 hid it: every broker hosts a replica).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn transactions_over_rf1_topics_led_apart_from_the_coordinator() {
    init_tracing();
    let mut cluster = Cluster::start().await;
    cluster.wait_brokers(0, 3).await;

    // Single-replica topics until every broker leads one; `min.insync.replicas=1` as a
    // single replica needs (the harness default is 2).
    let mut c = Client::connect(cluster.addr(0)).await;
    let mut rf1: Vec<(String, i32)> = Vec::new();
    for n in 0..12 {
        let topic = format!("rf1-{n}");
        let code = create_topic_rf(&mut c, &topic, 1, 1, &[("min.insync.replicas", "1")]).await;
        assert_eq!(code, 0, "create {topic}");
        let leader = cluster.wait_leader(0, &topic, None, 1).await;
        rf1.push((topic, leader));
        let led: std::collections::BTreeSet<i32> = rf1.iter().map(|(_, l)| *l).collect();
        if led.len() == 3 {
            break;
        }
    }
    let rf3 = "rf3-mixed";
    assert_eq!(create_topic_rf(&mut c, rf3, 1, 3, &[]).await, 0);
    cluster.wait_leader(0, rf3, None, 3).await;

    let tid = "rf1-producer";
    let coord = find_coordinator(&cluster, tid, KEY_TXN).await;
    let pid = init_producer_id(&cluster, tid, 60_000).await;
    let apart: Vec<&str> = rf1
        .iter()
        .filter(|(_, l)| *l != coord)
        .map(|(t, _)| t.as_str())
        .collect();
    assert!(!apart.is_empty(), "an RF-1 topic led apart from {coord}");

    // One transaction per topic, as the producer did (one per partition).
    let mut seq = std::collections::HashMap::new();
    for topic in &apart {
        let mut c = coordinator(&cluster, tid, KEY_TXN).await;
        let codes = common::txn::add_partitions_once(&mut c, tid, pid, &[topic]).await;
        assert_eq!(
            codes,
            vec![0],
            "AddPartitionsToTxn {topic} on coordinator {coord}"
        );
        produce_txn(&cluster, tid, topic, &["one"], (pid.0, pid.1, 0)).await;
        assert_eq!(end_txn(&cluster, tid, pid, true).await, 0, "EndTxn {topic}");
        wait_committed(&cluster, topic, &["one"]).await;
        seq.insert(topic.to_string(), 1);
    }

    // One transaction over an RF-1 topic led elsewhere and an RF-3 topic, aborted, then one
    // committed.
    let a = apart[0];
    add_partitions(&cluster, tid, pid, &[a, rf3]).await;
    produce_txn(&cluster, tid, a, &["gone"], (pid.0, pid.1, seq[a])).await;
    produce_txn(&cluster, tid, rf3, &["gone"], (pid.0, pid.1, 0)).await;
    assert_eq!(end_txn(&cluster, tid, pid, false).await, 0, "EndTxn abort");
    add_partitions(&cluster, tid, pid, &[a, rf3]).await;
    produce_txn(&cluster, tid, a, &["two"], (pid.0, pid.1, seq[a] + 1)).await;
    produce_txn(&cluster, tid, rf3, &["two"], (pid.0, pid.1, 1)).await;
    assert_eq!(end_txn(&cluster, tid, pid, true).await, 0, "EndTxn commit");
    wait_committed(&cluster, a, &["one", "two"]).await;
    wait_committed(&cluster, rf3, &["two"]).await;

    // A partition that exists nowhere is still refused.
    let mut c = coordinator(&cluster, tid, KEY_TXN).await;
    let codes = common::txn::add_partitions_once(&mut c, tid, pid, &["no-such-topic"]).await;
    assert_eq!(
        codes,
        vec![strata::error::ErrorCode::UNKNOWN_TOPIC_OR_PARTITION.code()]
    );
    for i in 0..3 {
        cluster.stop_node(i).await;
    }
}
