//! The replica fetcher (Kafka's `ReplicaFetcherThread` over `AbstractFetcherThread`), sans-io:
//! one [`FetchSession`] per source broker builds ordinary Fetch requests carrying our replica
//! id, and turns each partition of the response into a [`FetchAction`] — append, truncate to a
//! diverging epoch, start over at the leader's log start, or back off — by the pure
//! [`decide`]. Whoever owns the transport (the simulation, or a network task) moves the
//! requests and responses; the replica manager applies the actions to the partitions.
//!
//! Truncation follows Kafka's `getOffsetTruncationState` on the DivergingEpoch of Fetch v12+
//! (KIP-595 style): we never truncate on becoming a follower, only when the leader says where
//! our logs part.
use std::collections::{BTreeMap, BTreeSet};

use bytes::Bytes;

use super::follower::FollowerPosition;
use super::ids::{BrokerEpoch, BrokerId};
use crate::error::ErrorCode;
use crate::protocol::codec::Uuid;
use crate::protocol::messages::fetch_request::{FetchPartition, FetchRequest, FetchTopic};
use crate::protocol::messages::fetch_response::PartitionData;

/// The fetcher's settings (Kafka's `replica.fetch.*`).
#[derive(Debug, Clone)]
pub struct FetcherConfig {
    /// `replica.fetch.wait.max.ms`: how long the leader may hold an empty fetch.
    pub max_wait_ms: i32,
    /// `replica.fetch.max.bytes` per partition.
    pub partition_max_bytes: i32,
    /// `replica.fetch.response.max.bytes`.
    pub max_bytes: i32,
    /// `replica.fetch.backoff.ms`: pause after an error.
    pub backoff_ms: i64,
    /// Pause after an empty response; 0 when the leader long-polls (the network), a few
    /// milliseconds under simulation where the leader answers at once.
    pub idle_backoff_ms: i64,
    /// A request unanswered this long is given up (`replica.socket.timeout.ms`).
    pub request_timeout_ms: i64,
}

impl Default for FetcherConfig {
    fn default() -> Self {
        FetcherConfig {
            max_wait_ms: 500,
            partition_max_bytes: 1_048_576,
            max_bytes: 10_485_760,
            backoff_ms: 1_000,
            idle_backoff_ms: 0,
            request_timeout_ms: 30_000,
        }
    }
}

/// What to do with one partition of a fetch response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FetchAction {
    /// Append these batches (possibly none) and take the leader's high watermark.
    Append { records: Bytes, high_watermark: i64 },
    /// Our log diverges from the leader's: drop everything from `offset`. When `complete` is
    /// false the next fetch re-checks with our new last epoch.
    Truncate { offset: i64, complete: bool },
    /// The leader no longer has our fetch offset: empty the log and start at `offset`.
    TruncateFully { offset: i64 },
    /// A transient error (leader moving, epochs not yet known): retry after a backoff.
    Backoff(ErrorCode),
}

/// The follower's side of the decision: our log end offset and epoch lookups.
pub trait LocalLog {
    fn log_end_offset(&self) -> i64;
    fn high_watermark(&self) -> i64;
    /// (largest epoch <= `epoch` we know, its end offset), or (-1, -1).
    fn end_offset_for_epoch(&self, epoch: i32) -> (i32, i64);
}

/// Decides what one partition of a fetch response means for our log. Pure.
pub fn decide(
    pd: &PartitionData,
    requested: &FollowerPosition,
    local: &dyn LocalLog,
) -> FetchAction {
    let code = pd.error_code;
    if code == ErrorCode::OFFSET_OUT_OF_RANGE.code() {
        // With epochs a follower only falls off the start of the leader's log (retention or
        // DeleteRecords ran while it was away); the leader tells its log start offset.
        if pd.log_start_offset > requested.fetch_offset {
            return FetchAction::TruncateFully {
                offset: pd.log_start_offset,
            };
        }
        return FetchAction::Backoff(ErrorCode::OFFSET_OUT_OF_RANGE);
    }
    if code != 0 {
        let e = [
            ErrorCode::NOT_LEADER_OR_FOLLOWER,
            ErrorCode::FENCED_LEADER_EPOCH,
            ErrorCode::UNKNOWN_LEADER_EPOCH,
            ErrorCode::UNKNOWN_TOPIC_OR_PARTITION,
            ErrorCode::UNKNOWN_TOPIC_ID,
        ]
        .into_iter()
        .find(|e| e.code() == code)
        .unwrap_or(ErrorCode::UNKNOWN_SERVER_ERROR);
        return FetchAction::Backoff(e);
    }
    let diverging = &pd.diverging_epoch;
    if diverging.epoch >= 0 || diverging.end_offset >= 0 {
        return truncation_for(diverging.epoch, diverging.end_offset, local);
    }
    FetchAction::Append {
        records: pd.records.clone().unwrap_or_default(),
        high_watermark: pd.high_watermark,
    }
}

