//! What `/metrics` learns from one metadata image to the next: the series of a deleted topic
//! are dropped (Kafka's `BrokerTopicStats.removeMetrics` when a topic goes away), and, on a
//! node with the controller role, leaders elected from outside their previous ISR are counted
//! as unclean elections (Kafka's `ControllerMetricsChanges.handlePartitionChange`, which every
//! KRaft controller runs as it applies the log). The publisher calls [`observe`] on nodes with
//! the broker role; a controller-only node, which has no publisher, runs [`follow`].
//!
//! Images are published as they come, so two changes applied between two publications are
//! seen as one: an unclean election followed at once by another change of the same partition
//! is still counted (its leader is compared with the ISR of the last image seen), but two
//! elections of one partition between two images count once.
use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use crate::controller::image::MetadataImage;
use crate::metrics::BrokerMetrics;

/// A controller-only node's metrics from the images its quorum member applies, until
/// `shutdown`.
pub async fn follow(
    metrics: Arc<BrokerMetrics>,
    cluster: Arc<super::ClusterContext>,
    shutdown: CancellationToken,
) {
    let mut images = cluster.quorum_state();
    let mut previous = images.borrow_and_update().1.clone();
    loop {
        tokio::select! {
            _ = shutdown.cancelled() => return,
            changed = images.changed() => if changed.is_err() { return },
        }
        let next = images.borrow_and_update().1.clone();
        observe(&metrics, &previous, &next, true);
        previous = next;
    }
}

/// Applies the change from `previous` to `next` to the metrics.
pub fn observe(
    metrics: &BrokerMetrics,
    previous: &MetadataImage,
    next: &MetadataImage,
    controller: bool,
) {
    for (name, topic) in &previous.topics {
        let same = next
            .topics
            .get(name)
            .is_some_and(|t| t.topic_id == topic.topic_id);
        if !same {
            metrics.remove_topic(name);
        }
    }
    if controller {
        let n = unclean_elections(previous, next);
        metrics.replication.unclean_leader_elections.inc_by(n);
    }
}

/// Partitions of `next` led by a broker that was not in their ISR in `previous`. A new
/// partition (or a topic created again) has no previous ISR and counts as clean, as in Kafka.
pub fn unclean_elections(previous: &MetadataImage, next: &MetadataImage) -> u64 {
    let mut n = 0;
    for (name, topic) in &next.topics {
        let Some(before) = previous
            .topics
            .get(name)
            .filter(|t| t.topic_id == topic.topic_id)
        else {
            continue;
        };
        for (index, p) in &topic.partitions {
            let Some(was) = before.partitions.get(index) else {
                continue;
            };
            if p.has_leader() && p.leader != was.leader && !was.isr.contains(&p.leader) {
                n += 1;
            }
        }
    }
    n
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::controller::image::{PartitionRegistration, TopicImage};

    fn image(id: u8, leader: i32, isr: &[i32]) -> MetadataImage {
        let mut m = MetadataImage::default();
        let mut t = TopicImage {
            name: "t".into(),
            topic_id: [id; 16],
            partitions: Default::default(),
        };
        t.partitions.insert(
            0,
            PartitionRegistration {
                replicas: vec![1, 2, 3],
                isr: isr.to_vec(),
                leader,
                leader_epoch: 0,
                partition_epoch: 0,
                adding_replicas: vec![],
                removing_replicas: vec![],
                directories: vec![],
            },
        );
        m.topics.insert("t".into(), t);
        m
    }

    #[test]
    fn a_leader_from_outside_the_previous_isr_is_unclean() {
        // Leader 1 with ISR [1]; broker 2 takes over though it was out of the ISR.
        assert_eq!(unclean_elections(&image(1, 1, &[1]), &image(1, 2, &[2])), 1);
        // From within the ISR: clean.
        assert_eq!(
            unclean_elections(&image(1, 1, &[1, 2]), &image(1, 2, &[2])),
            0
        );
        // Offline (no leader) is not an election; a new topic id is a new partition.
        assert_eq!(
            unclean_elections(&image(1, 1, &[1]), &image(1, -1, &[1])),
            0
        );
        assert_eq!(unclean_elections(&image(1, 1, &[1]), &image(2, 2, &[2])), 0);
        assert_eq!(
            unclean_elections(&MetadataImage::default(), &image(1, 2, &[2])),
            0
        );
    }

    #[test]
    fn deleted_or_recreated_topics_lose_their_series_and_elections_count_on_controllers() {
        let m = BrokerMetrics::new(&[]);
        let _ = m.topic("t");
        observe(&m, &image(1, 1, &[1]), &image(1, 2, &[2]), true);
        observe(&m, &image(1, 1, &[1]), &image(1, 2, &[2]), false);
        assert_eq!(m.replication.unclean_leader_elections.get(), 1);
        let mut s = String::new();
        prometheus_client::encoding::text::encode(&mut s, m.registry()).unwrap();
        assert!(s.contains("topic=\"t\""));
        // Created again under a new id: the old series go.
        observe(&m, &image(1, 1, &[1]), &image(2, 1, &[1]), true);
        let mut s = String::new();
        prometheus_client::encoding::text::encode(&mut s, m.registry()).unwrap();
        assert!(!s.contains("topic=\"t\""), "{s}");
    }
}
