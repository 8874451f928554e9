//! What the console shows of other brokers in a cluster: the offsets and size of each
//! partition from its leader, and the consumer groups other brokers coordinate, read with
//! the same Kafka requests an admin client sends (ListOffsets, DescribeLogDirs, ListGroups,
//! DescribeGroups, ConsumerGroupDescribe, OffsetFetch) over the inter-broker listener and its
//! security.
//!
//! The console's handlers stay synchronous and cheap: they read the last snapshot, and a read
//! of a snapshot older than [`REFRESH_AFTER`] wakes the background task that takes the next
//! one. Nobody reading the console means no requests to peers. A broker that does not answer
//! within [`PEER_TIMEOUT_MS`] is listed as unreachable and its figures are left out.
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::RwLock;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use crate::broker::Broker;
use crate::net::peer::{list_offsets, PeerClient, PeerError};
use crate::protocol::messages::consumer_group_describe_request::ConsumerGroupDescribeRequest;
use crate::protocol::messages::consumer_group_describe_response::{
    self as cgd, ConsumerGroupDescribeResponse,
};
use crate::protocol::messages::describe_groups_request::DescribeGroupsRequest;
use crate::protocol::messages::describe_groups_response::{self as dg, DescribeGroupsResponse};
use crate::protocol::messages::describe_log_dirs_request::DescribeLogDirsRequest;
use crate::protocol::messages::describe_log_dirs_response::DescribeLogDirsResponse;
use crate::protocol::messages::list_groups_request::ListGroupsRequest;
use crate::protocol::messages::list_groups_response::{ListGroupsResponse, ListedGroup};
use crate::protocol::messages::offset_fetch_request::{
    OffsetFetchRequest, OffsetFetchRequestGroup,
};
use crate::protocol::messages::offset_fetch_response::OffsetFetchResponse;

/// A snapshot older than this is refreshed when the console reads it.
pub const REFRESH_AFTER: Duration = Duration::from_secs(3);
/// Connect and per-request timeout towards one peer.
pub const PEER_TIMEOUT_MS: u64 = 3_000;
/// The most groups described per peer and snapshot (the console pages at 500).
const MAX_GROUPS_PER_PEER: usize = 1_000;

/// ListOffsets `replica_id` of a debugging client: the leader answers its log end offset.
const DEBUGGING_REPLICA_ID: i32 = -2;
const EARLIEST_TIMESTAMP: i64 = -2;
const LATEST_TIMESTAMP: i64 = -1;

/// One partition as its leader (another broker) reports it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RemotePartition {
    pub broker_id: i32,
    pub log_start_offset: Option<i64>,
    pub log_end_offset: Option<i64>,
    pub high_watermark: Option<i64>,
    pub last_stable_offset: Option<i64>,
    pub size_bytes: Option<i64>,
}

/// One group another broker coordinates.
#[derive(Debug, Clone, Default)]
pub struct RemoteGroup {
    pub coordinator_id: i32,
    pub listed: ListedGroup,
    pub described: dg::DescribedGroup,
    /// ConsumerGroupDescribe's answer, for KIP-848 (`consumer` type) groups.
    pub consumer: Option<cgd::DescribedGroup>,
    /// Committed offsets: (topic, partition, offset).
    pub offsets: Vec<(String, i32, i64)>,
}

/// The figures of the other brokers at one moment.
#[derive(Debug, Default)]
pub struct PeerSnapshot {
    pub taken_at: Option<Instant>,
    pub partitions: HashMap<(String, i32), RemotePartition>,
    pub groups: Vec<RemoteGroup>,
    /// Brokers that could not be read, with why.
    pub unreachable: BTreeMap<i32, String>,
}

#[derive(Default)]
pub struct PeerView {
    snapshot: RwLock<Arc<PeerSnapshot>>,
    wake: Notify,
}

impl PeerView {
    /// The last snapshot; asks for a new one when it is stale.
    pub fn read(&self) -> Arc<PeerSnapshot> {
        let snapshot = self.snapshot.read().clone();
        let stale = snapshot
            .taken_at
            .is_none_or(|at| at.elapsed() >= REFRESH_AFTER);
        if stale {
            self.wake.notify_one();
        }
        snapshot
    }

