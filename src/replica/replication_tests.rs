//! Replication between two replica managers wired by hand (no simulation): acks=all and the
//! high watermark, `min.insync.replicas` (NOT_ENOUGH_REPLICAS, NOT_ENOUGH_REPLICAS_AFTER_APPEND),
//! follower-fetch epoch fencing, truncation of a divergent log by DivergingEpoch, ISR shrink and
//! expansion proposals.
use std::sync::Arc;

use bytes::Bytes;

use super::leader::FollowerFetch;
use super::manager::{ReplicaManager, ReplicationConfig};
use super::{BrokerEpoch, BrokerId, LeaderEpoch, PartitionChange, PartitionConfig, PartitionEpoch};
use crate::error::ErrorCode;
use crate::protocol::codec::Uuid;
use crate::protocol::records::RecordBatchBuilder;
use crate::storage::{LogConfig, LogManager};

fn batch(value: &str) -> Bytes {
    let mut b = RecordBatchBuilder::new(0);
    b.append(1_000, None, Some(Bytes::from(value.to_string())), vec![]);
    b.build().freeze()
}

fn broker(dir: &std::path::Path, id: i32) -> ReplicaManager {
    let logs = LogManager::open(
        vec![dir.join(format!("b{id}"))],
        id,
        LogConfig::default(),
        0,
    )
    .unwrap();
    let m = ReplicaManager::with_config(
        Arc::new(logs),
        ReplicationConfig {
            local: BrokerId(id),
            ..ReplicationConfig::default()
        },
    );
    m.set_broker_epoch(BrokerEpoch(100 + id as i64));
    m
}

fn change(leader: i32, leader_epoch: i32, partition_epoch: i32, isr: &[i32]) -> PartitionChange {
    PartitionChange {
        topic: "t".into(),
        partition: 0,
        topic_id: Uuid::ZERO,
        leader: Some(BrokerId(leader)),
        leader_epoch: LeaderEpoch(leader_epoch),
        partition_epoch: PartitionEpoch(partition_epoch),
        replicas: vec![BrokerId(0), BrokerId(1)],
        isr: isr.iter().map(|b| BrokerId(*b)).collect(),
    }
}

fn config(min_insync_replicas: i32) -> PartitionConfig {
    PartitionConfig {
        min_insync_replicas,
        ..PartitionConfig::default()
    }
}

/// One fetch round trip from `follower` to `leader`.
fn replicate(leader: &ReplicaManager, follower: &ReplicaManager, now_ms: i64) {
    for (to, id, req) in follower.poll_fetch_requests(now_ms) {
        assert_eq!(to, leader.local());
        let resp = leader.serve_follower_fetch(&req, &|t| Some(t.topic.clone()), now_ms);
        follower.on_fetch_response(to, id, &resp, now_ms);
    }
}

fn setup(min_isr: i32, isr: &[i32]) -> (tempfile::TempDir, ReplicaManager, ReplicaManager) {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (broker(dir.path(), 0), broker(dir.path(), 1));
    a.apply_partition_change(&change(0, 0, 0, isr), config(min_isr), 0)
        .unwrap();
    b.apply_partition_change(&change(0, 0, 0, isr), config(min_isr), 0)
        .unwrap();
    (dir, a, b)
}

#[test]
fn acks_all_completes_when_the_follower_has_fetched_past_the_batch() {
    let (_d, a, b) = setup(2, &[0, 1]);
    let p = a.get("t", 0).unwrap();
    let out = p.append_records_with_acks(batch("x"), -1, 1).unwrap();
    assert_eq!(p.high_watermark(), 0);
    assert!(p
        .acks_all_outcome(out.last_offset + 1, out.leader_epoch)
        .is_none());
    replicate(&a, &b, 2); // the follower gets the batch
    assert_eq!(b.get("t", 0).unwrap().log_end_offset(), 1);
    assert!(p
        .acks_all_outcome(out.last_offset + 1, out.leader_epoch)
        .is_none());
    replicate(&a, &b, 3); // its next fetch offset tells the leader
    assert_eq!(p.high_watermark(), 1);
    assert!(matches!(
        p.acks_all_outcome(1, out.leader_epoch),
        Some(Ok(()))
    ));
    // The follower learns the high watermark on the following response.
    replicate(&a, &b, 4);
    assert_eq!(b.get("t", 0).unwrap().high_watermark(), 1);
}

