//! KIP-848 consumer groups that commit offsets inside transactions (franz-go's
//! `GroupTransactSession` on the consumer protocol, TestTxnEtl/*/848): a committed transaction
//! must leave the group a consumer group, on the live shard and after a reload, and a member
//! that rejoins at epoch 0 with its member id keeps its membership (KAFKA-19233).
use super::consumer::*;
use super::{code, Harness};
use crate::coordinator::consumer::MemberState;
use crate::coordinator::records;
use crate::coordinator::service::RequestContext;
use crate::coordinator::txn_offsets::LoadItem;
use crate::error::ErrorCode;
use crate::protocol::messages::txn_offset_commit_request::*;

const PRODUCER: i64 = 7;

/// A TxnOffsetCommit of `offset` for foo-0 by `member` at `epoch`, as franz-go sends it.
fn txn_commit(h: &mut Harness, member: &str, epoch: i32, offset: i64) -> i16 {
    let req = TxnOffsetCommitRequest {
        transactional_id: "tx".into(),
        group_id: G.to_string(),
        producer_id: PRODUCER,
        producer_epoch: 0,
        generation_id: epoch,
        member_id: member.to_string(),
        topics: vec![TxnOffsetCommitRequestTopic {
            name: "foo".into(),
            partitions: vec![TxnOffsetCommitRequestPartition {
                partition_index: 0,
                committed_offset: offset,
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    };
    let ctx = RequestContext::new(4, "c", "/h");
    let now = h.now();
    h.shard.txn_offset_commit(now, &ctx, &req).topics[0].partitions[0].error_code
}

fn committed(h: &Harness) -> Option<i64> {
    h.shard
        .offsets(G)
        .and_then(|o| o.get("foo"))
        .and_then(|t| t.get(&0))
        .map(|o| o.committed_offset)
}

/// The livelock of issue 37: every committed transaction's COMMIT marker put an empty classic
/// group beside the consumer group, after which every heartbeat with an epoch was answered
/// UNKNOWN_MEMBER_ID. The member here behaves as franz-go's manage loop does: on
/// UNKNOWN_MEMBER_ID it abandons its id and joins again with a fresh one, which bumped the
/// group epoch each time while nothing ever committed for good.
#[test]
fn committed_txn_offsets_leave_the_consumer_group_serving() {
    let mut h = Harness::new();
    let view = topics(2, 0);
    let r = send(&mut h, Hb::join("m1", &["foo"]), &view);
    let (mut member, mut epoch, mut owned) = ("m1".to_string(), r.member_epoch, assigned(&r));
    let group_epoch = h.shard.consumer_groups[G].group_epoch;
    let mut rejoins = 0;
    // One transaction every 5 s for 60 s: past the 45 s session timeout, so a member whose
    // heartbeats are refused would also be fenced.
    for i in 0..12 {
        assert_eq!(txn_commit(&mut h, &member, epoch, 10 * (i + 1)), 0);
        h.shard.replay_txn_marker(PRODUCER, true);
        h.advance(5_000);
        let r = send(&mut h, Hb::beat(&member, epoch, owned.clone()), &view);
        if r.error_code == code(ErrorCode::UNKNOWN_MEMBER_ID) {
            rejoins += 1;
            member = format!("m1-{i}");
            let r = send(&mut h, Hb::join(&member, &["foo"]), &view);
            assert_eq!(r.error_code, 0);
            (epoch, owned) = (r.member_epoch, assigned(&r));
            continue;
        }
        assert_eq!(r.error_code, 0, "{r:?}");
        assert_eq!(r.member_epoch, epoch);
    }
    let g = &h.shard.consumer_groups[G];
    assert_eq!(
        (rejoins, g.group_epoch, g.members.len()),
        (0, group_epoch, 1),
        "(rejoins, group epoch, members)"
    );
    assert!(
        !h.shard.groups.contains_key(G),
        "a COMMIT marker created a classic group beside the consumer group"
    );
    assert_eq!(committed(&h), Some(120));
    let listed = h.shard.list_groups(&[], &[]);
    assert_eq!(listed.len(), 1, "{listed:?}");
    assert_eq!(listed[0].group_type, "consumer");
    h.assert_replay_matches();
}

/// A partition written by an older broker holds the COMMIT marker after the consumer group's
/// records; loading it must not create the classic group either.
#[test]
fn loading_a_committed_txn_keeps_the_consumer_group() {
    let mut h = Harness::new();
    let view = topics(2, 0);
    let r = send(&mut h, Hb::join("m1", &["foo"]), &view);
    let (epoch, owned) = (r.member_epoch, assigned(&r));
    let offset = records::OffsetAndMetadata {
        committed_offset: 5,
        leader_epoch: None,
        metadata: String::new(),
        commit_timestamp_ms: 0,
        expire_timestamp_ms: None,
    };
    let mut items: Vec<LoadItem> = h.log.records(0).into_iter().map(LoadItem::Record).collect();
    items.push(LoadItem::TxnRecord {
        producer_id: PRODUCER,
        record: records::offset_commit_record(G, "foo", 0, &offset),
    });
    items.push(LoadItem::Marker {
        producer_id: PRODUCER,
        commit: true,
    });
    let mut loaded = Harness::new();
    let now = loaded.now();
    loaded.shard.load_items(items, now);
    assert!(!loaded.shard.groups.contains_key(G));
    assert_eq!(committed(&loaded), Some(5));
    let r = send(&mut loaded, Hb::beat("m1", epoch, owned), &view);
    assert_eq!((r.error_code, r.member_epoch), (0, epoch));
}

/// State a broker without the fix holds in memory: an empty classic group beside the consumer
/// group. The consumer group is found first, and the heartbeat deletes the classic group with a
/// tombstone (Kafka's `maybeDeleteEmptyClassicGroup`), so replay gives the same state.
#[test]
fn an_empty_classic_group_beside_a_consumer_group_is_deleted() {
    let mut h = Harness::new();
    let view = topics(2, 0);
    let r = send(&mut h, Hb::join("m1", &["foo"]), &view);
    let (epoch, owned) = (r.member_epoch, assigned(&r));
    h.shard.groups.insert(
        G.to_string(),
        crate::coordinator::group::ClassicGroup::new(G),
    );
    let r = send(&mut h, Hb::beat("m1", epoch, owned), &view);
    assert_eq!((r.error_code, r.member_epoch), (0, epoch));
    assert!(!h.shard.groups.contains_key(G));
    assert!(h
        .log
        .records(0)
        .contains(&records::group_metadata_tombstone(G)));
    h.assert_replay_matches();
    // A join deletes one too, as Kafka does for any empty classic group.
    h.shard.groups.insert(
        G.to_string(),
        crate::coordinator::group::ClassicGroup::new(G),
    );
    let r = send(&mut h, Hb::join("m2", &["foo"]), &view);
    assert_eq!(r.error_code, 0);
    assert!(!h.shard.groups.contains_key(G));
    h.assert_replay_matches();
}

/// A transactional commit for a group that does not exist creates a simple group when its
/// record is replayed (Kafka's `OffsetMetadataManager.replay`), and the offsets cleanup keeps
/// that group while the transaction is open.
#[test]
fn a_txn_commit_without_a_group_creates_a_simple_group() {
    let mut h = Harness::new();
    assert_eq!(txn_commit(&mut h, "", -1, 3), 0);
    assert!(h.shard.groups.contains_key(G));
    h.advance(2 * h.config.offsets_retention_check_interval_ms.max(1_000));
    assert!(h.shard.groups.contains_key(G), "deleted while pending");
    h.shard.replay_txn_marker(PRODUCER, true);
    assert_eq!(committed(&h), Some(3));
    assert!(h.shard.groups.contains_key(G));
}

/// KAFKA-19233 (Kafka 4.3+): a member that rejoins at epoch 0 with its member id (franz-go does
/// after FENCED_MEMBER_EPOCH or STALE_MEMBER_EPOCH) is accepted; it keeps its epoch and is sent
/// its assignment, and the group epoch does not move. One that had partitions to revoke and
/// rejoins owning none has revoked them.
#[test]
fn rejoin_at_epoch_zero_with_the_member_id_is_accepted() {
    let mut h = Harness::new();
    let view = topics(4, 0);
    let r = send(&mut h, Hb::join("m1", &["foo"]), &view);
    let (e, owned) = (r.member_epoch, assigned(&r));
    let r = send(&mut h, Hb::join("m1", &["foo"]), &view);
    assert_eq!((r.error_code, r.member_epoch), (0, e));
    assert_eq!(assigned(&r), owned);
    assert_eq!(h.shard.consumer_groups[G].group_epoch, e);
    // m2 joins; m1 learns it must give two partitions up.
    let r2 = send(&mut h, Hb::join("m2", &["foo"]), &view);
    let r = send(&mut h, Hb::beat("m1", e, owned), &view);
    let kept = assigned(&r);
    assert_eq!(count(&kept), 2);
    assert_eq!(
        h.shard.consumer_groups[G].members["m1"].state,
        MemberState::UnrevokedPartitions
    );
    let r = send(&mut h, Hb::join("m1", &["foo"]), &view);
    assert_eq!(r.error_code, 0);
    assert_eq!(
        r.member_epoch, r2.member_epoch,
        "the revocation is complete"
    );
    assert_eq!(assigned(&r), kept);
    assert_eq!(h.shard.consumer_groups[G].group_epoch, r2.member_epoch);
    settle(&mut h, &view, &["m1", "m2"]);
    h.assert_replay_matches();
}
