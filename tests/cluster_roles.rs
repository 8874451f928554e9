//! Kafka's `process.roles` split: one controller-only process (the lone voter) and three
//! broker-only processes that follow the metadata log as quorum observers. Replicated topics,
//! failover and a broker's restart work as in the combined mode; the controller serves only
//! the controller's APIs; DescribeQuorum lists the brokers as observers; the brokers ride
//! through a restart of the controller.
mod common;

use std::time::Duration;

use common::cluster::{describe_quorum, produce_retrying, values, Cluster};
use common::{api_call, create_topic_rf, fetch_partition, Client};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const ROLES: [&str; 4] = ["controller", "broker", "broker", "broker"];

/// A Metadata v1 request (no topics) on a raw socket: true when the peer closes instead of
/// answering.
async fn metadata_refused(addr: std::net::SocketAddr) -> bool {
    let mut s = tokio::net::TcpStream::connect(addr).await.expect("connect");
    let mut frame = Vec::new();
    frame.extend_from_slice(&14i32.to_be_bytes());
    frame.extend_from_slice(&3i16.to_be_bytes());
    frame.extend_from_slice(&1i16.to_be_bytes());
    frame.extend_from_slice(&7i32.to_be_bytes());
    frame.extend_from_slice(&(-1i16).to_be_bytes());
    frame.extend_from_slice(&(-1i32).to_be_bytes());
    s.write_all(&frame).await.expect("write");
    let mut buf = [0u8; 4];
    matches!(
        tokio::time::timeout(Duration::from_secs(5), s.read(&mut buf)).await,
        Ok(Ok(0)) | Ok(Err(_))
    )
}

/// DescribeCluster v2's brokers: (id, is_fenced).
async fn describe_cluster_v2(c: &mut Client, include_fenced_brokers: bool) -> Vec<(i32, bool)> {
    let r = api_call!(
        c,
        describe_cluster_request::DescribeClusterRequest,
        describe_cluster_response::DescribeClusterResponse,
        2,
        describe_cluster_request::DescribeClusterRequest {
            endpoint_type: 1,
            include_fenced_brokers,
            ..Default::default()
        }
    );
    assert_eq!(r.error_code, 0);
    r.brokers
        .iter()
        .map(|b| (b.broker_id, b.is_fenced))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn controller_only_and_broker_only_processes() {
    if let Ok(filter) = tracing_subscriber::EnvFilter::try_from_env("STRATA_LOG") {
        let _ = tracing_subscriber::fmt().with_env_filter(filter).try_init();
    }
    let mut cluster = Cluster::start_nodes(&ROLES, 1, &[]).await;
    // Only the broker-only processes register as brokers.
    cluster.wait_brokers(1, 3).await;
    let brokers: Vec<i32> = cluster
        .metadata(1, "none")
        .await
        .brokers
        .iter()
        .map(|b| b.node_id)
        .collect();
    assert!(
        !brokers.contains(&1),
        "the controller is not a broker: {brokers:?}"
    );

    // The controller answers only the controller's APIs.
    let controller = cluster.controller_addr(0);
    assert!(
        metadata_refused(controller).await,
        "Metadata on a controller"
    );
    let mut cc = Client::connect(controller).await;
    let versions = api_call!(
        cc,
        api_versions_request::ApiVersionsRequest,
        api_versions_response::ApiVersionsResponse,
        0,
        strata::protocol::messages::api_versions_request::ApiVersionsRequest::default()
    );
    let keys: Vec<i16> = versions.api_keys.iter().map(|k| k.api_key).collect();
    assert!(keys.contains(&55) && keys.contains(&62) && !keys.contains(&0));

    // A replicated topic over the three brokers, created through a broker (forwarded).
    let mut c = Client::connect(cluster.addr(1)).await;
    assert_eq!(
        create_topic_rf(&mut c, "split", 1, 3, &[("min.insync.replicas", "2")]).await,
        0
    );
    let leader = cluster.wait_leader(1, "split", None, 3).await;
    assert_ne!(leader, 1);
    let li = cluster.index_of(leader);
    let mut lc = Client::connect(cluster.addr(li)).await;
    assert_eq!(
        produce_retrying(&mut lc, "split", &[b"a", b"b"]).await,
        (0, 0)
    );

    // DescribeQuorum, sent to a broker and forwarded: the controller leads, the three
    // brokers are observers that have fetched.
    let q = describe_quorum(cluster.addr(1), 1).await;
    assert_eq!(q.error_code, 0);
    let p = &q.topics[0].partitions[0];
    assert_eq!(p.leader_id, 1);
    assert_eq!(
        p.current_voters
            .iter()
            .map(|v| v.replica_id)
            .collect::<Vec<_>>(),
        vec![1]
    );
    let mut observers: Vec<i32> = p.observers.iter().map(|o| o.replica_id).collect();
    observers.sort();
    assert_eq!(observers, vec![2, 3, 4]);
    assert!(p.observers.iter().all(|o| o.last_fetch_timestamp > 0));

    // The leader's broker stops: another ISR member leads with everything acknowledged.
    cluster.stop_node(li).await;
    let others: Vec<usize> = (1..4).filter(|i| *i != li).collect();
    let new_leader = cluster
        .wait_leader(others[0], "split", Some(leader), 1)
        .await;
    let ni = cluster.index_of(new_leader);
    let mut nc = Client::connect(cluster.addr(ni)).await;
    assert_eq!(produce_retrying(&mut nc, "split", &[b"c"]).await, (0, 2));
    // DescribeCluster v2 (KIP-1073): the stopped broker is fenced; listed, marked, only when
    // the request asks for fenced brokers.
    let mut fenced_seen = false;
    for _ in 0..100 {
        let listed = describe_cluster_v2(&mut nc, true).await;
        if listed.contains(&(leader, true)) {
            fenced_seen = true;
            assert!(listed
                .iter()
                .filter(|(id, _)| *id != leader)
                .all(|(_, f)| !f));
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(fenced_seen, "broker {leader} listed as fenced");
    let unfenced_only = describe_cluster_v2(&mut nc, false).await;
    assert!(!unfenced_only.iter().any(|(id, _)| *id == leader));
    assert_eq!(unfenced_only.len(), 2);
    assert_eq!(
        values(&fetch_partition(&mut nc, "split", 0, 0, 1 << 20).await),
        vec!["a", "b", "c"]
    );

    // It comes back (an observer starts from the whole image) and rejoins the ISR.
    cluster.start_node(li).await;
    cluster.wait_leader(ni, "split", None, 3).await;

    // The controller restarts; the brokers find it again and serve admin requests.
    cluster.stop_node(0).await;
    cluster.start_node(0).await;
    let mut ok = false;
    for _ in 0..100 {
        let mut c = Client::connect(cluster.addr(ni)).await;
        if create_topic_rf(&mut c, "after-restart", 1, 3, &[]).await == 0 {
            ok = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(ok, "topic created after the controller's restart");
    cluster.wait_leader(ni, "after-restart", None, 3).await;
    let mut nc = Client::connect(cluster.addr(ni)).await;
    assert_eq!(
        values(&fetch_partition(&mut nc, "split", 0, 0, 1 << 20).await),
        vec!["a", "b", "c"]
    );
    for i in 0..4 {
        cluster.stop_node(i).await;
    }
}
