//! KIP-932 share groups over real TCP, checking the values a share consumer reads: the
//! assignment of ShareGroupHeartbeat v1, the offsets and delivery counts ShareFetch v2 acquires,
//! acknowledgements (ACCEPT, RELEASE, an offset not held), share-session epochs, a session
//! closed by ShareAcknowledge releasing its records to another member, the start offset and lag
//! of DescribeShareGroupOffsets v1, ShareGroupDescribe v1, leaving, ListGroups and DeleteGroups;
//! and a share group's id refused to classic and KIP-848 consumers.
mod common;
use common::cluster::produce_retrying;
use common::incremental_alter as alter;
use common::*;

use std::time::Duration;

use strata::protocol::codec::Uuid;
use strata::protocol::messages::*;

const GROUP_RESOURCE: i8 = 32;
const SET: i8 = 0;
const ACCEPT: i8 = 1;
const RELEASE: i8 = 2;
const REJECT: i8 = 3;
const INCONSISTENT_GROUP_PROTOCOL: i16 = 23;
const GROUP_ID_NOT_FOUND: i16 = 69;
const INVALID_RECORD_STATE: i16 = 121;
const SHARE_SESSION_NOT_FOUND: i16 = 122;
const INVALID_SHARE_SESSION_EPOCH: i16 = 123;
const TOPIC: &str = "orders";

/// A member id as a share consumer makes one (a random UUID in Kafka's base64 form).
fn new_member_id() -> String {
    Uuid::random().to_string()
}

/// ShareGroupHeartbeat v1 subscribed to `TOPIC`, retried while the coordinator is set up.
async fn share_heartbeat(
    c: &mut Client,
    group: &str,
    member_id: &str,
    member_epoch: i32,
) -> share_group_heartbeat_response::ShareGroupHeartbeatResponse {
    common::share::heartbeat(c, group, member_id, member_epoch, TOPIC).await
}

/// ShareFetch v2 of partition 0 of `topic_id` (record-limit mode, 500 ms wait) carrying
/// `acks` as (first, last, type).
async fn share_fetch(
    c: &mut Client,
    member_id: &str,
    epoch: i32,
    topic_id: Uuid,
    acks: &[(i64, i64, i8)],
    max_records: i32,
) -> share_fetch_response::ShareFetchResponse {
    share_fetch_waiting(c, member_id, epoch, topic_id, acks, max_records, 500).await
}

/// [`share_fetch`] waiting at most `max_wait_ms`.
async fn share_fetch_waiting(
    c: &mut Client,
    member_id: &str,
    epoch: i32,
    topic_id: Uuid,
    acks: &[(i64, i64, i8)],
    max_records: i32,
    max_wait_ms: i32,
) -> share_fetch_response::ShareFetchResponse {
    api_call!(
        c,
        share_fetch_request::ShareFetchRequest,
        share_fetch_response::ShareFetchResponse,
        2,
        common::share::fetch_request(
            "g",
            member_id,
            epoch,
            topic_id,
            acks,
            max_records,
            max_wait_ms
        )
    )
}

/// The one partition of a ShareFetch answer (the top-level error must be none).
fn only_partition(
    r: &share_fetch_response::ShareFetchResponse,
) -> share_fetch_response::PartitionData {
    assert_eq!((r.error_code, &r.error_message), (0, &None), "{r:?}");
    assert_eq!(r.responses.len(), 1, "{r:?}");
    assert_eq!(r.responses[0].partitions.len(), 1, "{r:?}");
    r.responses[0].partitions[0].clone()
}

/// Acquired (first, last, delivery count) ranges of a partition answer.
fn acquired(p: &share_fetch_response::PartitionData) -> Vec<(i64, i64, i16)> {
    p.acquired_records
        .iter()
        .map(|a| (a.first_offset, a.last_offset, a.delivery_count))
        .collect()
}

