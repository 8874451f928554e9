//! Record batch v2 header view, validation and in-place mutation.
//!
//! Owns the 61-byte header layout of Kafka's `DefaultRecordBatch` (magic 2): parsing it,
//! checking one batch's framing (lengths, magic, CRC-32C over bytes 21..end), and the broker's
//! in-place edits (base offset, partition leader epoch, LogAppendTime). The record-level
//! produce validation is [`super::validator`]'s. Batches stay opaque bytes: records are only
//! walked, never decoded into values. Knows nothing of storage.

use std::ops::Range;

use crate::error::ErrorCode;

/// Byte offsets of the header fields (`DefaultRecordBatch.*_OFFSET`).
pub const BASE_OFFSET_OFFSET: usize = 0;
pub const BATCH_LENGTH_OFFSET: usize = 8;
pub const PARTITION_LEADER_EPOCH_OFFSET: usize = 12;
pub const MAGIC_OFFSET: usize = 16;
pub const CRC_OFFSET: usize = 17;
pub const ATTRIBUTES_OFFSET: usize = 21;
pub const LAST_OFFSET_DELTA_OFFSET: usize = 23;
pub const BASE_TIMESTAMP_OFFSET: usize = 27;
pub const MAX_TIMESTAMP_OFFSET: usize = 35;
pub const PRODUCER_ID_OFFSET: usize = 43;
pub const PRODUCER_EPOCH_OFFSET: usize = 51;
pub const BASE_SEQUENCE_OFFSET: usize = 53;
pub const RECORDS_COUNT_OFFSET: usize = 57;
/// Size of the v2 header (`RECORD_BATCH_OVERHEAD`).
pub const RECORD_BATCH_OVERHEAD: usize = 61;
/// Base offset + batch length (`LOG_OVERHEAD`): bytes not counted in `batch_length`.
pub const LOG_OVERHEAD: usize = 12;
/// The only magic value Strata accepts.
pub const MAGIC_V2: i8 = 2;

pub const COMPRESSION_CODEC_MASK: i16 = 0x07;
pub const TIMESTAMP_TYPE_MASK: i16 = 0x08;
pub const TRANSACTIONAL_FLAG_MASK: i16 = 0x10;
pub const CONTROL_FLAG_MASK: i16 = 0x20;
pub const DELETE_HORIZON_FLAG_MASK: i16 = 0x40;

/// `RecordBatch.NO_PRODUCER_ID` and friends.
pub const NO_PRODUCER_ID: i64 = -1;
pub const NO_SEQUENCE: i32 = -1;
pub const NO_TIMESTAMP: i64 = -1;

/// Why a batch (or produce payload) was refused (header-level checks; record-level errors are
/// [`super::RecordError`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BatchError {
    /// Fewer bytes than a header or than the batch length says.
    Truncated { needed: usize, available: usize },
    /// A magic other than 2 (Kafka: UNSUPPORTED_FOR_MESSAGE_FORMAT / CORRUPT_MESSAGE).
    InvalidMagic(i8),
    /// CRC mismatch, inconsistent lengths or counts (Kafka: CORRUPT_MESSAGE).
    CorruptMessage(&'static str),
    /// A batch larger than the configured maximum (Kafka: MESSAGE_TOO_LARGE).
    MessageTooLarge { size: usize, max: usize },
    /// Record framing or a client-only rule is broken (Kafka: INVALID_RECORD).
    InvalidRecord(&'static str),
    /// A compressed records section its codec cannot decode (Kafka: CORRUPT_MESSAGE).
    Decompression(&'static str),
    /// Particular records were refused (KIP-467): INVALID_RECORD or INVALID_TIMESTAMP, Kafka's
    /// message for the batch, and each refused record's index and message.
    RecordErrors {
        code: ErrorCode,
        message: String,
        records: Vec<super::validator::RecordFailure>,
    },
    /// A produce payload with no batch at all.
    Empty,
}

impl std::fmt::Display for BatchError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BatchError::Truncated { needed, available } => write!(
                f,
                "record batch truncated: {available} bytes where {needed} are needed"
            ),
            BatchError::InvalidMagic(m) => {
                write!(f, "record batch magic {m} is not supported (only v2)")
            }
            BatchError::CorruptMessage(why) => write!(f, "corrupt record batch: {why}"),
            BatchError::MessageTooLarge { size, max } => write!(
                f,
                "record batch of {size} bytes is larger than the maximum of {max} bytes"
            ),
            BatchError::InvalidRecord(why) => write!(f, "invalid record: {why}"),
            BatchError::Empty => write!(f, "no record batch in the request"),
            BatchError::Decompression(why) => {
                write!(f, "the batch's compressed records cannot be read: {why}")
            }
            BatchError::RecordErrors { message, .. } => f.write_str(message),
        }
    }
}

