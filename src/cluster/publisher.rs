//! Applies each new metadata image to this broker, as Kafka's `BrokerMetadataPublisher` does:
//! the topic mirror the handlers read, the role of every local replica (leader or follower,
//! from its `PartitionRegistration`), removal of replicas the broker no longer hosts, topic
//! config changes, and the coordinators, which follow the leadership of their internal
//! partitions (a partition led here is loaded by replaying it; one led elsewhere is unloaded,
//! so its clients get NOT_COORDINATOR and look the coordinator up again). Dynamic broker
//! configs (BROKER resources, cluster default and this broker's own) go to the broker's
//! effective config first, and when it changed every local partition's config is resolved
//! again, so topics without an override of their own follow a new default at once. Group
//! configs (GROUP resources) go to the group coordinator.
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

use super::replica_changes::{apply_changes, InFlight, ReplicaChange, DEFER_NEW_LOGS_ABOVE};
use super::BrokerParts;
use crate::controller::image::MetadataImage;
use crate::controller::{TopicMeta, RESOURCE_BROKER, RESOURCE_GROUP};
use crate::coordinator::offsets_topic::{
    plain_records, read_partition, read_partition_at, OFFSETS_TOPIC, TRANSACTION_TOPIC,
};
use crate::coordinator::share_state::SHARE_STATE_TOPIC_NAME;
use crate::protocol::codec::Uuid;
use crate::replica::{BrokerEpoch, BrokerId};

/// What the publisher applied last, so each image only changes what differs.
#[derive(Default)]
pub struct Publisher {
    /// (leader epoch, partition epoch) applied per local replica.
    applied: HashMap<(String, i32), (i32, i32)>,
    configs: BTreeMap<String, BTreeMap<String, String>>,
    leading_offsets: BTreeSet<i32>,
    leading_txn: BTreeSet<i32>,
    leading_share_state: BTreeSet<i32>,
    broker_epoch: i64,
    strays_removed: bool,
    /// The BROKER config layers of the last image, applied or refused.
    dynamic_layers: crate::config::DynamicLayers,
    /// The GROUP configs of the last image, handed to the group coordinator.
    group_configs: BTreeMap<String, BTreeMap<String, String>>,
}

