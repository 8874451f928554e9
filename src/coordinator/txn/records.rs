//! `__transaction_state` records in Kafka's own format (`TransactionLog`).
//!
//! Key: `int16` record type 0 (`CoordinatorRecordType.TRANSACTION_LOG`) + `TransactionLogKey` v0.
//! Value: `int16` version + `TransactionLogValue`; a tombstone (no value) removes the id.
//!
//! As Kafka, the value version follows the cluster's finalized `transaction.version`: v0 below
//! level 1 (`producer_id i64, producer_epoch i16, timeout i32, status i8, partitions (nullable
//! array of topic + [i32]), last_update i64, start i64`, written and read here by hand), v1 from
//! level 1 on: flexible, through the generated codec, with the tagged `PreviousProducerId`,
//! `NextProducerId` and `ClientTransactionVersion` that transaction version 2 needs after a
//! failover (an exhausted epoch's next producer id, the strict marker check). Kafka added the
//! two producer ids to what it writes in KAFKA-20310; Strata writes them from the start.
use std::collections::BTreeSet;

use bytes::{BufMut, Bytes, BytesMut};

use crate::coordinator::runtime::CoordinatorRecord;
use crate::coordinator::txn::metadata::{TransactionMetadata, TransactionState};
use crate::coordinator::txn::{NO_PRODUCER_EPOCH, NO_PRODUCER_ID};
use crate::protocol::codec::{
    read_array, read_i16, read_i32, read_i64, read_i8, read_nullable_array, read_string,
    write_array_len, write_string, Decode, DecodeError, Encode,
};
use crate::protocol::internal_records::transaction_log_key::TransactionLogKey;
use crate::protocol::internal_records::transaction_log_value::{
    PartitionsSchema, TransactionLogValue,
};

/// `CoordinatorRecordType.TRANSACTION_LOG`: the key's type prefix.
pub const TRANSACTION_LOG_KEY_TYPE: i16 = 0;
/// The value version written at a finalized `transaction.version` (Kafka's
/// `TransactionVersion.transactionLogValueVersion`).
pub fn value_version(transaction_version_level: i16) -> i16 {
    if transaction_version_level >= 1 {
        1
    } else {
        0
    }
}

/// A decoded `__transaction_state` record: the id and its metadata, `None` for a tombstone.
#[derive(Debug, Clone, PartialEq)]
pub struct TxnRecord {
    pub transactional_id: String,
    pub metadata: Option<TransactionMetadata>,
}

fn key_bytes(transactional_id: &str) -> Bytes {
    let mut b = BytesMut::with_capacity(4 + transactional_id.len());
    b.put_i16(TRANSACTION_LOG_KEY_TYPE);
    TransactionLogKey {
        transactional_id: transactional_id.to_string(),
    }
    .encode(&mut b, 0);
    b.freeze()
}

/// Partitions grouped by topic, as `TransactionLog.valueToBytes` groups them.
fn grouped(m: &TransactionMetadata) -> Vec<(String, Vec<i32>)> {
    let mut out: Vec<(String, Vec<i32>)> = Vec::new();
    for (topic, p) in &m.topic_partitions {
        match out.last_mut() {
            Some((t, ps)) if t == topic => ps.push(*p),
            _ => out.push((topic.clone(), vec![*p])),
        }
    }
    out
}

/// The record of `m` (`TransactionLog.keyToBytes` / `valueToBytes`) at `value_version` (0 or 1).
pub fn metadata_record(m: &TransactionMetadata, value_version: i16) -> CoordinatorRecord {
    if value_version >= 1 {
        return metadata_record_v1(m);
    }
    let mut v = BytesMut::with_capacity(64);
    v.put_i16(0);
    v.put_i64(m.producer_id);
    v.put_i16(m.producer_epoch);
    v.put_i32(m.txn_timeout_ms);
    v.put_i8(m.state.id());
    // Empty has no partitions and writes a null array, as Kafka does.
    if m.state == TransactionState::Empty {
        write_array_len(&mut v, -1, false);
    } else {
        let topics = grouped(m);
        write_array_len(&mut v, topics.len() as i32, false);
        for (topic, partitions) in topics {
            write_string(&mut v, &topic, false);
            write_array_len(&mut v, partitions.len() as i32, false);
            for p in partitions {
                v.put_i32(p);
            }
        }
    }
    v.put_i64(m.txn_last_update_timestamp_ms);
    v.put_i64(m.txn_start_timestamp_ms);
    CoordinatorRecord {
        key: key_bytes(&m.transactional_id),
        value: Some(v.freeze()),
    }
}

