//! The controller quorum as the rest of the broker sees it: propose records, watch the
//! applied state, ask who leads. Follows KRaft (KIP-500/KIP-595): the cluster metadata is a
//! replicated log of records, each voter applies committed records to its image, and
//! DescribeQuorum (KIP-595) reports the leader, its epoch and each replica's progress.
//! The consensus itself is openraft (see [`super::raft`]); this trait keeps it replaceable.
use std::collections::BTreeMap;
use std::future::Future;
use std::path::PathBuf;
use std::sync::Arc;

use crate::error::ErrorCode;

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

    /// Applies a record committed at log `offset` (the entry's index); the state may note it.
    fn apply_at(&mut self, offset: u64, record: &Self::Record) {
        let _ = offset;
        self.apply(record);
    }
}

#[derive(Debug, Clone)]
pub struct QuorumConfig {
    pub node_id: NodeId,
    /// Every raft RPC names the cluster it belongs to; a node answers only its own cluster's
    /// (KRaft answers INCONSISTENT_CLUSTER_ID), so a stale address never mixes two quorums.
    pub cluster_id: String,
    /// The configured voter set (`controller.quorum.voters`): node id -> "host:port" of its
    /// controller listener. It forms a new quorum; once a membership is stored (openraft
    /// keeps it in its log, as KRaft keeps VotersRecords) the stored one wins. Empty for a
    /// controller that joins through `bootstrap_servers` (KIP-853).
    pub voters: BTreeMap<NodeId, String>,
    /// Whether `voters` is Kafka's static quorum (`controller.quorum.voters` in the config,
    /// not the voters a formatted node starts with): then the address configured for a voter
    /// is where it is reached, whatever the stored membership records (a cluster restarted
    /// with its controller ports moved), as Kafka's kraft.version 0 voter set is the config.
    pub static_voters: bool,
    /// `controller.quorum.bootstrap.servers`: where a controller outside the membership asks
    /// to follow the quorum as a learner (an observer in KRaft terms) until it is added.
    pub bootstrap_servers: Vec<String>,
    /// This node's controller listener, as the leader should reach it once it joins.
    pub advertised_addr: String,
    /// Where the metadata log, vote and snapshot live, e.g. `<log.dirs[0]>/__cluster_metadata-0`.
    pub dir: PathBuf,
    pub election_timeout_min_ms: u64,
    pub election_timeout_max_ms: u64,
    pub heartbeat_interval_ms: u64,
    /// A snapshot is taken after this many entries so start-up replays only the tail.
    pub snapshot_every_entries: u64,
    /// The leader drops a learner (a controller that asked to follow but is not a voter)
    /// that has not answered for this long, as Kafka's leader forgets an observer.
    pub learner_session_timeout_ms: u64,
}

impl QuorumConfig {
    /// Timeouts in the range of KRaft's defaults scaled down: a lone voter elects itself in a
    /// few hundred milliseconds, a three-voter quorum fails over in about a second.
    pub fn new(node_id: NodeId, voters: BTreeMap<NodeId, String>, dir: PathBuf) -> Self {
        QuorumConfig {
            node_id,
            cluster_id: String::new(),
            voters,
            static_voters: false,
            bootstrap_servers: Vec::new(),
            advertised_addr: String::new(),
            dir,
            election_timeout_min_ms: 300,
            election_timeout_max_ms: 600,
            heartbeat_interval_ms: 100,
            snapshot_every_entries: 1000,
            learner_session_timeout_ms: 300_000,
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
            QuorumError::NotLeader { leader } => match leader {
                Some(id) => write!(f, "not the quorum leader (the leader is node {id})"),
                None => write!(f, "not the quorum leader (no leader is known)"),
            },
            QuorumError::Shutdown => write!(f, "quorum is shut down"),
            QuorumError::Io(e) => write!(f, "quorum io error: {e}"),
            QuorumError::Other(e) => write!(f, "quorum error: {e}"),
        }
    }
}

impl std::error::Error for QuorumError {}

/// Why a voter change (AddRaftVoter / RemoveRaftVoter, KIP-853) was refused; each maps to
/// the error Kafka's `AddVoterHandler` / `RemoveVoterHandler` answers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum VoterChangeError {
    /// NOT_LEADER_OR_FOLLOWER: only the quorum leader changes the voter set.
    NotLeader {
        leader: Option<NodeId>,
    },
    /// DUPLICATE_VOTER.
    DuplicateVoter,
    /// VOTER_NOT_FOUND: not a voter, or the last one.
    VoterNotFound,
    /// REQUEST_TIMED_OUT: another change is pending or not yet committed.
    ChangeInProgress,
    /// REQUEST_TIMED_OUT: the new voter did not catch up, or the change did not commit, in time.
    TimedOut,
    Shutdown,
    Other(String),
}

impl std::fmt::Display for VoterChangeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            VoterChangeError::NotLeader { leader } => match leader {
                Some(id) => write!(f, "not the quorum leader (the leader is node {id})"),
                None => write!(f, "not the quorum leader (no leader is known)"),
            },
            VoterChangeError::DuplicateVoter => write!(f, "the node is already a voter"),
            VoterChangeError::VoterNotFound => {
                write!(f, "the node is not a voter, or is the last voter")
            }
            VoterChangeError::ChangeInProgress => {
                write!(f, "a previous voter change has not completed")
            }
            VoterChangeError::TimedOut => write!(f, "the voter change timed out"),
            VoterChangeError::Shutdown => write!(f, "quorum is shut down"),
            VoterChangeError::Other(e) => write!(f, "voter change failed: {e}"),
        }
    }
}

impl std::error::Error for VoterChangeError {}

impl From<&VoterChangeError> for ErrorCode {
    /// AddRaftVoter / RemoveRaftVoter, as Kafka's `AddVoterHandler` / `RemoveVoterHandler`.
    fn from(e: &VoterChangeError) -> ErrorCode {
        match e {
            VoterChangeError::NotLeader { .. } | VoterChangeError::Shutdown => {
                ErrorCode::NOT_LEADER_OR_FOLLOWER
            }
            VoterChangeError::DuplicateVoter => ErrorCode::DUPLICATE_VOTER,
            VoterChangeError::VoterNotFound => ErrorCode::VOTER_NOT_FOUND,
            VoterChangeError::ChangeInProgress | VoterChangeError::TimedOut => {
                ErrorCode::REQUEST_TIMED_OUT
            }
            VoterChangeError::Other(_) => ErrorCode::UNKNOWN_SERVER_ERROR,
        }
    }
}

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
