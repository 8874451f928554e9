use std::sync::Arc;

use super::records::{decode, ShareStateRecord, SHARE_SNAPSHOT_KEY_TYPE, SHARE_UPDATE_KEY_TYPE};
use super::*;
use crate::clock::{ManualClock, SharedClock};
use crate::coordinator::runtime::{CoordinatorLog, InMemoryCoordinatorLog};
use crate::protocol::codec::Uuid;
use crate::replica::share_persister::{PersistedState, StateWrite};

fn key(partition: i32) -> SharePartitionKey {
    SharePartitionKey {
        group_id: "g".to_string(),
        topic_id: Uuid([7; 16]),
        partition,
    }
}

fn batch(first: i64, last: i64, state: i8, count: i16) -> StateBatch {
    StateBatch {
        first_offset: first,
        last_offset: last,
        delivery_state: state,
        delivery_count: count,
    }
}

fn write(
    k: &SharePartitionKey,
    leader_epoch: i32,
    start: i64,
    batches: Vec<StateBatch>,
) -> StateWrite {
    StateWrite {
        key: k.clone(),
        state_epoch: 0,
        leader_epoch,
        start_offset: start,
        delivery_complete_count: -1,
        state_batches: batches,
    }
}

/// A coordinator over one in-memory partition (every key hashes to partition 0).
fn coordinator(updates_per_snapshot: i32) -> (ShareStateCoordinator, Arc<InMemoryCoordinatorLog>) {
    let log = Arc::new(InMemoryCoordinatorLog::new());
    let clock: SharedClock = ManualClock::new(1_000);
    let c = ShareStateCoordinator::new(
        ShareStateConfig {
            num_partitions: 1,
            updates_per_snapshot,
        },
        clock,
        log.clone(),
    );
    c.load(0, Vec::new());
    (c, log)
}

fn reloaded(log: &InMemoryCoordinatorLog, updates_per_snapshot: i32) -> ShareStateCoordinator {
    let (c, _) = coordinator(updates_per_snapshot);
    c.load(
        0,
        log.records(0)
            .into_iter()
            .enumerate()
            .map(|(i, r)| (i as i64, r)),
    );
    c
}

#[test]
fn state_is_written_merged_read_back_and_survives_a_reload() {
    let (c, log) = coordinator(500);
    let k = key(0);
    assert_eq!(c.read(&k, 0), Ok(None));
    assert_eq!(
        c.write(&write(&k, 0, 0, vec![])),
        Err(ShareStateError::Uninitialized(
            "Write operation on uninitialized share partition not allowed."
        ))
    );
    c.initialize(&k, 0, 10).unwrap();
    c.write(&write(
        &k,
        1,
        10,
        vec![batch(12, 14, 2, 1), batch(15, 19, 0, 1)],
    ))
    .unwrap();
    c.write(&write(&k, 1, 13, vec![batch(15, 16, 4, 5)]))
        .unwrap();
    let expected = PersistedState {
        state_epoch: 0,
        start_offset: 13,
        state_batches: vec![
            batch(13, 14, 2, 1),
            batch(15, 16, 4, 5),
            batch(17, 19, 0, 1),
        ],
    };
    assert_eq!(c.read(&k, 1), Ok(Some(expected.clone())));
    // One snapshot (the initialize), then updates, in Kafka's key types.
    let types: Vec<i16> = log
        .records(0)
        .iter()
        .map(|r| i16::from_be_bytes([r.key[0], r.key[1]]))
        .collect();
    assert_eq!(
        types,
        vec![
            SHARE_SNAPSHOT_KEY_TYPE,
            SHARE_UPDATE_KEY_TYPE,
            SHARE_UPDATE_KEY_TYPE
        ]
    );
    assert_eq!(reloaded(&log, 500).read(&k, 1), Ok(Some(expected)));
    let summary = c.read_summary(&k).unwrap().unwrap();
    assert_eq!((summary.start_offset, summary.leader_epoch), (13, 1));
}

#[test]
fn older_leader_and_state_epochs_are_fenced() {
    let (c, _) = coordinator(500);
    let k = key(0);
    c.initialize(&k, 0, 0).unwrap();
    // A new leader reads at epoch 5: the old one (epoch 4) may write no more.
    assert!(c.read(&k, 5).unwrap().is_some());
    assert_eq!(
        c.write(&write(&k, 4, 3, vec![])),
        Err(ShareStateError::FencedLeaderEpoch)
    );
    assert_eq!(c.read(&k, 4), Err(ShareStateError::FencedLeaderEpoch));
    c.write(&write(&k, 5, 3, vec![])).unwrap();
    // The offsets are altered (state epoch 1): writers of state epoch 0 are fenced.
    c.initialize(&k, 1, 100).unwrap();
    assert_eq!(
        c.write(&write(&k, 5, 101, vec![])),
        Err(ShareStateError::FencedStateEpoch)
    );
    assert_eq!(
        c.initialize(&k, 0, 0),
        Err(ShareStateError::FencedStateEpoch)
    );
    let mut w = write(&k, 5, 101, vec![]);
    w.state_epoch = 1;
    c.write(&w).unwrap();
    assert_eq!(c.read(&k, 5).unwrap().unwrap().start_offset, 101);
    assert_eq!(
        ShareStateError::FencedStateEpoch.code(),
        crate::error::ErrorCode::FENCED_STATE_EPOCH
    );
}

