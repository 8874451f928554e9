//! Deterministic tests of the transaction coordinator: a manual clock, an in-memory log, a
//! counting producer-id allocator and a marker writer that records its calls and can fail.
mod admin;
mod end_txn;
mod epoch_bump;
mod fencing;
mod replication;
mod restart;

use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;

use crate::clock::ManualClock;
use crate::coordinator::runtime::InMemoryCoordinatorLog;
use crate::coordinator::service::RequestContext;
use crate::coordinator::txn::{
    MarkerError, MarkerSpec, ProducerIdAllocError, ProducerIdAllocator, TransactionCoordinator,
    TxnConfig, TxnMarkerWriter,
};
use crate::error::ErrorCode;
use crate::protocol::messages::add_offsets_to_txn_request::AddOffsetsToTxnRequest;
use crate::protocol::messages::add_partitions_to_txn_request::{
    AddPartitionsToTxnRequest, AddPartitionsToTxnTopic,
};
use crate::protocol::messages::add_partitions_to_txn_response::AddPartitionsToTxnResponse;
use crate::protocol::messages::end_txn_request::EndTxnRequest;
use crate::protocol::messages::end_txn_response::EndTxnResponse;
use crate::protocol::messages::init_producer_id_request::InitProducerIdRequest;
use crate::protocol::messages::init_producer_id_response::InitProducerIdResponse;

pub(crate) const TID: &str = "txn-a";
pub(crate) const TIMEOUT: i32 = 60_000;

pub(crate) fn code(e: ErrorCode) -> i16 {
    e.code()
}

/// Producer ids 1000, 1001, ...; `fail` makes allocation fail.
#[derive(Default)]
pub(crate) struct CountingIds {
    next: AtomicI64,
    pub fail: AtomicBool,
}

impl ProducerIdAllocator for CountingIds {
    fn generate_producer_id(&self) -> Result<i64, ProducerIdAllocError> {
        if self.fail.load(Ordering::SeqCst) {
            return Err(ProducerIdAllocError("no block".into()));
        }
        Ok(1000 + self.next.fetch_add(1, Ordering::SeqCst))
    }
}

/// One call of the marker writer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct MarkerCall {
    pub producer_id: i64,
    pub producer_epoch: i16,
    pub commit: bool,
    pub coordinator_epoch: i32,
    pub transaction_version: i16,
    pub partitions: Vec<(String, i32)>,
}

#[derive(Default)]
pub(crate) struct RecordingMarkers {
    pub calls: Mutex<Vec<MarkerCall>>,
    pub fail: AtomicBool,
}

impl TxnMarkerWriter for RecordingMarkers {
    fn write_markers(
        &self,
        marker: &MarkerSpec,
        partitions: &[(String, i32)],
    ) -> Result<(), MarkerError> {
        if self.fail.load(Ordering::SeqCst) {
            return Err(MarkerError::Retriable("partition offline".into()));
        }
        self.calls.lock().push(MarkerCall {
            producer_id: marker.producer_id,
            producer_epoch: marker.producer_epoch,
            commit: marker.commit,
            coordinator_epoch: marker.coordinator_epoch,
            transaction_version: marker.transaction_version,
            partitions: partitions.to_vec(),
        });
        Ok(())
    }
}

/// A coordinator with every partition loaded (empty), and its collaborators.
pub(crate) struct Harness {
    pub coord: TransactionCoordinator,
    pub log: Arc<InMemoryCoordinatorLog>,
    pub ids: Arc<CountingIds>,
    pub markers: Arc<RecordingMarkers>,
    pub clock: Arc<ManualClock>,
    pub config: TxnConfig,
}

impl Harness {
    pub fn new() -> Self {
        Self::with_config(TxnConfig::default())
    }

    pub fn with_config(config: TxnConfig) -> Self {
        let log = Arc::new(InMemoryCoordinatorLog::new());
        let ids = Arc::new(CountingIds::default());
        let markers = Arc::new(RecordingMarkers::default());
        let clock = ManualClock::new(1_000_000);
        let coord = TransactionCoordinator::new(
            config.clone(),
            clock.clone(),
            log.clone(),
            ids.clone(),
            markers.clone(),
        );
        for p in 0..config.transaction_state_log_num_partitions {
            coord.load(p, Vec::new());
        }
        Harness {
            coord,
            log,
            ids,
            markers,
            clock,
            config,
        }
    }

    /// A second coordinator over the same log, allocator and markers, loading every partition
    /// from the records written so far: a restart.
    pub fn restart(&self) -> TransactionCoordinator {
        let coord = TransactionCoordinator::new(
            self.config.clone(),
            self.clock.clone(),
            self.log.clone(),
            self.ids.clone(),
            self.markers.clone(),
        );
        for p in 0..self.config.transaction_state_log_num_partitions {
            coord.load(p, self.log.records(p));
        }
        coord
    }

    pub fn partition(&self, tid: &str) -> i32 {
        self.coord.partition_for(tid)
    }

    pub fn markers(&self) -> Vec<MarkerCall> {
        self.markers.calls.lock().clone()
    }