/// Kafka's `getOffsetTruncationState`: where to cut given the leader's end offset for
/// `leader_epoch`.
fn truncation_for(leader_epoch: i32, leader_end_offset: i64, local: &dyn LocalLog) -> FetchAction {
    let log_end_offset = local.log_end_offset();
    if leader_end_offset < 0 || leader_epoch < 0 {
        // The leader knows nothing of our epochs: fall back to what we know is committed.
        return FetchAction::Truncate {
            offset: local.high_watermark().min(log_end_offset),
            complete: true,
        };
    }
    let (local_epoch, local_end_offset) = local.end_offset_for_epoch(leader_epoch);
    if local_epoch < 0 {
        // We have no epoch at or below the leader's: cut at the leader's end offset.
        FetchAction::Truncate {
            offset: leader_end_offset.min(log_end_offset),
            complete: true,
        }
    } else if local_epoch != leader_epoch {
        // We do not know the leader's epoch: cut to the end of our largest earlier one and ask
        // again from there.
        FetchAction::Truncate {
            offset: local_end_offset.min(log_end_offset),
            complete: false,
        }
    } else {
        FetchAction::Truncate {
            offset: local_end_offset.min(leader_end_offset).min(log_end_offset),
            complete: true,
        }
    }
}

type TopicPartition = (String, i32);

/// A request on the wire, remembered with its id and the positions it asked for. Only the
/// response to this very request is accepted (a late answer to a request that timed out could
/// carry a truncation computed for a log we no longer have: Kafka's network client drops
/// the connection on timeout, and matches responses by correlation id), and only for
/// partitions still at the position asked for (same leader epoch, same fetch offset).
#[derive(Debug, Clone)]
pub struct InFlight {
    pub request_id: u64,
    pub sent_at_ms: i64,
    pub requested: BTreeMap<TopicPartition, FollowerPosition>,
}

/// Fetching from one source broker (Kafka runs one fetcher thread per source broker).
#[derive(Debug, Clone)]
pub struct FetchSession {
    pub source: BrokerId,
    pub partitions: BTreeSet<TopicPartition>,
    pub in_flight: Option<InFlight>,
    pub not_before_ms: i64,
}

impl FetchSession {
    pub fn new(source: BrokerId) -> Self {
        FetchSession {
            source,
            partitions: BTreeSet::new(),
            in_flight: None,
            not_before_ms: 0,
        }
    }

    /// Whether a new request may be sent now (nothing in flight, or it timed out).
    pub fn ready(&mut self, now_ms: i64, config: &FetcherConfig) -> bool {
        if let Some(f) = &self.in_flight {
            if now_ms - f.sent_at_ms < config.request_timeout_ms {
                return false;
            }
            self.in_flight = None;
        }
        now_ms >= self.not_before_ms && !self.partitions.is_empty()
    }
}

