//! KIP-848 consumer groups under a manual clock: joins of one to three members with the
//! revocation ordering, leave, session and revocation timeouts, fencing, static members and
//! the assignors (offsets, admin views and replay: `consumer_offsets.rs`).
use std::collections::BTreeMap;

use super::{code, Harness};
use crate::coordinator::consumer::assignor::{self, GroupSpec, MemberSubscription};
use crate::coordinator::consumer::{Assignment, ConsumerGroupState, MemberState, TopicsView};
use crate::coordinator::service::RequestContext;
use crate::error::ErrorCode;
use crate::protocol::codec::Uuid;
use crate::protocol::messages::consumer_group_heartbeat_request::{
    ConsumerGroupHeartbeatRequest, TopicPartitions,
};
use crate::protocol::messages::consumer_group_heartbeat_response::ConsumerGroupHeartbeatResponse;

pub(super) const G: &str = "cg";
pub(super) const FOO: Uuid = Uuid([1; 16]);
pub(super) const BAR: Uuid = Uuid([2; 16]);

pub(super) fn topics(foo: i32, bar: i32) -> TopicsView {
    TopicsView::new([("foo".to_string(), FOO, foo), ("bar".to_string(), BAR, bar)])
}

/// A heartbeat as a client sends it: `subscribe` and `owned` are `None` when unchanged.
pub(super) struct Hb<'a> {
    pub(super) member: &'a str,
    pub(super) epoch: i32,
    pub(super) instance: Option<&'a str>,
    pub(super) subscribe: Option<&'a [&'a str]>,
    pub(super) assignor: Option<&'a str>,
    pub(super) owned: Option<Assignment>,
}

