//! JoinGroup, SyncGroup and Heartbeat: the join/sync dance and its error paths.
use super::*;
use crate::coordinator::group::ClassicGroupState;
use crate::coordinator::runtime::CoordinatorLogError;

fn state(h: &Harness) -> ClassicGroupState {
    h.shard.group(GROUP).expect("group exists").state
}

#[test]
fn two_members_join_and_sync_with_member_id_required() {
    let mut h = Harness::new();
    let (ids, generation) = h.stable_group(2);
    assert_eq!(generation, 1);
    assert_eq!(state(&h), ClassicGroupState::Stable);
    let d = h.shard.describe_group(GROUP, 5);
    assert_eq!(d.group_state, "Stable");
    assert_eq!(d.protocol_type, "consumer");
    assert_eq!(d.protocol_data, "range");
    assert_eq!(d.members.len(), 2);
    let leader = d.members.iter().find(|m| m.member_id == ids[0]).unwrap();
    assert_eq!(leader.member_assignment.as_ref(), &[0, 0, 0]);
    assert_eq!(leader.member_metadata, subscription(&["t"]));
    assert_eq!(leader.client_id, "client");
    assert_eq!(h.heartbeat(&ids[1], generation), 0);
    h.assert_replay_matches();
}

#[test]
fn three_members_leader_gets_everyones_metadata() {
    let mut h = Harness::new();
    let mut pending = Vec::new();
    for _ in 0..3 {
        pending.push(h.join_two_step());
    }
    h.advance(200);
    let rs: Vec<_> = pending
        .iter()
        .map(|(_, id)| h.join_resp(*id).unwrap())
        .collect();
    let leader = &rs[0].leader;
    for r in &rs {
        assert_eq!(r.error_code, 0);
        assert_eq!(r.generation_id, 1);
        assert_eq!(r.protocol_name.as_deref(), Some("range"));
        assert_eq!(r.protocol_type.as_deref(), Some("consumer"));
        assert_eq!(&r.leader, leader);
        if &r.member_id == leader {
            assert_eq!(r.members.len(), 3);
            assert!(r.members.iter().all(|m| m.metadata == subscription(&["t"])));
        } else {
            assert!(r.members.is_empty());
        }
    }
    // Followers wait for the leader.
    let followers: Vec<_> = rs
        .iter()
        .filter(|r| &r.member_id != leader)
        .map(|r| r.member_id.clone())
        .collect();
    let s1 = h.sync(&followers[0], 1, &[]);
    assert!(h.sync_resp(s1).is_none());
    assert_eq!(state(&h), ClassicGroupState::CompletingRebalance);
    assert_eq!(
        h.heartbeat(&followers[0], 1),
        0,
        "heartbeats are fine while completing"
    );
    let s0 = h.sync(
        leader,
        1,
        &[(&followers[0], b"a"), (&followers[1], b"b"), (leader, b"")],
    );
    assert_eq!(h.sync_resp(s1).unwrap().assignment.as_ref(), b"a");
    assert_eq!(h.sync_resp(s0).unwrap().assignment.as_ref(), b"");
    // A follower syncing after the group is Stable gets its assignment at once.
    let s2 = h.sync(&followers[1], 1, &[]);
    let r2 = h.sync_resp(s2).unwrap();
    assert_eq!(r2.assignment.as_ref(), b"b");
    assert_eq!(r2.protocol_name.as_deref(), Some("range"));
    h.assert_replay_matches();
}

#[test]
fn old_versions_join_without_member_id_required() {
    let mut h = Harness::new();
    let id = h.join(0, "", None);
    assert!(
        h.join_resp(id).is_none(),
        "v0-3 members are added at once and wait"
    );
    h.advance(200);
    let r = h.join_resp(id).unwrap();
    assert_eq!(r.error_code, 0);
    assert_eq!(r.leader, r.member_id);
    assert_eq!(r.protocol_name.as_deref(), Some("range"));
    let s = h.sync_full(
        0,
        &r.member_id,
        None,
        r.generation_id,
        &[(&r.member_id, b"x")],
        None,
    );
    assert_eq!(h.sync_resp(s).unwrap().assignment.as_ref(), b"x");
}

