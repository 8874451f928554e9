//! OffsetCommit, OffsetFetch, OffsetDelete, expiration, the admin APIs, replay and the facade.
use super::*;
use crate::coordinator::group::ClassicGroupState;
use crate::coordinator::runtime::CoordinatorLogError;
use crate::protocol::messages::offset_commit_request::{
    OffsetCommitRequest, OffsetCommitRequestPartition, OffsetCommitRequestTopic,
};
use crate::protocol::messages::offset_delete_request::{
    OffsetDeleteRequest, OffsetDeleteRequestPartition, OffsetDeleteRequestTopic,
};

impl Harness {
    /// Commits `(topic, partition, offset, metadata)`; returns the error codes in order.
    pub fn commit(
        &mut self,
        version: i16,
        group: &str,
        member_id: &str,
        generation: i32,
        offsets: &[(&str, i32, i64, Option<&str>)],
    ) -> Vec<i16> {
        let req = OffsetCommitRequest {
            group_id: group.to_string(),
            generation_id_or_member_epoch: generation,
            member_id: member_id.to_string(),
            topics: offsets
                .iter()
                .map(|(t, p, o, m)| OffsetCommitRequestTopic {
                    name: t.to_string(),
                    partitions: vec![OffsetCommitRequestPartition {
                        partition_index: *p,
                        committed_offset: *o,
                        committed_leader_epoch: 5,
                        committed_metadata: m.map(str::to_string),
                        ..Default::default()
                    }],
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        };
        let now = self.now();
        let r = self
            .shard
            .offset_commit(now, &RequestContext::new(version, "c", "h"), &req);
        r.topics
            .iter()
            .flat_map(|t| t.partitions.iter().map(|p| p.error_code))
            .collect()
    }

    pub fn fetched(&self, group: &str, topic: &str, partition: i32) -> (i64, i32, String) {
        let r = self
            .shard
            .fetch_offsets(group, Some(&[(topic.to_string(), vec![partition])]))
            .unwrap();
        let p = &r[0].1[0];
        (p.committed_offset, p.leader_epoch, p.metadata.clone())
    }

    pub fn delete_group(&mut self, group: &str) -> ErrorCode {
        match self.shard.delete_group(group) {
            Ok(()) => ErrorCode::NONE,
            Err(e) => e.code(),
        }
    }

    pub fn delete_offsets(&mut self, group: &str, topic: &str) -> (i16, Vec<i16>) {
        let req = OffsetDeleteRequest {
            group_id: group.to_string(),
            topics: vec![OffsetDeleteRequestTopic {
                name: topic.to_string(),
                partitions: vec![OffsetDeleteRequestPartition { partition_index: 0 }],
            }],
        };
        let r = self.shard.offset_delete(&req);
        (
            r.error_code,
            r.topics
                .iter()
                .flat_map(|t| t.partitions.iter().map(|p| p.error_code))
                .collect(),
        )
    }
}

#[test]
fn commit_and_fetch_round_trip_with_metadata() {
    let mut h = Harness::new();
    let (ids, generation) = h.stable_group(2);
    let codes = h.commit(
        8,
        GROUP,
        &ids[1],
        generation,
        &[("t", 0, 42, Some("hello ✓")), ("t", 1, 7, None)],
    );
    assert_eq!(codes, vec![0, 0]);
    assert_eq!(h.fetched(GROUP, "t", 0), (42, 5, "hello ✓".to_string()));
    assert_eq!(h.fetched(GROUP, "t", 1), (7, 5, String::new()));
    // Unknown partitions and groups answer -1.
    assert_eq!(h.fetched(GROUP, "t", 9), (-1, -1, String::new()));
    assert_eq!(h.fetched("nope", "t", 0), (-1, -1, String::new()));
    // All partitions when no topics are given.
    let all = h.shard.fetch_offsets(GROUP, None).unwrap();
    assert_eq!(all.len(), 1);
    assert_eq!(
        all[0]
            .1
            .iter()
            .map(|p| p.committed_offset)
            .collect::<Vec<_>>(),
        vec![42, 7]
    );
    h.assert_replay_matches();
}

#[test]
fn commit_errors() {
    let mut h = Harness::new();
    let big = "x".repeat(4097);
    assert_eq!(
        h.commit(8, "", "", -1, &[("t", 0, 1, None)]),
        vec![code(ErrorCode::INVALID_GROUP_ID)]
    );
    assert_eq!(
        h.commit(8, "gone", "m", 3, &[("t", 0, 1, None)]),
        vec![code(ErrorCode::ILLEGAL_GENERATION)]
    );
    let (ids, generation) = h.stable_group(2);
    assert_eq!(
        h.commit(8, GROUP, &ids[0], generation + 1, &[("t", 0, 1, None)]),
        vec![code(ErrorCode::ILLEGAL_GENERATION)]
    );
    assert_eq!(
        h.commit(8, GROUP, "nobody", generation, &[("t", 0, 1, None)]),
        vec![code(ErrorCode::UNKNOWN_MEMBER_ID)]
    );
    assert_eq!(
        h.commit(8, GROUP, "", -1, &[("t", 0, 1, None)]),
        vec![code(ErrorCode::UNKNOWN_MEMBER_ID)],
        "simple commit to a live group"
    );
    // offset.metadata.max.bytes applies per partition.
    let codes = h.commit(
        8,
        GROUP,
        &ids[0],
        generation,
        &[("t", 0, 1, Some(&big)), ("t", 1, 2, Some("ok"))],
    );
    assert_eq!(codes, vec![code(ErrorCode::OFFSET_METADATA_TOO_LARGE), 0]);
    assert_eq!(h.fetched(GROUP, "t", 0).0, -1);
    assert_eq!(h.fetched(GROUP, "t", 1).0, 2);
    // In CompletingRebalance the member must wait for its assignment.
    let j0 = h.join(5, &ids[0], None);
    let j1 = h.join(5, &ids[1], None);
    let g2 = h.join_resp(j0).unwrap().generation_id;
    assert!(h.join_resp(j1).is_some());
    assert_eq!(
        h.commit(8, GROUP, &ids[0], g2, &[("t", 0, 1, None)]),
        vec![code(ErrorCode::REBALANCE_IN_PROGRESS)]
    );
    // Log failures.
    h.log.fail_with(Some(CoordinatorLogError::RecordTooLarge));
    assert_eq!(
        h.commit(8, "simple", "", -1, &[("t", 0, 1, None)]),
        vec![code(ErrorCode::INVALID_COMMIT_OFFSET_SIZE)]
    );
    h.log.fail_with(Some(CoordinatorLogError::NotLeader));
    assert_eq!(
        h.commit(8, "simple", "", -1, &[("t", 0, 1, None)]),
        vec![code(ErrorCode::NOT_COORDINATOR)]
    );
    h.log.fail_with(None);
    assert!(
        h.shard.group("simple").is_none(),
        "nothing committed, nothing created"
    );
}

#[test]
fn simple_commits_create_an_empty_group_and_expire() {
    let mut h = Harness::new();
    assert_eq!(
        h.commit(2, "simple", "", -1, &[("t", 0, 10, Some("m"))]),
        vec![0]
    );
    let g = h.shard.group("simple").unwrap();
    assert_eq!(
        (g.state, g.protocol_type.clone()),
        (ClassicGroupState::Empty, None)
    );
    let listed = h.shard.list_groups(&[], &[]);
    assert_eq!(listed.len(), 1);
    assert_eq!(
        (
            listed[0].group_id.as_str(),
            listed[0].protocol_type.as_str()
        ),
        ("simple", "")
    );
    h.assert_replay_matches();
    // offsets.retention.minutes counts from the commit for simple groups.
    h.advance(h.config.offsets_retention_ms - 700_000);
    assert_eq!(h.fetched("simple", "t", 0).0, 10);
    // Checked every offsets.retention.check.interval.ms.
    h.advance(h.config.offsets_retention_check_interval_ms + 700_000);
    assert_eq!(h.fetched("simple", "t", 0).0, -1);
    assert!(
        h.shard.group("simple").is_none(),
        "an empty group without offsets is deleted"
    );
    h.assert_replay_matches();
}

#[test]
fn offsets_of_an_empty_consumer_group_expire_after_it_empties() {
    let mut h = Harness::with_config(GroupConfig {
        group_initial_rebalance_delay_ms: 0,
        offsets_retention_ms: 3_600_000,
        offsets_retention_check_interval_ms: 60_000,
        ..Default::default()
    });
    let (ids, generation) = h.stable_group(1);
    assert_eq!(
        h.commit(9, GROUP, &ids[0], generation, &[("t", 0, 5, None)]),
        vec![0]
    );
    // Live groups keep their offsets however old they are.
    for _ in 0..8 {
        h.advance(SESSION as i64 / 2);
        assert_eq!(h.heartbeat(&ids[0], generation), 0);
    }
    for _ in 0..(3_600_000 / (SESSION as i64 / 2)) {
        h.advance(SESSION as i64 / 2);
        h.heartbeat(&ids[0], generation);
    }
    assert_eq!(h.fetched(GROUP, "t", 0).0, 5);
    h.leave(5, &[(&ids[0], None)]);
    assert_eq!(
        h.shard.group(GROUP).unwrap().state,
        ClassicGroupState::Empty
    );
    h.advance(3_600_000 - 60_000);
    assert_eq!(h.fetched(GROUP, "t", 0).0, 5);
    h.advance(120_000);
    assert_eq!(h.fetched(GROUP, "t", 0).0, -1);
    assert!(h.shard.group(GROUP).is_none());
    // An explicit retention (v2-4) is an expire timestamp (OffsetCommitValue v1).
    assert_eq!(h.commit(2, "s", "", -1, &[("t", 0, 1, None)]), vec![0]);
    let req = OffsetCommitRequest {
        group_id: "s".into(),
        generation_id_or_member_epoch: -1,
        retention_time_ms: 120_000,
        topics: vec![OffsetCommitRequestTopic {
            name: "u".into(),
            partitions: vec![OffsetCommitRequestPartition {
                partition_index: 0,
                committed_offset: 3,
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    };
    let now = h.now();
    h.shard
        .offset_commit(now, &RequestContext::new(2, "c", "h"), &req);
    let last = h.log.records(0).pop().unwrap();
    assert_eq!(&last.value.unwrap()[..2], &[0, 1]);
    h.advance(180_000);
    assert_eq!(h.fetched("s", "u", 0).0, -1);
    assert_eq!(h.fetched("s", "t", 0).0, 1);
    h.assert_replay_matches();
}

#[test]
fn offset_delete() {
    let mut h = Harness::new();
    let (ids, generation) = h.stable_group(1);
    h.commit(
        8,
        GROUP,
        &ids[0],
        generation,
        &[("t", 0, 1, None), ("old", 0, 2, None)],
    );
    assert_eq!(
        h.delete_offsets(GROUP, "t"),
        (0, vec![code(ErrorCode::GROUP_SUBSCRIBED_TO_TOPIC)])
    );
    assert_eq!(h.delete_offsets(GROUP, "old"), (0, vec![0]));
    assert_eq!(h.fetched(GROUP, "old", 0).0, -1);
    assert_eq!(h.fetched(GROUP, "t", 0).0, 1);
    assert_eq!(
        h.delete_offsets("nope", "t").0,
        code(ErrorCode::GROUP_ID_NOT_FOUND)
    );
    assert_eq!(
        h.delete_offsets("", "t").0,
        code(ErrorCode::INVALID_GROUP_ID)
    );
    // A live group of another protocol type has opaque subscriptions.
    let c = h.join_full(
        3,
        "connect",
        "",
        None,
        "connect",
        &[("v1", Bytes::from_static(b"?"))],
        SESSION,
    );
    h.advance(200);
    let r = h.join_resp(c).unwrap();
    assert_eq!(r.error_code, 0);
    assert_eq!(
        h.delete_offsets("connect", "t").0,
        code(ErrorCode::NON_EMPTY_GROUP)
    );
    // Once empty, everything may go.
    h.leave(0, &[(&ids[0], None)]);
    assert_eq!(h.delete_offsets(GROUP, "t"), (0, vec![0]));
    assert_eq!(h.fetched(GROUP, "t", 0).0, -1);
}

#[test]
fn list_describe_and_delete_groups() {
    let mut h = Harness::new();
    let (ids, generation) = h.stable_group(2);
    h.commit(8, GROUP, &ids[0], generation, &[("t", 0, 1, None)]);
    h.commit(8, "simple", "", -1, &[("t", 0, 1, None)]);
    let all = h.shard.list_groups(&[], &[]);
    assert_eq!(all.len(), 2);
    let stable = h.shard.list_groups(&["stable".into()], &[]);
    assert_eq!(
        stable
            .iter()
            .map(|g| g.group_id.as_str())
            .collect::<Vec<_>>(),
        vec![GROUP]
    );
    assert_eq!(
        (
            stable[0].group_state.as_str(),
            stable[0].group_type.as_str()
        ),
        ("Stable", "classic")
    );
    assert_eq!(
        h.shard
            .list_groups(&["Empty".into()], &["Classic".into()])
            .len(),
        1
    );
    assert!(h.shard.list_groups(&[], &["consumer".into()]).is_empty());
    let d = h.shard.describe_group("missing", 5);
    assert_eq!((d.error_code, d.group_state.as_str()), (0, "Dead"));
    // From v6 (KIP-1043) with Kafka's error and message.
    let d = h.shard.describe_group("missing", 6);
    assert_eq!(
        (
            d.error_code,
            d.group_state.as_str(),
            d.error_message.as_deref()
        ),
        (
            ErrorCode::GROUP_ID_NOT_FOUND.code(),
            "Dead",
            Some("Group missing not found.")
        )
    );
    // A rebalancing group shows members without metadata.
    let j = h.join(5, &ids[0], None);
    let d = h.shard.describe_group(GROUP, 5);
    assert_eq!(
        (d.group_state.as_str(), d.protocol_data.as_str()),
        ("PreparingRebalance", "")
    );
    assert!(d
        .members
        .iter()
        .all(|m| m.member_metadata.is_empty() && m.member_assignment.is_empty()));
    assert_eq!(h.delete_group(GROUP), ErrorCode::NON_EMPTY_GROUP);
    assert_eq!(h.delete_group("missing"), ErrorCode::GROUP_ID_NOT_FOUND);
    assert_eq!(h.delete_group(""), ErrorCode::INVALID_GROUP_ID);
    h.log.fail_with(Some(CoordinatorLogError::NotAvailable));
    assert_eq!(
        h.delete_group("simple"),
        ErrorCode::COORDINATOR_NOT_AVAILABLE
    );
    h.log.fail_with(None);
    let before = h.log.records(0).len();
    assert_eq!(h.delete_group("simple"), ErrorCode::NONE);
    let written = &h.log.records(0)[before..];
    assert_eq!(
        written.len(),
        2,
        "one offset tombstone, one group tombstone"
    );
    assert!(written.iter().all(|r| r.value.is_none()));
    assert!(h.shard.group("simple").is_none());
    assert_eq!(h.fetched("simple", "t", 0).0, -1);
    let _ = h.join_resp(j);
}

#[test]
fn replay_rebuilds_the_live_state() {
    let mut h = Harness::new();
    let (ids, g1) = h.stable_group(3);
    h.commit(
        8,
        GROUP,
        &ids[0],
        g1,
        &[("t", 0, 1, Some("a")), ("t", 1, 2, Some("b"))],
    );
    h.commit(8, "simple", "", -1, &[("u", 3, 4, None)]);
    h.assert_replay_matches();
    h.leave(5, &[(&ids[2], None)]);
    let j0 = h.join(5, &ids[0], None);
    let j1 = h.join(5, &ids[1], None);
    let (r0, r1) = (h.join_resp(j0).unwrap(), h.join_resp(j1).unwrap());
    let leader = if r0.leader == ids[0] {
        &ids[0]
    } else {
        &ids[1]
    };
    let s = h.sync(
        leader,
        r0.generation_id,
        &[(&ids[0], b"0"), (&ids[1], b"1")],
    );
    assert_eq!(h.sync_resp(s).unwrap().error_code, 0);
    assert_eq!(r1.generation_id, g1 + 1);
    h.assert_replay_matches();
    // A loaded shard keeps serving: members resume heartbeating and session timers run.
    let mut rebuilt = GroupCoordinatorShard::new(0, h.config.clone(), h.log.clone());
    rebuilt.load(h.log.records(0), h.now());
    let ctx = RequestContext::new(4, "c", "h");
    let hb = |m: &str| crate::protocol::messages::heartbeat_request::HeartbeatRequest {
        group_id: GROUP.into(),
        generation_id: g1 + 1,
        member_id: m.to_string(),
        ..Default::default()
    };
    assert_eq!(
        rebuilt
            .heartbeat(h.now() + 5_000, &ctx, &hb(&ids[0]))
            .error_code,
        0
    );
    rebuilt.tick(h.now() + SESSION as i64 + 1);
    assert_eq!(
        rebuilt.group(GROUP).unwrap().state,
        ClassicGroupState::PreparingRebalance
    );
    // Garbage in the log is skipped, not fatal.
    let mut records = h.log.records(0);
    records.push(crate::coordinator::CoordinatorRecord {
        key: Bytes::from_static(&[0, 1, 0]),
        value: None,
    });
    records.push(crate::coordinator::CoordinatorRecord {
        // Key type 99: no group type has it.
        key: Bytes::from_static(&[0, 99, 0, 1, b'x']),
        value: None,
    });
    let mut again = GroupCoordinatorShard::new(0, h.config.clone(), h.log.clone());
    let summary = again.load(records, h.now());
    assert_eq!(summary.skipped, 2);
    assert_eq!(again.snapshot(), h.shard.snapshot());
}

#[test]
fn facade_delivers_delayed_responses() {
    use crate::coordinator::GroupCoordinator;
    use crate::protocol::messages::join_group_request::{
        JoinGroupRequest, JoinGroupRequestProtocol,
    };
    use crate::protocol::messages::offset_fetch_request::{
        OffsetFetchRequest, OffsetFetchRequestGroup,
    };
    let clock = ManualClock::new(0);
    let log = Arc::new(InMemoryCoordinatorLog::new());
    let config = GroupConfig {
        group_initial_rebalance_delay_ms: 3_000,
        ..Default::default()
    };
    let gc = GroupCoordinator::new(config, clock.clone(), log.clone());
    let join = JoinGroupRequest {
        group_id: GROUP.into(),
        session_timeout_ms: SESSION,
        rebalance_timeout_ms: REBALANCE,
        protocol_type: "consumer".into(),
        protocols: vec![JoinGroupRequestProtocol {
            name: "range".into(),
            metadata: subscription(&["t"]),
            ..Default::default()
        }],
        ..Default::default()
    };
    let ctx = RequestContext::new(9, "client", "/10.0.0.1");
    // Not loaded yet: NOT_COORDINATOR.
    let mut p = gc.join_group(&ctx, &join);
    assert_eq!(
        p.try_take().unwrap().error_code,
        code(ErrorCode::NOT_COORDINATOR)
    );
    for partition in 0..gc.config().offsets_topic_num_partitions {
        gc.load(partition, Vec::new());
    }
    let mut p = gc.join_group(&ctx, &join);
    let r = p.try_take().unwrap();
    assert_eq!(r.error_code, code(ErrorCode::MEMBER_ID_REQUIRED));
    let mut second = JoinGroupRequest {
        member_id: r.member_id.clone(),
        ..join.clone()
    };
    let mut p = gc.join_group(&ctx, &second);
    assert!(p.try_take().is_none());
    clock.advance(2_999);
    gc.tick();
    assert!(p.try_take().is_none());
    clock.advance(1);
    gc.tick();
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let r = rt.block_on(p);
    assert_eq!((r.error_code, r.generation_id), (0, 1));
    // Unloading answers whatever still waits.
    second.member_id = r.member_id.clone();
    let partition = gc.partition_for(GROUP);
    let p = gc.join_group(&ctx, &second);
    let r2 = rt.block_on(p);
    assert_eq!(
        r2.error_code, 0,
        "leader rejoin of a one-member group completes at once"
    );
    let sync = crate::protocol::messages::sync_group_request::SyncGroupRequest {
        group_id: GROUP.into(),
        generation_id: r2.generation_id,
        member_id: r.member_id.clone(),
        ..Default::default()
    };
    let mut follower = crate::protocol::messages::join_group_request::JoinGroupRequest {
        member_id: String::new(),
        ..join.clone()
    };
    follower.group_instance_id = Some("static".into());
    let pj = gc.join_group(&ctx, &follower);
    gc.unload(partition);
    // Kafka's onUnloaded: NOT_COORDINATOR, and the member looks the coordinator up again.
    assert_eq!(rt.block_on(pj).error_code, code(ErrorCode::NOT_COORDINATOR));
    assert_eq!(
        rt.block_on(gc.sync_group(&ctx, &sync)).error_code,
        code(ErrorCode::NOT_COORDINATOR)
    );
    // Reload from the log: offsets survive and are fetched in a batch (v8+).
    gc.load(partition, log.records(partition));
    let commit = OffsetCommitRequest {
        group_id: "other".into(),
        generation_id_or_member_epoch: -1,
        topics: vec![OffsetCommitRequestTopic {
            name: "t".into(),
            partitions: vec![OffsetCommitRequestPartition {
                partition_index: 0,
                committed_offset: 9,
                committed_metadata: Some("md".into()),
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    };
    let other_partition = gc.partition_for("other");
    gc.load(other_partition, Vec::new());
    assert_eq!(
        gc.offset_commit(&RequestContext::new(9, "c", "h"), &commit)
            .topics[0]
            .partitions[0]
            .error_code,
        0
    );
    gc.load(other_partition, log.records(other_partition));
    let fetch = OffsetFetchRequest {
        groups: vec![
            OffsetFetchRequestGroup {
                group_id: "other".into(),
                topics: None,
                ..Default::default()
            },
            OffsetFetchRequestGroup {
                group_id: "nobody".into(),
                topics: None,
                ..Default::default()
            },
        ],
        ..Default::default()
    };
    let r = gc.offset_fetch(&RequestContext::new(9, "c", "h"), &fetch);
    assert_eq!(r.groups.len(), 2);
    let p0 = &r.groups[0].topics[0].partitions[0];
    assert_eq!(
        (p0.committed_offset, p0.metadata.as_deref()),
        (9, Some("md"))
    );
    assert!(r.groups[1].topics.is_empty());
    let v7 = OffsetFetchRequest {
        group_id: "other".into(),
        topics: None,
        ..Default::default()
    };
    let r = gc.offset_fetch(&RequestContext::new(7, "c", "h"), &v7);
    assert_eq!(r.topics[0].partitions[0].committed_offset, 9);
    // Groups of partitions that are not loaded here, and invalid ids.
    let unloaded = (0..50)
        .map(|i| format!("g{i}"))
        .find(|g| gc.partition_for(g) != other_partition && gc.partition_for(g) != partition)
        .unwrap();
    gc.unload(gc.partition_for(&unloaded));
    let hb = crate::protocol::messages::heartbeat_request::HeartbeatRequest {
        group_id: unloaded.clone(),
        ..Default::default()
    };
    assert_eq!(
        gc.heartbeat(&ctx, &hb).error_code,
        code(ErrorCode::NOT_COORDINATOR)
    );
    let fetch = OffsetFetchRequest {
        groups: vec![OffsetFetchRequestGroup {
            group_id: unloaded.clone(),
            ..Default::default()
        }],
        ..Default::default()
    };
    assert_eq!(
        gc.offset_fetch(&ctx, &fetch).groups[0].error_code,
        code(ErrorCode::NOT_COORDINATOR)
    );
    let describe = crate::protocol::messages::describe_groups_request::DescribeGroupsRequest {
        groups: vec!["".into(), unloaded.clone(), "other".into()],
        ..Default::default()
    };
    let d = gc.describe_groups(&ctx, &describe);
    let codes: Vec<i16> = d.groups.iter().map(|g| g.error_code).collect();
    assert_eq!(
        codes,
        vec![
            code(ErrorCode::INVALID_GROUP_ID),
            code(ErrorCode::NOT_COORDINATOR),
            0
        ]
    );
    assert_eq!(d.groups[2].group_state, "Empty");
    let delete = crate::protocol::messages::delete_groups_request::DeleteGroupsRequest {
        groups_names: vec!["other".into(), unloaded],
        ..Default::default()
    };
    let codes: Vec<i16> = gc
        .delete_groups(&ctx, &delete)
        .results
        .iter()
        .map(|r| r.error_code)
        .collect();
    assert_eq!(codes, vec![0, code(ErrorCode::NOT_COORDINATOR)]);
    let listed = gc.list_groups(&RequestContext::new(5, "c", "h"), &Default::default());
    assert!(
        !listed.groups.iter().any(|g| g.group_id == "other"),
        "deleted"
    );
}
