//! The group coordinator's `/metrics` counters (`group-coordinator-metrics`) against known
//! events: offsets committed, deleted and expired, classic rebalances completed, consumer
//! group epoch bumps.
use super::consumer::{send, topics, Hb};
use super::Harness;

#[test]
fn commits_deletions_and_expirations_are_counted_per_partition() {
    let mut h = Harness::new();
    let m = h.shard.metrics.clone();
    assert_eq!(
        h.commit(
            2,
            "simple",
            "",
            -1,
            &[("t", 0, 10, None), ("u", 0, 4, None)]
        ),
        vec![0, 0]
    );
    assert_eq!(m.offset_commits.get(), 2);
    // A refused commit (metadata too large) counts nothing.
    let big = "x".repeat(h.config.offset_metadata_max_bytes + 1);
    assert_ne!(
        h.commit(2, "simple", "", -1, &[("t", 0, 11, Some(&big))]),
        vec![0]
    );
    assert_eq!(m.offset_commits.get(), 2);
    assert_eq!(h.delete_offsets("simple", "u"), (0, vec![0]));
    assert_eq!(m.offset_deletions.get(), 1);
    // The remaining offset expires with retention.
    h.advance(h.config.offsets_retention_ms + h.config.offsets_retention_check_interval_ms);
    assert_eq!(h.fetched("simple", "t", 0).0, -1);
    assert_eq!(m.offset_expirations.get(), 1);
}

#[test]
fn completed_classic_rebalances_and_consumer_group_epoch_bumps_are_counted() {
    let mut h = Harness::new();
    let m = h.shard.metrics.clone();
    h.stable_group(2);
    assert_eq!(m.classic_group_completed_rebalances.get(), 1);

    let view = topics(4, 0);
    assert_eq!(send(&mut h, Hb::join("m1", &["foo"]), &view).error_code, 0);
    assert_eq!(m.consumer_group_rebalances.get(), 1);
    assert_eq!(send(&mut h, Hb::join("m2", &["foo"]), &view).error_code, 0);
    assert_eq!(m.consumer_group_rebalances.get(), 2);
}