impl<'a> Hb<'a> {
    pub(super) fn join(member: &'a str, subscribe: &'a [&'a str]) -> Self {
        Hb {
            member,
            epoch: 0,
            instance: None,
            subscribe: Some(subscribe),
            assignor: None,
            owned: Some(Assignment::new()),
        }
    }

    pub(super) fn beat(member: &'a str, epoch: i32, owned: Assignment) -> Self {
        Hb {
            member,
            epoch,
            instance: None,
            subscribe: None,
            assignor: None,
            owned: Some(owned),
        }
    }
}

pub(super) fn send(h: &mut Harness, hb: Hb, view: &TopicsView) -> ConsumerGroupHeartbeatResponse {
    let req = ConsumerGroupHeartbeatRequest {
        group_id: G.to_string(),
        member_id: hb.member.to_string(),
        member_epoch: hb.epoch,
        instance_id: hb.instance.map(str::to_string),
        rebalance_timeout_ms: if hb.epoch == 0 { 30_000 } else { -1 },
        subscribed_topic_names: hb
            .subscribe
            .map(|s| s.iter().map(|t| t.to_string()).collect()),
        server_assignor: hb.assignor.map(str::to_string),
        topic_partitions: hb.owned.map(|o| {
            o.iter()
                .map(|(t, ps)| TopicPartitions {
                    topic_id: *t,
                    partitions: ps.iter().copied().collect(),
                    ..Default::default()
                })
                .collect()
        }),
        ..Default::default()
    };
    let ctx = RequestContext::new(1, "client", "/127.0.0.1");
    let now = h.now();
    let resp = h.shard.consumer_group_heartbeat(now, &ctx, &req, view);
    check_invariants(h);
    resp
}

/// The assignment a response carries (panics in tests if it has none).
pub(super) fn assigned(r: &ConsumerGroupHeartbeatResponse) -> Assignment {
    let a = r
        .assignment
        .as_ref()
        .expect("response carries an assignment");
    crate::coordinator::consumer::assignment_from(
        a.topic_partitions
            .iter()
            .map(|tp| (tp.topic_id, tp.partitions.as_slice())),
    )
}

pub(super) fn count(a: &Assignment) -> usize {
    a.values().map(|p| p.len()).sum()
}

/// No partition is ever owned (assigned or pending revocation) by two members.
pub(super) fn check_invariants(h: &Harness) {
    let Some(g) = h.shard.consumer_groups.get(G) else {
        return;
    };
    let mut seen = BTreeMap::new();
    for m in g.members.values() {
        for (t, ps) in m
            .assigned_partitions
            .iter()
            .chain(m.partitions_pending_revocation.iter())
        {
            for p in ps {
                if let Some(other) = seen.insert((*t, *p), m.member_id.clone()) {
                    panic!("{t:?}-{p} owned by {other} and {}", m.member_id);
                }
            }
        }
    }
}

pub(super) fn member_epoch(h: &Harness, id: &str) -> i32 {
    h.shard.consumer_groups[G].members[id].member_epoch
}

#[test]
fn one_member_gets_every_partition() {
    let mut h = Harness::new();
    let view = topics(4, 0);
    let r = send(&mut h, Hb::join("m1", &["foo"]), &view);
    assert_eq!(r.error_code, 0);
    assert_eq!(r.member_id.as_deref(), Some("m1"));
    assert_eq!(r.member_epoch, 1);
    assert_eq!(r.heartbeat_interval_ms, 5_000);
    assert_eq!(count(&assigned(&r)), 4);
    let g = &h.shard.consumer_groups[G];
    assert_eq!(g.group_epoch, 1);
    assert_eq!(g.assignment_epoch, 1);
    assert_eq!(g.state(), ConsumerGroupState::Stable);
    // A plain heartbeat with nothing new carries no assignment.
    let r = send(&mut h, Hb::beat("m1", 1, assigned(&r)), &view);
    assert_eq!(r.error_code, 0);
    assert!(r.assignment.is_none());
    h.assert_replay_matches();
}

#[test]
fn second_member_waits_for_revocation() {
    let mut h = Harness::new();
    let view = topics(4, 0);
    let r1 = send(&mut h, Hb::join("m1", &["foo"]), &view);
    let owned1 = assigned(&r1);
    // m2 joins: epoch 2, but its partitions are still m1's.
    let r2 = send(&mut h, Hb::join("m2", &["foo"]), &view);
    assert_eq!(r2.member_epoch, 2);
    assert_eq!(count(&assigned(&r2)), 0);
    assert_eq!(
        h.shard.consumer_groups[G].members["m2"].state,
        MemberState::UnreleasedPartitions
    );
    assert_eq!(
        h.shard.consumer_groups[G].state(),
        ConsumerGroupState::Reconciling
    );
    // m1 is asked to revoke two partitions; it stays at epoch 1.
    let r1 = send(&mut h, Hb::beat("m1", 1, owned1.clone()), &view);
    assert_eq!(r1.member_epoch, 1);
    let kept = assigned(&r1);
    assert_eq!(count(&kept), 2);
    assert_eq!(
        h.shard.consumer_groups[G].members["m1"].state,
        MemberState::UnrevokedPartitions
    );
    // m1 still reports all four: nothing moves, m2 still waits.
    let r1b = send(&mut h, Hb::beat("m1", 1, owned1), &view);
    assert_eq!(r1b.member_epoch, 1);
    let r2 = send(&mut h, Hb::beat("m2", 2, Assignment::new()), &view);
    assert!(r2.assignment.is_none() || count(&assigned(&r2)) == 0);
    // m1 acknowledges (owns only the kept partitions): epoch 2, stable.
    let r1 = send(&mut h, Hb::beat("m1", 1, kept.clone()), &view);
    assert_eq!(r1.member_epoch, 2);
    // m2 now gets the released partitions.
    let r2 = send(&mut h, Hb::beat("m2", 2, Assignment::new()), &view);
    let got = assigned(&r2);
    assert_eq!(count(&got), 2);
    for (t, ps) in &got {
        assert!(ps.is_disjoint(kept.get(t).unwrap_or(&Default::default())));
    }
    assert_eq!(
        h.shard.consumer_groups[G].state(),
        ConsumerGroupState::Stable
    );
    h.assert_replay_matches();
}

/// Drives every member until the group is stable; returns their assignments.
pub(super) fn settle(
    h: &mut Harness,
    view: &TopicsView,
    members: &[&str],
) -> BTreeMap<String, Assignment> {
    for _ in 0..10 {
        for m in members {
            let (epoch, owned) = {
                let mm = &h.shard.consumer_groups[G].members[*m];
                let mut owned = mm.assigned_partitions.clone();
                // A well-behaved client revokes at once.
                let _ = &mm.partitions_pending_revocation;
                owned.retain(|_, p| !p.is_empty());
                (mm.member_epoch, owned)
            };
            let r = send(h, Hb::beat(m, epoch, owned), view);
            assert_eq!(r.error_code, 0, "{m}: {r:?}");
        }
        if h.shard.consumer_groups[G].state() == ConsumerGroupState::Stable {
            break;
        }
    }
    assert_eq!(
        h.shard.consumer_groups[G].state(),
        ConsumerGroupState::Stable
    );
    h.shard.consumer_groups[G]
        .members
        .iter()
        .map(|(id, m)| (id.clone(), m.assigned_partitions.clone()))
        .collect()
}

#[test]
fn three_members_are_balanced_and_leave_rebalances() {
    let mut h = Harness::new();
    let view = topics(4, 3);
    for m in ["m1", "m2", "m3"] {
        let r = send(&mut h, Hb::join(m, &["foo", "bar"]), &view);
        assert_eq!(r.error_code, 0);
    }
    let a = settle(&mut h, &view, &["m1", "m2", "m3"]);
    let mut counts: Vec<usize> = a.values().map(count).collect();
    counts.sort();
    assert_eq!(counts, vec![2, 2, 3]);
    assert_eq!(a.values().map(count).sum::<usize>(), 7);
    // m3 leaves: the epoch bumps and the other two take everything.
    let before = h.shard.consumer_groups[G].group_epoch;
    let r = send(
        &mut h,
        Hb {
            epoch: -1,
            ..Hb::beat("m3", 0, Assignment::new())
        },
        &view,
    );
    assert_eq!(r.error_code, 0);
    assert_eq!(r.member_epoch, -1);
    assert_eq!(h.shard.consumer_groups[G].group_epoch, before + 1);
    assert!(!h.shard.consumer_groups[G].members.contains_key("m3"));
    let a = settle(&mut h, &view, &["m1", "m2"]);
    let mut counts: Vec<usize> = a.values().map(count).collect();
    counts.sort();
    assert_eq!(counts, vec![3, 4]);
    h.assert_replay_matches();
}

#[test]
fn session_timeout_fences_a_silent_member() {
    let mut h = Harness::new();
    let view = topics(4, 0);
    send(&mut h, Hb::join("m1", &["foo"]), &view);
    send(&mut h, Hb::join("m2", &["foo"]), &view);
    settle(&mut h, &view, &["m1", "m2"]);
    // m1 keeps heartbeating, m2 goes silent for the 45 s session.
    for _ in 0..10 {
        h.advance(5_000);
        let (e, o) = {
            let m = &h.shard.consumer_groups[G].members["m1"];
            (m.member_epoch, m.assigned_partitions.clone())
        };
        send(&mut h, Hb::beat("m1", e, o), &view);
    }
    assert!(!h.shard.consumer_groups[G].members.contains_key("m2"));
    let a = settle(&mut h, &view, &["m1"]);
    assert_eq!(count(&a["m1"]), 4);
    // The fenced member's next heartbeat is refused; it must rejoin with epoch 0.
    let r = send(&mut h, Hb::beat("m2", 2, Assignment::new()), &view);
    assert_eq!(r.error_code, code(ErrorCode::UNKNOWN_MEMBER_ID));
    h.assert_replay_matches();
}

#[test]
fn revocation_timeout_fences_a_member_that_does_not_revoke() {
    let mut h = Harness::new();
    let view = topics(4, 0);
    let r1 = send(&mut h, Hb::join("m1", &["foo"]), &view);
    let owned = assigned(&r1);
    send(&mut h, Hb::join("m2", &["foo"]), &view);
    send(&mut h, Hb::beat("m1", 1, owned.clone()), &view);
    // m1 keeps its session alive but never gives the partitions up.
    for _ in 0..7 {
        h.advance(5_000);
        send(&mut h, Hb::beat("m1", 1, owned.clone()), &view);
        send(&mut h, Hb::beat("m2", 2, Assignment::new()), &view);
    }
    let g = &h.shard.consumer_groups[G];
    assert!(
        !g.members.contains_key("m1"),
        "fenced after the 30 s rebalance timeout"
    );
    let r = send(&mut h, Hb::beat("m1", 1, owned), &view);
    assert_eq!(r.error_code, code(ErrorCode::UNKNOWN_MEMBER_ID));
    h.assert_replay_matches();
}

#[test]
fn epochs_are_checked() {
    let mut h = Harness::new();
    let view = topics(2, 0);
    let r = send(&mut h, Hb::join("m1", &["foo"]), &view);
    let owned = assigned(&r);
    let e = r.member_epoch;
    let r = send(&mut h, Hb::beat("m1", e + 1, owned.clone()), &view);
    assert_eq!(r.error_code, code(ErrorCode::FENCED_MEMBER_EPOCH));
    // The previous epoch with a subset of the assignment is accepted (lost response).
    send(&mut h, Hb::join("m2", &["foo"]), &view);
    settle(&mut h, &view, &["m1", "m2"]);
    let m1 = h.shard.consumer_groups[G].members["m1"].clone();
    let r = send(
        &mut h,
        Hb::beat(
            "m1",
            m1.previous_member_epoch,
            m1.assigned_partitions.clone(),
        ),
        &view,
    );
    assert_eq!(r.error_code, 0);
    // Rejoining with epoch 0 while the coordinator knows a later epoch is accepted, as Kafka
    // 4.3+ does (KAFKA-19233): the member keeps its epoch (this asserted FENCED_MEMBER_EPOCH,
    // Kafka's behaviour before 4.3).
    let r = send(&mut h, Hb::join("m1", &["foo"]), &view);
    assert_eq!((r.error_code, r.member_epoch), (0, m1.member_epoch));
    let r = send(&mut h, Hb::beat("nobody", 3, Assignment::new()), &view);
    assert_eq!(r.error_code, code(ErrorCode::UNKNOWN_MEMBER_ID));
    // Bad requests.
    let mut bad = Hb::join("m9", &["foo"]);
    bad.owned = None;
    assert_eq!(
        send(&mut h, bad, &view).error_code,
        code(ErrorCode::INVALID_REQUEST)
    );
    let mut bad = Hb::join("m9", &["foo"]);
    bad.assignor = Some("sticky");
    assert_eq!(
        send(&mut h, bad, &view).error_code,
        code(ErrorCode::UNSUPPORTED_ASSIGNOR)
    );
    let mut bad = Hb::join("m9", &["foo"]);
    bad.epoch = -3;
    assert_eq!(
        send(&mut h, bad, &view).error_code,
        code(ErrorCode::INVALID_REQUEST)
    );
}

#[test]
fn static_member_rejoins_with_its_assignment() {
    let mut h = Harness::new();
    let view = topics(4, 0);
    let join = |m: &'static str| Hb {
        instance: Some("i1"),
        ..Hb::join(m, &["foo"])
    };
    let r = send(&mut h, join("a1"), &view);
    assert_eq!(r.error_code, 0);
    let owned = assigned(&r);
    let epoch = r.member_epoch;
    // A second process with the same instance id while the first is alive.
    let r = send(&mut h, join("a2"), &view);
    assert_eq!(r.error_code, code(ErrorCode::UNRELEASED_INSTANCE_ID));
    // The first leaves temporarily (-2) and keeps its partitions.
    let r = send(
        &mut h,
        Hb {
            epoch: -2,
            instance: Some("i1"),
            ..Hb::beat("a1", epoch, owned.clone())
        },
        &view,
    );
    assert_eq!(r.error_code, 0);
    assert_eq!(r.member_epoch, -2);
    let group_epoch = h.shard.consumer_groups[G].group_epoch;
    // It comes back under a new member id: same partitions, no rebalance.
    let r = send(&mut h, join("a2"), &view);
    assert_eq!(r.error_code, 0, "{r:?}");
    assert_eq!(assigned(&r), owned);
    assert_eq!(r.member_epoch, epoch);
    let g = &h.shard.consumer_groups[G];
    assert_eq!(g.group_epoch, group_epoch);
    assert!(!g.members.contains_key("a1"));
    // The old id is fenced for this instance.
    let r = send(
        &mut h,
        Hb {
            instance: Some("i1"),
            ..Hb::beat("a1", epoch, owned)
        },
        &view,
    );
    assert_eq!(r.error_code, code(ErrorCode::FENCED_INSTANCE_ID));
    h.assert_replay_matches();
}

