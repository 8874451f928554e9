//! Zero-copy fetch (`strata.fetch.zero.copy`): a consumer's Fetch answered with the record
//! bytes sent from the segment files (sendfile) decodes to exactly what the copying path
//! answers, over real TCP, for non-flexible (v4, v11) and flexible (v12, v16) versions, with
//! several partitions in one response (some with data, one empty, one unknown), size limits
//! that cut between batches, a fetch offset inside a batch, and the batches of more than one
//! segment. Both brokers hold the same batches (same bytes, same offsets).
mod common;
use common::{api_call, create_topic_with, Client, TestBroker};

use bytes::Bytes;
use strata::protocol::messages::fetch_request::{FetchPartition, FetchRequest, FetchTopic};
use strata::protocol::messages::*;

const TOPIC: &str = "zc";

async fn produce(c: &mut Client, partition: i32, records: Bytes) {
    let mut req = common::txn::produce_req(TOPIC, records);
    req.topic_data[0].partition_data[0].index = partition;
    let r = api_call!(
        c,
        produce_request::ProduceRequest,
        produce_response::ProduceResponse,
        9,
        req
    );
    assert_eq!(r.responses[0].partition_responses[0].error_code, 0, "{r:?}");
}

/// The same batches on both brokers: partition 0 gets 40 batches of 1-5 records (small
/// segments, so they span several), partition 1 gets 3, partition 2 none.
async fn fill(brokers: &[&TestBroker]) {
    let mut batches = Vec::new();
    for i in 0..40usize {
        let values: Vec<Vec<u8>> = (0..1 + i % 5)
            .map(|j| format!("record-{i}-{j}-{}", "x".repeat(i * 7 % 90)).into_bytes())
            .collect();
        let values: Vec<&[u8]> = values.iter().map(|v| v.as_slice()).collect();
        batches.push(common::batch(&values, None));
    }
    for b in brokers {
        let mut c = b.client().await;
        let configs = [
            ("segment.bytes", "2048"),
            ("segment.index.bytes", "256"),
            ("index.interval.bytes", "100"),
        ];
        assert_eq!(create_topic_with(&mut c, TOPIC, 3, &configs).await, 0);
        for batch in &batches {
            produce(&mut c, 0, batch.clone()).await;
        }
        for batch in &batches[..3] {
            produce(&mut c, 1, batch.clone()).await;
        }
    }
}

fn request(
    offset: i64,
    partition_max_bytes: i32,
    max_bytes: i32,
    topic_id: strata::protocol::codec::Uuid,
) -> FetchRequest {
    FetchRequest {
        max_wait_ms: 0,
        min_bytes: 1,
        max_bytes,
        topics: vec![FetchTopic {
            topic: TOPIC.into(),
            topic_id,
            partitions: [0, 1, 2, 9]
                .into_iter()
                .map(|p| FetchPartition {
                    partition: p,
                    fetch_offset: if p == 0 { offset } else { 0 },
                    partition_max_bytes,
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        }],
        ..Default::default()
    }
}

fn topic_id(b: &TestBroker) -> strata::protocol::codec::Uuid {
    let broker = &b.running.as_ref().unwrap().broker;
    strata::protocol::codec::Uuid(broker.cluster.image().topic(TOPIC).unwrap().topic_id)
}

#[tokio::test]
async fn zero_copy_fetch_answers_what_the_copying_fetch_answers() {
    let copying = TestBroker::start(&[("strata.fetch.zero.copy", "false")]).await;
    let zero_copy = TestBroker::start(&[]).await;
    fill(&[&copying, &zero_copy]).await;
    let mut cc = copying.client().await;
    let mut zc = zero_copy.client().await;
    let mut with_data = 0;
    for version in [4i16, 11, 12, 16] {
        for (offset, partition_max_bytes, max_bytes) in [
            (0, 1 << 20, 1 << 20),
            (7, 300, 1 << 20),
            (13, 1, 1 << 20),
            (50, 700, 900),
            (0, 1 << 20, 1),
            (95, 5_000, 1 << 20),
        ] {
            let mut answers = Vec::new();
            for (b, c) in [(&copying, &mut cc), (&zero_copy, &mut zc)] {
                let id = if version >= 13 {
                    topic_id(b)
                } else {
                    Default::default()
                };
                let mut r = api_call!(
                    c,
                    fetch_request::FetchRequest,
                    fetch_response::FetchResponse,
                    version,
                    request(offset, partition_max_bytes, max_bytes, id)
                );
                for t in &mut r.responses {
                    t.topic_id = Default::default();
                }
                answers.push(r);
            }
            let what = format!("v{version} offset {offset} max {partition_max_bytes}/{max_bytes}");
            assert_eq!(answers[0], answers[1], "{what}");
            let r = &answers[1];
            assert_eq!(r.responses[0].partitions.len(), 4, "{what}");
            assert_ne!(
                r.responses[0].partitions[3].error_code, 0,
                "{what}: unknown partition"
            );
            if r.responses[0].partitions[0]
                .records
                .as_ref()
                .is_some_and(|b| !b.is_empty())
            {
                with_data += 1;
            }
        }
    }
    assert!(with_data >= 16, "most fetches return records ({with_data})");
}
