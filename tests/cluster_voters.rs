//! KIP-853 voter changes over the wire, as `kafka-metadata-quorum add-controller` /
//! `remove-controller` drive them: three controller-only voters and a broker; a fourth
//! controller started with only `controller.quorum.bootstrap.servers` follows the log (an
//! observer in DescribeQuorum), AddRaftVoter sent through the broker (which forwards it)
//! makes it a voter, RemoveRaftVoter sent to the leader's controller listener removes the
//! leader itself, the removed process is stopped, and topics are still created while
//! DescribeQuorum shows the new voter set.
mod common;

use std::collections::BTreeSet;
use std::time::Duration;

use common::cluster::{describe_quorum, free_port, Cluster};
use common::{api_call, create_topic_rf, Client};
use strata::protocol::messages::describe_quorum_response::DescribeQuorumResponse;

const ROLES: [&str; 4] = ["controller", "controller", "controller", "broker"];
const BROKER: usize = 3;

fn voters(q: &DescribeQuorumResponse) -> BTreeSet<i32> {
    q.topics[0].partitions[0]
        .current_voters
        .iter()
        .map(|v| v.replica_id)
        .collect()
}

fn observers(q: &DescribeQuorumResponse) -> BTreeSet<i32> {
    q.topics[0].partitions[0]
        .observers
        .iter()
        .map(|v| v.replica_id)
        .collect()
}

async fn add_voter(addr: std::net::SocketAddr, voter_id: i32, port: u16) -> i16 {
    add_voter_as(addr, voter_id, port, None, "CONTROLLER").await
}

async fn add_voter_as(
    addr: std::net::SocketAddr,
    voter_id: i32,
    port: u16,
    cluster_id: Option<&str>,
    listener: &str,
) -> i16 {
    use strata::protocol::messages::add_raft_voter_request::*;
    let mut c = Client::connect(addr).await;
    let r = api_call!(
        c,
        add_raft_voter_request::AddRaftVoterRequest,
        add_raft_voter_response::AddRaftVoterResponse,
        0,
        AddRaftVoterRequest {
            cluster_id: cluster_id.map(str::to_string),
            timeout_ms: 10_000,
            voter_id,
            listeners: vec![Listener {
                name: listener.into(),
                host: "127.0.0.1".into(),
                port,
                ..Default::default()
            }],
            ..Default::default()
        }
    );
    r.error_code
}

async fn remove_voter(addr: std::net::SocketAddr, voter_id: i32) -> i16 {
    use strata::protocol::messages::remove_raft_voter_request::*;
    let mut c = Client::connect(addr).await;
    let r = api_call!(
        c,
        remove_raft_voter_request::RemoveRaftVoterRequest,
        remove_raft_voter_response::RemoveRaftVoterResponse,
        0,
        RemoveRaftVoterRequest {
            cluster_id: None,
            voter_id,
            ..Default::default()
        }
    );
    r.error_code
}