    /// Takes a snapshot each time a stale one was read, until `shutdown`.
    pub async fn run(self: Arc<Self>, broker: Arc<Broker>, shutdown: CancellationToken) {
        loop {
            tokio::select! {
                _ = shutdown.cancelled() => return,
                _ = self.wake.notified() => {}
            }
            let taken = tokio::select! {
                _ = shutdown.cancelled() => return,
                s = take_snapshot(&broker) => s,
            };
            *self.snapshot.write() = Arc::new(taken);
        }
    }
}

/// Reads every other live broker at once.
async fn take_snapshot(broker: &Broker) -> PeerSnapshot {
    let image = broker.cluster.image();
    let me = broker.cluster.node_id;
    let mut reads = tokio::task::JoinSet::new();
    for (id, registration) in &image.brokers {
        if *id == me || registration.fenced {
            continue;
        }
        let Some(addr) = broker.cluster.broker_address(*id) else {
            continue;
        };
        let led: BTreeMap<String, Vec<i32>> = image
            .topics
            .values()
            .map(|t| {
                let partitions: Vec<i32> = t
                    .partitions
                    .iter()
                    .filter(|(_, p)| p.leader == *id)
                    .map(|(i, _)| *i)
                    .collect();
                (t.name.clone(), partitions)
            })
            .filter(|(_, p)| !p.is_empty())
            .collect();
        let security = broker.cluster.inter_broker_security.clone();
        let client_id = format!("strata-console-{me}");
        let id = *id;
        reads.spawn(async move {
            let read = async {
                let mut c =
                    PeerClient::connect_secured(&addr, &client_id, PEER_TIMEOUT_MS, &security)
                        .await
                        .map_err(|e| e.to_string())?;
                let partitions = read_partitions(&mut c, id, &led)
                    .await
                    .map_err(|e| format!("{e:?}"))?;
                let groups = read_groups(&mut c, id)
                    .await
                    .map_err(|e| format!("{e:?}"))?;
                Ok::<_, String>((partitions, groups))
            };
            (id, read.await)
        });
    }
    let mut snapshot = PeerSnapshot::default();
    while let Some(joined) = reads.join_next().await {
        let Ok((id, read)) = joined else { continue };
        match read {
            Ok((partitions, groups)) => {
                snapshot.partitions.extend(partitions);
                snapshot.groups.extend(groups);
            }
            Err(why) => {
                tracing::debug!(broker = id, error = %why, "console could not read a peer");
                snapshot.unreachable.insert(id, why);
            }
        }
    }
    snapshot
        .groups
        .sort_by(|a, b| a.listed.group_id.cmp(&b.listed.group_id));
    snapshot.taken_at = Some(Instant::now());
    snapshot
}

/// The offsets and sizes of the partitions `broker_id` leads.
async fn read_partitions(
    c: &mut PeerClient,
    broker_id: i32,
    led: &BTreeMap<String, Vec<i32>>,
) -> Result<HashMap<(String, i32), RemotePartition>, PeerError> {
    if led.is_empty() {
        return Ok(HashMap::new());
    }
    let log_start = list_offsets(c, led, -1, 0, EARLIEST_TIMESTAMP, PEER_TIMEOUT_MS).await?;
    let high_watermark = list_offsets(c, led, -1, 0, LATEST_TIMESTAMP, PEER_TIMEOUT_MS).await?;
    let last_stable = list_offsets(c, led, -1, 1, LATEST_TIMESTAMP, PEER_TIMEOUT_MS).await?;
    let log_end = list_offsets(
        c,
        led,
        DEBUGGING_REPLICA_ID,
        0,
        LATEST_TIMESTAMP,
        PEER_TIMEOUT_MS,
    )
    .await?;
    let dirs: DescribeLogDirsResponse = c
        .call_typed(
            DescribeLogDirsRequest::API_KEY,
            4,
            &DescribeLogDirsRequest {
                // null: every partition of every dir.
                topics: None,
                ..Default::default()
            },
        )
        .await?;
    let mut sizes: HashMap<(String, i32), i64> = HashMap::new();
    for dir in dirs.results.iter().filter(|d| d.error_code == 0) {
        for t in &dir.topics {
            for p in t.partitions.iter().filter(|p| !p.is_future_key) {
                *sizes
                    .entry((t.name.clone(), p.partition_index))
                    .or_default() += p.partition_size;
            }
        }
    }
    let mut out = HashMap::new();
    for (topic, partitions) in led {
        for p in partitions {
            let key = (topic.clone(), *p);
            out.insert(
                key.clone(),
                RemotePartition {
                    broker_id,
                    log_start_offset: log_start.get(&key).copied(),
                    log_end_offset: log_end.get(&key).copied(),
                    high_watermark: high_watermark.get(&key).copied(),
                    last_stable_offset: last_stable.get(&key).copied(),
                    size_bytes: sizes.get(&key).copied(),
                },
            );
        }
    }
    Ok(out)
}

