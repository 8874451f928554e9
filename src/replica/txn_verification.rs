//! The partition's side of transaction verification (KIP-890 part 1, Kafka's
//! `VerificationGuard` / `VerificationStateEntry`): a defence against hanging transactions.
//!
//! A transactional producer's first batch on a partition would open a transaction there. Before
//! appending it the leader asks the transaction coordinator whether the partition was added to
//! the producer's ongoing transaction (the produce path does that, see
//! `cluster::txn_verifier`). When the question is asked the partition hands out a guard; the
//! append must show the same guard. A marker for the producer (the transaction ended, perhaps
//! by a timeout abort, while the question was in flight) or the append itself clears it, so a
//! late or repeated write cannot open a transaction no coordinator will ever end. Batches of a
//! transaction already open on the partition need no guard.
use super::partition::{Partition, PartitionError};
use super::producer_state::{ProducerStateError, ProducerStateManager};
use crate::protocol::records::batch::BatchHeader;

/// What an append shows for a transactional batch that would open a transaction: the token
/// of the verification started for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VerificationGuard(u64);

/// One producer's verification under way on this partition.
#[derive(Debug, Clone)]
pub struct VerificationEntry {
    guard: u64,
    /// The highest epoch it was asked for.
    pub(super) epoch: i16,
    /// Asked for a producer of transaction version 2, whose next transaction runs at the epoch
    /// its last marker carries.
    pub(super) supports_epoch_bump: bool,
    /// Expired with the producer state (`producer.id.expiration.ms`).
    pub(super) started_ms: i64,
}

/// How a client append is checked against transaction verification.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TxnVerification {
    /// No check: verification is off (`transaction.partition.verification.enable=false`), or
    /// the writer is not a client (coordinators, replication).
    NotRequired,
    /// The guard of the verification the produce path started (None: it started none).
    Guard(Option<VerificationGuard>),
}

impl ProducerStateManager {
    /// Starts (or joins) a verification for `producer_id` at `producer_epoch`. None when none
    /// is needed: the producer's transaction at that epoch is already open here.
    pub fn start_verification(
        &mut self,
        producer_id: i64,
        producer_epoch: i16,
        supports_epoch_bump: bool,
        now_ms: i64,
    ) -> Option<VerificationGuard> {
        let open = self
            .get(producer_id)
            .is_some_and(|e| e.current_txn_first_offset.is_some() && e.epoch == producer_epoch);
        if open {
            return None;
        }
        if let Some(v) = self.verifications.get_mut(&producer_id) {
            v.epoch = v.epoch.max(producer_epoch);
            v.supports_epoch_bump |= supports_epoch_bump;
            return Some(VerificationGuard(v.guard));
        }
        self.next_guard += 1;
        let guard = self.next_guard;
        self.verifications.insert(
            producer_id,
            VerificationEntry {
                guard,
                epoch: producer_epoch,
                supports_epoch_bump,
                started_ms: now_ms,
            },
        );
        Some(VerificationGuard(guard))
    }

    /// Kafka's check in `analyzeAndValidateProducerState`: a transactional batch that would open
    /// a transaction needs the guard of a verification still standing.
    pub fn check_verified(
        &self,
        h: &BatchHeader,
        verification: TxnVerification,
    ) -> Result<(), ProducerStateError> {
        let TxnVerification::Guard(shown) = verification else {
            return Ok(());
        };
        if !h.is_transactional() || h.is_control() {
            return Ok(());
        }
        let open = self
            .get(h.producer_id)
            .is_some_and(|e| e.current_txn_first_offset.is_some() && e.epoch == h.producer_epoch);
        let standing = self
            .verifications
            .get(&h.producer_id)
            .filter(|v| v.epoch <= h.producer_epoch)
            .map(|v| VerificationGuard(v.guard));
        if open || (shown.is_some() && shown == standing) {
            Ok(())
        } else {
            Err(ProducerStateError::TransactionNotVerified)
        }
    }
}

