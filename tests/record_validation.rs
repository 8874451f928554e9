//! The produce path's record validation over real TCP (Kafka's `LogValidator`): KIP-467
//! record errors for keyless records on a compacted topic (librdkafka's test 0011 case),
//! compressed batches that lie or do not decompress, and a topic's `compression.type`
//! recompressing what producers send.
mod common;
use common::*;

use bytes::Bytes;
use strata::protocol::records::batch::{compute_crc, parse_header, CRC_OFFSET};
use strata::protocol::records::compression::Compression;
use strata::protocol::records::{decode_records, RecordBatchBuilder, RecordHeader};

async fn produce_at(
    c: &mut Client,
    version: i16,
    topic: &str,
    records: Bytes,
) -> strata::protocol::messages::produce_response::PartitionProduceResponse {
    let req = common::txn::produce_req(topic, records);
    let r = api_call!(
        c,
        produce_request::ProduceRequest,
        produce_response::ProduceResponse,
        version,
        req
    );
    r.responses[0].partition_responses[0].clone()
}

/// 100 records, keyless at every index `i % 10 == 7`, as one batch with `codec`.
fn hundred_with_ten_keyless(codec: Compression) -> Bytes {
    let now = now_ms();
    let mut b = RecordBatchBuilder::new(0).compression(codec);
    for i in 0..100 {
        let key = (i % 10 != 7).then(|| Bytes::from(format!("key-{i}")));
        b.append(now, key, Some(Bytes::from(format!("value-{i}"))), vec![]);
    }
    b.build().freeze()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keyless_records_on_a_compacted_topic_get_record_errors() {
    let broker = TestBroker::start(&[]).await;
    let mut c = broker.client().await;
    let topic = "compacted";
    assert_eq!(
        create_topic_with(&mut c, topic, 1, &[("cleanup.policy", "compact")]).await,
        0
    );
    let keyless: Vec<i32> = (0..100).filter(|i| i % 10 == 7).collect();
    for (version, codec) in [
        (8, Compression::None),
        (9, Compression::Gzip),
        (11, Compression::Zstd),
    ] {
        let p = produce_at(&mut c, version, topic, hundred_with_ten_keyless(codec)).await;
        assert_eq!(p.error_code, 87, "INVALID_RECORD, v{version} {codec:?}");
        assert_eq!(
            p.record_errors
                .iter()
                .map(|e| e.batch_index)
                .collect::<Vec<_>>(),
            keyless,
            "v{version} {codec:?}"
        );
        for e in &p.record_errors {
            assert_eq!(
                e.batch_index_error_message.as_deref(),
                Some("Compacted topic cannot accept message without key in topic partition compacted-0")
            );
        }
        let message = p.error_message.expect("error_message");
        assert!(
            message.starts_with("One or more records have been rejected due to 10 record errors"),
            "{message}"
        );
        assert_eq!(p.base_offset, -1);
    }
    // Nothing of the refused batches was stored.
    let f = fetch_partition(&mut c, topic, 0, 0, 1 << 20).await;
    assert_eq!((f.error_code, f.high_watermark), (0, 0));
    // The same records, all keyed, are taken.
    let p = produce_at(&mut c, 9, topic, hundred_with_ten_keyless_keyed()).await;
    assert_eq!((p.error_code, p.base_offset), (0, 0));
    assert!(p.record_errors.is_empty());
}

fn hundred_with_ten_keyless_keyed() -> Bytes {
    let now = now_ms();
    let mut b = RecordBatchBuilder::new(0).compression(Compression::Gzip);
    for i in 0..100 {
        b.append(
            now,
            Some(Bytes::from(format!("key-{i}"))),
            Some(Bytes::from(format!("value-{i}"))),
            vec![],
        );
    }
    b.build().freeze()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lying_and_undecodable_compressed_batches_are_refused() {
    let broker = TestBroker::start(&[]).await;
    let mut c = broker.client().await;
    assert_eq!(create_topic_with(&mut c, "t", 1, &[]).await, 0);
    let good = hundred_with_ten_keyless_keyed();
    // A gzip batch claiming 101 records.
    let mut lying = good.to_vec();
    lying[57..61].copy_from_slice(&101i32.to_be_bytes());
    lying[23..27].copy_from_slice(&100i32.to_be_bytes());
    let crc = compute_crc(&lying);
    lying[CRC_OFFSET..CRC_OFFSET + 4].copy_from_slice(&crc.to_be_bytes());
    let p = produce_at(&mut c, 9, "t", Bytes::from(lying)).await;
    assert_eq!(p.error_code, 87, "INVALID_RECORD");
    // A batch that says gzip but holds garbage (CRC valid).
    let mut garbage = good[..61].to_vec();
    garbage.extend((0..500u32).map(|i| (i * 31 % 253) as u8));
    let len = (garbage.len() - 12) as i32;
    garbage[8..12].copy_from_slice(&len.to_be_bytes());
    let crc = compute_crc(&garbage);
    garbage[CRC_OFFSET..CRC_OFFSET + 4].copy_from_slice(&crc.to_be_bytes());
    let p = produce_at(&mut c, 9, "t", Bytes::from(garbage)).await;
    assert_eq!(p.error_code, 2, "CORRUPT_MESSAGE");
    let f = fetch_partition(&mut c, "t", 0, 0, 1 << 20).await;
    assert_eq!(f.high_watermark, 0, "nothing stored");
    let p = produce_at(&mut c, 9, "t", good).await;
    assert_eq!(p.error_code, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn topic_compression_type_zstd_stores_zstd_batches() {
    let broker = TestBroker::start(&[]).await;
    let mut c = broker.client().await;
    let topic = "zstd-topic";
    assert_eq!(
        create_topic_with(&mut c, topic, 1, &[("compression.type", "zstd")]).await,
        0
    );
    let base_ts = now_ms();
    let batch = |codec: Compression, first: usize| {
        let mut b = RecordBatchBuilder::new(0).compression(codec);
        for i in first..first + 5 {
            b.append(
                base_ts + i as i64 * 10,
                Some(Bytes::from(format!("k{i}"))),
                Some(Bytes::from(format!("v{i}"))),
                vec![RecordHeader {
                    key: "h".into(),
                    value: Some(Bytes::from(format!("{i}"))),
                }],
            );
        }
        b.build().freeze()
    };
    for (n, codec) in [Compression::None, Compression::Gzip, Compression::Zstd]
        .into_iter()
        .enumerate()
    {
        let p = produce_at(&mut c, 9, topic, batch(codec, n * 5)).await;
        assert_eq!(
            (p.error_code, p.base_offset),
            (0, n as i64 * 5),
            "{codec:?}"
        );
    }
    let f = fetch_partition(&mut c, topic, 0, 0, 1 << 20).await;
    assert_eq!(f.error_code, 0);
    let data = f.records.expect("records");
    let mut pos = 0;
    let mut seen = Vec::new();
    while pos < data.len() {
        let h = parse_header(&data[pos..]).expect("header");
        let end = pos + h.total_size();
        assert_eq!(h.compression(), Compression::Zstd.id(), "stored as zstd");
        assert_eq!(h.records_count, 5);
        for r in decode_records(&data[pos..end], 1 << 20).expect("decodes") {
            let offset = h.base_offset + r.offset_delta as i64;
            let ts = h.base_timestamp + r.timestamp_delta;
            seen.push((
                offset,
                ts,
                r.key.unwrap(),
                r.value.unwrap(),
                r.headers[0].value.clone().unwrap(),
            ));
        }
        pos = end;
    }
    assert_eq!(seen.len(), 15);
    for (i, (offset, ts, key, value, header)) in seen.into_iter().enumerate() {
        assert_eq!(offset, i as i64);
        assert_eq!(ts, base_ts + i as i64 * 10);
        assert_eq!(key, Bytes::from(format!("k{i}")));
        assert_eq!(value, Bytes::from(format!("v{i}")));
        assert_eq!(header, Bytes::from(format!("{i}")));
    }
}
