//! Dynamic broker configs over real TCP (issue 14): IncrementalAlterConfigs and AlterConfigs
//! on BROKER resources (the cluster-wide default "" and this broker's id), what
//! DescribeConfigs then reports (value, source, synonyms), that the new values act without a
//! restart (segment size, retention, message.max.bytes, max.connections.per.ip) and survive
//! one; Kafka's refusals; BROKER_LOGGER log levels; the KIP-714 telemetry handshake.
mod common;
use common::incremental_alter as alter;
use common::*;

use std::time::Duration;

use strata::error::ErrorCode;
use strata::protocol::messages::*;

const TOPIC: i8 = 2;
const BROKER: i8 = 4;
const BROKER_LOGGER: i8 = 8;
const SET: i8 = 0;
const DELETE: i8 = 1;

/// (name, value, source, synonyms as (name, value, source)) of every entry of one resource.
type Entry = (
    String,
    Option<String>,
    i8,
    Vec<(String, Option<String>, i8)>,
);

async fn describe(
    c: &mut Client,
    resource_type: i8,
    name: &str,
) -> Result<Vec<Entry>, (i16, String)> {
    let res = describe_configs(c, resource_type, name).await;
    if res.error_code != 0 {
        return Err((res.error_code, res.error_message.unwrap_or_default()));
    }
    Ok(res
        .configs
        .iter()
        .map(|e| {
            (
                e.name.clone(),
                e.value.clone(),
                e.config_source,
                e.synonyms
                    .iter()
                    .map(|s| (s.name.clone(), s.value.clone(), s.source))
                    .collect(),
            )
        })
        .collect())
}

fn entry<'a>(entries: &'a [Entry], name: &str) -> &'a Entry {
    entries
        .iter()
        .find(|e| e.0 == name)
        .unwrap_or_else(|| panic!("no entry {name}"))
}

fn syn(name: &str, value: &str, source: i8) -> (String, Option<String>, i8) {
    (name.into(), Some(value.into()), source)
}

