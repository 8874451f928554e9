//! The v2 record format inside a record batch (Kafka's `DefaultRecord`) and decoding of all
//! records of one batch (`DefaultRecordBatch` iteration), decompressing when needed.
//!
//! Record layout: length varint, attributes i8 (unused), timestamp delta varlong, offset delta
//! varint, key (varint length, -1 = null), value (same), header count varint, then per header
//! key (varint length, UTF-8, never null) and value (varint length, -1 = null).
//! Every length is checked against the bytes that remain before anything is allocated, and a
//! record must consume exactly its declared length.
//!
//! Batch validation (CRC-32C, sizes, producer fields) belongs to `batch.rs`; decoding here only
//! reads the few header fields it needs and does not check the CRC.

use bytes::{Buf, BufMut, Bytes, BytesMut};

use super::compression::{decompress, Compression};
use super::error::RecordError;
use crate::protocol::codec::{
    read_i8, read_varint, read_varlong, take_bytes, varint_size, varlong_size, write_varint,
    write_varlong,
};

/// Byte offsets of the record batch (magic v2) header fields.
pub mod offsets {
    pub const BASE_OFFSET: usize = 0;
    pub const BATCH_LENGTH: usize = 8;
    pub const PARTITION_LEADER_EPOCH: usize = 12;
    pub const MAGIC: usize = 16;
    pub const CRC: usize = 17;
    pub const ATTRIBUTES: usize = 21;
    pub const LAST_OFFSET_DELTA: usize = 23;
    pub const BASE_TIMESTAMP: usize = 27;
    pub const MAX_TIMESTAMP: usize = 35;
    pub const PRODUCER_ID: usize = 43;
    pub const PRODUCER_EPOCH: usize = 51;
    pub const BASE_SEQUENCE: usize = 53;
    pub const RECORDS_COUNT: usize = 57;
    pub const RECORDS: usize = 61;
}

/// Size of the batch header, i.e. where the records start.
pub const RECORD_BATCH_OVERHEAD_BYTES: usize = offsets::RECORDS;
/// Bytes before `batch_length` stops counting (base offset + batch length).
pub const LOG_OVERHEAD_BYTES: usize = 12;
/// The only record format Strata reads.
pub const MAGIC_V2: i8 = 2;

/// One header of a record. Duplicate keys are legal and kept in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordHeader {
    pub key: String,
    pub value: Option<Bytes>,
}

/// One v2 record, with offset and timestamp relative to its batch.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Record {
    pub offset_delta: i32,
    pub timestamp_delta: i64,
    pub key: Option<Bytes>,
    pub value: Option<Bytes>,
    pub headers: Vec<RecordHeader>,
}

impl Record {
    /// Size of the body (everything after the length varint).
    fn body_size(&self) -> usize {
        let mut size = 1 + varlong_size(self.timestamp_delta) + varint_size(self.offset_delta);
        size += nullable_size(self.key.as_deref());
        size += nullable_size(self.value.as_deref());
        size += varint_size(self.headers.len() as i32);
        for h in &self.headers {
            size += varint_size(h.key.len() as i32) + h.key.len();
            size += nullable_size(h.value.as_deref());
        }
        size
    }

    /// Bytes this record takes on the wire, including its length prefix.
    pub fn encoded_size(&self) -> usize {
        let body = self.body_size();
        varint_size(body as i32) + body
    }

    /// Appends the record in the v2 format.
    pub fn encode(&self, buf: &mut BytesMut) {
        write_varint(buf, self.body_size() as i32);
        buf.put_i8(0); // attributes: unused by v2 records
        write_varlong(buf, self.timestamp_delta);
        write_varint(buf, self.offset_delta);
        write_nullable(buf, self.key.as_deref());
        write_nullable(buf, self.value.as_deref());
        write_varint(buf, self.headers.len() as i32);
        for h in &self.headers {
            write_varint(buf, h.key.len() as i32);
            buf.put_slice(h.key.as_bytes());
            write_nullable(buf, h.value.as_deref());
        }
    }