/// DescribeShareGroupOffsets v1 of group g, every partition (topics null): (start, lag).
async fn share_offsets(c: &mut Client, topic_id: Uuid) -> (i64, i64) {
    use describe_share_group_offsets_request::*;
    let r = api_call!(
        c,
        describe_share_group_offsets_request::DescribeShareGroupOffsetsRequest,
        describe_share_group_offsets_response::DescribeShareGroupOffsetsResponse,
        1,
        DescribeShareGroupOffsetsRequest {
            groups: vec![DescribeShareGroupOffsetsRequestGroup {
                group_id: "g".into(),
                topics: None,
                ..Default::default()
            }],
            ..Default::default()
        }
    );
    let g = &r.groups[0];
    assert_eq!((g.group_id.as_str(), g.error_code), ("g", 0), "{r:?}");
    assert_eq!(g.topics.len(), 1, "{r:?}");
    let t = &g.topics[0];
    assert_eq!(
        (t.topic_name.as_str(), t.topic_id),
        (TOPIC, topic_id),
        "{r:?}"
    );
    assert_eq!(t.partitions.len(), 1, "{r:?}");
    let p = &t.partitions[0];
    assert_eq!((p.partition_index, p.error_code), (0, 0), "{r:?}");
    assert!(p.leader_epoch >= 0, "{r:?}");
    (p.start_offset, p.lag)
}

async fn share_describe(
    c: &mut Client,
    group: &str,
) -> share_group_describe_response::DescribedGroup {
    let r = api_call!(
        c,
        share_group_describe_request::ShareGroupDescribeRequest,
        share_group_describe_response::ShareGroupDescribeResponse,
        1,
        share_group_describe_request::ShareGroupDescribeRequest {
            group_ids: vec![group.into()],
            ..Default::default()
        }
    );
    r.groups.into_iter().next().expect("one group")
}

/// ListGroups v5 of share groups: (id, state, type).
async fn list_share_groups(c: &mut Client) -> Vec<(String, String, String)> {
    let r = api_call!(
        c,
        list_groups_request::ListGroupsRequest,
        list_groups_response::ListGroupsResponse,
        5,
        list_groups_request::ListGroupsRequest {
            types_filter: vec!["share".into()],
            ..Default::default()
        }
    );
    assert_eq!(r.error_code, 0);
    let mut out: Vec<_> = r
        .groups
        .into_iter()
        .map(|g| (g.group_id, g.group_state, g.group_type))
        .collect();
    out.sort();
    out
}

fn topic_id(b: &TestBroker) -> Uuid {
    let broker = &b.running.as_ref().unwrap().broker;
    Uuid(broker.cluster.image().topic(TOPIC).unwrap().topic_id)
}

/// Sets group g's `share.auto.offset.reset` to earliest and waits until the broker applies it.
async fn read_from_earliest(b: &TestBroker, a: &mut Client) {
    set_share_config(b, a, "share.auto.offset.reset", "earliest", |s| {
        s.auto_offset_reset == "earliest"
    })
    .await;
}

