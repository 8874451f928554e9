//! Malformed and hostile input: answered with Kafka's error or a closed connection, and the
//! broker keeps serving other clients.
mod common;
use common::*;

use bytes::{BufMut, BytesMut};
use tokio::io::AsyncWriteExt;

async fn still_serves(b: &TestBroker) {
    let mut c = b.client().await;
    let r = api_call!(
        c,
        api_versions_request::ApiVersionsRequest,
        api_versions_response::ApiVersionsResponse,
        0,
        strata::protocol::messages::api_versions_request::ApiVersionsRequest::default()
    );
    assert_eq!(r.error_code, 0);
}

async fn raw(b: &TestBroker, bytes: &[u8]) -> Client {
    let mut c = b.client().await;
    c.stream.write_all(bytes).await.unwrap();
    c
}

#[tokio::test]
async fn negative_and_huge_frame_sizes_close_the_connection() {
    let b = TestBroker::start(&[("socket.request.max.bytes", "1000")]).await;
    let mut c = raw(&b, &(-5i32).to_be_bytes()).await;
    assert!(c.is_closed().await);
    let mut c = raw(&b, &(i32::MAX).to_be_bytes()).await;
    assert!(c.is_closed().await);
    let mut c = raw(&b, &2000i32.to_be_bytes()).await;
    assert!(c.is_closed().await, "over socket.request.max.bytes");
    still_serves(&b).await;
}

#[tokio::test]
async fn unknown_api_key_closes_the_connection() {
    let b = TestBroker::start(&[]).await;
    let mut f = BytesMut::new();
    f.put_i32(10);
    f.put_i16(999);
    f.put_i16(0);
    f.put_i32(1);
    f.put_i16(-1);
    let mut c = raw(&b, &f).await;
    assert!(c.is_closed().await);
    still_serves(&b).await;
}

#[tokio::test]
async fn api_versions_at_an_unknown_version_gets_a_v0_answer() {
    let b = TestBroker::start(&[]).await;
    let mut f = BytesMut::new();
    f.put_i32(10);
    f.put_i16(18);
    f.put_i16(99);
    f.put_i32(7);
    f.put_i16(-1);
    let mut c = raw(&b, &f).await;
    let mut resp = c.read_frame().await.expect("an answer, not a close");
    use bytes::Buf;
    assert_eq!(resp.get_i32(), 7);
    assert_eq!(
        resp.get_i16(),
        strata::error::ErrorCode::UNSUPPORTED_VERSION.code()
    );
    assert!(resp.get_i32() > 5, "our ranges are listed");
}

#[tokio::test]
async fn huge_array_length_inside_a_small_frame_closes_without_allocating() {
    let b = TestBroker::start(&[]).await;
    let mut f = BytesMut::new();
    let mut body = BytesMut::new();
    body.put_i16(3); // Metadata
    body.put_i16(1);
    body.put_i32(1);
    body.put_i16(-1);
    body.put_i32(i32::MAX); // topics array length
    f.put_i32(body.len() as i32);
    f.put_slice(&body);
    let mut c = raw(&b, &f).await;
    assert!(c.is_closed().await);
    still_serves(&b).await;
}

#[tokio::test]
async fn random_bytes_never_take_the_broker_down() {
    let b = TestBroker::start(&[]).await;
    let mut seed: u64 = 0x5eed;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    for _ in 0..200 {
        let len = (next() % 200) as usize;
        let mut f = BytesMut::new();
        f.put_i32(len as i32);
        // Use real api keys and versions half of the time so bodies reach the decoders.
        for i in 0..len {
            let byte = next() as u8;
            f.put_u8(match i {
                0 if next() % 2 == 0 => 0,
                1 => (next() % 70) as u8,
                2 => 0,
                3 => (next() % 13) as u8,
                _ => byte,
            });
        }
        let mut c = raw(&b, &f).await;
        let _ = tokio::time::timeout(std::time::Duration::from_millis(200), c.read_frame()).await;
    }
    still_serves(&b).await;
}