    pub fn fail_markers(&self, fail: bool) {
        self.markers.fail.store(fail, Ordering::SeqCst);
    }

    pub fn init(&self, version: i16, tid: &str, timeout: i32) -> InitProducerIdResponse {
        init_with(&self.coord, version, tid, timeout, -1, -1)
    }

    /// InitProducerId v4 that must succeed.
    pub fn init_ok(&self, tid: &str) -> (i64, i16) {
        let r = self.init(4, tid, TIMEOUT);
        assert_eq!(r.error_code, 0, "{r:?}");
        (r.producer_id, r.producer_epoch)
    }

    pub fn add(
        &self,
        version: i16,
        tid: &str,
        pid: i64,
        epoch: i16,
        partitions: &[(&str, i32)],
    ) -> AddPartitionsToTxnResponse {
        add_with(&self.coord, version, tid, pid, epoch, partitions)
    }

    /// AddPartitionsToTxn v3 whose every partition must succeed.
    pub fn add_ok(&self, tid: &str, pid: i64, epoch: i16, partitions: &[(&str, i32)]) {
        let r = self.add(3, tid, pid, epoch, partitions);
        assert_eq!(codes_v3(&r), vec![0; partitions.len()], "{r:?}");
    }

    pub fn add_offsets(&self, version: i16, tid: &str, pid: i64, epoch: i16, group: &str) -> i16 {
        self.coord
            .add_offsets_to_txn(
                &RequestContext::new(version, "c", "h"),
                &AddOffsetsToTxnRequest {
                    transactional_id: tid.into(),
                    producer_id: pid,
                    producer_epoch: epoch,
                    group_id: group.into(),
                    ..Default::default()
                },
                &|g: &str| crate::coordinator::partition_for(g, 50),
            )
            .error_code
    }

    pub fn end(&self, version: i16, tid: &str, pid: i64, epoch: i16, commit: bool) -> i16 {
        end_with(&self.coord, version, tid, pid, epoch, commit)
    }
}

/// Topics "t1".."t3" with 3 partitions exist; nothing else does.
pub(crate) fn exists(topic: &str, partition: i32) -> bool {
    matches!(topic, "t1" | "t2" | "t3") && (0..3).contains(&partition)
}

pub(crate) fn init_with(
    coord: &TransactionCoordinator,
    version: i16,
    tid: &str,
    timeout: i32,
    pid: i64,
    epoch: i16,
) -> InitProducerIdResponse {
    coord.init_producer_id(
        &RequestContext::new(version, "c", "h"),
        &InitProducerIdRequest {
            transactional_id: Some(tid.to_string()),
            transaction_timeout_ms: timeout,
            producer_id: pid,
            producer_epoch: epoch,
            ..Default::default()
        },
    )
}

pub(crate) fn add_with(
    coord: &TransactionCoordinator,
    version: i16,
    tid: &str,
    pid: i64,
    epoch: i16,
    partitions: &[(&str, i32)],
) -> AddPartitionsToTxnResponse {
    let topics = topics_of(partitions);
    coord.add_partitions_to_txn(
        &RequestContext::new(version, "c", "h"),
        &AddPartitionsToTxnRequest {
            v3_and_below_transactional_id: tid.into(),
            v3_and_below_producer_id: pid,
            v3_and_below_producer_epoch: epoch,
            v3_and_below_topics: topics,
            ..Default::default()
        },
        &exists,
    )
}

/// `partitions` grouped by topic, in order, as AddPartitionsToTxn carries them.
pub(crate) fn topics_of(partitions: &[(&str, i32)]) -> Vec<AddPartitionsToTxnTopic> {
    let mut topics: Vec<AddPartitionsToTxnTopic> = Vec::new();
    for (t, p) in partitions {
        match topics.iter_mut().find(|x| x.name == *t) {
            Some(x) => x.partitions.push(*p),
            None => topics.push(AddPartitionsToTxnTopic {
                name: t.to_string(),
                partitions: vec![*p],
                ..Default::default()
            }),
        }
    }
    topics
}

pub(crate) fn end_with(
    coord: &TransactionCoordinator,
    version: i16,
    tid: &str,
    pid: i64,
    epoch: i16,
    commit: bool,
) -> i16 {
    end_response(coord, version, tid, pid, epoch, commit).error_code
}

pub(crate) fn end_response(
    coord: &TransactionCoordinator,
    version: i16,
    tid: &str,
    pid: i64,
    epoch: i16,
    commit: bool,
) -> EndTxnResponse {
    coord.end_txn(
        &RequestContext::new(version, "c", "h"),
        &EndTxnRequest {
            transactional_id: tid.into(),
            producer_id: pid,
            producer_epoch: epoch,
            committed: commit,
            ..Default::default()
        },
    )
}

/// Per-partition codes of a v0-3 AddPartitionsToTxn response, in order.
pub(crate) fn codes_v3(r: &AddPartitionsToTxnResponse) -> Vec<i16> {
    r.results_by_topic_v3_and_below
        .iter()
        .flat_map(|t| {
            t.results_by_partition
                .iter()
                .map(|p| p.partition_error_code)
        })
        .collect()
}