async fn produce(c: &mut Client, topic: &str, value: &[u8]) -> i16 {
    use produce_request::*;
    let req = ProduceRequest {
        acks: -1,
        timeout_ms: 5000,
        topic_data: vec![TopicProduceData {
            name: topic.into(),
            partition_data: vec![PartitionProduceData {
                index: 0,
                records: Some(batch(&[value], None)),
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    };
    let r = api_call!(
        c,
        produce_request::ProduceRequest,
        produce_response::ProduceResponse,
        9,
        req
    );
    r.responses[0].partition_responses[0].error_code
}

/// ListOffsets EARLIEST of partition 0: the log start offset.
async fn log_start_offset(c: &mut Client, topic: &str) -> i64 {
    use list_offsets_request::*;
    let req = ListOffsetsRequest {
        replica_id: -1,
        topics: vec![ListOffsetsTopic {
            name: topic.into(),
            partitions: vec![ListOffsetsPartition {
                partition_index: 0,
                timestamp: -2,
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    };
    let r = api_call!(
        c,
        list_offsets_request::ListOffsetsRequest,
        list_offsets_response::ListOffsetsResponse,
        7,
        req
    );
    r.topics[0].partitions[0].offset
}

#[tokio::test]
async fn cluster_default_and_per_broker_configs_apply_without_restart_and_persist() {
    let b = TestBroker::start(&[("log.retention.check.interval.ms", "100")]).await;
    let mut c = b.client().await;
    assert_eq!(create_topic_with(&mut c, "t", 1, &[]).await, 0);
    // A small default segment size, set cluster-wide: the topic (no override) rolls at it.
    let (code, msg) = alter(
        &mut c,
        BROKER,
        "",
        &[("log.segment.bytes", SET, Some("1024"))],
        false,
    )
    .await;
    assert_eq!((code, msg), (0, None));
    for _ in 0..20 {
        assert_eq!(produce(&mut c, "t", &[7u8; 200]).await, 0);
    }
    assert_eq!(log_start_offset(&mut c, "t").await, 0);
    let segments = std::fs::read_dir(b.dir.path().join("t-0"))
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .file_name()
                .to_string_lossy()
                .ends_with(".log")
        })
        .count();
    assert!(
        segments > 3,
        "the new default segment size rolled the log: {segments} segments"
    );

    // Retention cluster-wide: old segments go, without a restart.
    assert_eq!(
        alter(
            &mut c,
            BROKER,
            "",
            &[("log.retention.ms", SET, Some("1"))],
            false
        )
        .await
        .0,
        0
    );
    let mut start = 0;
    for _ in 0..100 {
        start = log_start_offset(&mut c, "t").await;
        if start > 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(
        start > 0,
        "retention with the new default removed old segments"
    );

    // What DescribeConfigs reports for the broker, the cluster default and the topic.
    let all = describe(&mut c, BROKER, "1").await.unwrap();
    let e = entry(&all, "log.retention.ms");
    assert_eq!(e.1.as_deref(), Some("1"));
    assert_eq!(e.2, 3, "DYNAMIC_DEFAULT_BROKER_CONFIG");
    assert_eq!(
        e.3,
        vec![
            syn("log.retention.ms", "1", 3),
            syn("log.retention.hours", "168", 5)
        ]
    );
    let topic = describe(&mut c, TOPIC, "t").await.unwrap();
    let e = entry(&topic, "retention.ms");
    assert_eq!((e.1.as_deref(), e.2), (Some("1"), 3));
    let e = entry(&topic, "segment.bytes");
    assert_eq!((e.1.as_deref(), e.2), (Some("1024"), 3));

    // This broker's own value wins over the cluster default.
    assert_eq!(
        alter(
            &mut c,
            BROKER,
            "1",
            &[("log.retention.ms", SET, Some("86400000"))],
            false
        )
        .await
        .0,
        0
    );
    let all = describe(&mut c, BROKER, "1").await.unwrap();
    let e = entry(&all, "log.retention.ms");
    assert_eq!((e.1.as_deref(), e.2), (Some("86400000"), 2));
    assert_eq!(
        e.3,
        vec![
            syn("log.retention.ms", "86400000", 2),
            syn("log.retention.ms", "1", 3),
            syn("log.retention.hours", "168", 5)
        ]
    );
    // The default resource lists only its own keys, with only default-level synonyms.
    let defaults = describe(&mut c, BROKER, "").await.unwrap();
    let mut names: Vec<&str> = defaults.iter().map(|e| e.0.as_str()).collect();
    names.sort();
    assert_eq!(names, vec!["log.retention.ms", "log.segment.bytes"]);
    let e = entry(&defaults, "log.retention.ms");
    assert_eq!(e.3, vec![syn("log.retention.ms", "1", 3)]);
    drop(c);

    // Config records are in the metadata log: a restart keeps them.
    let b = b
        .restart(&[("log.retention.check.interval.ms", "100")])
        .await;
    let mut c = b.client().await;
    let all = describe(&mut c, BROKER, "1").await.unwrap();
    assert_eq!(
        entry(&all, "log.retention.ms").1.as_deref(),
        Some("86400000")
    );
    assert_eq!(entry(&all, "log.segment.bytes").2, 3);
    // DELETE falls back to the next layer.
    assert_eq!(
        alter(
            &mut c,
            BROKER,
            "1",
            &[("log.retention.ms", DELETE, None)],
            false
        )
        .await
        .0,
        0
    );
    let all = describe(&mut c, BROKER, "1").await.unwrap();
    assert_eq!(entry(&all, "log.retention.ms").2, 3);
}

#[tokio::test]
async fn message_max_bytes_and_connection_limits_apply_at_once() {
    let b = TestBroker::start(&[]).await;
    let mut c = b.client().await;
    assert_eq!(create_topic_with(&mut c, "m", 1, &[]).await, 0);
    assert_eq!(produce(&mut c, "m", &[1u8; 500]).await, 0);
    assert_eq!(
        alter(
            &mut c,
            BROKER,
            "",
            &[("message.max.bytes", SET, Some("200"))],
            false
        )
        .await
        .0,
        0
    );
    assert_eq!(
        produce(&mut c, "m", &[1u8; 500]).await,
        ErrorCode::MESSAGE_TOO_LARGE.code()
    );
    // One connection per address from now on: this open one stays, a new one is closed.
    assert_eq!(
        alter(
            &mut c,
            BROKER,
            "1",
            &[("max.connections.per.ip", SET, Some("1"))],
            false
        )
        .await
        .0,
        0
    );
    let mut refused = true;
    for _ in 0..50 {
        let mut second = b.client().await;
        refused = second.is_closed().await;
        if refused {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(
        refused,
        "a second connection from the same address is refused"
    );
    assert_eq!(
        alter(
            &mut c,
            BROKER,
            "1",
            &[("max.connections.per.ip", DELETE, None)],
            false
        )
        .await
        .0,
        0
    );
    let mut accepted = false;
    for _ in 0..50 {
        let mut again = b.client().await;
        if !again.is_closed().await {
            accepted = true;
            break;
        }
        // The new limit reaches the listener through the config watch, not with the reply.
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(accepted, "the default limit is back");
}

#[tokio::test]
async fn refusals_carry_kafkas_codes_and_messages() {
    let b = TestBroker::start(&[]).await;
    let mut c = b.client().await;
    let invalid_request = ErrorCode::INVALID_REQUEST.code();
    let cases: Vec<(&str, (&str, i8, Option<&str>), &str)> = vec![
        ("", ("num.partitions", SET, Some("3")), "Cannot update these configs dynamically: Set(num.partitions)"),
        ("1", ("listeners", SET, Some("PLAINTEXT://:9")), "Cannot update these configs dynamically: Set(listeners) (Kafka can, but Strata applies them only at start-up"),
        ("", ("num.io.threads", SET, Some("8")), "Cannot update these configs dynamically: Set(num.io.threads) (Strata has no such setting)"),
        ("", ("no.such.config", SET, Some("1")), "Unknown broker configs: Set(no.such.config)"),
        ("", ("log.retention.ms", SET, Some("soon")), "Invalid value soon for configuration log.retention.ms: Expected value to be a 64-bit integer"),
        ("", ("log.retention.ms", SET, None), "Null value not supported for : log.retention.ms"),
        ("7", ("log.retention.ms", SET, Some("1")), "Unexpected broker id, expected 1, but received 7"),
        ("x", ("log.retention.ms", SET, Some("1")), "Node id must be an integer, but it is: x"),
    ];
    for (name, op, want) in cases {
        let (code, msg) = alter(&mut c, BROKER, name, &[op], false).await;
        assert_eq!(code, invalid_request, "{op:?}");
        let msg = msg.unwrap_or_default();
        assert!(msg.starts_with(want), "{op:?}: {msg}");
    }
    // APPEND on a key that is not a list: INVALID_CONFIG, as Kafka.
    let (code, _) = alter(
        &mut c,
        BROKER,
        "",
        &[("log.retention.ms", 2, Some("1"))],
        false,
    )
    .await;
    assert_eq!(code, ErrorCode::INVALID_CONFIG.code());
    // validate_only checks and changes nothing.
    assert_eq!(
        alter(
            &mut c,
            BROKER,
            "",
            &[("log.retention.ms", SET, Some("5"))],
            true
        )
        .await
        .0,
        0
    );
    assert!(describe(&mut c, BROKER, "").await.unwrap().is_empty());
    assert_eq!(
        describe(&mut c, BROKER, "2").await.unwrap_err(),
        (
            invalid_request,
            "Unexpected broker id, expected 1 or empty string, but received 2".to_string()
        )
    );
    // The legacy AlterConfigs replaces a broker layer as a whole, with the same checks.
    let legacy = |pairs: &[(&str, &str)]| {
        use alter_configs_request::*;
        AlterConfigsRequest {
            resources: vec![AlterConfigsResource {
                resource_type: BROKER,
                resource_name: String::new(),
                configs: pairs
                    .iter()
                    .map(|(k, v)| AlterableConfig {
                        name: k.to_string(),
                        value: Some(v.to_string()),
                        ..Default::default()
                    })
                    .collect(),
                ..Default::default()
            }],
            ..Default::default()
        }
    };
    let r = api_call!(
        c,
        alter_configs_request::AlterConfigsRequest,
        alter_configs_response::AlterConfigsResponse,
        2,
        legacy(&[
            ("log.retention.bytes", "1000000"),
            ("compression.type", "lz4")
        ])
    );
    assert_eq!(r.responses[0].error_code, 0);
    let r = api_call!(
        c,
        alter_configs_request::AlterConfigsRequest,
        alter_configs_response::AlterConfigsResponse,
        2,
        legacy(&[("compression.type", "zstd")])
    );
    assert_eq!(r.responses[0].error_code, 0);
    let defaults = describe(&mut c, BROKER, "").await.unwrap();
    assert_eq!(defaults.len(), 1);
    assert_eq!(
        (defaults[0].0.as_str(), defaults[0].1.as_deref()),
        ("compression.type", Some("zstd"))
    );
    let r = api_call!(
        c,
        alter_configs_request::AlterConfigsRequest,
        alter_configs_response::AlterConfigsResponse,
        2,
        legacy(&[("num.partitions", "3")])
    );
    assert_eq!(r.responses[0].error_code, invalid_request);
}

#[tokio::test]
async fn broker_logger_levels_are_described_and_changed() {
    let b = TestBroker::start(&[]).await;
    let mut c = b.client().await;
    let loggers = describe(&mut c, BROKER_LOGGER, "1").await.unwrap();
    assert_eq!(loggers[0].0, "root");
    assert!(loggers.iter().all(|e| e.2 == 6 && e.3.is_empty()));
    assert!(loggers.iter().any(|e| e.0 == "strata.storage"));
    assert_eq!(
        alter(
            &mut c,
            BROKER_LOGGER,
            "1",
            &[("strata.storage", SET, Some("DEBUG"))],
            false
        )
        .await,
        (0, None)
    );
    let loggers = describe(&mut c, BROKER_LOGGER, "1").await.unwrap();
    assert_eq!(
        entry(&loggers, "strata.storage").1.as_deref(),
        Some("DEBUG")
    );
    assert_eq!(
        alter(
            &mut c,
            BROKER_LOGGER,
            "1",
            &[("strata.storage", DELETE, None)],
            false
        )
        .await
        .0,
        0
    );
    let (code, msg) = alter(
        &mut c,
        BROKER_LOGGER,
        "1",
        &[("strata.net", SET, Some("LOUD"))],
        false,
    )
    .await;
    assert_eq!(code, ErrorCode::INVALID_CONFIG.code());
    assert!(msg
        .unwrap()
        .starts_with("Cannot set the log level of strata.net to LOUD"));
    let (code, msg) = alter(&mut c, BROKER_LOGGER, "1", &[("root", DELETE, None)], false).await;
    assert_eq!(
        (code, msg.as_deref()),
        (
            ErrorCode::INVALID_REQUEST.code(),
            Some("Removing the log level of the root logger is not allowed")
        )
    );
    assert_eq!(
        describe(&mut c, BROKER_LOGGER, "").await.unwrap_err(),
        (
            ErrorCode::INVALID_REQUEST.code(),
            "Broker id must not be empty".to_string()
        )
    );
}

#[tokio::test]
async fn telemetry_is_served_but_not_advertised_as_kafka_without_a_receiver() {
    let b = TestBroker::start(&[]).await;
    let mut c = b.client().await;
    let versions = api_call!(
        c,
        api_versions_request::ApiVersionsRequest,
        api_versions_response::ApiVersionsResponse,
        3,
        api_versions_request::ApiVersionsRequest {
            client_software_name: "test".into(),
            client_software_version: "1".into(),
            ..Default::default()
        }
    );
    let keys: Vec<i16> = versions.api_keys.iter().map(|k| k.api_key).collect();
    assert!(!keys.contains(&71) && !keys.contains(&72));
    let s = api_call!(
        c,
        get_telemetry_subscriptions_request::GetTelemetrySubscriptionsRequest,
        get_telemetry_subscriptions_response::GetTelemetrySubscriptionsResponse,
        0,
        get_telemetry_subscriptions_request::GetTelemetrySubscriptionsRequest::default()
    );
    assert_eq!(s.error_code, 0);
    assert_ne!(
        s.client_instance_id.0, [0; 16],
        "a client instance id is assigned"
    );
    assert!(s.requested_metrics.is_empty());
    assert_eq!(s.accepted_compression_types, vec![4, 3, 1, 2]);
    assert_eq!(
        (s.push_interval_ms, s.telemetry_max_bytes),
        (300_000, 1_048_576)
    );
    let push = |subscription_id: i32| push_telemetry_request::PushTelemetryRequest {
        client_instance_id: s.client_instance_id,
        subscription_id,
        ..Default::default()
    };
    let r = api_call!(
        c,
        push_telemetry_request::PushTelemetryRequest,
        push_telemetry_response::PushTelemetryResponse,
        0,
        push(s.subscription_id)
    );
    assert_eq!(r.error_code, 0);
    let mut terminating = push(s.subscription_id.wrapping_add(1));
    terminating.terminating = true;
    let r = api_call!(
        c,
        push_telemetry_request::PushTelemetryRequest,
        push_telemetry_response::PushTelemetryResponse,
        0,
        terminating
    );
    assert_eq!(r.error_code, ErrorCode::UNKNOWN_SUBSCRIPTION_ID.code());
}
