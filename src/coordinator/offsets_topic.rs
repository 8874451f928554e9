//! The coordinators' internal topics as their logs: `__consumer_offsets` for the group
//! coordinator and `__transaction_state` for the transaction coordinator. Appends coordinator
//! records as record batches (transactional ones for TxnOffsetCommit), reads partitions back in
//! log order for loading (records, transactional records and markers), and creates the topics
//! on first use with Kafka's settings (50 partitions, compacted).
use std::collections::BTreeMap;
use std::sync::Arc;

use crate::clock::SharedClock;
use crate::coordinator::txn::{MarkerError, MarkerSpec, TxnMarkerWriter};
use crate::coordinator::txn_offsets::LoadItem;
use crate::coordinator::{
    CoordinatorLog, CoordinatorLogError, CoordinatorRecord, GroupCoordinator,
};
use crate::protocol::records::batch::{parse_header, BatchHeader};
use crate::protocol::records::control::parse_end_txn_marker_batch;
use crate::protocol::records::{decode_records, RecordBatchBuilder};
use crate::replica::{PartitionError, ReplicaManager};

pub const OFFSETS_TOPIC: &str = "__consumer_offsets";
pub const TRANSACTION_TOPIC: &str = "__transaction_state";

pub use crate::controller::image::is_internal_topic;

/// Largest decompressed batch read back while loading (coordinator batches are small).
const MAX_LOAD_BATCH_BYTES: usize = 64 * 1024 * 1024;

/// A coordinator's log over the partitions of one internal topic.
pub struct InternalTopicLog {
    pub topic: &'static str,
    pub replicas: Arc<ReplicaManager>,
    pub clock: SharedClock,
    /// -1, as Kafka's coordinators append: refused with NOT_ENOUGH_REPLICAS when the ISR is
    /// below `min.insync.replicas`, and replicated before it counts (at once for a sole
    /// replica).
    pub required_acks: i16,
}

impl InternalTopicLog {
    fn append_batch(
        &self,
        partition: i32,
        producer: Option<(i64, i16)>,
        records: Vec<CoordinatorRecord>,
    ) -> Result<(), CoordinatorLogError> {
        if records.is_empty() {
            return Ok(());
        }
        let Some(p) = self.replicas.get(self.topic, partition) else {
            return Err(CoordinatorLogError::NotLeader);
        };
        let now = self.clock.now_ms();
        let mut builder = RecordBatchBuilder::new(0).base_timestamp_ms(now);
        if let Some((producer_id, producer_epoch)) = producer {
            builder = builder
                .producer(producer_id, producer_epoch, -1)
                .transactional(true);
        }
        for r in records {
            builder.append(now, Some(r.key), r.value, Vec::new());
        }
        match p.append_coordinator_records(builder.build().freeze(), self.required_acks, now) {
            Ok(_) => Ok(()),
            Err(PartitionError::MessageTooLarge { .. }) => Err(CoordinatorLogError::RecordTooLarge),
            Err(PartitionError::NotLeaderOrFollower) => Err(CoordinatorLogError::NotLeader),
            Err(PartitionError::NotEnoughReplicas { .. }) => Err(CoordinatorLogError::NotAvailable),
            Err(e) => Err(CoordinatorLogError::Storage(e.message())),
        }
    }
}

impl CoordinatorLog for InternalTopicLog {
    fn append(
        &self,
        partition: i32,
        records: Vec<CoordinatorRecord>,
    ) -> Result<(), CoordinatorLogError> {
        self.append_batch(partition, None, records)
    }

    fn append_transactional(
        &self,
        partition: i32,
        producer_id: i64,
        producer_epoch: i16,
        records: Vec<CoordinatorRecord>,
    ) -> Result<(), CoordinatorLogError> {
        self.append_batch(partition, Some((producer_id, producer_epoch)), records)
    }

    fn end_offset(&self, partition: i32) -> i64 {
        self.replicas
            .get(self.topic, partition)
            .map(|p| p.log_end_offset())
            .unwrap_or(0)
    }

    fn is_replicated(&self, partition: i32, end_offset: i64) -> bool {
        if self.required_acks != -1 {
            return true;
        }
        self.replicas
            .get(self.topic, partition)
            .is_some_and(|p| p.is_leader() && p.high_watermark() >= end_offset)
    }
}

/// Everything in one partition of an internal topic, oldest first.
pub fn read_partition(replicas: &ReplicaManager, topic: &str, partition: i32) -> Vec<LoadItem> {
    read_partition_at(replicas, topic, partition)
        .into_iter()
        .map(|(_, item)| item)
        .collect()
}

