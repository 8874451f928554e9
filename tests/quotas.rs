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
        min_bytes: 1,
        max_bytes: 1 << 20,
        topics: vec![FetchTopic {
            topic: "f".into(),
            partitions: vec![FetchPartition {
                partition: 0,
                fetch_offset: 0,
                partition_max_bytes: 1 << 20,
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
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
