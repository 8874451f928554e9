//! The controller quorum as the rest of the broker sees it: propose records, watch the
//! applied state, ask who leads. Follows KRaft (KIP-500/KIP-595): the cluster metadata is a
//! replicated log of records, each voter applies committed records to its image, and
//! DescribeQuorum (KIP-595) reports the leader, its epoch and each replica's progress.
//! The consensus itself is openraft (see [`super::raft`]); this trait keeps it replaceable.
use std::collections::BTreeMap;
use std::future::Future;
use std::path::PathBuf;
use std::sync::Arc;

/// A controller's node id; the same number as the Kafka `node.id`.
pub type NodeId = u64;

/// The state that the quorum replicates: built only by applying committed records in order.
pub trait ReplicatedState:
    Default + Clone + Send + Sync + serde::Serialize + serde::de::DeserializeOwned + 'static
{
    type Record: Clone
        + std::fmt::Debug
        + Send
        + Sync
        + serde::Serialize
        + serde::de::DeserializeOwned
        + 'static;
    fn apply(&mut self, record: &Self::Record);
}

#[derive(Debug, Clone)]
pub struct QuorumConfig {
    pub node_id: NodeId,
    /// Every raft RPC names the cluster it belongs to; a node answers only its own cluster's
    /// (KRaft answers INCONSISTENT_CLUSTER_ID), so a stale address never mixes two quorums.
    pub cluster_id: String,
    /// The static voter set: node id -> "host:port" of its controller listener.
    pub voters: BTreeMap<NodeId, String>,
    /// Where the metadata log, vote and snapshot live, e.g. `<log.dirs[0]>/__cluster_metadata-0`.
    pub dir: PathBuf,
    pub election_timeout_min_ms: u64,
    pub election_timeout_max_ms: u64,
    pub heartbeat_interval_ms: u64,
    /// A snapshot is taken after this many entries so start-up replays only the tail.
    pub snapshot_every_entries: u64,
}

impl QuorumConfig {
    /// Timeouts in the range of KRaft's defaults scaled down: a lone voter elects itself in a
    /// few hundred milliseconds, a three-voter quorum fails over in about a second.
    pub fn new(node_id: NodeId, voters: BTreeMap<NodeId, String>, dir: PathBuf) -> Self {
        QuorumConfig {
            node_id,
            cluster_id: String::new(),
            voters,
            dir,
            election_timeout_min_ms: 300,
            election_timeout_max_ms: 600,
            heartbeat_interval_ms: 100,
            snapshot_every_entries: 1000,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum QuorumError {
    /// This node is not the leader; `leader` is the current leader when known.
    NotLeader {
        leader: Option<NodeId>,
    },
    Shutdown,
    Io(String),
    Other(String),
}

impl std::fmt::Display for QuorumError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            QuorumError::NotLeader { leader } => {
                write!(f, "not the quorum leader (leader: {leader:?})")
            }
            QuorumError::Shutdown => write!(f, "quorum is shut down"),
            QuorumError::Io(e) => write!(f, "quorum io error: {e}"),
            QuorumError::Other(e) => write!(f, "quorum error: {e}"),
        }
    }
}

impl std::error::Error for QuorumError {}

/// What DescribeQuorum reports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QuorumStatus {
    pub leader_id: Option<NodeId>,
    /// The raft term.
    pub leader_epoch: u64,
    /// The committed (and locally applied) index.
    pub high_watermark: u64,
    pub voters: Vec<ReplicaStatus>,
    pub observers: Vec<ReplicaStatus>,
}

/// One replica's progress as seen by the leader; -1 when unknown (as in DescribeQuorum).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReplicaStatus {
    pub node_id: NodeId,
    pub log_end_offset: i64,
    pub last_fetch_timestamp_ms: i64,
    pub last_caught_up_timestamp_ms: i64,
}

pub trait Quorum<S: ReplicatedState>: Send + Sync {
    /// Appends records as one entry; resolves once committed AND applied to the local state;
    /// returns the entry's index. Fails with NotLeader on a non-leader.
    fn propose(
        &self,
        records: Vec<S::Record>,
    ) -> impl Future<Output = Result<u64, QuorumError>> + Send;
    /// The latest applied state and the index it reflects; changes are published on a watch.
    fn state(&self) -> tokio::sync::watch::Receiver<(u64, Arc<S>)>;
    fn leader(&self) -> Option<NodeId>;
    fn is_leader(&self) -> bool;
    fn status(&self) -> QuorumStatus;
}