#[test]
fn join_errors() {
    let mut h = Harness::new();
    let p = [("range", subscription(&["t"]))];
    let id = h.join_full(5, "", "", None, "consumer", &p, SESSION);
    assert_eq!(
        h.join_resp(id).unwrap().error_code,
        code(ErrorCode::INVALID_GROUP_ID)
    );
    for bad in [5_999, 1_800_001] {
        let id = h.join_full(5, GROUP, "", None, "consumer", &p, bad);
        assert_eq!(
            h.join_resp(id).unwrap().error_code,
            code(ErrorCode::INVALID_SESSION_TIMEOUT)
        );
    }
    let id = h.join(5, "nobody", None);
    assert_eq!(
        h.join_resp(id).unwrap().error_code,
        code(ErrorCode::UNKNOWN_MEMBER_ID),
        "unknown group"
    );
    let id = h.join_full(5, GROUP, "", None, "consumer", &[], SESSION);
    assert_eq!(
        h.join_resp(id).unwrap().error_code,
        code(ErrorCode::INCONSISTENT_GROUP_PROTOCOL)
    );
    let (ids, _) = h.stable_group(1);
    let id = h.join_full(5, GROUP, "", None, "connect", &p, SESSION);
    assert_eq!(
        h.join_resp(id).unwrap().error_code,
        code(ErrorCode::INCONSISTENT_GROUP_PROTOCOL)
    );
    let id = h.join_full(
        5,
        GROUP,
        "",
        None,
        "consumer",
        &[("sticky", Bytes::new())],
        SESSION,
    );
    assert_eq!(
        h.join_resp(id).unwrap().error_code,
        code(ErrorCode::INCONSISTENT_GROUP_PROTOCOL)
    );
    let id = h.join(5, "nobody", None);
    assert_eq!(
        h.join_resp(id).unwrap().error_code,
        code(ErrorCode::UNKNOWN_MEMBER_ID),
        "unknown member"
    );
    // group.max.size = 1: a second member is refused, the first is untouched.
    h.shard.config = std::sync::Arc::new(GroupConfig {
        group_max_size: 1,
        ..(*h.config).clone()
    });
    let id = h.join(3, "", None);
    let r = h.join_resp(id).unwrap();
    assert_eq!(r.error_code, code(ErrorCode::GROUP_MAX_SIZE_REACHED));
    assert_eq!(state(&h), ClassicGroupState::Stable);
    assert_eq!(h.heartbeat(&ids[0], 1), 0);
    // The log is unavailable when a new group must be written.
    h.log.fail_with(Some(CoordinatorLogError::NotAvailable));
    let id = h.join_full(5, "other", "", None, "consumer", &p, SESSION);
    assert_eq!(
        h.join_resp(id).unwrap().error_code,
        code(ErrorCode::COORDINATOR_NOT_AVAILABLE)
    );
    h.log.fail_with(Some(CoordinatorLogError::NotLeader));
    let id = h.join_full(5, "other", "", None, "consumer", &p, SESSION);
    assert_eq!(
        h.join_resp(id).unwrap().error_code,
        code(ErrorCode::NOT_COORDINATOR)
    );
    h.log.fail_with(None);
    // Errors before v7 still carry a non-null protocol name.
    let id = h.join_full(6, "", "", None, "consumer", &p, SESSION);
    assert_eq!(h.join_resp(id).unwrap().protocol_name.as_deref(), Some(""));
}

#[test]
fn initial_rebalance_delay_waits_for_more_members() {
    let mut h = Harness::with_config(GroupConfig {
        group_initial_rebalance_delay_ms: 3_000,
        ..Default::default()
    });
    let (_a, ja) = h.join_two_step();
    h.advance(2_000);
    let (_b, jb) = h.join_two_step();
    h.advance(1_000);
    // The delay ran out but a member arrived meanwhile: wait one more delay.
    assert!(h.join_resp(ja).is_none());
    h.advance(2_900);
    assert!(h.join_resp(ja).is_none());
    h.advance(100);
    let ra = h.join_resp(ja).unwrap();
    let rb = h.join_resp(jb).unwrap();
    assert_eq!((ra.generation_id, rb.generation_id), (1, 1));
    assert_eq!(state(&h), ClassicGroupState::CompletingRebalance);
}

