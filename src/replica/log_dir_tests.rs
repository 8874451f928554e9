//! A log dir failing under the replica manager (Kafka's `ReplicaManager.handleLogDirFailure`):
//! the failed append is not acknowledged, the dir's replicas answer KAFKA_STORAGE_ERROR and
//! leave their fetch sessions, a waiting acks=all fails, and the other dir keeps serving.
use std::sync::Arc;

use bytes::Bytes;

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

fn broker(dirs: &[std::path::PathBuf]) -> ReplicaManager {
    let logs = LogManager::open(dirs.to_vec(), 1, LogConfig::default(), 0).expect("open");
    let m = ReplicaManager::with_config(
        Arc::new(logs),
        ReplicationConfig {
            local: BrokerId(1),
            ..ReplicationConfig::default()
        },
    );
    m.set_broker_epoch(BrokerEpoch(101));
    m
}

/// Broker 1 follows broker 0 for `topic`-0.
fn follow(topic: &str) -> PartitionChange {
    PartitionChange {
        topic: topic.into(),
        partition: 0,
        topic_id: Uuid::ZERO,
        leader: Some(BrokerId(0)),
        leader_epoch: LeaderEpoch(1),
        partition_epoch: PartitionEpoch(1),
        replicas: vec![BrokerId(0), BrokerId(1)],
        isr: vec![BrokerId(0), BrokerId(1)],
    }
}

#[test]
fn replicas_of_a_failed_dir_stop_and_the_other_dir_serves() {
    let root = tempfile::tempdir().expect("tempdir");
    let dirs = vec![root.path().join("d0"), root.path().join("d1")];
    let m = broker(&dirs);
    // Least-loaded placement: a-0 in d0, b-0 in d1, f-0 (followed) in d0.
    let a = m
        .make_leader("a", 0, Uuid::ZERO, PartitionConfig::default())
        .expect("a");
    let b = m
        .make_leader("b", 0, Uuid::ZERO, PartitionConfig::default())
        .expect("b");
    m.apply_partition_change(&follow("f"), PartitionConfig::default(), 0)
        .expect("f");
    assert_eq!(a.log.log_dir().path(), dirs[0]);
    assert_eq!(b.log.log_dir().path(), dirs[1]);
    assert_eq!(
        m.get("f", 0).expect("f").log.log_dir().path(),
        dirs[0].as_path()
    );
    assert_eq!(m.fetch_sources(), vec![BrokerId(0)]);
    let acked = a.append_records(batch("acked"), 0).expect("acked");
    assert_eq!(acked.last_offset, 0);

    m.logs()
        .log_dir_state(&dirs[0])
        .expect("d0")
        .inject_io_failure();
    let err = a.append_records(batch("lost"), 0).unwrap_err();
    assert_eq!(err.code(), ErrorCode::KAFKA_STORAGE_ERROR);
    // Before the clean-up pass the dir's replicas are already hidden.
    assert!(m.get("a", 0).is_none());
    assert_eq!(
        m.missing_partition_code("a", 0),
        ErrorCode::KAFKA_STORAGE_ERROR
    );
    assert_eq!(
        m.missing_partition_code("nope", 0),
        ErrorCode::UNKNOWN_TOPIC_OR_PARTITION
    );
    // A produce that appended before the failure and still waits for acks=all fails.
    let outcome = a.acks_all_outcome(1, a.leader_epoch());
    assert!(
        matches!(&outcome, Some(Err(e)) if e.code() == ErrorCode::KAFKA_STORAGE_ERROR),
        "{outcome:?}"
    );

    let failures = m.handle_log_dir_failures();
    assert_eq!(failures.newly_offline.len(), 1);
    assert_eq!(failures.newly_offline[0].0, dirs[0]);
    assert!(!failures.newly_offline[0].1.is_zero(), "directory id");
    let mut gone = failures.offline_partitions.clone();
    gone.sort();
    assert_eq!(gone, vec![("a".to_string(), 0), ("f".to_string(), 0)]);
    assert!(!failures.all_offline);
    assert_eq!(m.offline_directory_ids(), vec![failures.newly_offline[0].1]);
    assert!(m.fetch_sources().is_empty(), "f-0 left its fetch session");
    assert!(m.handle_log_dir_failures().newly_offline.is_empty(), "once");

    // Not reopened elsewhere, whatever the controller says.
    let refused = m.make_leader("a", 0, Uuid::ZERO, PartitionConfig::default());
    assert!(matches!(refused, Err(e) if e.code() == ErrorCode::KAFKA_STORAGE_ERROR));
    let err = m
        .apply_partition_change(&follow("f"), PartitionConfig::default(), 0)
        .unwrap_err();
    assert_eq!(err.code(), ErrorCode::KAFKA_STORAGE_ERROR);
    assert_eq!(
        m.missing_partition_code("f", 0),
        ErrorCode::KAFKA_STORAGE_ERROR
    );

    // The healthy dir serves on, and takes new partitions.
    b.append_records(batch("fine"), 0).expect("b serves");
    let c = m
        .make_leader("c", 0, Uuid::ZERO, PartitionConfig::default())
        .expect("c");
    assert_eq!(c.log.log_dir().path(), dirs[1]);
    assert_eq!(m.all().len(), 2);

    // Its last dir failing leaves the broker nothing: it must stop.
    m.logs()
        .log_dir_state(&dirs[1])
        .expect("d1")
        .inject_io_failure();
    assert!(b.append_records(batch("x"), 0).is_err());
    assert!(m.handle_log_dir_failures().all_offline);
}

