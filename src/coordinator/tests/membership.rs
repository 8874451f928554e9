//! Leaves, expirations, timeouts and static membership.
use super::*;
use crate::coordinator::group::ClassicGroupState;
use crate::coordinator::runtime::CoordinatorLogError;

fn state(h: &Harness) -> ClassicGroupState {
    h.shard.group(GROUP).expect("group exists").state
}

#[test]
fn leave_v0_triggers_rebalance_and_last_leave_empties_the_group() {
    let mut h = Harness::new();
    let (ids, g1) = h.stable_group(2);
    let r = h.leave(0, &[(&ids[1], None)]);
    assert_eq!(r.error_code, 0);
    assert_eq!(state(&h), ClassicGroupState::PreparingRebalance);
    let j = h.join(5, &ids[0], None);
    let r = h.join_resp(j).expect("the only member rejoined");
    assert_eq!((r.generation_id, r.members.len()), (g1 + 1, 1));
    let r = h.leave(0, &[(&ids[1], None)]);
    assert_eq!(r.error_code, code(ErrorCode::UNKNOWN_MEMBER_ID));
    let s = h.sync(&ids[0], g1 + 1, &[(&ids[0], b"all")]);
    assert_eq!(h.sync_resp(s).unwrap().assignment.as_ref(), b"all");
    let r = h.leave(1, &[(&ids[0], None)]);
    assert_eq!(r.error_code, 0);
    assert_eq!(state(&h), ClassicGroupState::Empty);
    let g = h.shard.group(GROUP).unwrap();
    assert_eq!(g.generation_id, g1 + 2);
    assert!(g.members.is_empty());
    assert_eq!(h.shard.describe_group(GROUP, 5).group_state, "Empty");
    h.assert_replay_matches();
}

#[test]
fn batch_leave_reports_each_member() {
    let mut h = Harness::new();
    let a = h.join_full(
        5,
        GROUP,
        "",
        Some("i-a"),
        "consumer",
        &[("range", subscription(&["t"]))],
        SESSION,
    );
    let b = h.join_full(
        5,
        GROUP,
        "",
        Some("i-b"),
        "consumer",
        &[("range", subscription(&["t"]))],
        SESSION,
    );
    h.advance(200);
    let (ra, rb) = (h.join_resp(a).unwrap(), h.join_resp(b).unwrap());
    let (_pending, _) = (h.join(5, "", None), ());
    let r = h.leave(
        3,
        &[
            (&ra.member_id, Some("i-a")),
            ("", Some("i-b")),
            ("nobody", None),
            ("", Some("i-zz")),
            (&rb.member_id, Some("i-a")),
        ],
    );
    let codes: Vec<i16> = r.members.iter().map(|m| m.error_code).collect();
    assert_eq!(
        codes,
        vec![
            0,
            0,
            code(ErrorCode::UNKNOWN_MEMBER_ID),
            code(ErrorCode::UNKNOWN_MEMBER_ID),
            code(ErrorCode::FENCED_INSTANCE_ID)
        ]
    );
    assert_eq!(r.members[1].group_instance_id.as_deref(), Some("i-b"));
    assert!(h.shard.group(GROUP).unwrap().members.is_empty());
    // Unknown group, invalid group id.
    let mut req = crate::protocol::messages::leave_group_request::LeaveGroupRequest {
        group_id: "none".into(),
        ..Default::default()
    };
    let now = h.now();
    let ctx = RequestContext::new(3, "c", "h");
    assert_eq!(
        h.shard.leave_group(now, &ctx, &req).error_code,
        code(ErrorCode::UNKNOWN_MEMBER_ID)
    );
    req.group_id.clear();
    assert_eq!(
        h.shard.leave_group(now, &ctx, &req).error_code,
        code(ErrorCode::INVALID_GROUP_ID)
    );
}

#[test]
fn a_pending_member_may_leave_or_expires() {
    let mut h = Harness::new();
    let j = h.join(5, "", None);
    let pending = h.join_resp(j).unwrap().member_id;
    let r = h.leave(5, &[(&pending, None)]);
    assert_eq!(r.members[0].error_code, 0);
    let j = h.join(5, "", None);
    let pending = h.join_resp(j).unwrap().member_id;
    h.advance(SESSION as i64 + 100);
    let j = h.join(5, &pending, None);
    assert_eq!(
        h.join_resp(j).unwrap().error_code,
        code(ErrorCode::UNKNOWN_MEMBER_ID)
    );
}

