//! Coordinator restart in every state, replay equivalence, and the record format.
use super::*;
use crate::coordinator::txn::records;
use crate::coordinator::txn::TransactionState;

fn assert_same_state(h: &Harness, restarted: &TransactionCoordinator) {
    for p in 0..h.config.transaction_state_log_num_partitions {
        assert_eq!(h.coord.snapshot(p), restarted.snapshot(p), "partition {p}");
    }
}

#[test]
fn restart_with_an_ongoing_transaction_keeps_it_open() {
    let h = Harness::new();
    let (pid, epoch) = h.init_ok(TID);
    h.add_ok(TID, pid, epoch, &[("t1", 0)]);
    let restarted = h.restart();
    assert_same_state(&h, &restarted);
    assert!(h.markers().is_empty());
    let m = restarted.transaction(TID).unwrap();
    assert_eq!(m.state, TransactionState::Ongoing);
    assert_eq!(end_with(&restarted, 3, TID, pid, epoch, true), 0);
    assert_eq!(h.markers().len(), 1);
}

fn restart_completes_prepared(commit: bool) {
    let h = Harness::new();
    let (pid, epoch) = h.init_ok(TID);
    h.add_ok(TID, pid, epoch, &[("t1", 0), ("t3", 2)]);
    h.fail_markers(true);
    assert_eq!(h.end(3, TID, pid, epoch, commit), 0);
    let prepared = if commit {
        TransactionState::PrepareCommit
    } else {
        TransactionState::PrepareAbort
    };
    assert_eq!(h.coord.transaction(TID).unwrap().state, prepared);
    h.fail_markers(false);
    // The broker restarts before the markers were written.
    let restarted = h.restart();
    let m = restarted.transaction(TID).unwrap();
    let complete = if commit {
        TransactionState::CompleteCommit
    } else {
        TransactionState::CompleteAbort
    };
    assert_eq!(m.state, complete);
    assert_eq!(
        h.markers(),
        vec![MarkerCall {
            producer_id: pid,
            producer_epoch: epoch,
            commit,
            coordinator_epoch: 0,
            transaction_version: 0,
            partitions: vec![("t1".into(), 0), ("t3".into(), 2)],
        }]
    );
    // The Complete record is in the log: a second restart finds nothing to do.
    let again = h.restart();
    assert_eq!(again.transaction(TID).unwrap().state, complete);
    assert_eq!(h.markers().len(), 1);
    assert_eq!(end_with(&again, 3, TID, pid, epoch, commit), 0);
}

#[test]
fn restart_completes_prepare_commit() {
    restart_completes_prepared(true);
}

#[test]
fn restart_completes_prepare_abort() {
    restart_completes_prepared(false);
}

#[test]
fn restart_with_markers_still_failing_leaves_it_prepared_for_tick() {
    let h = Harness::new();
    let (pid, epoch) = h.init_ok(TID);
    h.add_ok(TID, pid, epoch, &[("t1", 0)]);
    h.fail_markers(true);
    h.end(3, TID, pid, epoch, true);
    let p = h.partition(TID);
    let restarted = TransactionCoordinator::new(
        h.config.clone(),
        h.clock.clone(),
        h.log.clone(),
        h.ids.clone(),
        h.markers.clone(),
    );
    let summary = restarted.load_at_epoch(p, 7, h.log.records(p));
    assert_eq!((summary.completed, summary.pending), (0, 1));
    h.fail_markers(false);
    restarted.tick();
    assert_eq!(
        restarted.transaction(TID).unwrap().state,
        TransactionState::CompleteCommit
    );
    assert_eq!(h.markers()[0].coordinator_epoch, 7);
}

#[test]
fn replay_rebuilds_the_live_state() {
    let h = Harness::new();
    let ids = ["a", "b", "c", "d", "e"];
    for (i, tid) in ids.iter().enumerate() {
        let (pid, epoch) = h.init_ok(tid);
        h.add_ok(tid, pid, epoch, &[("t1", i as i32 % 3), ("t2", 0)]);
        h.clock.advance(10);
        match i {
            0 => assert_eq!(h.end(3, tid, pid, epoch, true), 0),
            1 => assert_eq!(h.end(3, tid, pid, epoch, false), 0),
            2 => assert_eq!(h.add_offsets(3, tid, pid, epoch, "g"), 0),
            3 => assert_eq!(h.init(4, tid, TIMEOUT).error_code, 51),
            _ => {}
        }
    }
    let restarted = h.restart();
    assert_same_state(&h, &restarted);
    // Every record decodes to the metadata it was written from.
    for p in 0..h.config.transaction_state_log_num_partitions {
        for r in h.log.records(p) {
            let d = records::decode(&r).unwrap();
            let m = d.metadata.unwrap();
            assert_eq!(records::metadata_record(&m, 0), r);
        }
    }
}

#[test]
fn records_use_kafkas_v0_layout() {
    let h = Harness::new();
    let (pid, epoch) = h.init_ok(TID);
    h.add_ok(TID, pid, epoch, &[("t1", 2)]);
    let recs = h.log.records(h.partition(TID));
    // Key: type 0, then the id as an int16-length string.
    let mut key = vec![0u8, 0, 0, TID.len() as u8];
    key.extend_from_slice(TID.as_bytes());
    assert_eq!(recs[0].key.as_ref(), key.as_slice());
    // Empty value: version 0, pid, epoch, timeout, status 0, null partitions, timestamps.
    let mut v = vec![0u8, 0];
    v.extend_from_slice(&pid.to_be_bytes());
    v.extend_from_slice(&epoch.to_be_bytes());
    v.extend_from_slice(&TIMEOUT.to_be_bytes());
    v.push(0);
    v.extend_from_slice(&(-1i32).to_be_bytes());
    v.extend_from_slice(&1_000_000i64.to_be_bytes());
    v.extend_from_slice(&(-1i64).to_be_bytes());
    assert_eq!(recs[0].value.as_deref(), Some(v.as_slice()));
    // Ongoing value: status 1, one topic with one partition, start timestamp set.
    let val = recs[1].value.as_deref().unwrap();
    assert_eq!(val[2 + 8 + 2 + 4], 1);
    let parts = &val[2 + 8 + 2 + 4 + 1..];
    let mut expected = 1i32.to_be_bytes().to_vec();
    expected.extend_from_slice(&[0, 2, b't', b'1']);
    expected.extend_from_slice(&1i32.to_be_bytes());
    expected.extend_from_slice(&2i32.to_be_bytes());
    assert_eq!(&parts[..expected.len()], expected.as_slice());
    // Garbage never panics.
    for bad in [&b""[..], &[0, 0], &[0, 0, 0, 9, 1], &[0, 3, 0, 0]] {
        let r = crate::coordinator::runtime::CoordinatorRecord {
            key: bytes::Bytes::copy_from_slice(&key),
            value: Some(bytes::Bytes::copy_from_slice(bad)),
        };
        assert!(records::decode(&r).is_err());
    }
}
