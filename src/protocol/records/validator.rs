//! Produce-path validation of record batches (Kafka's `LogValidator`): the header checks of
//! [`super::batch`], then a walk over every record of every batch, compressed or not, with
//! per-record checks and KIP-467 record errors.
//!
//! - Compressed batches are decompressed as a stream through a small buffer and their records
//!   are only walked (keys, values and headers are skipped, never copied), so memory stays
//!   bounded whatever the batch inflates to. As in Kafka, `max.message.bytes` applies to the
//!   compressed size: a small batch that inflates to hundreds of megabytes is accepted.
//! - Record count and framing: fewer records than declared, bytes left after the declared
//!   count, or a record that does not fill its own length is INVALID_RECORD; a payload the
//!   codec cannot decode is CORRUPT_MESSAGE.
//! - Per-record checks (Kafka's `validateKey`/`validateTimestamp`): keyless records on a
//!   compacted topic (INVALID_RECORD), CreateTime timestamps outside
//!   `message.timestamp.before/after.max.ms` and producer-set LogAppendTime (INVALID_TIMESTAMP).
//!   Every failing record of the batch is listed with its index, and the whole batch is
//!   refused, as Kafka's `processRecordErrors` does.
//! - Compressed batches whose inner offset deltas are not 0, 1, 2, ... are flagged for a
//!   rebuild (Kafka rewrites them rather than refusing old clients).
//! - A client sends exactly one batch per partition (Produce v3+, Kafka's
//!   `ProduceRequest.validateRecords`); more is INVALID_RECORD.
//! - The max timestamp of a CreateTime batch is the largest record timestamp, whatever the
//!   header claims: the returned header carries it and the log writes it (Kafka's
//!   `setMaxTimestamp`), so the time index and ListOffsets' MAX_TIMESTAMP cannot be misled.
//!
//! Knows nothing of partitions or storage; the result is the parsed header of each batch, which
//! the replica and storage layers use without parsing again.

use std::io::{BufRead, BufReader, Read};
use std::ops::Range;

use super::batch::{check_batch, BatchError, BatchHeader, NO_TIMESTAMP, RECORD_BATCH_OVERHEAD};
use super::compression::Compression;
use crate::error::ErrorCode;

/// The largest zstd window (log2 bytes) the validator lets a frame ask for: 16 MiB. The
/// decoder allocates the window up front, so this is the bound on its memory. zstd writers
/// only use a larger window for inputs above 16 MiB at "ultra" levels or in long mode.
pub const ZSTD_VALIDATION_WINDOW_LOG_MAX: u32 = 24;
/// Read buffer between a decompressor and the record walk.
const STREAM_BUFFER_BYTES: usize = 16 * 1024;
/// A raw snappy block never expands by more than this factor (a 64-byte copy takes at least
/// two bytes); a block claiming more is refused before anything is allocated.
const SNAPPY_MAX_EXPANSION: usize = 32;

/// What the topic asks of the records it accepts.
#[derive(Debug, Clone)]
pub struct ValidationConfig {
    /// `max.message.bytes`, applied to each batch as sent (compressed size).
    pub max_message_bytes: usize,
    /// `cleanup.policy` includes `compact`: every record needs a key.
    pub compacted: bool,
    /// `message.timestamp.type=LogAppendTime`: record timestamps are not checked.
    pub log_append_time: bool,
    /// `message.timestamp.before.max.ms`.
    pub timestamp_before_max_ms: i64,
    /// `message.timestamp.after.max.ms`.
    pub timestamp_after_max_ms: i64,
    /// The broker's clock for the timestamp checks.
    pub now_ms: i64,
    /// `<topic>-<partition>`, for the messages Kafka writes.
    pub topic_partition: String,
    /// The batches come from a client (Kafka's `AppendOrigin.CLIENT`), not from a coordinator
    /// of this broker: only a client's batches must carry a sequence with their producer id
    /// and may not be control batches (transactional offset commits are written with none).
    pub from_client: bool,
}

