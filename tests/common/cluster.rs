//! Three Strata nodes in one process (each a real broker with its own listeners, data and
//! controller quorum member, talking over loopback TCP), and the client-side retries the
//! cluster tests need while leadership is being published.
#![allow(dead_code)]
use std::time::Duration;

use bytes::Bytes;
use strata::protocol::messages::*;
use strata::server::startup::{start, RunningBroker};

use super::{api_call, batch, Client};

/// A port no other node of this test process was given. Below Linux's ephemeral range
/// (32768-60999), so the kernel never hands it to an outgoing connection or a port-0 bind,
/// and a stopped node's port is never given again: another test of the same binary cannot
/// take it while the node's peers still know its address.
pub fn free_port() -> u16 {
    use std::sync::atomic::{AtomicU16, Ordering};
    static NEXT: AtomicU16 = AtomicU16::new(0);
    // Each test process starts in its own slice of 21000-30999.
    let base = 21_000 + (std::process::id() % 50) as u16 * 200;
    loop {
        let offset = NEXT.fetch_add(1, Ordering::Relaxed) % 10_000;
        let port = 21_000 + (base - 21_000 + offset) % 10_000;
        if std::net::TcpListener::bind(("127.0.0.1", port)).is_ok() {
            return port;
        }
    }
}

pub struct Node {
    pub id: i32,
    /// `process.roles`.
    pub roles: &'static str,
    pub broker_port: u16,
    pub running: Option<RunningBroker>,
}

pub struct Cluster {
    pub nodes: Vec<Node>,
    pub controller_ports: Vec<u16>,
    pub dir: tempfile::TempDir,
    /// Log dirs per node.
    pub log_dirs: usize,
    /// Broker keys set after (so over) the harness's own, on every node.
    pub extra_overrides: Vec<String>,
    /// When not empty, each broker also listens on INTERNAL (at this port), the
    /// `inter.broker.listener.name`, so that tests can secure it apart from the clients'
    /// PLAINTEXT listener.
    pub internal_ports: Vec<u16>,
}

impl Cluster {
    pub fn config(&self, i: usize) -> strata::config::BrokerConfig {
        let id = self.nodes[i].id;
        let voters: Vec<String> = self
            .nodes
            .iter()
            .zip(&self.controller_ports)
            .filter(|(n, _)| n.roles.contains("controller"))
            .map(|(n, p)| format!("{}@127.0.0.1:{p}", n.id))
            .collect();
        let roles = self.nodes[i].roles;
        let mut listeners = Vec::new();
        if roles.contains("broker") {
            listeners.push(format!(
                "PLAINTEXT://127.0.0.1:{}",
                self.nodes[i].broker_port
            ));
        }
        if roles.contains("broker") && !self.internal_ports.is_empty() {
            listeners.push(format!("INTERNAL://127.0.0.1:{}", self.internal_ports[i]));
        }
        if roles.contains("controller") {
            listeners.push(format!(
                "CONTROLLER://127.0.0.1:{}",
                self.controller_ports[i]
            ));
        }
        let overrides = vec![
            format!("node.id={id}"),
            format!("process.roles={roles}"),
            format!("listeners={}", listeners.join(",")),
            "controller.listener.names=CONTROLLER".into(),
            format!("controller.quorum.voters={}", voters.join(",")),
            format!(
                "log.dirs={}",
                (0..self.log_dirs)
                    .map(|d| {
                        let name = if d == 0 {
                            format!("n{id}")
                        } else {
                            format!("n{id}-{d}")
                        };
                        self.dir.path().join(name).display().to_string()
                    })
                    .collect::<Vec<_>>()
                    .join(",")
            ),
            "broker.heartbeat.interval.ms=200".into(),
            "broker.session.timeout.ms=2000".into(),
            // No admin listener unless a test asks (several clusters run at once).
            "strata.admin.listeners=".into(),
            "replica.lag.time.max.ms=2000".into(),
            // The internal topics replicated like Kafka's defaults, with few partitions so
            // that loading them on failover is quick.
            "offsets.topic.replication.factor=3".into(),
            "offsets.topic.num.partitions=3".into(),
            "transaction.state.log.replication.factor=3".into(),
            "transaction.state.log.num.partitions=3".into(),
            "share.coordinator.state.topic.replication.factor=3".into(),
            "share.coordinator.state.topic.num.partitions=3".into(),
            // Coordinator writes need two replicas, so one node alone cannot acknowledge them.
            "min.insync.replicas=2".into(),
        ];
        let internal = (!self.internal_ports.is_empty())
            .then(|| "inter.broker.listener.name=INTERNAL".to_string());
        let overrides: Vec<String> = overrides
            .into_iter()
            .chain(internal)
            .chain(self.extra_overrides.iter().cloned())
            .collect();
        strata::config::BrokerConfig::load(None, &overrides)
            .expect("config")
            .0
    }