#[test]
fn session_expiry_removes_member_and_rebalances() {
    let mut h = Harness::new();
    let (ids, g1) = h.stable_group(2);
    for _ in 0..2 {
        h.advance(4_000);
        assert_eq!(h.heartbeat(&ids[0], g1), 0);
    }
    h.advance(4_000);
    // ids[1] never heartbeated: it is gone and the group rebalances.
    assert!(!h.shard.group(GROUP).unwrap().members.contains_key(&ids[1]));
    assert_eq!(
        h.heartbeat(&ids[0], g1),
        code(ErrorCode::REBALANCE_IN_PROGRESS)
    );
    assert_eq!(h.heartbeat(&ids[1], g1), code(ErrorCode::UNKNOWN_MEMBER_ID));
    let j = h.join(5, &ids[0], None);
    assert_eq!(h.join_resp(j).unwrap().generation_id, g1 + 1);
}

#[test]
fn rebalance_timeout_removes_member_that_does_not_rejoin() {
    let mut h = Harness::new();
    let (ids, g1) = h.stable_group(2);
    let j = h.join(5, &ids[0], None);
    let mut elapsed = 0;
    while elapsed < REBALANCE as i64 - 1_000 {
        h.advance(1_000);
        elapsed += 1_000;
        // Heartbeats keep ids[1] alive, but it never rejoins.
        assert_eq!(
            h.heartbeat(&ids[1], g1),
            code(ErrorCode::REBALANCE_IN_PROGRESS)
        );
        assert!(h.join_resp(j).is_none());
    }
    h.advance(1_000);
    let r = h
        .join_resp(j)
        .expect("rebalance timeout completed the join");
    assert_eq!((r.generation_id, r.members.len()), (g1 + 1, 1));
    assert_eq!(h.heartbeat(&ids[1], g1), code(ErrorCode::UNKNOWN_MEMBER_ID));
}

#[test]
fn member_that_never_syncs_is_expired() {
    let mut h = Harness::new();
    let (a, ja) = h.join_two_step();
    let (b, jb) = h.join_two_step();
    h.advance(200);
    let (ra, rb) = (h.join_resp(ja).unwrap(), h.join_resp(jb).unwrap());
    let (leader, follower) = if ra.leader == a { (a, b) } else { (b, a) };
    let generation = rb.generation_id;
    // The follower syncs; the leader heartbeats but never syncs.
    let sf = h.sync(&follower, generation, &[]);
    for _ in 0..5 {
        h.advance(5_000);
        assert_eq!(h.heartbeat(&leader, generation), 0);
        assert!(h.sync_resp(sf).is_none());
    }
    h.advance(5_000);
    assert_eq!(
        h.sync_resp(sf).unwrap().error_code,
        code(ErrorCode::REBALANCE_IN_PROGRESS)
    );
    assert!(!h.shard.group(GROUP).unwrap().members.contains_key(&leader));
    assert_eq!(
        h.heartbeat(&leader, generation),
        code(ErrorCode::UNKNOWN_MEMBER_ID)
    );
    let j = h.join(5, &follower, None);
    let r = h.join_resp(j).unwrap();
    assert_eq!(
        (r.leader.as_str(), r.generation_id),
        (follower.as_str(), generation + 1)
    );
}

#[test]
fn new_member_that_joins_and_vanishes_is_dropped() {
    let mut h = Harness::new();
    let (ids, g1) = h.stable_group(1);
    let (_c, jc) = h.join_two_step();
    // The old member never rejoins either; the rebalance timeout completes with the new one.
    h.advance(REBALANCE as i64);
    let r = h.join_resp(jc).unwrap();
    assert_eq!(r.generation_id, g1 + 1);
    assert_eq!(h.heartbeat(&ids[0], g1), code(ErrorCode::UNKNOWN_MEMBER_ID));
    // The new member never syncs and never heartbeats: gone after its session.
    h.advance(REBALANCE as i64);
    assert!(h.shard.group(GROUP).unwrap().members.is_empty());
    assert_eq!(state(&h), ClassicGroupState::Empty);
}

