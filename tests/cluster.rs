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

/// A failed log dir on the leader (issue 6): the broker stops (our controller does not yet move
/// the leaderships of one dir, KIP-858), another ISR member leads with everything acknowledged,
/// and the refused append is nowhere.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_failed_log_dir_on_the_leader_moves_leadership() {
    let mut cluster = Cluster::start_with_log_dirs(2).await;
    cluster.wait_brokers(0, 3).await;
    let mut c = Client::connect(cluster.addr(0)).await;
    assert_eq!(
        create_topic_rf(&mut c, "disk", 1, 3, &[("min.insync.replicas", "2")]).await,
        0
    );
    let leader = cluster.wait_leader(0, "disk", None, 3).await;
    let li = cluster.index_of(leader);
    let mut lc = Client::connect(cluster.addr(li)).await;
    assert_eq!(produce_retrying(&mut lc, "disk", &[b"a"]).await, (0, 0));

    let running = cluster.nodes[li].running.as_ref().expect("leader runs");
    let log = running
        .broker
        .replicas
        .get("disk", 0)
        .expect("replica")
        .log
        .clone();
    let stopped = running.shutdown_token();
    log.log_dir().inject_io_failure();
    let (code, _) = common::txn::produce(&mut lc, "disk", batch(&[b"lost"], None)).await;
    assert_eq!(code, 56, "KAFKA_STORAGE_ERROR, not acknowledged");
    tokio::time::timeout(Duration::from_secs(5), stopped.cancelled())
        .await
        .expect("the broker stops on its failed log dir");
    cluster.stop_node(li).await;

    let fi = (li + 1) % 3;
    let new_leader = cluster.wait_leader(fi, "disk", Some(leader), 1).await;
    let mut nc = Client::connect(cluster.addr(cluster.index_of(new_leader))).await;
    assert_eq!(produce_retrying(&mut nc, "disk", &[b"b"]).await, (0, 1));
    let p = fetch_partition(&mut nc, "disk", 0, 0, 1 << 20).await;
    assert_eq!(values(&p), vec!["a", "b"]);
    for i in 0..3 {
        cluster.stop_node(i).await;
    }
}
