//! This process's place in the controller quorum (Kafka's `process.roles`): a voter, which
//! runs raft and, with the controller role, the controller; or an observer, a broker-only
//! process that follows the metadata log from the quorum leader (KIP-595 observers).
use std::sync::Arc;

use bytes::Bytes;

use crate::controller::image::MetadataImage;
use crate::controller::raft::observer::ObserverQuorum;
use crate::controller::raft::RaftRpcReply;
use crate::controller::{Quorum, QuorumError, QuorumStatus, RaftQuorum};

pub enum MetadataQuorum {
    Voter(RaftQuorum<MetadataImage>),
    Observer(ObserverQuorum<MetadataImage>),
}

impl MetadataQuorum {
    /// The raft member, when this process is a voter.
    pub fn voter(&self) -> Option<&RaftQuorum<MetadataImage>> {
        match self {
            MetadataQuorum::Voter(q) => Some(q),
            MetadataQuorum::Observer(_) => None,
        }
    }

    /// The current voters and their controller listeners: the stored membership on a
    /// voter, the last answer's on an observer (both follow voter changes).
    pub fn voter_addresses(&self) -> std::collections::BTreeMap<u64, String> {
        match self {
            MetadataQuorum::Voter(q) => q.voter_addresses(),
            MetadataQuorum::Observer(q) => q.voter_addresses(),
        }
    }

    /// A raft RPC that reached this process; an observer has none to answer.
    pub async fn handle_rpc(&self, payload: Bytes) -> Bytes {
        match self {
            MetadataQuorum::Voter(q) => q.handle_rpc(payload).await,
            MetadataQuorum::Observer(_) => crate::controller::raft::network::encode(
                &RaftRpcReply::Error("not a controller quorum voter".into()),
            ),
        }
    }

    pub async fn shutdown(&self) {
        match self {
            MetadataQuorum::Voter(q) => q.shutdown().await,
            MetadataQuorum::Observer(q) => q.shutdown().await,
        }
    }
}

impl Quorum<MetadataImage> for MetadataQuorum {
    async fn propose(
        &self,
        records: Vec<crate::controller::records::MetadataRecord>,
    ) -> Result<u64, QuorumError> {
        match self {
            MetadataQuorum::Voter(q) => q.propose(records).await,
            MetadataQuorum::Observer(q) => q.propose(records).await,
        }
    }

    fn state(&self) -> tokio::sync::watch::Receiver<(u64, Arc<MetadataImage>)> {
        match self {
            MetadataQuorum::Voter(q) => q.state(),
            MetadataQuorum::Observer(q) => q.state(),
        }
    }

    fn leader(&self) -> Option<u64> {
        match self {
            MetadataQuorum::Voter(q) => q.leader(),
            MetadataQuorum::Observer(q) => q.leader(),
        }
    }

    fn is_leader(&self) -> bool {
        match self {
            MetadataQuorum::Voter(q) => q.is_leader(),
            MetadataQuorum::Observer(q) => q.is_leader(),
        }
    }

    fn status(&self) -> QuorumStatus {
        match self {
            MetadataQuorum::Voter(q) => q.status(),
            MetadataQuorum::Observer(q) => q.status(),
        }
    }
}
