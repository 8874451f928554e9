//! Control records (Kafka's `ControlRecordType`, `EndTransactionMarker`,
//! `MemoryRecords.withEndTransactionMarker`): the key of every control record
//! (version i16 = 0, type i16) and the end-transaction marker value (version i16 = 0,
//! coordinator epoch i32), plus the one-record control batch that commits or aborts a
//! transaction on a partition.

use bytes::{BufMut, Bytes, BytesMut};

use super::builder::{RecordBatchBuilder, CONTROL_FLAG, NO_SEQUENCE};
use super::error::RecordError;
use super::record::{decode_records, read_batch_attributes, Record};

/// Control record key version Kafka writes (`CURRENT_CONTROL_RECORD_KEY_VERSION`).
pub const CONTROL_RECORD_KEY_VERSION: i16 = 0;
/// Size of a control record key: version + type.
pub const CONTROL_RECORD_KEY_BYTES: usize = 4;
/// End-transaction marker value version Kafka writes.
pub const END_TXN_MARKER_VERSION: i16 = 0;
/// Size of an end-transaction marker value: version + coordinator epoch.
pub const END_TXN_MARKER_VALUE_BYTES: usize = 6;
/// Upper bound for decoding a control batch's records (they are tiny).
const CONTROL_BATCH_MAX_BYTES: usize = 64 * 1024;

/// One transaction's markers: which producer, COMMIT or ABORT, from which coordinator epoch,
/// and the producer's transaction version (2: partitions apply the strict epoch check of
/// KIP-890 part 2; WriteTxnMarkers v2's `TransactionVersion`, KIP-1228).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MarkerSpec {
    pub producer_id: i64,
    pub producer_epoch: i16,
    pub commit: bool,
    pub coordinator_epoch: i32,
    pub transaction_version: i16,
}

/// The type in a control record's key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ControlRecordType {
    Abort,
    Commit,
    /// KRaft metadata log records, which Strata may meet in Kafka's own logs.
    LeaderChange,
    SnapshotHeader,
    SnapshotFooter,
    KRaftVersion,
    KRaftVoters,
    /// A type this version does not know; Kafka skips such records.
    Unknown(i16),
}

impl ControlRecordType {
    pub fn id(self) -> i16 {
        match self {
            ControlRecordType::Abort => 0,
            ControlRecordType::Commit => 1,
            ControlRecordType::LeaderChange => 2,
            ControlRecordType::SnapshotHeader => 3,
            ControlRecordType::SnapshotFooter => 4,
            ControlRecordType::KRaftVersion => 5,
            ControlRecordType::KRaftVoters => 6,
            ControlRecordType::Unknown(id) => id,
        }
    }

    pub fn from_id(id: i16) -> ControlRecordType {
        match id {
            0 => ControlRecordType::Abort,
            1 => ControlRecordType::Commit,
            2 => ControlRecordType::LeaderChange,
            3 => ControlRecordType::SnapshotHeader,
            4 => ControlRecordType::SnapshotFooter,
            5 => ControlRecordType::KRaftVersion,
            6 => ControlRecordType::KRaftVoters,
            other => ControlRecordType::Unknown(other),
        }
    }

    /// The 4-byte control record key.
    pub fn key_bytes(self) -> Bytes {
        let mut b = BytesMut::with_capacity(CONTROL_RECORD_KEY_BYTES);
        b.put_i16(CONTROL_RECORD_KEY_VERSION);
        b.put_i16(self.id());
        b.freeze()
    }

    /// Reads a control record key. Newer key versions are read as version 0 (as Kafka does);
    /// a negative version or a short key is an invalid record.
    pub fn parse_key(key: &[u8]) -> Result<ControlRecordType, RecordError> {
        if key.len() < CONTROL_RECORD_KEY_BYTES {
            return Err(RecordError::InvalidRecord(
                "control record key shorter than 4 bytes",
            ));
        }
        let version = i16::from_be_bytes([key[0], key[1]]);
        if version < 0 {
            return Err(RecordError::InvalidRecord(
                "negative control record key version",
            ));
        }
        Ok(ControlRecordType::from_id(i16::from_be_bytes([
            key[2], key[3],
        ])))
    }
}

/// The marker that ends a transaction on a partition.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EndTransactionMarker {
    /// True for COMMIT, false for ABORT.
    pub commit: bool,
    pub coordinator_epoch: i32,
}

impl EndTransactionMarker {
    pub fn control_type(&self) -> ControlRecordType {
        if self.commit {
            ControlRecordType::Commit
        } else {
            ControlRecordType::Abort
        }
    }

    /// The 6-byte marker value.
    pub fn value_bytes(&self) -> Bytes {
        let mut b = BytesMut::with_capacity(END_TXN_MARKER_VALUE_BYTES);
        b.put_i16(END_TXN_MARKER_VERSION);
        b.put_i32(self.coordinator_epoch);
        b.freeze()
    }

