//! Transactions on a leader's partition: the COMMIT and ABORT markers the transaction
//! coordinator writes (Kafka's `WriteTxnMarkers` path, KIP-98) and the aborted transactions a
//! read_committed fetch skips (the `.txnindex`).
use super::partition::{Partition, PartitionError};
use crate::protocol::records::batch;
use crate::protocol::records::control::{build_end_txn_marker_batch, MarkerSpec};
use crate::storage::AbortedTxn;

impl Partition {
    /// [`Partition::write_marker`] for a producer of transaction version 0/1.
    pub fn write_txn_marker(
        &self,
        producer_id: i64,
        producer_epoch: i16,
        commit: bool,
        coordinator_epoch: i32,
        now_ms: i64,
    ) -> Result<i64, PartitionError> {
        let marker = MarkerSpec {
            producer_id,
            producer_epoch,
            commit,
            coordinator_epoch,
            transaction_version: 0,
        };
        self.write_marker(&marker, now_ms)
    }

    /// Writes a transaction marker (COMMIT or ABORT control batch) for a producer, as the
    /// transaction coordinator's WriteTxnMarkers does, and moves the last stable offset. An
    /// abort's transaction goes to the `.txnindex` of the segment holding the marker. Refused
    /// for an older producer epoch (INVALID_PRODUCER_EPOCH; under transaction version 2 also
    /// the same epoch while a transaction is open, see `check_marker`) or an older coordinator
    /// epoch than the last marker's (TRANSACTION_COORDINATOR_FENCED). Refused with
    /// NOT_ENOUGH_REPLICAS, before anything is written, while the ISR is below
    /// `min.insync.replicas`.
    pub fn write_marker(&self, marker: &MarkerSpec, now_ms: i64) -> Result<i64, PartitionError> {
        let MarkerSpec {
            producer_id,
            producer_epoch,
            commit,
            coordinator_epoch,
            transaction_version,
        } = *marker;
        let min_insync_replicas = self.config().min_insync_replicas;
        let mut st = self.state.lock();
        let Some(leader) = st.leader_state() else {
            return Err(PartitionError::NotLeaderOrFollower);
        };
        // Kafka appends markers with required acks -1, so `appendRecordsToLeader` refuses
        // them here as it refuses an acks=all produce. Checking after the append instead
        // would leave one marker in the log per coordinator retry while the ISR is short.
        let min_insync_replicas = leader.effective_min_isr(min_insync_replicas);
        if (leader.isr.len() as i32) < min_insync_replicas {
            return Err(PartitionError::NotEnoughReplicas {
                isr: leader.isr.len(),
                min_insync_replicas,
            });
        }
        st.producers
            .check_marker(
                producer_id,
                producer_epoch,
                coordinator_epoch,
                transaction_version,
            )
            .map_err(PartitionError::Producer)?;
        let batch = build_end_txn_marker_batch(
            producer_id,
            producer_epoch,
            commit,
            coordinator_epoch,
            now_ms,
        );
        let header = batch::parse_header(&batch).map_err(PartitionError::Record)?;
        let pending = st.producers.end_txn(producer_id, commit);
        let active_before = self.log.active_segment_base_offset();
        let (info, _) =
            self.log
                .append_end_txn_marker_as_leader(batch, st.leader_epoch, now_ms, pending)?;
        let offset = info.first_offset;
        self.snapshot_if_rolled(&st, active_before, offset);
        st.producers.update(&header, offset, offset, now_ms);
        st.producers
            .set_coordinator_epoch(producer_id, coordinator_epoch);
        self.maybe_increment_high_watermark(&mut st, now_ms);
        // The last stable offset moved: read_committed fetches may now return data.
        self.wake_waiters_locked(&st);
        Ok(offset)
    }

    /// Aborted transactions overlapping `[fetch_offset, upper_bound)` (Fetch read_committed),
    /// read from the `.txnindex` files. An unreadable index reads as no aborted transactions
    /// (and is logged), as the fetch itself already succeeded.
    pub fn aborted_transactions(&self, fetch_offset: i64, upper_bound: i64) -> Vec<AbortedTxn> {
        match self.log.collect_aborted_txns(fetch_offset, upper_bound) {
            Ok(v) => v,
            Err(e) => {
                tracing::warn!(topic = %self.topic, partition = self.index, error = %e, "cannot read txn index");
                Vec::new()
            }
        }
    }
}
