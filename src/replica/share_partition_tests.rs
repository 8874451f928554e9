//! The share-partition state machine under a manual clock: acquisition and its limits, locks
//! expiring, delivery limits, releases, renewals, out-of-order and refused acknowledgements,
//! the log start offset moving under the window, and a random model check.
use super::*;

fn config(lock_ms: i64, limit: u16, max_in_flight: i64) -> SharePartitionConfig {
    SharePartitionConfig {
        record_lock_duration_ms: lock_ms,
        delivery_count_limit: limit,
        max_in_flight,
    }
}

fn range(first: i64, last: i64, delivery_count: u16) -> AcquiredRange {
    AcquiredRange {
        first_offset: first,
        last_offset: last,
        delivery_count,
    }
}

fn state(sp: &SharePartition, offset: i64) -> Option<(RecordState, u16)> {
    sp.record(offset).map(|r| (r.state, r.delivery_count))
}

use AcknowledgeType::*;
use RecordState::*;

#[test]
fn acquire_accept_and_the_start_offset_moves() {
    let mut sp = SharePartition::new(config(1000, 5, 100), 0);
    let got = sp.acquire("a", &[(0, 4), (5, 9)], 100, AcquireMode::RecordLimit, 0);
    assert_eq!(got, vec![range(0, 9, 1)]);
    assert_eq!((sp.start_offset(), sp.end_offset()), (0, 10));
    // Another member gets nothing while they are held.
    assert_eq!(
        sp.acquire("b", &[(0, 9)], 100, AcquireMode::RecordLimit, 10),
        vec![]
    );
    // Out of order: the tail first; the start offset only moves when the head is done.
    assert_eq!(sp.acknowledge("a", 5, 9, &[Accept], 20), Ok(()));
    assert_eq!(sp.start_offset(), 0);
    assert_eq!(sp.acknowledge("a", 0, 4, &[Accept], 30), Ok(()));
    assert_eq!((sp.start_offset(), sp.end_offset()), (10, 10));
    assert_eq!(state(&sp, 3), None);
}

#[test]
fn record_limits_and_the_in_flight_window() {
    let mut sp = SharePartition::new(config(1000, 5, 8), 0);
    // Record-limit mode stops inside a batch.
    let got = sp.acquire("a", &[(0, 4), (5, 9)], 3, AcquireMode::RecordLimit, 0);
    assert_eq!(got, vec![range(0, 2, 1)]);
    // Batch-optimised mode takes the batch it began under the limit whole, then stops.
    let got = sp.acquire("b", &[(3, 4), (5, 9)], 1, AcquireMode::BatchOptimized, 0);
    assert_eq!(got, vec![range(3, 4, 1)]);
    // At most 8 records between the start and the end offset.
    let got = sp.acquire("c", &[(5, 20)], 100, AcquireMode::RecordLimit, 0);
    assert_eq!(got, vec![range(5, 7, 1)]);
    assert_eq!(sp.end_offset(), 8);
    // Once the head is acknowledged, the window slides.
    assert_eq!(sp.acknowledge("a", 0, 2, &[Accept], 1), Ok(()));
    let got = sp.acquire("c", &[(8, 20)], 100, AcquireMode::RecordLimit, 2);
    assert_eq!(got, vec![range(8, 10, 1)]);
}

#[test]
fn expired_locks_redeliver_until_the_delivery_limit() {
    let mut sp = SharePartition::new(config(1000, 3, 100), 0);
    for delivery in 1..=3u16 {
        let now = (delivery as i64 - 1) * 2000;
        let got = sp.acquire("a", &[(0, 1)], 10, AcquireMode::RecordLimit, now);
        assert_eq!(got, vec![range(0, 1, delivery)], "delivery {delivery}");
        assert_eq!(sp.next_lock_deadline_ms(), Some(now + 1000));
        // Nothing expires before the deadline ...
        assert_eq!(sp.expire_locks(now + 999), 0);
        // ... and at it the records are back (or given up at the limit).
        assert_eq!(sp.expire_locks(now + 1000), 2);
        let archived = if delivery == 3 { 2 } else { 0 };
        assert_eq!(sp.take_limit_archived(), archived, "delivery {delivery}");
    }
    assert_eq!(sp.take_limit_archived(), 0);
    // Delivered 3 times: archived, and the start offset has moved past them.
    assert_eq!(state(&sp, 0), None);
    assert_eq!(sp.start_offset(), 2);
    assert_eq!(
        sp.acquire("a", &[(0, 1)], 10, AcquireMode::RecordLimit, 10_000),
        vec![]
    );
}

