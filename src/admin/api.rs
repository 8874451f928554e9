//! The console's read-only JSON API under `/api/v1/`: the cluster (brokers, controller,
//! Raft quorum), topics with their partitions (leader, replicas and ISR from the metadata
//! image as `kafka-topics --describe` shows them; log start, log end, high watermark and size
//! from this broker's replica), and the sampled throughput. Groups are in [`super::api_groups`].
//!
//! Bounded: lists are paged (`?offset=&limit=`, at most [`MAX_PAGE`] entries) and say how
//! many entries there are in all; a topic lists at most [`MAX_PARTITIONS`] partitions.
use serde_json::{json, Value};

use super::peers::{PeerSnapshot, RemotePartition};
use super::sampler::Sampler;
use crate::broker::Broker;
use crate::controller::image::{is_internal_topic, MetadataImage, TopicImage};
use crate::controller::Quorum;
use crate::protocol::codec::Uuid;

/// The most entries one list response holds.
pub const MAX_PAGE: usize = 500;
/// Entries a list holds when `limit` is not given.
pub const DEFAULT_PAGE: usize = 100;
/// The most partitions one topic response lists.
pub const MAX_PARTITIONS: usize = 1000;

/// A page of a list: `offset` and `limit` from the query string, clamped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Page {
    pub offset: usize,
    pub limit: usize,
}

impl Page {
    /// Reads `offset` and `limit` from a query string; anything unparsable takes the default.
    pub fn from_query(query: Option<&str>) -> Page {
        let mut page = Page {
            offset: 0,
            limit: DEFAULT_PAGE,
        };
        for pair in query.unwrap_or("").split('&') {
            let Some((key, value)) = pair.split_once('=') else {
                continue;
            };
            let Ok(n) = value.parse::<usize>() else {
                continue;
            };
            match key {
                "offset" => page.offset = n,
                "limit" => page.limit = n.clamp(1, MAX_PAGE),
                _ => {}
            }
        }
        page
    }

    /// This page of `items`, with the paging fields every list response carries.
    pub fn slice<T>(&self, items: Vec<T>) -> (Vec<T>, Value) {
        let total = items.len();
        let taken: Vec<T> = items
            .into_iter()
            .skip(self.offset)
            .take(self.limit)
            .collect();
        let meta = json!({
            "total": total,
            "offset": self.offset,
            "limit": self.limit,
            "more": total.saturating_sub(self.offset + taken.len()),
        });
        (taken, meta)
    }
}

/// `/api/v1/cluster`: cluster id, this node, the controller quorum and every registered broker.
pub fn cluster(broker: &Broker, peers: &PeerSnapshot) -> Value {
    let image = broker.cluster.image();
    let status = broker.cluster.quorum.status();
    let voters = broker.cluster.current_voters();
    let progress = |id: i32| {
        status
            .voters
            .iter()
            .chain(status.observers.iter())
            .find(|r| r.node_id as i32 == id)
            .map(|r| r.log_end_offset)
    };
    let brokers: Vec<Value> = image
        .brokers
        .values()
        .map(|b| {
            json!({
                "id": b.broker_id,
                "epoch": b.broker_epoch,
                "rack": b.rack,
                "registered": true,
                "fenced": b.fenced,
                "in_controlled_shutdown": b.in_controlled_shutdown,
                // Why the console's last read of this broker failed (null: it answered).
                "unreachable": peers.unreachable.get(&b.broker_id),
                "endpoints": b.endpoints.iter().map(|e| json!({
                    "listener": e.name, "host": e.host, "port": e.port,
                })).collect::<Vec<_>>(),
            })
        })
        .collect();
    let partitions: usize = image.topics.values().map(|t| t.partitions.len()).sum();
    let offline = image
        .topics
        .values()
        .flat_map(|t| t.partitions.values())
        .filter(|p| !p.has_leader())
        .count();
    json!({
        "cluster_id": broker.cluster_id,
        "node_id": broker.node_id,
        "controller_id": broker.cluster.active_controller_id(),
        "quorum": {
            "leader_id": status.leader_id.map(|l| l as i32),
            "leader_epoch": status.leader_epoch,
            "high_watermark": status.high_watermark,
            "voters": voters.iter().map(|(id, address)| json!({
                "id": id, "address": address, "log_end_offset": progress(*id),
            })).collect::<Vec<_>>(),
        },
        "brokers": brokers,
        "topic_count": image.topics.len(),
        "partition_count": partitions,
        "offline_partition_count": offline,
    })
}

/// One partition's offsets and size as the console shows them, with the broker whose
/// replica they are (the same shape as a peer's answer).
pub type Figures = RemotePartition;

/// A partition's figures from its leader's replica: this broker's when it leads, else the
/// leader's from the peer snapshot; failing both, this broker's follower replica (its high
/// watermark may trail the leader's a little). None when no replica could be read.
pub fn figures(broker: &Broker, peers: &PeerSnapshot, topic: &str, index: i32) -> Option<Figures> {
    let local = broker.replicas.get(topic, index);
    let of_local = |p: &crate::replica::Partition| Figures {
        broker_id: broker.cluster.node_id,
        log_start_offset: Some(p.log_start_offset()),
        log_end_offset: Some(p.log_end_offset()),
        high_watermark: Some(p.high_watermark()),
        last_stable_offset: Some(p.last_stable_offset()),
        size_bytes: Some(p.log.size_bytes() as i64),
    };
    if let Some(p) = local.as_ref().filter(|p| p.is_leader()) {
        return Some(of_local(p));
    }
    if let Some(r) = peers.partitions.get(&(topic.to_string(), index)) {
        return Some(*r);
    }
    local.as_ref().map(|p| of_local(p))
}