    /// Reads the marker from a control record; the key must be ABORT or COMMIT.
    pub fn from_record(record: &Record) -> Result<EndTransactionMarker, RecordError> {
        let key = record
            .key
            .as_deref()
            .ok_or(RecordError::InvalidRecord("control record without a key"))?;
        let commit = match ControlRecordType::parse_key(key)? {
            ControlRecordType::Commit => true,
            ControlRecordType::Abort => false,
            _ => return Err(RecordError::InvalidRecord("not an end transaction marker")),
        };
        let value = record.value.as_deref().unwrap_or(&[]);
        if value.len() < END_TXN_MARKER_VALUE_BYTES {
            return Err(RecordError::InvalidRecord(
                "end transaction marker value too short",
            ));
        }
        let version = i16::from_be_bytes([value[0], value[1]]);
        if version < 0 {
            return Err(RecordError::InvalidRecord(
                "negative end transaction marker version",
            ));
        }
        let coordinator_epoch = i32::from_be_bytes([value[2], value[3], value[4], value[5]]);
        Ok(EndTransactionMarker {
            commit,
            coordinator_epoch,
        })
    }
}

/// The control batch a partition leader appends when a transaction ends: transactional and
/// control attributes, no sequence, one record (offset delta 0, timestamp delta 0) whose key is
/// the control type and whose value is the marker. Base offset 0 and partition leader epoch -1
/// are assigned on append.
pub fn build_end_txn_marker_batch(
    producer_id: i64,
    producer_epoch: i16,
    commit: bool,
    coordinator_epoch: i32,
    timestamp_ms: i64,
) -> BytesMut {
    let marker = EndTransactionMarker {
        commit,
        coordinator_epoch,
    };
    let mut builder = RecordBatchBuilder::new(0)
        .producer(producer_id, producer_epoch, NO_SEQUENCE)
        .transactional(true)
        .control(true);
    builder.append(
        timestamp_ms,
        Some(marker.control_type().key_bytes()),
        Some(marker.value_bytes()),
        Vec::new(),
    );
    builder.build()
}

/// Reads the end-transaction marker out of a whole control batch.
pub fn parse_end_txn_marker_batch(batch: &[u8]) -> Result<EndTransactionMarker, RecordError> {
    let attributes = read_batch_attributes(batch)?;
    if attributes & CONTROL_FLAG == 0 {
        return Err(RecordError::InvalidRecord("not a control batch"));
    }
    let records = decode_records(batch, CONTROL_BATCH_MAX_BYTES)?;
    let first = records
        .first()
        .ok_or(RecordError::InvalidRecord("control batch without records"))?;
    EndTransactionMarker::from_record(first)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commit_marker_golden_bytes() {
        let batch = build_end_txn_marker_batch(0x1234, 5, true, 7, 1000);
        assert_eq!(batch.len(), 61 + 17);
        assert_eq!(&batch[21..23], &[0x00, 0x30]); // transactional | control
        assert_eq!(&batch[43..51], &0x1234i64.to_be_bytes());
        assert_eq!(&batch[51..53], &5i16.to_be_bytes());
        assert_eq!(&batch[53..57], &(-1i32).to_be_bytes());
        assert_eq!(&batch[57..61], &1i32.to_be_bytes());
        // Record: body 16 (zigzag 32), attrs, ts 0, off 0, key len 4, key 0/1, value len 6, 0/7, 0 headers.
        #[rustfmt::skip]
        let record = [
            0x20, 0, 0, 0,
            0x08, 0, 0, 0, 1,
            0x0c, 0, 0, 0, 0, 0, 7,
            0,
        ];
        assert_eq!(&batch[61..], &record[..]);
        assert_eq!(
            parse_end_txn_marker_batch(&batch).unwrap(),
            EndTransactionMarker {
                commit: true,
                coordinator_epoch: 7
            }
        );
    }

    #[test]
    fn abort_marker_round_trip() {
        let batch = build_end_txn_marker_batch(1, 0, false, -1, 5);
        let marker = parse_end_txn_marker_batch(&batch).unwrap();
        assert_eq!(
            marker,
            EndTransactionMarker {
                commit: false,
                coordinator_epoch: -1
            }
        );
        assert_eq!(marker.control_type(), ControlRecordType::Abort);
    }

    #[test]
    fn keys_and_bad_markers() {
        assert_eq!(
            ControlRecordType::parse_key(&[0, 1, 0, 3]).unwrap(),
            ControlRecordType::SnapshotHeader
        );
        assert_eq!(
            ControlRecordType::parse_key(&[0, 0, 0, 9]).unwrap(),
            ControlRecordType::Unknown(9)
        );
        assert!(ControlRecordType::parse_key(&[0, 0, 0]).is_err());
        assert!(ControlRecordType::parse_key(&[0xff, 0xff, 0, 0]).is_err());
        let mut r = Record {
            key: Some(ControlRecordType::LeaderChange.key_bytes()),
            value: Some(Bytes::from_static(&[0, 0, 0, 0, 0, 1])),
            ..Record::default()
        };
        assert!(EndTransactionMarker::from_record(&r).is_err());
        r.key = Some(ControlRecordType::Commit.key_bytes());
        r.value = Some(Bytes::from_static(&[0, 0, 0]));
        assert!(EndTransactionMarker::from_record(&r).is_err());
        // A data batch is not a marker.
        let mut builder = RecordBatchBuilder::new(0);
        builder.append(0, Some(ControlRecordType::Commit.key_bytes()), None, vec![]);
        assert!(parse_end_txn_marker_batch(&builder.build()).is_err());
    }
}
