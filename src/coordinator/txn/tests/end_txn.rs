//! Commit and abort, EndTxn errors, AddPartitionsToTxn and AddOffsetsToTxn, timeouts and
//! expiration.
use super::*;
use crate::coordinator::runtime::CoordinatorLogError;
use crate::coordinator::txn::TransactionState;
use crate::protocol::messages::add_partitions_to_txn_request::AddPartitionsToTxnTransaction;

fn tps(v: &[(&str, i32)]) -> Vec<(String, i32)> {
    v.iter().map(|(t, p)| (t.to_string(), *p)).collect()
}

#[test]
fn commit_writes_commit_markers_to_every_partition_then_completes() {
    let h = Harness::new();
    let (pid, epoch) = h.init_ok(TID);
    assert_eq!((pid, epoch), (1000, 0));
    h.add_ok(TID, pid, epoch, &[("t1", 0), ("t2", 1)]);
    h.add_ok(TID, pid, epoch, &[("t1", 2)]);
    assert_eq!(h.add_offsets(3, TID, pid, epoch, "grp"), 0);
    let m = h.coord.transaction(TID).unwrap();
    assert_eq!(m.state, TransactionState::Ongoing);
    assert_eq!(m.txn_start_timestamp_ms, 1_000_000);
    assert_eq!(h.end(3, TID, pid, epoch, true), 0);
    let offsets_p = crate::coordinator::partition_for("grp", 50);
    let mut expected = tps(&[("t1", 0), ("t1", 2), ("t2", 1)]);
    expected.insert(0, ("__consumer_offsets".to_string(), offsets_p));
    assert_eq!(
        h.markers(),
        vec![MarkerCall {
            producer_id: pid,
            producer_epoch: epoch,
            commit: true,
            coordinator_epoch: 0,
            transaction_version: 0,
            partitions: expected,
        }]
    );
    let m = h.coord.transaction(TID).unwrap();
    assert_eq!(m.state, TransactionState::CompleteCommit);
    assert!(m.topic_partitions.is_empty());
    // Records: init, add, add, add offsets, prepare, complete.
    assert_eq!(h.log.records(h.partition(TID)).len(), 6);
    // A retried EndTxn with the same result is OK; the other result is not.
    assert_eq!(h.end(3, TID, pid, epoch, true), 0);
    assert_eq!(
        h.end(3, TID, pid, epoch, false),
        code(ErrorCode::INVALID_TXN_STATE)
    );
    // The next transaction starts from CompleteCommit.
    h.add_ok(TID, pid, epoch, &[("t3", 0)]);
    assert_eq!(
        h.coord.transaction(TID).unwrap().state,
        TransactionState::Ongoing
    );
}

#[test]
fn abort_writes_abort_markers() {
    let h = Harness::new();
    let (pid, epoch) = h.init_ok(TID);
    h.add_ok(TID, pid, epoch, &[("t1", 1)]);
    assert_eq!(h.end(4, TID, pid, epoch, false), 0);
    let calls = h.markers();
    assert_eq!(calls.len(), 1);
    assert!(!calls[0].commit);
    assert_eq!(calls[0].partitions, tps(&[("t1", 1)]));
    assert_eq!(
        h.coord.transaction(TID).unwrap().state,
        TransactionState::CompleteAbort
    );
    assert_eq!(h.end(4, TID, pid, epoch, false), 0);
    assert_eq!(
        h.end(4, TID, pid, epoch, true),
        code(ErrorCode::INVALID_TXN_STATE)
    );
}

#[test]
fn end_txn_without_a_transaction_or_producer() {
    let h = Harness::new();
    // Unknown transactional id.
    assert_eq!(
        h.end(3, TID, 1, 0, true),
        code(ErrorCode::INVALID_PRODUCER_ID_MAPPING)
    );
    let (pid, epoch) = h.init_ok(TID);
    // Empty: no transaction to end.
    assert_eq!(
        h.end(3, TID, pid, epoch, true),
        code(ErrorCode::INVALID_TXN_STATE)
    );
    assert_eq!(
        h.end(3, TID, pid, epoch, false),
        code(ErrorCode::INVALID_TXN_STATE)
    );
    // Wrong producer id.
    assert_eq!(
        h.end(3, TID, pid + 7, epoch, true),
        code(ErrorCode::INVALID_PRODUCER_ID_MAPPING)
    );
    assert_eq!(
        h.end(3, "", pid, epoch, true),
        code(ErrorCode::INVALID_REQUEST)
    );
    assert!(h.markers().is_empty());
}

