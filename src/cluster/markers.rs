//! Transaction markers in a cluster (Kafka's `TransactionMarkerChannelManager`): a marker for
//! a partition led here is written locally; one for a partition led by another broker is
//! sent to that leader with WriteTxnMarkers. The coordinator's interface is synchronous and
//! retried (its `tick`), so remote markers are sent in the background and the call reports
//! "not yet" until every leader has confirmed; the confirmations are remembered until the
//! whole set is done. A marker counts as confirmed only once replicated to its partition's
//! ISR (Kafka writes markers with required acks -1), local ones included: the Complete record
//! that follows means the coordinator never sends them again.
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, OnceLock};

use parking_lot::Mutex;

use crate::coordinator::offsets_topic::{write_marker_to_partition, LocalMarkerWriter};
use crate::coordinator::txn::{MarkerError, MarkerSpec, TxnMarkerWriter};
use crate::error::ErrorCode;
use crate::net::peer::PeerClient;
use crate::protocol::messages::write_txn_markers_request::{
    WritableTxnMarker, WritableTxnMarkerTopic, WriteTxnMarkersRequest,
};
use crate::protocol::messages::write_txn_markers_response::WriteTxnMarkersResponse;

use super::ClusterContext;

const MARKER_REQUEST_TIMEOUT_MS: u64 = 10_000;
/// WriteTxnMarkers v2 carries the producer's transaction version (KIP-1228), which the leader
/// needs for the strict epoch check of version 2 markers.
const WRITE_TXN_MARKERS_VERSION: i16 = 2;
/// How long a local marker may wait for the ISR before it is written again.
const MARKER_REPLICATION_TIMEOUT_MS: u64 = 5_000;

/// One marker on one partition.
type MarkerKey = (i64, i16, bool, String, i32);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Remote {
    InFlight,
    Done,
}

pub struct ClusterMarkerWriter {
    pub local: LocalMarkerWriter,
    cluster: OnceLock<Arc<ClusterContext>>,
    remote: Arc<Mutex<HashMap<MarkerKey, Remote>>>,
    runtime: tokio::runtime::Handle,
    /// Called when a remote batch is confirmed, so the coordinator retries at once.
    on_confirmed: OnceLock<Arc<dyn Fn() + Send + Sync>>,
}

impl ClusterMarkerWriter {
    pub fn new(local: LocalMarkerWriter) -> Self {
        ClusterMarkerWriter {
            local,
            cluster: OnceLock::new(),
            remote: Arc::new(Mutex::new(HashMap::new())),
            runtime: tokio::runtime::Handle::current(),
            on_confirmed: OnceLock::new(),
        }
    }

    pub fn attach(&self, cluster: Arc<ClusterContext>, on_confirmed: Arc<dyn Fn() + Send + Sync>) {
        let _ = self.cluster.set(cluster);
        let _ = self.on_confirmed.set(on_confirmed);
    }

    /// Confirms a marker written here once the ISR has it (or forgets it, to be written
    /// again by the coordinator's next retry).
    fn await_local(&self, key: MarkerKey, offset: i64) {
        let Some(p) = self.local.replicas.get(&key.3, key.4) else {
            return;
        };
        let leader_epoch = p.leader_epoch();
        self.remote.lock().insert(key.clone(), Remote::InFlight);
        let remote = self.remote.clone();
        let replicas = self.local.replicas.clone();
        let on_confirmed = self.on_confirmed.get().cloned();
        self.runtime.spawn(async move {
            let outcome = replicas
                .wait_acks_all(&p, offset + 1, leader_epoch, MARKER_REPLICATION_TIMEOUT_MS)
                .await;
            let done = matches!(outcome, Some(Ok(())));
            {
                let mut r = remote.lock();
                if done {
                    r.insert(key, Remote::Done);
                } else {
                    r.remove(&key);
                }
            }
            if done {
                if let Some(f) = on_confirmed {
                    f();
                }
            }
        });
    }

