//! Leadership changes and the leader side of replication for a [`Partition`]: applying the
//! controller's [`PartitionChange`] (Kafka's `Partition.makeLeader` / `makeFollower` entry),
//! serving follower fetches (`Partition.fetchRecords` with a replica id, including the
//! KIP-320/KIP-595 diverging-epoch check), moving the high watermark, ISR expansion and shrink
//! through AlterPartition, and the acks=all completion check of delayed produce
//! (`checkEnoughReplicasReachOffset`).
use bytes::Bytes;

use super::change::{AlterPartition, AlterPartitionError, PartitionChange};
use super::ids::{BrokerEpoch, BrokerId, LeaderEpoch};
use super::leader_state::LeaderState;
use super::partition::{compare_leader_epoch, Partition, PartitionError, PartitionState, Role};

/// A fetch from a follower, as the leader sees it.
#[derive(Debug, Clone)]
pub struct FollowerFetch {
    pub replica: BrokerId,
    pub broker_epoch: BrokerEpoch,
    pub fetch_offset: i64,
    /// The epoch of the last batch in the follower's log; -1 if it has none or does not say.
    pub last_fetched_epoch: i32,
    /// The leader epoch the follower believes current; -1 if it does not say.
    pub current_leader_epoch: i32,
    pub max_bytes: usize,
    pub now_ms: i64,
}

/// The leader's answer to one partition of a follower fetch.
#[derive(Debug, Clone, Default)]
pub struct FollowerFetchResult {
    pub records: Bytes,
    pub high_watermark: i64,
    pub last_stable_offset: i64,
    pub log_start_offset: i64,
    pub log_end_offset: i64,
    /// (epoch, end offset) when the follower's log diverges from ours (Fetch v12+).
    pub diverging_epoch: Option<(i32, i64)>,
    /// Whether the high watermark moved (delayed produce and fetch must be woken).
    pub high_watermark_changed: bool,
}

/// What applying a [`PartitionChange`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChangeOutcome {
    /// Older than (or the same as) what we have: ignored.
    Stale,
    /// We lead the partition (newly or still); `high_watermark_changed` as above.
    Leader { high_watermark_changed: bool },
    /// We follow `leader` (None: the partition has no leader now) at `leader_epoch`.
    Follower {
        leader: Option<BrokerId>,
        leader_epoch: LeaderEpoch,
    },
}

impl Partition {
    pub fn is_leader(&self) -> bool {
        self.state.is_leader()
    }

    /// The leader as this replica knows it.
    pub fn leader_id(&self) -> Option<BrokerId> {
        let st = self.state.lock();
        match &st.role {
            Role::Leader(l) => Some(l.local),
            Role::Follower(f) => f.leader,
        }
    }

    /// The committed ISR as this replica knows it.
    pub fn isr(&self) -> Vec<BrokerId> {
        let st = self.state.lock();
        match &st.role {
            Role::Leader(l) => l.isr.iter().copied().collect(),
            Role::Follower(f) => f.isr.clone(),
        }
    }

    pub fn replicas(&self) -> Vec<BrokerId> {
        let st = self.state.lock();
        match &st.role {
            Role::Leader(l) => l.replicas.clone(),
            Role::Follower(f) => f.replicas.clone(),
        }
    }

    /// A copy of the leader's replication state (None when following).
    pub fn leader_state(&self) -> Option<LeaderState> {
        self.state.lock().leader_state().cloned()
    }

    pub fn set_replica_lag_time_max_ms(&self, ms: i64) {
        self.state.lock().replica_lag_time_max_ms = ms;
    }

    /// Moves the high watermark to what the ISR allows; it never goes back while leading.
    /// Returns whether it moved.
    pub(super) fn maybe_increment_high_watermark(
        &self,
        st: &mut PartitionState,
        now_ms: i64,
    ) -> bool {
        let lag = st.replica_lag_time_max_ms;
        let Some(l) = st.leader_state() else {
            return false;
        };
        let bound = l.high_watermark_bound(self.log.log_end_offset(), now_ms, lag);
        if bound > st.high_watermark {
            st.high_watermark = bound;
            true
        } else {
            false
        }
    }

