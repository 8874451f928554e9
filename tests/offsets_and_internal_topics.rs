//! Issue 12 over the wire: offsets for partitions that do not exist (OffsetCommit,
//! TxnOffsetCommit, OffsetDelete answer UNKNOWN_TOPIC_OR_PARTITION and store nothing;
//! OffsetFetch answers "no offset"), the guard on internal topics (DeleteTopics,
//! CreatePartitions and DeleteRecords refused; the topic and its offsets survive), and a
//! storage error answered with its own code.
mod common;
use common::create_topic_with as create_topic;
use common::offsets::{commit, commit_once};
use common::*;

use strata::error::ErrorCode;
use strata::protocol::messages::*;

const UNKNOWN: i16 = ErrorCode::UNKNOWN_TOPIC_OR_PARTITION as i16;
const REFUSED: i16 = ErrorCode::INVALID_TOPIC_EXCEPTION as i16;

/// OffsetFetch v7 of (topic, partition): (committed offset, error code).
async fn fetch_offset(c: &mut Client, group: &str, topic: &str, partition: i32) -> (i64, i16) {
    use offset_fetch_request::*;
    let r = api_call!(
        c,
        offset_fetch_request::OffsetFetchRequest,
        offset_fetch_response::OffsetFetchResponse,
        7,
        OffsetFetchRequest {
            group_id: group.into(),
            topics: Some(vec![OffsetFetchRequestTopic {
                name: topic.into(),
                partition_indexes: vec![partition],
                ..Default::default()
            }]),
            ..Default::default()
        }
    );
    assert_eq!(r.error_code, 0);
    let p = &r.topics[0].partitions[0];
    (p.committed_offset, p.error_code)
}

#[tokio::test]
async fn offsets_of_partitions_that_do_not_exist() {
    let b = TestBroker::start(&[]).await;
    let mut c = b.client().await;
    assert_eq!(create_topic(&mut c, "real", 2, &[]).await, 0);
    for version in 2..=9i16 {
        let group = format!("g{version}");
        // The reported defect: a commit for a topic that does not exist "succeeded".
        assert_eq!(
            commit(&mut c, version, &group, &[("nope", 0)], 5).await,
            vec![("nope".to_string(), 0, UNKNOWN)],
            "version {version}"
        );
        // Mixed: the real partition is stored, the others are refused.
        assert_eq!(
            commit(
                &mut c,
                version,
                &group,
                &[("real", 0), ("real", 7), ("nope", 1)],
                9
            )
            .await,
            vec![
                ("nope".to_string(), 1, UNKNOWN),
                ("real".to_string(), 0, 0),
                ("real".to_string(), 7, UNKNOWN),
            ],
            "version {version}"
        );
        assert_eq!(fetch_offset(&mut c, &group, "real", 0).await, (9, 0));
        // Nothing was stored for them: "no offset", without an error (Kafka's OffsetFetch v1+).
        assert_eq!(fetch_offset(&mut c, &group, "real", 7).await, (-1, 0));
        assert_eq!(fetch_offset(&mut c, &group, "nope", 0).await, (-1, 0));
    }

    // The coordinator refuses the whole commit (a member of a group that does not exist):
    // its partitions carry the group's error, the unknown one keeps its own, as Kafka's
    // KafkaApis merges the coordinator's answer with the partitions it answered first.
    for (version, group_error) in [
        (8, ErrorCode::ILLEGAL_GENERATION.code()),
        (9, ErrorCode::GROUP_ID_NOT_FOUND.code()),
    ] {
        let rows = [("real", 0), ("nope", 1)];
        assert_eq!(
            commit_once(&mut c, version, "no-such-group", ("ghost", 5), &rows, 3).await,
            vec![
                ("nope".to_string(), 1, UNKNOWN),
                ("real".to_string(), 0, group_error),
            ],
            "version {version}"
        );
    }
    assert_eq!(
        fetch_offset(&mut c, "no-such-group", "real", 0).await,
        (-1, 0)
    );

    // TxnOffsetCommit: unknown partitions are answered before the coordinator is asked.
    use txn_offset_commit_request::*;
    let r = api_call!(
        c,
        txn_offset_commit_request::TxnOffsetCommitRequest,
        txn_offset_commit_response::TxnOffsetCommitResponse,
        3,
        TxnOffsetCommitRequest {
            transactional_id: "t".into(),
            group_id: "g9".into(),
            producer_id: 1,
            producer_epoch: 0,
            topics: vec![TxnOffsetCommitRequestTopic {
                name: "nope".into(),
                partitions: vec![TxnOffsetCommitRequestPartition {
                    partition_index: 0,
                    committed_offset: 3,
                    ..Default::default()
                }],
                ..Default::default()
            }],
            ..Default::default()
        }
    );
    assert_eq!(r.topics[0].name, "nope");
    assert_eq!(r.topics[0].partitions[0].error_code, UNKNOWN);

    // OffsetDelete: the group's own answer, plus UNKNOWN_TOPIC_OR_PARTITION for the rest.
    use offset_delete_request::*;
    let r = api_call!(
        c,
        offset_delete_request::OffsetDeleteRequest,
        offset_delete_response::OffsetDeleteResponse,
        0,
        OffsetDeleteRequest {
            group_id: "g2".into(),
            topics: vec![
                OffsetDeleteRequestTopic {
                    name: "real".into(),
                    partitions: vec![
                        OffsetDeleteRequestPartition { partition_index: 0 },
                        OffsetDeleteRequestPartition { partition_index: 9 },
                    ],
                },
                OffsetDeleteRequestTopic {
                    name: "nope".into(),
                    partitions: vec![OffsetDeleteRequestPartition { partition_index: 0 }],
                },
            ],
        }
    );
    assert_eq!(r.error_code, 0);
    let mut rows: Vec<(String, i32, i16)> = r
        .topics
        .iter()
        .flat_map(|t| {
            t.partitions
                .iter()
                .map(|p| (t.name.clone(), p.partition_index, p.error_code))
        })
        .collect();
    rows.sort();
    assert_eq!(
        rows,
        vec![
            ("nope".to_string(), 0, UNKNOWN),
            ("real".to_string(), 0, 0),
            ("real".to_string(), 9, UNKNOWN),
        ]
    );
    assert_eq!(fetch_offset(&mut c, "g2", "real", 0).await, (-1, 0));
}

