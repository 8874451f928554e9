//! A broker's membership of a cluster (KRaft mode): the local member of the controller
//! quorum and its metadata image, the channel to the active controller, and the broker-side
//! tasks Kafka runs in `BrokerLifecycleManager` (registration, heartbeats, controlled
//! shutdown), `AlterPartitionManager` (ISR changes), `RPCProducerIdManager` (producer-id
//! blocks) and `BrokerMetadataPublisher` (applying each image to replicas and coordinators).
//!
//! Every process is a member: a voter, or with only the broker role an observer of the
//! quorum ([`member_quorum`]); without `controller.quorum.voters` it is the lone voter of its
//! own quorum ([`embedded`]).
pub mod admin;
pub mod bootstrap_scram;
pub mod channel;
pub mod create_topics;
pub mod dir_assignments;
pub mod embedded;
pub mod envelope;
pub mod format;
pub mod image_metrics;
pub mod leader_offsets;
pub mod lifecycle;
pub mod markers;
pub mod member_quorum;
pub mod producer_ids;
pub mod publisher;
pub mod replica_changes;
pub mod replica_fetcher;
pub mod share_persister;
pub mod startup;
pub mod txn_verifier;

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::controller::image::MetadataImage;
use crate::controller::service::ControllerService;
use crate::controller::Quorum;

pub use channel::{ChannelError, ControllerChannel};
pub use member_quorum::MetadataQuorum;

/// An advertised listener: where clients should connect.
#[derive(Debug, Clone)]
pub struct AdvertisedEndpoint {
    pub name: String,
    pub host: String,
    pub port: i32,
}

/// The parts of a broker its cluster tasks (registration, heartbeats, the publisher, ISR and
/// directory reports) act on. The `Broker` sits above `cluster` and holds its
/// [`ClusterContext`]; the tasks get these instead, so no dependency runs upward.
#[derive(Clone)]
pub struct BrokerParts {
    pub node_id: i32,
    pub cluster_id: String,
    pub config: crate::config::BrokerConfig,
    /// The effective config; the publisher applies the dynamic broker configs to it.
    pub dynamic: Arc<crate::config::DynamicBrokerConfig>,
    pub clock: crate::clock::SharedClock,
    pub replicas: Arc<crate::replica::ReplicaManager>,
    pub groups: Arc<crate::coordinator::GroupCoordinator>,
    pub txns: Arc<crate::coordinator::txn::TransactionCoordinator>,
    pub share_states: Arc<crate::coordinator::share_state::ShareStateCoordinator>,
    pub endpoints: Vec<AdvertisedEndpoint>,
    /// Counters of the events the cluster tasks see (ISR changes, elections, coordinator
    /// loads, topic deletions).
    pub metrics: Arc<crate::metrics::BrokerMetrics>,
}

impl BrokerParts {
    pub fn now_ms(&self) -> i64 {
        self.clock.now_ms()
    }

    /// A topic's partition settings from its overrides and the broker defaults.
    pub fn partition_config(
        &self,
        topic: &crate::controller::TopicMeta,
    ) -> crate::replica::PartitionConfig {
        crate::replica::PartitionConfig::for_topic(
            &topic.name,
            &topic.configs,
            &self.dynamic.current(),
        )
    }
}

pub struct ClusterContext {
    pub node_id: i32,
    pub quorum: Arc<MetadataQuorum>,
    /// Whether this process has the broker role (registers, hosts partitions, publishes).
    pub is_broker: bool,
    /// Present when this process has the controller role.
    pub controller: Option<Arc<ControllerService>>,
    pub channel: ControllerChannel,
    /// The listener other brokers fetch from (`inter.broker.listener.name` or
    /// `security.inter.broker.protocol`; else the first non-controller listener).
    pub inter_broker_listener: String,
    /// TLS and the SASL login for connections to other brokers' inter-broker listener.
    pub inter_broker_security: crate::net::peer::PeerSecurity,
    /// The SCRAM credentials this node was formatted with (`--add-scram`): accepted while
    /// the metadata log has no SCRAM credential yet (see `bootstrap_scram`).
    pub bootstrap_scram: crate::controller::scram::ScramCredentials,
    /// Listener names clients may be told about (every non-controller listener).
    pub client_listeners: Vec<String>,
    /// Voter id -> controller listener address, as configured (`controller.quorum.voters`,
    /// or as discovered through the bootstrap servers at start). The current set is
    /// [`ClusterContext::current_voters`].
    pub voters: BTreeMap<i32, String>,
    /// Topics whose auto-creation is under way.
    pub auto_creating: parking_lot::Mutex<std::collections::HashSet<String>>,
    /// Set once the active controller has said this broker's image includes its own
    /// registration (a heartbeat's `is_caught_up`); the publisher waits for it.
    pub caught_up: tokio::sync::watch::Sender<bool>,
    /// Set once the publisher has applied an image in which this broker is registered and
    /// unfenced: from then on it serves clients as Kafka brokers do after their first unfence.
    pub ready: tokio::sync::watch::Sender<bool>,
    /// When the active controller last acknowledged a heartbeat (ms on the broker's clock;
    /// 0: never): the readiness probe reads it.
    pub last_heartbeat_ok_ms: std::sync::atomic::AtomicI64,
    /// The image the publisher last applied to this broker (its replicas, coordinators and
    /// the topics the handlers read): admin requests answer once their change is here.
    pub published: tokio::sync::watch::Sender<Arc<MetadataImage>>,
}

impl ClusterContext {
    /// A topic of the image last published to this broker: handlers see a topic once its
    /// local replicas are open and its coordinators loaded (the publisher's order).
    pub fn topic(&self, name: &str) -> Option<crate::controller::TopicMeta> {
        self.published.borrow().topic_meta(name)
    }