impl Publisher {
    /// Applies `image` to this broker; returns the replica changes left to make after it is
    /// published (the new logs of a large topic creation), for [`apply_changes`].
    /// `pending`: replicas still being made from an earlier image, left alone.
    pub fn publish(
        &mut self,
        broker: &BrokerParts,
        image: &MetadataImage,
        pending: Option<&super::replica_changes::Pending>,
    ) -> Vec<ReplicaChange> {
        let local = broker.node_id;
        let now = broker.now_ms();
        broker.txns.set_transaction_version(
            image
                .features
                .level(crate::controller::features::TRANSACTION_VERSION),
        );
        if !self.strays_removed {
            self.strays_removed = true;
            remove_stray_logs(broker, image, local);
        }
        self.apply_group_configs(broker, image);
        if self.apply_dynamic_configs(broker, image) {
            // Every topic's partition config is resolved again below.
            self.configs.clear();
        }
        let all_metas = image.topic_metas();
        let metas: BTreeMap<&str, &TopicMeta> =
            all_metas.iter().map(|m| (m.name.as_str(), m)).collect();

        if let Some(reg) = image.brokers.get(&local) {
            if reg.broker_epoch != self.broker_epoch {
                self.broker_epoch = reg.broker_epoch;
                broker
                    .replicas
                    .set_broker_epoch(BrokerEpoch(reg.broker_epoch));
            }
        }

        // Replica roles: first what changed, then the logs of new replicas (all at once,
        // several threads), then each change.
        let mut hosted: BTreeSet<(String, i32)> = BTreeSet::new();
        let mut changes = Vec::new();
        for t in image.topics.values() {
            let Some(meta) = metas.get(t.name.as_str()) else {
                continue;
            };
            let configs_changed = self.configs.get(&t.name) != Some(&meta.configs);
            if configs_changed {
                self.configs.insert(t.name.clone(), meta.configs.clone());
            }
            let pc = broker.partition_config(meta);
            for (&p, reg) in &t.partitions {
                if !reg.replicas.contains(&local) {
                    continue;
                }
                let key = (t.name.clone(), p);
                hosted.insert(key.clone());
                let epochs = (reg.leader_epoch, reg.partition_epoch);
                if pending.and_then(|p| p.get(&key)) == Some(&epochs) {
                    continue;
                }
                if self.applied.get(&key) == Some(&epochs) {
                    if configs_changed {
                        if let Some(part) = broker.replicas.get(&t.name, p) {
                            part.update_config(pc.clone());
                        }
                    }
                    continue;
                }
                // KIP-858: a replica assigned to a dir that is offline here stays offline.
                let assigned_dir = Uuid(reg.directory_of(local));
                if broker
                    .replicas
                    .hold_offline_if_dir_unavailable(&t.name, p, assigned_dir)
                {
                    continue;
                }
                changes.push(ReplicaChange {
                    change: reg.to_partition_change(&t.name, p, t.topic_id),
                    key,
                    epochs,
                    config: pc.clone(),
                    assigned_dir,
                });
            }
        }
        // Kafka's controller answers CreateTopics at the commit and its brokers create the
        // logs afterwards. Here an image that brings few new logs is applied before it is
        // published, so a topic is usable the moment a client can see it; a large creation
        // is published first and its logs made right after (meanwhile its partitions answer
        // NOT_LEADER_OR_FOLLOWER, which clients retry), so the answer does not wait for
        // thousands of directories.
        let (deferred, now_changes): (Vec<_>, Vec<_>) = {
            let new_log = |c: &ReplicaChange| {
                !c.key.0.starts_with("__")
                    && broker.replicas.logs().get(&c.key.0, c.key.1).is_none()
            };
            if changes.iter().filter(|c| new_log(c)).count() > DEFER_NEW_LOGS_ABOVE {
                changes.into_iter().partition(|c| new_log(c))
            } else {
                (Vec::new(), changes)
            }
        };
        let applied = apply_changes(broker, now_changes, now, super::replica_changes::cores());
        self.applied.extend(applied);
        // Replicas no longer assigned here (topic deleted, reassigned away).
        for part in broker.replicas.all() {
            let key = (part.topic.clone(), part.index);
            if !hosted.contains(&key) {
                self.applied.remove(&key);
                if let Err(e) = broker.replicas.delete(&part.topic, part.index) {
                    tracing::warn!(topic = %part.topic, partition = part.index, error = ?e, "removing a replica failed");
                }
            }
        }
        self.configs
            .retain(|name, _| metas.contains_key(name.as_str()));

        self.publish_coordinators(broker, image, BrokerId(local));
        deferred
    }

    /// Records the replica changes [`apply_changes`] made after the image was published.
    pub fn applied(&mut self, done: super::replica_changes::Applied) {
        self.applied.extend(done);
    }

    /// Hands the groups' own configs (GROUP resources) to the group coordinator when they
    /// changed (Kafka's `DynamicConfigPublisher` updating the `GroupConfigManager`).
    fn apply_group_configs(&mut self, broker: &BrokerParts, image: &MetadataImage) {
        let current: BTreeMap<String, BTreeMap<String, String>> = image
            .configs
            .iter()
            .filter(|((t, _), _)| *t == RESOURCE_GROUP)
            .map(|((_, name), configs)| (name.clone(), configs.clone()))
            .collect();
        if current == self.group_configs {
            return;
        }
        let timings = current
            .iter()
            .map(|(group, configs)| {
                (
                    group.clone(),
                    crate::config::group::consumer_timings(configs),
                )
            })
            .filter(|(_, t)| *t != (None, None))
            .collect();
        broker.groups.config().overrides.replace(timings);
        let share = current
            .iter()
            .map(|(group, configs)| {
                let share: BTreeMap<String, String> = configs
                    .iter()
                    .filter(|(k, _)| k.starts_with("share."))
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect();
                (group.clone(), share)
            })
            .filter(|(_, c)| !c.is_empty())
            .collect();
        broker.groups.config().overrides.replace_share(share);
        self.group_configs = current;
    }