impl Default for ValidationConfig {
    fn default() -> Self {
        ValidationConfig {
            max_message_bytes: 1_048_588,
            compacted: false,
            log_append_time: false,
            timestamp_before_max_ms: i64::MAX,
            timestamp_after_max_ms: i64::MAX,
            now_ms: 0,
            topic_partition: String::new(),
            from_client: true,
        }
    }
}

/// One batch that passed validation: its header, parsed once, and where it lies in the
/// payload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ValidatedBatch {
    pub header: BatchHeader,
    pub range: Range<usize>,
    /// A compressed batch whose inner offset deltas are not consecutive from 0: it must be
    /// rebuilt before it is stored.
    pub needs_rebuild: bool,
}

/// One refused record of a batch (the `BatchIndexAndErrorMessage` of a Produce response).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordFailure {
    pub batch_index: i32,
    pub message: String,
}

/// Validates a produce payload of one or more batches; see the module comment.
pub fn validate_produce(
    buf: &[u8],
    config: &ValidationConfig,
) -> Result<Vec<ValidatedBatch>, BatchError> {
    if buf.is_empty() {
        return Err(BatchError::Empty);
    }
    let mut out = Vec::with_capacity(1);
    let mut pos = 0;
    while pos < buf.len() {
        if pos > 0 && config.from_client {
            return Err(BatchError::InvalidRecord(
                "Produce requests are only allowed to contain exactly one record batch per \
                 partition",
            ));
        }
        let rest = &buf[pos..];
        let header = check_batch(rest)?;
        let total = header.total_size();
        if total > config.max_message_bytes {
            return Err(BatchError::MessageTooLarge {
                size: total,
                max: config.max_message_bytes,
            });
        }
        check_batch_shape(&header)?;
        if config.from_client {
            check_client_header(&header)?;
        }
        let section = &rest[RECORD_BATCH_OVERHEAD..total];
        let mut header = header;
        let walk = walk_batch(&header, section, config)?;
        if !header.timestamp_type_is_log_append() {
            header.max_timestamp = walk.max_timestamp;
        }
        let needs_rebuild = walk.needs_rebuild;
        out.push(ValidatedBatch {
            header,
            range: pos..pos + total,
            needs_rebuild,
        });
        pos += total;
    }
    Ok(out)
}

/// Kafka's `validateBatch`: what every batch appended as leader must satisfy.
fn check_batch_shape(h: &BatchHeader) -> Result<(), BatchError> {
    // A producer batch always carries records; compaction may leave empty batches on disk
    // but a client never sends one.
    if h.records_count <= 0 {
        return Err(BatchError::InvalidRecord(
            "invalid record count for a record batch",
        ));
    }
    if h.records_count - 1 != h.last_offset_delta {
        return Err(BatchError::InvalidRecord(
            "inconsistent batch offset range and count of records",
        ));
    }
    if h.compression() > 4 {
        return Err(BatchError::CorruptMessage("unknown compression codec"));
    }
    Ok(())
}

/// The rest of Kafka's `validateBatch`, for a batch sent by a client only.
fn check_client_header(h: &BatchHeader) -> Result<(), BatchError> {
    if h.is_control() {
        return Err(BatchError::InvalidRecord(
            "clients are not allowed to write control records",
        ));
    }
    if h.producer_id >= 0 && h.base_sequence < 0 {
        return Err(BatchError::InvalidRecord(
            "invalid sequence number in a record batch with a producer id",
        ));
    }
    Ok(())
}

/// What a walk over a batch's records found.
struct Walk {
    /// A compressed batch whose offset deltas are not 0..n.
    needs_rebuild: bool,
    /// The largest record timestamp (CreateTime), [`NO_TIMESTAMP`] for none.
    max_timestamp: i64,
}