#[test]
fn end_txn_while_markers_pending_is_concurrent_and_tick_completes() {
    let h = Harness::new();
    let (pid, epoch) = h.init_ok(TID);
    h.add_ok(TID, pid, epoch, &[("t1", 0)]);
    h.fail_markers(true);
    // EndTxn answers once the prepare record is written.
    assert_eq!(h.end(3, TID, pid, epoch, true), 0);
    assert_eq!(
        h.coord.transaction(TID).unwrap().state,
        TransactionState::PrepareCommit
    );
    assert_eq!(
        h.end(3, TID, pid, epoch, true),
        code(ErrorCode::CONCURRENT_TRANSACTIONS)
    );
    assert_eq!(
        h.end(3, TID, pid, epoch, false),
        code(ErrorCode::INVALID_TXN_STATE)
    );
    let add = h.add(3, TID, pid, epoch, &[("t2", 0)]);
    assert_eq!(
        codes_v3(&add),
        vec![code(ErrorCode::CONCURRENT_TRANSACTIONS)]
    );
    assert_eq!(
        h.init(4, TID, TIMEOUT).error_code,
        code(ErrorCode::CONCURRENT_TRANSACTIONS)
    );
    h.coord.tick();
    assert_eq!(
        h.coord.transaction(TID).unwrap().state,
        TransactionState::PrepareCommit
    );
    h.fail_markers(false);
    h.coord.tick();
    assert_eq!(
        h.coord.transaction(TID).unwrap().state,
        TransactionState::CompleteCommit
    );
    assert_eq!(h.markers().len(), 1);
    assert!(h.markers()[0].commit);
}

#[test]
fn add_partitions_for_unknown_topic_adds_nothing() {
    let h = Harness::new();
    let (pid, epoch) = h.init_ok(TID);
    let r = h.add(3, TID, pid, epoch, &[("t1", 0), ("nope", 0), ("t1", 9)]);
    assert_eq!(
        codes_v3(&r),
        vec![
            code(ErrorCode::OPERATION_NOT_ATTEMPTED),
            code(ErrorCode::UNKNOWN_TOPIC_OR_PARTITION),
            code(ErrorCode::UNKNOWN_TOPIC_OR_PARTITION),
        ]
    );
    assert_eq!(
        h.coord.transaction(TID).unwrap().state,
        TransactionState::Empty
    );
    // Unknown producer, wrong producer id, empty id.
    let r = h.add(3, "other", 5, 0, &[("t1", 0)]);
    assert_eq!(
        codes_v3(&r),
        vec![code(ErrorCode::INVALID_PRODUCER_ID_MAPPING)]
    );
    let r = h.add(3, TID, pid + 1, epoch, &[("t1", 0)]);
    assert_eq!(
        codes_v3(&r),
        vec![code(ErrorCode::INVALID_PRODUCER_ID_MAPPING)]
    );
    let r = h.add(3, "", pid, epoch, &[("t1", 0)]);
    assert_eq!(codes_v3(&r), vec![code(ErrorCode::INVALID_REQUEST)]);
    assert_eq!(
        h.add_offsets(3, "", pid, epoch, "g"),
        code(ErrorCode::INVALID_REQUEST)
    );
    assert_eq!(
        h.add_offsets(3, "other", pid, epoch, "g"),
        code(ErrorCode::INVALID_PRODUCER_ID_MAPPING)
    );
}

