//! Transaction version 2 (KIP-890 part 2): partitions added by brokers (AddPartitionsToTxn v4+
//! without `VerifyOnly`), the epoch bump of every EndTxn v5, the retry and empty-abort rules
//! of Kafka's state table, a new producer id when the epoch is exhausted, and records of
//! value version 1 that bring it all back after a restart.
use super::*;
use crate::coordinator::txn::{records, TransactionState};
use crate::protocol::messages::add_partitions_to_txn_request::AddPartitionsToTxnTransaction;

/// AddPartitionsToTxn v5 from a broker adding `partitions` (Produce v12+), per partition code.
fn broker_add(h: &Harness, pid: i64, epoch: i16, partitions: &[(&str, i32)]) -> Vec<i16> {
    let topics = topics_of(partitions);
    let r = h.coord.add_partitions_to_txn(
        &RequestContext::new(5, "broker", "h"),
        &AddPartitionsToTxnRequest {
            transactions: vec![AddPartitionsToTxnTransaction {
                transactional_id: TID.into(),
                producer_id: pid,
                producer_epoch: epoch,
                verify_only: false,
                topics,
                ..Default::default()
            }],
            ..Default::default()
        },
        &exists,
    );
    r.results_by_transaction[0]
        .topic_results
        .iter()
        .flat_map(|t| {
            t.results_by_partition
                .iter()
                .map(|p| p.partition_error_code)
        })
        .collect()
}

fn end_v5(h: &Harness, pid: i64, epoch: i16, commit: bool) -> (i16, i64, i16) {
    let r = end_response(&h.coord, 5, TID, pid, epoch, commit);
    (r.error_code, r.producer_id, r.producer_epoch)
}

#[test]
fn every_end_bumps_the_epoch_and_the_markers_carry_it() {
    let h = Harness::new();
    let (pid, e0) = h.init_ok(TID);
    assert_eq!(broker_add(&h, pid, e0, &[("t1", 0), ("t2", 1)]), vec![0, 0]);
    let m = h.coord.transaction(TID).unwrap();
    assert_eq!(
        (m.state, m.client_transaction_version),
        (TransactionState::Ongoing, 2)
    );
    assert_eq!(end_v5(&h, pid, e0, true), (0, pid, e0 + 1));
    assert_eq!(
        h.markers(),
        vec![MarkerCall {
            producer_id: pid,
            producer_epoch: e0 + 1,
            commit: true,
            coordinator_epoch: 0,
            transaction_version: 2,
            partitions: vec![("t1".into(), 0), ("t2".into(), 1)],
        }]
    );
    let m = h.coord.transaction(TID).unwrap();
    assert_eq!(
        (m.state, m.producer_epoch, m.last_producer_epoch),
        (TransactionState::CompleteCommit, e0 + 1, e0)
    );
    // The answer was lost: the retry under the old epoch learns the new one; the other
    // outcome under the old epoch is not this transaction's.
    assert_eq!(end_v5(&h, pid, e0, true), (0, pid, e0 + 1));
    assert_eq!(
        end_v5(&h, pid, e0, false).0,
        code(ErrorCode::INVALID_TXN_STATE)
    );
    // The old epoch is fenced from the next transaction; the new one starts it.
    assert_eq!(
        broker_add(&h, pid, e0, &[("t3", 0)]),
        vec![code(ErrorCode::PRODUCER_FENCED)]
    );
    assert_eq!(broker_add(&h, pid, e0 + 1, &[("t3", 0)]), vec![0]);
    assert_eq!(end_v5(&h, pid, e0 + 1, false), (0, pid, e0 + 2));
    assert_eq!(h.markers().len(), 2);
    assert_eq!(h.markers()[1].producer_epoch, e0 + 2);
    assert!(!h.markers()[1].commit);
}

#[test]
fn an_abort_with_nothing_added_bumps_without_markers_and_a_commit_is_refused() {
    let h = Harness::new();
    let (pid, e0) = h.init_ok(TID);
    // The producer sent, but no partition reached the coordinator.
    assert_eq!(end_v5(&h, pid, e0, false), (0, pid, e0 + 1));
    assert!(h.markers().is_empty());
    let m = h.coord.transaction(TID).unwrap();
    assert_eq!(m.state, TransactionState::CompleteAbort);
    assert_eq!(
        end_v5(&h, pid, e0 + 1, true).0,
        code(ErrorCode::INVALID_TXN_STATE)
    );
    // From Empty too, and a retry from Empty is a zombie.
    let h = Harness::new();
    let (pid, e0) = h.init_ok(TID);
    assert_eq!(
        end_v5(&h, pid, e0, true).0,
        code(ErrorCode::INVALID_TXN_STATE)
    );
    assert_eq!(
        end_v5(&h, pid, e0 - 1, false).0,
        code(ErrorCode::PRODUCER_FENCED)
    );
    assert_eq!(
        end_v5(&h, pid + 7, e0, false).0,
        code(ErrorCode::INVALID_PRODUCER_ID_MAPPING)
    );
}

