//! Durable acknowledgements (`strata.log.durable.acks`, issue 15) on one broker: acks=1 and
//! acks=all produces and coordinator writes are answered only once the group commit has
//! fsynced their records; acks=0 asks for nothing; the offsets a client reads are unchanged.
//! The replicated case (followers fsync before fetching again) is in `replication_tcp.rs`.
mod common;

use std::sync::Arc;

use common::txn::produce_req_as;
use common::{api_call, batch, create_topic_with, TestBroker};
use strata::broker::Broker;

fn broker(b: &TestBroker) -> Arc<Broker> {
    b.running.as_ref().expect("running").broker.clone()
}

fn durable_offset(b: &TestBroker, topic: &str, partition: i32) -> (i64, i64) {
    let p = broker(b).replicas.get(topic, partition).expect("partition");
    (p.log.durable_offset(), p.log_end_offset())
}

fn requests_answered(b: &TestBroker) -> u64 {
    broker(b)
        .replicas
        .logs()
        .group_commit()
        .expect("durable acks are on")
        .stats()
        .requests
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acknowledgements_wait_for_the_fsync_of_their_records() {
    let b = TestBroker::start(&[("strata.log.durable.acks", "true")]).await;
    let mut c = b.client().await;
    assert_eq!(create_topic_with(&mut c, "d", 1, &[]).await, 0);
    let mut expected_base = 0;
    for (acks, values) in [
        (1i16, vec![&b"a"[..], b"b"]),
        (-1, vec![b"c"]),
        (1, vec![b"d", b"e", b"f"]),
    ] {
        let mut req = produce_req_as(None, "d", batch(&values, None));
        req.acks = acks;
        let before = requests_answered(&b);
        let r = api_call!(
            c,
            produce_request::ProduceRequest,
            produce_response::ProduceResponse,
            9,
            req
        );
        let p = &r.responses[0].partition_responses[0];
        assert_eq!(
            (p.error_code, p.base_offset),
            (0, expected_base),
            "acks={acks}"
        );
        expected_base += values.len() as i64;
        // Answered only after the fsync covered the batch.
        assert_eq!(durable_offset(&b, "d", 0), (expected_base, expected_base));
        assert!(
            requests_answered(&b) > before,
            "acks={acks} went through the group commit"
        );
    }

    // acks=0 gets no answer and asks for no fsync; the next acknowledged write covers it.
    let mut req = produce_req_as(None, "d", batch(&[b"g"], None));
    req.acks = 0;
    let before = requests_answered(&b);
    c.write_request(
        strata::protocol::messages::produce_request::ProduceRequest::API_KEY,
        9,
        true,
        &req,
    )
    .await;
    let mut wait = 0;
    while durable_offset(&b, "d", 0).1 < expected_base + 1 {
        wait += 1;
        assert!(wait < 200, "the acks=0 batch is appended");
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    assert_eq!(requests_answered(&b), before);
    assert_eq!(
        durable_offset(&b, "d", 0),
        (expected_base, expected_base + 1)
    );

    // A coordinator write (an offset commit to `__consumer_offsets`) waits for its fsync too.
    let committed = common::offsets::commit(&mut c, 8, "g", &[("d", 0)], 5).await;
    assert_eq!(committed, vec![("d".to_string(), 0, 0)]);
    let offsets_partition = broker(&b)
        .replicas
        .all()
        .into_iter()
        .find(|p| p.topic == "__consumer_offsets" && p.log_end_offset() > 0)
        .expect("the commit's partition");
    assert_eq!(
        offsets_partition.log.durable_offset(),
        offsets_partition.log_end_offset()
    );
}

#[tokio::test]
async fn page_cache_acknowledgements_stay_the_default() {
    let b = TestBroker::start(&[]).await;
    assert!(broker(&b).replicas.logs().group_commit().is_none());
}
