//! `RecordBatchBuilder`: writes a complete, valid magic v2 record batch from a list of
//! records (Kafka's `MemoryRecordsBuilder`). Used for control markers, internal-topic records
//! (`__consumer_offsets`, `__transaction_state`), tests and benchmarks; producer batches are
//! stored as sent and never rebuilt.
//!
//! The builder computes last offset delta, base and max timestamps, compresses the records
//! section and writes the CRC-32C over bytes 21..end (attributes to the end), as Kafka does.

use bytes::{BufMut, Bytes, BytesMut};

use super::compression::{compress, Compression};
use super::record::{offsets, Record, RecordHeader, MAGIC_V2, RECORD_BATCH_OVERHEAD_BYTES};

/// Producer id of a batch written without idempotence.
pub const NO_PRODUCER_ID: i64 = -1;
/// Producer epoch of a batch written without idempotence.
pub const NO_PRODUCER_EPOCH: i16 = -1;
/// Base sequence of a batch written without idempotence (and of control batches).
pub const NO_SEQUENCE: i32 = -1;
/// Partition leader epoch before the leader stamps it.
pub const NO_PARTITION_LEADER_EPOCH: i32 = -1;
/// Timestamp of an empty batch.
pub const NO_TIMESTAMP: i64 = -1;

/// Attribute bit 3: the batch carries LogAppendTime timestamps.
pub const TIMESTAMP_TYPE_FLAG: i16 = 0x08;
/// Attribute bit 4: the batch belongs to a transaction.
pub const TRANSACTIONAL_FLAG: i16 = 0x10;
/// Attribute bit 5: the batch holds control records (transaction markers).
pub const CONTROL_FLAG: i16 = 0x20;
/// Attribute bit 6: the base timestamp is the delete horizon (KIP-534, set by the cleaner).
pub const DELETE_HORIZON_FLAG: i16 = 0x40;

/// Which timestamp a batch carries (attribute bit 3; a topic's `message.timestamp.type`, the
/// config's own type, picks it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TimestampType {
    #[default]
    CreateTime,
    LogAppendTime,
}

/// Builds one v2 record batch. Records added with [`append`](Self::append) get consecutive
/// offset deltas starting at 0 and timestamps relative to the first record's.
#[derive(Debug, Clone)]
pub struct RecordBatchBuilder {
    base_offset: i64,
    partition_leader_epoch: i32,
    producer_id: i64,
    producer_epoch: i16,
    base_sequence: i32,
    transactional: bool,
    control: bool,
    compression: Compression,
    timestamp_type: TimestampType,
    base_timestamp_ms: Option<i64>,
    records: Vec<Record>,
}

impl RecordBatchBuilder {
    /// A builder for a non-idempotent, uncompressed CreateTime batch at `base_offset`.
    pub fn new(base_offset: i64) -> Self {
        RecordBatchBuilder {
            base_offset,
            partition_leader_epoch: NO_PARTITION_LEADER_EPOCH,
            producer_id: NO_PRODUCER_ID,
            producer_epoch: NO_PRODUCER_EPOCH,
            base_sequence: NO_SEQUENCE,
            transactional: false,
            control: false,
            compression: Compression::None,
            timestamp_type: TimestampType::CreateTime,
            base_timestamp_ms: None,
            records: Vec::new(),
        }
    }

    pub fn partition_leader_epoch(mut self, epoch: i32) -> Self {
        self.partition_leader_epoch = epoch;
        self
    }

    /// Idempotent/transactional producer fields.
    pub fn producer(mut self, producer_id: i64, producer_epoch: i16, base_sequence: i32) -> Self {
        self.producer_id = producer_id;
        self.producer_epoch = producer_epoch;
        self.base_sequence = base_sequence;
        self
    }

    pub fn transactional(mut self, transactional: bool) -> Self {
        self.transactional = transactional;
        self
    }

    pub fn control(mut self, control: bool) -> Self {
        self.control = control;
        self
    }

    pub fn compression(mut self, compression: Compression) -> Self {
        self.compression = compression;
        self
    }

    pub fn timestamp_type(mut self, timestamp_type: TimestampType) -> Self {
        self.timestamp_type = timestamp_type;
        self
    }

    /// Fixes the base timestamp, for records pushed with their own deltas.
    pub fn base_timestamp_ms(mut self, base_timestamp_ms: i64) -> Self {
        self.base_timestamp_ms = Some(base_timestamp_ms);
        self
    }