async fn partition_count(c: &mut Client, topic: &str) -> usize {
    let r = topic_metadata(c, topic).await;
    assert_eq!(r.topics[0].error_code, 0, "{topic} exists");
    r.topics[0].partitions.len()
}

/// DeleteTopics (v5 by name) and CreatePartitions on `topic`: their codes and the deletion's
/// message.
async fn delete_and_grow(c: &mut Client, topic: &str) -> (i16, Option<String>, i16) {
    let r = api_call!(
        c,
        delete_topics_request::DeleteTopicsRequest,
        delete_topics_response::DeleteTopicsResponse,
        5,
        delete_topics_request::DeleteTopicsRequest {
            topic_names: vec![topic.into()],
            timeout_ms: 5000,
            ..Default::default()
        }
    );
    let (deleted, message) = (
        r.responses[0].error_code,
        r.responses[0].error_message.clone(),
    );
    let r = api_call!(
        c,
        create_partitions_request::CreatePartitionsRequest,
        create_partitions_response::CreatePartitionsResponse,
        3,
        create_partitions_request::CreatePartitionsRequest {
            topics: vec![create_partitions_request::CreatePartitionsTopic {
                name: topic.into(),
                count: 60,
                assignments: None,
                ..Default::default()
            }],
            timeout_ms: 5000,
            ..Default::default()
        }
    );
    (deleted, message, r.results[0].error_code)
}

/// DeleteRecords up to the high watermark of `partitions` partitions of `topic`: the first
/// code that is not the refusal, or the refusal.
async fn trim(c: &mut Client, topic: &str, partitions: i32) -> i16 {
    let r = api_call!(
        c,
        delete_records_request::DeleteRecordsRequest,
        delete_records_response::DeleteRecordsResponse,
        2,
        delete_records_request::DeleteRecordsRequest {
            topics: vec![delete_records_request::DeleteRecordsTopic {
                name: topic.into(),
                partitions: (0..partitions)
                    .map(|p| delete_records_request::DeleteRecordsPartition {
                        partition_index: p,
                        offset: -1,
                        ..Default::default()
                    })
                    .collect(),
                ..Default::default()
            }],
            timeout_ms: 5000,
            ..Default::default()
        }
    );
    r.topics[0]
        .partitions
        .iter()
        .map(|p| p.error_code)
        .find(|c| *c != REFUSED)
        .unwrap_or(REFUSED)
}