impl std::error::Error for BatchError {}

impl BatchError {
    /// The Kafka error a produce request gets for this batch.
    pub fn code(&self) -> ErrorCode {
        ErrorCode::from(self)
    }
}

impl From<&BatchError> for ErrorCode {
    fn from(e: &BatchError) -> ErrorCode {
        match e {
            BatchError::InvalidMagic(_) => ErrorCode::UNSUPPORTED_FOR_MESSAGE_FORMAT,
            BatchError::MessageTooLarge { .. } => ErrorCode::MESSAGE_TOO_LARGE,
            BatchError::InvalidRecord(_) => ErrorCode::INVALID_RECORD,
            BatchError::RecordErrors { code, .. } => *code,
            BatchError::Truncated { .. }
            | BatchError::CorruptMessage(_)
            | BatchError::Decompression(_)
            | BatchError::Empty => ErrorCode::CORRUPT_MESSAGE,
        }
    }
}

/// A decoded copy of one v2 batch header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BatchHeader {
    pub base_offset: i64,
    pub batch_length: i32,
    pub partition_leader_epoch: i32,
    pub magic: i8,
    pub crc: u32,
    pub attributes: i16,
    pub last_offset_delta: i32,
    pub base_timestamp: i64,
    pub max_timestamp: i64,
    pub producer_id: i64,
    pub producer_epoch: i16,
    pub base_sequence: i32,
    pub records_count: i32,
}

impl BatchHeader {
    /// Compression codec id (0 none, 1 gzip, 2 snappy, 3 lz4, 4 zstd).
    pub fn compression(&self) -> u8 {
        (self.attributes & COMPRESSION_CODEC_MASK) as u8
    }

    pub fn timestamp_type_is_log_append(&self) -> bool {
        self.attributes & TIMESTAMP_TYPE_MASK != 0
    }

    pub fn is_transactional(&self) -> bool {
        self.attributes & TRANSACTIONAL_FLAG_MASK != 0
    }

    pub fn is_control(&self) -> bool {
        self.attributes & CONTROL_FLAG_MASK != 0
    }

    pub fn last_offset(&self) -> i64 {
        self.base_offset + self.last_offset_delta as i64
    }

    /// Bytes the whole batch occupies, header included.
    pub fn total_size(&self) -> usize {
        self.batch_length.max(0) as usize + LOG_OVERHEAD
    }

    /// Last sequence of the batch, wrapping at i32::MAX as Kafka's
    /// `DefaultRecordBatch.incrementSequence` does.
    pub fn last_sequence(&self) -> i32 {
        if self.base_sequence == NO_SEQUENCE {
            return NO_SEQUENCE;
        }
        let next = self.base_sequence as i64 + self.last_offset_delta as i64;
        if next > i32::MAX as i64 {
            (next - i32::MAX as i64 - 1) as i32
        } else {
            next as i32
        }
    }
}

fn be_i64(b: &[u8], at: usize) -> i64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[at..at + 8]);
    i64::from_be_bytes(a)
}

fn be_i32(b: &[u8], at: usize) -> i32 {
    let mut a = [0u8; 4];
    a.copy_from_slice(&b[at..at + 4]);
    i32::from_be_bytes(a)
}