#[test]
fn min_insync_replicas_refuses_before_and_reports_after_append() {
    let (_d, a, b) = setup(2, &[0]);
    let p = a.get("t", 0).unwrap();
    let err = p.append_records_with_acks(batch("x"), -1, 1).unwrap_err();
    assert_eq!(err.code(), ErrorCode::NOT_ENOUGH_REPLICAS);
    // acks=1 is not subject to min.insync.replicas.
    p.append_records_with_acks(batch("x"), 1, 1).unwrap();

    // ISR {0,1}: accepted, then the ISR shrinks to {0} before the follower catches up.
    a.apply_partition_change(&change(0, 0, 1, &[0, 1]), config(2), 2)
        .unwrap();
    b.apply_partition_change(&change(0, 0, 1, &[0, 1]), config(2), 2)
        .unwrap();
    let out = p.append_records_with_acks(batch("y"), -1, 3).unwrap();
    a.apply_partition_change(&change(0, 0, 2, &[0]), config(2), 4)
        .unwrap();
    let outcome = p.acks_all_outcome(out.last_offset + 1, out.leader_epoch);
    assert_eq!(
        outcome.unwrap().unwrap_err().code(),
        ErrorCode::NOT_ENOUGH_REPLICAS_AFTER_APPEND
    );
}

#[test]
fn a_marker_is_refused_before_it_is_written_while_the_isr_is_short() {
    // Kafka writes markers with acks -1: a coordinator retrying a refused marker must not
    // leave one copy per attempt in the log.
    let (_d, a, b) = setup(2, &[0]);
    let p = a.get("t", 0).unwrap();
    let mut txn = RecordBatchBuilder::new(0)
        .producer(7, 0, 0)
        .transactional(true);
    txn.append(1_000, None, Some(Bytes::from_static(b"t")), vec![]);
    p.append_records_with_acks(txn.build().freeze(), 1, 1)
        .unwrap();
    assert_eq!(p.log_end_offset(), 1);
    for attempt in 0..3 {
        let err = p.write_txn_marker(7, 0, true, 0, 2 + attempt).unwrap_err();
        assert_eq!(err.code(), ErrorCode::NOT_ENOUGH_REPLICAS);
        assert_eq!(
            p.log_end_offset(),
            1,
            "nothing written on attempt {attempt}"
        );
    }
    // The follower rejoins the ISR: the retry writes exactly one marker.
    a.apply_partition_change(&change(0, 0, 1, &[0, 1]), config(2), 5)
        .unwrap();
    b.apply_partition_change(&change(0, 0, 1, &[0, 1]), config(2), 5)
        .unwrap();
    assert_eq!(p.write_txn_marker(7, 0, true, 0, 6).unwrap(), 1);
    assert_eq!(p.log_end_offset(), 2);
    replicate(&a, &b, 7);
    replicate(&a, &b, 8);
    assert_eq!(p.high_watermark(), 2);
    assert_eq!(p.last_stable_offset(), 2);
}

#[test]
fn follower_fetch_is_fenced_by_leader_epoch_and_refused_off_the_leader() {
    let (_d, a, b) = setup(1, &[0, 1]);
    a.apply_partition_change(&change(0, 3, 1, &[0, 1]), config(1), 1)
        .unwrap();
    let p = a.get("t", 0).unwrap();
    let fetch = |epoch: i32| FollowerFetch {
        replica: BrokerId(1),
        broker_epoch: BrokerEpoch(101),
        fetch_offset: 0,
        last_fetched_epoch: -1,
        current_leader_epoch: epoch,
        max_bytes: 1 << 20,
        now_ms: 1,
    };
    assert_eq!(
        p.fetch_for_follower(&fetch(2)).unwrap_err().code(),
        ErrorCode::FENCED_LEADER_EPOCH
    );
    assert_eq!(
        p.fetch_for_follower(&fetch(4)).unwrap_err().code(),
        ErrorCode::UNKNOWN_LEADER_EPOCH
    );
    assert!(p.fetch_for_follower(&fetch(3)).is_ok());
    let f = b.get("t", 0).unwrap();
    assert_eq!(
        f.fetch_for_follower(&fetch(0)).unwrap_err().code(),
        ErrorCode::NOT_LEADER_OR_FOLLOWER
    );
    // A broker that is not a replica is refused too.
    let mut stranger = fetch(3);
    stranger.replica = BrokerId(9);
    assert_eq!(
        p.fetch_for_follower(&stranger).unwrap_err().code(),
        ErrorCode::NOT_LEADER_OR_FOLLOWER
    );
    // Neither produce nor a marker is accepted by a follower.
    assert_eq!(
        f.append_records(batch("z"), 1).unwrap_err().code(),
        ErrorCode::NOT_LEADER_OR_FOLLOWER
    );
}