/// Walks the records of one batch.
fn walk_batch(
    header: &BatchHeader,
    section: &[u8],
    config: &ValidationConfig,
) -> Result<Walk, BatchError> {
    let codec = Compression::from_id(header.compression())
        .map_err(|_| BatchError::CorruptMessage("unknown compression codec"))?;
    let corrupt = BatchError::Decompression(codec.name());
    match codec {
        Compression::None => walk_records(section, header, config, false, corrupt),
        Compression::Gzip => walk_records(
            BufReader::with_capacity(
                STREAM_BUFFER_BYTES,
                flate2::read::MultiGzDecoder::new(section),
            ),
            header,
            config,
            true,
            corrupt,
        ),
        Compression::Snappy => walk_records(
            BufReader::with_capacity(STREAM_BUFFER_BYTES, SnappyReader::new(section)),
            header,
            config,
            true,
            corrupt,
        ),
        Compression::Lz4 => walk_records(
            BufReader::with_capacity(
                STREAM_BUFFER_BYTES,
                lz4_flex::frame::FrameDecoder::new(section),
            ),
            header,
            config,
            true,
            corrupt,
        ),
        Compression::Zstd => {
            let mut decoder =
                zstd::stream::read::Decoder::with_buffer(section).map_err(|_| corrupt.clone())?;
            decoder
                .window_log_max(ZSTD_VALIDATION_WINDOW_LOG_MAX)
                .map_err(|_| corrupt.clone())?;
            walk_records(
                BufReader::with_capacity(STREAM_BUFFER_BYTES, decoder),
                header,
                config,
                true,
                corrupt,
            )
        }
    }
}

/// Why a record walk stopped early.
enum Stop {
    /// The records ended before the record did (or before the declared count).
    Eof,
    /// The decompressor refused its input.
    Codec,
    /// A field is malformed.
    Invalid(&'static str),
}

impl From<std::io::Error> for Stop {
    fn from(e: std::io::Error) -> Self {
        if e.kind() == std::io::ErrorKind::UnexpectedEof {
            Stop::Eof
        } else {
            Stop::Codec
        }
    }
}

/// A record reader that counts the bytes it consumed, to hold each record to its length.
struct Cursor<R> {
    r: R,
    consumed: u64,
}

impl<R: BufRead> Cursor<R> {
    fn byte(&mut self) -> Result<u8, Stop> {
        let buf = self.r.fill_buf()?;
        let Some(&b) = buf.first() else {
            return Err(Stop::Eof);
        };
        self.r.consume(1);
        self.consumed += 1;
        Ok(b)
    }

    /// At the end of the records: no byte left.
    fn at_end(&mut self) -> Result<bool, Stop> {
        Ok(self.r.fill_buf()?.is_empty())
    }

    fn varlong(&mut self) -> Result<i64, Stop> {
        let mut raw: u64 = 0;
        for i in 0..10 {
            let b = self.byte()?;
            raw |= ((b & 0x7f) as u64) << (7 * i);
            if b & 0x80 == 0 {
                return Ok(((raw >> 1) as i64) ^ -((raw & 1) as i64));
            }
        }
        Err(Stop::Invalid("varlong longer than 10 bytes"))
    }

    fn varint(&mut self) -> Result<i32, Stop> {
        let v = self.varlong()?;
        i32::try_from(v).map_err(|_| Stop::Invalid("varint out of range"))
    }

    /// Skips `n` bytes without copying them anywhere.
    fn skip(&mut self, mut n: u64) -> Result<(), Stop> {
        while n > 0 {
            let buf = self.r.fill_buf()?;
            if buf.is_empty() {
                return Err(Stop::Eof);
            }
            let k = (buf.len() as u64).min(n) as usize;
            self.r.consume(k);
            self.consumed += k as u64;
            n -= k as u64;
        }
        Ok(())
    }