#[test]
fn protocol_with_most_votes_wins() {
    let mut h = Harness::new();
    fn both(first: &'static str, second: &'static str) -> [(&'static str, Bytes); 2] {
        [
            (first, Bytes::from_static(b"1")),
            (second, Bytes::from_static(b"2")),
        ]
    }
    let a = h.join_full(
        3,
        GROUP,
        "",
        None,
        "consumer",
        &both("range", "roundrobin"),
        SESSION,
    );
    let b = h.join_full(
        3,
        GROUP,
        "",
        None,
        "consumer",
        &both("roundrobin", "range"),
        SESSION,
    );
    let c = h.join_full(
        3,
        GROUP,
        "",
        None,
        "consumer",
        &both("roundrobin", "sticky"),
        SESSION,
    );
    h.advance(200);
    for id in [a, b, c] {
        assert_eq!(
            h.join_resp(id).unwrap().protocol_name.as_deref(),
            Some("roundrobin")
        );
    }
}

#[test]
fn sync_and_heartbeat_errors() {
    let mut h = Harness::new();
    let s = h.sync("m", 1, &[]);
    assert_eq!(
        h.sync_resp(s).unwrap().error_code,
        code(ErrorCode::UNKNOWN_MEMBER_ID),
        "unknown group"
    );
    assert_eq!(h.heartbeat("m", 1), code(ErrorCode::UNKNOWN_MEMBER_ID));
    assert_eq!(
        h.heartbeat_full(4, "", "m", None, 1),
        code(ErrorCode::INVALID_GROUP_ID)
    );
    let (ids, generation) = h.stable_group(2);
    let s = h.sync(&ids[1], generation + 1, &[]);
    assert_eq!(
        h.sync_resp(s).unwrap().error_code,
        code(ErrorCode::ILLEGAL_GENERATION)
    );
    let s = h.sync("nobody", generation, &[]);
    assert_eq!(
        h.sync_resp(s).unwrap().error_code,
        code(ErrorCode::UNKNOWN_MEMBER_ID)
    );
    let s = h.sync_full(
        5,
        &ids[1],
        None,
        generation,
        &[],
        Some(("consumer", "roundrobin")),
    );
    assert_eq!(
        h.sync_resp(s).unwrap().error_code,
        code(ErrorCode::INCONSISTENT_GROUP_PROTOCOL)
    );
    let s = h.sync_full(
        5,
        &ids[1],
        None,
        generation,
        &[],
        Some(("connect", "range")),
    );
    assert_eq!(
        h.sync_resp(s).unwrap().error_code,
        code(ErrorCode::INCONSISTENT_GROUP_PROTOCOL)
    );
    let s = h.sync_full(4, &ids[1], None, generation, &[], None);
    assert_eq!(
        h.sync_resp(s).unwrap().error_code,
        0,
        "v4 sends no protocol"
    );
    assert_eq!(
        h.heartbeat(&ids[1], generation + 1),
        code(ErrorCode::ILLEGAL_GENERATION)
    );
    assert_eq!(
        h.heartbeat("nobody", generation),
        code(ErrorCode::UNKNOWN_MEMBER_ID)
    );
    // The leader rejoins: the group rebalances and the others are told to rejoin.
    let j = h.join(5, &ids[0], None);
    assert!(h.join_resp(j).is_none());
    assert_eq!(state(&h), ClassicGroupState::PreparingRebalance);
    assert_eq!(
        h.heartbeat(&ids[1], generation),
        code(ErrorCode::REBALANCE_IN_PROGRESS)
    );
    let s = h.sync(&ids[1], generation, &[]);
    assert_eq!(
        h.sync_resp(s).unwrap().error_code,
        code(ErrorCode::REBALANCE_IN_PROGRESS)
    );
    let s = h.sync_full(5, "", None, 1, &[], None);
    assert_eq!(
        h.sync_resp(s).unwrap().error_code,
        code(ErrorCode::UNKNOWN_MEMBER_ID)
    );
    // Invalid group id on sync.
    let req = crate::protocol::messages::sync_group_request::SyncGroupRequest::default();
    let now = h.now();
    h.shard.sync_group(
        now,
        &RequestContext::new(5, "c", "h"),
        &req,
        ResponseId(999_999),
    );
    match h.shard.take_completions().pop() {
        Some(Completion::Sync { response, .. }) => {
            assert_eq!(response.error_code, code(ErrorCode::INVALID_GROUP_ID))
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn follower_rejoin_with_same_metadata_does_not_rebalance() {
    let mut h = Harness::new();
    let (ids, generation) = h.stable_group(2);
    let j = h.join(5, &ids[1], None);
    let r = h.join_resp(j).expect("answered at once");
    assert_eq!((r.error_code, r.generation_id), (0, generation));
    assert!(r.members.is_empty());
    assert_eq!(state(&h), ClassicGroupState::Stable);
    // Changed metadata does rebalance.
    let j = h.join_full(
        5,
        GROUP,
        &ids[1],
        None,
        "consumer",
        &[("range", subscription(&["t", "u"]))],
        SESSION,
    );
    assert!(h.join_resp(j).is_none());
    assert_eq!(state(&h), ClassicGroupState::PreparingRebalance);
    let j0 = h.join(5, &ids[0], None);
    let r0 = h
        .join_resp(j0)
        .expect("everyone rejoined: completes at once");
    assert_eq!(r0.generation_id, generation + 1);
    assert_eq!(h.join_resp(j).unwrap().generation_id, generation + 1);
    // In CompletingRebalance a member that lost its response gets it again.
    let again = h.join_full(
        5,
        GROUP,
        &ids[1],
        None,
        "consumer",
        &[("range", subscription(&["t", "u"]))],
        SESSION,
    );
    let r = h.join_resp(again).unwrap();
    assert_eq!((r.error_code, r.generation_id), (0, generation + 1));
    assert_eq!(state(&h), ClassicGroupState::CompletingRebalance);
}

#[test]
fn concurrent_joins_during_rebalance() {
    let mut h = Harness::new();
    let (ids, g1) = h.stable_group(2);
    // A new member joining a Stable group triggers a rebalance (this is also how cooperative
    // rebalancing starts: the broker only sees joins).
    let (c, jc) = h.join_two_step();
    assert_eq!(state(&h), ClassicGroupState::PreparingRebalance);
    assert_eq!(
        h.heartbeat(&ids[0], g1),
        code(ErrorCode::REBALANCE_IN_PROGRESS)
    );
    let ja = h.join(5, &ids[0], None);
    let jb = h.join(5, &ids[1], None);
    let (ra, rb, rc) = (
        h.join_resp(ja).unwrap(),
        h.join_resp(jb).unwrap(),
        h.join_resp(jc).unwrap(),
    );
    let g2 = ra.generation_id;
    assert_eq!(
        (g2, rb.generation_id, rc.generation_id),
        (g1 + 1, g1 + 1, g1 + 1)
    );
    assert_eq!(state(&h), ClassicGroupState::CompletingRebalance);
    // A follower waits for its assignment...
    let follower = if ra.leader == ids[1] {
        &ids[0]
    } else {
        &ids[1]
    };
    let sf = h.sync(follower, g2, &[]);
    assert!(h.sync_resp(sf).is_none());
    // ...when yet another member joins: the waiting sync is told to rejoin.
    let (d, jd) = h.join_two_step();
    assert_eq!(state(&h), ClassicGroupState::PreparingRebalance);
    assert_eq!(
        h.sync_resp(sf).unwrap().error_code,
        code(ErrorCode::REBALANCE_IN_PROGRESS)
    );
    // The leader's late sync for the old generation is refused too.
    let sl = h.sync(&ra.leader, g2, &[(&ra.leader, b"x")]);
    assert_eq!(
        h.sync_resp(sl).unwrap().error_code,
        code(ErrorCode::REBALANCE_IN_PROGRESS)
    );
    let mut joins = vec![jd];
    for m in [&ids[0], &ids[1], &c] {
        joins.push(h.join(5, m, None));
    }
    let g3 = joins
        .iter()
        .map(|j| h.join_resp(*j).unwrap().generation_id)
        .max()
        .unwrap();
    assert_eq!(g3, g2 + 1);
    // Now the old generation is simply illegal.
    let s = h.sync(&d, g2, &[]);
    assert_eq!(
        h.sync_resp(s).unwrap().error_code,
        code(ErrorCode::ILLEGAL_GENERATION)
    );
    assert_eq!(h.shard.group(GROUP).unwrap().members.len(), 4);
}