    /// Applies the controller's state for this partition: become (or stay) leader or follower.
    /// Changes older than what this replica has applied are ignored.
    pub fn apply_change(
        &self,
        change: &PartitionChange,
        local_broker_epoch: BrokerEpoch,
        now_ms: i64,
    ) -> Result<ChangeOutcome, PartitionError> {
        let mut st = self.state.lock();
        let current_partition_epoch = match &st.role {
            Role::Leader(l) => l.partition_epoch,
            Role::Follower(f) => f.partition_epoch,
        };
        let epoch = change.leader_epoch.0;
        if epoch < st.leader_epoch
            || (epoch == st.leader_epoch && change.partition_epoch <= current_partition_epoch)
        {
            return Ok(ChangeOutcome::Stale);
        }
        let log_end_offset = self.log.log_end_offset();
        if change.leader == Some(st.local) {
            let new_leadership = epoch > st.leader_epoch || st.leader_state().is_none();
            if new_leadership {
                // Kafka's makeLeader: the new epoch starts at our log end offset, so followers
                // truncate anything we do not have; follower states start afresh.
                self.log.assign_epoch_start_offset(epoch, log_end_offset)?;
                st.role = Role::Leader(LeaderState::new(
                    st.local,
                    local_broker_epoch,
                    change,
                    log_end_offset,
                    now_ms,
                ));
                st.leader_epoch = epoch;
                st.high_watermark = st.high_watermark.min(log_end_offset);
            } else if let Some(l) = st.leader_state_mut() {
                l.update(change, log_end_offset, now_ms);
            }
            let changed = self.maybe_increment_high_watermark(&mut st, now_ms);
            // Acks waiting on the previous epoch fail; waiting reads re-check.
            self.wake_waiters_locked(&st);
            return Ok(ChangeOutcome::Leader {
                high_watermark_changed: changed,
            });
        }
        // Kafka's makeFollower: stop leading, keep the log; the fetcher truncates as needed.
        st.role = Role::Follower(super::partition::FollowerView {
            leader: change.leader,
            partition_epoch: change.partition_epoch,
            replicas: change.replicas.clone(),
            isr: change.isr.clone(),
        });
        st.leader_epoch = epoch;
        st.high_watermark = st.high_watermark.min(log_end_offset);
        // Waiting acks and consumer fetches end with NOT_LEADER_OR_FOLLOWER.
        self.wake_waiters_locked(&st);
        Ok(ChangeOutcome::Follower {
            leader: change.leader,
            leader_epoch: change.leader_epoch,
        })
    }

    /// Serves one partition of a follower's fetch: everything up to our log end offset (not
    /// only the high watermark), after recording the follower's position, which may move the
    /// high watermark and propose the follower for the ISR.
    pub fn fetch_for_follower(
        &self,
        fetch: &FollowerFetch,
    ) -> Result<FollowerFetchResult, PartitionError> {
        let mut st = self.state.lock();
        let Some(leader) = st.leader_state() else {
            return Err(PartitionError::NotLeaderOrFollower);
        };
        compare_leader_epoch(st.leader_epoch, fetch.current_leader_epoch)?;
        if !leader.is_replica(fetch.replica) {
            return Err(PartitionError::NotLeaderOrFollower);
        }
        let log_start_offset = self.log.log_start_offset();
        let log_end_offset = self.log.log_end_offset();
        let mut result = FollowerFetchResult {
            records: Bytes::new(),
            high_watermark: st.high_watermark,
            last_stable_offset: st.high_watermark,
            log_start_offset,
            log_end_offset,
            diverging_epoch: None,
            high_watermark_changed: false,
        };
        if fetch.last_fetched_epoch >= 0 {
            // The follower's last epoch must end, in our log, at or after its fetch offset;
            // otherwise it has records we do not, and must truncate (KIP-320, KIP-595).
            let (epoch, end_offset) = self.log.end_offset_for_epoch(fetch.last_fetched_epoch);
            if epoch < fetch.last_fetched_epoch || end_offset < fetch.fetch_offset {
                result.diverging_epoch = Some((epoch, end_offset));
                return Ok(result);
            }
        }
        if fetch.fetch_offset < log_start_offset || fetch.fetch_offset > log_end_offset {
            return Err(PartitionError::OffsetOutOfRange {
                offset: fetch.fetch_offset,
                log_start_offset,
                log_end_offset,
            });
        }
        let (topic, index) = (self.topic.clone(), self.index);
        let high_watermark = st.high_watermark;
        if let Some(l) = st.leader_state_mut() {
            l.record_follower_fetch(
                fetch.replica,
                fetch.broker_epoch,
                fetch.fetch_offset,
                log_end_offset,
                fetch.now_ms,
            );
            l.maybe_expand_isr(fetch.replica, high_watermark, &topic, index);
        }
        result.high_watermark_changed = self.maybe_increment_high_watermark(&mut st, fetch.now_ms);
        if result.high_watermark_changed {
            // acks=all produces and consumer fetches wait for the high watermark.
            self.wake_waiters_locked(&st);
        }
        result.high_watermark = st.high_watermark;
        result.last_stable_offset = st.last_stable_offset();
        result.records = self
            .log
            .read(fetch.fetch_offset, fetch.max_bytes, log_end_offset, true)?
            .records;
        Ok(result)
    }