fn be_i16(b: &[u8], at: usize) -> i16 {
    i16::from_be_bytes([b[at], b[at + 1]])
}

/// Reads the 61-byte header at the start of `buf`. Does not check magic or CRC.
pub fn parse_header(buf: &[u8]) -> Result<BatchHeader, BatchError> {
    if buf.len() < RECORD_BATCH_OVERHEAD {
        return Err(BatchError::Truncated {
            needed: RECORD_BATCH_OVERHEAD,
            available: buf.len(),
        });
    }
    Ok(BatchHeader {
        base_offset: be_i64(buf, BASE_OFFSET_OFFSET),
        batch_length: be_i32(buf, BATCH_LENGTH_OFFSET),
        partition_leader_epoch: be_i32(buf, PARTITION_LEADER_EPOCH_OFFSET),
        magic: buf[MAGIC_OFFSET] as i8,
        crc: be_i32(buf, CRC_OFFSET) as u32,
        attributes: be_i16(buf, ATTRIBUTES_OFFSET),
        last_offset_delta: be_i32(buf, LAST_OFFSET_DELTA_OFFSET),
        base_timestamp: be_i64(buf, BASE_TIMESTAMP_OFFSET),
        max_timestamp: be_i64(buf, MAX_TIMESTAMP_OFFSET),
        producer_id: be_i64(buf, PRODUCER_ID_OFFSET),
        producer_epoch: be_i16(buf, PRODUCER_EPOCH_OFFSET),
        base_sequence: be_i32(buf, BASE_SEQUENCE_OFFSET),
        records_count: be_i32(buf, RECORDS_COUNT_OFFSET),
    })
}

/// CRC-32C of a whole batch as stored in its header (attributes to the end).
pub fn compute_crc(batch: &[u8]) -> u32 {
    crc32c::crc32c(batch.get(ATTRIBUTES_OFFSET..).unwrap_or(&[]))
}

/// Checks the framing and CRC of the single batch at the start of `buf` and returns its header.
/// Shared by produce validation and log recovery (which must not trust what is on disk).
pub fn check_batch(buf: &[u8]) -> Result<BatchHeader, BatchError> {
    let header = parse_header(buf)?;
    if header.batch_length < (RECORD_BATCH_OVERHEAD - LOG_OVERHEAD) as i32 {
        return Err(BatchError::CorruptMessage(
            "batch length smaller than header",
        ));
    }
    let total = header.total_size();
    if total > buf.len() {
        return Err(BatchError::Truncated {
            needed: total,
            available: buf.len(),
        });
    }
    if header.magic != MAGIC_V2 {
        return Err(BatchError::InvalidMagic(header.magic));
    }
    if compute_crc(&buf[..total]) != header.crc {
        return Err(BatchError::CorruptMessage("CRC-32C mismatch"));
    }
    if header.records_count < 0 {
        return Err(BatchError::CorruptMessage("negative record count"));
    }
    if header.last_offset_delta < 0 {
        return Err(BatchError::CorruptMessage("negative last offset delta"));
    }
    Ok(header)
}

/// Validates one or more consecutive batches (as a log or a coordinator holds them: control
/// batches allowed, several in a row) with the rules of a topic with default settings and
/// returns their headers in order (see [`super::validator::validate_produce`], which the
/// produce path calls with the topic's rules and a client's).
pub fn validate_batches(buf: &[u8], max_batch_size: usize) -> Result<Vec<BatchHeader>, BatchError> {
    let config = super::validator::ValidationConfig {
        max_message_bytes: max_batch_size,
        from_client: false,
        ..Default::default()
    };
    Ok(super::validator::validate_produce(buf, &config)?
        .into_iter()
        .map(|b| b.header)
        .collect())
}

/// Reads an unsigned LEB128 varint (32-bit) from `buf` at `pos`.
fn read_uvarint_at(buf: &[u8], pos: &mut usize) -> Option<u32> {
    let mut value: u32 = 0;
    for i in 0..5 {
        let b = *buf.get(*pos)?;
        *pos += 1;
        if i == 4 && b > 0x0f {
            return None;
        }
        value |= ((b & 0x7f) as u32) << (7 * i);
        if b & 0x80 == 0 {
            return Some(value);
        }
    }
    None
}

