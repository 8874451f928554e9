//! A three-node cluster in one process (each node a real broker with its own listeners,
//! data and controller quorum member, talking over loopback TCP): topic creation with a
//! replication factor through the controller, acks=all replication, and leader failover
//! when the leader stops.
mod common;

use std::time::Duration;

use common::cluster::{produce_retrying, values, Cluster};
use common::{api_call, batch, create_topic_rf, fetch_partition, Client};

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn replicated_topic_survives_its_leader() {
    if let Ok(filter) = tracing_subscriber::EnvFilter::try_from_env("STRATA_LOG") {
        let _ = tracing_subscriber::fmt().with_env_filter(filter).try_init();
    }
    let mut cluster = Cluster::start().await;
    cluster.wait_brokers(0, 3).await;

    // RF above the cluster size is refused, as Kafka does.
    let mut c = Client::connect(cluster.addr(1)).await;
    assert_eq!(
        create_topic_rf(&mut c, "too-big", 1, 4, &[]).await,
        strata::error::ErrorCode::INVALID_REPLICATION_FACTOR.code()
    );
    assert_eq!(
        create_topic_rf(&mut c, "rep", 1, 3, &[("min.insync.replicas", "2")]).await,
        0
    );
    let leader = cluster.wait_leader(0, "rep", None, 3).await;
    let li = cluster.index_of(leader);

    let mut lc = Client::connect(cluster.addr(li)).await;
    let (code, base) = produce_retrying(&mut lc, "rep", &[b"a", b"b"]).await;
    assert_eq!((code, base), (0, 0), "acks=all produce to the leader");
    let p = fetch_partition(&mut lc, "rep", 0, 0, 1 << 20).await;
    assert_eq!(p.high_watermark, 2);

    // A follower refuses clients with NOT_LEADER_OR_FOLLOWER and, from v10, names the leader
    // and its endpoint (KIP-951), once it has applied the partition's state.
    let fi = (li + 1) % 3;
    let mut fc = Client::connect(cluster.addr(fi)).await;
    let mut hinted = None;
    for _ in 0..100 {
        let r = api_call!(
            fc,
            produce_request::ProduceRequest,
            produce_response::ProduceResponse,
            11,
            common::txn::produce_req("rep", batch(&[b"x"], None))
        );
        let p = &r.responses[0].partition_responses[0];
        // Before it has applied the topic it does not know it (UNKNOWN_TOPIC_OR_PARTITION).
        use strata::error::ErrorCode;
        assert!(
            [
                ErrorCode::NOT_LEADER_OR_FOLLOWER.code(),
                ErrorCode::UNKNOWN_TOPIC_OR_PARTITION.code()
            ]
            .contains(&p.error_code),
            "a follower never takes a produce: {}",
            p.error_code
        );
        if p.error_code == ErrorCode::NOT_LEADER_OR_FOLLOWER.code()
            && p.current_leader.leader_id >= 0
        {
            hinted = Some((p.current_leader.leader_id, r.node_endpoints.clone()));
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let (hint, endpoints) = hinted.expect("the follower names the leader");
    assert_eq!(hint, leader);
    assert_eq!(endpoints.len(), 1);
    assert_eq!(endpoints[0].node_id, leader);
    assert_eq!(endpoints[0].port as u16, cluster.nodes[li].broker_port);

    // The leader stops: another ISR member takes over with everything acknowledged.
    cluster.stop_node(li).await;
    let new_leader = cluster.wait_leader(fi, "rep", Some(leader), 1).await;
    assert_ne!(new_leader, leader);
    let ni = cluster.index_of(new_leader);
    let mut nc = Client::connect(cluster.addr(ni)).await;
    let (code, base) = produce_retrying(&mut nc, "rep", &[b"c"]).await;
    assert_eq!((code, base), (0, 2), "acks=all produce to the new leader");
    let p = fetch_partition(&mut nc, "rep", 0, 0, 1 << 20).await;
    assert_eq!(values(&p), vec!["a", "b", "c"]);

    // The old leader comes back, catches up and rejoins the ISR.
    cluster.start_node(li).await;
    cluster.wait_leader(ni, "rep", None, 3).await;
    for i in 0..3 {
        cluster.stop_node(i).await;
    }
}

/// A failed log dir on a leader (issue 6, KIP-858): the broker stays up; the partitions of its
/// failed dir get new leaders from the rest of their ISRs, with every acks=all record, while it
/// keeps leading those of its healthy dir; the refused append is nowhere, and DescribeLogDirs
/// shows the dir offline.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_failed_log_dir_moves_only_its_own_leaderships() {
    if let Ok(filter) = tracing_subscriber::EnvFilter::try_from_env("STRATA_LOG") {
        let _ = tracing_subscriber::fmt().with_env_filter(filter).try_init();
    }
    let mut cluster = Cluster::start_with_log_dirs(2).await;
    cluster.wait_brokers(0, 3).await;
    let mut c = Client::connect(cluster.addr(0)).await;
    let topics: Vec<String> = (0..6).map(|i| format!("disk{i}")).collect();
    for t in &topics {
        assert_eq!(
            create_topic_rf(&mut c, t, 1, 3, &[("min.insync.replicas", "2")]).await,
            0
        );
    }
    let mut leaders = Vec::new();
    for t in &topics {
        let leader = cluster.wait_leader(0, t, None, 3).await;
        let mut lc = Client::connect(cluster.addr(cluster.index_of(leader))).await;
        let value = format!("before-{t}");
        assert_eq!(
            produce_retrying(&mut lc, t, &[value.as_bytes()]).await,
            (0, 0)
        );
        leaders.push(leader);
    }
    let dir_of = |cluster: &Cluster, i: usize, t: &str| {
        cluster.nodes[i]
            .running
            .as_ref()
            .expect("running")
            .broker
            .replicas
            .get(t, 0)
            .expect("replica")
            .log
            .log_dir()
            .clone()
    };
    // A leader whose led partitions sit in both of its dirs: the failed one and a healthy one.
    let (leader, failed, healthy) = leaders
        .iter()
        .enumerate()
        .find_map(|(a, l)| {
            let li = cluster.index_of(*l);
            let da = dir_of(&cluster, li, &topics[a]);
            leaders.iter().enumerate().find_map(|(b, m)| {
                (m == l && dir_of(&cluster, li, &topics[b]).path() != da.path())
                    .then_some((*l, a, b))
            })
        })
        .expect("a leader with led partitions in both dirs");
    let li = cluster.index_of(leader);
    let (failed_topic, healthy_topic) = (topics[failed].as_str(), topics[healthy].as_str());
    // The controller knows where the replicas are before the dir fails (AssignReplicasToDirs).
    let running = cluster.nodes[li].running.as_ref().expect("leader runs");
    for _ in 0..100 {
        let image = running.broker.cluster.image();
        let assigned = topics.iter().all(|t| {
            image
                .partition(t, 0)
                .is_some_and(|p| p.directory_of(leader) != [0; 16])
        });
        if assigned {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let failed_dir = dir_of(&cluster, li, failed_topic);
    let stopped = running.shutdown_token();
    failed_dir.inject_io_failure();
    let mut lc = Client::connect(cluster.addr(li)).await;
    let (code, _) = common::txn::produce(&mut lc, failed_topic, batch(&[b"lost"], None)).await;
    assert_ne!(code, 0, "the append in the failed dir is not acknowledged");

    let fi = (li + 1) % 3;
    let new_leader = cluster.wait_leader(fi, failed_topic, Some(leader), 2).await;
    let m = cluster.metadata(fi, failed_topic).await;
    assert!(
        !m.topics[0].partitions[0].isr_nodes.contains(&leader),
        "the offline replica left the ISR"
    );
    // The broker is still up and still leads its healthy dir's partition.
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(
        !stopped.is_cancelled(),
        "one failed dir does not stop the broker"
    );
    let m = cluster.metadata(fi, healthy_topic).await;
    assert_eq!(m.topics[0].partitions[0].leader_id, leader);
    assert_eq!(
        produce_retrying(&mut lc, healthy_topic, &[b"after"]).await,
        (0, 1)
    );
    // Every acks=all record is readable from the current leaders.
    let mut nc = Client::connect(cluster.addr(cluster.index_of(new_leader))).await;
    assert_eq!(
        produce_retrying(&mut nc, failed_topic, &[b"after"]).await,
        (0, 1)
    );
    for t in &topics {
        let l = cluster.wait_leader(fi, t, None, 2).await;
        let mut tc = Client::connect(cluster.addr(cluster.index_of(l))).await;
        let p = fetch_partition(&mut tc, t, 0, 0, 1 << 20).await;
        assert_eq!(p.error_code, 0, "{t}");
        let got = values(&p);
        assert_eq!(
            got.first().map(String::as_str),
            Some(format!("before-{t}").as_str()),
            "{t}"
        );
        assert!(!got.iter().any(|v| v == "lost"), "{t}: {got:?}");
    }
    // DescribeLogDirs on the broker: the failed dir offline, the other online.
    let logdirs = {
        use strata::protocol::messages::describe_log_dirs_request::*;
        api_call!(
            lc,
            describe_log_dirs_request::DescribeLogDirsRequest,
            describe_log_dirs_response::DescribeLogDirsResponse,
            4,
            DescribeLogDirsRequest {
                topics: None,
                ..Default::default()
            }
        )
    };
    for r in &logdirs.results {
        let want = if r.log_dir == failed_dir.path().display().to_string() {
            56
        } else {
            0
        };
        assert_eq!(r.error_code, want, "{}", r.log_dir);
    }
    assert_eq!(logdirs.results.len(), 2);
    for i in 0..3 {
        cluster.stop_node(i).await;
    }
}

/// A dir that cannot be loaded when a cluster member restarts (KIP-858): the broker starts on
/// its other dir and rejoins the ISRs of that dir's partitions, while the replicas of the
/// failed dir stay out of their ISRs and are not recreated elsewhere.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_dir_failing_at_start_up_keeps_only_its_replicas_out() {
    let mut cluster = Cluster::start_with_log_dirs(2).await;
    cluster.wait_brokers(0, 3).await;
    let mut c = Client::connect(cluster.addr(0)).await;
    for t in ["s0", "s1"] {
        assert_eq!(
            create_topic_rf(&mut c, t, 1, 3, &[("min.insync.replicas", "2")]).await,
            0
        );
        let leader = cluster.wait_leader(0, t, None, 3).await;
        let mut pc = Client::connect(cluster.addr(cluster.index_of(leader))).await;
        assert_eq!(produce_retrying(&mut pc, t, &[b"v"]).await.0, 0);
    }
    // Node index 2's replicas of s0 and s1 are in different dirs (least-loaded placement).
    let dir_of = |cluster: &Cluster, t: &str| {
        cluster.nodes[2]
            .running
            .as_ref()
            .expect("running")
            .broker
            .replicas
            .get(t, 0)
            .expect("replica")
            .log
            .dir()
            .parent()
            .expect("log dir")
            .to_path_buf()
    };
    let (d0, d1) = (dir_of(&cluster, "s0"), dir_of(&cluster, "s1"));
    assert_ne!(d0, d1);
    let id = cluster.nodes[2].id;
    cluster.stop_node(2).await;
    // s0's dir cannot be loaded: its recovery-point checkpoint is unreadable (EISDIR).
    let checkpoint = d0.join("recovery-point-offset-checkpoint");
    let _ = std::fs::remove_file(&checkpoint);
    std::fs::create_dir(&checkpoint).expect("mkdir");
    cluster.start_node(2).await;
    // The healthy dir's replica catches up and is back in its ISR.
    cluster.wait_leader(0, "s1", None, 3).await;
    let running = cluster.nodes[2].running.as_ref().expect("node runs");
    assert!(!running.shutdown_token().is_cancelled());
    assert!(running.broker.replicas.get("s0", 0).is_none());
    assert!(running.broker.replicas.get("s1", 0).is_some());
    // The failed dir's replica stays out of the ISR, and s0 keeps a leader elsewhere.
    tokio::time::sleep(Duration::from_millis(3_000)).await;
    let m = cluster.metadata(0, "s0").await;
    let p = &m.topics[0].partitions[0];
    assert!(p.leader_id >= 0 && p.leader_id != id, "{p:?}");
    assert!(!p.isr_nodes.contains(&id), "{p:?}");
    for i in 0..3 {
        cluster.stop_node(i).await;
    }
}

/// An acks=all produce waiting for a follower when its topic is deleted is answered as soon as
/// the leader drops the partition (NOT_LEADER_OR_FOLLOWER, as Kafka's DelayedProduce answers
/// for a partition it no longer hosts), not at its own timeout: the high watermark of a
/// deleted partition never moves again.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_acks_all_wait_ends_when_its_topic_is_deleted() {
    use strata::error::ErrorCode;
    use strata::protocol::messages::delete_topics_request;
    // The stopped follower stays in the ISR (and its broker unfenced) for the whole test.
    let mut cluster = Cluster::start_with(
        1,
        &[
            "replica.lag.time.max.ms=60000",
            "broker.session.timeout.ms=60000",
        ],
    )
    .await;
    cluster.wait_brokers(0, 3).await;
    let mut c = Client::connect(cluster.addr(0)).await;
    assert_eq!(create_topic_rf(&mut c, "doomed", 1, 3, &[]).await, 0);
    let leader = cluster.wait_leader(0, "doomed", None, 3).await;
    let li = cluster.index_of(leader);
    let mut lc = Client::connect(cluster.addr(li)).await;
    assert_eq!(produce_retrying(&mut lc, "doomed", &[b"a"]).await, (0, 0));
    let follower = (0..3).find(|&i| i != li).unwrap();
    cluster.stop_node(follower).await;

    let addr = cluster.addr(li);
    let waiting = tokio::spawn(async move {
        let mut pc = Client::connect(addr).await;
        let mut request = common::txn::produce_req("doomed", batch(&[b"b"], None));
        request.timeout_ms = 30_000;
        let started = std::time::Instant::now();
        let r = api_call!(
            pc,
            produce_request::ProduceRequest,
            produce_response::ProduceResponse,
            9,
            request
        );
        (
            r.responses[0].partition_responses[0].error_code,
            started.elapsed(),
        )
    });
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(
        !waiting.is_finished(),
        "the produce waits for the stopped follower"
    );
    let deleted = {
        use delete_topics_request::*;
        api_call!(
            lc,
            delete_topics_request::DeleteTopicsRequest,
            delete_topics_response::DeleteTopicsResponse,
            5,
            DeleteTopicsRequest {
                topic_names: vec!["doomed".into()],
                timeout_ms: 10_000,
                ..Default::default()
            }
        )
    };
    assert_eq!(deleted.responses[0].error_code, 0);
    let (code, took) = tokio::time::timeout(Duration::from_secs(15), waiting)
        .await
        .expect("the produce is answered")
        .unwrap();
    assert!(took < Duration::from_secs(15), "answered after {took:?}");
    assert!(
        [
            ErrorCode::NOT_LEADER_OR_FOLLOWER.code(),
            ErrorCode::UNKNOWN_TOPIC_OR_PARTITION.code()
        ]
        .contains(&code),
        "error {code} after {took:?}"
    );
    for i in 0..3 {
        cluster.stop_node(i).await;
    }
}
