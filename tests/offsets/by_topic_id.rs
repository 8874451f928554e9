//! OffsetCommit and OffsetFetch v10 (KIP-848: topics by id) over real TCP: offsets committed by
//! id are read back by id and by name (v9) with the values a client reads (offset, leader
//! epoch, metadata); unknown ids answer UNKNOWN_TOPIC_ID and store nothing; a partition that
//! does not exist answers UNKNOWN_TOPIC_OR_PARTITION under its topic's id; fetching all of a
//! group's offsets names each topic by id and leaves out a deleted topic.
use crate::common::offsets::commit;
use crate::common::*;

use strata::error::ErrorCode;
use strata::protocol::codec::Uuid;
use strata::protocol::messages::*;

const UNKNOWN_ID: i16 = ErrorCode::UNKNOWN_TOPIC_ID as i16;
const UNKNOWN_PARTITION: i16 = ErrorCode::UNKNOWN_TOPIC_OR_PARTITION as i16;

fn topic_id(b: &TestBroker, name: &str) -> Uuid {
    let broker = &b.running.as_ref().unwrap().broker;
    Uuid(broker.cluster.image().topic(name).unwrap().topic_id)
}

/// OffsetCommit v10 of (topic id, partition, offset): (topic id, partition, error) per answer.
async fn commit_by_id(
    c: &mut Client,
    group: &str,
    rows: &[(Uuid, i32, i64)],
) -> Vec<(Uuid, i32, i16)> {
    use offset_commit_request::*;
    let mut topics: Vec<OffsetCommitRequestTopic> = Vec::new();
    for (id, p, offset) in rows {
        let partition = OffsetCommitRequestPartition {
            partition_index: *p,
            committed_offset: *offset,
            committed_leader_epoch: 3,
            committed_metadata: Some(format!("m{offset}")),
            ..Default::default()
        };
        match topics.iter_mut().find(|t| t.topic_id == *id) {
            Some(t) => t.partitions.push(partition),
            None => topics.push(OffsetCommitRequestTopic {
                topic_id: *id,
                partitions: vec![partition],
                ..Default::default()
            }),
        }
    }
    let r = api_call!(
        c,
        offset_commit_request::OffsetCommitRequest,
        offset_commit_response::OffsetCommitResponse,
        10,
        OffsetCommitRequest {
            group_id: group.into(),
            member_id: String::new(),
            generation_id_or_member_epoch: -1,
            topics,
            ..Default::default()
        }
    );
    let mut out: Vec<(Uuid, i32, i16)> = r
        .topics
        .iter()
        .flat_map(|t| {
            t.partitions
                .iter()
                .map(move |p| (t.topic_id, p.partition_index, p.error_code))
        })
        .collect();
    out.sort();
    out
}

/// One fetched partition as a client reads it: (topic id or name, partition, offset, leader
/// epoch, metadata, error).
type Fetched = (String, i32, i64, i32, Option<String>, i16);

/// OffsetFetch of one group at `version`; `topics` None asks for all of them. Topics are given
/// by id (v10) or name (v9), as the strings returned.
async fn fetch(
    c: &mut Client,
    version: i16,
    group: &str,
    topics: Option<Vec<(Uuid, &str, Vec<i32>)>>,
) -> (i16, Vec<Fetched>) {
    use offset_fetch_request::*;
    let r = api_call!(
        c,
        offset_fetch_request::OffsetFetchRequest,
        offset_fetch_response::OffsetFetchResponse,
        version,
        OffsetFetchRequest {
            groups: vec![OffsetFetchRequestGroup {
                group_id: group.into(),
                topics: topics.map(|ts| {
                    ts.into_iter()
                        .map(
                            |(topic_id, name, partition_indexes)| OffsetFetchRequestTopics {
                                topic_id,
                                name: name.into(),
                                partition_indexes,
                                ..Default::default()
                            },
                        )
                        .collect()
                }),
                ..Default::default()
            }],
            ..Default::default()
        }
    );
    let g = &r.groups[0];
    let mut out: Vec<Fetched> = g
        .topics
        .iter()
        .flat_map(|t| {
            let topic = if version >= 10 {
                format!("{:?}", t.topic_id)
            } else {
                t.name.clone()
            };
            t.partitions.iter().map(move |p| {
                (
                    topic.clone(),
                    p.partition_index,
                    p.committed_offset,
                    p.committed_leader_epoch,
                    p.metadata.clone(),
                    p.error_code,
                )
            })
        })
        .collect();
    out.sort();
    (g.error_code, out)
}