#[test]
fn a_deposed_leader_truncates_its_divergent_suffix_by_diverging_epoch() {
    let (_d, a, b) = setup(1, &[0, 1]);
    let pa = a.get("t", 0).unwrap();
    pa.append_records(batch("shared"), 1).unwrap();
    replicate(&a, &b, 2);
    // Broker 0 writes two batches nobody fetches, then loses leadership to broker 1.
    pa.append_records(batch("lost-1"), 3).unwrap();
    pa.append_records(batch("lost-2"), 3).unwrap();
    assert_eq!(pa.log_end_offset(), 3);
    b.apply_partition_change(&change(1, 1, 1, &[1]), config(1), 4)
        .unwrap();
    a.apply_partition_change(&change(1, 1, 1, &[1]), config(1), 4)
        .unwrap();
    let pb = b.get("t", 0).unwrap();
    pb.append_records(batch("new-1"), 5).unwrap();
    pb.append_records(batch("new-2"), 5).unwrap();
    pb.append_records(batch("new-3"), 5).unwrap();
    // First fetch: the leader reports epoch 0 ended at 1; broker 0 truncates to 1.
    replicate(&b, &a, 6);
    assert_eq!(pa.log_end_offset(), 1);
    replicate(&b, &a, 7);
    assert_eq!(pa.log_end_offset(), 4);
    assert_eq!(pa.log.epoch_entries(), pb.log.epoch_entries());
    let read = |p: &crate::replica::Partition| p.log.read(0, 1 << 20, i64::MAX, true).unwrap();
    assert_eq!(read(&pa).records, read(&pb).records);
    // Caught up (at the high watermark and past the epoch start): proposed for the ISR.
    replicate(&b, &a, 8);
    let proposals = b.take_alter_partitions();
    assert_eq!(proposals.len(), 1);
    assert_eq!(proposals[0].isr_ids(), vec![BrokerId(0), BrokerId(1)]);
    assert_eq!(proposals[0].new_isr[0].broker_epoch, BrokerEpoch(100));
}

#[test]
fn a_silent_follower_is_proposed_out_of_the_isr_after_the_lag_time() {
    let (_d, a, _b) = setup(1, &[0, 1]);
    a.maybe_shrink_isr(30_000);
    assert!(a.take_alter_partitions().is_empty());
    a.maybe_shrink_isr(30_001);
    let proposals = a.take_alter_partitions();
    assert_eq!(proposals.len(), 1);
    assert_eq!(proposals[0].isr_ids(), vec![BrokerId(0)]);
    assert_eq!(proposals[0].partition_epoch, PartitionEpoch(0));
    // Handed out once. A stale partition epoch keeps it in flight (the controller's newer
    // state may be this very change, its answer lost) until metadata brings that state.
    assert!(a.take_alter_partitions().is_empty());
    a.on_alter_partition_error(
        &proposals[0],
        super::AlterPartitionError::InvalidUpdateVersion,
    );
    a.maybe_shrink_isr(30_002);
    assert!(a.take_alter_partitions().is_empty());
    let p = a.get("t", 0).unwrap();
    assert_eq!(p.pending_alter_partition().as_ref(), Some(&proposals[0]));
    // A refusal that commits nothing clears it, so it can be proposed again.
    a.on_alter_partition_error(&proposals[0], super::AlterPartitionError::IneligibleReplica);
    a.maybe_shrink_isr(30_003);
    assert_eq!(a.take_alter_partitions().len(), 1);
}