#[test]
fn group_max_size_is_enforced() {
    let mut h = Harness::with_config(crate::coordinator::GroupConfig {
        consumer_group_max_size: 2,
        ..Default::default()
    });
    let view = topics(4, 0);
    assert_eq!(send(&mut h, Hb::join("m1", &["foo"]), &view).error_code, 0);
    assert_eq!(send(&mut h, Hb::join("m2", &["foo"]), &view).error_code, 0);
    assert_eq!(
        send(&mut h, Hb::join("m3", &["foo"]), &view).error_code,
        code(ErrorCode::GROUP_MAX_SIZE_REACHED)
    );
}

#[test]
fn new_partitions_and_topics_bump_the_group_epoch() {
    let mut h = Harness::new();
    let mut view = TopicsView::new([("foo".to_string(), FOO, 2)]);
    let r = send(&mut h, Hb::join("m1", &["foo", "bar"]), &view);
    let owned = assigned(&r);
    assert_eq!(count(&owned), 2);
    let r = send(&mut h, Hb::beat("m1", 1, owned.clone()), &view);
    assert!(r.assignment.is_none());
    // bar is created and foo grows to 3 partitions.
    view = topics(3, 2);
    let r = send(&mut h, Hb::beat("m1", 1, owned), &view);
    assert_eq!(r.member_epoch, 2);
    assert_eq!(count(&assigned(&r)), 5);
    assert_eq!(h.shard.consumer_groups[G].group_epoch, 2);
    h.assert_replay_matches();
}

