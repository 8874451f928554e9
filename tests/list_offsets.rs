//! ListOffsets over the wire: every sentinel and a timestamp lookup at every advertised
//! version, with the timestamp, offset and leader epoch a client reads (not only the codes).
mod common;
use common::create_topic_with as create_topic;
use common::*;

use bytes::Bytes;
use strata::error::ErrorCode;
use strata::protocol::messages::*;
use strata::protocol::records::RecordBatchBuilder;

/// One uncompressed batch whose records carry these absolute timestamps.
fn batch_at(timestamps: &[i64]) -> Bytes {
    let mut b = RecordBatchBuilder::new(0);
    for (i, ts) in timestamps.iter().enumerate() {
        b.append(*ts, None, Some(Bytes::from(format!("v{i}"))), vec![]);
    }
    b.build().freeze()
}

async fn produce(c: &mut Client, topic: &str, records: Bytes) {
    use produce_request::*;
    let r = api_call!(
        c,
        produce_request::ProduceRequest,
        produce_response::ProduceResponse,
        9,
        ProduceRequest {
            acks: -1,
            timeout_ms: 5000,
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
    );
    assert_eq!(r.responses[0].partition_responses[0].error_code, 0);
}

/// ListOffsets for `(topic, partition, timestamp)` rows at `version`, from a consumer.
async fn list_offsets(
    c: &mut Client,
    version: i16,
    isolation_level: i8,
    rows: &[(&str, i32, i64)],
) -> Vec<list_offsets_response::ListOffsetsPartitionResponse> {
    use list_offsets_request::*;
    let req = ListOffsetsRequest {
        replica_id: -1,
        isolation_level,
        topics: rows
            .iter()
            .map(|(topic, partition, ts)| ListOffsetsTopic {
                name: topic.to_string(),
                partitions: vec![ListOffsetsPartition {
                    partition_index: *partition,
                    timestamp: *ts,
                    ..Default::default()
                }],
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    };
    let r = api_call!(
        c,
        list_offsets_request::ListOffsetsRequest,
        list_offsets_response::ListOffsetsResponse,
        version,
        req
    );
    r.topics
        .into_iter()
        .flat_map(|t| t.partitions.into_iter())
        .collect()
}

async fn leader_epoch(c: &mut Client, topic: &str) -> i32 {
    topic_metadata(c, topic).await.topics[0].partitions[0].leader_epoch
}

/// (error code, timestamp, offset, leader epoch) as the client reads them.
type Row = (i16, i64, i64, i32);

fn row(r: &list_offsets_response::ListOffsetsPartitionResponse) -> Row {
    (r.error_code, r.timestamp, r.offset, r.leader_epoch)
}

#[tokio::test]
async fn every_spec_at_every_version() {
    let b = TestBroker::start(&[]).await;
    let mut c = b.client().await;
    assert_eq!(create_topic(&mut c, "lo", 1, &[]).await, 0);
    let base = now_ms() - 60_000;
    // Offsets 0..=2 in one batch, the largest timestamp in the middle (offset 1); then 3..=4.
    produce(&mut c, "lo", batch_at(&[base, base + 50, base + 10])).await;
    produce(&mut c, "lo", batch_at(&[base + 20, base + 30])).await;
    let epoch = leader_epoch(&mut c, "lo").await;
    assert!(epoch >= 0);

    let unsupported: Row = (ErrorCode::UNSUPPORTED_VERSION.code(), -1, -1, -1);
    for version in 1..=11i16 {
        // The leader epoch travels from v4; below it the client reads the default -1.
        let e = if version >= 4 { epoch } else { -1 };
        let cases: Vec<(i64, Row)> = vec![
            (-1, (0, -1, 5, e)),
            (-2, (0, -1, 0, e)),
            (
                -3,
                if version >= 7 {
                    (0, base + 50, 1, e)
                } else {
                    unsupported
                },
            ),
            (
                -4,
                if version >= 8 {
                    (0, -1, 0, e)
                } else {
                    unsupported
                },
            ),
            // Nothing is tiered: Kafka answers no offset, without an error.
            (
                -5,
                if version >= 9 {
                    (0, -1, -1, -1)
                } else {
                    unsupported
                },
            ),
            // KIP-1023's earliest pending upload (v11): nothing is tiered, so no offset.
            (
                -6,
                if version >= 11 {
                    (0, -1, -1, -1)
                } else {
                    unsupported
                },
            ),
            (-7, unsupported),
            // The first record at or after the time, with its own timestamp.
            (base - 1_000, (0, base, 0, e)),
            (base + 5, (0, base + 50, 1, e)),
            (base + 51, (0, -1, -1, -1)),
        ];
        for (ts, want) in cases {
            let got = list_offsets(&mut c, version, 0, &[("lo", 0, ts)]).await;
            assert_eq!(row(&got[0]), want, "version {version} timestamp {ts}");
        }
    }
}

#[tokio::test]
async fn max_timestamp_is_the_record_not_the_batch_end() {
    let b = TestBroker::start(&[]).await;
    let mut c = b.client().await;
    assert_eq!(create_topic(&mut c, "mt", 1, &[]).await, 0);
    let base = now_ms() - 60_000;
    let r = list_offsets(&mut c, 7, 0, &[("mt", 0, -3)]).await;
    assert_eq!(row(&r[0]), (0, -1, -1, -1), "empty log: no record");
    produce(&mut c, "mt", batch_at(&[base + 100, base, base])).await;
    produce(&mut c, "mt", batch_at(&[base + 1, base + 2])).await;
    let epoch = leader_epoch(&mut c, "mt").await;
    let r = list_offsets(&mut c, 10, 0, &[("mt", 0, -3)]).await;
    assert_eq!(row(&r[0]), (0, base + 100, 0, epoch));
    let r = list_offsets(&mut c, 10, 1, &[("mt", 0, -3)]).await;
    assert_eq!(row(&r[0]), (0, base + 100, 0, epoch), "read_committed");
}

#[tokio::test]
async fn earliest_follows_the_log_start_and_errors_are_per_partition() {
    let b = TestBroker::start(&[]).await;
    let mut c = b.client().await;
    assert_eq!(create_topic(&mut c, "es", 1, &[]).await, 0);
    let base = now_ms() - 60_000;
    produce(&mut c, "es", batch_at(&[base, base + 1, base + 2])).await;
    let epoch = leader_epoch(&mut c, "es").await;
    let r = api_call!(
        c,
        delete_records_request::DeleteRecordsRequest,
        delete_records_response::DeleteRecordsResponse,
        2,
        delete_records_request::DeleteRecordsRequest {
            topics: vec![delete_records_request::DeleteRecordsTopic {
                name: "es".into(),
                partitions: vec![delete_records_request::DeleteRecordsPartition {
                    partition_index: 0,
                    offset: 2,
                    ..Default::default()
                }],
                ..Default::default()
            }],
            timeout_ms: 5000,
            ..Default::default()
        }
    );
    assert_eq!(r.topics[0].partitions[0].error_code, 0);
    for spec in [-2, -4] {
        let r = list_offsets(&mut c, 8, 0, &[("es", 0, spec)]).await;
        assert_eq!(row(&r[0]), (0, -1, 2, epoch), "spec {spec}");
    }
    // A time before the log start finds the first record still in the log.
    let r = list_offsets(&mut c, 8, 0, &[("es", 0, base - 1)]).await;
    assert_eq!(row(&r[0]), (0, base + 2, 2, epoch));

    // The same partition twice: both refused; an unknown topic: its own error.
    let r = list_offsets(
        &mut c,
        7,
        0,
        &[("es", 0, -1), ("es", 0, -2), ("nope", 0, -1)],
    )
    .await;
    let invalid = (ErrorCode::INVALID_REQUEST.code(), -1, -1, -1);
    assert_eq!(row(&r[0]), invalid);
    assert_eq!(row(&r[1]), invalid);
    assert_eq!(
        row(&r[2]),
        (ErrorCode::UNKNOWN_TOPIC_OR_PARTITION.code(), -1, -1, -1)
    );
}