/// Builds the Fetch request for `positions` (topic id, position per partition).
pub fn build_fetch_request(
    local: BrokerId,
    broker_epoch: BrokerEpoch,
    positions: &[(TopicPartition, Uuid, FollowerPosition)],
    config: &FetcherConfig,
) -> FetchRequest {
    let mut topics: Vec<FetchTopic> = Vec::new();
    for ((topic, partition), topic_id, pos) in positions {
        let fp = FetchPartition {
            partition: *partition,
            current_leader_epoch: pos.leader_epoch.0,
            fetch_offset: pos.fetch_offset,
            last_fetched_epoch: pos.last_fetched_epoch,
            log_start_offset: pos.log_start_offset,
            partition_max_bytes: config.partition_max_bytes,
            ..Default::default()
        };
        match topics.iter_mut().find(|t| t.topic == *topic) {
            Some(t) => t.partitions.push(fp),
            None => topics.push(FetchTopic {
                topic: topic.clone(),
                topic_id: *topic_id,
                partitions: vec![fp],
                ..Default::default()
            }),
        }
    }
    let mut request = FetchRequest {
        replica_id: local.0,
        max_wait_ms: config.max_wait_ms,
        min_bytes: 1,
        max_bytes: config.max_bytes,
        isolation_level: 0,
        session_id: 0,
        session_epoch: -1,
        topics,
        ..Default::default()
    };
    request.replica_state.replica_id = local.0;
    request.replica_state.replica_epoch = broker_epoch.0;
    request
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::replica::ids::LeaderEpoch;

    struct Log {
        leo: i64,
        hw: i64,
        epochs: Vec<(i32, i64)>,
    }

    impl LocalLog for Log {
        fn log_end_offset(&self) -> i64 {
            self.leo
        }
        fn high_watermark(&self) -> i64 {
            self.hw
        }
        fn end_offset_for_epoch(&self, epoch: i32) -> (i32, i64) {
            let Some(i) = self.epochs.iter().rposition(|e| e.0 <= epoch) else {
                return (-1, -1);
            };
            let end = self.epochs.get(i + 1).map_or(self.leo, |e| e.1);
            (self.epochs[i].0, end)
        }
    }

    fn pos(fetch_offset: i64, last_fetched_epoch: i32) -> FollowerPosition {
        FollowerPosition {
            leader: BrokerId(1),
            leader_epoch: LeaderEpoch(5),
            fetch_offset,
            last_fetched_epoch,
            log_start_offset: 0,
        }
    }

    fn diverging(epoch: i32, end_offset: i64) -> PartitionData {
        let mut pd = PartitionData::default();
        pd.diverging_epoch.epoch = epoch;
        pd.diverging_epoch.end_offset = end_offset;
        pd
    }

    #[test]
    fn truncates_to_the_smaller_end_of_a_shared_epoch() {
        // We wrote 0-9 in epoch 1 and 10-14 in epoch 3; the leader's epoch 1 ended at 8.
        let log = Log {
            leo: 15,
            hw: 5,
            epochs: vec![(1, 0), (3, 10)],
        };
        assert_eq!(
            decide(&diverging(1, 8), &pos(15, 3), &log),
            FetchAction::Truncate {
                offset: 8,
                complete: true
            }
        );
    }

    #[test]
    fn unknown_leader_epoch_cuts_to_our_earlier_epoch_and_asks_again() {
        let log = Log {
            leo: 15,
            hw: 5,
            epochs: vec![(1, 0), (3, 10)],
        };
        // The leader answers with its epoch 2, which we never saw.
        assert_eq!(
            decide(&diverging(2, 12), &pos(15, 3), &log),
            FetchAction::Truncate {
                offset: 10,
                complete: false
            }
        );
    }

    #[test]
    fn errors_back_off_and_data_appends() {
        let log = Log {
            leo: 3,
            hw: 3,
            epochs: vec![(0, 0)],
        };
        let mut pd = PartitionData {
            error_code: ErrorCode::FENCED_LEADER_EPOCH.code(),
            ..Default::default()
        };
        assert_eq!(
            decide(&pd, &pos(3, 0), &log),
            FetchAction::Backoff(ErrorCode::FENCED_LEADER_EPOCH)
        );
        pd.error_code = 0;
        pd.high_watermark = 3;
        assert!(matches!(
            decide(&pd, &pos(3, 0), &log),
            FetchAction::Append {
                high_watermark: 3,
                ..
            }
        ));
        pd.error_code = ErrorCode::OFFSET_OUT_OF_RANGE.code();
        pd.log_start_offset = 50;
        assert_eq!(
            decide(&pd, &pos(3, 0), &log),
            FetchAction::TruncateFully { offset: 50 }
        );
    }
}
