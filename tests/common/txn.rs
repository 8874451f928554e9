//! Protocol helpers for transaction tests: topics, produce, the transactional producer's
//! requests (InitProducerId, AddPartitionsToTxn, EndTxn) and a read_committed view that drops
//! aborted ranges as consumers do.
#![allow(dead_code)]
use std::collections::HashSet;
use std::time::Duration;

use bytes::Bytes;
use strata::protocol::messages::*;
use strata::protocol::records::batch::parse_header;

use super::{api_call, now_ms, Client};

pub async fn create_topic(c: &mut Client, name: &str) {
    let code = super::create_topic_with(c, name, 1, &[]).await;
    assert_eq!(code, 0, "create topic {name}");
}

pub fn produce_req(topic: &str, records: Bytes) -> produce_request::ProduceRequest {
    produce_req_as(None, topic, records)
}

/// As [`produce_req`], from the producer of `transactional_id` (Kafka refuses transactional
/// records without one).
pub fn produce_req_as(
    transactional_id: Option<&str>,
    topic: &str,
    records: Bytes,
) -> produce_request::ProduceRequest {
    use produce_request::*;
    ProduceRequest {
        transactional_id: transactional_id.map(str::to_string),
        acks: -1,
        timeout_ms: 10_000,
        topic_data: vec![TopicProduceData {
            name: topic.into(),
            partition_data: vec![PartitionProduceData {
                index: 0,
                records: Some(records),
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    }
}

/// Produces with acks=-1 and returns (error code, base offset).
pub async fn produce(c: &mut Client, topic: &str, records: Bytes) -> (i16, i64) {
    produce_as(c, None, topic, records).await
}

/// As [`produce`], from the producer of `transactional_id`.
pub async fn produce_as(
    c: &mut Client,
    transactional_id: Option<&str>,
    topic: &str,
    records: Bytes,
) -> (i16, i64) {
    let r = api_call!(
        c,
        produce_request::ProduceRequest,
        produce_response::ProduceResponse,
        9,
        produce_req_as(transactional_id, topic, records)
    );
    let p = &r.responses[0].partition_responses[0];
    (p.error_code, p.base_offset)
}

/// A transactional batch of `values` for (producer id, epoch, base sequence).
pub fn txn_batch(values: &[&str], producer: (i64, i16, i32)) -> Bytes {
    let now = now_ms();
    let mut b = strata::protocol::records::RecordBatchBuilder::new(0)
        .producer(producer.0, producer.1, producer.2)
        .transactional(true)
        .base_timestamp_ms(now);
    for v in values {
        b.append(
            now,
            None,
            Some(Bytes::copy_from_slice(v.as_bytes())),
            vec![],
        );
    }
    b.build().freeze()
}

/// One InitProducerId for a transactional id, as a producer sends it at start.
pub async fn init_producer_id_once(
    c: &mut Client,
    id: &str,
    timeout_ms: i32,
) -> init_producer_id_response::InitProducerIdResponse {
    init_producer_id_v4(c, Some(id), timeout_ms).await
}

/// One InitProducerId of an idempotent (not transactional) producer.
pub async fn init_idempotent_producer(
    c: &mut Client,
) -> init_producer_id_response::InitProducerIdResponse {
    init_producer_id_v4(c, None, -1).await
}

async fn init_producer_id_v4(
    c: &mut Client,
    transactional_id: Option<&str>,
    timeout_ms: i32,
) -> init_producer_id_response::InitProducerIdResponse {
    use init_producer_id_request::*;
    api_call!(
        c,
        init_producer_id_request::InitProducerIdRequest,
        init_producer_id_response::InitProducerIdResponse,
        4,
        InitProducerIdRequest {
            transactional_id: transactional_id.map(Into::into),
            transaction_timeout_ms: timeout_ms,
            producer_id: -1,
            producer_epoch: -1,
            ..Default::default()
        }
    )
}

/// One AddPartitionsToTxn (v3) of partition 0 of each of `topics`: the partitions' error codes.
pub async fn add_partitions_once(
    c: &mut Client,
    id: &str,
    pid: (i64, i16),
    topics: &[&str],
) -> Vec<i16> {
    use add_partitions_to_txn_request::*;
    let r = api_call!(
        c,
        add_partitions_to_txn_request::AddPartitionsToTxnRequest,
        add_partitions_to_txn_response::AddPartitionsToTxnResponse,
        3,
        AddPartitionsToTxnRequest {
            v3_and_below_transactional_id: id.into(),
            v3_and_below_producer_id: pid.0,
            v3_and_below_producer_epoch: pid.1,
            v3_and_below_topics: topics
                .iter()
                .map(|t| AddPartitionsToTxnTopic {
                    name: t.to_string(),
                    partitions: vec![0],
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        }
    );
    r.results_by_topic_v3_and_below
        .iter()
        .flat_map(|t| {
            t.results_by_partition
                .iter()
                .map(|p| p.partition_error_code)
        })
        .collect()
}

/// One EndTxn (v3): its error code.
pub async fn end_txn_once(c: &mut Client, id: &str, pid: (i64, i16), commit: bool) -> i16 {
    use end_txn_request::*;
    let r = api_call!(
        c,
        end_txn_request::EndTxnRequest,
        end_txn_response::EndTxnResponse,
        3,
        EndTxnRequest {
            transactional_id: id.into(),
            producer_id: pid.0,
            producer_epoch: pid.1,
            committed: commit,
            ..Default::default()
        }
    );
    r.error_code
}

pub async fn txn_init(c: &mut Client, id: &str, timeout_ms: i32) -> (i64, i16) {
    for _ in 0..50 {
        let r = init_producer_id_once(c, id, timeout_ms).await;
        if r.error_code == 0 {
            return (r.producer_id, r.producer_epoch);
        }
        // CONCURRENT_TRANSACTIONS / COORDINATOR_LOAD_IN_PROGRESS: retry as clients do.
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("InitProducerId for {id} never succeeded");
}

pub async fn txn_add(c: &mut Client, id: &str, pid: (i64, i16), topic: &str) {
    let codes = add_partitions_once(c, id, pid, &[topic]).await;
    assert_eq!(codes, vec![0], "AddPartitionsToTxn");
}

pub async fn txn_end(c: &mut Client, id: &str, pid: (i64, i16), commit: bool) {
    assert_eq!(end_txn_once(c, id, pid, commit).await, 0, "EndTxn");
}

/// OffsetFetch v7 (require_stable, as the Java consumer asks) of partition 0 of `topic` for
/// `group`: (error code, committed offset), the group's error first.
pub async fn offset_fetch_stable(c: &mut Client, group: &str, topic: &str) -> (i16, i64) {
    use offset_fetch_request::*;
    let r = api_call!(
        c,
        offset_fetch_request::OffsetFetchRequest,
        offset_fetch_response::OffsetFetchResponse,
        7,
        OffsetFetchRequest {
            group_id: group.into(),
            topics: Some(vec![OffsetFetchRequestTopic {
                name: topic.into(),
                partition_indexes: vec![0],
                ..Default::default()
            }]),
            require_stable: true,
            ..Default::default()
        }
    );
    if r.error_code != 0 {
        return (r.error_code, -1);
    }
    let p = &r.topics[0].partitions[0];
    (p.error_code, p.committed_offset)
}

/// Waits until the last stable offset of partition 0 of `topic` reaches `lso`.
pub async fn wait_for_lso(c: &mut Client, topic: &str, lso: i64) {
    for _ in 0..100 {
        if visible(c, topic, 1).await.1 >= lso {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("last stable offset of {topic} never reached {lso}");
}

/// Values visible to a consumer at `isolation` (1 = read_committed), dropping aborted ranges as
/// the Java consumer does, plus the partition's last stable offset.
pub async fn visible(c: &mut Client, topic: &str, isolation: i8) -> (Vec<String>, i64) {
    let p = super::fetch_partition(c, topic, 0, isolation, 1 << 20).await;
    assert_eq!(p.error_code, 0);
    let aborted: Vec<(i64, i64)> = p
        .aborted_transactions
        .unwrap_or_default()
        .iter()
        .map(|a| (a.producer_id, a.first_offset))
        .collect();
    let records = p.records.unwrap_or_default();
    let mut out = Vec::new();
    let mut pos = 0;
    // As consumers do: a producer's batches are skipped from the first offset of an aborted
    // transaction until that producer's next control marker.
    let mut aborting: HashSet<i64> = HashSet::new();
    while pos + 61 <= records.len() {
        let h = parse_header(&records[pos..]).unwrap();
        let end = pos + h.total_size();
        if !h.is_control()
            && aborted
                .iter()
                .any(|(pid, first)| *pid == h.producer_id && *first == h.base_offset)
        {
            aborting.insert(h.producer_id);
        }
        let dropped = h.is_control() || aborting.contains(&h.producer_id);
        if h.is_control() {
            aborting.remove(&h.producer_id);
        }
        if !dropped {
            for r in strata::protocol::records::decode_records(&records[pos..end], 1 << 20).unwrap()
            {
                out.push(String::from_utf8(r.value.unwrap().to_vec()).unwrap());
            }
        }
        pos = end;
    }
    (out, p.last_stable_offset)
}