async fn wait_for_quorum(
    addr: std::net::SocketAddr,
    what: &str,
    cond: impl Fn(&DescribeQuorumResponse) -> bool,
) -> DescribeQuorumResponse {
    for _ in 0..200 {
        let q = describe_quorum(addr, 2).await;
        if q.error_code == 0 && q.topics[0].partitions[0].leader_id >= 0 && cond(&q) {
            return q;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("DescribeQuorum never showed {what}");
}

async fn create_retrying(addr: std::net::SocketAddr, name: &str) {
    let mut code = -1;
    for _ in 0..100 {
        let mut c = Client::connect(addr).await;
        code = create_topic_rf(&mut c, name, 1, 1, &[]).await;
        if code == 0 {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("topic {name} not created: error {code}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_controller_is_added_and_the_leader_removed_over_the_wire() {
    if let Ok(filter) = tracing_subscriber::EnvFilter::try_from_env("STRATA_LOG") {
        let _ = tracing_subscriber::fmt().with_env_filter(filter).try_init();
    }
    let overrides = [
        "offsets.topic.replication.factor=1",
        "transaction.state.log.replication.factor=1",
        "min.insync.replicas=1",
    ];
    let mut cluster = Cluster::start_nodes(&ROLES, 1, &overrides).await;
    cluster.wait_brokers(BROKER, 1).await;
    let broker = cluster.addr(BROKER);
    create_retrying(broker, "before").await;

    // A fourth controller with only the bootstrap servers, as Kafka's add-controller guide
    // starts one; it follows the quorum and DescribeQuorum shows it as an observer.
    let port = free_port();
    let bootstrap: Vec<String> = (0..3)
        .map(|i| cluster.controller_addr(i).to_string())
        .collect();
    let new_config = strata::config::BrokerConfig::load(
        None,
        &[
            "node.id=5".to_string(),
            "process.roles=controller".into(),
            "strata.admin.listeners=".into(),
            format!("listeners=CONTROLLER://127.0.0.1:{port}"),
            "controller.listener.names=CONTROLLER".into(),
            format!(
                "controller.quorum.bootstrap.servers={}",
                bootstrap.join(",")
            ),
            format!("log.dirs={}", cluster.dir.path().join("n5").display()),
        ],
    )
    .expect("config")
    .0;
    let fifth = strata::server::startup::start(new_config, strata::clock::system())
        .await
        .expect("the new controller starts");
    let q = wait_for_quorum(broker, "the new controller as observer", |q| {
        observers(q).contains(&5)
    })
    .await;
    assert_eq!(voters(&q), BTreeSet::from([1, 2, 3]));
    let leader = q.topics[0].partitions[0].leader_id;
    let follower = (1..=3).find(|id| *id != leader).expect("a follower");

    // A controller that does not lead refuses; the broker forwards to the one that does.
    let follower_addr = cluster.controller_addr(cluster.index_of(follower));
    assert_eq!(
        add_voter(follower_addr, 5, port).await,
        6,
        "NOT_LEADER_OR_FOLLOWER"
    );
    assert_eq!(add_voter(broker, 5, port).await, 0, "AddRaftVoter");
    assert_eq!(add_voter(broker, 5, port).await, 126, "DUPLICATE_VOTER");
    let q = wait_for_quorum(broker, "four voters", |q| {
        voters(q) == BTreeSet::from([1, 2, 3, 5])
    })
    .await;
    let node5 = q
        .nodes
        .iter()
        .find(|n| n.node_id == 5)
        .expect("node 5 listed");
    assert_eq!(node5.listeners[0].port, port);

    // The leader removes itself on its own controller listener; the others elect another.
    let leader_index = cluster.index_of(leader);
    assert_eq!(
        remove_voter(cluster.controller_addr(leader_index), leader).await,
        0,
        "RemoveRaftVoter of the leader"
    );
    let mut remaining = BTreeSet::from([1, 2, 3, 5]);
    remaining.remove(&leader);
    cluster.stop_node(leader_index).await;
    let q = wait_for_quorum(broker, "the voters left and a new leader", |q| {
        voters(q) == remaining && q.topics[0].partitions[0].leader_id != leader
    })
    .await;
    assert!(remaining.contains(&q.topics[0].partitions[0].leader_id));
    assert_eq!(remove_voter(broker, leader).await, 127, "VOTER_NOT_FOUND");
    assert_eq!(remove_voter(broker, 42).await, 127, "VOTER_NOT_FOUND");

    // The metadata quorum still works: topics are created through the broker.
    create_retrying(broker, "after").await;
    let md = cluster.metadata(BROKER, "after").await;
    assert_eq!(md.topics[0].error_code, 0);

    fifth.stop().await.expect("stop the fifth");
    for i in 0..cluster.nodes.len() {
        cluster.stop_node(i).await;
    }
}

/// The whole quorum restarted with every controller port moved (a separate file: its own
/// story, one test binary).
#[path = "cluster_voters/moved_controllers.rs"]
mod moved_controllers;
