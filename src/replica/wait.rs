//! Requests that wait on partitions (Kafka's `DelayedOperationPurgatory`, keyed by
//! `TopicPartitionOperationKey`): an acks=all produce waits for the high watermark to pass its
//! batch, a long-poll fetch for data (`min_bytes`, `max_wait_ms`), the coordinators and
//! transaction markers for their appends to replicate.
//!
//! Each partition wakes only its own waiters ([`Partition::wake_waiters`]) when what a waiter
//! re-checks may have changed: its log end offset, high watermark, last stable offset or log
//! start offset, its leadership or leader epoch, or its removal (deletion, log dir failure). An
//! append to one partition therefore costs nothing to the requests waiting on others.
//! [`wait_until`] is the one loop that re-checks.
use std::future::Future as _;
use std::pin::Pin;
use std::sync::Arc;
use std::task::Poll;

use tokio::sync::futures::Notified;
use tokio::time::Instant;

use super::partition::Partition;

/// Waits until `check` answers `Some`, re-checking whenever any of `partitions` changes, and
/// gives up at `deadline` (None; the caller decides what a timeout answers). `check` runs at
/// once, so a condition already true costs no wait.
///
/// No wake-up is lost: interest in every partition is registered before each check, so a
/// change made between the check and the wait still wakes it.
pub async fn wait_until<T>(
    partitions: &[Arc<Partition>],
    deadline: Instant,
    mut check: impl FnMut() -> Option<T>,
) -> Option<T> {
    // The time parked counts as the request's remote time (Kafka's purgatory time); a check
    // that passes at once adds nothing.
    let mut parked_since: Option<Instant> = None;
    let done = |parked_since: Option<Instant>| {
        if let Some(since) = parked_since {
            crate::metrics::request::add_remote_time(since.elapsed());
        }
    };
    loop {
        let mut woken: Vec<Pin<Box<Notified<'_>>>> = partitions
            .iter()
            .map(|p| Box::pin(p.waiters().notified()))
            .collect();
        for n in &mut woken {
            n.as_mut().enable();
        }
        if let Some(outcome) = check() {
            done(parked_since);
            return Some(outcome);
        }
        let now = Instant::now();
        if now >= deadline {
            done(parked_since);
            return None;
        }
        parked_since.get_or_insert(now);
        tokio::select! {
            _ = tokio::time::sleep_until(deadline) => {
                done(parked_since);
                return None;
            }
            _ = any_of(&mut woken) => {}
        }
    }
}

/// Completes when any of `woken` does; never if it is empty (only the deadline ends the wait).
async fn any_of(woken: &mut [Pin<Box<Notified<'_>>>]) {
    std::future::poll_fn(|cx| {
        let mut ready = false;
        // Poll every one, so each registers its waker for the next round.
        for n in woken.iter_mut() {
            ready |= n.as_mut().poll(cx).is_ready();
        }
        if ready {
            Poll::Ready(())
        } else {
            Poll::Pending
        }
    })
    .await
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use bytes::Bytes;

    use super::*;
    use crate::protocol::codec::Uuid;
    use crate::protocol::records::RecordBatchBuilder;
    use crate::replica::partition::PartitionConfig;
    use crate::storage::{LogConfig, PartitionLog};

    fn open(dir: &std::path::Path, name: &str) -> Arc<Partition> {
        let log = PartitionLog::open(
            dir.join(format!("{name}-0")),
            LogConfig::default(),
            0,
            false,
            0,
        )
        .unwrap();
        Arc::new(
            Partition::new(
                name,
                0,
                Uuid::ZERO,
                Arc::new(log),
                PartitionConfig::default(),
            )
            .unwrap(),
        )
    }

    fn one_record() -> Bytes {
        let mut b = RecordBatchBuilder::new(0);
        b.append(1_000, None, Some(Bytes::from_static(b"v")), vec![]);
        b.build().freeze()
    }

    /// Counts how often the check of a waiter on `watched` ran while `other` took appends.
    #[tokio::test]
    async fn an_append_wakes_only_the_waiters_of_its_partition() {
        let tmp = tempfile::tempdir().unwrap();
        let watched = open(tmp.path(), "watched");
        let other = open(tmp.path(), "other");
        let checks = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let waiter = {
            let (watched, checks) = (watched.clone(), checks.clone());
            tokio::spawn(async move {
                let deadline = Instant::now() + Duration::from_secs(10);
                wait_until(&[watched.clone()], deadline, || {
                    checks.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                    (watched.high_watermark() > 0).then_some(())
                })
                .await
            })
        };
        tokio::time::sleep(Duration::from_millis(20)).await;
        for _ in 0..50 {
            other.append_records(one_record(), 0).unwrap();
            tokio::task::yield_now().await;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert_eq!(checks.load(std::sync::atomic::Ordering::SeqCst), 1);
        watched.append_records(one_record(), 0).unwrap();
        assert_eq!(waiter.await.unwrap(), Some(()));
        assert_eq!(checks.load(std::sync::atomic::Ordering::SeqCst), 2);
    }

    /// A wait over several partitions ends on a change to any of them; without one, at the
    /// deadline.
    #[tokio::test]
    async fn a_wait_over_several_partitions_ends_on_any_or_at_the_deadline() {
        let tmp = tempfile::tempdir().unwrap();
        let a = open(tmp.path(), "a");
        let b = open(tmp.path(), "b");
        let both = [a.clone(), b.clone()];
        let deadline = Instant::now() + Duration::from_millis(50);
        assert_eq!(wait_until(&both, deadline, || None::<()>).await, None);
        assert!(Instant::now() >= deadline);

        let waiter = {
            let both = both.clone();
            let b = b.clone();
            tokio::spawn(async move {
                let deadline = Instant::now() + Duration::from_secs(10);
                wait_until(&both, deadline, || (b.log_end_offset() > 0).then_some(())).await
            })
        };
        tokio::time::sleep(Duration::from_millis(20)).await;
        b.append_records(one_record(), 0).unwrap();
        let done = tokio::time::timeout(Duration::from_secs(5), waiter).await;
        assert_eq!(done.expect("woken by the append").unwrap(), Some(()));
    }

    /// A change made after the check and before the wait starts still wakes it: interest is
    /// registered before the check.
    #[tokio::test]
    async fn a_change_during_the_check_is_not_missed() {
        let tmp = tempfile::tempdir().unwrap();
        let p = open(tmp.path(), "p");
        let mut appended = false;
        let deadline = Instant::now() + Duration::from_secs(10);
        let started = std::time::Instant::now();
        let out = wait_until(&[p.clone()], deadline, || {
            if p.log_end_offset() > 0 {
                return Some(());
            }
            if !appended {
                // The change lands after this check has read the partition.
                appended = true;
                p.append_records(one_record(), 0).unwrap();
            }
            None
        })
        .await;
        assert_eq!(out, Some(()));
        assert!(started.elapsed() < Duration::from_secs(5));
    }
}
