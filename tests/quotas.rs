//! Client quotas end to end (issue 13, quotas): AlterClientQuotas / DescribeClientQuotas read
//! back through the metadata log (and after a restart), throttle_time_ms in Produce and Fetch
//! responses computed as Kafka computes it, and the throttled connection muted (KIP-219).
mod common;
use common::*;

use std::time::{Duration, Instant};

use bytes::Bytes;
use strata::protocol::messages::alter_client_quotas_request::{
    AlterClientQuotasRequest, EntityData, EntryData, OpData,
};
use strata::protocol::messages::alter_client_quotas_response;
use strata::protocol::messages::describe_client_quotas_request::{
    ComponentData, DescribeClientQuotasRequest,
};

/// The client id every test `Client` sends.
const CLIENT_ID: &str = "strata-test";

fn entry(entity: &[(&str, Option<&str>)], ops: &[(&str, Option<f64>)]) -> EntryData {
    EntryData {
        entity: entity
            .iter()
            .map(|(t, n)| EntityData {
                entity_type: t.to_string(),
                entity_name: n.map(str::to_string),
                ..Default::default()
            })
            .collect(),
        ops: ops
            .iter()
            .map(|(k, v)| OpData {
                key: k.to_string(),
                value: v.unwrap_or(0.0),
                remove: v.is_none(),
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    }
}

async fn alter(
    c: &mut Client,
    entries: Vec<EntryData>,
    validate_only: bool,
) -> alter_client_quotas_response::AlterClientQuotasResponse {
    api_call!(
        c,
        alter_client_quotas_request::AlterClientQuotasRequest,
        alter_client_quotas_response::AlterClientQuotasResponse,
        1,
        AlterClientQuotasRequest {
            entries,
            validate_only,
            ..Default::default()
        }
    )
}

/// DescribeClientQuotas; the entities found as (sorted components, sorted values).
async fn describe(
    c: &mut Client,
    components: &[(&str, i8, Option<&str>)],
    strict: bool,
) -> (
    i16,
    Vec<(Vec<(String, Option<String>)>, Vec<(String, f64)>)>,
) {
    let r = api_call!(
        c,
        describe_client_quotas_request::DescribeClientQuotasRequest,
        describe_client_quotas_response::DescribeClientQuotasResponse,
        1,
        DescribeClientQuotasRequest {
            components: components
                .iter()
                .map(|(t, m, n)| ComponentData {
                    entity_type: t.to_string(),
                    match_type: *m,
                    r#match: n.map(str::to_string),
                    ..Default::default()
                })
                .collect(),
            strict,
            ..Default::default()
        }
    );
    let mut found: Vec<_> = r
        .entries
        .unwrap_or_default()
        .into_iter()
        .map(|e| {
            let mut entity: Vec<_> = e
                .entity
                .into_iter()
                .map(|d| (d.entity_type, d.entity_name))
                .collect();
            entity.sort();
            let mut values: Vec<_> = e.values.into_iter().map(|v| (v.key, v.value)).collect();
            values.sort_by(|a, b| a.0.cmp(&b.0));
            (entity, values)
        })
        .collect();
    found.sort_by(|a, b| a.0.cmp(&b.0));
    (r.error_code, found)
}

fn s(v: &str) -> String {
    v.to_string()
}

#[tokio::test]
async fn altered_quotas_are_described_and_survive_a_restart() {
    let b = TestBroker::start(&[]).await;
    let mut c = b.client().await;
    let r = alter(
        &mut c,
        vec![
            entry(
                &[("user", Some("alice")), ("client-id", Some("app"))],
                &[
                    ("producer_byte_rate", Some(1024.0)),
                    ("request_percentage", Some(12.5)),
                ],
            ),
            entry(
                &[("client-id", None)],
                &[("consumer_byte_rate", Some(2048.0))],
            ),
            entry(
                &[("client-id", Some("x"))],
                &[("producer_bytes", Some(1.0))],
            ),
            entry(
                &[("client-id", Some("y"))],
                &[("producer_byte_rate", Some(1.5))],
            ),
        ],
        false,
    )
    .await;
    let results: Vec<(i16, Option<String>)> = r
        .entries
        .iter()
        .map(|e| (e.error_code, e.error_message.clone()))
        .collect();
    assert_eq!(
        results,
        vec![
            (0, None),
            (0, None),
            (42, Some(s("Invalid configuration key producer_bytes"))),
            (
                42,
                Some(s("Configuration producer_byte_rate must be a Long value"))
            ),
        ]
    );
    // Entities come back as sent.
    assert_eq!(r.entries[1].entity[0].entity_type, "client-id");
    assert_eq!(r.entries[1].entity[0].entity_name, None);

    // validate_only changes nothing.
    let r = alter(
        &mut c,
        vec![entry(
            &[("user", None)],
            &[("controller_mutation_rate", Some(5.0))],
        )],
        true,
    )
    .await;
    assert_eq!(r.entries[0].error_code, 0);

    let expected_all = vec![
        (
            vec![(s("client-id"), None)],
            vec![(s("consumer_byte_rate"), 2048.0)],
        ),
        (
            vec![
                (s("client-id"), Some(s("app"))),
                (s("user"), Some(s("alice"))),
            ],
            vec![
                (s("producer_byte_rate"), 1024.0),
                (s("request_percentage"), 12.5),
            ],
        ),
    ];
    assert_eq!(
        describe(&mut c, &[], false).await,
        (0, expected_all.clone())
    );
    assert_eq!(
        describe(&mut c, &[("user", 0, Some("alice"))], false).await,
        (0, vec![expected_all[1].clone()])
    );
    assert_eq!(
        describe(&mut c, &[("user", 0, Some("alice"))], true).await,
        (0, vec![])
    );
    assert_eq!(
        describe(&mut c, &[("client-id", 1, None)], true).await,
        (0, vec![expected_all[0].clone()])
    );
    // MATCH_TYPE_EXACT without a name: INVALID_REQUEST, no entries.
    assert_eq!(
        describe(&mut c, &[("user", 0, None)], false).await,
        (42, vec![])
    );

    // Removal, then a restart: what was committed is still there.
    let r = alter(
        &mut c,
        vec![entry(
            &[("user", Some("alice")), ("client-id", Some("app"))],
            &[("request_percentage", None)],
        )],
        false,
    )
    .await;
    assert_eq!(r.entries[0].error_code, 0);
    drop(c);
    let b = b.restart(&[]).await;
    let mut c = b.client().await;
    let (code, found) = describe(&mut c, &[], false).await;
    assert_eq!(code, 0);
    assert_eq!(
        found,
        vec![
            expected_all[0].clone(),
            (
                expected_all[1].0.clone(),
                vec![(s("producer_byte_rate"), 1024.0)]
            ),
        ]
    );
}

/// A batch of one value of `n` bytes; its length is what the byte-rate quotas count.
fn batch_of(n: usize) -> Bytes {
    batch(&[&vec![7u8; n]], None)
}

fn produce_req(topic: &str, records: Bytes) -> produce_request::ProduceRequest {
    use strata::protocol::messages::produce_request::*;
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
}
use strata::protocol::messages::produce_request;

async fn produce(
    c: &mut Client,
    topic: &str,
    records: Bytes,
) -> strata::protocol::messages::produce_response::ProduceResponse {
    api_call!(
        c,
        produce_request::ProduceRequest,
        produce_response::ProduceResponse,
        9,
        produce_req(topic, records)
    )
}

async fn api_versions_takes(c: &mut Client) -> Duration {
    use strata::protocol::messages::api_versions_request::ApiVersionsRequest;
    let started = Instant::now();
    let r = api_call!(
        c,
        api_versions_request::ApiVersionsRequest,
        api_versions_response::ApiVersionsResponse,
        3,
        ApiVersionsRequest {
            client_software_name: "strata-test".into(),
            client_software_version: "1.0".into(),
            ..Default::default()
        }
    );
    assert_eq!(r.error_code, 0);
    started.elapsed()
}

#[tokio::test]
async fn a_producer_over_its_quota_gets_kafkas_throttle_time_and_a_muted_connection() {
    let b = TestBroker::start(&[]).await;
    let mut c = b.client().await;
    assert_eq!(create_topic_with(&mut c, "q", 1, &[]).await, 0);
    // Unthrottled while no quota applies.
    let r = produce(&mut c, "q", batch_of(20_000)).await;
    assert_eq!(r.throttle_time_ms, 0);
    let r = alter(
        &mut c,
        vec![entry(
            &[("client-id", Some(CLIENT_ID))],
            &[("producer_byte_rate", Some(1000.0))],
        )],
        false,
    )
    .await;
    assert_eq!(r.entries[0].error_code, 0);

    // B bytes in the first window of a fresh sensor are measured over 10 windows of 1 s:
    // B / 10 per second, over 1000 by (B / 10 - 1000), so the throttle is
    // (B / 10 - 1000) / 1000 x 10 000 ms = B - 10 000 ms.
    let records = batch_of(10_400);
    let expected = records.len() as i32 - 10_000;
    let r = produce(&mut c, "q", records).await;
    assert_eq!(r.responses[0].partition_responses[0].error_code, 0);
    assert!(
        (r.throttle_time_ms - expected).abs() <= 2,
        "throttle {} expected {expected}",
        r.throttle_time_ms
    );
    // The connection reads nothing for the throttle time; another one is not held.
    let mut other = b.client().await;
    assert!(api_versions_takes(&mut other).await < Duration::from_millis(200));
    let held = api_versions_takes(&mut c).await;
    assert!(
        held >= Duration::from_millis(expected as u64 * 8 / 10),
        "the throttled connection answered after {held:?}, throttle {expected} ms"
    );
    // Once the mute is over, the next request is answered at once.
    assert!(api_versions_takes(&mut c).await < Duration::from_millis(200));
}

#[tokio::test]
async fn a_consumer_over_its_quota_gets_an_empty_throttled_fetch() {
    use strata::protocol::messages::fetch_request::*;
    let b = TestBroker::start(&[]).await;
    let mut c = b.client().await;
    assert_eq!(create_topic_with(&mut c, "f", 1, &[]).await, 0);
    let records = batch_of(10_300);
    let len = records.len() as i32;
    assert_eq!(produce(&mut c, "f", records).await.throttle_time_ms, 0);
    let r = alter(
        &mut c,
        vec![entry(
            &[("user", None), ("client-id", None)],
            &[("consumer_byte_rate", Some(1000.0))],
        )],
        false,
    )
    .await;
    assert_eq!(r.entries[0].error_code, 0);
    let fetch = FetchRequest {
        max_wait_ms: 100,
        ..fetch_request("f", 0, 0, 1 << 20)
    };
    let r = api_call!(
        c,
        fetch_request::FetchRequest,
        fetch_response::FetchResponse,
        12,
        fetch.clone()
    );
    // The batch's bytes would put the consumer at len / 10 per second against 1000.
    let expected = len - 10_000;
    assert!(
        (r.throttle_time_ms - expected).abs() <= 2,
        "throttle {} expected {expected}",
        r.throttle_time_ms
    );
    assert_eq!(r.error_code, 0);
    assert!(r.responses.is_empty(), "a throttled fetch returns no data");
    // A consumer without a quota on that key (a produce quota is not a fetch quota) reads.
    let r = alter(
        &mut c,
        vec![entry(
            &[("user", None), ("client-id", None)],
            &[("consumer_byte_rate", None)],
        )],
        false,
    )
    .await;
    assert_eq!(r.entries[0].error_code, 0);
    tokio::time::sleep(Duration::from_millis(expected as u64)).await;
    let r = api_call!(
        c,
        fetch_request::FetchRequest,
        fetch_response::FetchResponse,
        12,
        fetch
    );
    assert_eq!(r.throttle_time_ms, 0);
    assert_eq!(
        r.responses[0].partitions[0]
            .records
            .as_ref()
            .map(|b| b.len()),
        Some(len as usize)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_quota_altered_on_one_broker_reaches_every_broker() {
    let cluster = common::cluster::Cluster::start().await;
    cluster.wait_brokers(0, 3).await;
    // Sent to each broker in turn: forwarded to the active controller unless it is it.
    for i in 0..3 {
        let mut c = Client::connect(cluster.addr(i)).await;
        let name = format!("app-{i}");
        let r = alter(
            &mut c,
            vec![entry(
                &[("client-id", Some(&name))],
                &[("producer_byte_rate", Some(1000.0 + i as f64))],
            )],
            false,
        )
        .await;
        assert_eq!(
            r.entries[0].error_code, 0,
            "{:?}",
            r.entries[0].error_message
        );
    }
    for i in 0..3 {
        let mut c = Client::connect(cluster.addr(i)).await;
        // Another broker may apply the last record a moment later.
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let (code, found) = describe(&mut c, &[("client-id", 2, None)], true).await;
            assert_eq!(code, 0);
            let rates: Vec<f64> = found.iter().map(|(_, v)| v[0].1).collect();
            if rates == [1000.0, 1001.0, 1002.0] {
                break;
            }
            assert!(Instant::now() < deadline, "broker {i} sees {found:?}");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

// ---- controller_mutation_rate (KIP-599) ----

async fn set_client_quota(c: &mut Client, key: &str, value: f64) {
    let r = alter(
        c,
        vec![entry(
            &[("client-id", Some(CLIENT_ID))],
            &[(key, Some(value))],
        )],
        false,
    )
    .await;
    assert_eq!(r.entries[0].error_code, 0);
}

const THROTTLING_QUOTA_EXCEEDED: i16 = 89;

/// With `controller.quota.window.num=1` the bucket of a 10/s quota holds 10 tokens, so the
/// figures are easy to follow; Kafka's formula for the throttle is -tokens / rate.
const ONE_WINDOW: &[(&str, &str)] = &[("controller.quota.window.num", "1")];

#[tokio::test]
async fn a_strict_mutation_quota_refuses_the_topics_that_do_not_fit_with_kafkas_throttle() {
    let b = TestBroker::start(ONE_WINDOW).await;
    let mut c = b.client().await;
    set_client_quota(&mut c, "controller_mutation_rate", 10.0).await;
    // 30 partitions in one CreateTopics v7 (strict). t1 takes the 10 tokens; t2 is accepted
    // because the bucket is not yet empty (KIP-599: a strict quota refuses only once it is)
    // and leaves -10; t3 is refused. Throttle: 10 tokens / 10 per s = 1000 ms, less the time
    // the request took after t3 was refused.
    let (codes, throttle) =
        create_topics_at(&mut c, 7, &[("t1", 10), ("t2", 10), ("t3", 10)]).await;
    assert_eq!(
        codes,
        vec![
            (s("t1"), 0),
            (s("t2"), 0),
            (s("t3"), THROTTLING_QUOTA_EXCEEDED)
        ]
    );
    assert!(
        (800..=1000).contains(&throttle),
        "throttle {throttle}, expected just under 1000"
    );
    // Another connection of the same client is not muted, but meets the same empty bucket:
    // CreatePartitions v3 and DeleteTopics v5 are strict too.
    let mut other = b.client().await;
    {
        use strata::protocol::messages::create_partitions_request::*;
        let r = api_call!(
            other,
            create_partitions_request::CreatePartitionsRequest,
            create_partitions_response::CreatePartitionsResponse,
            3,
            CreatePartitionsRequest {
                topics: vec![CreatePartitionsTopic {
                    name: "t1".into(),
                    count: 12,
                    ..Default::default()
                }],
                timeout_ms: 10_000,
                ..Default::default()
            }
        );
        assert_eq!(r.results[0].error_code, THROTTLING_QUOTA_EXCEEDED);
        assert!(
            (600..=1000).contains(&r.throttle_time_ms),
            "throttle {}",
            r.throttle_time_ms
        );
    }
    // That refusal muted `other` for its throttle, long enough for the bucket to refill:
    // DeleteTopics goes on a third connection.
    let mut third = b.client().await;
    let r = delete_topic(&mut third, "t2").await;
    assert_eq!(r.responses[0].error_code, THROTTLING_QUOTA_EXCEEDED);
    assert!(r.throttle_time_ms > 0);
    // The first connection was muted for its throttle.
    let held = api_versions_takes(&mut c).await;
    assert!(
        held >= Duration::from_millis(500),
        "the throttled connection answered after {held:?}"
    );
    // Once the bucket has refilled past zero the same deletion goes through, unthrottled
    // (it leaves the bucket below zero, which a strict quota does not throttle).
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let r = delete_topic(&mut third, "t2").await;
    assert_eq!(r.responses[0].error_code, 0);
    assert_eq!(r.throttle_time_ms, 0);
}

#[tokio::test]
async fn a_permissive_mutation_quota_accepts_everything_and_throttles() {
    let b = TestBroker::start(ONE_WINDOW).await;
    let mut c = b.client().await;
    set_client_quota(&mut c, "controller_mutation_rate", 10.0).await;
    // CreateTopics v5 cannot answer THROTTLING_QUOTA_EXCEEDED: all 30 partitions are
    // created and the bucket is left at -20, a 2000 ms throttle.
    let (codes, throttle) =
        create_topics_at(&mut c, 5, &[("p1", 10), ("p2", 10), ("p3", 10)]).await;
    assert_eq!(codes, vec![(s("p1"), 0), (s("p2"), 0), (s("p3"), 0)]);
    assert!(
        (1800..=2000).contains(&throttle),
        "throttle {throttle}, expected just under 2000"
    );
    // A client without a quota is not counted.
    let mut free = b.client().await;
    free.set_client_id("free");
    let r = {
        use strata::protocol::messages::create_topics_request::*;
        api_call!(
            free,
            create_topics_request::CreateTopicsRequest,
            create_topics_response::CreateTopicsResponse,
            7,
            CreateTopicsRequest {
                topics: vec![CreatableTopic {
                    name: "f1".into(),
                    num_partitions: 50,
                    replication_factor: 1,
                    ..Default::default()
                }],
                timeout_ms: 10_000,
                ..Default::default()
            }
        )
    };
    assert_eq!(r.topics[0].error_code, 0);
    assert_eq!(r.throttle_time_ms, 0);
}

/// DeleteTopics v5 (strict) of `name`.
async fn delete_topic(
    c: &mut Client,
    name: &str,
) -> strata::protocol::messages::delete_topics_response::DeleteTopicsResponse {
    use strata::protocol::messages::delete_topics_request::*;
    api_call!(
        c,
        delete_topics_request::DeleteTopicsRequest,
        delete_topics_response::DeleteTopicsResponse,
        5,
        DeleteTopicsRequest {
            topic_names: vec![name.into()],
            timeout_ms: 10_000,
            ..Default::default()
        }
    )
}

// ---- request_percentage on every API (KIP-124) ----

/// Metadata v12 for no topics; its throttle.
async fn metadata_throttle(c: &mut Client) -> i32 {
    use strata::protocol::messages::metadata_request::*;
    let r = api_call!(
        c,
        metadata_request::MetadataRequest,
        metadata_response::MetadataResponse,
        12,
        MetadataRequest {
            topics: Some(vec![]),
            ..Default::default()
        }
    );
    r.throttle_time_ms
}

#[tokio::test]
async fn a_client_over_its_request_percentage_gets_throttled_metadata() {
    // Two windows of 1 s: the rate is measured over at least 1 s, so 1 % is 10 ms of work.
    let b = TestBroker::start(&[("quota.window.num", "2")]).await;
    let mut c = b.client().await;
    assert_eq!(metadata_throttle(&mut c).await, 0);
    set_client_quota(&mut c, "request_percentage", 1.0).await;
    let started = Instant::now();
    let mut throttle = 0;
    let mut sent = 0;
    while throttle == 0 && started.elapsed() < Duration::from_secs(20) {
        throttle = metadata_throttle(&mut c).await;
        sent += 1;
    }
    assert!(throttle > 0, "no throttle after {sent} Metadata requests");
    // Kafka caps a request-time throttle at one window.
    assert!(throttle <= 1000, "throttle {throttle}");
}

#[tokio::test]
async fn exempt_apis_are_never_throttled_by_the_request_quota() {
    use strata::protocol::messages::sasl_handshake_request::SaslHandshakeRequest;
    use strata::protocol::messages::write_txn_markers_request::WriteTxnMarkersRequest;
    let b = TestBroker::start(&[("quota.window.num", "2")]).await;
    let mut c = b.client().await;
    // So small that any request's work is far over it: every counted request earns the
    // longest request throttle, one window.
    set_client_quota(&mut c, "request_percentage", 0.000_001).await;
    assert_eq!(metadata_throttle(&mut c).await, 1000);
    // The same client on a new connection: SASL and the cluster actions are not counted, so
    // nothing mutes it, however many it sends.
    let mut other = b.client().await;
    let started = Instant::now();
    for _ in 0..20 {
        let r = api_call!(
            other,
            sasl_handshake_request::SaslHandshakeRequest,
            sasl_handshake_response::SaslHandshakeResponse,
            1,
            SaslHandshakeRequest {
                mechanism: "PLAIN".into(),
                ..Default::default()
            }
        );
        assert_ne!(r.error_code, 0, "no SASL on a PLAINTEXT listener");
        let r = api_call!(
            other,
            write_txn_markers_request::WriteTxnMarkersRequest,
            write_txn_markers_response::WriteTxnMarkersResponse,
            1,
            WriteTxnMarkersRequest::default()
        );
        assert!(r.markers.is_empty());
    }
    assert!(
        started.elapsed() < Duration::from_millis(900),
        "exempt requests were held: {:?}",
        started.elapsed()
    );
    // A counted API on that connection is throttled: the client is over its quota.
    assert_eq!(metadata_throttle(&mut other).await, 1000);
    // ApiVersions is counted, as in Kafka (only its use before SASL authentication is not),
    // and carries the throttle although its field comes after the API list.
    let mut third = b.client().await;
    let r = {
        use strata::protocol::messages::api_versions_request::ApiVersionsRequest;
        api_call!(
            third,
            api_versions_request::ApiVersionsRequest,
            api_versions_response::ApiVersionsResponse,
            3,
            ApiVersionsRequest {
                client_software_name: "strata-test".into(),
                client_software_version: "1.0".into(),
                ..Default::default()
            }
        )
    };
    assert_eq!(r.error_code, 0);
    assert_eq!(r.throttle_time_ms, 1000);
}