    /// Appends a record at the next offset delta with an absolute timestamp.
    pub fn append(
        &mut self,
        timestamp_ms: i64,
        key: Option<Bytes>,
        value: Option<Bytes>,
        headers: Vec<RecordHeader>,
    ) -> &mut Self {
        let base = *self.base_timestamp_ms.get_or_insert(timestamp_ms);
        let offset_delta = self
            .records
            .last()
            .map_or(0, |r| r.offset_delta.wrapping_add(1));
        self.records.push(Record {
            offset_delta,
            timestamp_delta: timestamp_ms.wrapping_sub(base),
            key,
            value,
            headers,
        });
        self
    }

    /// Appends a record with its deltas as given (relative to the base offset and timestamp).
    pub fn push_record(&mut self, record: Record) -> &mut Self {
        self.base_timestamp_ms.get_or_insert(0);
        self.records.push(record);
        self
    }

    pub fn is_empty(&self) -> bool {
        self.records.is_empty()
    }

    fn attributes(&self) -> i16 {
        let mut attributes = self.compression.id() as i16;
        if self.timestamp_type == TimestampType::LogAppendTime {
            attributes |= TIMESTAMP_TYPE_FLAG;
        }
        if self.transactional {
            attributes |= TRANSACTIONAL_FLAG;
        }
        if self.control {
            attributes |= CONTROL_FLAG;
        }
        attributes
    }