/// Everything in one partition of an internal topic with the offset of each item (a
/// marker's is its batch's), oldest first.
pub fn read_partition_at(
    replicas: &ReplicaManager,
    topic: &str,
    partition: i32,
) -> Vec<(i64, LoadItem)> {
    let Some(p) = replicas.get(topic, partition) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let mut offset = p.log_start_offset();
    let end = p.log_end_offset();
    while offset < end {
        let data = match p.log.read(offset, 4 * 1024 * 1024, end, true) {
            Ok(d) if !d.records.is_empty() => d.records,
            _ => break,
        };
        let mut pos = 0;
        let mut progressed = false;
        while pos + 61 <= data.len() {
            let Ok(h) = parse_header(&data[pos..]) else {
                break;
            };
            let size = h.total_size();
            if pos + size > data.len() {
                break;
            }
            if h.last_offset() >= offset {
                push_items(&data[pos..pos + size], &h, offset, &mut out);
            }
            offset = offset.max(h.last_offset() + 1);
            progressed = true;
            pos += size;
        }
        if !progressed {
            break;
        }
    }
    out
}

fn push_items(batch: &[u8], h: &BatchHeader, from_offset: i64, out: &mut Vec<(i64, LoadItem)>) {
    if h.is_control() {
        if let Ok(marker) = parse_end_txn_marker_batch(batch) {
            out.push((
                h.base_offset,
                LoadItem::Marker {
                    producer_id: h.producer_id,
                    commit: marker.commit,
                },
            ));
        }
        return;
    }
    match decode_records(batch, MAX_LOAD_BATCH_BYTES) {
        Ok(records) => {
            for r in records {
                let offset = h.base_offset + (r.offset_delta as i64);
                if offset < from_offset {
                    continue;
                }
                let Some(key) = r.key else { continue };
                let record = CoordinatorRecord {
                    key,
                    value: r.value,
                };
                out.push((
                    offset,
                    if h.is_transactional() {
                        LoadItem::TxnRecord {
                            producer_id: h.producer_id,
                            record,
                        }
                    } else {
                        LoadItem::Record(record)
                    },
                ));
            }
        }
        Err(e) => {
            tracing::warn!(offset = h.base_offset, error = %e, "skipping undecodable internal batch")
        }
    }
}

/// Plain records only (the transaction log has no transactional batches).
pub fn plain_records(items: Vec<LoadItem>) -> Vec<CoordinatorRecord> {
    items
        .into_iter()
        .filter_map(|i| match i {
            LoadItem::Record(r) => Some(r),
            _ => None,
        })
        .collect()
}

/// Overrides the internal topics are created with.
pub fn internal_topic_configs(segment_bytes: i32) -> BTreeMap<String, String> {
    let mut c = BTreeMap::new();
    c.insert("cleanup.policy".to_string(), "compact".to_string());
    c.insert("compression.type".to_string(), "producer".to_string());
    c.insert("segment.bytes".to_string(), segment_bytes.to_string());
    c
}

/// Writes transaction markers to local partitions (WriteTxnMarkers on a single node), and
/// tells the group coordinator when a marker lands on a `__consumer_offsets` partition.
#[derive(Clone)]
pub struct LocalMarkerWriter {
    pub replicas: Arc<ReplicaManager>,
    pub groups: Arc<GroupCoordinator>,
    pub clock: SharedClock,
}

/// Writes one COMMIT/ABORT marker to a partition led here and, on a `__consumer_offsets`
/// partition, completes the producer's pending transactional offsets. The one path for both
/// the local coordinator ([`LocalMarkerWriter`]) and inbound WriteTxnMarkers. Does not wake
/// waiting fetches; callers do once per request.
pub fn write_marker_to_partition(
    replicas: &ReplicaManager,
    groups: &GroupCoordinator,
    topic: &str,
    index: i32,
    marker: MarkerSpec,
    now_ms: i64,
) -> Result<Option<i64>, PartitionError> {
    let Some(p) = replicas.get(topic, index) else {
        return Ok(None);
    };
    let offset = p.write_marker(&marker, now_ms)?;
    if topic == OFFSETS_TOPIC {
        groups.complete_txn(index, marker.producer_id, marker.commit);
    }
    Ok(Some(offset))
}

impl TxnMarkerWriter for LocalMarkerWriter {
    fn write_markers(
        &self,
        marker: &MarkerSpec,
        partitions: &[(String, i32)],
    ) -> Result<(), MarkerError> {
        let now = self.clock.now_ms();
        for (topic, index) in partitions {
            // A partition of a deleted topic (None) counts as written, as in Kafka.
            write_marker_to_partition(&self.replicas, &self.groups, topic, *index, *marker, now)
                .map_err(|e| MarkerError::Retriable(e.message()))?;
        }
        Ok(())
    }
}

/// Replays every partition of the offsets topic into the group coordinator.
pub fn load_groups(groups: &GroupCoordinator, replicas: &ReplicaManager, partitions: i32) {
    for p in 0..partitions {
        groups.load_items(p, read_partition(replicas, OFFSETS_TOPIC, p));
    }
}
