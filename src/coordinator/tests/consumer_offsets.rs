//! KIP-848 consumer groups beyond membership: offset commits checked against member epochs
//! (plain and transactional), admin views and deletion, protocol changes of empty groups,
//! regex subscriptions, and a reload from the log giving the same state.
use super::consumer::*;
use super::{code, Harness};
use crate::coordinator::consumer::{Assignment, TopicsView};
use crate::coordinator::service::RequestContext;
use crate::error::ErrorCode;
use crate::protocol::messages::consumer_group_heartbeat_request::ConsumerGroupHeartbeatRequest;
use crate::protocol::messages::offset_commit_request::{
    OffsetCommitRequest, OffsetCommitRequestPartition, OffsetCommitRequestTopic,
};

fn commit(h: &mut Harness, version: i16, member: &str, epoch: i32) -> i16 {
    let req = OffsetCommitRequest {
        group_id: G.to_string(),
        generation_id_or_member_epoch: epoch,
        member_id: member.to_string(),
        topics: vec![OffsetCommitRequestTopic {
            name: "foo".into(),
            partitions: vec![OffsetCommitRequestPartition {
                partition_index: 0,
                committed_offset: 5,
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    };
    let ctx = RequestContext::new(version, "c", "/h");
    let now = h.now();
    h.shard.offset_commit(now, &ctx, &req).topics[0].partitions[0].error_code
}

#[test]
fn offset_commit_checks_member_epochs() {
    let mut h = Harness::new();
    let view = topics(2, 0);
    let r = send(&mut h, Hb::join("m1", &["foo"]), &view);
    let e = r.member_epoch;
    assert_eq!(commit(&mut h, 9, "m1", e), 0);
    assert_eq!(
        commit(&mut h, 9, "m1", e + 1),
        code(ErrorCode::STALE_MEMBER_EPOCH)
    );
    assert_eq!(
        commit(&mut h, 9, "zz", e),
        code(ErrorCode::UNKNOWN_MEMBER_ID)
    );
    assert_eq!(
        commit(&mut h, 8, "m1", e),
        code(ErrorCode::UNSUPPORTED_VERSION)
    );
    // Admin commits (epoch -1) only while the group is empty.
    assert_eq!(
        commit(&mut h, 9, "", -1),
        code(ErrorCode::UNKNOWN_MEMBER_ID)
    );
    assert_eq!(member_epoch(&h, "m1"), e);
    let g = &h.shard.consumer_groups[G];
    assert!(g.validate_offset_fetch(Some("m1"), e).is_ok());
    assert!(g.validate_offset_fetch(None, -1).is_ok());
    assert!(g.validate_offset_fetch(Some("m1"), e + 1).is_err());
    h.assert_replay_matches();
}

/// TxnOffsetCommit from a KIP-848 member (franz-go's and the Java client's transactional
/// consume-transform-produce): the generation is the member epoch; a stale one is
/// ILLEGAL_GENERATION, as Kafka's `validateTransactionalOffsetCommit` answers.
#[test]
fn txn_offset_commit_checks_member_epochs() {
    use crate::protocol::messages::txn_offset_commit_request::*;
    let mut h = Harness::new();
    let view = topics(2, 0);
    let e = send(&mut h, Hb::join("m1", &["foo"]), &view).member_epoch;
    let txn_commit = |h: &mut Harness, member: &str, epoch: i32| {
        let req = TxnOffsetCommitRequest {
            transactional_id: "tx".into(),
            group_id: G.to_string(),
            producer_id: 7,
            producer_epoch: 0,
            generation_id: epoch,
            member_id: member.to_string(),
            topics: vec![TxnOffsetCommitRequestTopic {
                name: "foo".into(),
                partitions: vec![TxnOffsetCommitRequestPartition {
                    partition_index: 0,
                    committed_offset: 5,
                    ..Default::default()
                }],
                ..Default::default()
            }],
            ..Default::default()
        };
        let ctx = RequestContext::new(4, "c", "/h");
        let now = h.now();
        h.shard.txn_offset_commit(now, &ctx, &req).topics[0].partitions[0].error_code
    };
    assert_eq!(txn_commit(&mut h, "m1", e), 0);
    assert_eq!(
        txn_commit(&mut h, "m1", e + 1),
        code(ErrorCode::ILLEGAL_GENERATION)
    );
    assert_eq!(
        txn_commit(&mut h, "zz", e),
        code(ErrorCode::UNKNOWN_MEMBER_ID)
    );
}

#[test]
fn admin_views_and_deletion() {
    let mut h = Harness::new();
    let view = topics(2, 0);
    let r = send(&mut h, Hb::join("m1", &["foo"]), &view);
    // ListGroups: type and state filters.
    let all = h.shard.list_groups(&[], &[]);
    assert_eq!(all.len(), 1);
    assert_eq!(all[0].group_type, "consumer");
    assert_eq!(all[0].protocol_type, "consumer");
    assert_eq!(all[0].group_state, "Stable");
    assert!(h.shard.list_groups(&[], &["classic".into()]).is_empty());
    assert_eq!(
        h.shard
            .list_groups(&["stable".into()], &["Consumer".into()])
            .len(),
        1
    );
    // ConsumerGroupDescribe, and DescribeGroups v0-5 (Dead, as Kafka 4 below v6).
    let d = h.shard.consumer_group_describe(G, &view);
    assert_eq!(d.error_code, 0);
    assert_eq!(d.group_state, "Stable");
    assert_eq!(d.assignor_name, "uniform");
    assert_eq!(d.members.len(), 1);
    assert_eq!(
        d.members[0].assignment.topic_partitions[0].topic_name,
        "foo"
    );
    assert_eq!(d.members[0].member_type, 1);
    assert_eq!(h.shard.describe_group(G, 5).group_state, "Dead");
    let d = h.shard.describe_group(G, 6);
    assert_eq!(
        (d.error_code, d.error_message),
        (
            code(ErrorCode::GROUP_ID_NOT_FOUND),
            Some(format!("Group {G} is not a classic group."))
        )
    );
    assert_eq!(
        h.shard.consumer_group_describe("nope", &view).error_code,
        code(ErrorCode::GROUP_ID_NOT_FOUND)
    );
    // A classic JoinGroup cannot take over a non-empty consumer group.
    let id = h.join_full(
        9,
        G,
        "",
        None,
        "consumer",
        &[("range", super::subscription(&["foo"]))],
        super::SESSION,
    );
    assert_eq!(
        h.join_resp(id).unwrap().error_code,
        code(ErrorCode::GROUP_ID_NOT_FOUND)
    );
    // Non-empty groups cannot be deleted; empty ones go with their offsets.
    assert_eq!(commit(&mut h, 9, "m1", r.member_epoch), 0);
    assert_eq!(
        h.shard.delete_group(G),
        Err(crate::coordinator::CoordinatorError::NonEmptyGroup)
    );
    send(
        &mut h,
        Hb {
            epoch: -1,
            ..Hb::beat("m1", r.member_epoch, Assignment::new())
        },
        &view,
    );
    assert_eq!(h.shard.list_groups(&[], &[])[0].group_state, "Empty");
    assert_eq!(h.shard.delete_group(G), Ok(()));
    assert!(h.shard.consumer_groups.is_empty());
    assert!(h.shard.offsets(G).is_none());
    h.assert_replay_matches();
}

#[test]
fn empty_groups_change_protocol() {
    let mut h = Harness::new();
    let view = topics(2, 0);
    // Offsets committed by an admin make a simple classic group; a consumer takes it over.
    assert_eq!(commit(&mut h, 9, "", -1), 0);
    assert!(h.shard.groups.contains_key(G));
    let r = send(&mut h, Hb::join("m1", &["foo"]), &view);
    assert_eq!(r.error_code, 0);
    assert!(!h.shard.groups.contains_key(G));
    assert_eq!(h.shard.offsets(G).map(|o| o.len()), Some(1));
    // Once empty, a classic member replaces the consumer group.
    send(
        &mut h,
        Hb {
            epoch: -1,
            ..Hb::beat("m1", r.member_epoch, Assignment::new())
        },
        &view,
    );
    let id = h.join_full(
        9,
        G,
        "",
        None,
        "consumer",
        &[("range", super::subscription(&["foo"]))],
        super::SESSION,
    );
    assert_eq!(
        h.join_resp(id).unwrap().error_code,
        code(ErrorCode::MEMBER_ID_REQUIRED)
    );
    assert!(!h.shard.consumer_groups.contains_key(G));
    h.assert_replay_matches();
}

#[test]
fn regex_subscriptions_resolve_against_topics() {
    let mut h = Harness::new();
    let view = topics(2, 3);
    let req = ConsumerGroupHeartbeatRequest {
        group_id: G.to_string(),
        member_id: "m1".into(),
        member_epoch: 0,
        rebalance_timeout_ms: 30_000,
        subscribed_topic_regex: Some("b.*".into()),
        topic_partitions: Some(vec![]),
        ..Default::default()
    };
    let ctx = RequestContext::new(1, "client", "/127.0.0.1");
    let r = h.shard.consumer_group_heartbeat(h.now(), &ctx, &req, &view);
    assert_eq!(r.error_code, 0);
    let a = assigned(&r);
    assert_eq!(a.keys().copied().collect::<Vec<_>>(), vec![BAR]);
    // An empty expression next to topic names is "no regex" (librdkafka sends one).
    let names = ConsumerGroupHeartbeatRequest {
        member_id: "m3".into(),
        subscribed_topic_regex: Some(String::new()),
        subscribed_topic_names: Some(vec!["foo".into()]),
        ..req.clone()
    };
    let r = h
        .shard
        .consumer_group_heartbeat(h.now(), &ctx, &names, &view);
    assert_eq!(r.error_code, 0);
    let bad = ConsumerGroupHeartbeatRequest {
        subscribed_topic_regex: Some("(".into()),
        member_id: "m2".into(),
        ..req
    };
    let r = h.shard.consumer_group_heartbeat(h.now(), &ctx, &bad, &view);
    assert_eq!(r.error_code, code(ErrorCode::INVALID_REGULAR_EXPRESSION));
}

#[test]
fn regex_subscriptions_match_internal_topics() {
    // As Kafka's broker-side resolution (franz-go's Test848RegexBrokerResolves): a regex that
    // matches an internal topic subscribes to it; only the pattern decides.
    let view = TopicsView::new([
        ("foo".to_string(), FOO, 1),
        ("__consumer_offsets".to_string(), BAR, 50),
    ]);
    let m = crate::coordinator::consumer::ConsumerGroupMember {
        subscribed_topic_regex: Some("__consumer_offsets|fo.*".into()),
        ..Default::default()
    };
    let names = crate::coordinator::consumer::member_topic_names(&m, &view);
    assert_eq!(
        names.into_iter().collect::<Vec<_>>(),
        vec!["__consumer_offsets".to_string(), "foo".to_string()]
    );
}

#[test]
fn load_rebuilds_state_and_restarts_sessions() {
    let mut h = Harness::new();
    let view = topics(4, 2);
    for m in ["m1", "m2", "m3"] {
        send(&mut h, Hb::join(m, &["foo", "bar"]), &view);
    }
    settle(&mut h, &view, &["m1", "m2", "m3"]);
    send(
        &mut h,
        Hb {
            epoch: -1,
            ..Hb::beat("m2", 0, Assignment::new())
        },
        &view,
    );
    h.assert_replay_matches();
    // Every record written decodes as a consumer group record or an offset.
    for r in h.log.records(0) {
        assert!(!matches!(
            crate::coordinator::records::decode(&r).unwrap(),
            crate::coordinator::records::GroupRecord::Other { .. }
        ));
    }
    let mut rebuilt =
        crate::coordinator::shard::GroupCoordinatorShard::new(0, h.config.clone(), h.log.clone());
    rebuilt.load(h.log.records(0), h.now());
    let g = &rebuilt.consumer_groups[G];
    assert_eq!(g.timers.len(), 2);
    assert!(g.timers.values().all(|t| t.session_deadline_ms.is_some()));
    // Silence on the rebuilt shard expires both members; the empty group, which has no
    // offsets, is then deleted by the cleanup.
    rebuilt.tick(h.now() + 46_000);
    assert!(rebuilt.consumer_groups.get(G).is_none());
}