/// Sets group g's config `key` to `value` and waits until DescribeConfigs shows it and the
/// broker's share settings satisfy `applied`.
async fn set_share_config(
    b: &TestBroker,
    a: &mut Client,
    key: &str,
    value: &str,
    applied: impl Fn(&strata::coordinator::SharePartitionSettings) -> bool,
) {
    let set = alter(a, GROUP_RESOURCE, "g", &[(key, SET, Some(value))], false).await;
    assert_eq!(set, (0, None));
    let broker = b.running.as_ref().unwrap().broker.clone();
    for i in 0.. {
        let described = describe_configs(a, GROUP_RESOURCE, "g").await;
        let shown = described
            .configs
            .iter()
            .find(|e| e.name == key)
            .and_then(|e| e.value.clone());
        let settings = broker.groups.config().share_partition_settings("g");
        if shown.as_deref() == Some(value) && applied(&settings) {
            break;
        }
        assert!(i < 100, "{key} never applied: {shown:?} {settings:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Offsets of acquired ranges, each with its delivery count.
fn acquired_offsets(p: &share_fetch_response::PartitionData) -> Vec<(i64, i16)> {
    acquired(p)
        .into_iter()
        .flat_map(|(first, last, count)| (first..=last).map(move |o| (o, count)))
        .collect()
}

#[tokio::test]
async fn share_state_survives_a_restart_and_goes_with_its_group() {
    // A snapshot after every update and a prune every 100 ms: the state is rebuilt from a
    // pruned `__share_group_state` log below.
    let pruning = [
        (
            "share.coordinator.snapshot.update.records.per.snapshot",
            "1",
        ),
        ("share.coordinator.state.topic.prune.interval.ms", "100"),
    ];
    let b = TestBroker::start(&pruning).await;
    let mut a = b.client().await;
    assert_eq!(create_topic_with(&mut a, TOPIC, 1, &[]).await, 0);
    let values: Vec<String> = (0..10).map(|i| format!("v{i}")).collect();
    let values: Vec<&[u8]> = values.iter().map(|v| v.as_bytes()).collect();
    assert_eq!(produce_retrying(&mut a, TOPIC, &values).await, (0, 0));
    let tid = topic_id(&b);
    read_from_earliest(&b, &mut a).await;

    // 0-3 accepted, 4-5 released, 6 rejected, 7-9 still held when the broker stops; offset 4
    // is acquired again (max 1 record) after the write.
    let member_a = new_member_id();
    assert_eq!(
        share_heartbeat(&mut a, "g", &member_a, 0).await.error_code,
        0
    );
    let p = only_partition(&share_fetch(&mut a, &member_a, 0, tid, &[], 10).await);
    assert_eq!(acquired(&p), vec![(0, 9, 1)]);
    let acks = [(0, 3, ACCEPT), (4, 5, RELEASE), (6, 6, REJECT)];
    let p = only_partition(&share_fetch(&mut a, &member_a, 1, tid, &acks, 1).await);
    assert_eq!((p.error_code, p.acknowledge_error_code), (0, 0), "{p:?}");
    assert_eq!(acquired(&p), vec![(4, 4, 2)]);
    // Start 4; of 4..10 only 6 is settled: lag 5.
    assert_eq!(share_offsets(&mut a, tid).await, (4, 5));
    drop(a);

    let b = b.restart(&pruning).await;
    let mut c = b.client().await;
    // Before any fetch, from the durable state alone.
    assert_eq!(share_offsets(&mut c, tid).await, (4, 5));
    let member_b = new_member_id();
    assert_eq!(
        share_heartbeat(&mut c, "g", &member_b, 0).await.error_code,
        0
    );
    let p = only_partition(&share_fetch(&mut c, &member_b, 0, tid, &[], 10).await);
    assert_eq!(p.error_code, 0, "{p:?}");
    let got = acquired_offsets(&p);
    // Never the accepted 0-3 or the rejected 6; every other record again, a later delivery.
    let offsets: Vec<i64> = got.iter().map(|(o, _)| *o).collect();
    assert_eq!(offsets, vec![4, 5, 7, 8, 9], "{got:?}");
    assert!(got.iter().all(|(_, count)| *count >= 2), "{got:?}");
    let p = only_partition(&share_fetch(&mut c, &member_b, 1, tid, &[(4, 9, ACCEPT)], 10).await);
    assert_eq!(
        p.acknowledge_error_code, INVALID_RECORD_STATE,
        "6 is not held: {p:?}"
    );
    let acks = [(4, 5, ACCEPT), (7, 9, ACCEPT)];
    let p = only_partition(&share_fetch(&mut c, &member_b, 2, tid, &acks, 10).await);
    assert_eq!((p.error_code, p.acknowledge_error_code), (0, 0), "{p:?}");
    assert_eq!(share_offsets(&mut c, tid).await, (10, 0));
    // The restarted broker's share-group counts: five records, each a redelivery, accepted.
    let m = &b.running.as_ref().unwrap().broker.metrics.share_groups;
    assert_eq!(
        (
            m.records_acquired.get(),
            m.records_redelivered.get(),
            m.records_accepted.get(),
            m.records_rejected.get()
        ),
        (5, 5, 5, 0)
    );

    // The state's records before its last snapshot are pruned; a restart rebuilds the
    // same state from what is left.
    let state_key = strata::replica::share_persister::SharePartitionKey {
        group_id: "g".into(),
        topic_id: tid,
        partition: 0,
    };
    let broker = b.running.as_ref().unwrap().broker.clone();
    let state_partition = broker.share_states.partition_for(&state_key);
    let replica = broker
        .replicas
        .get("__share_group_state", state_partition)
        .expect("the share state partition");
    for i in 0.. {
        if replica.log_start_offset() > 0 {
            break;
        }
        assert!(i < 100, "__share_group_state never pruned");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    drop((broker, replica, c));
    let b = b.restart(&pruning).await;
    let mut c = b.client().await;
    assert_eq!(share_offsets(&mut c, tid).await, (10, 0));

    // Deleting the group deletes its state: the group made again reads from the earliest.
    for member in [&member_a, &member_b] {
        assert_eq!(share_heartbeat(&mut c, "g", member, -1).await.error_code, 0);
    }
    let r = api_call!(
        c,
        delete_groups_request::DeleteGroupsRequest,
        delete_groups_response::DeleteGroupsResponse,
        2,
        delete_groups_request::DeleteGroupsRequest {
            groups_names: vec!["g".into()],
            ..Default::default()
        }
    );
    assert_eq!(r.results[0].error_code, 0, "{r:?}");
    let member_c = new_member_id();
    assert_eq!(
        share_heartbeat(&mut c, "g", &member_c, 0).await.error_code,
        0
    );
    let p = only_partition(&share_fetch(&mut c, &member_c, 0, tid, &[], 10).await);
    assert_eq!(acquired(&p), vec![(0, 9, 1)]);
}

#[tokio::test]
async fn share_consumers_acquire_acknowledge_release_and_leave() {
    let b = TestBroker::start(&[("strata.admin.listeners", "http://127.0.0.1:0")]).await;
    let admin = b.running.as_ref().unwrap().admin_addrs[0];
    let mut a = b.client().await;
    a.set_client_id("share-a");
    assert_eq!(create_topic_with(&mut a, TOPIC, 1, &[]).await, 0);
    let values: Vec<String> = (0..10).map(|i| format!("v{i}")).collect();
    let values: Vec<&[u8]> = values.iter().map(|v| v.as_bytes()).collect();
    // One batch of ten records, offsets 0..=9.
    assert_eq!(produce_retrying(&mut a, TOPIC, &values).await, (0, 0));
    let tid = topic_id(&b);

    // 1. The group reads from the earliest offset.
    read_from_earliest(&b, &mut a).await;

    let member_a = new_member_id();
    let hb = share_heartbeat(&mut a, "g", &member_a, 0).await;
    assert_eq!((hb.error_code, &hb.error_message), (0, &None), "{hb:?}");
    assert_eq!(hb.member_id.as_deref(), Some(member_a.as_str()));
    assert!(hb.member_epoch >= 1, "{hb:?}");
    assert_eq!(hb.heartbeat_interval_ms, 5000);
    let assignment = hb.assignment.expect("an assignment");
    let assigned: Vec<(Uuid, Vec<i32>)> = assignment
        .topic_partitions
        .iter()
        .map(|t| (t.topic_id, t.partitions.clone()))
        .collect();
    assert_eq!(assigned, vec![(tid, vec![0])]);

    // 2. A new session: exactly four records, first delivery, locked for 30 s.
    let r = share_fetch(&mut a, &member_a, 0, tid, &[], 4).await;
    assert_eq!(r.acquisition_lock_timeout_ms, 30_000);
    assert_eq!(r.responses[0].topic_id, tid);
    let p = only_partition(&r);
    assert_eq!(
        (p.partition_index, p.error_code, p.acknowledge_error_code),
        (0, 0, 0)
    );
    assert_eq!(acquired(&p), vec![(0, 3, 1)]);
    assert!(p.records.as_ref().is_some_and(|r| !r.is_empty()), "{p:?}");
    assert_eq!(p.current_leader.leader_id, 1);

    // 3. 0-1 accepted, 2-3 released: the next acquisition starts at 2, delivered again.
    let r = share_fetch(
        &mut a,
        &member_a,
        1,
        tid,
        &[(0, 1, ACCEPT), (2, 3, RELEASE)],
        4,
    )
    .await;
    let p = only_partition(&r);
    assert_eq!((p.error_code, p.acknowledge_error_code), (0, 0), "{p:?}");
    assert_eq!(acquired(&p), vec![(2, 3, 2), (4, 5, 1)]);

    // 4. An offset the member does not hold; the rest is still acquired.
    let r = share_fetch(&mut a, &member_a, 2, tid, &[(9, 9, ACCEPT)], 4).await;
    let p = only_partition(&r);
    assert_eq!(
        (p.error_code, p.acknowledge_error_code),
        (0, INVALID_RECORD_STATE),
        "{p:?}"
    );
    assert_eq!(acquired(&p), vec![(6, 9, 1)]);
    // The session expects epoch 3: 7 is refused, and a member with no session has none.
    let r = share_fetch(&mut a, &member_a, 7, tid, &[], 4).await;
    assert_eq!(r.error_code, INVALID_SHARE_SESSION_EPOCH, "{r:?}");
    assert!(r.responses.is_empty(), "{r:?}");
    let r = share_fetch(&mut a, &new_member_id(), 5, tid, &[], 4).await;
    assert_eq!(r.error_code, SHARE_SESSION_NOT_FOUND, "{r:?}");

    // 5. 0-1 acknowledged: start 2; 2..=9 are all held (none settled), lag 10 - 2 = 8.
    assert_eq!(share_offsets(&mut a, tid).await, (2, 8));
    // The leader's scrape shows the same lag, and the window 2..=9 in flight.
    let m = common::admin::scrape(admin).await;
    let series = |name: &str| {
        common::admin::sample(
            &m,
            &format!("{name}{{group=\"g\",topic=\"{TOPIC}\",partition=\"0\"}}"),
        )
    };
    assert_eq!(series("kafka_sharegroup_lag"), Some(8.0), "{m}");
    assert_eq!(
        series("kafka_server_sharepartitionmetrics_inflightmessagecount"),
        Some(8.0)
    );
    assert_eq!(
        common::admin::sample(&m, "kafka_sharegroup_lag_sum{group=\"g\"}"),
        Some(8.0)
    );
    assert_eq!(
        common::admin::sample(&m, "kafka_server_share_group_metrics_record_acquired_count"),
        Some(12.0),
        "0-3, 2-3 again, 4-9"
    );
    let d = share_describe(&mut a, "g").await;
    assert_eq!((d.error_code, d.group_id.as_str()), (0, "g"), "{d:?}");
    assert_eq!(d.group_state, "Stable");
    assert_eq!(d.assignor_name, "simple");
    assert_eq!(d.members.len(), 1, "{d:?}");
    let m = &d.members[0];
    assert_eq!(m.member_id, member_a);
    assert_eq!(m.client_id, "share-a");
    assert!(m.client_host.contains("127.0.0.1"), "{m:?}");
    assert_eq!(m.member_epoch, hb.member_epoch);
    assert_eq!(m.subscribed_topic_names, vec![TOPIC.to_string()]);
    let described: Vec<(Uuid, String, Vec<i32>)> = m
        .assignment
        .topic_partitions
        .iter()
        .map(|t| (t.topic_id, t.topic_name.clone(), t.partitions.clone()))
        .collect();
    assert_eq!(described, vec![(tid, TOPIC.to_string(), vec![0])]);

    // 6. Closing the session releases 2..=9 to another member, each delivered once more.
    let r = api_call!(
        a,
        share_acknowledge_request::ShareAcknowledgeRequest,
        share_acknowledge_response::ShareAcknowledgeResponse,
        2,
        share_acknowledge_request::ShareAcknowledgeRequest {
            group_id: Some("g".into()),
            member_id: Some(member_a.clone()),
            share_session_epoch: -1,
            ..Default::default()
        }
    );
    assert_eq!((r.error_code, &r.error_message), (0, &None), "{r:?}");
    let mut bc = b.client().await;
    bc.set_client_id("share-b");
    let member_b = new_member_id();
    let hb_b = share_heartbeat(&mut bc, "g", &member_b, 0).await;
    assert_eq!(hb_b.error_code, 0, "{hb_b:?}");
    assert!(hb_b.member_epoch > hb.member_epoch, "{hb_b:?}");
    let r = share_fetch(&mut bc, &member_b, 0, tid, &[], 10).await;
    let p = only_partition(&r);
    assert_eq!(p.error_code, 0, "{p:?}");
    assert_eq!(acquired(&p), vec![(2, 3, 3), (4, 9, 2)]);
    // B accepts them all: the share partition is done with the log up to its end.
    let r = share_fetch(&mut bc, &member_b, 1, tid, &[(2, 9, ACCEPT)], 10).await;
    let p = only_partition(&r);
    assert_eq!((p.error_code, p.acknowledge_error_code), (0, 0), "{p:?}");
    assert_eq!(acquired(&p), vec![]);
    assert_eq!(share_offsets(&mut a, tid).await, (10, 0));

    // 7. Both leave: the group is listed Empty, then deleted.
    for (c, member) in [(&mut a, &member_a), (&mut bc, &member_b)] {
        let r = share_heartbeat(c, "g", member, -1).await;
        assert_eq!((r.error_code, r.member_epoch), (0, -1), "{r:?}");
    }
    assert_eq!(
        list_share_groups(&mut a).await,
        vec![("g".into(), "Empty".into(), "share".into())]
    );
    let d = share_describe(&mut a, "g").await;
    assert_eq!(
        (d.error_code, d.group_state.as_str(), d.members.len()),
        (0, "Empty", 0)
    );
    let r = api_call!(
        a,
        delete_groups_request::DeleteGroupsRequest,
        delete_groups_response::DeleteGroupsResponse,
        2,
        delete_groups_request::DeleteGroupsRequest {
            groups_names: vec!["g".into()],
            ..Default::default()
        }
    );
    let results: Vec<(String, i16)> = r
        .results
        .into_iter()
        .map(|r| (r.group_id, r.error_code))
        .collect();
    assert_eq!(results, vec![("g".to_string(), 0)]);
    assert_eq!(list_share_groups(&mut a).await, vec![]);
    assert_eq!(
        share_describe(&mut a, "g").await.error_code,
        GROUP_ID_NOT_FOUND
    );
}

/// A member parked on a share partition whose in-flight window is full
/// (`share.partition.max.record.locks`) gets records as soon as another member's accept moves
/// the start offset, not at the end of its wait: otherwise the member that acknowledged takes
/// the freed room on its next fetch and the parked ones starve (the uneven spread of the
/// 8-consumer benchmark).
#[tokio::test]
async fn an_accept_that_frees_the_window_wakes_a_parked_member() {
    let b = TestBroker::start(&[]).await;
    let mut a = b.client().await;
    assert_eq!(create_topic_with(&mut a, TOPIC, 1, &[]).await, 0);
    let values: Vec<String> = (0..150).map(|i| format!("v{i}")).collect();
    let values: Vec<&[u8]> = values.iter().map(|v| v.as_bytes()).collect();
    assert_eq!(produce_retrying(&mut a, TOPIC, &values).await, (0, 0));
    let tid = topic_id(&b);
    read_from_earliest(&b, &mut a).await;
    set_share_config(&b, &mut a, "share.partition.max.record.locks", "100", |s| {
        s.partition_max_record_locks == 100
    })
    .await;

    let member_a = new_member_id();
    assert_eq!(
        share_heartbeat(&mut a, "g", &member_a, 0).await.error_code,
        0
    );
    // A fills the window: 0..=99.
    let r = share_fetch(&mut a, &member_a, 0, tid, &[], 100).await;
    assert_eq!(acquired(&only_partition(&r)), vec![(0, 99, 1)]);

    // B joins and parks: nothing is free, its fetch may wait 10 s.
    let mut bc = b.client().await;
    let member_b = new_member_id();
    assert_eq!(
        share_heartbeat(&mut bc, "g", &member_b, 0).await.error_code,
        0
    );
    let parked = {
        let member_b = member_b.clone();
        tokio::spawn(async move {
            share_fetch_waiting(&mut bc, &member_b, 0, tid, &[], 100, 10_000).await
        })
    };
    tokio::time::sleep(Duration::from_millis(100)).await;
    // A accepts everything it holds: the start offset moves to 100, and B gets the rest.
    let r = {
        use share_acknowledge_request::*;
        api_call!(
            a,
            share_acknowledge_request::ShareAcknowledgeRequest,
            share_acknowledge_response::ShareAcknowledgeResponse,
            2,
            ShareAcknowledgeRequest {
                group_id: Some("g".into()),
                member_id: Some(member_a.clone()),
                share_session_epoch: 1,
                topics: vec![AcknowledgeTopic {
                    topic_id: tid,
                    partitions: vec![AcknowledgePartition {
                        partition_index: 0,
                        acknowledgement_batches: vec![AcknowledgementBatch {
                            first_offset: 0,
                            last_offset: 99,
                            acknowledge_types: vec![ACCEPT],
                            ..Default::default()
                        }],
                        ..Default::default()
                    }],
                    ..Default::default()
                }],
                ..Default::default()
            }
        )
    };
    assert_eq!(r.error_code, 0, "{r:?}");
    assert_eq!(r.responses[0].partitions[0].error_code, 0, "{r:?}");
    let acked = std::time::Instant::now();
    let r = parked.await.unwrap();
    assert_eq!(acquired(&only_partition(&r)), vec![(100, 149, 1)]);
    // Woken by the accept, not at the lock-expiry check or the end of its wait (10 s).
    assert!(
        acked.elapsed() < Duration::from_secs(5),
        "{:?}",
        acked.elapsed()
    );
}

#[tokio::test]
async fn a_share_groups_id_is_refused_to_classic_and_consumer_protocol_members() {
    let b = TestBroker::start(&[]).await;
    let mut c = b.client().await;
    assert_eq!(create_topic_with(&mut c, TOPIC, 1, &[]).await, 0);
    let hb = share_heartbeat(&mut c, "sg", &new_member_id(), 0).await;
    assert_eq!(hb.error_code, 0, "{hb:?}");

    let r = api_call!(
        c,
        join_group_request::JoinGroupRequest,
        join_group_response::JoinGroupResponse,
        9,
        join_group_request::JoinGroupRequest {
            group_id: "sg".into(),
            session_timeout_ms: 30_000,
            rebalance_timeout_ms: 30_000,
            member_id: String::new(),
            protocol_type: "consumer".into(),
            protocols: vec![join_group_request::JoinGroupRequestProtocol {
                name: "range".into(),
                metadata: bytes::Bytes::from_static(&[0, 0]),
                ..Default::default()
            }],
            ..Default::default()
        }
    );
    assert_eq!(r.error_code, INCONSISTENT_GROUP_PROTOCOL, "{r:?}");

    let r = api_call!(
        c,
        consumer_group_heartbeat_request::ConsumerGroupHeartbeatRequest,
        consumer_group_heartbeat_response::ConsumerGroupHeartbeatResponse,
        0,
        consumer_group_heartbeat_request::ConsumerGroupHeartbeatRequest {
            group_id: "sg".into(),
            member_id: new_member_id(),
            member_epoch: 0,
            rebalance_timeout_ms: 30_000,
            subscribed_topic_names: Some(vec![TOPIC.into()]),
            topic_partitions: Some(vec![]),
            ..Default::default()
        }
    );
    assert_eq!(r.error_code, GROUP_ID_NOT_FOUND, "{r:?}");
    // The share group is as it was.
    let d = share_describe(&mut c, "sg").await;
    assert_eq!(
        (d.error_code, d.group_state.as_str(), d.members.len()),
        (0, "Stable", 1)
    );
}
