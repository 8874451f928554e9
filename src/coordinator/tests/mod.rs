//! Deterministic tests of the group coordinator: a manual clock, an in-memory log, and a
//! harness that drives one shard and collects its completions.
mod consumer;
mod consumer_offsets;
mod consumer_txn;
mod join_sync;
mod membership;
mod metrics;
mod offsets;
mod simulation;

use std::collections::HashMap;
use std::sync::Arc;

use bytes::{BufMut, Bytes, BytesMut};

use crate::clock::{Clock, ManualClock};
use crate::coordinator::runtime::{Completion, InMemoryCoordinatorLog, ResponseId};
use crate::coordinator::service::RequestContext;
use crate::coordinator::shard::GroupCoordinatorShard;
use crate::coordinator::{partition_for, GroupConfig};
use crate::error::ErrorCode;
use crate::protocol::codec::Encode;
use crate::protocol::messages::consumer_protocol_subscription::ConsumerProtocolSubscription;
use crate::protocol::messages::heartbeat_request::HeartbeatRequest;
use crate::protocol::messages::join_group_request::{JoinGroupRequest, JoinGroupRequestProtocol};
use crate::protocol::messages::join_group_response::JoinGroupResponse;
use crate::protocol::messages::leave_group_request::{LeaveGroupRequest, MemberIdentity};
use crate::protocol::messages::leave_group_response::LeaveGroupResponse;
use crate::protocol::messages::sync_group_request::{SyncGroupRequest, SyncGroupRequestAssignment};
use crate::protocol::messages::sync_group_response::SyncGroupResponse;

pub(crate) const GROUP: &str = "g";
pub(crate) const SESSION: i32 = 10_000;
pub(crate) const REBALANCE: i32 = 30_000;

pub(crate) fn code(e: ErrorCode) -> i16 {
    e.code()
}

/// Consumer-protocol subscription bytes (version prefix + struct), as a Java client sends.
pub(crate) fn subscription(topics: &[&str]) -> Bytes {
    let mut b = BytesMut::new();
    b.put_i16(0);
    ConsumerProtocolSubscription {
        topics: topics.iter().map(|t| t.to_string()).collect(),
        ..Default::default()
    }
    .encode(&mut b, 0);
    b.freeze()
}

/// Drives one shard with a manual clock.
pub(crate) struct Harness {
    pub shard: GroupCoordinatorShard,
    pub log: Arc<InMemoryCoordinatorLog>,
    pub clock: Arc<ManualClock>,
    pub config: Arc<GroupConfig>,
    next: u64,
    done: HashMap<ResponseId, Completion>,
}

impl Harness {
    pub fn new() -> Self {
        Self::with_config(GroupConfig {
            group_initial_rebalance_delay_ms: 0,
            ..Default::default()
        })
    }

    pub fn with_config(config: GroupConfig) -> Self {
        let log = Arc::new(InMemoryCoordinatorLog::new());
        let config = Arc::new(config);
        let shard = GroupCoordinatorShard::new(0, config.clone(), log.clone());
        let clock = ManualClock::new(1_000_000);
        let mut h = Harness {
            shard,
            log,
            clock,
            config,
            next: 1,
            done: HashMap::new(),
        };
        h.collect();
        h
    }

    pub fn now(&self) -> i64 {
        self.clock.now_ms()
    }

    fn collect(&mut self) {
        for c in self.shard.take_completions() {
            assert!(
                self.done.insert(c.id(), c).is_none(),
                "a response completed twice"
            );
        }
    }

    /// Moves time forward in steps of at most 100 ms, ticking like the broker does.
    pub fn advance(&mut self, ms: i64) {
        let mut left = ms;
        while left > 0 {
            let step = left.min(100);
            self.clock.advance(step);
            left -= step;
            let now = self.now();
            self.shard.tick(now);
            self.collect();
        }
    }

    fn id(&mut self) -> ResponseId {
        self.next += 1;
        ResponseId(self.next)
    }