#[test]
fn release_reject_renew_and_member_departure() {
    let mut sp = SharePartition::new(config(1000, 2, 100), 0);
    sp.acquire("a", &[(0, 3)], 10, AcquireMode::RecordLimit, 0);
    // One type per offset: release 0, reject 1, renew 2, accept 3.
    assert_eq!(
        sp.acknowledge("a", 0, 3, &[Release, Reject, Renew, Accept], 500),
        Ok(())
    );
    assert_eq!(state(&sp, 0), Some((Available, 1)));
    assert_eq!(state(&sp, 1), Some((Archived, 1)));
    assert_eq!(state(&sp, 2), Some((Acquired, 1)));
    // The renewed lock runs from the renewal: not expired at 1000, expired at 1500.
    assert_eq!(sp.expire_locks(1000), 0);
    assert_eq!(sp.record(2).unwrap().lock_deadline_ms, Some(1500));
    // b takes 0 again (its second delivery); a leaves, so 2 goes back.
    assert_eq!(
        sp.acquire("b", &[(0, 3)], 10, AcquireMode::RecordLimit, 1100),
        vec![range(0, 0, 2)]
    );
    sp.release_member("a");
    assert_eq!(state(&sp, 2), Some((Available, 1)));
    // A rejection is not the delivery limit's.
    assert_eq!(sp.take_limit_archived(), 0);
    // b releases 0 at its second delivery: the limit (2) archives it.
    assert_eq!(sp.acknowledge("b", 0, 0, &[Release], 1200), Ok(()));
    assert_eq!(sp.start_offset(), 2);
    assert_eq!(sp.take_limit_archived(), 1);
}

#[test]
fn refused_acknowledgements_change_nothing() {
    let mut sp = SharePartition::new(config(1000, 5, 100), 0);
    sp.acquire("a", &[(0, 4)], 10, AcquireMode::RecordLimit, 0);
    let before = sp.clone();
    // Another member's records, offsets never acquired, a mix: all refused whole.
    assert_eq!(
        sp.acknowledge("b", 0, 1, &[Accept], 1),
        Err(ErrorCode::INVALID_RECORD_STATE)
    );
    assert_eq!(
        sp.acknowledge("a", 3, 6, &[Accept], 1),
        Err(ErrorCode::INVALID_RECORD_STATE)
    );
    assert_eq!(
        sp.acknowledge("a", 0, 2, &[Accept, Accept], 1),
        Err(ErrorCode::INVALID_REQUEST)
    );
    assert_eq!(sp, before);
    // Twice: the second finds the records no longer acquired.
    assert_eq!(sp.acknowledge("a", 0, 0, &[Accept], 1), Ok(()));
    assert_eq!(
        sp.acknowledge("a", 0, 0, &[Accept], 1),
        Err(ErrorCode::INVALID_RECORD_STATE)
    );
    // After its lock expired, a member may no longer acknowledge.
    assert_eq!(
        sp.acknowledge("a", 1, 1, &[Accept], 1000),
        Err(ErrorCode::INVALID_RECORD_STATE)
    );
    assert_eq!(state(&sp, 1), Some((Available, 1)));
}