    /// A nullable length-prefixed field (-1 = null): skipped; returns whether it was present.
    fn skip_nullable(&mut self, what: &'static str) -> Result<bool, Stop> {
        let len = self.varint()?;
        if len == -1 {
            return Ok(false);
        }
        if len < 0 {
            return Err(Stop::Invalid(what));
        }
        self.skip(len as u64)?;
        Ok(true)
    }
}

/// The fields of one record the validator looks at.
struct RecordView {
    timestamp_delta: i64,
    offset_delta: i32,
    has_key: bool,
}

fn read_record<R: BufRead>(c: &mut Cursor<R>) -> Result<RecordView, Stop> {
    let length = c.varint()?;
    if length <= 0 {
        return Err(Stop::Invalid("record length not positive"));
    }
    let start = c.consumed;
    let _attributes = c.byte()?;
    let timestamp_delta = c.varlong()?;
    let offset_delta = c.varint()?;
    let has_key = c.skip_nullable("negative key length")?;
    c.skip_nullable("negative value length")?;
    let headers = c.varint()?;
    if headers < 0 {
        return Err(Stop::Invalid("negative header count"));
    }
    for _ in 0..headers {
        let key_len = c.varint()?;
        if key_len < 0 {
            return Err(Stop::Invalid("null or negative header key length"));
        }
        c.skip(key_len as u64)?;
        c.skip_nullable("negative header value length")?;
        // A record cannot hold more headers than its length allows; stop a bogus count early.
        if c.consumed - start > length as u64 {
            return Err(Stop::Invalid("record fields overrun the record length"));
        }
    }
    if c.consumed - start != length as u64 {
        return Err(Stop::Invalid("record fields do not fill the record length"));
    }
    Ok(RecordView {
        timestamp_delta,
        offset_delta,
        has_key,
    })
}

fn walk_records<R: BufRead>(
    reader: R,
    header: &BatchHeader,
    config: &ValidationConfig,
    compressed: bool,
    corrupt: BatchError,
) -> Result<Walk, BatchError> {
    let mut c = Cursor {
        r: reader,
        consumed: 0,
    };
    let stop = |s: Stop| match s {
        Stop::Eof => {
            BatchError::InvalidRecord("incorrect declared batch size, premature EOF reached")
        }
        Stop::Codec => corrupt.clone(),
        Stop::Invalid(why) => BatchError::InvalidRecord(why),
    };
    let mut failures: Vec<RecordFailure> = Vec::new();
    let mut any_timestamp_error = false;
    let mut needs_rebuild = false;
    let mut max_timestamp = NO_TIMESTAMP;
    for index in 0..header.records_count {
        let r = read_record(&mut c).map_err(stop)?;
        if compressed && r.offset_delta != index {
            needs_rebuild = true;
        }
        max_timestamp = max_timestamp.max(header.base_timestamp.wrapping_add(r.timestamp_delta));
        if let Some((message, timestamp_error)) = check_record(&r, header, config) {
            any_timestamp_error |= timestamp_error;
            failures.push(RecordFailure {
                batch_index: index,
                message,
            });
        }
    }
    if !c.at_end().map_err(stop)? {
        return Err(BatchError::InvalidRecord(
            "incorrect declared batch size, records still remaining",
        ));
    }
    if failures.is_empty() {
        return Ok(Walk {
            needs_rebuild,
            max_timestamp,
        });
    }
    Err(record_errors(failures, any_timestamp_error))
}

/// Kafka's `validateKey` then `validateTimestamp`: the message of the first failing check, and
/// whether it is a timestamp error.
fn check_record(
    r: &RecordView,
    header: &BatchHeader,
    config: &ValidationConfig,
) -> Option<(String, bool)> {
    if config.compacted && !r.has_key {
        return Some((
            format!(
                "Compacted topic cannot accept message without key in topic partition {}",
                config.topic_partition
            ),
            false,
        ));
    }
    let timestamp = if header.timestamp_type_is_log_append() {
        header.max_timestamp
    } else {
        header.base_timestamp.wrapping_add(r.timestamp_delta)
    };
    if !config.log_append_time && timestamp != NO_TIMESTAMP {
        let diff = (config.now_ms as i128) - (timestamp as i128);
        if diff > config.timestamp_before_max_ms as i128
            || -diff > config.timestamp_after_max_ms as i128
        {
            return Some((
                format!(
                    "Timestamp {timestamp} of message with offset {} is out of range. The \
                     timestamp should be within [{}, {}]",
                    r.offset_delta,
                    config.now_ms.saturating_sub(config.timestamp_before_max_ms),
                    config.now_ms.saturating_add(config.timestamp_after_max_ms)
                ),
                true,
            ));
        }
    } else if header.timestamp_type_is_log_append() {
        return Some((
            "Invalid timestamp type in message. Producer should not set timestamp type to \
             LogAppendTime."
                .to_string(),
            true,
        ));
    }
    None
}

/// The batch-level error for a batch with refused records (Kafka's `processRecordErrors`): an
/// invalid timestamp anywhere makes it INVALID_TIMESTAMP, otherwise INVALID_RECORD.
fn record_errors(failures: Vec<RecordFailure>, any_timestamp_error: bool) -> BatchError {
    let (code, message) = if any_timestamp_error {
        (
            ErrorCode::INVALID_TIMESTAMP,
            "One or more records have been rejected due to invalid timestamp".to_string(),
        )
    } else {
        let shown: Vec<String> = failures
            .iter()
            .take(3)
            .map(|f| {
                format!(
                    "RecordError(batchIndex={}, message='{}')",
                    f.batch_index, f.message
                )
            })
            .collect();
        (
            ErrorCode::INVALID_RECORD,
            format!(
                "One or more records have been rejected due to {} record errors in total, and \
                 only showing the first three errors at most: [{}]",
                failures.len(),
                shown.join(", ")
            ),
        )
    };
    BatchError::RecordErrors {
        code,
        message,
        records: failures,
    }
}

/// snappy-java's xerial stream (`\x82SNAPPY\0`, two version ints, then `[i32 length, block]*`,
/// possibly concatenated), or one raw snappy block, decoded a block at a time.
struct SnappyReader<'a> {
    rest: &'a [u8],
    raw: bool,
    block: Vec<u8>,
    pos: usize,
    started: bool,
}