fn read_uvarlong_at(buf: &[u8], pos: &mut usize) -> Option<u64> {
    let mut value: u64 = 0;
    for i in 0..10 {
        let b = *buf.get(*pos)?;
        *pos += 1;
        value |= ((b & 0x7f) as u64) << (7 * i);
        if b & 0x80 == 0 {
            return Some(value);
        }
    }
    None
}

/// (offset, timestamp) of every record of one batch, in order, without decoding keys or values.
/// LogAppendTime batches report the batch's max timestamp for every record, as Kafka does.
/// None for compressed batches (their records are not walked here) or malformed framing.
pub fn record_offsets_and_timestamps(batch: &[u8]) -> Option<Vec<(i64, i64)>> {
    let header = parse_header(batch).ok()?;
    if header.compression() != 0 || header.total_size() > batch.len() {
        return None;
    }
    let records = &batch[RECORD_BATCH_OVERHEAD..header.total_size()];
    let mut out = Vec::with_capacity(header.records_count.clamp(0, 4096) as usize);
    let mut pos = 0;
    for _ in 0..header.records_count.max(0) {
        let raw = read_uvarint_at(records, &mut pos)?;
        let len = ((raw >> 1) as i32) ^ -((raw & 1) as i32);
        if len <= 0 || len as usize > records.len() - pos {
            return None;
        }
        let end = pos + len as usize;
        let mut p = pos + 1; // attributes
        let ts_raw = read_uvarlong_at(&records[..end], &mut p)?;
        let ts_delta = ((ts_raw >> 1) as i64) ^ -((ts_raw & 1) as i64);
        let od_raw = read_uvarint_at(&records[..end], &mut p)?;
        let offset_delta = ((od_raw >> 1) as i32) ^ -((od_raw & 1) as i32);
        let ts = if header.timestamp_type_is_log_append() {
            header.max_timestamp
        } else {
            header.base_timestamp.saturating_add(ts_delta)
        };
        out.push((header.base_offset + offset_delta as i64, ts));
        pos = end;
    }
    Some(out)
}

/// Writes the base offset (outside the CRC, so no recompute).
pub fn set_base_offset(batch: &mut [u8], base_offset: i64) {
    if batch.len() >= RECORD_BATCH_OVERHEAD {
        batch[BASE_OFFSET_OFFSET..BASE_OFFSET_OFFSET + 8]
            .copy_from_slice(&base_offset.to_be_bytes());
    }
}

/// Writes the partition leader epoch (outside the CRC, so no recompute).
pub fn set_partition_leader_epoch(batch: &mut [u8], epoch: i32) {
    if batch.len() >= RECORD_BATCH_OVERHEAD {
        batch[PARTITION_LEADER_EPOCH_OFFSET..PARTITION_LEADER_EPOCH_OFFSET + 4]
            .copy_from_slice(&epoch.to_be_bytes());
    }
}

/// Marks the batch as LogAppendTime with `ts` as its max timestamp and recomputes the CRC, as
/// Kafka's `DefaultRecordBatch.setMaxTimestamp` does. `batch` must be exactly one batch.
/// Returns the new CRC.
pub fn set_log_append_time(batch: &mut [u8], ts: i64) -> u32 {
    if batch.len() < RECORD_BATCH_OVERHEAD {
        return 0;
    }
    let attrs = be_i16(batch, ATTRIBUTES_OFFSET) | TIMESTAMP_TYPE_MASK;
    batch[ATTRIBUTES_OFFSET..ATTRIBUTES_OFFSET + 2].copy_from_slice(&attrs.to_be_bytes());
    batch[MAX_TIMESTAMP_OFFSET..MAX_TIMESTAMP_OFFSET + 8].copy_from_slice(&ts.to_be_bytes());
    let crc = compute_crc(batch);
    batch[CRC_OFFSET..CRC_OFFSET + 4].copy_from_slice(&crc.to_be_bytes());
    crc
}