    /// Writes the batch: header, (compressed) records, batch length and CRC-32C.
    pub fn build(&self) -> BytesMut {
        let mut records =
            BytesMut::with_capacity(self.records.iter().map(Record::encoded_size).sum());
        for r in &self.records {
            r.encode(&mut records);
        }
        let section: Vec<u8> = match self.compression {
            Compression::None => records.to_vec(),
            codec => compress(codec, &records),
        };
        let (base_timestamp, max_timestamp, last_offset_delta) = match self.records.last() {
            None => (NO_TIMESTAMP, NO_TIMESTAMP, 0),
            Some(last) => {
                let base = self.base_timestamp_ms.unwrap_or(0);
                let max_delta = self
                    .records
                    .iter()
                    .map(|r| r.timestamp_delta)
                    .max()
                    .unwrap_or(0);
                (base, base.wrapping_add(max_delta), last.offset_delta)
            }
        };

        let total = RECORD_BATCH_OVERHEAD_BYTES + section.len();
        let mut buf = BytesMut::with_capacity(total);
        buf.put_i64(self.base_offset);
        buf.put_i32((total - offsets::PARTITION_LEADER_EPOCH) as i32);
        buf.put_i32(self.partition_leader_epoch);
        buf.put_i8(MAGIC_V2);
        buf.put_u32(0); // CRC, filled in below
        buf.put_i16(self.attributes());
        buf.put_i32(last_offset_delta);
        buf.put_i64(base_timestamp);
        buf.put_i64(max_timestamp);
        buf.put_i64(self.producer_id);
        buf.put_i16(self.producer_epoch);
        buf.put_i32(self.base_sequence);
        buf.put_i32(self.records.len() as i32);
        buf.put_slice(&section);
        let crc = crc32c::crc32c(&buf[offsets::ATTRIBUTES..]);
        buf[offsets::CRC..offsets::CRC + 4].copy_from_slice(&crc.to_be_bytes());
        buf
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::records::error::RecordError;
    use crate::protocol::records::record::decode_records;

    fn b(s: &str) -> Option<Bytes> {
        Some(Bytes::copy_from_slice(s.as_bytes()))
    }

    /// A batch assembled field by field from the v2 format description, with its CRC-32C
    /// computed independently (bitwise Castagnoli polynomial 0x82F63B78 over bytes 21..).
    #[test]
    fn golden_single_record_batch() {
        let mut builder = RecordBatchBuilder::new(0);
        builder.append(1_700_000_000_000, None, b("a"), vec![]);
        let built = builder.build();
        #[rustfmt::skip]
        let expected: Vec<u8> = vec![
            0, 0, 0, 0, 0, 0, 0, 0,             // base offset 0
            0, 0, 0, 0x39,                      // batch length 57 = 69 - 12
            0xff, 0xff, 0xff, 0xff,             // partition leader epoch -1
            2,                                  // magic
            0x96, 0x5a, 0x94, 0xb1,             // crc32c
            0, 0,                               // attributes
            0, 0, 0, 0,                         // last offset delta 0
            0, 0, 0x01, 0x8b, 0xcf, 0xe5, 0x68, 0x00, // base timestamp 1700000000000
            0, 0, 0x01, 0x8b, 0xcf, 0xe5, 0x68, 0x00, // max timestamp
            0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, // producer id -1
            0xff, 0xff,                         // producer epoch -1
            0xff, 0xff, 0xff, 0xff,             // base sequence -1
            0, 0, 0, 1,                         // records count 1
            0x0e, 0, 0, 0, 0x01, 0x02, b'a', 0, // record: body 7, attrs, ts 0, off 0, null key, "a", 0 headers
        ];
        assert_eq!(&built[..], &expected[..]);
    }

    #[test]
    fn every_compression_round_trips_through_decode() {
        for codec in [
            Compression::None,
            Compression::Gzip,
            Compression::Snappy,
            Compression::Lz4,
            Compression::Zstd,
        ] {
            let mut builder = RecordBatchBuilder::new(100)
                .compression(codec)
                .producer(7, 2, 40);
            builder.append(1000, b("k1"), b("v1"), vec![]);
            builder.append(990, None, None, vec![]);
            builder.append(
                1500,
                b(""),
                b("v3"),
                vec![
                    RecordHeader {
                        key: "h".into(),
                        value: b("1"),
                    },
                    RecordHeader {
                        key: "h".into(),
                        value: None,
                    },
                    RecordHeader {
                        key: "".into(),
                        value: b(""),
                    },
                ],
            );
            let built = builder.build();
            assert_eq!(
                Compression::from_attributes(i16::from_be_bytes([built[21], built[22]])).unwrap(),
                codec
            );
            // last offset delta, base and max timestamps.
            assert_eq!(&built[23..27], &2i32.to_be_bytes());
            assert_eq!(&built[27..35], &1000i64.to_be_bytes());
            assert_eq!(&built[35..43], &1500i64.to_be_bytes());
            assert_eq!(crc32c::crc32c(&built[21..]).to_be_bytes(), built[17..21]);
            let records = decode_records(&built, 1 << 20).unwrap();
            assert_eq!(records.len(), 3, "{codec:?}");
            assert_eq!(records[0].key, b("k1"));
            assert_eq!(records[1].timestamp_delta, -10);
            assert_eq!(
                (records[1].key.clone(), records[1].value.clone()),
                (None, None)
            );
            assert_eq!(records[2].offset_delta, 2);
            assert_eq!(records[2].key, Some(Bytes::new()));
            assert_eq!(records[2].headers.len(), 3);
            assert_eq!(records[2].headers[0].key, "h");
            assert_eq!(
                records[2].headers[1],
                RecordHeader {
                    key: "h".into(),
                    value: None
                }
            );
        }
    }

    #[test]
    fn flags_land_in_attributes() {
        let built = RecordBatchBuilder::new(0)
            .transactional(true)
            .control(true)
            .timestamp_type(TimestampType::LogAppendTime)
            .compression(Compression::Zstd)
            .build();
        assert_eq!(
            i16::from_be_bytes([built[21], built[22]]),
            0x10 | 0x20 | 0x08 | 4
        );
        assert_eq!(
            built.len(),
            RECORD_BATCH_OVERHEAD_BYTES + compress(Compression::Zstd, &[]).len()
        );
        assert_eq!(&built[27..35], &NO_TIMESTAMP.to_be_bytes());
    }

    #[test]
    fn truncated_batches_are_errors() {
        let mut builder = RecordBatchBuilder::new(0).compression(Compression::Gzip);
        for i in 0..50 {
            builder.append(i, None, b("some value that compresses"), vec![]);
        }
        let built = builder.build();
        for cut in [0, 20, 60, 61, built.len() / 2, built.len() - 1] {
            assert!(
                decode_records(&built[..cut], 1 << 20).is_err(),
                "cut at {cut}"
            );
        }
        // The decompressed size is bounded.
        assert!(matches!(
            decode_records(&built, 100),
            Err(RecordError::DecompressedTooLarge { max_bytes: 100 })
        ));
        // Uncompressed: a cut inside the records but with the batch length patched to match.
        let mut plain = RecordBatchBuilder::new(0);
        plain.append(0, b("k"), b("v"), vec![]);
        let mut bytes = plain.build().to_vec();
        bytes.pop();
        let len = (bytes.len() - 12) as i32;
        bytes[8..12].copy_from_slice(&len.to_be_bytes());
        assert!(decode_records(&bytes, 1 << 20).is_err());
    }
}
