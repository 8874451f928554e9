//! Fencing: a new producer with the same transactional id, KIP-360 epoch checks, and the
//! KIP-588 error code each API version gets.
use super::*;
use crate::coordinator::txn::TransactionState;

#[test]
fn new_producer_aborts_the_open_transaction_and_fences_the_old_one() {
    let h = Harness::new();
    let (pid, e0) = h.init_ok(TID);
    h.add_ok(TID, pid, e0, &[("t1", 0), ("t2", 2)]);
    // The new incarnation: the open transaction is aborted under epoch + 1, and the client is
    // told to retry.
    let r = h.init(4, TID, TIMEOUT);
    assert_eq!(r.error_code, code(ErrorCode::CONCURRENT_TRANSACTIONS));
    assert_eq!(
        h.markers(),
        vec![MarkerCall {
            producer_id: pid,
            producer_epoch: e0 + 1,
            commit: false,
            coordinator_epoch: 0,
            transaction_version: 0,
            partitions: vec![("t1".into(), 0), ("t2".into(), 2)],
        }]
    );
    assert_eq!(
        h.coord.transaction(TID).unwrap().state,
        TransactionState::CompleteAbort
    );
    let (pid2, e2) = h.init_ok(TID);
    assert_eq!((pid2, e2), (pid, e0 + 2));

    // The old producer, at every API: PRODUCER_FENCED, or INVALID_PRODUCER_EPOCH for versions
    // from before KIP-588.
    let fenced = code(ErrorCode::PRODUCER_FENCED);
    let old = code(ErrorCode::INVALID_PRODUCER_EPOCH);
    assert_eq!(
        codes_v3(&h.add(2, TID, pid, e0, &[("t1", 0)])),
        vec![fenced]
    );
    assert_eq!(codes_v3(&h.add(1, TID, pid, e0, &[("t1", 0)])), vec![old]);
    assert_eq!(h.add_offsets(2, TID, pid, e0, "g"), fenced);
    assert_eq!(h.add_offsets(1, TID, pid, e0, "g"), old);
    assert_eq!(h.end(2, TID, pid, e0, true), fenced);
    assert_eq!(h.end(0, TID, pid, e0, true), old);
    // A KIP-360 InitProducerId with a stale epoch.
    assert_eq!(
        init_with(&h.coord, 4, TID, TIMEOUT, pid, e0).error_code,
        fenced
    );
    assert_eq!(
        init_with(&h.coord, 3, TID, TIMEOUT, pid, e0).error_code,
        old
    );
    // ... and with a producer id that was never this id's.
    assert_eq!(
        init_with(&h.coord, 4, TID, TIMEOUT, 4242, 0).error_code,
        fenced
    );
    // Nothing changed for the new producer.
    h.add_ok(TID, pid2, e2, &[("t3", 1)]);
    assert_eq!(h.end(3, TID, pid2, e2, true), 0);
}

#[test]
fn kip_360_bump_and_retry_return_the_same_epoch() {
    let h = Harness::new();
    let (pid, e0) = h.init_ok(TID);
    let r = init_with(&h.coord, 4, TID, TIMEOUT, pid, e0);
    assert_eq!(
        (r.error_code, r.producer_id, r.producer_epoch),
        (0, pid, e0 + 1)
    );
    // The response was lost; the producer retries with its old epoch.
    let r = init_with(&h.coord, 4, TID, TIMEOUT, pid, e0);
    assert_eq!(
        (r.error_code, r.producer_id, r.producer_epoch),
        (0, pid, e0 + 1)
    );
}

#[test]
fn exhausted_epoch_rotates_the_producer_id() {
    let h = Harness::new();
    let (pid, _) = h.init_ok(TID);
    // Drive the epoch to the last usable value by replaying a crafted record.
    let p = h.partition(TID);
    let mut m = h.coord.transaction(TID).unwrap();
    m.producer_epoch = i16::MAX - 1;
    let rec = crate::coordinator::txn::records::metadata_record(&m, 0);
    let mut all = h.log.records(p);
    all.push(rec);
    h.coord.load(p, all);
    let (pid2, e2) = h.init_ok(TID);
    assert_ne!(pid2, pid);
    assert_eq!(e2, 0);
    assert_eq!(h.coord.transaction(TID).unwrap().last_producer_id, pid);
}