#[tokio::test]
async fn offsets_are_committed_and_fetched_by_topic_id() {
    let b = TestBroker::start(&[]).await;
    let mut c = b.client().await;
    assert_eq!(create_topic_with(&mut c, "orders", 2, &[]).await, 0);
    assert_eq!(create_topic_with(&mut c, "gone", 1, &[]).await, 0);
    let orders = topic_id(&b, "orders");
    let gone = topic_id(&b, "gone");
    let stranger = Uuid([7; 16]);
    // A v9 commit sets up the coordinator (and commits to "gone" by name).
    assert_eq!(
        commit(&mut c, 9, "g", &[("gone", 0)], 5).await,
        vec![("gone".to_string(), 0, 0)]
    );

    let answered = commit_by_id(
        &mut c,
        "g",
        &[
            (orders, 0, 42),
            (orders, 1, 7),
            (orders, 9, 1),
            (stranger, 0, 1),
        ],
    )
    .await;
    let mut expected = vec![
        (orders, 0, 0),
        (orders, 1, 0),
        (orders, 9, UNKNOWN_PARTITION),
        (stranger, 0, UNKNOWN_ID),
    ];
    expected.sort();
    assert_eq!(answered, expected);

    // By id (v10) and by name (v9): the same offsets, epochs and metadata.
    let o = format!("{orders:?}");
    let s = format!("{stranger:?}");
    let (code, by_id) = fetch(
        &mut c,
        10,
        "g",
        Some(vec![(orders, "", vec![0, 1]), (stranger, "", vec![0])]),
    )
    .await;
    assert_eq!(code, 0);
    let mut want = vec![
        (o.clone(), 0, 42, 3, Some("m42".to_string()), 0),
        (o.clone(), 1, 7, 3, Some("m7".to_string()), 0),
        (s.clone(), 0, -1, -1, Some(String::new()), UNKNOWN_ID),
    ];
    want.sort();
    assert_eq!(by_id, want);
    let (_, by_name) = fetch(
        &mut c,
        9,
        "g",
        Some(vec![(Uuid::default(), "orders", vec![0])]),
    )
    .await;
    assert_eq!(
        by_name,
        vec![("orders".to_string(), 0, 42, 3, Some("m42".to_string()), 0)]
    );

    // All topics: each named by id.
    let g = format!("{gone:?}");
    let (code, all) = fetch(&mut c, 10, "g", None).await;
    assert_eq!(code, 0);
    let topics: std::collections::BTreeSet<&str> = all.iter().map(|f| f.0.as_str()).collect();
    assert_eq!(topics, [g.as_str(), o.as_str()].into_iter().collect());

    // A deleted topic has no id to be named by: left out of the v10 answer.
    let r = api_call!(
        c,
        delete_topics_request::DeleteTopicsRequest,
        delete_topics_response::DeleteTopicsResponse,
        6,
        delete_topics_request::DeleteTopicsRequest {
            topics: vec![delete_topics_request::DeleteTopicState {
                name: Some("gone".into()),
                ..Default::default()
            }],
            timeout_ms: 5000,
            ..Default::default()
        }
    );
    assert_eq!(r.responses[0].error_code, 0);
    let (_, all) = fetch(&mut c, 10, "g", None).await;
    assert!(all.iter().all(|f| f.0 == o), "{all:?}");
    assert_eq!(all.len(), 2);
}