#[test]
fn add_partitions_v4_verification() {
    let h = Harness::new();
    let (pid, epoch) = h.init_ok(TID);
    h.add_ok(TID, pid, epoch, &[("t1", 0)]);
    let req = AddPartitionsToTxnRequest {
        transactions: vec![AddPartitionsToTxnTransaction {
            transactional_id: TID.into(),
            producer_id: pid,
            producer_epoch: epoch,
            verify_only: true,
            topics: vec![AddPartitionsToTxnTopic {
                name: "t1".into(),
                partitions: vec![0, 1],
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    };
    let r = h
        .coord
        .add_partitions_to_txn(&RequestContext::new(4, "b", "h"), &req, &exists);
    let codes: Vec<i16> = r.results_by_transaction[0].topic_results[0]
        .results_by_partition
        .iter()
        .map(|p| p.partition_error_code)
        .collect();
    assert_eq!(codes, vec![0, code(ErrorCode::TRANSACTION_ABORTABLE)]);
    // Verification does not add.
    assert_eq!(h.coord.transaction(TID).unwrap().topic_partitions.len(), 1);
    // Not verify-only: v4 adds like the client path.
    let mut add = req.clone();
    add.transactions[0].verify_only = false;
    let r = h
        .coord
        .add_partitions_to_txn(&RequestContext::new(4, "b", "h"), &add, &exists);
    assert!(r.results_by_transaction[0].topic_results[0]
        .results_by_partition
        .iter()
        .all(|p| p.partition_error_code == 0));
    assert_eq!(h.coord.transaction(TID).unwrap().topic_partitions.len(), 2);
}

#[test]
fn timed_out_transaction_is_aborted_with_a_bumped_epoch() {
    let h = Harness::new();
    let (pid, epoch) = h.init_ok(TID);
    h.add_ok(TID, pid, epoch, &[("t1", 0)]);
    h.clock.advance(TIMEOUT as i64);
    h.coord.tick();
    assert_eq!(
        h.coord.transaction(TID).unwrap().state,
        TransactionState::Ongoing
    );
    h.clock.advance(1);
    h.coord.tick();
    let m = h.coord.transaction(TID).unwrap();
    assert_eq!(m.state, TransactionState::CompleteAbort);
    assert_eq!(m.producer_epoch, epoch + 1);
    assert_eq!(
        h.markers(),
        vec![MarkerCall {
            producer_id: pid,
            producer_epoch: epoch + 1,
            commit: false,
            coordinator_epoch: 0,
            transaction_version: 0,
            partitions: tps(&[("t1", 0)]),
        }]
    );
    // The timed-out producer is fenced.
    assert_eq!(
        h.end(3, TID, pid, epoch, true),
        code(ErrorCode::PRODUCER_FENCED)
    );
}

#[test]
fn init_producer_id_validation() {
    let h = Harness::new();
    let max = h.config.transaction_max_timeout_ms;
    assert_eq!(
        h.init(4, TID, max + 1).error_code,
        code(ErrorCode::INVALID_TRANSACTION_TIMEOUT)
    );
    assert_eq!(
        h.init(4, TID, 0).error_code,
        code(ErrorCode::INVALID_TRANSACTION_TIMEOUT)
    );
    assert_eq!(
        h.init(4, "", TIMEOUT).error_code,
        code(ErrorCode::INVALID_REQUEST)
    );
    let r = init_with(&h.coord, 4, TID, TIMEOUT, 5, -1);
    assert_eq!(r.error_code, code(ErrorCode::INVALID_REQUEST));
    assert_eq!((r.producer_id, r.producer_epoch), (-1, -1));
    h.ids.fail.store(true, Ordering::SeqCst);
    assert_eq!(
        h.init(4, TID, max).error_code,
        code(ErrorCode::COORDINATOR_LOAD_IN_PROGRESS)
    );
    h.ids.fail.store(false, Ordering::SeqCst);
    // Idempotent producer: no transactional id.
    let r = h.coord.init_producer_id(
        &RequestContext::new(4, "c", "h"),
        &InitProducerIdRequest {
            transactional_id: None,
            transaction_timeout_ms: -1,
            producer_id: -1,
            producer_epoch: -1,
            ..Default::default()
        },
    );
    assert_eq!((r.error_code, r.producer_epoch), (0, 0));
    assert!(h.log.records(h.partition(TID)).is_empty());
}

#[test]
fn not_coordinator_and_log_failures() {
    let h = Harness::new();
    let (pid, epoch) = h.init_ok(TID);
    h.log.fail_with(Some(CoordinatorLogError::NotAvailable));
    let r = h.add(3, TID, pid, epoch, &[("t1", 0)]);
    assert_eq!(
        codes_v3(&r),
        vec![code(ErrorCode::COORDINATOR_NOT_AVAILABLE)]
    );
    h.log.fail_with(Some(CoordinatorLogError::NotLeader));
    assert_eq!(
        h.init(4, TID, TIMEOUT).error_code,
        code(ErrorCode::NOT_COORDINATOR)
    );
    h.log.fail_with(None);
    assert_eq!(
        h.coord.transaction(TID).unwrap().state,
        TransactionState::Empty
    );
    h.coord.unload(h.partition(TID));
    assert_eq!(
        h.init(4, TID, TIMEOUT).error_code,
        code(ErrorCode::NOT_COORDINATOR)
    );
    assert_eq!(
        h.end(3, TID, pid, epoch, true),
        code(ErrorCode::NOT_COORDINATOR)
    );
}

#[test]
fn idle_transactional_ids_expire() {
    let h = Harness::new();
    let (pid, epoch) = h.init_ok(TID);
    h.add_ok(TID, pid, epoch, &[("t1", 0)]);
    h.end(3, TID, pid, epoch, true);
    h.clock.advance(h.config.transactional_id_expiration_ms - 1);
    h.coord.tick();
    assert!(h.coord.transaction(TID).is_some());
    h.clock.advance(1);
    h.coord.tick();
    assert!(h.coord.transaction(TID).is_none());
    let recs = h.log.records(h.partition(TID));
    assert_eq!(recs.last().unwrap().value, None);
    // The tombstone survives a restart, and the id starts over with a new producer id.
    let restarted = h.restart();
    assert!(restarted.transaction(TID).is_none());
    let r = init_with(&restarted, 4, TID, TIMEOUT, -1, -1);
    assert_eq!(
        (r.error_code, r.producer_id, r.producer_epoch),
        (0, 1001, 0)
    );
}
