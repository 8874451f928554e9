//! Topic creation at scale (issue 15): a topic of more than 100 partitions is answered once
//! its records are committed and published, and its logs are made afterwards, as Kafka's
//! brokers make them when they learn of the records; a smaller one is usable at the answer.
//! Whatever the order, every partition ends with exactly one log, and a topic deleted while
//! its logs are being made leaves none behind.
mod common;
use common::create_topic_with as create_topic;
use common::*;

use std::time::{Duration, Instant};
use strata::error::ErrorCode;
use strata::protocol::messages::*;

async fn produce_one(c: &mut Client, topic: &str, partition: i32) -> (i16, i64) {
    use produce_request::*;
    let r = api_call!(
        c,
        produce_request::ProduceRequest,
        produce_response::ProduceResponse,
        9,
        ProduceRequest {
            acks: 1,
            timeout_ms: 5000,
            topic_data: vec![TopicProduceData {
                name: topic.into(),
                partition_data: vec![PartitionProduceData {
                    index: partition,
                    records: Some(batch(&[b"v"], None)),
                    ..Default::default()
                }],
                ..Default::default()
            }],
            ..Default::default()
        }
    );
    let p = &r.responses[0].partition_responses[0];
    (p.error_code, p.base_offset)
}

/// Produces one record to `partition` until it is accepted; only NOT_LEADER_OR_FOLLOWER
/// (the log not made yet) may come before. The base offset.
async fn produce_when_ready(c: &mut Client, topic: &str, partition: i32) -> i64 {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let (code, offset) = produce_one(c, topic, partition).await;
        if code == 0 {
            return offset;
        }
        assert_eq!(
            code,
            ErrorCode::NOT_LEADER_OR_FOLLOWER.code(),
            "{topic}-{partition} while its log is made"
        );
        assert!(Instant::now() < deadline, "{topic}-{partition} never ready");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

fn partition_dirs(dir: &std::path::Path, topic: &str) -> usize {
    let prefix = format!("{topic}-");
    std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            name.strip_prefix(&prefix)
                .is_some_and(|rest| rest.parse::<i32>().is_ok())
        })
        .count()
}

#[tokio::test]
async fn a_large_topic_is_visible_at_the_answer_and_every_log_follows() {
    let b = TestBroker::start(&[]).await;
    let mut c = b.client().await;
    assert_eq!(create_topic(&mut c, "big", 1500, &[]).await, 0);
    // Visible at once, every partition led by this broker.
    let md = topic_metadata(&mut c, "big").await;
    let t = &md.topics[0];
    assert_eq!(t.error_code, 0);
    assert_eq!(t.partitions.len(), 1500);
    assert!(t
        .partitions
        .iter()
        .all(|p| p.leader_id == md.brokers[0].node_id && p.error_code == 0));
    // The last partition's log comes last; then every partition takes its first record at 0.
    assert_eq!(produce_when_ready(&mut c, "big", 1499).await, 0);
    for p in 0..1499 {
        assert_eq!(produce_when_ready(&mut c, "big", p).await, 0, "big-{p}");
    }
    assert_eq!(partition_dirs(b.dir.path(), "big"), 1500);
    // A restart finds exactly those logs, each with its record.
    let b = b.restart(&[]).await;
    let mut c = b.client().await;
    assert_eq!(produce_when_ready(&mut c, "big", 1499).await, 1);
    assert_eq!(produce_when_ready(&mut c, "big", 0).await, 1);
    assert_eq!(partition_dirs(b.dir.path(), "big"), 1500);
}

#[tokio::test]
async fn a_small_topic_is_usable_at_the_answer() {
    let b = TestBroker::start(&[]).await;
    let mut c = b.client().await;
    assert_eq!(create_topic(&mut c, "small", 100, &[]).await, 0);
    for p in [0, 57, 99] {
        assert_eq!(produce_one(&mut c, "small", p).await, (0, 0), "small-{p}");
    }
}

#[tokio::test]
async fn a_topic_deleted_while_its_logs_are_made_leaves_no_log() {
    let b = TestBroker::start(&[]).await;
    let mut c = b.client().await;
    assert_eq!(create_topic(&mut c, "gone", 2000, &[]).await, 0);
    // Created meanwhile (its one log is made before its answer), and served at once.
    assert_eq!(create_topic(&mut c, "beside", 1, &[]).await, 0);
    assert_eq!(produce_one(&mut c, "beside", 0).await, (0, 0));
    let r = api_call!(
        c,
        delete_topics_request::DeleteTopicsRequest,
        delete_topics_response::DeleteTopicsResponse,
        5,
        delete_topics_request::DeleteTopicsRequest {
            topic_names: vec!["gone".into()],
            timeout_ms: 30_000,
            ..Default::default()
        }
    );
    assert_eq!(r.responses[0].error_code, 0);
    // Once the deletion is answered, nothing of the topic may remain or come back.
    assert_eq!(partition_dirs(b.dir.path(), "gone"), 0);
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(partition_dirs(b.dir.path(), "gone"), 0);
    assert_eq!(
        produce_one(&mut c, "gone", 0).await.0,
        ErrorCode::UNKNOWN_TOPIC_OR_PARTITION.code()
    );
    // The name can be used again, from offset 0.
    assert_eq!(create_topic(&mut c, "gone", 3, &[]).await, 0);
    assert_eq!(produce_one(&mut c, "gone", 2).await, (0, 0));
    assert_eq!(produce_one(&mut c, "beside", 0).await, (0, 1));
}