    /// Reads one record, checking that it consumes exactly its declared length.
    pub fn decode(buf: &mut Bytes) -> Result<Record, RecordError> {
        let length = read_varint(buf)?;
        if length < 0 {
            return Err(RecordError::InvalidRecord("negative record length"));
        }
        if length as usize > buf.remaining() {
            return Err(RecordError::InvalidRecord(
                "record length exceeds the batch",
            ));
        }
        let mut body = buf.split_to(length as usize);
        let _attributes = read_i8(&mut body)?;
        let timestamp_delta = read_varlong(&mut body)?;
        let offset_delta = read_varint(&mut body)?;
        let key = read_nullable(&mut body)?;
        let value = read_nullable(&mut body)?;
        let header_count = read_varint(&mut body)?;
        if header_count < 0 {
            return Err(RecordError::InvalidRecord("negative header count"));
        }
        // Each header takes at least two bytes, so the count cannot reserve more than that.
        let mut headers = Vec::with_capacity((header_count as usize).min(body.remaining() / 2));
        for _ in 0..header_count {
            let key_len = read_varint(&mut body)?;
            if key_len < 0 {
                return Err(RecordError::InvalidRecord(
                    "null or negative header key length",
                ));
            }
            let key_bytes = take_bytes(&mut body, key_len as usize)?;
            let key = String::from_utf8(key_bytes.to_vec())
                .map_err(|_| RecordError::InvalidRecord("header key is not UTF-8"))?;
            let value = read_nullable(&mut body)?;
            headers.push(RecordHeader { key, value });
        }
        if body.has_remaining() {
            return Err(RecordError::InvalidRecord(
                "record has bytes beyond its fields",
            ));
        }
        Ok(Record {
            offset_delta,
            timestamp_delta,
            key,
            value,
            headers,
        })
    }
}

fn nullable_size(b: Option<&[u8]>) -> usize {
    match b {
        None => varint_size(-1),
        Some(b) => varint_size(b.len() as i32) + b.len(),
    }
}

fn write_nullable(buf: &mut BytesMut, b: Option<&[u8]>) {
    match b {
        None => write_varint(buf, -1),
        Some(b) => {
            write_varint(buf, b.len() as i32);
            buf.put_slice(b);
        }
    }
}

fn read_nullable(buf: &mut Bytes) -> Result<Option<Bytes>, RecordError> {
    let len = read_varint(buf)?;
    match len {
        -1 => Ok(None),
        n if n < 0 => Err(RecordError::InvalidRecord("negative key or value length")),
        n => Ok(Some(take_bytes(buf, n as usize)?)),
    }
}

fn be_i16(b: &[u8], at: usize) -> i16 {
    i16::from_be_bytes([b[at], b[at + 1]])
}