    /// Applies the image's BROKER config layers to the effective config; whether it changed.
    fn apply_dynamic_configs(&mut self, broker: &BrokerParts, image: &MetadataImage) -> bool {
        let layers = dynamic_layers(image, broker.node_id);
        if layers == self.dynamic_layers {
            return false;
        }
        self.dynamic_layers = layers.clone();
        match broker.dynamic.update(layers) {
            Ok(changed) => {
                if changed {
                    tracing::info!("dynamic broker configs changed; applying them");
                }
                changed
            }
            Err(e) => {
                tracing::error!(error = %e, "invalid dynamic broker configs ignored");
                false
            }
        }
    }

    /// Loads the coordinator partitions led here, unloads the others.
    fn publish_coordinators(
        &mut self,
        broker: &BrokerParts,
        image: &MetadataImage,
        local: BrokerId,
    ) {
        let led = |topic: &str| -> BTreeSet<i32> {
            image
                .topics
                .get(topic)
                .map(|t| {
                    t.partitions
                        .iter()
                        .filter(|(_, r)| r.leader == local.0)
                        .map(|(p, _)| *p)
                        .collect()
                })
                .unwrap_or_default()
        };
        let offsets_now = led(OFFSETS_TOPIC);
        for p in self.leading_offsets.difference(&offsets_now) {
            tracing::info!(
                partition = p,
                "no longer the group coordinator of this partition"
            );
            broker.groups.unload(*p);
        }
        for p in offsets_now.difference(&self.leading_offsets) {
            let started = tokio::time::Instant::now();
            let summary = broker
                .groups
                .load_items(*p, read_partition(&broker.replicas, OFFSETS_TOPIC, *p));
            broker
                .metrics
                .group_coordinator
                .partition_load
                .record(started.elapsed());
            tracing::info!(
                partition = p,
                ?summary,
                "group coordinator loaded a partition"
            );
        }
        self.leading_offsets = offsets_now;

        let txn_now = led(TRANSACTION_TOPIC);
        for p in self.leading_txn.difference(&txn_now) {
            broker.txns.unload(*p);
        }
        for p in txn_now.difference(&self.leading_txn) {
            let epoch = broker
                .replicas
                .get(TRANSACTION_TOPIC, *p)
                .map(|x| x.leader_epoch())
                .unwrap_or(0);
            let started = tokio::time::Instant::now();
            let records = plain_records(read_partition(&broker.replicas, TRANSACTION_TOPIC, *p));
            broker.txns.load_at_epoch(*p, epoch, records);
            broker
                .metrics
                .txn_coordinator
                .partition_load
                .record(started.elapsed());
            tracing::info!(partition = p, "transaction coordinator loaded a partition");
        }
        self.leading_txn = txn_now;

        let share_now = led(SHARE_STATE_TOPIC_NAME);
        for p in self.leading_share_state.difference(&share_now) {
            broker.share_states.unload(*p);
        }
        for p in share_now.difference(&self.leading_share_state) {
            let records = read_partition_at(&broker.replicas, SHARE_STATE_TOPIC_NAME, *p)
                .into_iter()
                .filter_map(|(offset, item)| match item {
                    crate::coordinator::txn_offsets::LoadItem::Record(r) => Some((offset, r)),
                    _ => None,
                });
            let started = tokio::time::Instant::now();
            broker.share_states.load(*p, records);
            broker
                .metrics
                .share_groups
                .partition_load
                .record(started.elapsed());
        }
        self.leading_share_state = share_now;
    }
}

