//! The broker over real TCP: produce, fetch, offsets, topics, idempotence and restarts.
mod common;
use common::create_topic_with as create_topic;
use common::*;

use bytes::Bytes;
use strata::protocol::messages::*;

fn produce_req(
    topic: &str,
    partition: i32,
    records: Bytes,
    acks: i16,
) -> produce_request::ProduceRequest {
    use produce_request::*;
    ProduceRequest {
        acks,
        timeout_ms: 5000,
        topic_data: vec![TopicProduceData {
            name: topic.into(),
            partition_data: vec![PartitionProduceData {
                index: partition,
                records: Some(records),
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    }
}

fn fetch_req(
    topic: &str,
    partition: i32,
    offset: i64,
    isolation: i8,
) -> fetch_request::FetchRequest {
    use fetch_request::*;
    FetchRequest {
        max_wait_ms: 100,
        min_bytes: 1,
        max_bytes: 1 << 20,
        isolation_level: isolation,
        topics: vec![FetchTopic {
            topic: topic.into(),
            partitions: vec![FetchPartition {
                partition,
                fetch_offset: offset,
                partition_max_bytes: 1 << 20,
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    }
}

async fn produce(
    c: &mut Client,
    topic: &str,
    partition: i32,
    records: Bytes,
) -> produce_response::PartitionProduceResponse {
    let r = api_call!(
        c,
        produce_request::ProduceRequest,
        produce_response::ProduceResponse,
        9,
        produce_req(topic, partition, records, -1)
    );
    r.responses[0].partition_responses[0].clone()
}

async fn fetch(
    c: &mut Client,
    topic: &str,
    partition: i32,
    offset: i64,
) -> fetch_response::PartitionData {
    let r = api_call!(
        c,
        fetch_request::FetchRequest,
        fetch_response::FetchResponse,
        12,
        fetch_req(topic, partition, offset, 0)
    );
    r.responses[0].partitions[0].clone()
}

fn values_of(records: &Bytes) -> Vec<(i64, Vec<u8>)> {
    let mut out = vec![];
    let mut pos = 0;
    while pos + 61 <= records.len() {
        let h = strata::protocol::records::batch::parse_header(&records[pos..]).unwrap();
        let end = pos + h.total_size();
        for r in strata::protocol::records::decode_records(&records[pos..end], 1 << 30).unwrap() {
            out.push((
                h.base_offset + r.offset_delta as i64,
                r.value.map(|v| v.to_vec()).unwrap_or_default(),
            ));
        }
        pos = end;
    }
    out
}

#[tokio::test]
async fn produce_then_fetch_round_trip() {
    let b = TestBroker::start(&[]).await;
    let mut c = b.client().await;
    assert_eq!(create_topic(&mut c, "t1", 2, &[]).await, 0);
    let r = produce(&mut c, "t1", 1, batch(&[b"a", b"b", b"c"], None)).await;
    assert_eq!((r.error_code, r.base_offset), (0, 0));
    let r = produce(&mut c, "t1", 1, batch(&[b"d"], None)).await;
    assert_eq!((r.error_code, r.base_offset), (0, 3));
    let p = fetch(&mut c, "t1", 1, 0).await;
    assert_eq!(p.error_code, 0);
    assert_eq!(p.high_watermark, 4);
    let got = values_of(p.records.as_ref().unwrap());
    assert_eq!(
        got,
        vec![
            (0, b"a".to_vec()),
            (1, b"b".to_vec()),
            (2, b"c".to_vec()),
            (3, b"d".to_vec())
        ]
    );
    // A fetch in the middle of a batch returns the whole batch that contains it.
    let p = fetch(&mut c, "t1", 1, 1).await;
    assert_eq!(values_of(p.records.as_ref().unwrap())[0].0, 0);
    // Past the end: OFFSET_OUT_OF_RANGE.
    let p = fetch(&mut c, "t1", 1, 99).await;
    assert_eq!(
        p.error_code,
        strata::error::ErrorCode::OFFSET_OUT_OF_RANGE.code()
    );
}

#[tokio::test]
async fn metadata_auto_creates_topics() {
    let b = TestBroker::start(&[("num.partitions", "3")]).await;
    let mut c = b.client().await;
    use metadata_request::*;
    let req = MetadataRequest {
        topics: Some(vec![MetadataRequestTopic {
            name: Some("auto".into()),
            ..Default::default()
        }]),
        allow_auto_topic_creation: true,
        ..Default::default()
    };
    let r = api_call!(
        c,
        metadata_request::MetadataRequest,
        metadata_response::MetadataResponse,
        12,
        req
    );
    assert_eq!(r.topics[0].error_code, 0);
    assert_eq!(r.topics[0].partitions.len(), 3);
    assert!(!r.topics[0].topic_id.is_zero());
    let req = MetadataRequest {
        topics: Some(vec![MetadataRequestTopic {
            name: Some("nope".into()),
            ..Default::default()
        }]),
        allow_auto_topic_creation: false,
        ..Default::default()
    };
    let r = api_call!(
        c,
        metadata_request::MetadataRequest,
        metadata_response::MetadataResponse,
        12,
        req
    );
    assert_eq!(
        r.topics[0].error_code,
        strata::error::ErrorCode::UNKNOWN_TOPIC_OR_PARTITION.code()
    );
}

#[tokio::test]
async fn produce_v13_names_topics_by_id() {
    let b = TestBroker::start(&[]).await;
    let mut c = b.client().await;
    assert_eq!(create_topic(&mut c, "by-id", 2, &[]).await, 0);
    use metadata_request::*;
    let r = api_call!(
        c,
        metadata_request::MetadataRequest,
        metadata_response::MetadataResponse,
        12,
        MetadataRequest {
            topics: Some(vec![MetadataRequestTopic {
                name: Some("by-id".into()),
                ..Default::default()
            }]),
            ..Default::default()
        }
    );
    let topic_id = r.topics[0].topic_id;
    assert!(!topic_id.is_zero());
    let mut known = produce_req("", 1, batch(&[b"x", b"y"], None), -1);
    known.topic_data[0].topic_id = topic_id;
    let mut unknown = produce_req("", 0, batch(&[b"z"], None), -1);
    unknown.topic_data[0].topic_id = strata::protocol::codec::Uuid([7; 16]);
    known.topic_data.extend(unknown.topic_data);
    let r = api_call!(
        c,
        produce_request::ProduceRequest,
        produce_response::ProduceResponse,
        13,
        known
    );
    let by_id: Vec<_> = r
        .responses
        .iter()
        .map(|t| {
            let p = &t.partition_responses[0];
            (t.topic_id, p.index, p.error_code, p.base_offset)
        })
        .collect();
    assert!(by_id.contains(&(topic_id, 1, 0, 0)), "{by_id:?}");
    assert!(by_id.contains(&(
        strata::protocol::codec::Uuid([7; 16]),
        0,
        strata::error::ErrorCode::UNKNOWN_TOPIC_ID.code(),
        -1
    )));
    let p = fetch(&mut c, "by-id", 1, 0).await;
    assert_eq!(p.high_watermark, 2);
}

#[tokio::test]
async fn idempotent_retries_are_not_written_twice_even_across_restart() {
    let b = TestBroker::start(&[]).await;
    let mut c = b.client().await;
    create_topic(&mut c, "idem", 1, &[]).await;
    let r = common::txn::init_idempotent_producer(&mut c).await;
    assert_eq!(r.error_code, 0);
    let pid = r.producer_id;
    let first = batch(&[b"x", b"y"], Some((pid, 0, 0)));
    assert_eq!(
        produce(&mut c, "idem", 0, first.clone()).await.base_offset,
        0
    );
    // The retry is acknowledged with the original offset and not appended.
    let retry = produce(&mut c, "idem", 0, first.clone()).await;
    assert_eq!((retry.error_code, retry.base_offset), (0, 0));
    // A gap in sequence numbers is refused.
    let gap = produce(&mut c, "idem", 0, batch(&[b"z"], Some((pid, 0, 5)))).await;
    assert_eq!(
        gap.error_code,
        strata::error::ErrorCode::OUT_OF_ORDER_SEQUENCE_NUMBER.code()
    );
    let next = produce(&mut c, "idem", 0, batch(&[b"z"], Some((pid, 0, 2)))).await;
    assert_eq!((next.error_code, next.base_offset), (0, 2));
    drop(c);
    let b = b.restart(&[]).await;
    let mut c = b.client().await;
    let retry = produce(&mut c, "idem", 0, first).await;
    assert_eq!(
        (retry.error_code, retry.base_offset),
        (0, 0),
        "dedup survives a restart"
    );
    let p = fetch(&mut c, "idem", 0, 0).await;
    assert_eq!(p.high_watermark, 3);
    // A stale epoch is refused.
    let r = api_call!(
        c,
        produce_request::ProduceRequest,
        produce_response::ProduceResponse,
        9,
        produce_req("idem", 0, batch(&[b"q"], Some((pid, 1, 0))), -1)
    );
    assert_eq!(r.responses[0].partition_responses[0].error_code, 0);
    let stale = produce(&mut c, "idem", 0, batch(&[b"q"], Some((pid, 0, 3)))).await;
    assert_eq!(
        stale.error_code,
        strata::error::ErrorCode::INVALID_PRODUCER_EPOCH.code()
    );
}

#[tokio::test]
async fn produce_validation_errors() {
    use strata::error::ErrorCode;
    let b = TestBroker::start(&[]).await;
    let mut c = b.client().await;
    create_topic(&mut c, "v", 1, &[("max.message.bytes", "200")]).await;
    // Corrupt CRC.
    let mut bad = batch(&[b"hello"], None).to_vec();
    let n = bad.len();
    bad[n - 1] ^= 0xff;
    assert_eq!(
        produce(&mut c, "v", 0, Bytes::from(bad)).await.error_code,
        ErrorCode::CORRUPT_MESSAGE.code()
    );
    // Wrong magic.
    let mut bad = batch(&[b"hello"], None).to_vec();
    bad[16] = 1;
    let code = produce(&mut c, "v", 0, Bytes::from(bad)).await.error_code;
    assert!(
        code == ErrorCode::UNSUPPORTED_FOR_MESSAGE_FORMAT.code()
            || code == ErrorCode::CORRUPT_MESSAGE.code(),
        "code {code}"
    );
    // Too large for max.message.bytes.
    let big = vec![7u8; 500];
    assert_eq!(
        produce(&mut c, "v", 0, batch(&[&big], None))
            .await
            .error_code,
        ErrorCode::MESSAGE_TOO_LARGE.code()
    );
    // Bad acks.
    let r = api_call!(
        c,
        produce_request::ProduceRequest,
        produce_response::ProduceResponse,
        9,
        produce_req("v", 0, batch(&[b"a"], None), 2)
    );
    assert_eq!(
        r.responses[0].partition_responses[0].error_code,
        ErrorCode::INVALID_REQUIRED_ACKS.code()
    );
    // Unknown partition.
    assert_eq!(
        produce(&mut c, "v", 7, batch(&[b"a"], None))
            .await
            .error_code,
        ErrorCode::UNKNOWN_TOPIC_OR_PARTITION.code()
    );
    // Produce v2 is advertised but refused, as Kafka 4 does.
    let r = api_call!(
        c,
        produce_request::ProduceRequest,
        produce_response::ProduceResponse,
        2,
        produce_req("v", 0, batch(&[b"a"], None), 1)
    );
    assert_eq!(
        r.responses[0].partition_responses[0].error_code,
        ErrorCode::UNSUPPORTED_VERSION.code()
    );
    // Nothing was written by any of them.
    assert_eq!(fetch(&mut c, "v", 0, 0).await.high_watermark, 0);
}

#[tokio::test]
async fn list_offsets_earliest_latest_and_by_time() {
    let b = TestBroker::start(&[]).await;
    let mut c = b.client().await;
    create_topic(&mut c, "lo", 1, &[]).await;
    produce(&mut c, "lo", 0, batch(&[b"1", b"2"], None)).await;
    let q = |ts: i64| {
        use list_offsets_request::*;
        ListOffsetsRequest {
            replica_id: -1,
            topics: vec![ListOffsetsTopic {
                name: "lo".into(),
                partitions: vec![ListOffsetsPartition {
                    partition_index: 0,
                    timestamp: ts,
                    ..Default::default()
                }],
                ..Default::default()
            }],
            ..Default::default()
        }
    };
    let r = api_call!(
        c,
        list_offsets_request::ListOffsetsRequest,
        list_offsets_response::ListOffsetsResponse,
        7,
        q(-1)
    );
    assert_eq!(r.topics[0].partitions[0].offset, 2);
    let r = api_call!(
        c,
        list_offsets_request::ListOffsetsRequest,
        list_offsets_response::ListOffsetsResponse,
        7,
        q(-2)
    );
    assert_eq!(r.topics[0].partitions[0].offset, 0);
    let r = api_call!(
        c,
        list_offsets_request::ListOffsetsRequest,
        list_offsets_response::ListOffsetsResponse,
        7,
        q(now_ms() - 3_600_000)
    );
    assert_eq!(r.topics[0].partitions[0].offset, 0);
    let r = api_call!(
        c,
        list_offsets_request::ListOffsetsRequest,
        list_offsets_response::ListOffsetsResponse,
        7,
        q(now_ms() + 3_600_000)
    );
    assert_eq!(r.topics[0].partitions[0].offset, -1);
}

#[tokio::test]
async fn topics_create_delete_and_grow() {
    use strata::error::ErrorCode;
    let b = TestBroker::start(&[]).await;
    let mut c = b.client().await;
    assert_eq!(
        create_topic(&mut c, "bad name!", 1, &[]).await,
        ErrorCode::INVALID_TOPIC_EXCEPTION.code()
    );
    assert_eq!(
        create_topic(&mut c, "g", 1, &[("retention.ms", "nope")]).await,
        ErrorCode::INVALID_CONFIG.code()
    );
    assert_eq!(create_topic(&mut c, "g", 1, &[]).await, 0);
    assert_eq!(
        create_topic(&mut c, "g", 1, &[]).await,
        ErrorCode::TOPIC_ALREADY_EXISTS.code()
    );
    let r = api_call!(
        c,
        create_partitions_request::CreatePartitionsRequest,
        create_partitions_response::CreatePartitionsResponse,
        3,
        create_partitions_request::CreatePartitionsRequest {
            topics: vec![create_partitions_request::CreatePartitionsTopic {
                name: "g".into(),
                count: 3,
                assignments: None,
                ..Default::default()
            }],
            timeout_ms: 1000,
            ..Default::default()
        }
    );
    assert_eq!(r.results[0].error_code, 0);
    assert_eq!(
        produce(&mut c, "g", 2, batch(&[b"a"], None))
            .await
            .error_code,
        0
    );
    let r = api_call!(
        c,
        delete_topics_request::DeleteTopicsRequest,
        delete_topics_response::DeleteTopicsResponse,
        5,
        delete_topics_request::DeleteTopicsRequest {
            topic_names: vec!["g".into()],
            timeout_ms: 1000,
            ..Default::default()
        }
    );
    assert_eq!(r.responses[0].error_code, 0);
    assert!(!b.dir.path().join("g-0").exists(), "data removed");
    assert_eq!(
        produce(&mut c, "g", 0, batch(&[b"a"], None))
            .await
            .error_code,
        ErrorCode::UNKNOWN_TOPIC_OR_PARTITION.code()
    );
}

#[tokio::test]
async fn long_poll_fetch_wakes_on_produce() {
    let b = TestBroker::start(&[]).await;
    let mut c = b.client().await;
    create_topic(&mut c, "lp", 1, &[]).await;
    let addr = b.addr;
    let waiter = tokio::spawn(async move {
        let mut c2 = Client::connect(addr).await;
        let mut req = fetch_req("lp", 0, 0, 0);
        req.max_wait_ms = 10_000;
        let started = std::time::Instant::now();
        let r = api_call!(
            c2,
            fetch_request::FetchRequest,
            fetch_response::FetchResponse,
            12,
            req
        );
        (
            started.elapsed(),
            r.responses[0].partitions[0]
                .records
                .as_ref()
                .map(|r| r.len())
                .unwrap_or(0),
        )
    });
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    produce(&mut c, "lp", 0, batch(&[b"wake"], None)).await;
    let (elapsed, n) = waiter.await.unwrap();
    assert!(n > 0, "data returned");
    assert!(
        elapsed < std::time::Duration::from_secs(5),
        "woke on produce, not at max_wait"
    );
}

async fn topic_overrides(c: &mut Client, topic: &str) -> Vec<(String, String)> {
    let r = describe_configs(c, 2, topic).await;
    assert_eq!(r.error_code, 0);
    r.configs
        .iter()
        .filter(|e| e.config_source == 1)
        .map(|e| (e.name.clone(), e.value.clone().unwrap_or_default()))
        .collect()
}

#[tokio::test]
async fn alter_configs_whole_set_and_incremental() {
    use strata::error::ErrorCode;
    let b = TestBroker::start(&[]).await;
    let mut c = b.client().await;
    create_topic(&mut c, "cfg", 1, &[("retention.ms", "1000")]).await;
    // IncrementalAlterConfigs: SET one key, APPEND to a list key, unknown key refused.
    let inc = |ops: Vec<(&str, i8, Option<&str>)>| {
        use incremental_alter_configs_request::*;
        IncrementalAlterConfigsRequest {
            resources: vec![AlterConfigsResource {
                resource_type: 2,
                resource_name: "cfg".into(),
                configs: ops
                    .into_iter()
                    .map(|(n, op, v)| AlterableConfig {
                        name: n.into(),
                        config_operation: op,
                        value: v.map(String::from),
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
        incremental_alter_configs_request::IncrementalAlterConfigsRequest,
        incremental_alter_configs_response::IncrementalAlterConfigsResponse,
        1,
        inc(vec![
            ("segment.ms", 0, Some("60000")),
            ("cleanup.policy", 2, Some("compact"))
        ])
    );
    assert_eq!(r.responses[0].error_code, 0);
    let mut got = topic_overrides(&mut c, "cfg").await;
    got.sort();
    assert_eq!(
        got,
        vec![
            ("cleanup.policy".into(), "delete,compact".into()),
            ("retention.ms".into(), "1000".into()),
            ("segment.ms".into(), "60000".into())
        ]
    );
    let r = api_call!(
        c,
        incremental_alter_configs_request::IncrementalAlterConfigsRequest,
        incremental_alter_configs_response::IncrementalAlterConfigsResponse,
        1,
        inc(vec![("no.such.key", 0, Some("1"))])
    );
    assert_eq!(r.responses[0].error_code, ErrorCode::INVALID_CONFIG.code());
    // AlterConfigs replaces the whole set: keys not named are removed.
    use alter_configs_request::*;
    let req = AlterConfigsRequest {
        resources: vec![AlterConfigsResource {
            resource_type: 2,
            resource_name: "cfg".into(),
            configs: vec![AlterableConfig {
                name: "retention.ms".into(),
                value: Some("5000".into()),
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    };
    let r = api_call!(
        c,
        alter_configs_request::AlterConfigsRequest,
        alter_configs_response::AlterConfigsResponse,
        2,
        req
    );
    assert_eq!(r.responses[0].error_code, 0);
    assert_eq!(
        topic_overrides(&mut c, "cfg").await,
        vec![("retention.ms".to_string(), "5000".to_string())]
    );
    // A broker config Kafka cannot change at runtime is refused (dynamic broker configs are
    // tested in tests/dynamic_configs.rs).
    let req = AlterConfigsRequest {
        resources: vec![AlterConfigsResource {
            resource_type: 4,
            resource_name: "1".into(),
            configs: vec![AlterableConfig {
                name: "num.partitions".into(),
                value: Some("3".into()),
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    };
    let r = api_call!(
        c,
        alter_configs_request::AlterConfigsRequest,
        alter_configs_response::AlterConfigsResponse,
        2,
        req
    );
    assert_eq!(r.responses[0].error_code, ErrorCode::INVALID_REQUEST.code());
}

async fn describe_topic_partitions(
    c: &mut Client,
    topics: &[&str],
    limit: i32,
    cursor: Option<(&str, i32)>,
) -> describe_topic_partitions_response::DescribeTopicPartitionsResponse {
    use describe_topic_partitions_request::*;
    let req = DescribeTopicPartitionsRequest {
        topics: topics
            .iter()
            .map(|n| TopicRequest {
                name: n.to_string(),
                ..Default::default()
            })
            .collect(),
        response_partition_limit: limit,
        cursor: cursor.map(|(t, p)| Cursor {
            topic_name: t.into(),
            partition_index: p,
            ..Default::default()
        }),
        ..Default::default()
    };
    api_call!(
        c,
        describe_topic_partitions_request::DescribeTopicPartitionsRequest,
        describe_topic_partitions_response::DescribeTopicPartitionsResponse,
        0,
        req
    )
}

/// (topic, partition) of every partition in a page, and the next cursor.
type Page = (Vec<(String, i32)>, Option<(String, i32)>);

fn page(r: &describe_topic_partitions_response::DescribeTopicPartitionsResponse) -> Page {
    let listed = r
        .topics
        .iter()
        .flat_map(|t| {
            t.partitions
                .iter()
                .map(move |p| (t.name.clone().unwrap(), p.partition_index))
        })
        .collect();
    let next = r
        .next_cursor
        .as_ref()
        .map(|c| (c.topic_name.clone(), c.partition_index));
    (listed, next)
}

#[tokio::test]
async fn describe_topic_partitions_pages_with_a_cursor() {
    // The broker's own cap (2) wins over a larger request limit.
    let b = TestBroker::start(&[("max.request.partition.size.limit", "2")]).await;
    let mut c = b.client().await;
    create_topic(&mut c, "dtp-a", 3, &[]).await;
    create_topic(&mut c, "dtp-b", 2, &[]).await;
    create_topic(&mut c, "dtp-c", 1, &[]).await;
    let topics = ["dtp-c", "dtp-a", "dtp-b"];
    let owned = |v: &[(&str, i32)]| -> Vec<(String, i32)> {
        v.iter().map(|(t, p)| (t.to_string(), *p)).collect()
    };

    let r = describe_topic_partitions(&mut c, &topics, 2000, None).await;
    assert_eq!(
        page(&r),
        (
            owned(&[("dtp-a", 0), ("dtp-a", 1)]),
            Some(("dtp-a".into(), 2))
        )
    );
    let r = describe_topic_partitions(&mut c, &topics, 2000, Some(("dtp-a", 2))).await;
    assert_eq!(
        page(&r),
        (
            owned(&[("dtp-a", 2), ("dtp-b", 0)]),
            Some(("dtp-b".into(), 1))
        )
    );
    let r = describe_topic_partitions(&mut c, &topics, 2000, Some(("dtp-b", 1))).await;
    assert_eq!(page(&r), (owned(&[("dtp-b", 1), ("dtp-c", 0)]), None));
    // A smaller request limit; a page that ends on a topic's last partition points the
    // cursor at the next topic's first.
    let r = describe_topic_partitions(&mut c, &topics, 1, Some(("dtp-b", 1))).await;
    assert_eq!(
        page(&r),
        (owned(&[("dtp-b", 1)]), Some(("dtp-c".into(), 0)))
    );

    // The values a client reads: ids as Metadata gives them, leader, epoch, replicas, ISR.
    let r = describe_topic_partitions(&mut c, &["dtp-c"], 10, None).await;
    let t = &r.topics[0];
    assert_eq!(t.error_code, 0);
    assert_eq!(
        t.topic_id,
        b.running
            .as_ref()
            .unwrap()
            .broker
            .cluster
            .topic("dtp-c")
            .unwrap()
            .id
    );
    assert!(!t.is_internal);
    assert_ne!(t.topic_authorized_operations, i32::MIN);
    let p = &t.partitions[0];
    assert_eq!(
        (
            p.error_code,
            p.leader_id,
            p.leader_epoch,
            p.replica_nodes.clone(),
            p.isr_nodes.clone(),
            p.offline_replicas.clone()
        ),
        (0, 1, 0, vec![1], vec![1], vec![])
    );
    assert_eq!(p.eligible_leader_replicas, Some(vec![]));

    // Unknown and invalid names, each answered on its own.
    let r = describe_topic_partitions(&mut c, &["dtp-none", "bad name!"], 10, None).await;
    let codes: Vec<_> = r
        .topics
        .iter()
        .map(|t| (t.name.clone().unwrap(), t.error_code, t.topic_id.is_zero()))
        .collect();
    use strata::error::ErrorCode;
    assert_eq!(
        codes,
        vec![
            (
                "bad name!".into(),
                ErrorCode::INVALID_TOPIC_EXCEPTION.code(),
                true
            ),
            (
                "dtp-none".into(),
                ErrorCode::UNKNOWN_TOPIC_OR_PARTITION.code(),
                true
            ),
        ]
    );
    // A cursor on a topic the request does not name, or a negative partition, fails the
    // request: every named topic carries INVALID_REQUEST.
    for cursor in [("dtp-z", 0), ("dtp-a", -1)] {
        let r = describe_topic_partitions(&mut c, &["dtp-a", "dtp-b"], 10, Some(cursor)).await;
        assert_eq!(r.topics.len(), 2);
        assert!(r
            .topics
            .iter()
            .all(|t| t.error_code == ErrorCode::INVALID_REQUEST.code() && t.partitions.is_empty()));
    }
    // All topics (an empty list) from a cursor: those at or after it, in name order.
    let r = describe_topic_partitions(&mut c, &[], 10, Some(("dtp-b", 0))).await;
    assert_eq!(
        page(&r).0,
        owned(&[("dtp-b", 0), ("dtp-b", 1)]),
        "the cap of 2 ends the page"
    );
    assert_eq!(page(&r).1, Some(("dtp-c".into(), 0)));
}
