//! Group configs (GROUP resources, KIP-848) and client-metrics subscriptions (CLIENT_METRICS,
//! KIP-714) over real TCP: IncrementalAlterConfigs and what DescribeConfigs then reports
//! (values, sources), ListConfigResources v0 and v1, Kafka's refusals, a group's session
//! timeout and heartbeat interval acting on its members, and the configs surviving a restart.
mod common;
use common::incremental_alter as alter;
use common::*;

use std::time::Duration;

const TOPIC: i8 = 2;
const BROKER: i8 = 4;
const BROKER_LOGGER: i8 = 8;
const CLIENT_METRICS: i8 = 16;
const GROUP: i8 = 32;
const SET: i8 = 0;
const DELETE: i8 = 1;
const APPEND: i8 = 2;
const GROUP_CONFIG_SOURCE: i8 = 8;
const CLIENT_METRICS_SOURCE: i8 = 7;
const DEFAULT_SOURCE: i8 = 5;
const INVALID_REQUEST: i16 = 42;
const INVALID_CONFIG: i16 = 40;
const UNSUPPORTED_VERSION: i16 = 35;
const UNKNOWN_MEMBER_ID: i16 = 25;

/// (value, source) of one key of a resource.
async fn value_of(c: &mut Client, resource_type: i8, name: &str, key: &str) -> (String, i8) {
    let r = describe_configs(c, resource_type, name).await;
    assert_eq!(r.error_code, 0, "{:?}", r.error_message);
    let e = r
        .configs
        .iter()
        .find(|e| e.name == key)
        .unwrap_or_else(|| panic!("no {key}"));
    (e.value.clone().unwrap_or_default(), e.config_source)
}

async fn list_resources(c: &mut Client, version: i16, types: &[i8]) -> (i16, Vec<(i8, String)>) {
    let r = api_call!(
        c,
        list_config_resources_request::ListConfigResourcesRequest,
        list_config_resources_response::ListConfigResourcesResponse,
        version,
        list_config_resources_request::ListConfigResourcesRequest {
            resource_types: types.to_vec(),
            ..Default::default()
        }
    );
    let mut listed: Vec<(i8, String)> = r
        .config_resources
        .into_iter()
        .map(|r| (r.resource_type, r.resource_name))
        .collect();
    listed.sort();
    (r.error_code, listed)
}