    fn send(&self, leader: i32, marker: MarkerSpec, partitions: Vec<(String, i32)>) {
        let Some(cluster) = self.cluster.get().cloned() else {
            return;
        };
        let remote = self.remote.clone();
        let on_confirmed = self.on_confirmed.get().cloned();
        {
            let mut r = remote.lock();
            for (t, p) in &partitions {
                r.insert(
                    (
                        marker.producer_id,
                        marker.producer_epoch,
                        marker.commit,
                        t.clone(),
                        *p,
                    ),
                    Remote::InFlight,
                );
            }
        }
        self.runtime.spawn(async move {
            let mut topics: BTreeMap<String, Vec<i32>> = BTreeMap::new();
            for (t, p) in &partitions {
                topics.entry(t.clone()).or_default().push(*p);
            }
            let request = WriteTxnMarkersRequest {
                markers: vec![WritableTxnMarker {
                    producer_id: marker.producer_id,
                    producer_epoch: marker.producer_epoch,
                    transaction_result: marker.commit,
                    topics: topics
                        .into_iter()
                        .map(|(name, partition_indexes)| WritableTxnMarkerTopic {
                            name,
                            partition_indexes,
                            ..Default::default()
                        })
                        .collect(),
                    coordinator_epoch: marker.coordinator_epoch,
                    transaction_version: marker.transaction_version as i8,
                    ..Default::default()
                }],
                ..Default::default()
            };
            let mut confirmed: Vec<(String, i32)> = Vec::new();
            if let Some(addr) = cluster.broker_address(leader) {
                let client_id = format!("strata-txn-markers-{}", cluster.node_id);
                match PeerClient::connect_secured(
                    &addr,
                    &client_id,
                    MARKER_REQUEST_TIMEOUT_MS,
                    &cluster.inter_broker_security,
                )
                .await {
                    Ok(mut c) => {
                        let r: Result<WriteTxnMarkersResponse, _> =
                            c.call_typed(WriteTxnMarkersRequest::API_KEY, WRITE_TXN_MARKERS_VERSION, &request).await;
                        match r {
                            Ok(resp) => {
                                for m in &resp.markers {
                                    for t in &m.topics {
                                        for p in &t.partitions {
                                            if ErrorCode::from_code(p.error_code).is_ok() {
                                                confirmed.push((t.name.clone(), p.partition_index));
                                            } else {
                                                tracing::debug!(topic = %t.name, partition = p.partition_index, error = p.error_code, "marker refused; will retry");
                                            }
                                        }
                                    }
                                }
                            }
                            Err(e) => tracing::debug!(error = ?e, "WriteTxnMarkers failed; will retry"),
                        }
                    }
                    Err(e) => tracing::debug!(error = %e, leader, "cannot reach the leader for markers"),
                }
            }
            {
                let mut r = remote.lock();
                for (t, p) in &partitions {
                    let key = (marker.producer_id, marker.producer_epoch, marker.commit, t.clone(), *p);
                    if confirmed.contains(&(t.clone(), *p)) {
                        r.insert(key, Remote::Done);
                    } else {
                        // Sent again by the coordinator's next retry.
                        r.remove(&key);
                    }
                }
            }
            if !confirmed.is_empty() {
                if let Some(f) = on_confirmed {
                    f();
                }
            }
        });
    }
}

impl TxnMarkerWriter for ClusterMarkerWriter {
    fn write_markers(
        &self,
        marker: &MarkerSpec,
        partitions: &[(String, i32)],
    ) -> Result<(), MarkerError> {
        let Some(cluster) = self.cluster.get() else {
            return self.local.write_markers(marker, partitions);
        };
        let now = self.local.clock.now_ms();
        let marker = *marker;
        let (producer_id, producer_epoch, commit) =
            (marker.producer_id, marker.producer_epoch, marker.commit);
        let image = cluster.image();
        let mut pending = false;
        let mut to_send: BTreeMap<i32, Vec<(String, i32)>> = BTreeMap::new();
        let mut local_error = None;
        for (topic, index) in partitions {
            let key = (producer_id, producer_epoch, commit, topic.clone(), *index);
            match self.remote.lock().get(&key).copied() {
                Some(Remote::Done) => continue,
                Some(Remote::InFlight) => {
                    pending = true;
                    continue;
                }
                None => {}
            }
            let leads_here = self
                .local
                .replicas
                .get(topic, *index)
                .is_some_and(|p| p.is_leader());
            if leads_here {
                pending = true;
                match write_marker_to_partition(
                    &self.local.replicas,
                    &self.local.groups,
                    topic,
                    *index,
                    marker,
                    now,
                ) {
                    Ok(Some(offset)) => self.await_local(key, offset),
                    Ok(None) => {}
                    Err(e) => local_error = Some(e.message()),
                }
                continue;
            }
            // A partition of a deleted topic counts as written, as in Kafka.
            let Some(reg) = image.partition(topic, *index) else {
                continue;
            };
            pending = true;
            if reg.leader >= 0 {
                to_send
                    .entry(reg.leader)
                    .or_default()
                    .push((topic.clone(), *index));
            }
        }
        for (leader, parts) in to_send {
            self.send(leader, marker, parts);
        }
        if let Some(e) = local_error {
            return Err(MarkerError::Retriable(e));
        }
        if pending {
            return Err(MarkerError::Retriable(
                "markers sent to other leaders are not confirmed yet".into(),
            ));
        }
        self.remote
            .lock()
            .retain(|k, _| !(k.0 == producer_id && k.1 == producer_epoch && k.2 == commit));
        Ok(())
    }
}