    /// Kafka's periodic `maybeShrinkIsr`: proposes dropping members not caught up within
    /// `replica.lag.time.max.ms`. The proposal waits in [`Partition::take_alter_partition`].
    pub fn maybe_shrink_isr(&self, now_ms: i64) {
        let mut st = self.state.lock();
        let lag = st.replica_lag_time_max_ms;
        let log_end_offset = self.log.log_end_offset();
        let (topic, index) = (self.topic.clone(), self.index);
        if let Some(l) = st.leader_state_mut() {
            l.maybe_shrink_isr(log_end_offset, now_ms, lag, &topic, index);
        }
    }

    /// The ISR change to send to the controller, once.
    pub fn take_alter_partition(&self) -> Option<AlterPartition> {
        let mut st = self.state.lock();
        let l = st.leader_state_mut()?;
        if !l.pending_unsent {
            return None;
        }
        l.pending_unsent = false;
        l.pending.clone()
    }

    /// The ISR change in flight to the controller, sent or not (tests, diagnostics).
    pub fn pending_alter_partition(&self) -> Option<AlterPartition> {
        self.state
            .lock()
            .leader_state_mut()
            .and_then(|l| l.pending.clone())
    }

    /// The controller refused `request` (or it was lost before reaching one). A refusal that
    /// says the controller holds a newer state (INVALID_UPDATE_VERSION, FENCED_LEADER_EPOCH)
    /// keeps the request in flight until metadata brings that state, as Kafka's
    /// `handleAlterPartitionError` does: the newer state may be this very request, committed
    /// by a controller whose answer was lost, and forgetting it would let the high watermark
    /// pass a member the controller added to the ISR (sim seed 606). Any other refusal says
    /// nothing was committed: the request is forgotten, so that a later fetch or shrink check
    /// can propose again.
    pub fn on_alter_partition_error(&self, request: &AlterPartition, error: AlterPartitionError) {
        let mut st = self.state.lock();
        if let Some(l) = st.leader_state_mut() {
            if l.pending.as_ref() == Some(request) {
                tracing::debug!(topic = %self.topic, partition = self.index, ?error, "AlterPartition refused");
                let newer_state_committed = matches!(
                    error,
                    AlterPartitionError::InvalidUpdateVersion
                        | AlterPartitionError::FencedLeaderEpoch
                );
                if !newer_state_committed {
                    l.pending = None;
                    l.pending_unsent = false;
                }
            }
        }
    }

    /// Whether an acks=all append that ends before `required_offset`, written under
    /// `leader_epoch`, is complete: None while the high watermark is below it; an error when
    /// leadership moved meanwhile or the ISR shrank below `min.insync.replicas`.
    pub fn acks_all_outcome(
        &self,
        required_offset: i64,
        leader_epoch: i32,
    ) -> Option<Result<(), PartitionError>> {
        if self.is_removed() {
            return Some(Err(PartitionError::NotLeaderOrFollower));
        }
        // The log dir went offline after the append: the record may not be on disk.
        if self.log.is_offline() {
            return Some(Err(self.log.log_dir().offline_error().into()));
        }
        let min_insync_replicas = self.config().min_insync_replicas;
        let st = self.state.lock();
        let Some(l) = st.leader_state() else {
            return Some(Err(PartitionError::NotLeaderOrFollower));
        };
        if st.leader_epoch != leader_epoch {
            return Some(Err(PartitionError::NotLeaderOrFollower));
        }
        if st.high_watermark < required_offset {
            return None;
        }
        let min_insync_replicas = l.effective_min_isr(min_insync_replicas);
        if (l.isr.len() as i32) < min_insync_replicas {
            Some(Err(PartitionError::NotEnoughReplicasAfterAppend {
                isr: l.isr.len(),
                min_insync_replicas,
            }))
        } else {
            Some(Ok(()))
        }
    }
}