#[test]
fn an_isr_expansion_whose_answer_was_lost_still_holds_back_the_high_watermark() {
    // Sim seed 606: the controller committed ISR {0,1}, its answer was lost and the retry
    // refused with INVALID_UPDATE_VERSION. Until the leader reads the new ISR from metadata,
    // the high watermark must not pass the new member's log end.
    let (_d, a, b) = setup(1, &[0]);
    let p = a.get("t", 0).unwrap();
    p.append_records(batch("a"), 1).unwrap();
    replicate(&a, &b, 2);
    replicate(&a, &b, 3);
    let proposals = a.take_alter_partitions();
    assert_eq!(proposals.len(), 1);
    assert_eq!(proposals[0].isr_ids(), vec![BrokerId(0), BrokerId(1)]);
    assert_eq!(p.high_watermark(), 1);
    a.on_alter_partition_error(
        &proposals[0],
        super::AlterPartitionError::InvalidUpdateVersion,
    );
    // Far past the lag time, the follower has not fetched this batch: only its place in the
    // maximal ISR keeps the high watermark where the follower is.
    p.append_records(batch("x"), 100_000).unwrap();
    assert_eq!(
        p.high_watermark(),
        1,
        "the maximal ISR still holds broker 1"
    );
    // Metadata brings the committed ISR; the follower catches up.
    a.apply_partition_change(&change(0, 0, 1, &[0, 1]), config(1), 100_001)
        .unwrap();
    b.apply_partition_change(&change(0, 0, 1, &[0, 1]), config(1), 100_001)
        .unwrap();
    replicate(&a, &b, 100_002);
    replicate(&a, &b, 100_003);
    assert_eq!(p.high_watermark(), 2);
}

#[test]
fn a_late_response_to_a_timed_out_fetch_is_dropped() {
    // Found by simulation seed 197: the answer to a fetch that timed out arrived after the
    // retry's answer and truncated data the leader already counted for the ISR.
    let (_d, a, b) = setup(1, &[0, 1]);
    let pa = a.get("t", 0).unwrap();
    pa.append_records(batch("one"), 1).unwrap();
    let (_, stale_id, stale) = b.poll_fetch_requests(2).pop().unwrap();
    let stale_resp = a.serve_follower_fetch(&stale, &|t| Some(t.topic.clone()), 2);
    // No answer within the request timeout: the fetcher retries, and that answer comes first.
    let retry_at = 2 + super::fetcher::FetcherConfig::default().request_timeout_ms;
    let (_, retry_id, retry) = b.poll_fetch_requests(retry_at).pop().unwrap();
    assert_ne!(stale_id, retry_id);
    let retry_resp = a.serve_follower_fetch(&retry, &|t| Some(t.topic.clone()), retry_at);
    b.on_fetch_response(BrokerId(0), retry_id, &retry_resp, retry_at);
    assert_eq!(b.get("t", 0).unwrap().log_end_offset(), 1);
    pa.append_records(batch("two"), retry_at).unwrap();
    let (_, next_id, _) = b.poll_fetch_requests(retry_at + 1).pop().unwrap();
    // The late answer is not the one awaited now: ignored, whatever it says.
    let outcome = b.on_fetch_response(BrokerId(0), stale_id, &stale_resp, retry_at + 2);
    assert_eq!(outcome, Default::default());
    let sessions = b.fetch_sessions();
    assert_eq!(sessions[0].in_flight.as_ref().unwrap().request_id, next_id);
}

/// An acks=all wait (`ReplicaManager::wait_acks_all`, the coordinators' and markers' wait) ends
/// when a follower's fetch moves the high watermark past the batch: the fetch wakes the
/// partition's waiters, not a timer.
#[tokio::test]
async fn an_acks_all_wait_is_woken_by_the_follower_fetch_that_moves_the_high_watermark() {
    let (_d, a, b) = setup(2, &[0, 1]);
    let (a, b) = (Arc::new(a), Arc::new(b));
    let p = a.get("t", 0).unwrap();
    let out = p.append_records_with_acks(batch("x"), -1, 1).unwrap();
    let waiter = {
        let (a, p) = (a.clone(), p.clone());
        tokio::spawn(async move {
            a.wait_acks_all(&p, out.last_offset + 1, out.leader_epoch, 30_000)
                .await
        })
    };
    tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    assert!(!waiter.is_finished());
    replicate(&a, &b, 2);
    replicate(&a, &b, 3);
    let outcome = tokio::time::timeout(std::time::Duration::from_secs(5), waiter)
        .await
        .expect("woken well before its 30 s timeout")
        .unwrap();
    assert!(matches!(outcome, Some(Ok(()))));
}