/// KIP-858 on the broker: a new replica goes to the dir the controller assigned; one assigned
/// to a dir offline here stays offline rather than being created fresh in the other dir; and
/// each replica's dir, open or offline, is what AssignReplicasToDirs reports.
#[test]
fn assigned_dirs_place_replicas_and_an_offline_one_is_never_recreated() {
    let root = tempfile::tempdir().expect("tempdir");
    let dirs = vec![root.path().join("d0"), root.path().join("d1")];
    let m = broker(&dirs);
    let states = m.logs().log_dir_states().to_vec();
    let (d0, d1) = (states[0].directory_id(), states[1].directory_id());
    // Least-loaded would pick d0 for the first replica: the assignment says d1.
    m.apply_partition_change_in(&follow("x"), PartitionConfig::default(), 0, Some(d1))
        .expect("x");
    assert_eq!(m.replica_directory("x", 0), Some(d1));
    assert!(!m.hold_offline_if_dir_unavailable("x", 0, d1));
    m.apply_partition_change(&follow("y"), PartitionConfig::default(), 0)
        .expect("y");
    assert_eq!(m.replica_directory("y", 0), Some(d0));
    // With every dir healthy, a dir this broker does not have (a replaced disk) is no reason
    // to keep a replica offline.
    assert!(!m.hold_offline_if_dir_unavailable("z", 0, Uuid([9; 16])));

    states[0].inject_io_failure();
    // The fault trips at the dir's next I/O.
    let y = m.get("y", 0).expect("y");
    assert!(y.log.flush().is_err());
    m.handle_log_dir_failures();
    // y's replica is in the failed dir: its assignment still names it.
    assert_eq!(m.replica_directory("y", 0), Some(d0));
    assert_eq!(m.replica_directory("x", 0), Some(d1));
    // A replica assigned to the failed dir, or to an unknown one while a dir is offline, is
    // held offline and answers KAFKA_STORAGE_ERROR; an unassigned one is created.
    assert!(m.hold_offline_if_dir_unavailable("w", 0, d0));
    assert!(m.hold_offline_if_dir_unavailable("v", 0, Uuid([9; 16])));
    assert_eq!(
        m.missing_partition_code("w", 0),
        ErrorCode::KAFKA_STORAGE_ERROR
    );
    assert!(m.logs().get("w", 0).is_none());
    assert!(!m.hold_offline_if_dir_unavailable("u", 0, Uuid::ZERO));
    assert!(m
        .apply_partition_change(&follow("w"), PartitionConfig::default(), 0)
        .is_err());
    assert_eq!(m.replica_directory("w", 0), Some(d0));
}