impl Partition {
    /// Starts a verification for a transactional producer's write here (see the module
    /// comment); None when its transaction is already open on this partition. Only a leader
    /// takes client writes.
    pub fn start_transaction_verification(
        &self,
        producer_id: i64,
        producer_epoch: i16,
        supports_epoch_bump: bool,
        now_ms: i64,
    ) -> Result<Option<VerificationGuard>, PartitionError> {
        let mut st = self.state.lock();
        if st.leader_state().is_none() {
            return Err(PartitionError::NotLeaderOrFollower);
        }
        Ok(st.producers.start_verification(
            producer_id,
            producer_epoch,
            supports_epoch_bump,
            now_ms,
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PID: i64 = 7;

    fn header(transactional: bool, control: bool, epoch: i16) -> BatchHeader {
        let mut attributes = 0i16;
        if transactional {
            attributes |= 0x10;
        }
        if control {
            attributes |= 0x20;
        }
        BatchHeader {
            base_offset: 0,
            batch_length: 0,
            partition_leader_epoch: 0,
            magic: 2,
            crc: 0,
            attributes,
            last_offset_delta: 0,
            base_timestamp: 0,
            max_timestamp: 0,
            producer_id: PID,
            producer_epoch: epoch,
            base_sequence: if control { -1 } else { 0 },
            records_count: 1,
        }
    }

    #[test]
    fn the_first_transactional_write_needs_the_standing_guard() {
        let mut state = ProducerStateManager::new();
        let txn = header(true, false, 3);
        // Nothing asked: refused, with or without a made-up guard.
        assert_eq!(
            state.check_verified(&txn, TxnVerification::Guard(None)),
            Err(ProducerStateError::TransactionNotVerified)
        );
        assert_eq!(
            state.check_verified(&txn, TxnVerification::Guard(Some(VerificationGuard(99)))),
            Err(ProducerStateError::TransactionNotVerified)
        );
        // Verification off, or a batch that opens no transaction: no check.
        assert_eq!(
            state.check_verified(&txn, TxnVerification::NotRequired),
            Ok(())
        );
        assert_eq!(
            state.check_verified(&header(false, false, 3), TxnVerification::Guard(None)),
            Ok(())
        );

        let guard = state.start_verification(PID, 3, false, 0).expect("a guard");
        // A second question while the first stands shares its guard.
        assert_eq!(state.start_verification(PID, 3, false, 1), Some(guard));
        assert_eq!(
            state.check_verified(&txn, TxnVerification::Guard(Some(guard))),
            Ok(())
        );
        // The append uses the guard up and opens the transaction: later batches need none.
        state.update(&txn, 10, 10, 0);
        assert!(state.verifications.is_empty());
        assert_eq!(state.start_verification(PID, 3, false, 2), None);
        assert_eq!(
            state.check_verified(&txn, TxnVerification::Guard(None)),
            Ok(())
        );
    }

    #[test]
    fn a_marker_while_verifying_voids_the_guard() {
        let mut state = ProducerStateManager::new();
        let guard = state.start_verification(PID, 3, false, 0).expect("a guard");
        // The coordinator timed the transaction out and wrote its abort meanwhile.
        state.update(&header(true, true, 3), 5, 5, 0);
        assert_eq!(
            state.check_verified(&header(true, false, 3), TxnVerification::Guard(Some(guard))),
            Err(ProducerStateError::TransactionNotVerified)
        );
        // A new question gets a new guard.
        let again = state.start_verification(PID, 3, false, 1).expect("a guard");
        assert_ne!(again, guard);
    }

    #[test]
    fn verifications_expire_with_producer_state() {
        let mut state = ProducerStateManager::new();
        state.start_verification(PID, 3, false, 0);
        state.expire(500, 1_000);
        assert_eq!(state.verifications.len(), 1);
        state.expire(1_000, 1_000);
        assert!(state.verifications.is_empty());
    }

    #[test]
    fn a_version_2_guard_survives_the_marker_that_bumped_its_epoch() {
        let mut state = ProducerStateManager::new();
        // Transaction at epoch 3 open here; its end bumps to 4 and the marker carries 4.
        state.update(&header(true, false, 3), 0, 0, 0);
        // The next transaction's first write (epoch 4) arrives before that marker.
        let guard = state.start_verification(PID, 4, true, 1).expect("a guard");
        state.update(&header(true, true, 4), 1, 1, 0);
        assert_eq!(
            state.check_verified(&header(true, false, 4), TxnVerification::Guard(Some(guard))),
            Ok(())
        );
        // A late copy of that marker must not end the transaction now open at epoch 4.
        state.update(&header(true, false, 4), 2, 2, 0);
        assert!(matches!(
            state.check_marker(PID, 4, 0, 2),
            Err(ProducerStateError::InvalidProducerEpoch { .. })
        ));
        // Under the classic protocol the same marker is the transaction's own.
        assert_eq!(state.check_marker(PID, 4, 0, 0), Ok(()));
        // Its retry once nothing is open is harmless.
        state.update(&header(true, true, 5), 3, 3, 0);
        assert_eq!(state.check_marker(PID, 5, 0, 2), Ok(()));
    }
}