/// A KIP-848 heartbeat, retried while the group coordinator is created and loaded: (error
/// code, member id, member epoch, heartbeat interval).
async fn heartbeat(
    c: &mut Client,
    group: &str,
    member_id: &str,
    member_epoch: i32,
) -> (i16, String, i32, i32) {
    for _ in 0..100 {
        // FindCoordinator creates `__consumer_offsets` the first time.
        find_group_coordinator(c, group).await;
        let r = heartbeat_once(c, group, member_id, member_epoch).await;
        if !matches!(r.0, 14..=16) {
            return r;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("no group coordinator for {group}");
}

async fn heartbeat_once(
    c: &mut Client,
    group: &str,
    member_id: &str,
    member_epoch: i32,
) -> (i16, String, i32, i32) {
    let r = api_call!(
        c,
        consumer_group_heartbeat_request::ConsumerGroupHeartbeatRequest,
        consumer_group_heartbeat_response::ConsumerGroupHeartbeatResponse,
        0,
        consumer_group_heartbeat_request::ConsumerGroupHeartbeatRequest {
            group_id: group.into(),
            member_id: member_id.into(),
            member_epoch,
            rebalance_timeout_ms: 30_000,
            subscribed_topic_names: (member_epoch == 0).then(|| vec!["events".into()]),
            topic_partitions: (member_epoch == 0).then(Vec::new),
            ..Default::default()
        }
    );
    (
        r.error_code,
        r.member_id.unwrap_or_default(),
        r.member_epoch,
        r.heartbeat_interval_ms,
    )
}

#[tokio::test]
async fn group_configs_are_validated_described_listed_and_kept() {
    let b = TestBroker::start(&[]).await;
    let mut c = b.client().await;
    assert_eq!(create_topic_with(&mut c, "events", 1, &[]).await, 0);

    // Nothing set: every key at the broker's value, source DEFAULT_CONFIG.
    assert_eq!(
        value_of(&mut c, GROUP, "orders", "consumer.session.timeout.ms").await,
        ("45000".into(), DEFAULT_SOURCE)
    );
    let all = describe_configs(&mut c, GROUP, "orders").await;
    assert_eq!(all.configs.len(), 17);
    assert_eq!(
        value_of(&mut c, GROUP, "orders", "share.auto.offset.reset").await,
        ("latest".into(), DEFAULT_SOURCE)
    );

    let ok = alter(
        &mut c,
        GROUP,
        "orders",
        &[
            ("consumer.session.timeout.ms", SET, Some("50000")),
            ("consumer.heartbeat.interval.ms", SET, Some("6000")),
            ("share.auto.offset.reset", SET, Some("by_duration:PT1H")),
        ],
        false,
    )
    .await;
    assert_eq!(ok, (0, None));
    assert_eq!(
        value_of(&mut c, GROUP, "orders", "consumer.session.timeout.ms").await,
        ("50000".into(), GROUP_CONFIG_SOURCE)
    );
    assert_eq!(
        value_of(&mut c, GROUP, "orders", "share.auto.offset.reset").await,
        ("by_duration:PT1H".into(), GROUP_CONFIG_SOURCE)
    );
    assert_eq!(
        value_of(&mut c, GROUP, "orders", "share.record.lock.duration.ms").await,
        ("30000".into(), DEFAULT_SOURCE)
    );

    // Kafka's refusals, each leaving the group as it was.
    let refusals: &[(&str, &[(&str, i8, Option<&str>)], i16, &str)] = &[
        (
            "orders",
            &[("consumer.session.timeout", SET, Some("50000"))],
            INVALID_CONFIG,
            "Unknown group config name: consumer.session.timeout",
        ),
        (
            "orders",
            &[("consumer.session.timeout.ms", SET, Some("10000"))],
            INVALID_CONFIG,
            "consumer.session.timeout.ms must be greater than or equal to \
             group.consumer.min.session.timeout.ms",
        ),
        (
            "orders",
            &[("consumer.heartbeat.interval.ms", SET, Some("ten"))],
            INVALID_CONFIG,
            "Invalid value ten for configuration consumer.heartbeat.interval.ms: Not a number \
             of type INT",
        ),
        (
            "orders",
            &[("consumer.session.timeout.ms", APPEND, Some("1"))],
            INVALID_CONFIG,
            "Can't APPEND to key consumer.session.timeout.ms because its type is not LIST.",
        ),
        (
            "",
            &[("consumer.session.timeout.ms", SET, Some("50000"))],
            INVALID_REQUEST,
            "Default group resources are not allowed.",
        ),
    ];
    for (group, ops, code, message) in refusals {
        let r = alter(&mut c, GROUP, group, ops, false).await;
        assert_eq!(r, (*code, Some(message.to_string())), "{ops:?}");
    }
    assert_eq!(
        value_of(&mut c, GROUP, "orders", "consumer.session.timeout.ms").await,
        ("50000".into(), GROUP_CONFIG_SOURCE)
    );
    // validate_only checks without writing.
    assert_eq!(
        alter(
            &mut c,
            GROUP,
            "other",
            &[("consumer.session.timeout.ms", SET, Some("55000"))],
            true
        )
        .await,
        (0, None)
    );

    // v1 lists the groups that have configs, the broker (as BROKER and BROKER_LOGGER) and
    // every topic; a filter keeps one type.
    let (code, listed) = list_resources(&mut c, 1, &[GROUP]).await;
    assert_eq!((code, listed), (0, vec![(GROUP, "orders".to_string())]));
    let (code, listed) = list_resources(&mut c, 1, &[]).await;
    assert_eq!(code, 0);
    assert!(listed.contains(&(TOPIC, "events".to_string())));
    assert!(listed.contains(&(BROKER, "1".to_string())));
    assert!(listed.contains(&(BROKER_LOGGER, "1".to_string())));
    assert!(listed.contains(&(GROUP, "orders".to_string())));
    assert!(!listed.iter().any(|(_, n)| n == "other"));
    // A type Kafka does not list is refused as a whole.
    assert_eq!(
        list_resources(&mut c, 1, &[1]).await,
        (UNSUPPORTED_VERSION, vec![])
    );

    // The configs survive a restart (they are metadata records).
    drop(c);
    let b = b.restart(&[]).await;
    let mut c = b.client().await;
    assert_eq!(
        value_of(&mut c, GROUP, "orders", "consumer.heartbeat.interval.ms").await,
        ("6000".into(), GROUP_CONFIG_SOURCE)
    );
    // Deleting every key forgets the group.
    let r = alter(
        &mut c,
        GROUP,
        "orders",
        &[
            ("consumer.session.timeout.ms", DELETE, None),
            ("consumer.heartbeat.interval.ms", DELETE, None),
            ("share.auto.offset.reset", DELETE, None),
        ],
        false,
    )
    .await;
    assert_eq!(r, (0, None));
    assert_eq!(
        value_of(&mut c, GROUP, "orders", "consumer.heartbeat.interval.ms").await,
        ("5000".into(), DEFAULT_SOURCE)
    );
    assert_eq!(list_resources(&mut c, 1, &[GROUP]).await, (0, vec![]));
}

#[tokio::test]
async fn a_groups_session_timeout_and_heartbeat_interval_act_on_its_members() {
    // Bounds wide enough for a short session in a test.
    let b = TestBroker::start(&[
        ("group.consumer.min.session.timeout.ms", "1000"),
        ("group.consumer.min.heartbeat.interval.ms", "200"),
    ])
    .await;
    let mut c = b.client().await;
    assert_eq!(create_topic_with(&mut c, "events", 1, &[]).await, 0);
    let r = alter(
        &mut c,
        GROUP,
        "short",
        &[
            ("consumer.session.timeout.ms", SET, Some("1500")),
            ("consumer.heartbeat.interval.ms", SET, Some("300")),
        ],
        false,
    )
    .await;
    assert_eq!(r, (0, None));

    let (code, short_member, short_epoch, interval) =
        heartbeat(&mut c, "short", "m-short", 0).await;
    assert_eq!((code, interval), (0, 300));
    let (code, long_member, long_epoch, interval) = heartbeat(&mut c, "long", "m-long", 0).await;
    assert_eq!((code, interval), (0, 5000));

    // Past the group's 1.5 s session (and well within the broker's 45 s), only the member of
    // the group with the short session is gone.
    tokio::time::sleep(Duration::from_millis(3000)).await;
    assert_eq!(
        heartbeat(&mut c, "short", &short_member, short_epoch)
            .await
            .0,
        UNKNOWN_MEMBER_ID
    );
    assert_eq!(
        heartbeat(&mut c, "long", &long_member, long_epoch).await.0,
        0
    );
}

#[tokio::test]
async fn client_metrics_subscriptions_are_validated_described_and_listed() {
    let b = TestBroker::start(&[]).await;
    let mut c = b.client().await;
    let r = alter(
        &mut c,
        CLIENT_METRICS,
        "producers",
        &[
            ("metrics", SET, Some("org.apache.kafka.producer.")),
            ("interval.ms", SET, Some("60000")),
            ("match", SET, Some("client_software_name=apache-kafka-java")),
        ],
        false,
    )
    .await;
    assert_eq!(r, (0, None));
    let r = alter(
        &mut c,
        CLIENT_METRICS,
        "producers",
        &[("metrics", APPEND, Some("org.apache.kafka.consumer."))],
        false,
    )
    .await;
    assert_eq!(r, (0, None));
    assert_eq!(
        value_of(&mut c, CLIENT_METRICS, "producers", "metrics").await,
        (
            "org.apache.kafka.producer.,org.apache.kafka.consumer.".into(),
            CLIENT_METRICS_SOURCE
        )
    );
    assert_eq!(
        value_of(&mut c, CLIENT_METRICS, "producers", "interval.ms").await,
        ("60000".into(), CLIENT_METRICS_SOURCE)
    );
    assert_eq!(
        value_of(&mut c, CLIENT_METRICS, "unset", "interval.ms").await,
        ("300000".into(), DEFAULT_SOURCE)
    );
    let refusals: &[(&[(&str, i8, Option<&str>)], i16, &str)] = &[
        (
            &[("interval.ms", SET, Some("50"))],
            INVALID_REQUEST,
            "Invalid value 50 for interval.ms, interval must be between 100 and 3600000 (1 hour)",
        ),
        (
            &[("match", SET, Some("client_name=x"))],
            INVALID_CONFIG,
            "Illegal client matching pattern: client_name=x",
        ),
        (
            &[("push", SET, Some("1"))],
            INVALID_REQUEST,
            "Unknown client metrics configuration: push",
        ),
        (
            &[("interval.ms", APPEND, Some("1"))],
            INVALID_CONFIG,
            "Can't APPEND to key interval.ms because its type is not LIST.",
        ),
    ];
    for (ops, code, message) in refusals {
        let r = alter(&mut c, CLIENT_METRICS, "producers", ops, false).await;
        assert_eq!(r, (*code, Some(message.to_string())), "{ops:?}");
    }
    for version in [0, 1] {
        let types: &[i8] = if version == 0 { &[] } else { &[CLIENT_METRICS] };
        assert_eq!(
            list_resources(&mut c, version, types).await,
            (0, vec![(CLIENT_METRICS, "producers".to_string())]),
            "v{version}"
        );
    }
}