#[test]
fn a_prepared_transaction_answers_concurrent_transactions_to_everything() {
    let h = Harness::new();
    let (pid, e0) = h.init_ok(TID);
    assert_eq!(broker_add(&h, pid, e0, &[("t1", 0)]), vec![0]);
    h.fail_markers(true);
    assert_eq!(end_v5(&h, pid, e0, true), (0, pid, e0 + 1));
    let concurrent = code(ErrorCode::CONCURRENT_TRANSACTIONS);
    assert_eq!(end_v5(&h, pid, e0 + 1, true).0, concurrent);
    assert_eq!(end_v5(&h, pid, e0, true).0, concurrent);
    // Even from a producer id the coordinator does not know yet.
    assert_eq!(broker_add(&h, pid + 1, 0, &[("t1", 1)]), vec![concurrent]);
    h.fail_markers(false);
    h.coord.tick();
    assert_eq!(broker_add(&h, pid, e0 + 1, &[("t1", 1)]), vec![0]);
}

#[test]
fn an_exhausted_epoch_continues_under_a_new_producer_id() {
    let h = Harness::new();
    h.coord.set_transaction_version(2);
    let (pid, _) = h.init_ok(TID);
    assert_eq!(broker_add(&h, pid, 0, &[("t1", 0)]), vec![0]);
    // Drive the epoch to the last usable value by replaying a crafted record.
    let p = h.partition(TID);
    let mut m = h.coord.transaction(TID).unwrap();
    m.producer_epoch = i16::MAX - 1;
    let mut all = h.log.records(p);
    all.push(records::metadata_record(&m, 1));
    h.coord.load(p, all);
    let (code_, new_pid, new_epoch) = end_v5(&h, pid, i16::MAX - 1, true);
    assert_eq!(code_, 0);
    assert_ne!(new_pid, pid);
    assert_eq!(new_epoch, 0);
    // The markers still end the old producer id's transaction, at the last epoch.
    let last = h.markers().pop().unwrap();
    assert_eq!((last.producer_id, last.producer_epoch), (pid, i16::MAX));
    let m = h.coord.transaction(TID).unwrap();
    assert_eq!((m.producer_id, m.producer_epoch), (new_pid, 0));
    assert_eq!((m.last_producer_id, m.next_producer_id), (pid, -1));
    // The retry under the old id learns the new one.
    assert_eq!(end_v5(&h, pid, i16::MAX - 1, true), (0, new_pid, 0));
    // And a restart reads it all back from the version 1 records.
    let restarted = h.restart();
    let again = restarted.transaction(TID).unwrap();
    assert_eq!(
        (
            again.producer_id,
            again.last_producer_id,
            again.client_transaction_version
        ),
        (new_pid, pid, 2)
    );
}

#[test]
fn version_1_records_replay_to_the_same_state() {
    let h = Harness::new();
    h.coord.set_transaction_version(2);
    let (pid, e0) = h.init_ok(TID);
    assert_eq!(broker_add(&h, pid, e0, &[("t1", 0), ("t2", 2)]), vec![0, 0]);
    let p = h.partition(TID);
    let before = h.coord.snapshot(p).unwrap();
    let restarted = h.restart();
    restarted.set_transaction_version(2);
    assert_eq!(restarted.snapshot(p).unwrap(), before);
    // Every record written was value version 1.
    for r in h.log.records(p) {
        assert_eq!(&r.value.as_ref().unwrap()[..2], &[0, 1]);
    }
    let m = restarted.transaction(TID).unwrap();
    assert_eq!(m.client_transaction_version, 2);
    assert_eq!(m.topic_partitions.len(), 2);
}

#[test]
fn after_a_timeout_abort_the_producer_recovers_by_aborting() {
    let h = Harness::new();
    let (pid, e0) = h.init_ok(TID);
    assert_eq!(broker_add(&h, pid, e0, &[("t1", 0)]), vec![0]);
    h.clock.advance(TIMEOUT as i64 + 1);
    h.coord.tick();
    let m = h.coord.transaction(TID).unwrap();
    assert_eq!(
        (m.state, m.producer_epoch),
        (TransactionState::CompleteAbort, e0 + 1)
    );
    // The producer, still at e0, aborts: a retry of the abort that already happened.
    assert_eq!(end_v5(&h, pid, e0, false), (0, pid, e0 + 1));
    // A commit instead is refused (fatal for the client, as in Kafka).
    assert_eq!(
        end_v5(&h, pid, e0, true).0,
        code(ErrorCode::INVALID_TXN_STATE)
    );
}