#[test]
fn static_member_restart_without_rebalance() {
    let mut h = Harness::new();
    let p = [("range", subscription(&["t"]))];
    let a = h.join_full(5, GROUP, "", Some("i-a"), "consumer", &p, SESSION);
    let b = h.join_full(5, GROUP, "", Some("i-b"), "consumer", &p, SESSION);
    h.advance(200);
    let (ra, rb) = (h.join_resp(a).unwrap(), h.join_resp(b).unwrap());
    assert_eq!(ra.leader, ra.member_id);
    let g1 = ra.generation_id;
    let sb = h.sync_full(5, &rb.member_id, Some("i-b"), g1, &[], None);
    let sa = h.sync_full(
        5,
        &ra.member_id,
        Some("i-a"),
        g1,
        &[(&ra.member_id, b"A"), (&rb.member_id, b"B")],
        None,
    );
    assert_eq!(h.sync_resp(sa).unwrap().assignment.as_ref(), b"A");
    assert_eq!(h.sync_resp(sb).unwrap().assignment.as_ref(), b"B");
    // i-b restarts: new member id, same generation, same assignment, no rebalance.
    let j = h.join_full(5, GROUP, "", Some("i-b"), "consumer", &p, SESSION);
    let r = h.join_resp(j).expect("answered at once");
    assert_eq!(
        (r.error_code, r.generation_id, r.skip_assignment),
        (0, g1, false)
    );
    assert_ne!(r.member_id, rb.member_id);
    assert_eq!(state(&h), ClassicGroupState::Stable);
    let s = h.sync_full(5, &r.member_id, Some("i-b"), g1, &[], None);
    assert_eq!(h.sync_resp(s).unwrap().assignment.as_ref(), b"B");
    // The old incarnation is fenced.
    assert_eq!(
        h.heartbeat_full(4, GROUP, &rb.member_id, Some("i-b"), g1),
        code(ErrorCode::FENCED_INSTANCE_ID)
    );
    let s = h.sync_full(5, &rb.member_id, Some("i-b"), g1, &[], None);
    assert_eq!(
        h.sync_resp(s).unwrap().error_code,
        code(ErrorCode::FENCED_INSTANCE_ID)
    );
    let j = h.join_full(
        5,
        GROUP,
        &rb.member_id,
        Some("i-b"),
        "consumer",
        &p,
        SESSION,
    );
    assert_eq!(
        h.join_resp(j).unwrap().error_code,
        code(ErrorCode::FENCED_INSTANCE_ID)
    );
    assert_eq!(
        h.heartbeat_full(4, GROUP, "x", Some("i-unknown"), g1),
        code(ErrorCode::UNKNOWN_MEMBER_ID)
    );
    h.assert_replay_matches();
    assert!(
        r.member_id.starts_with("i-b-"),
        "static member ids start with the instance id"
    );
    // Before v9 a restarted static leader is answered like a follower.
    let j = h.join_full(8, GROUP, "", Some("i-a"), "consumer", &p, SESSION);
    let r = h.join_resp(j).unwrap();
    assert_eq!(
        (r.error_code, r.skip_assignment, r.members.len()),
        (0, false, 0)
    );
    assert_eq!(r.leader, r.member_id);
    // From v9 it gets the members but must not reassign (KIP-814).
    let j = h.join_full(9, GROUP, "", Some("i-a"), "consumer", &p, SESSION);
    let r = h.join_resp(j).unwrap();
    assert_eq!(
        (
            r.error_code,
            r.generation_id,
            r.skip_assignment,
            r.members.len()
        ),
        (0, g1, true, 2)
    );
    assert_eq!(r.leader, r.member_id);
    h.assert_replay_matches();
    // A restart with a changed subscription that keeps the selected protocol still does not
    // rebalance (Kafka leaves that to the leader).
    let j = h.join_full(
        5,
        GROUP,
        "",
        Some("i-b"),
        "consumer",
        &[("range", subscription(&["t", "u"]))],
        SESSION,
    );
    assert_eq!(h.join_resp(j).unwrap().error_code, 0);
    assert_eq!(state(&h), ClassicGroupState::Stable);
    h.assert_replay_matches();
}

#[test]
fn static_restart_fails_cleanly_when_the_log_fails() {
    let mut h = Harness::new();
    let p = [("range", subscription(&["t"]))];
    let a = h.join_full(5, GROUP, "", Some("i-a"), "consumer", &p, SESSION);
    h.advance(200);
    let ra = h.join_resp(a).unwrap();
    let s = h.sync_full(
        5,
        &ra.member_id,
        Some("i-a"),
        ra.generation_id,
        &[(&ra.member_id, b"A")],
        None,
    );
    assert_eq!(h.sync_resp(s).unwrap().error_code, 0);
    h.log
        .fail_with(Some(CoordinatorLogError::Storage("disk".into())));
    let j = h.join_full(5, GROUP, "", Some("i-a"), "consumer", &p, SESSION);
    assert_eq!(
        h.join_resp(j).unwrap().error_code,
        code(ErrorCode::NOT_COORDINATOR)
    );
    h.log.fail_with(None);
    // The old member id is still valid.
    assert_eq!(
        h.heartbeat_full(4, GROUP, &ra.member_id, Some("i-a"), ra.generation_id),
        0
    );
    h.assert_replay_matches();
}