/// Writes `ts` as the batch's max timestamp and recomputes the CRC if it differs from what the
/// batch holds (Kafka's `DefaultRecordBatch.setMaxTimestamp` for CreateTime). Returns the CRC.
pub fn set_max_timestamp(batch: &mut [u8], ts: i64) -> u32 {
    if batch.len() < RECORD_BATCH_OVERHEAD {
        return 0;
    }
    if be_i64(batch, MAX_TIMESTAMP_OFFSET) != ts {
        batch[MAX_TIMESTAMP_OFFSET..MAX_TIMESTAMP_OFFSET + 8].copy_from_slice(&ts.to_be_bytes());
        let crc = compute_crc(batch);
        batch[CRC_OFFSET..CRC_OFFSET + 4].copy_from_slice(&crc.to_be_bytes());
    }
    be_i32(batch, CRC_OFFSET) as u32
}

/// Iterates over consecutive batches in a byte slice, yielding each header and its byte range.
/// Stops at the first partial batch (or unreadable header); it does not check CRCs.
pub struct BatchIter<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> BatchIter<'a> {
    pub fn new(buf: &'a [u8]) -> Self {
        BatchIter { buf, pos: 0 }
    }

    /// Bytes consumed by the complete batches yielded so far.
    pub fn position(&self) -> usize {
        self.pos
    }
}