#[tokio::test]
async fn internal_topics_cannot_be_deleted_grown_or_trimmed() {
    let b = TestBroker::start(&[]).await;
    let mut c = b.client().await;
    assert_eq!(create_topic(&mut c, "data", 1, &[]).await, 0);
    // A committed offset creates `__consumer_offsets`.
    assert_eq!(
        commit(&mut c, 8, "keep", &[("data", 0)], 42).await,
        vec![("data".to_string(), 0, 0)]
    );
    assert_eq!(partition_count(&mut c, "__consumer_offsets").await, 50);

    let (deleted, message, grown) = delete_and_grow(&mut c, "__consumer_offsets").await;
    let trimmed = trim(&mut c, "__consumer_offsets", 50).await;
    assert_eq!((deleted, grown, trimmed), (REFUSED, REFUSED, REFUSED));
    assert!(message.unwrap_or_default().contains("internal topic"));
    // By id (DeleteTopics v6) too.
    let id = {
        let r = api_call!(
            c,
            metadata_request::MetadataRequest,
            metadata_response::MetadataResponse,
            12,
            metadata_request::MetadataRequest {
                topics: Some(vec![metadata_request::MetadataRequestTopic {
                    name: Some("__consumer_offsets".into()),
                    ..Default::default()
                }]),
                ..Default::default()
            }
        );
        r.topics[0].topic_id
    };
    let r = api_call!(
        c,
        delete_topics_request::DeleteTopicsRequest,
        delete_topics_response::DeleteTopicsResponse,
        6,
        delete_topics_request::DeleteTopicsRequest {
            topics: vec![delete_topics_request::DeleteTopicState {
                name: None,
                topic_id: id,
                ..Default::default()
            }],
            timeout_ms: 5000,
            ..Default::default()
        }
    );
    assert_eq!(r.responses[0].error_code, REFUSED);

    // The topic and the group's offset survive.
    assert_eq!(partition_count(&mut c, "__consumer_offsets").await, 50);
    assert_eq!(fetch_offset(&mut c, "keep", "data", 0).await, (42, 0));

    // An ordinary topic in the same requests is still served.
    let r = api_call!(
        c,
        delete_topics_request::DeleteTopicsRequest,
        delete_topics_response::DeleteTopicsResponse,
        5,
        delete_topics_request::DeleteTopicsRequest {
            topic_names: vec!["__transaction_state".into(), "data".into()],
            timeout_ms: 5000,
            ..Default::default()
        }
    );
    let mut codes: Vec<(String, i16)> = r
        .responses
        .iter()
        .map(|t| (t.name.clone().unwrap_or_default(), t.error_code))
        .collect();
    codes.sort();
    assert_eq!(
        codes,
        vec![
            ("__transaction_state".to_string(), REFUSED),
            ("data".to_string(), 0)
        ]
    );
}

#[tokio::test]
async fn a_batch_larger_than_a_segment_is_record_list_too_large() {
    let b = TestBroker::start(&[]).await;
    let mut c = b.client().await;
    assert_eq!(
        create_topic(&mut c, "small", 1, &[("segment.bytes", "100")]).await,
        0
    );
    let value = vec![b'x'; 300];
    let r = api_call!(
        c,
        produce_request::ProduceRequest,
        produce_response::ProduceResponse,
        9,
        produce_request::ProduceRequest {
            acks: -1,
            timeout_ms: 5000,
            topic_data: vec![produce_request::TopicProduceData {
                name: "small".into(),
                partition_data: vec![produce_request::PartitionProduceData {
                    index: 0,
                    records: Some(batch(&[&value], None)),
                    ..Default::default()
                }],
                ..Default::default()
            }],
            ..Default::default()
        }
    );
    let p = &r.responses[0].partition_responses[0];
    assert_eq!(p.error_code, ErrorCode::RECORD_LIST_TOO_LARGE.code());
    let message = p.error_message.clone().unwrap_or_default();
    assert!(
        !message.contains('{') && !message.contains('/'),
        "{message}"
    );
}

/// In a cluster these requests are forwarded to the active controller: the refusal holds on
/// every node, through its broker listener (forwarded) and its controller listener alike.
#[tokio::test]
async fn internal_topics_are_refused_on_every_node_of_a_cluster() {
    use common::cluster::Cluster;
    use common::coord::find_coordinator;
    let cluster = Cluster::start().await;
    cluster.wait_brokers(0, 3).await;
    // A coordinator lookup creates `__consumer_offsets` (3 partitions in these clusters).
    find_coordinator(&cluster, "g", 0).await;
    cluster.wait_leader(0, "__consumer_offsets", None, 3).await;
    for i in 0..3 {
        let mut c = Client::connect(cluster.addr(i)).await;
        let (deleted, _, grown) = delete_and_grow(&mut c, "__consumer_offsets").await;
        assert_eq!(
            (deleted, grown),
            (REFUSED, REFUSED),
            "broker listener of node {i}"
        );
        assert_eq!(trim(&mut c, "__consumer_offsets", 3).await, REFUSED);
        let mut c = Client::connect(cluster.controller_addr(i)).await;
        let (deleted, _, grown) = delete_and_grow(&mut c, "__consumer_offsets").await;
        assert_eq!(
            (deleted, grown),
            (REFUSED, REFUSED),
            "controller listener of node {i}"
        );
    }
    for i in 0..3 {
        // Metadata reaches each node asynchronously (as in Kafka): wait until node `i` has
        // replayed the topic, then check that the refused requests left it whole.
        cluster.wait_leader(i, "__consumer_offsets", None, 3).await;
        let m = cluster.metadata(i, "__consumer_offsets").await;
        assert_eq!(m.topics[0].error_code, 0);
        assert_eq!(m.topics[0].partitions.len(), 3, "seen from node {i}");
    }
}

/// OffsetCommit and OffsetFetch v10 (topics by id).
#[path = "offsets/by_topic_id.rs"]
mod by_topic_id;
