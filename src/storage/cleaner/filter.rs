//! Rewriting one record batch during a clean (the batch half of Kafka's `Cleaner.cleanInto` and
//! `MemoryRecords.filterTo`): which records a batch keeps, and how a batch that lost records
//! is rebuilt with its base offset, last offset delta, producer id/epoch/base sequence and
//! partition leader epoch unchanged, and its CRC-32C recomputed.
//!
//! Rules, as Kafka 3+:
//! - a record is kept when it has a key and its offset is at least the offset the offset map
//!   holds for that key (keys absent from the map are kept);
//! - a tombstone (null value) is kept until the batch's delete horizon. A batch without the
//!   delete-horizon attribute (bit 6) that keeps a tombstone is rewritten with the bit set and
//!   base timestamp = now + `delete.retention.ms` (KIP-534); record timestamps are unchanged
//!   because their deltas are recomputed against the new base timestamp;
//! - records without a key are dropped;
//! - control batches (transaction markers) are always kept as they are (Kafka also removes a
//!   marker once its transaction's data is gone and delete.retention.ms passed: not yet here);
//! - the records of aborted transactions (known from the `.txnindex` files) are removed, and
//!   never enter the offset map, so an aborted write cannot shadow a committed value;
//! - a batch that keeps no record is dropped, unless it is the last data batch of its
//!   producer: then its bare 61-byte header stays, so the producer's epoch and last sequence
//!   survive for idempotence (Kafka's `BatchRetention.RETAIN_EMPTY`).
//!
//! Pure functions over bytes; no I/O.

use std::collections::HashMap;

use bytes::{Bytes, BytesMut};

use crate::protocol::records::batch::{
    compute_crc, BatchHeader, ATTRIBUTES_OFFSET, BASE_OFFSET_OFFSET, BASE_SEQUENCE_OFFSET,
    BASE_TIMESTAMP_OFFSET, BATCH_LENGTH_OFFSET, COMPRESSION_CODEC_MASK, CRC_OFFSET,
    DELETE_HORIZON_FLAG_MASK, LAST_OFFSET_DELTA_OFFSET, LOG_OVERHEAD, MAGIC_OFFSET,
    MAX_TIMESTAMP_OFFSET, PARTITION_LEADER_EPOCH_OFFSET, PRODUCER_EPOCH_OFFSET, PRODUCER_ID_OFFSET,
    RECORDS_COUNT_OFFSET, RECORD_BATCH_OVERHEAD,
};
use crate::protocol::records::{
    decode_records, Compression, RecordBatchBuilder, RecordError, TimestampType,
};

/// What the cleaner knows while it filters batches.
pub(super) struct FilterContext<'a> {
    /// Key -> the latest offset of that key in the dirty section.
    pub map: &'a HashMap<Bytes, i64>,
    /// Producer id -> last offset of its last data batch in the whole log.
    pub producer_last_offsets: &'a HashMap<i64, i64>,
    pub now_ms: i64,
    pub delete_retention_ms: i64,
    pub max_decompressed_bytes: usize,
    /// Aborted transactions: their data batches keep no record.
    pub aborted: &'a super::AbortedRanges,
}

/// The fate of one batch.
#[derive(Debug)]
pub(super) enum Filtered {
    /// Written unchanged.
    Original,
    /// Written as these bytes (fewer records, a new delete horizon, or an empty header).
    Rewritten(BytesMut),
    /// Not written.
    Dropped,
}

/// Counts a filter pass adds to the clean's statistics.
#[derive(Debug, Default, Clone, Copy)]
pub(super) struct FilterCounts {
    pub records_read: u64,
    pub records_retained: u64,
    pub tombstones_removed: u64,
    /// Earliest delete horizon among the tombstones kept, if any.
    pub earliest_delete_horizon_ms: Option<i64>,
}

fn has_delete_horizon(h: &BatchHeader) -> bool {
    h.attributes & DELETE_HORIZON_FLAG_MASK != 0
}