/// The groups `broker_id` coordinates, described, with their committed offsets.
async fn read_groups(c: &mut PeerClient, broker_id: i32) -> Result<Vec<RemoteGroup>, PeerError> {
    let listed: ListGroupsResponse = c
        .call_typed(ListGroupsRequest::API_KEY, 5, &ListGroupsRequest::default())
        .await?;
    let mut listed = listed.groups;
    listed.sort_by(|a, b| a.group_id.cmp(&b.group_id));
    listed.truncate(MAX_GROUPS_PER_PEER);
    if listed.is_empty() {
        return Ok(Vec::new());
    }
    let ids: Vec<String> = listed.iter().map(|g| g.group_id.clone()).collect();
    let described: DescribeGroupsResponse = c
        .call_typed(
            DescribeGroupsRequest::API_KEY,
            5,
            &DescribeGroupsRequest {
                groups: ids.clone(),
                ..Default::default()
            },
        )
        .await?;
    let mut described: HashMap<String, dg::DescribedGroup> = described
        .groups
        .into_iter()
        .map(|g| (g.group_id.clone(), g))
        .collect();
    let kip848: Vec<String> = listed
        .iter()
        .filter(|g| g.group_type == "consumer")
        .map(|g| g.group_id.clone())
        .collect();
    let mut consumer: HashMap<String, cgd::DescribedGroup> = HashMap::new();
    if !kip848.is_empty() {
        let r: ConsumerGroupDescribeResponse = c
            .call_typed(
                ConsumerGroupDescribeRequest::API_KEY,
                0,
                &ConsumerGroupDescribeRequest {
                    group_ids: kip848,
                    ..Default::default()
                },
            )
            .await?;
        consumer.extend(
            r.groups
                .into_iter()
                .filter(|g| g.error_code == 0)
                .map(|g| (g.group_id.clone(), g)),
        );
    }
    let fetched: OffsetFetchResponse = c
        .call_typed(
            OffsetFetchRequest::API_KEY,
            8,
            &OffsetFetchRequest {
                groups: ids
                    .iter()
                    .map(|g| OffsetFetchRequestGroup {
                        group_id: g.clone(),
                        topics: None,
                        ..Default::default()
                    })
                    .collect(),
                ..Default::default()
            },
        )
        .await?;
    let mut offsets: HashMap<String, Vec<(String, i32, i64)>> = HashMap::new();
    for g in fetched.groups.into_iter().filter(|g| g.error_code == 0) {
        let entry = offsets.entry(g.group_id).or_default();
        for t in g.topics {
            for p in t.partitions {
                if p.error_code == 0 && p.committed_offset >= 0 {
                    entry.push((t.name.clone(), p.partition_index, p.committed_offset));
                }
            }
        }
    }
    Ok(listed
        .into_iter()
        .map(|g| {
            let mut group_offsets = offsets.remove(&g.group_id).unwrap_or_default();
            group_offsets.sort();
            RemoteGroup {
                coordinator_id: broker_id,
                described: described.remove(&g.group_id).unwrap_or_default(),
                consumer: consumer.remove(&g.group_id),
                offsets: group_offsets,
                listed: g,
            }
        })
        .collect())
}