impl Iterator for BatchIter<'_> {
    type Item = (BatchHeader, Range<usize>);

    fn next(&mut self) -> Option<Self::Item> {
        let header = parse_header(&self.buf[self.pos..]).ok()?;
        if header.batch_length < (RECORD_BATCH_OVERHEAD - LOG_OVERHEAD) as i32 {
            return None;
        }
        let total = header.total_size();
        if total > self.buf.len() - self.pos {
            return None;
        }
        let range = self.pos..self.pos + total;
        self.pos += total;
        Some((header, range))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::records::testutil::{build_test_batch, TestBatch};

    fn batch(n: usize) -> Vec<u8> {
        build_test_batch(&TestBatch {
            records: n,
            ..TestBatch::default()
        })
    }

    #[test]
    fn parses_and_validates_a_built_batch() {
        let b = batch(3);
        let headers = validate_batches(&b, 1 << 20).expect("valid");
        assert_eq!(headers.len(), 1);
        let h = headers[0];
        assert_eq!(h.magic, 2);
        assert_eq!(h.records_count, 3);
        assert_eq!(h.last_offset_delta, 2);
        assert_eq!(h.total_size(), b.len());
        assert_eq!(h.compression(), 0);
        assert!(!h.is_control() && !h.is_transactional() && !h.timestamp_type_is_log_append());
    }

    #[test]
    fn several_batches_in_one_payload() {
        let mut b = batch(2);
        b.extend_from_slice(&batch(5));
        let headers = validate_batches(&b, 1 << 20).expect("valid");
        assert_eq!(
            headers.iter().map(|h| h.records_count).collect::<Vec<_>>(),
            vec![2, 5]
        );
    }

    #[test]
    fn corrupt_crc_is_refused() {
        let mut b = batch(2);
        let last = b.len() - 1;
        b[last] ^= 0xff;
        assert_eq!(
            validate_batches(&b, 1 << 20),
            Err(BatchError::CorruptMessage("CRC-32C mismatch"))
        );
    }

    #[test]
    fn wrong_magic_is_refused() {
        let mut b = batch(1);
        b[MAGIC_OFFSET] = 1;
        assert_eq!(
            validate_batches(&b, 1 << 20),
            Err(BatchError::InvalidMagic(1))
        );
    }

    #[test]
    fn truncated_and_empty_are_refused() {
        let b = batch(2);
        assert!(matches!(
            validate_batches(&b[..b.len() - 1], 1 << 20),
            Err(BatchError::Truncated { .. })
        ));
        assert!(matches!(
            validate_batches(&b[..30], 1 << 20),
            Err(BatchError::Truncated { .. })
        ));
        assert_eq!(validate_batches(&[], 1 << 20), Err(BatchError::Empty));
        // A trailing partial batch after a good one.
        let mut two = b.clone();
        two.extend_from_slice(&b[..70]);
        assert!(validate_batches(&two, 1 << 20).is_err());
    }

    #[test]
    fn count_mismatch_is_refused() {
        // Header says 3 records but only 2 are present (CRC recomputed so only framing differs).
        let mut b = batch(2);
        b[RECORDS_COUNT_OFFSET..RECORDS_COUNT_OFFSET + 4].copy_from_slice(&3i32.to_be_bytes());
        b[LAST_OFFSET_DELTA_OFFSET..LAST_OFFSET_DELTA_OFFSET + 4]
            .copy_from_slice(&2i32.to_be_bytes());
        let crc = compute_crc(&b);
        b[CRC_OFFSET..CRC_OFFSET + 4].copy_from_slice(&crc.to_be_bytes());
        assert!(matches!(
            validate_batches(&b, 1 << 20),
            Err(BatchError::InvalidRecord(_))
        ));
        // last_offset_delta inconsistent with the count.
        let mut b = batch(2);
        b[LAST_OFFSET_DELTA_OFFSET..LAST_OFFSET_DELTA_OFFSET + 4]
            .copy_from_slice(&5i32.to_be_bytes());
        let crc = compute_crc(&b);
        b[CRC_OFFSET..CRC_OFFSET + 4].copy_from_slice(&crc.to_be_bytes());
        assert!(matches!(
            validate_batches(&b, 1 << 20),
            Err(BatchError::InvalidRecord(_))
        ));
    }

    #[test]
    fn too_large_is_refused() {
        let b = batch(10);
        assert!(matches!(
            validate_batches(&b, 50),
            Err(BatchError::MessageTooLarge { .. })
        ));
    }

    #[test]
    fn in_place_edits() {
        let mut b = batch(2);
        set_base_offset(&mut b, 42);
        set_partition_leader_epoch(&mut b, 7);
        // Still valid: both fields are outside the CRC.
        let h = validate_batches(&b, 1 << 20).expect("valid")[0];
        assert_eq!(
            (h.base_offset, h.partition_leader_epoch, h.last_offset()),
            (42, 7, 43)
        );
        set_log_append_time(&mut b, 999);
        let h = validate_batches(&b, 1 << 20).expect("still valid after CRC recompute")[0];
        assert!(h.timestamp_type_is_log_append());
        assert_eq!(h.max_timestamp, 999);
    }

    #[test]
    fn iter_stops_at_partial_batch() {
        let mut b = batch(1);
        let first = b.len();
        b.extend_from_slice(&batch(2));
        let full = b.len();
        b.extend_from_slice(&batch(3)[..40]);
        let items: Vec<_> = BatchIter::new(&b).collect();
        assert_eq!(items.len(), 2);
        assert_eq!(items[0].1, 0..first);
        assert_eq!(items[1].1, first..full);
        let mut it = BatchIter::new(&b);
        while it.next().is_some() {}
        assert_eq!(it.position(), full);
    }

    #[test]
    fn record_timestamps_are_walked() {
        let mut b = build_test_batch(&TestBatch {
            records: 3,
            base_offset: 10,
            base_timestamp: 500,
            timestamp_step_ms: 7,
            ..TestBatch::default()
        });
        assert_eq!(
            record_offsets_and_timestamps(&b),
            Some(vec![(10, 500), (11, 507), (12, 514)])
        );
        set_log_append_time(&mut b, 9000);
        assert_eq!(
            record_offsets_and_timestamps(&b),
            Some(vec![(10, 9000), (11, 9000), (12, 9000)])
        );
    }

    #[test]
    fn last_sequence_wraps() {
        let mut h = parse_header(&batch(3)).expect("header");
        h.base_sequence = i32::MAX - 1;
        assert_eq!(h.last_sequence(), 0);
        h.base_sequence = NO_SEQUENCE;
        assert_eq!(h.last_sequence(), NO_SEQUENCE);
    }
}