/// Filters one CRC-checked batch.
pub(super) fn filter_batch(
    batch: &[u8],
    h: &BatchHeader,
    cx: &FilterContext<'_>,
    counts: &mut FilterCounts,
) -> Result<Filtered, RecordError> {
    if h.is_control() {
        return Ok(Filtered::Original);
    }
    if cx.aborted.contains(h) {
        // Kafka's cleaner discards aborted transactional data; the producer's last batch
        // keeps its bare header, as for any batch that keeps nothing.
        counts.records_read += h.records_count.max(0) as u64;
        let last_of_producer =
            cx.producer_last_offsets.get(&h.producer_id) == Some(&h.last_offset());
        return Ok(if last_of_producer {
            Filtered::Rewritten(empty_batch(h))
        } else {
            Filtered::Dropped
        });
    }
    let records = decode_records(batch, cx.max_decompressed_bytes)?;
    counts.records_read += records.len() as u64;
    // With the delete-horizon bit set the base timestamp is the horizon (KIP-534).
    let existing_horizon = has_delete_horizon(h).then_some(h.base_timestamp);
    let mut kept = Vec::with_capacity(records.len());
    let mut keeps_tombstone = false;
    for r in records {
        let offset = h.base_offset + r.offset_delta as i64;
        let Some(key) = &r.key else { continue };
        if cx.map.get(key).is_some_and(|&latest| offset < latest) {
            continue;
        }
        if r.value.is_none() {
            if existing_horizon.is_some_and(|horizon| cx.now_ms >= horizon) {
                counts.tombstones_removed += 1;
                continue;
            }
            keeps_tombstone = true;
        }
        kept.push(r);
    }
    counts.records_retained += kept.len() as u64;
    let horizon = match (keeps_tombstone, existing_horizon) {
        (false, h) => h,
        (true, Some(h)) => Some(h),
        (true, None) => Some(cx.now_ms.saturating_add(cx.delete_retention_ms)),
    };
    if keeps_tombstone {
        if let Some(hz) = horizon {
            counts.earliest_delete_horizon_ms =
                Some(counts.earliest_delete_horizon_ms.map_or(hz, |e| e.min(hz)));
        }
    }
    let all_kept = kept.len() == h.records_count.max(0) as usize;
    if all_kept && horizon == existing_horizon {
        return Ok(Filtered::Original);
    }
    if kept.is_empty() {
        let last_of_producer = h.producer_id >= 0
            && cx.producer_last_offsets.get(&h.producer_id) == Some(&h.last_offset());
        return Ok(if last_of_producer {
            Filtered::Rewritten(empty_batch(h))
        } else {
            Filtered::Dropped
        });
    }

    let base_ts = horizon.unwrap_or(h.base_timestamp);
    let log_append = h.timestamp_type_is_log_append();
    let mut builder = RecordBatchBuilder::new(h.base_offset)
        .partition_leader_epoch(h.partition_leader_epoch)
        .producer(h.producer_id, h.producer_epoch, h.base_sequence)
        .transactional(h.is_transactional())
        .compression(Compression::from_attributes(h.attributes)?)
        .timestamp_type(if log_append {
            TimestampType::LogAppendTime
        } else {
            TimestampType::CreateTime
        })
        .base_timestamp_ms(base_ts);
    let mut max_ts = i64::MIN;
    for mut r in kept {
        let ts = h.base_timestamp.wrapping_add(r.timestamp_delta);
        max_ts = max_ts.max(ts);
        r.timestamp_delta = ts.wrapping_sub(base_ts);
        builder.push_record(r);
    }
    let mut out = builder.build();
    // The last offset delta is the original one, so the batch's last sequence is unchanged
    // (Kafka's `overrideLastOffset`).
    out[LAST_OFFSET_DELTA_OFFSET..LAST_OFFSET_DELTA_OFFSET + 4]
        .copy_from_slice(&h.last_offset_delta.to_be_bytes());
    // LogAppendTime batches carry the append time as max timestamp; CreateTime ones the
    // largest timestamp among the records kept.
    let max_timestamp = if log_append { h.max_timestamp } else { max_ts };
    out[MAX_TIMESTAMP_OFFSET..MAX_TIMESTAMP_OFFSET + 8]
        .copy_from_slice(&max_timestamp.to_be_bytes());
    if horizon.is_some() {
        let attrs = i16::from_be_bytes([out[ATTRIBUTES_OFFSET], out[ATTRIBUTES_OFFSET + 1]])
            | DELETE_HORIZON_FLAG_MASK;
        out[ATTRIBUTES_OFFSET..ATTRIBUTES_OFFSET + 2].copy_from_slice(&attrs.to_be_bytes());
    }
    let crc = compute_crc(&out);
    out[CRC_OFFSET..CRC_OFFSET + 4].copy_from_slice(&crc.to_be_bytes());
    Ok(Filtered::Rewritten(out))
}