#[test]
fn gaps_and_skipped_offsets_are_archived() {
    let mut sp = SharePartition::new(config(1000, 5, 100), 0);
    // The log returned batches 0-1 and 5-6 (2-4 compacted away).
    let got = sp.acquire("a", &[(0, 1), (5, 6)], 10, AcquireMode::RecordLimit, 0);
    assert_eq!(got, vec![range(0, 1, 1), range(5, 6, 1)]);
    assert_eq!(state(&sp, 3), Some((Archived, 0)));
    // Offset 6 held no record inside its batch: the client acknowledges it as a gap.
    assert_eq!(sp.acknowledge("a", 5, 6, &[Accept, Gap], 1), Ok(()));
    assert_eq!(sp.acknowledge("a", 0, 1, &[Accept], 1), Ok(()));
    assert_eq!((sp.start_offset(), sp.end_offset()), (7, 7));
}

#[test]
fn the_log_start_offset_moving_under_the_window() {
    let mut sp = SharePartition::new(config(1000, 5, 100), 0);
    sp.acquire("a", &[(0, 9)], 100, AcquireMode::RecordLimit, 0);
    // Retention deletes 0-5, held or not.
    sp.update_log_start_offset(6);
    assert_eq!((sp.start_offset(), sp.end_offset()), (6, 10));
    assert_eq!(
        sp.acknowledge("a", 4, 4, &[Accept], 1),
        Err(ErrorCode::INVALID_RECORD_STATE)
    );
    assert_eq!(sp.acknowledge("a", 6, 9, &[Accept], 1), Ok(()));
    // Past the end offset: the window is empty and starts there.
    sp.update_log_start_offset(20);
    assert_eq!((sp.start_offset(), sp.end_offset()), (20, 20));
    assert_eq!(
        sp.acquire("a", &[(18, 21)], 100, AcquireMode::RecordLimit, 2),
        vec![range(20, 21, 1)]
    );
}

/// Random operations against a plain model: no record is ever handed to two members at once,
/// none is delivered more than the limit, an accepted record never comes back, and every
/// record below the end offset is either settled, in flight, or below the start offset.
#[test]
fn random_operations_keep_the_invariants() {
    let mut rng = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = |n: u64| {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng % n
    };
    for _ in 0..20 {
        let limit = 1 + next(4) as u16;
        let mut sp = SharePartition::new(config(100, limit, 50), 0);
        let mut accepted = std::collections::BTreeSet::new();
        let mut deliveries: BTreeMap<i64, u16> = BTreeMap::new();
        let mut now = 0i64;
        let members = ["a", "b", "c"];
        for _ in 0..400 {
            now += next(40) as i64;
            let m = members[next(3) as usize];
            match next(4) {
                0 | 1 => {
                    let first = next(60) as i64;
                    let got = sp.acquire(
                        m,
                        &[(first, first + next(8) as i64)],
                        1 + next(10) as i64,
                        AcquireMode::RecordLimit,
                        now,
                    );
                    for r in got {
                        for o in r.first_offset..=r.last_offset {
                            assert!(!accepted.contains(&o), "accepted {o} delivered again");
                            let d = deliveries.entry(o).or_default();
                            *d += 1;
                            assert_eq!(*d, r.delivery_count);
                            assert!(*d <= limit);
                        }
                    }
                }
                2 => {
                    let first = sp.start_offset() + next(10) as i64;
                    let last = first + next(3) as i64;
                    let t = [Accept, Release, Reject, Renew][next(4) as usize];
                    let mine = (first..=last).all(|o| {
                        sp.record(o).is_some_and(|r| {
                            r.state == Acquired
                                && r.member_id.as_deref() == Some(m)
                                && r.lock_deadline_ms.unwrap() > now
                        })
                    });
                    let result = sp.acknowledge(m, first, last, &[t], now);
                    assert_eq!(result.is_ok(), mine);
                    if mine && t == Accept {
                        accepted.extend(first..=last);
                    }
                }
                _ => {
                    sp.release_member(m);
                }
            }
            assert!(sp.start_offset() <= sp.end_offset());
            assert!(sp.end_offset() - sp.start_offset() <= 50);
            for o in sp.start_offset()..sp.end_offset() {
                if let Some(r) = sp.record(o) {
                    assert_eq!(r.state == Acquired, r.member_id.is_some());
                    assert!(!(accepted.contains(&o) && r.state != Acknowledged));
                }
            }
        }
    }
}