    #[allow(clippy::too_many_arguments)]
    pub fn join_full(
        &mut self,
        version: i16,
        group: &str,
        member_id: &str,
        instance: Option<&str>,
        protocol_type: &str,
        protocols: &[(&str, Bytes)],
        session: i32,
    ) -> ResponseId {
        let req = JoinGroupRequest {
            group_id: group.to_string(),
            session_timeout_ms: session,
            rebalance_timeout_ms: REBALANCE,
            member_id: member_id.to_string(),
            group_instance_id: instance.map(str::to_string),
            protocol_type: protocol_type.to_string(),
            protocols: protocols
                .iter()
                .map(|(n, m)| JoinGroupRequestProtocol {
                    name: n.to_string(),
                    metadata: m.clone(),
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        };
        let id = self.id();
        let ctx = RequestContext::new(version, "client", "/127.0.0.1");
        let now = self.now();
        self.shard.join_group(now, &ctx, &req, id);
        self.collect();
        id
    }

    /// A consumer-protocol JoinGroup with the "range" protocol.
    pub fn join(&mut self, version: i16, member_id: &str, instance: Option<&str>) -> ResponseId {
        self.join_full(
            version,
            GROUP,
            member_id,
            instance,
            "consumer",
            &[("range", subscription(&["t"]))],
            SESSION,
        )
    }

    pub fn join_resp(&mut self, id: ResponseId) -> Option<JoinGroupResponse> {
        match self.done.remove(&id) {
            Some(Completion::Join { response, .. }) => Some(response),
            Some(other) => panic!("not a join: {other:?}"),
            None => None,
        }
    }

    pub fn sync_full(
        &mut self,
        version: i16,
        member_id: &str,
        instance: Option<&str>,
        generation: i32,
        assignments: &[(&str, &[u8])],
        protocol: Option<(&str, &str)>,
    ) -> ResponseId {
        let req = SyncGroupRequest {
            group_id: GROUP.to_string(),
            generation_id: generation,
            member_id: member_id.to_string(),
            group_instance_id: instance.map(str::to_string),
            protocol_type: protocol.map(|p| p.0.to_string()),
            protocol_name: protocol.map(|p| p.1.to_string()),
            assignments: assignments
                .iter()
                .map(|(m, a)| SyncGroupRequestAssignment {
                    member_id: m.to_string(),
                    assignment: Bytes::copy_from_slice(a),
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        };
        let id = self.id();
        let ctx = RequestContext::new(version, "client", "/127.0.0.1");
        let now = self.now();
        self.shard.sync_group(now, &ctx, &req, id);
        self.collect();
        id
    }

    pub fn sync(
        &mut self,
        member_id: &str,
        generation: i32,
        assignments: &[(&str, &[u8])],
    ) -> ResponseId {
        self.sync_full(
            5,
            member_id,
            None,
            generation,
            assignments,
            Some(("consumer", "range")),
        )
    }

    pub fn sync_resp(&mut self, id: ResponseId) -> Option<SyncGroupResponse> {
        match self.done.remove(&id) {
            Some(Completion::Sync { response, .. }) => Some(response),
            Some(other) => panic!("not a sync: {other:?}"),
            None => None,
        }
    }

    pub fn heartbeat(&mut self, member_id: &str, generation: i32) -> i16 {
        self.heartbeat_full(4, GROUP, member_id, None, generation)
    }

    pub fn heartbeat_full(
        &mut self,
        v: i16,
        group: &str,
        member_id: &str,
        instance: Option<&str>,
        generation: i32,
    ) -> i16 {
        let req = HeartbeatRequest {
            group_id: group.to_string(),
            generation_id: generation,
            member_id: member_id.to_string(),
            group_instance_id: instance.map(str::to_string),
            ..Default::default()
        };
        let now = self.now();
        let r = self
            .shard
            .heartbeat(now, &RequestContext::new(v, "client", "/127.0.0.1"), &req)
            .error_code;
        self.collect();
        r
    }

    pub fn leave(&mut self, version: i16, members: &[(&str, Option<&str>)]) -> LeaveGroupResponse {
        let req = LeaveGroupRequest {
            group_id: GROUP.to_string(),
            member_id: members.first().map(|m| m.0.to_string()).unwrap_or_default(),
            members: members
                .iter()
                .map(|(m, i)| MemberIdentity {
                    member_id: m.to_string(),
                    group_instance_id: i.map(str::to_string),
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        };
        let now = self.now();
        let r = self.shard.leave_group(
            now,
            &RequestContext::new(version, "client", "/127.0.0.1"),
            &req,
        );
        self.collect();
        r
    }

    /// Joins a new dynamic member through the v5 two-step join and returns its member id and
    /// the id of its pending (second) JoinGroup.
    pub fn join_two_step(&mut self) -> (String, ResponseId) {
        let first = self.join(5, "", None);
        let r = self
            .join_resp(first)
            .expect("MEMBER_ID_REQUIRED is immediate");
        assert_eq!(r.error_code, code(ErrorCode::MEMBER_ID_REQUIRED));
        assert!(r.member_id.starts_with("client-"), "{}", r.member_id);
        let second = self.join(5, &r.member_id, None);
        (r.member_id, second)
    }

    /// Builds a stable group of `n` members; returns (member ids with the leader first,
    /// generation).
    pub fn stable_group(&mut self, n: usize) -> (Vec<String>, i32) {
        let mut pending = Vec::new();
        for _ in 0..n {
            pending.push(self.join_two_step());
        }
        // Nothing completes until the (zero) initial delay fires on the next tick.
        self.advance(200);
        let mut responses: Vec<(String, JoinGroupResponse)> = pending
            .into_iter()
            .map(|(m, id)| (m, self.join_resp(id).expect("join completed")))
            .collect();
        let generation = responses[0].1.generation_id;
        let leader = responses[0].1.leader.clone();
        responses.sort_by_key(|(m, _)| *m != leader);
        let ids: Vec<String> = responses.iter().map(|(m, _)| m.clone()).collect();
        let assignments: Vec<(String, Vec<u8>)> = ids
            .iter()
            .enumerate()
            .map(|(i, m)| (m.clone(), vec![i as u8; 3]))
            .collect();
        let refs: Vec<(&str, &[u8])> = assignments
            .iter()
            .map(|(m, a)| (m.as_str(), a.as_slice()))
            .collect();
        let mut syncs = Vec::new();
        for (i, m) in ids.iter().enumerate() {
            let a = if i == 0 { refs.clone() } else { Vec::new() };
            syncs.push(self.sync(m, generation, &a));
        }
        for (i, s) in syncs.into_iter().enumerate() {
            let r = self.sync_resp(s).expect("sync completed");
            assert_eq!(r.error_code, 0);
            assert_eq!(r.assignment.as_ref(), &[i as u8; 3]);
        }
        (ids, generation)
    }

    /// Rebuilds a shard from the log and checks it equals the live one.
    pub fn assert_replay_matches(&self) {
        let mut rebuilt = GroupCoordinatorShard::new(0, self.config.clone(), self.log.clone());
        let summary = rebuilt.load(self.log.records(0), self.now());
        assert_eq!(summary.skipped, 0);
        assert_eq!(rebuilt.snapshot(), self.shard.snapshot());
    }
}

#[test]
fn partition_for_matches_java_hash_code() {
    // Values of Java's "…".hashCode().
    assert_eq!(crate::coordinator::java_string_hash(""), 0);
    assert_eq!(crate::coordinator::java_string_hash("a"), 97);
    assert_eq!(crate::coordinator::java_string_hash("hello"), 99162322);
    assert_eq!(
        crate::coordinator::java_string_hash("polygenelubricants"),
        i32::MIN
    );
    // Surrogate pairs count as two UTF-16 code units: "😀" is \uD83D\uDE00.
    assert_eq!(
        crate::coordinator::java_string_hash("😀"),
        0xD83D * 31 + 0xDE00
    );
    assert_eq!(partition_for("polygenelubricants", 50), 0);
    assert_eq!(partition_for("hello", 50), 99162322 % 50);
    // "Aa" and "BB" collide in Java.
    assert_eq!(partition_for("Aa", 50), partition_for("BB", 50));
    let neg = crate::coordinator::java_string_hash("console-consumer-12345");
    assert_eq!(partition_for("console-consumer-12345", 50), neg.abs() % 50);
}

#[test]
fn records_use_kafka_formats() {
    use crate::coordinator::records::*;
    let o = OffsetAndMetadata {
        committed_offset: 42,
        leader_epoch: Some(3),
        metadata: "meta".into(),
        commit_timestamp_ms: 7,
        expire_timestamp_ms: None,
    };
    let r = offset_commit_record("g", "t", 1, &o);
    // key: type 1, then group, topic, partition.
    assert_eq!(&r.key[..2], &[0, 1]);
    assert_eq!(&r.key[2..5], &[0, 1, b'g']);
    // value: version 3 when there is no expire timestamp.
    assert_eq!(&r.value.as_ref().unwrap()[..2], &[0, 3]);
    match decode(&r).unwrap() {
        GroupRecord::OffsetCommit { key, value } => {
            assert_eq!(
                (key.group.as_str(), key.topic.as_str(), key.partition),
                ("g", "t", 1)
            );
            assert_eq!(OffsetAndMetadata::from(&value.unwrap()), o);
        }
        other => panic!("{other:?}"),
    }
    let with_expiry = OffsetAndMetadata {
        expire_timestamp_ms: Some(99),
        ..o
    };
    let r = offset_commit_record("g", "t", 1, &with_expiry);
    assert_eq!(&r.value.as_ref().unwrap()[..2], &[0, 1]);
    let t = group_metadata_tombstone("g");
    assert_eq!(&t.key[..2], &[0, 2]);
    assert!(t.value.is_none());
    // Garbage never panics.
    for bad in [&b""[..], &[0][..], &[0, 2, 0, 9][..], &[0, 1, 255, 255][..]] {
        let rec = crate::coordinator::CoordinatorRecord {
            key: Bytes::copy_from_slice(bad),
            value: None,
        };
        assert!(decode(&rec).is_err(), "{bad:?}");
    }
    let rec = crate::coordinator::CoordinatorRecord {
        key: group_metadata_tombstone("g").key,
        value: Some(Bytes::from_static(&[0, 9, 1])),
    };
    assert!(decode(&rec).is_err());
}