    pub async fn start() -> Cluster {
        Self::start_with_log_dirs(1).await
    }

    pub async fn start_with_log_dirs(log_dirs: usize) -> Cluster {
        Self::start_with(log_dirs, &[]).await
    }

    /// A cluster whose nodes also get `overrides` (`key=value`).
    pub async fn start_with(log_dirs: usize, overrides: &[&str]) -> Cluster {
        Self::start_nodes(&["broker,controller"; 3], log_dirs, overrides).await
    }

    /// Nodes 1.. with the given `process.roles`; the controllers are the voters.
    pub async fn start_nodes(
        roles: &[&'static str],
        log_dirs: usize,
        overrides: &[&str],
    ) -> Cluster {
        let mut c = Self::new(roles, log_dirs, overrides, false);
        // Controllers first: a broker's start does not wait for them, but its clients do.
        let mut order: Vec<usize> = (0..roles.len()).collect();
        order.sort_by_key(|&i| !roles[i].contains("controller"));
        for i in order {
            c.start_node(i).await;
        }
        c
    }

    /// The nodes' ports and directory, none started (to format them first, or to start
    /// some). `internal_listener`: brokers get an INTERNAL inter-broker listener too.
    pub fn new(
        roles: &[&'static str],
        log_dirs: usize,
        overrides: &[&str],
        internal_listener: bool,
    ) -> Cluster {
        Cluster {
            nodes: (1..=roles.len() as i32)
                .zip(roles)
                .map(|(id, roles)| Node {
                    id,
                    roles,
                    broker_port: free_port(),
                    running: None,
                })
                .collect(),
            controller_ports: roles.iter().map(|_| free_port()).collect(),
            dir: tempfile::tempdir().unwrap(),
            log_dirs,
            extra_overrides: overrides.iter().map(|o| o.to_string()).collect(),
            internal_ports: if internal_listener {
                roles.iter().map(|_| free_port()).collect()
            } else {
                Vec::new()
            },
        }
    }

    pub fn controller_addr(&self, i: usize) -> std::net::SocketAddr {
        format!("127.0.0.1:{}", self.controller_ports[i])
            .parse()
            .unwrap()
    }

    pub async fn start_node(&mut self, i: usize) {
        let config = self.config(i);
        self.nodes[i].running = Some(
            start(config, strata::clock::system())
                .await
                .expect("node starts"),
        );
    }

    pub async fn stop_node(&mut self, i: usize) {
        if let Some(r) = self.nodes[i].running.take() {
            r.stop().await.unwrap();
        }
    }

    pub fn addr(&self, i: usize) -> std::net::SocketAddr {
        format!("127.0.0.1:{}", self.nodes[i].broker_port)
            .parse()
            .unwrap()
    }

    pub fn index_of(&self, id: i32) -> usize {
        self.nodes.iter().position(|n| n.id == id).unwrap()
    }

    pub async fn metadata(&self, i: usize, topic: &str) -> metadata_response::MetadataResponse {
        let mut c = Client::connect(self.addr(i)).await;
        let req = metadata_request::MetadataRequest {
            topics: Some(vec![metadata_request::MetadataRequestTopic {
                name: Some(topic.into()),
                ..Default::default()
            }]),
            allow_auto_topic_creation: false,
            ..Default::default()
        };
        api_call!(
            c,
            metadata_request::MetadataRequest,
            metadata_response::MetadataResponse,
            12,
            req
        )
    }

    /// Waits until node `i` reports `want` live brokers and a leader (other than `not`) with a
    /// full ISR of `isr_size` for partition 0 of `topic`; returns the leader.
    pub async fn wait_leader(
        &self,
        i: usize,
        topic: &str,
        not: Option<i32>,
        isr_size: usize,
    ) -> i32 {
        for _ in 0..300 {
            let m = self.metadata(i, topic).await;
            if let Some(p) = m
                .topics
                .first()
                .filter(|t| t.error_code == 0)
                .and_then(|t| t.partitions.first())
            {
                if p.leader_id >= 0 && Some(p.leader_id) != not && p.isr_nodes.len() >= isr_size {
                    return p.leader_id;
                }
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("no leader for {topic} seen from node index {i}");
    }

    pub async fn wait_brokers(&self, i: usize, want: usize) {
        for _ in 0..300 {
            if self.metadata(i, "none").await.brokers.len() == want {
                return;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("node index {i} never saw {want} brokers");
    }
}

pub fn values(p: &fetch_response::PartitionData) -> Vec<String> {
    let records = p.records.clone().unwrap_or_default();
    let mut out = Vec::new();
    let mut pos = 0;
    while pos + 61 <= records.len() {
        let h = strata::protocol::records::batch::parse_header(&records[pos..]).unwrap();
        let end = pos + h.total_size();
        for r in strata::protocol::records::decode_records(&records[pos..end], 1 << 20).unwrap() {
            out.push(String::from_utf8_lossy(r.value.as_deref().unwrap_or(b"")).into_owned());
        }
        pos = end;
    }
    out
}

/// Produces (acks=all) as a client does: the errors of a leadership still being published
/// (NOT_LEADER_OR_FOLLOWER, LEADER_NOT_AVAILABLE, UNKNOWN_TOPIC_OR_PARTITION, NOT_ENOUGH_REPLICAS)
/// are retried for a few seconds; anything else is returned.
pub async fn produce_retrying(c: &mut Client, topic: &str, values: &[&[u8]]) -> (i16, i64) {
    produce_batch_retrying(c, topic, batch(values, None)).await
}

/// [`produce_retrying`] of a prepared batch (transactional ones).
pub async fn produce_batch_retrying(c: &mut Client, topic: &str, records: Bytes) -> (i16, i64) {
    produce_batch_retrying_as(c, None, topic, records).await
}

/// As [`produce_batch_retrying`], from the producer of `transactional_id`.
pub async fn produce_batch_retrying_as(
    c: &mut Client,
    transactional_id: Option<&str>,
    topic: &str,
    records: Bytes,
) -> (i16, i64) {
    use strata::error::ErrorCode;
    let retriable = [
        ErrorCode::NOT_LEADER_OR_FOLLOWER,
        ErrorCode::LEADER_NOT_AVAILABLE,
        ErrorCode::UNKNOWN_TOPIC_OR_PARTITION,
        ErrorCode::NOT_ENOUGH_REPLICAS,
    ];
    let mut last = (0, -1);
    for _ in 0..100 {
        last = super::txn::produce_as(c, transactional_id, topic, records.clone()).await;
        if !retriable.iter().any(|e| e.code() == last.0) {
            return last;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    last
}

/// DescribeQuorum of the metadata partition at `version`, sent to `addr`.
pub async fn describe_quorum(
    addr: std::net::SocketAddr,
    version: i16,
) -> describe_quorum_response::DescribeQuorumResponse {
    use describe_quorum_request::*;
    let mut c = Client::connect(addr).await;
    api_call!(
        c,
        describe_quorum_request::DescribeQuorumRequest,
        describe_quorum_response::DescribeQuorumResponse,
        version,
        DescribeQuorumRequest {
            topics: vec![TopicData {
                topic_name: "__cluster_metadata".into(),
                partitions: vec![PartitionData {
                    partition_index: 0,
                    ..Default::default()
                }],
                ..Default::default()
            }],
            ..Default::default()
        }
    )
}
