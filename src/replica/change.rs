//! The interface between the replica layer and the controller: the partition state the
//! controller decides ([`PartitionChange`], what KRaft's `PartitionRecord` and
//! `PartitionChangeRecord` amount to once applied) and the ISR changes a leader asks for
//! ([`AlterPartition`], Kafka's AlterPartition request, KIP-497, with KIP-903 broker epochs).
//!
//! The controller (`controller::partitions`, driven by the cluster service and by `sim/`)
//! answers `AlterPartition`s by committing a `PartitionChangeRecord`, and every broker applies
//! `PartitionRegistration::to_partition_change` of its metadata image. Nothing here does I/O.
use super::ids::{BrokerEpoch, BrokerId, LeaderEpoch, PartitionEpoch};
use crate::error::ErrorCode;
use crate::protocol::codec::Uuid;

/// The controller's view of one partition, applied by every replica of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartitionChange {
    pub topic: String,
    pub partition: i32,
    pub topic_id: Uuid,
    /// None while the partition has no leader (every ISR member is fenced).
    pub leader: Option<BrokerId>,
    pub leader_epoch: LeaderEpoch,
    pub partition_epoch: PartitionEpoch,
    /// Assigned replicas, preferred leader first.
    pub replicas: Vec<BrokerId>,
    pub isr: Vec<BrokerId>,
}

/// One member of a proposed ISR, with the broker epoch the leader saw it fetch with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IsrMember {
    pub broker: BrokerId,
    pub broker_epoch: BrokerEpoch,
}

/// A leader's request to change the ISR of a partition it leads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AlterPartition {
    pub topic: String,
    pub partition: i32,
    pub leader: BrokerId,
    pub leader_epoch: LeaderEpoch,
    /// The partition epoch the proposal was computed from.
    pub partition_epoch: PartitionEpoch,
    pub new_isr: Vec<IsrMember>,
}

impl AlterPartition {
    pub fn isr_ids(&self) -> Vec<BrokerId> {
        self.new_isr.iter().map(|m| m.broker).collect()
    }
}

/// Why the controller refused an AlterPartition (the subset of Kafka's errors it can return).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AlterPartitionError {
    /// The leader epoch is not the current one: the sender is no longer leader.
    FencedLeaderEpoch,
    /// The partition epoch is stale: the sender must wait for the newer state.
    InvalidUpdateVersion,
    /// A proposed new member is fenced, shutting down or from an earlier incarnation.
    IneligibleReplica,
    UnknownTopicOrPartition,
    /// The sender is not the partition's leader.
    NotLeaderOrFollower,
    /// The proposed ISR is malformed: a member that is not a replica, a duplicate, or no
    /// leader in it.
    InvalidRequest,
}

impl AlterPartitionError {
    /// The Kafka error code (the mapping below).
    pub fn code(self) -> ErrorCode {
        ErrorCode::from(self)
    }
}

impl From<AlterPartitionError> for ErrorCode {
    fn from(e: AlterPartitionError) -> ErrorCode {
        match e {
            AlterPartitionError::FencedLeaderEpoch => ErrorCode::FENCED_LEADER_EPOCH,
            AlterPartitionError::InvalidUpdateVersion => ErrorCode::INVALID_UPDATE_VERSION,
            AlterPartitionError::IneligibleReplica => ErrorCode::INELIGIBLE_REPLICA,
            AlterPartitionError::UnknownTopicOrPartition => ErrorCode::UNKNOWN_TOPIC_OR_PARTITION,
            AlterPartitionError::NotLeaderOrFollower => ErrorCode::NOT_LEADER_OR_FOLLOWER,
            AlterPartitionError::InvalidRequest => ErrorCode::INVALID_REQUEST,
        }
    }
}