/// A topic's totals over its partitions' figures: (size of one replica each, records
/// between log start and high watermark, partitions with no figures).
fn totals(broker: &Broker, peers: &PeerSnapshot, topic: &TopicImage) -> (i64, i64, usize) {
    let (mut size, mut records, mut unknown) = (0i64, 0i64, 0usize);
    for index in topic.partitions.keys() {
        match figures(broker, peers, &topic.name, *index) {
            Some(f) => {
                size += f.size_bytes.unwrap_or(0);
                if let (Some(hw), Some(start)) = (f.high_watermark, f.log_start_offset) {
                    records += (hw - start).max(0);
                }
            }
            None => unknown += 1,
        }
    }
    (size, records, unknown)
}

/// Each reading's value for one rate, for a sparkline.
fn series(rates: &[super::sampler::Rate], f: impl Fn(&super::sampler::Rate) -> f64) -> Vec<f64> {
    rates.iter().map(f).collect()
}

/// `/api/v1/topics`: a page of topics in name order, with totals and rate sparklines.
pub fn topics(broker: &Broker, sampler: &Sampler, peers: &PeerSnapshot, page: Page) -> Value {
    let image = broker.cluster.image();
    let (page_topics, meta) = page.slice(image.topics.values().collect());
    let topics: Vec<Value> = page_topics
        .into_iter()
        .map(|t| {
            let (size, records, unknown) = totals(broker, peers, t);
            let rates = sampler.topic_rates(&t.name);
            let replication = t.partitions.values().map(|p| p.replicas.len()).max().unwrap_or(0);
            json!({
                "name": t.name,
                "internal": is_internal_topic(&t.name),
                "partitions": t.partitions.len(),
                "replication_factor": replication,
                "under_replicated": t.partitions.values().filter(|p| p.isr.len() < p.replicas.len()).count(),
                "offline": t.partitions.values().filter(|p| !p.has_leader()).count(),
                "size_bytes": size,
                "records": records,
                // Partitions whose leader could not be read: size and records leave them out.
                "partitions_unknown": unknown,
                "produce_rate": series(&rates, |r| r.messages_in),
                "consume_rate": series(&rates, |r| r.messages_consumed),
                "bytes_out_rate": series(&rates, |r| r.bytes_out),
            })
        })
        .collect();
    let mut out = meta;
    out["topics"] = Value::Array(topics);
    out
}

/// `/api/v1/topics/<name>`: the topic's partitions; None for a topic the image does not know.
pub fn topic(
    broker: &Broker,
    peers: &PeerSnapshot,
    image: &MetadataImage,
    name: &str,
) -> Option<Value> {
    let t = image.topic(name)?;
    let partitions: Vec<Value> = t
        .partitions
        .iter()
        .take(MAX_PARTITIONS)
        .map(|(index, p)| {
            let f = figures(broker, peers, name, *index);
            json!({
                "partition": index,
                "leader": p.leader,
                "leader_epoch": p.leader_epoch,
                "replicas": p.replicas,
                "isr": p.isr,
                "local_replica": broker.replicas.get(name, *index).is_some(),
                // Whose replica the offsets and size are (null when none could be read).
                "figures_from": f.map(|f| f.broker_id),
                "log_start_offset": f.and_then(|f| f.log_start_offset),
                "log_end_offset": f.and_then(|f| f.log_end_offset),
                "high_watermark": f.and_then(|f| f.high_watermark),
                "last_stable_offset": f.and_then(|f| f.last_stable_offset),
                "size_bytes": f.and_then(|f| f.size_bytes),
            })
        })
        .collect();
    Some(json!({
        "name": t.name,
        "topic_id": Uuid(t.topic_id).to_string(),
        "internal": is_internal_topic(&t.name),
        "partition_count": t.partitions.len(),
        "partitions": partitions,
    }))
}

/// `/api/v1/throughput`: broker-wide per-second rates, oldest first.
pub fn throughput(sampler: &Sampler) -> Value {
    json!({
        "interval_ms": super::sampler::SAMPLE_INTERVAL.as_millis() as u64,
        "samples": sampler.rates(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pages_are_clamped_and_count_the_rest() {
        assert_eq!(
            Page::from_query(Some("offset=2&limit=100000&x=1")),
            Page {
                offset: 2,
                limit: MAX_PAGE
            }
        );
        assert_eq!(Page::from_query(Some("limit=-1")).limit, DEFAULT_PAGE);
        assert_eq!(Page::from_query(Some("limit=0")).limit, 1);
        let (items, meta) = Page {
            offset: 1,
            limit: 2,
        }
        .slice((0..10).collect());
        assert_eq!(items, vec![1, 2]);
        assert_eq!(meta["total"], 10);
        assert_eq!(meta["more"], 7);
        let (items, meta) = Page {
            offset: 20,
            limit: 2,
        }
        .slice((0..10).collect::<Vec<i32>>());
        assert!(items.is_empty());
        assert_eq!(meta["more"], 0);
    }
}
