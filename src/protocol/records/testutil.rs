//! Hand-built record batches for tests (ours and other modules'): uncompressed magic-2 batches
//! with a valid CRC-32C, laid out exactly as Kafka's `DefaultRecordBatch` writes them.

use super::batch::{compute_crc, CRC_OFFSET, LOG_OVERHEAD, NO_PRODUCER_ID, NO_SEQUENCE};
use bytes::BytesMut;

use crate::protocol::codec::{write_varint, write_varlong};

/// What to put in a test batch.
#[derive(Debug, Clone)]
pub struct TestBatch {
    pub records: usize,
    pub base_offset: i64,
    pub partition_leader_epoch: i32,
    pub base_timestamp: i64,
    /// Each record's timestamp is `base_timestamp + i * timestamp_step_ms`.
    pub timestamp_step_ms: i64,
    pub value_len: usize,
    /// Seeds the value bytes so that batches differ.
    pub seed: u64,
    pub producer_id: i64,
    pub producer_epoch: i16,
    pub base_sequence: i32,
}

impl Default for TestBatch {
    fn default() -> Self {
        TestBatch {
            records: 1,
            base_offset: 0,
            partition_leader_epoch: -1,
            base_timestamp: 1_000,
            timestamp_step_ms: 1,
            value_len: 10,
            seed: 0,
            producer_id: NO_PRODUCER_ID,
            producer_epoch: -1,
            base_sequence: NO_SEQUENCE,
        }
    }
}

/// Builds one uncompressed v2 batch with `spec.records` records (no key, one value, no headers).
pub fn build_test_batch(spec: &TestBatch) -> Vec<u8> {
    let mut records = BytesMut::new();
    let mut state = spec
        .seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    for i in 0..spec.records {
        let mut body = BytesMut::new();
        body.extend_from_slice(&[0u8]); // attributes
        write_varlong(&mut body, i as i64 * spec.timestamp_step_ms);
        write_varint(&mut body, i as i32);
        write_varint(&mut body, -1); // null key
        write_varint(&mut body, spec.value_len as i32);
        for _ in 0..spec.value_len {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            body.extend_from_slice(&[(state >> 33) as u8]);
        }
        write_varint(&mut body, 0); // headers
        write_varint(&mut records, body.len() as i32);
        records.extend_from_slice(&body);
    }
    let last_delta = spec.records.saturating_sub(1) as i32;
    let max_ts = spec.base_timestamp + last_delta as i64 * spec.timestamp_step_ms.max(0);
    let mut b = Vec::with_capacity(61 + records.len());
    b.extend_from_slice(&spec.base_offset.to_be_bytes());
    let batch_length = (61 - LOG_OVERHEAD + records.len()) as i32;
    b.extend_from_slice(&batch_length.to_be_bytes());
    b.extend_from_slice(&spec.partition_leader_epoch.to_be_bytes());
    b.push(2);
    b.extend_from_slice(&0u32.to_be_bytes());
    b.extend_from_slice(&0i16.to_be_bytes());
    b.extend_from_slice(&last_delta.to_be_bytes());
    b.extend_from_slice(&spec.base_timestamp.to_be_bytes());
    b.extend_from_slice(&max_ts.to_be_bytes());
    b.extend_from_slice(&spec.producer_id.to_be_bytes());
    b.extend_from_slice(&spec.producer_epoch.to_be_bytes());
    b.extend_from_slice(&spec.base_sequence.to_be_bytes());
    b.extend_from_slice(&(spec.records as i32).to_be_bytes());
    b.extend_from_slice(&records);
    let crc = compute_crc(&b);
    b[CRC_OFFSET..CRC_OFFSET + 4].copy_from_slice(&crc.to_be_bytes());
    b
}