/// Deletes the logs on disk that the first image assigns nowhere here: topics deleted, or
/// replicas reassigned away, while this broker was down, and a log whose topic id is not the
/// one of the topic of that name now (deleted and created again), as Kafka's stray-replica
/// check at start-up. Runs before any replica is opened from the image.
/// The BROKER config layers of an image for broker `node_id`: the cluster default and its own.
pub(super) fn dynamic_layers(image: &MetadataImage, node_id: i32) -> crate::config::DynamicLayers {
    let layer = |name: &str| {
        image
            .resource_configs(RESOURCE_BROKER, name)
            .cloned()
            .unwrap_or_default()
    };
    crate::config::DynamicLayers {
        default: layer(""),
        per_broker: layer(&node_id.to_string()),
    }
}

fn remove_stray_logs(broker: &BrokerParts, image: &MetadataImage, local: i32) {
    let hosted: BTreeSet<(&str, i32)> = image
        .topics
        .values()
        .flat_map(|t| {
            t.partitions
                .iter()
                .filter(|(_, r)| r.replicas.contains(&local))
                .map(|(p, _)| (t.name.as_str(), *p))
        })
        .collect();
    let logs = broker.replicas.logs();
    for log in logs.all() {
        let (topic, partition) = log.topic_partition();
        let current_id = image.topics.get(&topic).map(|t| Uuid(t.topic_id));
        let same_topic = match (log.topic_id(), current_id) {
            (Some(on_disk), Some(now)) => on_disk == now,
            _ => true,
        };
        if hosted.contains(&(topic.as_str(), partition)) && same_topic {
            continue;
        }
        if same_topic {
            tracing::info!(%topic, partition, "removing the log of a replica no longer assigned here");
        } else {
            tracing::info!(%topic, partition, "removing the log of a deleted topic of the same name");
        }
        if let Err(e) = logs.delete_partition(&topic, partition) {
            tracing::warn!(%topic, partition, error = ?e, "removing a stray log failed");
        }
    }
}

/// Runs the publisher on every image the local quorum member applies, until shutdown.
pub async fn run(
    broker: Arc<BrokerParts>,
    cluster: Arc<super::ClusterContext>,
    shutdown: tokio_util::sync::CancellationToken,
) {
    let mut images = cluster.quorum_state();
    let mut publisher = Publisher::default();
    let controller = cluster.controller.is_some();
    let mut in_flight: Option<InFlight> = None;
    loop {
        let image = images.borrow_and_update().1.clone();
        if let Some(f) = in_flight.take() {
            // Replicas still being made must not change under the thread making them.
            if f.is_finished() || !f.unaffected_by(&broker, &image) {
                publisher.applied(f.finish().await);
            } else {
                in_flight = Some(f);
            }
        }
        let deferred = publisher.publish(&broker, &image, in_flight.as_ref().map(|f| f.keys()));
        let previous = cluster.published.send_replace(image.clone());
        if !deferred.is_empty() {
            if let Some(f) = in_flight.take() {
                publisher.applied(f.finish().await);
            }
            in_flight = Some(InFlight::start(&broker, &image, deferred));
        }
        super::image_metrics::observe(&broker.metrics, &previous, &image, controller);
        let unfenced = image
            .brokers
            .get(&broker.node_id)
            .is_some_and(|b| !b.fenced);
        if unfenced && !*cluster.ready.borrow() {
            cluster.ready.send_replace(true);
        }
        let stop = tokio::select! {
            _ = shutdown.cancelled() => true,
            changed = images.changed() => changed.is_err(),
        };
        if stop {
            // The logs are not left half made under a shutting-down log manager.
            if let Some(f) = in_flight.take() {
                f.finish().await;
            }
            return;
        }
    }
}