    /// Every topic of the published image.
    pub fn topics(&self) -> Vec<crate::controller::TopicMeta> {
        self.published.borrow().topic_metas()
    }

    pub fn topic_name_by_id(&self, id: &crate::protocol::codec::Uuid) -> Option<String> {
        self.published.borrow().topic_name_by_id(id)
    }

    pub fn quorum_state(&self) -> tokio::sync::watch::Receiver<(u64, Arc<MetadataImage>)> {
        self.quorum.state()
    }

    pub fn image(&self) -> Arc<MetadataImage> {
        self.quorum.state().borrow().1.clone()
    }

    /// The metadata offset the local image reflects.
    pub fn image_offset(&self) -> u64 {
        self.quorum.state().borrow().0
    }

    /// The voters now (they change with AddRaftVoter / RemoveRaftVoter), falling back to
    /// the configured ones before the quorum has named any. A voter names its own listener
    /// as bound now (a lone voter's port is ephemeral) and, in a static quorum, the others'
    /// as configured.
    pub fn current_voters(&self) -> BTreeMap<i32, String> {
        let current = self.quorum.voter_addresses();
        if current.is_empty() {
            return self.voters.clone();
        }
        current
            .into_iter()
            .map(|(id, addr)| (id as i32, addr))
            .collect()
    }

    pub fn active_controller_id(&self) -> Option<i32> {
        self.quorum.leader().map(|id| id as i32)
    }

    /// `host:port` of a broker's inter-broker listener, from its registration.
    pub fn broker_address(&self, broker_id: i32) -> Option<String> {
        let image = self.image();
        let reg = image.brokers.get(&broker_id)?;
        let ep = reg
            .endpoints
            .iter()
            .find(|e| e.name == self.inter_broker_listener)
            .or_else(|| reg.endpoints.first())?;
        Some(format!("{}:{}", ep.host, ep.port))
    }

    /// Unfenced brokers as clients should reach them: (id, host, port, rack).
    pub fn client_brokers(&self) -> Vec<(i32, String, i32, Option<String>)> {
        self.client_brokers_on(None)
    }

    /// The live brokers' endpoints on `listener`, as Kafka answers Metadata, FindCoordinator
    /// and DescribeCluster with the listener the request came on (a client on a SASL_SSL
    /// listener must be sent to SASL_SSL ports); a broker without that listener is left out.
    /// None, or a listener that is not a client listener: the first client listener.
    pub fn client_brokers_on(
        &self,
        listener: Option<&str>,
    ) -> Vec<(i32, String, i32, Option<String>)> {
        self.brokers_on(listener, false)
            .into_iter()
            .map(|(b, _)| b)
            .collect()
    }

    /// As [`Self::client_brokers_on`], with the fenced brokers too when `include_fenced`
    /// (DescribeCluster v2, KIP-1073), each with whether it is fenced.
    pub fn brokers_on(
        &self,
        listener: Option<&str>,
        include_fenced: bool,
    ) -> Vec<((i32, String, i32, Option<String>), bool)> {
        let requested = listener.filter(|l| self.client_listeners.iter().any(|c| c == l));
        let image = self.image();
        image
            .brokers
            .values()
            .filter(|b| include_fenced || !b.fenced)
            .filter_map(|b| {
                let ep = match requested {
                    Some(l) => b.endpoints.iter().find(|e| e.name == l)?,
                    None => b
                        .endpoints
                        .iter()
                        .find(|e| self.client_listeners.first() == Some(&e.name))
                        .or_else(|| b.endpoints.first())?,
                };
                Some((
                    (b.broker_id, ep.host.clone(), ep.port, b.rack.clone()),
                    b.fenced,
                ))
            })
            .collect()
    }

    /// Whether a controller operation runs here (this node is the active controller) or is
    /// forwarded to the active one, as Kafka brokers forward admin requests (KIP-590).
    pub fn local_controller(&self) -> Option<Arc<ControllerService>> {
        self.controller.as_ref().filter(|c| c.is_active()).cloned()
    }

    /// Waits until the local image has applied `offset` (after a controller change committed
    /// there), at most `timeout_ms`; false on timeout.
    pub async fn wait_for_offset(&self, offset: u64, timeout_ms: u64) -> bool {
        let mut rx = self.quorum.state();
        let wait = async {
            loop {
                if rx.borrow_and_update().0 >= offset {
                    return true;
                }
                if rx.changed().await.is_err() {
                    return false;
                }
            }
        };
        tokio::time::timeout(std::time::Duration::from_millis(timeout_ms), wait)
            .await
            .unwrap_or(false)
    }
}

pub fn voters(config: &crate::config::BrokerConfig) -> BTreeMap<i32, String> {
    config
        .controller_quorum_voters
        .iter()
        .map(|v| (v.id, format!("{}:{}", v.host, v.port)))
        .collect()
}

/// The cluster id every member derives from the same `controller.quorum.voters`, so a new
/// cluster needs no formatting step (Kafka writes one id to every node with `kafka-storage
/// format`).
pub fn cluster_id_for(voters: &BTreeMap<i32, String>) -> String {
    let text: String = voters
        .iter()
        .map(|(id, addr)| format!("{id}@{addr},"))
        .collect();
    let mut bytes = [0u8; 16];
    for (i, chunk) in bytes.chunks_mut(4).enumerate() {
        let h = crc32c::crc32c(format!("{i}:{text}").as_bytes());
        chunk.copy_from_slice(&h.to_be_bytes());
    }
    crate::protocol::codec::Uuid(bytes).to_string()
}