#[test]
fn a_snapshot_follows_every_n_updates_and_the_log_before_it_is_redundant() {
    let (c, log) = coordinator(2);
    let k = key(0);
    c.initialize(&k, 0, 0).unwrap();
    assert_eq!(c.redundant_offsets(), vec![(0, 0)]);
    for i in 0..5 {
        c.write(&write(&k, 0, i, vec![batch(i + 1, i + 1, 2, 1)]))
            .unwrap();
    }
    let kinds: Vec<bool> = log
        .records(0)
        .iter()
        .map(|r| matches!(decode(r), Ok(Some(ShareStateRecord::Snapshot(..)))))
        .collect();
    // initialize, update, update, snapshot (2 updates since the last), update, update.
    assert_eq!(kinds, vec![true, false, false, true, false, false]);
    assert_eq!(c.redundant_offsets(), vec![(0, 3)]);
    // Records from the redundant offset on rebuild the same state.
    let tail: Vec<(i64, _)> = log
        .records(0)
        .into_iter()
        .enumerate()
        .skip(3)
        .map(|(i, r)| (i as i64, r))
        .collect();
    let (pruned, _) = coordinator(2);
    pruned.load(0, tail);
    assert_eq!(pruned.read(&k, 0), c.read(&k, 0));
    assert_eq!(
        c.read(&k, 0).unwrap().unwrap().state_batches,
        vec![batch(4, 5, 2, 1)]
    );
}

#[test]
fn deleted_state_is_gone_after_a_reload_and_unloaded_partitions_are_not_coordinated() {
    let (c, log) = coordinator(500);
    let k = key(3);
    c.initialize(&k, 0, 7).unwrap();
    c.delete(&[k.clone(), key(4)]).unwrap();
    assert_eq!(c.read(&k, 0), Ok(None));
    assert_eq!(reloaded(&log, 500).read(&k, 0), Ok(None));
    assert_eq!(c.redundant_offsets(), vec![(0, log.end_offset(0))]);
    c.unload(0);
    assert_eq!(c.read(&k, 0), Err(ShareStateError::NotCoordinator));
    assert_eq!(
        ShareStateError::NotCoordinator.code(),
        crate::error::ErrorCode::NOT_COORDINATOR
    );
}

#[test]
fn keys_hash_as_kafka_names_them() {
    let k = SharePartitionKey {
        group_id: "group".to_string(),
        topic_id: Uuid([0; 16]),
        partition: 2,
    };
    assert_eq!(coordinator_key(&k), "group:AAAAAAAAAAAAAAAAAAAAAA:2");
}

/// A write whose append to `__share_group_state` fails answers as Kafka's share coordinator
/// does (`CoordinatorOperationExceptionHelper`): a failed log directory or a lost leadership
/// is NOT_COORDINATOR, so the persister finds the coordinator again; a batch too large is
/// UNKNOWN_SERVER_ERROR; nothing is replayed. The same codes as the group and transaction
/// coordinators give the same failures.
#[test]
fn a_failed_state_write_answers_as_kafkas_share_coordinator() {
    use crate::coordinator::runtime::CoordinatorLogError as L;
    use crate::error::ErrorCode as E;
    let (c, log) = coordinator(500);
    let k = key(0);
    c.initialize(&k, 0, 0).unwrap();
    for (failure, want) in [
        (L::Storage("disk".into()), E::NOT_COORDINATOR),
        (L::NotLeader, E::NOT_COORDINATOR),
        (L::NotAvailable, E::COORDINATOR_NOT_AVAILABLE),
        (L::RecordTooLarge, E::UNKNOWN_SERVER_ERROR),
    ] {
        log.fail_with(Some(failure.clone()));
        let err = c
            .write(&write(&k, 0, 0, vec![batch(0, 1, 2, 1)]))
            .unwrap_err();
        assert_eq!(err, ShareStateError::Log(failure.clone()));
        assert_eq!(err.code(), want, "{failure:?}");
        assert_eq!(err.code(), E::from(&failure));
    }
    log.fail_with(None);
    assert_eq!(c.read(&k, 0).unwrap().unwrap().state_batches, Vec::new());
}
