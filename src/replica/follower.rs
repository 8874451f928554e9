//! The follower side of a [`Partition`]: where to fetch from, appending the leader's batches
//! with their offsets and epochs kept (`UnifiedLog.appendAsFollower`), taking the leader's high
//! watermark, and truncating a divergent suffix. The decisions of *what* to do with a fetch
//! response live in `fetcher.rs`; this file only applies them under the partition lock,
//! re-checking that the leader epoch they were computed for is still current.
use bytes::Bytes;

use super::ids::{BrokerId, LeaderEpoch};
use super::load::{load_producer_state, replay_batch};
use super::partition::{Partition, PartitionError, Role};
use crate::protocol::records::batch::BatchIter;

/// Where a follower stands: what its next fetch asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FollowerPosition {
    pub leader: BrokerId,
    pub leader_epoch: LeaderEpoch,
    pub fetch_offset: i64,
    /// The epoch of the last batch in the log (-1 when empty).
    pub last_fetched_epoch: i32,
    pub log_start_offset: i64,
}

impl Partition {
    /// The fetch position, when this replica follows a known leader.
    pub fn follower_position(&self) -> Option<FollowerPosition> {
        let st = self.state.lock();
        let Role::Follower(f) = &st.role else {
            return None;
        };
        Some(FollowerPosition {
            leader: f.leader?,
            leader_epoch: LeaderEpoch(st.leader_epoch),
            fetch_offset: self.log.log_end_offset(),
            last_fetched_epoch: self.log.latest_epoch().unwrap_or(-1),
            log_start_offset: self.log.log_start_offset(),
        })
    }

    fn check_following(
        &self,
        st: &super::partition::PartitionState,
        leader_epoch: LeaderEpoch,
    ) -> Result<(), PartitionError> {
        match &st.role {
            Role::Follower(_) if st.leader_epoch == leader_epoch.0 => Ok(()),
            _ => Err(PartitionError::NotLeaderOrFollower),
        }
    }

    /// Appends batches fetched from the leader of `leader_epoch` and takes its high watermark
    /// (never above our own log end offset). Batches wholly below our log end offset are
    /// skipped. Returns the number of bytes appended.
    pub fn append_from_leader(
        &self,
        leader_epoch: LeaderEpoch,
        records: &Bytes,
        leader_high_watermark: i64,
        now_ms: i64,
    ) -> Result<usize, PartitionError> {
        let mut st = self.state.lock();
        self.check_following(&st, leader_epoch)?;
        let log_end_offset = self.log.log_end_offset();
        let mut start = None;
        let mut end = 0;
        for (h, range) in BatchIter::new(records) {
            if h.last_offset() < log_end_offset {
                continue;
            }
            start.get_or_insert(range.start);
            end = range.end;
        }
        let mut appended = 0;
        if let Some(start) = start {
            let batches = records.slice(start..end);
            appended = batches.len();
            self.log.append_as_follower(batches.clone(), now_ms)?;
            // Producer state follows the log, so that this replica can lead with it.
            for (h, _) in BatchIter::new(&batches) {
                replay_batch(&self.log, &mut st.producers, &h)?;
            }
        }
        let high_watermark = leader_high_watermark.min(self.log.log_end_offset());
        let changed = appended > 0 || high_watermark != st.high_watermark;
        st.high_watermark = high_watermark;
        if changed {
            self.wake_waiters_locked(&st);
        }
        Ok(appended)
    }

    /// Drops our log from `offset` on (a divergent suffix), as follower of `leader_epoch`.
    pub fn truncate_as_follower(
        &self,
        leader_epoch: LeaderEpoch,
        offset: i64,
    ) -> Result<(), PartitionError> {
        let mut st = self.state.lock();
        self.check_following(&st, leader_epoch)?;
        if offset >= self.log.log_end_offset() {
            return Ok(());
        }
        self.log.truncate_to(offset)?;
        st.high_watermark = st.high_watermark.min(offset);
        self.wake_waiters_locked(&st);
        let (producers, _) = load_producer_state(&self.log)?;
        st.producers = producers;
        Ok(())
    }

    /// Empties our log and restarts it at `offset` (the leader no longer has what we would
    /// fetch next: Kafka's `truncateFullyAndStartAt` on OFFSET_OUT_OF_RANGE).
    pub fn truncate_fully_as_follower(
        &self,
        leader_epoch: LeaderEpoch,
        offset: i64,
    ) -> Result<(), PartitionError> {
        let mut st = self.state.lock();
        self.check_following(&st, leader_epoch)?;
        self.log.truncate_fully_and_start_at(offset)?;
        st.high_watermark = offset;
        self.wake_waiters_locked(&st);
        let (producers, _) = load_producer_state(&self.log)?;
        st.producers = producers;
        Ok(())
    }

    /// The log's end offset for `epoch` (OffsetForLeaderEpoch on our own log).
    pub fn end_offset_for_epoch(&self, epoch: i32) -> (i32, i64) {
        self.log.end_offset_for_epoch(epoch)
    }
}