const XERIAL_MAGIC: [u8; 8] = [0x82, b'S', b'N', b'A', b'P', b'P', b'Y', 0];
const XERIAL_HEADER_BYTES: usize = 16;

impl<'a> SnappyReader<'a> {
    fn new(input: &'a [u8]) -> Self {
        let raw = !input.starts_with(&XERIAL_MAGIC);
        SnappyReader {
            rest: input,
            raw,
            block: Vec::new(),
            pos: 0,
            started: false,
        }
    }

    fn decode_block(&mut self, block: &[u8]) -> std::io::Result<()> {
        let bad = || std::io::Error::new(std::io::ErrorKind::InvalidData, "snappy");
        let len = snap::raw::decompress_len(block).map_err(|_| bad())?;
        if len
            > block
                .len()
                .saturating_mul(SNAPPY_MAX_EXPANSION)
                .saturating_add(64)
        {
            return Err(bad());
        }
        self.block.resize(len, 0);
        let n = snap::raw::Decoder::new()
            .decompress(block, &mut self.block)
            .map_err(|_| bad())?;
        if n != len {
            return Err(bad());
        }
        self.pos = 0;
        Ok(())
    }

    /// Decodes the next block into `self.block`; false at the end of the input.
    fn next_block(&mut self) -> std::io::Result<bool> {
        let bad = || std::io::Error::new(std::io::ErrorKind::InvalidData, "snappy framing");
        if self.raw {
            if self.started {
                return Ok(false);
            }
            self.started = true;
            let input = self.rest;
            self.rest = &[];
            self.decode_block(input)?;
            return Ok(true);
        }
        loop {
            if self.rest.is_empty() {
                return Ok(false);
            }
            if self.rest.starts_with(&XERIAL_MAGIC) {
                if self.rest.len() < XERIAL_HEADER_BYTES {
                    return Err(bad());
                }
                self.rest = &self.rest[XERIAL_HEADER_BYTES..];
                continue;
            }
            if self.rest.len() < 4 {
                return Err(bad());
            }
            let len = i32::from_be_bytes([self.rest[0], self.rest[1], self.rest[2], self.rest[3]]);
            if len < 0 || len as usize > self.rest.len() - 4 {
                return Err(bad());
            }
            let (block, tail) = self.rest[4..].split_at(len as usize);
            self.rest = tail;
            self.decode_block(block)?;
            return Ok(true);
        }
    }
}

impl Read for SnappyReader<'_> {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        while self.pos == self.block.len() {
            if !self.next_block()? {
                return Ok(0);
            }
        }
        let n = out.len().min(self.block.len() - self.pos);
        out[..n].copy_from_slice(&self.block[self.pos..self.pos + n]);
        self.pos += n;
        Ok(n)
    }
}

#[cfg(test)]
#[path = "validator_tests.rs"]
mod tests;