/// Leadership moving away ends a waiting acks=all append at once with NOT_LEADER_OR_FOLLOWER
/// (Kafka's DelayedProduce completes with the partition's error), not at its timeout.
#[tokio::test]
async fn an_acks_all_wait_ends_with_not_leader_when_leadership_moves() {
    let (_d, a, _b) = setup(2, &[0, 1]);
    let a = Arc::new(a);
    let p = a.get("t", 0).unwrap();
    let out = p.append_records_with_acks(batch("x"), -1, 1).unwrap();
    let waiter = {
        let (a, p) = (a.clone(), p.clone());
        tokio::spawn(async move {
            a.wait_acks_all(&p, out.last_offset + 1, out.leader_epoch, 30_000)
                .await
        })
    };
    tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    assert!(!waiter.is_finished());
    a.apply_partition_change(&change(1, 1, 1, &[0, 1]), config(2), 2)
        .unwrap();
    let outcome = tokio::time::timeout(std::time::Duration::from_secs(5), waiter)
        .await
        .expect("ended well before its 30 s timeout")
        .unwrap();
    assert_eq!(
        outcome.unwrap().unwrap_err().code(),
        ErrorCode::NOT_LEADER_OR_FOLLOWER
    );
}

#[test]
fn a_coordinator_writes_a_transactional_batch_without_a_sequence_a_client_may_not() {
    // TxnOffsetCommit's batch on `__consumer_offsets` carries the producer id and no sequence
    // (Kafka writes it with AppendOrigin.COORDINATOR); the same batch from a client is invalid.
    let (_d, a, _b) = setup(1, &[0]);
    let p = a.get("t", 0).unwrap();
    let batch = || {
        let mut txn = RecordBatchBuilder::new(0)
            .producer(7, 0, -1)
            .transactional(true);
        txn.append(
            1_000,
            Some(Bytes::from_static(b"k")),
            Some(Bytes::from_static(b"v")),
            vec![],
        );
        txn.build().freeze()
    };
    let err = p.append_records_with_acks(batch(), 1, 1).unwrap_err();
    assert_eq!(err.code(), ErrorCode::INVALID_RECORD);
    assert_eq!(p.log_end_offset(), 0);
    let out = p.append_coordinator_records(batch(), 1, 1).unwrap();
    assert_eq!(out.base_offset, 0);
    assert_eq!(p.log_end_offset(), 1);
}

#[test]
fn min_insync_replicas_is_bounded_by_the_replication_factor() {
    // Kafka's `effectiveMinIsr`: an RF-1 topic on brokers whose min.insync.replicas is 2 takes
    // acks=all writes and transaction markers (librdkafka's test 0129 on a 3-node cluster).
    let dir = tempfile::tempdir().unwrap();
    let a = broker(dir.path(), 0);
    let rf1 = PartitionChange {
        replicas: vec![BrokerId(0)],
        ..change(0, 0, 0, &[0])
    };
    a.apply_partition_change(&rf1, config(2), 0).unwrap();
    let p = a.get("t", 0).unwrap();
    let mut txn = RecordBatchBuilder::new(0)
        .producer(7, 0, 0)
        .transactional(true);
    txn.append(1_000, None, Some(Bytes::from_static(b"t")), vec![]);
    let out = p
        .append_records_with_acks(txn.build().freeze(), -1, 1)
        .unwrap();
    assert!(matches!(
        p.acks_all_outcome(out.last_offset + 1, out.leader_epoch),
        Some(Ok(()))
    ));
    assert_eq!(p.write_txn_marker(7, 0, false, 0, 2).unwrap(), 1);
    assert_eq!(p.log_end_offset(), 2);
}
