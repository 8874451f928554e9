//! `__consumer_offsets` as the group coordinator's log: appends coordinator records as record
//! batches to the group's partition, loads (replays) every partition when the topic is opened,
//! and creates the topic on first use with Kafka's settings (`offsets.topic.num.partitions`,
//! compacted, `offsets.topic.segment.bytes`).
use std::collections::BTreeMap;
use std::sync::Arc;

use crate::clock::SharedClock;
use crate::coordinator::{
    CoordinatorLog, CoordinatorLogError, CoordinatorRecord, GroupCoordinator,
};
use crate::protocol::records::{decode_records, BatchHeader, RecordBatchBuilder};
use crate::replica::{PartitionError, ReplicaManager};

pub const OFFSETS_TOPIC: &str = "__consumer_offsets";

/// Largest decompressed batch read back while loading (coordinator batches are small).
const MAX_LOAD_BATCH_BYTES: usize = 64 * 1024 * 1024;

pub struct OffsetsTopicLog {
    pub replicas: Arc<ReplicaManager>,
    pub clock: SharedClock,
}

impl CoordinatorLog for OffsetsTopicLog {
    fn append(
        &self,
        partition: i32,
        records: Vec<CoordinatorRecord>,
    ) -> Result<(), CoordinatorLogError> {
        if records.is_empty() {
            return Ok(());
        }
        let Some(p) = self.replicas.get(OFFSETS_TOPIC, partition) else {
            return Err(CoordinatorLogError::NotLeader);
        };
        let now = self.clock.now_ms();
        let mut builder = RecordBatchBuilder::new(0).base_timestamp_ms(now);
        for r in records {
            builder.append(now, Some(r.key), r.value, Vec::new());
        }
        match p.append_records(builder.build().freeze(), now) {
            Ok(_) => {
                self.replicas.notify_appended();
                Ok(())
            }
            Err(PartitionError::MessageTooLarge { .. }) => Err(CoordinatorLogError::RecordTooLarge),
            Err(e) => Err(CoordinatorLogError::Storage(e.message())),
        }
    }
}

/// Every coordinator record of one partition, oldest first (control batches skipped).
pub fn read_partition(replicas: &ReplicaManager, partition: i32) -> Vec<CoordinatorRecord> {
    let Some(p) = replicas.get(OFFSETS_TOPIC, partition) else {
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
            let Ok(h) = crate::protocol::records::batch::parse_header(&data[pos..]) else {
                break;
            };
            let size = h.total_size();
            if pos + size > data.len() {
                break;
            }
            if !h.is_control() && h.last_offset() >= offset {
                push_records(&data[pos..pos + size], &h, offset, &mut out);
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

fn push_records(batch: &[u8], h: &BatchHeader, from_offset: i64, out: &mut Vec<CoordinatorRecord>) {
    match decode_records(batch, MAX_LOAD_BATCH_BYTES) {
        Ok(records) => {
            for r in records {
                if h.base_offset + (r.offset_delta as i64) < from_offset {
                    continue;
                }
                if let Some(key) = r.key {
                    out.push(CoordinatorRecord {
                        key,
                        value: r.value,
                    });
                }
            }
        }
        Err(e) => {
            tracing::warn!(offset = h.base_offset, error = %e, "skipping undecodable __consumer_offsets batch")
        }
    }
}

/// Replays every partition of the offsets topic into the coordinator.
pub fn load_all(groups: &GroupCoordinator, replicas: &ReplicaManager, partitions: i32) {
    for p in 0..partitions {
        let records = read_partition(replicas, p);
        groups.load(p, records);
    }
}

/// Overrides the offsets topic is created with.
pub fn offsets_topic_configs(segment_bytes: i32) -> BTreeMap<String, String> {
    let mut c = BTreeMap::new();
    c.insert("cleanup.policy".to_string(), "compact".to_string());
    c.insert("compression.type".to_string(), "producer".to_string());
    c.insert("segment.bytes".to_string(), segment_bytes.to_string());
    c
}