/// A batch header with no records that keeps `h`'s offsets, producer fields, timestamp type,
/// transactional flag and partition leader epoch (Kafka's `DefaultRecordBatch.writeEmptyHeader`:
/// base and max timestamp are the original max timestamp).
pub(super) fn empty_batch(h: &BatchHeader) -> BytesMut {
    let mut out = BytesMut::zeroed(RECORD_BATCH_OVERHEAD);
    out[BASE_OFFSET_OFFSET..BASE_OFFSET_OFFSET + 8].copy_from_slice(&h.base_offset.to_be_bytes());
    let len = (RECORD_BATCH_OVERHEAD - LOG_OVERHEAD) as i32;
    out[BATCH_LENGTH_OFFSET..BATCH_LENGTH_OFFSET + 4].copy_from_slice(&len.to_be_bytes());
    out[PARTITION_LEADER_EPOCH_OFFSET..PARTITION_LEADER_EPOCH_OFFSET + 4]
        .copy_from_slice(&h.partition_leader_epoch.to_be_bytes());
    out[MAGIC_OFFSET] = h.magic as u8;
    let attrs = h.attributes & !COMPRESSION_CODEC_MASK & !DELETE_HORIZON_FLAG_MASK;
    out[ATTRIBUTES_OFFSET..ATTRIBUTES_OFFSET + 2].copy_from_slice(&attrs.to_be_bytes());
    out[LAST_OFFSET_DELTA_OFFSET..LAST_OFFSET_DELTA_OFFSET + 4]
        .copy_from_slice(&h.last_offset_delta.to_be_bytes());
    out[BASE_TIMESTAMP_OFFSET..BASE_TIMESTAMP_OFFSET + 8]
        .copy_from_slice(&h.max_timestamp.to_be_bytes());
    out[MAX_TIMESTAMP_OFFSET..MAX_TIMESTAMP_OFFSET + 8]
        .copy_from_slice(&h.max_timestamp.to_be_bytes());
    out[PRODUCER_ID_OFFSET..PRODUCER_ID_OFFSET + 8].copy_from_slice(&h.producer_id.to_be_bytes());
    out[PRODUCER_EPOCH_OFFSET..PRODUCER_EPOCH_OFFSET + 2]
        .copy_from_slice(&h.producer_epoch.to_be_bytes());
    out[BASE_SEQUENCE_OFFSET..BASE_SEQUENCE_OFFSET + 4]
        .copy_from_slice(&h.base_sequence.to_be_bytes());
    out[RECORDS_COUNT_OFFSET..RECORDS_COUNT_OFFSET + 4].copy_from_slice(&0i32.to_be_bytes());
    let crc = compute_crc(&out);
    out[CRC_OFFSET..CRC_OFFSET + 4].copy_from_slice(&crc.to_be_bytes());
    out
}
