//! The high-watermark checkpoint of the replicas (Kafka's
//! `ReplicaManager.checkpointHighWatermarks`, written every
//! `replica.high.watermark.checkpoint.interval.ms` and at clean shutdown): the high watermark
//! of every replica in an online log dir goes to its dir's `replication-offset-checkpoint`,
//! and a restarted replica starts from it (`Partition::new_replica`) instead of its log start
//! offset, so that consumers of a restarted leader or follower do not see the high watermark
//! fall back to the log start until the ISR reports in again.
use crate::storage::checkpoint::OffsetMap;
use crate::storage::StorageError;

use super::manager::ReplicaManager;

impl ReplicaManager {
    /// Writes every online replica's high watermark to its log dir's
    /// `replication-offset-checkpoint`. A dir whose file cannot be written goes offline (the
    /// first such error is returned); the other dirs still get theirs.
    pub fn checkpoint_high_watermarks(&self) -> Result<(), StorageError> {
        let current: OffsetMap = self
            .partitions
            .iter()
            .filter(|e| !e.value().log.is_offline())
            .map(|e| (e.key().clone(), e.value().high_watermark()))
            .collect();
        self.logs().checkpoint_high_watermarks(&current)
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;
    use std::sync::Arc;

    use bytes::Bytes;

    use crate::protocol::codec::Uuid;
    use crate::protocol::records::RecordBatchBuilder;
    use crate::replica::ids::{BrokerEpoch, BrokerId, LeaderEpoch, PartitionEpoch};
    use crate::replica::manager::ReplicationConfig;
    use crate::replica::{PartitionChange, PartitionConfig, ReplicaManager};
    use crate::storage::checkpoint::REPLICATION_OFFSET_CHECKPOINT;
    use crate::storage::{LogConfig, LogManager};

    fn batch(value: &str) -> Bytes {
        let mut b = RecordBatchBuilder::new(0);
        b.append(1_000, None, Some(Bytes::from(value.to_string())), vec![]);
        b.build().freeze()
    }

    /// A broker process over `dir`: opening it again is a restart.
    fn broker(dir: &Path, id: i32) -> ReplicaManager {
        let logs = LogManager::open(vec![dir.to_path_buf()], id, LogConfig::default(), 0)
            .expect("open log dir");
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

    fn change(leader: i32, leader_epoch: i32, partition_epoch: i32) -> PartitionChange {
        PartitionChange {
            topic: "t".into(),
            partition: 0,
            topic_id: Uuid::ZERO,
            leader: Some(BrokerId(leader)),
            leader_epoch: LeaderEpoch(leader_epoch),
            partition_epoch: PartitionEpoch(partition_epoch),
            replicas: vec![BrokerId(0), BrokerId(1)],
            isr: vec![BrokerId(0), BrokerId(1)],
        }
    }

    fn replicate(leader: &ReplicaManager, follower: &ReplicaManager, now_ms: i64) {
        for (to, id, req) in follower.poll_fetch_requests(now_ms) {
            let resp = leader.serve_follower_fetch(&req, &|t| Some(t.topic.clone()), now_ms);
            follower.on_fetch_response(to, id, &resp, now_ms);
        }
    }

    fn hw(m: &ReplicaManager) -> i64 {
        m.get("t", 0).expect("replica").high_watermark()
    }

    #[test]
    fn restarted_replicas_start_at_the_checkpointed_high_watermark() {
        let root = tempfile::tempdir().expect("tempdir");
        let (dir_a, dir_b) = (root.path().join("a"), root.path().join("b"));
        let (a, b) = (broker(&dir_a, 0), broker(&dir_b, 1));
        for m in [&a, &b] {
            m.apply_partition_change(&change(0, 0, 0), PartitionConfig::default(), 0)
                .expect("apply");
        }
        let leader = a.get("t", 0).expect("leader");
        for i in 0..3 {
            leader
                .append_records(batch(&format!("v{i}")), 1)
                .expect("append");
        }
        for now in 2..5 {
            replicate(&a, &b, now);
        }
        assert_eq!((hw(&a), hw(&b)), (3, 3));
        // Two more batches reach the follower, but not yet the high watermark they make.
        leader.append_records(batch("v3"), 5).expect("append");
        leader.append_records(batch("v4"), 5).expect("append");
        replicate(&a, &b, 6);
        assert_eq!(b.get("t", 0).expect("follower").log_end_offset(), 5);
        assert_eq!(hw(&b), 3);
        a.checkpoint_high_watermarks().expect("checkpoint a");
        b.checkpoint_high_watermarks().expect("checkpoint b");
        assert_eq!(
            std::fs::read_to_string(dir_b.join(REPLICATION_OFFSET_CHECKPOINT)).expect("read"),
            "0\n1\nt 0 3\n",
            "Kafka's format"
        );

        // The follower restarts cleanly: its high watermark is the checkpointed 3, not its
        // log start (0) nor its log end (5), until the leader tells it more.
        b.logs().shutdown().expect("shutdown");
        drop(b);
        let b = broker(&dir_b, 1);
        b.apply_partition_change(&change(0, 0, 0), PartitionConfig::default(), 10)
            .expect("apply");
        assert_eq!(hw(&b), 3);
        replicate(&a, &b, 11);
        replicate(&a, &b, 12);
        assert_eq!((hw(&a), hw(&b)), (5, 5));

        // The leader crashes after one more batch and is elected again: it starts at its
        // checkpoint (3) and keeps it (no going back) until the follower's position is known
        // under the new epoch, then moves on with the ISR.
        leader.append_records(batch("v5"), 13).expect("append");
        drop(leader);
        drop(a);
        let a = broker(&dir_a, 0);
        let elected = change(0, 1, 1);
        a.apply_partition_change(&elected, PartitionConfig::default(), 20)
            .expect("lead");
        assert_eq!(hw(&a), 3);
        assert_eq!(a.get("t", 0).expect("leader").log_end_offset(), 6);
        b.apply_partition_change(&elected, PartitionConfig::default(), 20)
            .expect("follow");
        for now in 21..24 {
            replicate(&a, &b, now);
            assert!(hw(&a) >= 3, "a leader's high watermark never goes back");
        }
        assert_eq!((hw(&a), hw(&b)), (6, 6));

        // A checkpoint above the log (a power loss cut the log below it) is bounded by the
        // log end offset, and a negative one by the log start.
        for (written, start) in [(99, 6), (-5, 0)] {
            a.logs().shutdown().expect("shutdown");
            std::fs::write(
                dir_a.join(REPLICATION_OFFSET_CHECKPOINT),
                format!("0\n1\nt 0 {written}\n"),
            )
            .expect("write");
            let again = broker(&dir_a, 0);
            again
                .apply_partition_change(&change(1, 2, 2), PartitionConfig::default(), 30)
                .expect("follow");
            assert_eq!(hw(&again), start, "checkpoint {written}");
            again.logs().shutdown().expect("shutdown");
        }
    }

    #[test]
    fn an_unreadable_checkpoint_is_ignored_and_replicas_start_at_the_log_start() {
        let root = tempfile::tempdir().expect("tempdir");
        let dir = root.path().join("a");
        for garbage in [&b"0\n2\nt 0 3\n"[..], b"not a checkpoint", b"\xff\xfe\x00"] {
            let a = broker(&dir, 0);
            a.apply_partition_change(&change(0, 0, 0), PartitionConfig::default(), 0)
                .expect("apply");
            a.get("t", 0)
                .expect("leader")
                .append_records(batch("v"), 1)
                .expect("append");
            a.checkpoint_high_watermarks().expect("checkpoint");
            a.logs().shutdown().expect("shutdown");
            drop(a);
            // A torn write (a count the lines do not match), text that is no checkpoint, and
            // bytes that are not text: the dir stays online, the replica starts at 0.
            std::fs::write(dir.join(REPLICATION_OFFSET_CHECKPOINT), garbage).expect("write");
            let a = broker(&dir, 0);
            assert!(a.logs().offline_log_dirs().is_empty());
            a.apply_partition_change(&change(1, 1, 1), PartitionConfig::default(), 0)
                .expect("follow");
            assert_eq!(hw(&a), 0);
            a.logs().shutdown().expect("shutdown");
            std::fs::remove_dir_all(&dir).expect("clean");
        }
    }
}
