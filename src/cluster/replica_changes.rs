//! The replica changes an image brings to this broker, applied in bulk: the logs of new
//! replicas made all at once on several threads, and, for a large topic creation, after the
//! image is published. Kafka's controller answers CreateTopics once the records are committed
//! and its brokers create the logs as they learn of them; a 10,000-partition topic is ten
//! thousand directories, which must neither hold up the answer nor the metadata of the
//! requests behind it (a second CreatePartitions, a new topic).
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use super::BrokerParts;
use crate::config::DynamicLayers;
use crate::controller::image::MetadataImage;
use crate::protocol::codec::Uuid;
use crate::replica::{PartitionChange, PartitionConfig};

/// What an applied change leaves: the replica and the (leader, partition) epochs it is at.
pub type Applied = Vec<((String, i32), (i32, i32))>;

/// Replicas being made, with the (leader, partition) epochs they are made at.
pub type Pending = HashMap<(String, i32), (i32, i32)>;

/// Above this many new logs in one image, the image is published before they are made.
pub(super) const DEFER_NEW_LOGS_ABOVE: usize = 100;

/// Below this many changes they are applied on the publisher's own thread.
const PARALLEL_CHANGES_FROM: usize = 64;

/// One local replica whose leader or partition epoch moved.
pub struct ReplicaChange {
    pub key: (String, i32),
    pub epochs: (i32, i32),
    pub change: PartitionChange,
    pub config: PartitionConfig,
    pub assigned_dir: Uuid,
}

/// Applies replica changes: the logs of new replicas first, made all at once, then each
/// change, on several threads when there are many (each is a few file-system calls: the
/// topic id and the leader epoch checkpoint). Returns what was applied.
pub fn apply_changes(
    broker: &BrokerParts,
    changes: Vec<ReplicaChange>,
    now_ms: i64,
    threads: usize,
) -> Applied {
    let new_logs: Vec<_> = changes
        .iter()
        .filter(|c| broker.replicas.get(&c.key.0, c.key.1).is_none())
        .map(|c| {
            (
                c.key.0.clone(),
                c.key.1,
                c.config.log.clone(),
                Some(c.assigned_dir),
            )
        })
        .collect();
    if new_logs.len() > 1 {
        // A failure here is met again, and logged, when the change is applied below.
        broker.replicas.logs().get_or_create_many(new_logs, threads);
    }
    let apply = |c: &ReplicaChange| match broker.replicas.apply_partition_change_in(
        &c.change,
        c.config.clone(),
        now_ms,
        Some(c.assigned_dir),
    ) {
        Ok(_) => Some((c.key.clone(), c.epochs)),
        Err(e) => {
            tracing::error!(topic = %c.key.0, partition = c.key.1, error = %e.message(), "cannot apply partition state");
            None
        }
    };
    if changes.len() < PARALLEL_CHANGES_FROM || threads == 1 {
        return changes.iter().filter_map(apply).collect();
    }
    let chunk = changes.len().div_ceil(threads);
    std::thread::scope(|scope| {
        let workers: Vec<_> = changes
            .chunks(chunk)
            .map(|part| scope.spawn(move || part.iter().filter_map(apply).collect::<Vec<_>>()))
            .collect();
        workers
            .into_iter()
            .flat_map(|w| w.join().expect("replica change thread panicked"))
            .collect()
    })
}

/// The cores this process may use.
pub fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// Deferred changes being made on a blocking thread, with what they were made from, so the
/// publisher can go on with later images that leave them alone.
pub struct InFlight {
    handle: tokio::task::JoinHandle<Applied>,
    keys: Pending,
    topic_configs: BTreeMap<String, BTreeMap<String, String>>,
    layers: DynamicLayers,
}

impl InFlight {
    pub fn start(
        broker: &Arc<BrokerParts>,
        image: &MetadataImage,
        changes: Vec<ReplicaChange>,
    ) -> Self {
        let keys = changes.iter().map(|c| (c.key.clone(), c.epochs)).collect();
        // One lookup per topic, not per partition: a creation is thousands of one topic's.
        let names: std::collections::BTreeSet<&str> =
            changes.iter().map(|c| c.key.0.as_str()).collect();
        let topic_configs = names
            .into_iter()
            .filter_map(|name| image.topic_meta(name))
            .map(|m| (m.name, m.configs))
            .collect();
        let parts = broker.clone();
        let now_ms = broker.now_ms();
        InFlight {
            // One core fewer than the machine has: requests (a CreatePartitions behind this
            // creation, produce to other topics) keep a core while the logs are made.
            handle: tokio::task::spawn_blocking(move || {
                let started = std::time::Instant::now();
                let count = changes.len();
                let done = apply_changes(&parts, changes, now_ms, cores().saturating_sub(1).max(1));
                tracing::info!(
                    replicas = count,
                    elapsed_ms = started.elapsed().as_millis() as u64,
                    "made the logs of new replicas after publishing their metadata"
                );
                done
            }),
            keys,
            topic_configs,
            layers: super::publisher::dynamic_layers(image, broker.node_id),
        }
    }

    pub fn keys(&self) -> &Pending {
        &self.keys
    }

    pub fn is_finished(&self) -> bool {
        self.handle.is_finished()
    }

    /// Whether `image` leaves every replica being made as it was: same epochs, still hosted
    /// here, same topic and broker configs. Anything else waits for the making to finish.
    pub fn unaffected_by(&self, broker: &BrokerParts, image: &MetadataImage) -> bool {
        let local = broker.node_id;
        super::publisher::dynamic_layers(image, local) == self.layers
            && self.topic_configs.iter().all(|(name, configs)| {
                image
                    .topic_meta(name)
                    .is_some_and(|m| &m.configs == configs)
            })
            && self.keys.iter().all(|((topic, p), epochs)| {
                image
                    .topics
                    .get(topic)
                    .and_then(|t| t.partitions.get(p))
                    .is_some_and(|r| {
                        r.replicas.contains(&local)
                            && (r.leader_epoch, r.partition_epoch) == *epochs
                    })
            })
    }

    /// Waits for the changes; what was applied.
    pub async fn finish(self) -> Applied {
        match self.handle.await {
            Ok(done) => done,
            Err(e) => {
                tracing::error!(error = %e, "making the logs of new replicas failed");
                Vec::new()
            }
        }
    }
}
