//! The high watermarks of partitions this broker holds no replica of, read from their leaders
//! with ListOffsets (latest, read_uncommitted) over the inter-broker listener, as Kafka's group
//! coordinator asks partition leaders for the end offsets it computes share-group lag from
//! (KIP-1226). One request per leader, all leaders at once; a leader that does not answer in
//! time leaves its partitions out.
use std::collections::{BTreeMap, HashMap};

use super::ClusterContext;
use crate::net::peer::{list_offsets, PeerClient};

const LATEST_TIMESTAMP: i64 = -1;
const TIMEOUT_MS: u64 = 3_000;

/// The high watermark of each partition of `wanted` (topic name to partition indexes) whose
/// leader answered, by (topic, partition).
pub async fn high_watermarks(
    cluster: &ClusterContext,
    wanted: &BTreeMap<String, Vec<i32>>,
) -> HashMap<(String, i32), i64> {
    let image = cluster.image();
    let mut by_leader: BTreeMap<i32, BTreeMap<String, Vec<i32>>> = BTreeMap::new();
    for (topic, partitions) in wanted {
        let Some(t) = image.topics.get(topic) else {
            continue;
        };
        for p in partitions {
            if let Some(leader) = t.partitions.get(p).map(|x| x.leader).filter(|l| *l >= 0) {
                by_leader
                    .entry(leader)
                    .or_default()
                    .entry(topic.clone())
                    .or_default()
                    .push(*p);
            }
        }
    }
    let mut reads = tokio::task::JoinSet::new();
    for (leader, partitions) in by_leader {
        let Some(addr) = cluster.broker_address(leader) else {
            continue;
        };
        let security = cluster.inter_broker_security.clone();
        let client_id = format!("strata-offsets-{}", cluster.node_id);
        reads.spawn(async move {
            let mut c = PeerClient::connect_secured(&addr, &client_id, TIMEOUT_MS, &security)
                .await
                .ok()?;
            list_offsets(&mut c, &partitions, -1, 0, LATEST_TIMESTAMP, TIMEOUT_MS)
                .await
                .map_err(|e| tracing::debug!(leader, error = ?e, "no offsets from the leader"))
                .ok()
        });
    }
    let mut out = HashMap::new();
    while let Some(joined) = reads.join_next().await {
        if let Ok(Some(offsets)) = joined {
            out.extend(offsets);
        }
    }
    out
}
