//! Rewriting validated produce batches before they are stored, as Kafka's `LogValidator` does
//! when it cannot assign offsets in place (`buildRecordsAndAssignOffsets`):
//! - the topic's `compression.type` names a codec other than the producer's (`producer` keeps
//!   the producer's codec, `uncompressed` stores without compression);
//! - a compressed batch's inner offset deltas are not 0, 1, 2, ... (old clients).
//!
//! A rebuilt batch keeps the producer id, epoch and base sequence and the transactional flag,
//! keeps every record's key, value, headers and timestamp, and gets offset deltas 0..n; the
//! broker then assigns offsets, leader epoch and LogAppendTime to it like to any other batch.
//! Rebuilding materialises the records, so it is bounded by
//! [`REBUILD_MAX_UNCOMPRESSED_BYTES`]; the rebuilt batch must fit `max.message.bytes`, as Kafka
//! checks after recompression.

use std::ops::Range;

use bytes::{Bytes, BytesMut};

use super::batch::{parse_header, BatchError, BatchHeader};
use super::builder::RecordBatchBuilder;
use super::compression::Compression;
use super::error::RecordError;
use super::record::decode_records;
use super::validator::ValidatedBatch;

/// The most decompressed record bytes a batch may hold to be rebuilt (recompressed). Kafka has
/// no such bound; Strata keeps one so that a small batch that inflates to gigabytes cannot
/// make the broker hold them.
pub const REBUILD_MAX_UNCOMPRESSED_BYTES: usize = 64 << 20;

/// The batches as they will be stored, with their headers: `records` unchanged when nothing
/// needs rewriting (the common case, no copy), else a new buffer.
pub fn apply_topic_compression(
    records: Bytes,
    validated: Vec<ValidatedBatch>,
    target: Option<Compression>,
    max_message_bytes: usize,
) -> Result<(Bytes, Vec<(BatchHeader, Range<usize>)>), BatchError> {
    let rebuild = |b: &ValidatedBatch| {
        b.needs_rebuild || target.is_some_and(|t| t.id() != b.header.compression())
    };
    if !validated.iter().any(rebuild) {
        let headers = validated.into_iter().map(|b| (b.header, b.range)).collect();
        return Ok((records, headers));
    }
    let mut out = BytesMut::with_capacity(records.len());
    let mut headers = Vec::with_capacity(validated.len());
    for b in &validated {
        let start = out.len();
        if rebuild(b) {
            let codec = match target {
                Some(t) => t,
                None => Compression::from_id(b.header.compression())
                    .map_err(|_| BatchError::CorruptMessage("unknown compression codec"))?,
            };
            let rebuilt = rebuild_batch(&records[b.range.clone()], &b.header, codec)?;
            if rebuilt.len() > max_message_bytes {
                return Err(BatchError::MessageTooLarge {
                    size: rebuilt.len(),
                    max: max_message_bytes,
                });
            }
            // The one parse of a batch the broker built itself.
            let header = parse_header(&rebuilt)?;
            out.extend_from_slice(&rebuilt);
            headers.push((header, start..out.len()));
        } else {
            out.extend_from_slice(&records[b.range.clone()]);
            headers.push((b.header, start..out.len()));
        }
    }
    Ok((out.freeze(), headers))
}

/// One batch rewritten with `codec` and offset deltas 0..n.
pub fn rebuild_batch(
    batch: &[u8],
    header: &BatchHeader,
    codec: Compression,
) -> Result<BytesMut, BatchError> {
    let records = decode_records(batch, REBUILD_MAX_UNCOMPRESSED_BYTES).map_err(|e| match e {
        RecordError::DecompressedTooLarge { max_bytes } => BatchError::MessageTooLarge {
            size: max_bytes + 1,
            max: max_bytes,
        },
        RecordError::Decompression { codec } => BatchError::Decompression(codec),
        _ => BatchError::InvalidRecord("record could not be decoded for recompression"),
    })?;
    let mut builder = RecordBatchBuilder::new(0)
        .producer(
            header.producer_id,
            header.producer_epoch,
            header.base_sequence,
        )
        .transactional(header.is_transactional())
        .compression(codec)
        .base_timestamp_ms(header.base_timestamp);
    for (i, mut r) in records.into_iter().enumerate() {
        r.offset_delta = i as i32;
        builder.push_record(r);
    }
    Ok(builder.build())
}
