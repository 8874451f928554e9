//! Markers wait for the replicated Prepare record (a cluster's acks=all coordinator log): a
//! coordinator elected after a failover must know of every transaction with a marker.
use super::*;
use crate::coordinator::runtime::{CoordinatorLog, CoordinatorLogError, CoordinatorRecord};
use crate::coordinator::txn::TransactionState;

/// An in-memory log whose appends are replicated only when `replicated` says so.
#[derive(Default)]
struct LaggingLog {
    inner: InMemoryCoordinatorLog,
    replicated: AtomicBool,
}

impl CoordinatorLog for LaggingLog {
    fn append(
        &self,
        partition: i32,
        records: Vec<CoordinatorRecord>,
    ) -> Result<(), CoordinatorLogError> {
        self.inner.append(partition, records)
    }

    fn end_offset(&self, partition: i32) -> i64 {
        self.inner.records(partition).len() as i64
    }

    fn is_replicated(&self, _partition: i32, _end_offset: i64) -> bool {
        self.replicated.load(Ordering::SeqCst)
    }
}

#[test]
fn markers_wait_until_the_prepare_record_is_replicated() {
    let log = Arc::new(LaggingLog::default());
    log.replicated.store(true, Ordering::SeqCst);
    let markers = Arc::new(RecordingMarkers::default());
    let clock = ManualClock::new(1_000_000);
    let config = TxnConfig::default();
    let coord = TransactionCoordinator::new(
        config.clone(),
        clock.clone(),
        log.clone(),
        Arc::new(CountingIds::default()),
        markers.clone(),
    );
    for p in 0..config.transaction_state_log_num_partitions {
        coord.load(p, Vec::new());
    }
    let r = init_with(&coord, 4, TID, TIMEOUT, -1, -1);
    let (pid, epoch) = (r.producer_id, r.producer_epoch);
    assert_eq!(
        codes_v3(&add_with(&coord, 3, TID, pid, epoch, &[("t1", 0)])),
        vec![0]
    );

    log.replicated.store(false, Ordering::SeqCst);
    assert_eq!(end_with(&coord, 3, TID, pid, epoch, true), 0);
    coord.tick();
    coord.complete_prepared(TID);
    assert!(
        markers.calls.lock().is_empty(),
        "no marker before the prepare is replicated"
    );
    assert_eq!(
        coord.transaction(TID).unwrap().state,
        TransactionState::PrepareCommit
    );

    log.replicated.store(true, Ordering::SeqCst);
    coord.complete_prepared(TID);
    assert_eq!(markers.calls.lock().len(), 1);
    assert_eq!(
        coord.transaction(TID).unwrap().state,
        TransactionState::CompleteCommit
    );
}

#[test]
fn a_loaded_prepared_transaction_waits_for_the_log_to_be_replicated() {
    let h = Harness::new();
    let (pid, epoch) = h.init_ok(TID);
    h.add_ok(TID, pid, epoch, &[("t1", 0)]);
    h.fail_markers(true);
    assert_eq!(h.end(3, TID, pid, epoch, false), 0);
    h.fail_markers(false);
    // A successor whose log is not yet replicated: it loads the prepared transaction but
    // writes no marker until the ISR has what it loaded.
    let log = Arc::new(LaggingLog::default());
    let p = h.partition(TID);
    log.inner.append(p, h.log.records(p)).unwrap();
    let markers = Arc::new(RecordingMarkers::default());
    let coord = TransactionCoordinator::new(
        h.config.clone(),
        h.clock.clone(),
        log.clone(),
        h.ids.clone(),
        markers.clone(),
    );
    coord.load(p, log.inner.records(p));
    coord.tick();
    assert!(markers.calls.lock().is_empty());
    log.replicated.store(true, Ordering::SeqCst);
    coord.tick();
    assert_eq!(markers.calls.lock().len(), 1);
    assert_eq!(
        coord.transaction(TID).unwrap().state,
        TransactionState::CompleteAbort
    );
}