fn metadata_record_v1(m: &TransactionMetadata) -> CoordinatorRecord {
    let partitions = (m.state != TransactionState::Empty).then(|| {
        grouped(m)
            .into_iter()
            .map(|(topic, partition_ids)| PartitionsSchema {
                topic,
                partition_ids,
                ..Default::default()
            })
            .collect()
    });
    let value = TransactionLogValue {
        producer_id: m.producer_id,
        previous_producer_id: m.last_producer_id,
        next_producer_id: m.next_producer_id,
        producer_epoch: m.producer_epoch,
        next_producer_epoch: NO_PRODUCER_EPOCH,
        transaction_timeout_ms: m.txn_timeout_ms,
        transaction_status: m.state.id(),
        transaction_partitions: partitions,
        transaction_last_update_timestamp_ms: m.txn_last_update_timestamp_ms,
        transaction_start_timestamp_ms: m.txn_start_timestamp_ms,
        client_transaction_version: m.client_transaction_version,
        ..Default::default()
    };
    let mut v = BytesMut::with_capacity(80);
    v.put_i16(1);
    value.encode(&mut v, 1);
    CoordinatorRecord {
        key: key_bytes(&m.transactional_id),
        value: Some(v.freeze()),
    }
}

/// The tombstone that expires `transactional_id`.
pub fn tombstone(transactional_id: &str) -> CoordinatorRecord {
    CoordinatorRecord {
        key: key_bytes(transactional_id),
        value: None,
    }
}

/// The fields both value versions carry.
struct Value {
    producer_id: i64,
    previous_producer_id: i64,
    next_producer_id: i64,
    client_transaction_version: i16,
    producer_epoch: i16,
    timeout_ms: i32,
    status: i8,
    partitions: Vec<(String, Vec<i32>)>,
    last_update_ms: i64,
    start_ms: i64,
}

fn decode_v0(buf: &mut Bytes) -> Result<Value, DecodeError> {
    let producer_id = read_i64(buf)?;
    let producer_epoch = read_i16(buf)?;
    let timeout_ms = read_i32(buf)?;
    let status = read_i8(buf)?;
    let partitions = read_nullable_array(buf, false, |b| {
        let topic = read_string(b, false)?;
        let ids = read_array(b, false, read_i32)?;
        Ok((topic, ids))
    })?
    .unwrap_or_default();
    let last_update_ms = read_i64(buf)?;
    let start_ms = read_i64(buf)?;
    Ok(Value {
        producer_id,
        previous_producer_id: NO_PRODUCER_ID,
        next_producer_id: NO_PRODUCER_ID,
        client_transaction_version: 0,
        producer_epoch,
        timeout_ms,
        status,
        partitions,
        last_update_ms,
        start_ms,
    })
}

fn decode_v1(buf: &mut Bytes) -> Result<Value, DecodeError> {
    let v = TransactionLogValue::decode(buf, 1)?;
    Ok(Value {
        producer_id: v.producer_id,
        previous_producer_id: v.previous_producer_id,
        next_producer_id: v.next_producer_id,
        client_transaction_version: v.client_transaction_version,
        producer_epoch: v.producer_epoch,
        timeout_ms: v.transaction_timeout_ms,
        status: v.transaction_status,
        partitions: v
            .transaction_partitions
            .unwrap_or_default()
            .into_iter()
            .map(|p| (p.topic, p.partition_ids))
            .collect(),
        last_update_ms: v.transaction_last_update_timestamp_ms,
        start_ms: v.transaction_start_timestamp_ms,
    })
}

/// Decodes a record read from `__transaction_state` (`readTxnRecordKey` / `readTxnRecordValue`).
/// Records of other types, unknown versions and unknown states are errors the loader skips.
pub fn decode(record: &CoordinatorRecord) -> Result<TxnRecord, DecodeError> {
    let mut key = record.key.clone();
    let key_type = read_i16(&mut key)?;
    if key_type != TRANSACTION_LOG_KEY_TYPE {
        return Err(DecodeError::UnknownApiKey(key_type));
    }
    let transactional_id = TransactionLogKey::decode(&mut key, 0)?.transactional_id;
    let Some(value) = &record.value else {
        return Ok(TxnRecord {
            transactional_id,
            metadata: None,
        });
    };
    let mut buf = value.clone();
    let version = read_i16(&mut buf)?;
    let v = match version {
        0 => decode_v0(&mut buf)?,
        1 => decode_v1(&mut buf)?,
        _ => {
            return Err(DecodeError::UnsupportedVersion {
                api_key: -1,
                version,
            })
        }
    };
    let state = TransactionState::from_id(v.status).ok_or(DecodeError::UnsupportedVersion {
        api_key: -1,
        version: v.status as i16,
    })?;
    let mut topic_partitions = BTreeSet::new();
    // Kafka ignores the partitions of an Empty record.
    if state != TransactionState::Empty {
        for (topic, ids) in v.partitions {
            for p in ids {
                topic_partitions.insert((topic.clone(), p));
            }
        }
    }
    Ok(TxnRecord {
        metadata: Some(TransactionMetadata {
            transactional_id: transactional_id.clone(),
            producer_id: v.producer_id,
            last_producer_id: v.previous_producer_id,
            producer_epoch: v.producer_epoch,
            last_producer_epoch: NO_PRODUCER_EPOCH,
            txn_timeout_ms: v.timeout_ms,
            state,
            topic_partitions,
            txn_start_timestamp_ms: v.start_ms,
            txn_last_update_timestamp_ms: v.last_update_ms,
            next_producer_id: v.next_producer_id,
            client_transaction_version: v.client_transaction_version,
        }),
        transactional_id,
    })
}