#[test]
fn range_assignor_co_partitions() {
    let mut h = Harness::new();
    let view = topics(4, 4);
    for m in ["m1", "m2"] {
        let r = send(
            &mut h,
            Hb {
                assignor: Some("range"),
                ..Hb::join(m, &["foo", "bar"])
            },
            &view,
        );
        assert_eq!(r.error_code, 0);
    }
    let a = settle(&mut h, &view, &["m1", "m2"]);
    for m in a.values() {
        assert_eq!(
            m.get(&FOO),
            m.get(&BAR),
            "partition i of both topics together"
        );
        assert_eq!(count(m), 4);
    }
    assert_eq!(a["m1"][&FOO], [0, 1].into_iter().collect());
}

fn spec(members: &[(&str, &[Uuid])], parts: &[(Uuid, i32)]) -> GroupSpec {
    GroupSpec {
        members: members
            .iter()
            .map(|(id, ts)| {
                (
                    id.to_string(),
                    MemberSubscription {
                        topics: ts.iter().copied().collect(),
                        current: Assignment::new(),
                    },
                )
            })
            .collect(),
        partitions: parts.iter().copied().collect(),
    }
}

#[test]
fn uniform_assignor_is_balanced_and_sticky() {
    for (n_members, n_parts) in [(1, 5), (2, 5), (3, 7), (4, 4), (5, 3), (3, 100)] {
        let ids: Vec<String> = (0..n_members).map(|i| format!("m{i}")).collect();
        let members: Vec<(&str, &[Uuid])> = ids.iter().map(|i| (i.as_str(), &[FOO][..])).collect();
        let out = assignor::uniform(&spec(&members, &[(FOO, n_parts)]));
        let counts: Vec<usize> = out.values().map(count).collect();
        let (min, max) = (counts.iter().min().unwrap(), counts.iter().max().unwrap());
        assert!(
            max - min <= 1,
            "{n_members} members, {n_parts} partitions: {counts:?}"
        );
        assert_eq!(counts.iter().sum::<usize>(), n_parts as usize);
    }
    // Sticky: adding a third member moves only what it needs.
    let mut s = spec(&[("a", &[FOO]), ("b", &[FOO])], &[(FOO, 6)]);
    let first = assignor::uniform(&s);
    s = spec(&[("a", &[FOO]), ("b", &[FOO]), ("c", &[FOO])], &[(FOO, 6)]);
    for (id, a) in &first {
        s.members.get_mut(id).unwrap().current = a.clone();
    }
    let second = assignor::uniform(&s);
    for id in ["a", "b"] {
        assert!(second[id][&FOO].is_subset(&first[id][&FOO]));
        assert_eq!(count(&second[id]), 2);
    }
    // Heterogeneous: bar only goes to its subscriber.
    let out = assignor::uniform(&spec(
        &[("a", &[FOO]), ("b", &[FOO, BAR])],
        &[(FOO, 4), (BAR, 2)],
    ));
    assert!(!out["a"].contains_key(&BAR));
    assert_eq!(count(&out["a"]), 3);
    assert_eq!(count(&out["b"]), 3);
}

#[test]
fn range_assignor_matches_kafka_ranges() {
    let out = assignor::range(&spec(
        &[("a", &[FOO, BAR]), ("b", &[FOO, BAR]), ("c", &[FOO])],
        &[(FOO, 7), (BAR, 3)],
    ));
    let set = |v: &[i32]| {
        v.iter()
            .copied()
            .collect::<std::collections::BTreeSet<i32>>()
    };
    assert_eq!(out["a"][&FOO], set(&[0, 1, 2]));
    assert_eq!(out["b"][&FOO], set(&[3, 4]));
    assert_eq!(out["c"][&FOO], set(&[5, 6]));
    assert_eq!(out["a"][&BAR], set(&[0, 1]));
    assert_eq!(out["b"][&BAR], set(&[2]));
}
