//! Newtypes for the numbers of replication that must never be mixed up: broker ids, broker
//! epochs (one per registration, KIP-903), leader epochs and partition epochs (Kafka's
//! `PartitionRecord.leaderEpoch` / `partitionEpoch`).
use std::fmt;

/// A broker's `node.id`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct BrokerId(pub i32);

/// The epoch of one registration of a broker: a restarted broker gets a new one, so that the
/// controller can refuse ISR changes computed from an earlier incarnation (KIP-903).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct BrokerEpoch(pub i64);

/// The epoch of a partition's leadership; bumped by every leader change.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct LeaderEpoch(pub i32);

/// The version of a partition's state (leader, ISR, replicas); bumped by every change, so
/// that stale AlterPartition requests are refused (INVALID_UPDATE_VERSION).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PartitionEpoch(pub i32);

impl BrokerEpoch {
    /// Kafka's `-1`: the fetch did not say (Fetch before v15).
    pub const UNKNOWN: BrokerEpoch = BrokerEpoch(-1);
}

impl LeaderEpoch {
    pub fn next(self) -> LeaderEpoch {
        LeaderEpoch(self.0 + 1)
    }
}

impl PartitionEpoch {
    pub fn next(self) -> PartitionEpoch {
        PartitionEpoch(self.0 + 1)
    }
}

macro_rules! display_inner {
    ($($t:ty),*) => {$(
        impl fmt::Display for $t {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                self.0.fmt(f)
            }
        }
    )*};
}
display_inner!(BrokerId, BrokerEpoch, LeaderEpoch, PartitionEpoch);
