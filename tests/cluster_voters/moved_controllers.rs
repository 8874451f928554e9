//! A whole cluster restarted on the same data dirs with every controller listener moved (the
//! cluster compat suite's restart on new ports). The raft log still stores the old addresses
//! of the voters; the quorum must form on the new ones, as Kafka's does:
//! - static voters (`controller.quorum.voters` names the new ports): the configured address
//!   of a voter wins over the stored one (Kafka's kraft.version 0 voter set is the config);
//! - a dynamic quorum (formatted with `--initial-controllers`, only
//!   `controller.quorum.bootstrap.servers` in the config, pointing at the new ports): the
//!   voters find each other through the bootstrap servers and each announces its new
//!   listener, which the leader stores (Kafka's UpdateRaftVoter).
//!
//! Both end with a leader, a topic created (a committed metadata write) and DescribeQuorum
//! naming the new ports.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::common::cluster::{describe_quorum, free_port, Cluster};
use crate::common::{create_topic_rf, Client};
use strata::protocol::messages::describe_quorum_response::DescribeQuorumResponse;

/// Voter id -> controller listener port, as DescribeQuorum v2 lists them.
fn listed_ports(q: &DescribeQuorumResponse) -> BTreeMap<i32, u16> {
    q.nodes
        .iter()
        .filter_map(|n| n.listeners.first().map(|l| (n.node_id, l.port)))
        .collect()
}

/// Waits (at most 30 s, half the compat suite's patience) until `addr` reports a leader and
/// lists `ports` for the voters.
async fn wait_for_voters_at(
    addr: std::net::SocketAddr,
    ports: &BTreeMap<i32, u16>,
) -> DescribeQuorumResponse {
    let mut last = None;
    for _ in 0..300 {
        let q = describe_quorum(addr, 2).await;
        if q.error_code == 0
            && q.topics[0].partitions[0].leader_id >= 0
            && &listed_ports(&q) == ports
        {
            return q;
        }
        last = Some((
            q.error_code,
            q.topics.first().map(|t| t.partitions[0].leader_id),
            listed_ports(&q),
        ));
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("no leader with the voters at {ports:?}; last DescribeQuorum: {last:?}");
}

async fn create_retrying(addr: std::net::SocketAddr, name: &str) {
    let mut code = -1;
    for _ in 0..150 {
        let mut c = Client::connect(addr).await;
        code = create_topic_rf(&mut c, name, 1, 3, &[]).await;
        if code == 0 {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("topic {name} not created: error {code}");
}

fn ports_of(cluster: &Cluster) -> BTreeMap<i32, u16> {
    cluster
        .nodes
        .iter()
        .zip(&cluster.controller_ports)
        .map(|(n, p)| (n.id, *p))
        .collect()
}

/// Stops every node and moves every controller listener (the data dirs stay).
async fn stop_and_move_controller_ports(cluster: &mut Cluster) {
    for i in 0..cluster.nodes.len() {
        cluster.stop_node(i).await;
    }
    let old = cluster.controller_ports.clone();
    cluster.controller_ports = old.iter().map(|_| free_port()).collect();
    assert!(cluster.controller_ports.iter().all(|p| !old.contains(p)));
}

async fn start_all(cluster: &mut Cluster) {
    for i in 0..cluster.nodes.len() {
        cluster.start_node(i).await;
    }
}

fn init_tracing() {
    if let Ok(filter) = tracing_subscriber::EnvFilter::try_from_env("STRATA_LOG") {
        let _ = tracing_subscriber::fmt().with_env_filter(filter).try_init();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn static_voters_restarted_on_new_controller_ports_form_a_quorum() {
    init_tracing();
    let mut cluster = Cluster::start().await;
    cluster.wait_brokers(0, 3).await;
    create_retrying(cluster.addr(0), "before").await;
    wait_for_voters_at(cluster.addr(0), &ports_of(&cluster)).await;

    stop_and_move_controller_ports(&mut cluster).await;
    start_all(&mut cluster).await;

    let q = wait_for_voters_at(cluster.addr(1), &ports_of(&cluster)).await;
    assert!((1..=3).contains(&q.topics[0].partitions[0].leader_id));
    create_retrying(cluster.addr(2), "after").await;
    cluster.wait_leader(0, "after", None, 3).await;
    // The metadata written before the move is still there.
    cluster.wait_leader(0, "before", None, 3).await;

    for i in 0..cluster.nodes.len() {
        cluster.stop_node(i).await;
    }
}

/// Points `controller.quorum.voters` away and `controller.quorum.bootstrap.servers` at the
/// controllers' current ports (Kafka 4's dynamic quorum configuration).
fn use_bootstrap_servers(cluster: &mut Cluster) {
    let servers: Vec<String> = cluster
        .controller_ports
        .iter()
        .map(|p| format!("127.0.0.1:{p}"))
        .collect();
    cluster.extra_overrides = vec![
        "controller.quorum.voters=".to_string(),
        format!("controller.quorum.bootstrap.servers={}", servers.join(",")),
    ];
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_dynamic_quorum_restarted_on_new_controller_ports_forms_a_quorum() {
    use strata::cluster::format::{format, FormatOptions};
    init_tracing();
    let mut cluster = Cluster::new(&["broker,controller"; 3], 1, &[], false);
    use_bootstrap_servers(&mut cluster);
    let initial: Vec<String> = cluster
        .nodes
        .iter()
        .zip(&cluster.controller_ports)
        .map(|(n, p)| {
            let dir_id = strata::cluster::format::random_uuid();
            format!("{}@127.0.0.1:{p}:{dir_id}", n.id)
        })
        .collect();
    let cluster_id = strata::cluster::format::random_uuid();
    for i in 0..cluster.nodes.len() {
        let options = FormatOptions {
            cluster_id: cluster_id.clone(),
            initial_controllers: Some(initial.join(",")),
            ..Default::default()
        };
        format(&cluster.config(i), &options).expect("format");
    }
    start_all(&mut cluster).await;
    cluster.wait_brokers(0, 3).await;
    create_retrying(cluster.addr(0), "before").await;
    wait_for_voters_at(cluster.addr(0), &ports_of(&cluster)).await;

    stop_and_move_controller_ports(&mut cluster).await;
    use_bootstrap_servers(&mut cluster);
    start_all(&mut cluster).await;

    let q = wait_for_voters_at(cluster.addr(1), &ports_of(&cluster)).await;
    assert!((1..=3).contains(&q.topics[0].partitions[0].leader_id));
    create_retrying(cluster.addr(2), "after").await;
    cluster.wait_leader(0, "after", None, 3).await;
    cluster.wait_leader(0, "before", None, 3).await;

    for i in 0..cluster.nodes.len() {
        cluster.stop_node(i).await;
    }
}