#[tokio::test]
async fn max_connections_is_enforced() {
    let b = TestBroker::start(&[("max.connections", "2")]).await;
    let mut first = b.client().await;
    let _second = b.client().await;
    // The third connection is not served while two are open (it waits in the backlog).
    let addr = b.addr;
    let third = tokio::spawn(async move {
        let mut c = Client::connect(addr).await;
        let _ = api_call!(
            c,
            api_versions_request::ApiVersionsRequest,
            api_versions_response::ApiVersionsResponse,
            0,
            strata::protocol::messages::api_versions_request::ApiVersionsRequest::default()
        );
    });
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    assert!(
        !third.is_finished(),
        "a third connection was served beyond max.connections=2"
    );
    // Closing one lets it in.
    let _ = api_call!(
        first,
        api_versions_request::ApiVersionsRequest,
        api_versions_response::ApiVersionsResponse,
        0,
        strata::protocol::messages::api_versions_request::ApiVersionsRequest::default()
    );
    drop(first);
    tokio::time::timeout(std::time::Duration::from_secs(5), third)
        .await
        .expect("served once a slot frees")
        .unwrap();
}

#[tokio::test]
async fn pipelined_requests_beyond_the_in_flight_bound_are_answered_in_order() {
    let b = TestBroker::start(&[("strata.max.inflight.requests.per.connection", "2")]).await;
    let mut c = b.client().await;
    // Pipeline ten ApiVersions requests without reading; all are answered, in order.
    let mut frames = BytesMut::new();
    for id in 1..=10 {
        f_api_versions(&mut frames, id);
    }
    c.stream.write_all(&frames).await.unwrap();
    for id in 1..=10 {
        let mut resp = c.read_frame().await.expect("response");
        use bytes::Buf;
        assert_eq!(resp.get_i32(), id, "responses in request order");
    }
}

fn f_api_versions(f: &mut BytesMut, correlation_id: i32) {
    f.put_i32(10);
    f.put_i16(18);
    f.put_i16(0);
    f.put_i32(correlation_id);
    f.put_i16(-1);
}

/// Appends one record to partition 0 of `topic` with acks=1.
async fn produce_one(admin: &mut Client, topic: &str, value: &[u8]) {
    let mut req = common::txn::produce_req(topic, batch(&[value], None));
    req.acks = 1;
    let r = api_call!(
        admin,
        produce_request::ProduceRequest,
        produce_response::ProduceResponse,
        9,
        req
    );
    assert_eq!(r.responses[0].partition_responses[0].error_code, 0);
}

/// A long-poll Fetch pipelined before two ApiVersions: the ready answers wait behind it, in
/// request order, and the Fetch (its first poll made inline by the reader, then polled by the
/// connection's writer) is woken by a produce from another connection, not by its timeout.
#[tokio::test]
async fn a_waiting_fetch_keeps_request_order_and_wakes_on_a_produce() {
    use bytes::Buf;
    use strata::protocol::codec::Decode;
    use strata::protocol::messages::fetch_request::FetchRequest;
    use strata::protocol::messages::fetch_response::FetchResponse;
    let b = TestBroker::start(&[]).await;
    let mut admin = b.client().await;
    assert_eq!(create_topic_with(&mut admin, "waits", 1, &[]).await, 0);
    let mut c = b.client().await;
    let fetch = FetchRequest {
        replica_id: -1,
        max_wait_ms: 10_000,
        ..fetch_request("waits", 0, 0, 1 << 20)
    };
    c.write_request(1, 4, false, &fetch).await;
    let mut frames = BytesMut::new();
    f_api_versions(&mut frames, 2);
    f_api_versions(&mut frames, 3);
    c.stream.write_all(&frames).await.unwrap();
    // Nothing may come before the Fetch's answer, which waits for data.
    let early = tokio::time::timeout(std::time::Duration::from_millis(300), c.read_frame()).await;
    assert!(early.is_err(), "an answer came before the waiting fetch's");
    let sent = std::time::Instant::now();
    produce_one(&mut admin, "waits", b"woken").await;
    let mut first = tokio::time::timeout(std::time::Duration::from_secs(5), c.read_frame())
        .await
        .expect("the produce wakes the fetch well before its 10 s wait")
        .expect("fetch response");
    assert!(sent.elapsed() < std::time::Duration::from_secs(5));
    assert_eq!(first.get_i32(), 1, "the fetch is answered first");
    let fetched = FetchResponse::decode(&mut first, 4).expect("decodes");
    let partition = &fetched.responses[0].partitions[0];
    assert_eq!((partition.error_code, partition.high_watermark), (0, 1));
    assert_eq!(
        common::cluster::values(partition),
        vec!["woken".to_string()]
    );
    for id in [2, 3] {
        let mut resp = c.read_frame().await.expect("response");
        assert_eq!(resp.get_i32(), id, "responses in request order");
    }
}