#[test]
fn failed_assignment_write_fails_syncs_and_rebalances() {
    let mut h = Harness::new();
    let (a, ja) = h.join_two_step();
    let (b, jb) = h.join_two_step();
    h.advance(200);
    let (ra, _) = (h.join_resp(ja).unwrap(), h.join_resp(jb).unwrap());
    let (leader, follower) = if ra.leader == a { (a, b) } else { (b, a) };
    let sf = h.sync(&follower, 1, &[]);
    h.log.fail_with(Some(CoordinatorLogError::RecordTooLarge));
    let sl = h.sync(&leader, 1, &[(&leader, b"x"), (&follower, b"y")]);
    assert_eq!(
        h.sync_resp(sl).unwrap().error_code,
        code(ErrorCode::UNKNOWN_SERVER_ERROR)
    );
    assert_eq!(
        h.sync_resp(sf).unwrap().error_code,
        code(ErrorCode::UNKNOWN_SERVER_ERROR)
    );
    assert_eq!(state(&h), ClassicGroupState::PreparingRebalance);
    h.log.fail_with(None);
}

#[test]
fn a_duplicate_join_supersedes_the_first() {
    let mut h = Harness::new();
    let (ids, _) = h.stable_group(2);
    let first = h.join(5, &ids[0], None);
    let second = h.join(5, &ids[0], None);
    assert_eq!(
        h.join_resp(first).unwrap().error_code,
        code(ErrorCode::REBALANCE_IN_PROGRESS)
    );
    assert!(h.join_resp(second).is_none());
    let j1 = h.join(5, &ids[1], None);
    assert_eq!(h.join_resp(second).unwrap().error_code, 0);
    assert_eq!(h.join_resp(j1).unwrap().error_code, 0);
}

#[test]
fn session_restarts_after_waiting_for_the_assignment() {
    let mut h = Harness::new();
    let (a, ja) = h.join_two_step();
    let (b, jb) = h.join_two_step();
    h.advance(200);
    let (ra, _) = (h.join_resp(ja).unwrap(), h.join_resp(jb).unwrap());
    let (leader, follower) = if ra.leader == a { (a, b) } else { (b, a) };
    let sf = h.sync(&follower, 1, &[]);
    // The follower waits longer than its session for a slow leader: that is fine.
    for _ in 0..3 {
        h.advance(5_000);
        assert_eq!(h.heartbeat(&leader, 1), 0);
    }
    let sl = h.sync(&leader, 1, &[(&follower, b"f")]);
    assert_eq!(h.sync_resp(sf).unwrap().assignment.as_ref(), b"f");
    assert_eq!(h.sync_resp(sl).unwrap().error_code, 0);
    // But once it has its assignment, its session runs again: silence expires it.
    for _ in 0..3 {
        h.advance(4_000);
        h.heartbeat(&leader, 1);
    }
    assert!(!h
        .shard
        .group(GROUP)
        .unwrap()
        .members
        .contains_key(&follower));
    assert_eq!(state(&h), ClassicGroupState::PreparingRebalance);
}

#[test]
fn static_member_commits_are_fenced() {
    let mut h = Harness::new();
    let p = [("range", subscription(&["t"]))];
    let a = h.join_full(5, GROUP, "", Some("i-a"), "consumer", &p, SESSION);
    h.advance(200);
    let ra = h.join_resp(a).unwrap();
    let s = h.sync_full(
        5,
        &ra.member_id,
        Some("i-a"),
        1,
        &[(&ra.member_id, b"A")],
        None,
    );
    assert_eq!(h.sync_resp(s).unwrap().error_code, 0);
    let req = crate::protocol::messages::offset_commit_request::OffsetCommitRequest {
        group_id: GROUP.into(),
        generation_id_or_member_epoch: 1,
        member_id: "stale-id".into(),
        group_instance_id: Some("i-a".into()),
        topics: vec![
            crate::protocol::messages::offset_commit_request::OffsetCommitRequestTopic {
                name: "t".into(),
                partitions: vec![Default::default()],
                ..Default::default()
            },
        ],
        ..Default::default()
    };
    let now = h.now();
    let r = h
        .shard
        .offset_commit(now, &RequestContext::new(7, "c", "h"), &req);
    assert_eq!(
        r.topics[0].partitions[0].error_code,
        code(ErrorCode::FENCED_INSTANCE_ID)
    );
}