fn be_i32(b: &[u8], at: usize) -> i32 {
    i32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

/// The batch's attributes (bits 0-2 compression, 3 timestamp type, 4 transactional, 5 control),
/// after checking that the header is there and the magic is 2.
pub fn read_batch_attributes(batch: &[u8]) -> Result<i16, RecordError> {
    if batch.len() < RECORD_BATCH_OVERHEAD_BYTES {
        return Err(RecordError::Corrupt("batch shorter than its header"));
    }
    let magic = batch[offsets::MAGIC] as i8;
    if magic != MAGIC_V2 {
        return Err(RecordError::UnsupportedMagic(magic));
    }
    Ok(be_i16(batch, offsets::ATTRIBUTES))
}

/// Decodes every record of one whole batch (header included), decompressing the records
/// section if the attributes say so; decompressed output is capped at
/// `max_decompressed_bytes`. Bytes after `12 + batch_length` are ignored.
pub fn decode_records(
    batch: &[u8],
    max_decompressed_bytes: usize,
) -> Result<Vec<Record>, RecordError> {
    let attributes = read_batch_attributes(batch)?;
    let batch_length = be_i32(batch, offsets::BATCH_LENGTH);
    if batch_length < (RECORD_BATCH_OVERHEAD_BYTES - LOG_OVERHEAD_BYTES) as i32 {
        return Err(RecordError::Corrupt("batch length smaller than the header"));
    }
    let total = LOG_OVERHEAD_BYTES + batch_length as usize;
    if total > batch.len() {
        return Err(RecordError::Corrupt(
            "batch truncated before its declared length",
        ));
    }
    let records_count = be_i32(batch, offsets::RECORDS_COUNT);
    if records_count < 0 {
        return Err(RecordError::Corrupt("negative records count"));
    }
    let compression = Compression::from_attributes(attributes)?;
    let section = &batch[RECORD_BATCH_OVERHEAD_BYTES..total];
    let payload = match compression {
        Compression::None => Bytes::copy_from_slice(section),
        codec => Bytes::from(decompress(codec, section, max_decompressed_bytes)?),
    };
    decode_record_set(payload, records_count)
}

/// Decodes exactly `records_count` records from an (uncompressed) records section; leftover
/// bytes are an error, as in Kafka ("records still remaining").
pub fn decode_record_set(
    mut payload: Bytes,
    records_count: i32,
) -> Result<Vec<Record>, RecordError> {
    if records_count < 0 {
        return Err(RecordError::Corrupt("negative records count"));
    }
    // A record takes at least 7 bytes: never reserve more than the payload can hold.
    let mut records = Vec::with_capacity((records_count as usize).min(payload.len() / 7));
    for _ in 0..records_count {
        if !payload.has_remaining() {
            return Err(RecordError::Corrupt("fewer records than the records count"));
        }
        records.push(Record::decode(&mut payload)?);
    }
    if payload.has_remaining() {
        return Err(RecordError::InvalidRecord(
            "bytes remain after the declared records",
        ));
    }
    Ok(records)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(offset_delta: i32, key: Option<&str>, value: Option<&str>) -> Record {
        Record {
            offset_delta,
            timestamp_delta: offset_delta as i64 * 10,
            key: key.map(|k| Bytes::copy_from_slice(k.as_bytes())),
            value: value.map(|v| Bytes::copy_from_slice(v.as_bytes())),
            headers: vec![],
        }
    }

    #[test]
    fn record_round_trip_and_size() {
        let mut r = rec(3, None, Some("v"));
        r.headers = vec![
            RecordHeader {
                key: "k".into(),
                value: None,
            },
            RecordHeader {
                key: "k".into(),
                value: Some(Bytes::from_static(b"x")),
            },
        ];
        let mut buf = BytesMut::new();
        r.encode(&mut buf);
        assert_eq!(buf.len(), r.encoded_size());
        let mut bytes = buf.freeze();
        assert_eq!(Record::decode(&mut bytes).unwrap(), r);
        assert!(bytes.is_empty());
    }

    #[test]
    fn record_golden_bytes() {
        // body length 7 (zigzag 14), attrs 0, ts delta 0, offset delta 0, key null (zigzag -1 = 1),
        // value "a" (len 1 -> 2, 'a'), headers 0.
        let r = rec(0, None, Some("a"));
        let mut buf = BytesMut::new();
        r.encode(&mut buf);
        assert_eq!(
            &buf[..],
            &[0x0e, 0x00, 0x00, 0x00, 0x01, 0x02, b'a', 0x00][..]
        );
    }

    #[test]
    fn bad_records_are_typed_errors() {
        // Length says 20 but only 3 bytes follow.
        let mut b = Bytes::from_static(&[0x28, 0, 0, 0]);
        assert!(matches!(
            Record::decode(&mut b),
            Err(RecordError::InvalidRecord(_))
        ));
        // Negative length.
        let mut b = Bytes::from_static(&[0x01]);
        assert!(matches!(
            Record::decode(&mut b),
            Err(RecordError::InvalidRecord(_))
        ));
        // Null header key (-1).
        let mut b = Bytes::from_static(&[0x0e, 0, 0, 0, 1, 1, 2, 1, 1]);
        assert_eq!(
            Record::decode(&mut b),
            Err(RecordError::InvalidRecord(
                "null or negative header key length"
            ))
        );
        // Header count claims a billion headers in a 10-byte record: an error, no huge alloc.
        let mut b = Bytes::from_static(&[0x14, 0, 0, 0, 1, 1, 0xfe, 0xff, 0xff, 0xff, 0x07]);
        assert!(Record::decode(&mut b).is_err());
        // Extra byte inside the declared length.
        let mut b = Bytes::from_static(&[0x0e, 0, 0, 0, 1, 1, 0, 0]);
        assert_eq!(
            Record::decode(&mut b),
            Err(RecordError::InvalidRecord(
                "record has bytes beyond its fields"
            ))
        );
        // Non UTF-8 header key.
        let mut b = Bytes::from_static(&[0x12, 0, 0, 0, 1, 1, 2, 2, 0xff, 1]);
        assert_eq!(
            Record::decode(&mut b),
            Err(RecordError::InvalidRecord("header key is not UTF-8"))
        );
    }

    #[test]
    fn record_set_count_must_match() {
        let mut buf = BytesMut::new();
        rec(0, Some("k"), Some("v")).encode(&mut buf);
        rec(1, Some("k"), Some("v")).encode(&mut buf);
        let payload = buf.freeze();
        assert_eq!(decode_record_set(payload.clone(), 2).unwrap().len(), 2);
        assert!(matches!(
            decode_record_set(payload.clone(), 1),
            Err(RecordError::InvalidRecord(_))
        ));
        assert!(matches!(
            decode_record_set(payload.clone(), 3),
            Err(RecordError::Corrupt(_))
        ));
        assert!(decode_record_set(payload, i32::MAX).is_err());
    }

    #[test]
    fn short_or_wrong_magic_batches() {
        assert!(matches!(
            decode_records(&[0u8; 30], 1024),
            Err(RecordError::Corrupt(_))
        ));
        let mut b = [0u8; 61];
        b[16] = 1;
        assert_eq!(
            decode_records(&b, 1024),
            Err(RecordError::UnsupportedMagic(1))
        );
        b[16] = 2;
        b[8..12].copy_from_slice(&49i32.to_be_bytes());
        assert_eq!(decode_records(&b, 1024).unwrap(), vec![]);
        b[8..12].copy_from_slice(&50i32.to_be_bytes());
        assert!(matches!(
            decode_records(&b, 1024),
            Err(RecordError::Corrupt(_))
        ));
    }
}