/// Two long-poll Fetches pipelined on one connection wait in the writer, one behind the other.
/// The second's data arrives while the first still waits, and its own wait ends while the
/// first's goes on: neither the wake-up nor the deadline may be lost by waiting in line, so
/// once the first is answered at its deadline the second follows at once, with its data.
#[tokio::test]
async fn a_fetch_waiting_behind_another_keeps_its_wake_up_and_its_deadline() {
    use bytes::Buf;
    use std::time::{Duration, Instant};
    use strata::protocol::codec::Decode;
    use strata::protocol::messages::fetch_request::FetchRequest;
    use strata::protocol::messages::fetch_response::FetchResponse;
    let b = TestBroker::start(&[]).await;
    let mut admin = b.client().await;
    for topic in ["first", "second", "third"] {
        assert_eq!(create_topic_with(&mut admin, topic, 1, &[]).await, 0);
    }
    let mut c = b.client().await;
    let long_poll = |topic: &str, max_wait_ms: i32| FetchRequest {
        replica_id: -1,
        max_wait_ms,
        ..fetch_request(topic, 0, 0, 1 << 20)
    };
    let sent = Instant::now();
    c.write_request(1, 4, false, &long_poll("first", 1_500))
        .await;
    c.write_request(1, 4, false, &long_poll("second", 10_000))
        .await;
    c.write_request(1, 4, false, &long_poll("third", 300)).await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    produce_one(&mut admin, "second", b"arrived-early").await;
    let mut answers = Vec::new();
    for _ in 0..3 {
        let mut frame = tokio::time::timeout(Duration::from_secs(5), c.read_frame())
            .await
            .expect("each fetch is answered well before the second's 10 s wait")
            .expect("fetch response");
        let id = frame.get_i32();
        let fetched = FetchResponse::decode(&mut frame, 4).expect("decodes");
        answers.push((
            id,
            sent.elapsed(),
            fetched.responses[0].partitions[0].clone(),
        ));
    }
    let ids: Vec<i32> = answers.iter().map(|a| a.0).collect();
    assert_eq!(ids, vec![1, 2, 3], "answers in request order");
    let (_, first_at, first) = &answers[0];
    assert!(
        *first_at >= Duration::from_millis(1_400),
        "the first waits its own 1.5 s"
    );
    assert!(first.records.as_ref().is_none_or(|r| r.is_empty()));
    for (_, at, _) in &answers[1..] {
        assert!(
            at.saturating_sub(*first_at) < Duration::from_millis(1_000),
            "a fetch behind the first is answered right after it, not after a wait of its own"
        );
    }
    let second = &answers[1].2;
    assert_eq!((second.error_code, second.high_watermark), (0, 1));
    assert_eq!(
        common::cluster::values(second),
        vec!["arrived-early".to_string()]
    );
    let third = &answers[2].2;
    assert_eq!((third.error_code, third.high_watermark), (0, 0));
}
