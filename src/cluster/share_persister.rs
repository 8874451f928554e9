//! The share-partition leaders' persister in a cluster (Kafka's `DefaultStatePersister`): each
//! operation goes to the share coordinator of its key, the leader of the key's
//! `__share_group_state` partition; that is this broker's own [`ShareStateCoordinator`] when it
//! leads the partition, and otherwise an Initialize/Read/Write/Delete/ReadSummary
//! ShareGroupState request to the broker that does. The topic is created on first use, as
//! Kafka's share coordinator topic is. While the coordinator is unreachable or answers
//! NOT_COORDINATOR (its broker died, leadership is moving), the operation is retried with a
//! growing pause for up to [`RETRY_FOR_MS`], on whoever leads by then.
use std::sync::Arc;
use std::time::Duration;

use super::ClusterContext;
use crate::coordinator::share_state::{ShareStateCoordinator, SHARE_STATE_TOPIC_NAME};
use crate::error::ErrorCode;
use crate::net::connections::PeerConnections;
use crate::protocol::codec::{Decode, Encode};
use crate::protocol::messages::{
    delete_share_group_state_request as del_req, delete_share_group_state_response as del_resp,
    initialize_share_group_state_request as init_req,
    initialize_share_group_state_response as init_resp, read_share_group_state_request as read_req,
    read_share_group_state_response as read_resp,
    read_share_group_state_summary_request as sum_req,
    read_share_group_state_summary_response as sum_resp,
    write_share_group_state_request as write_req, write_share_group_state_response as write_resp,
};
use crate::replica::share_persister::{
    PersistedState, PersisterFuture, SharePartitionKey, SharePersister, StateBatch, StateSummary,
    StateWrite,
};

const REQUEST_TIMEOUT_MS: u64 = 10_000;
/// How long an operation waits for the topic to be created, or a new coordinator to be known.
const COORDINATOR_WAIT_MS: u64 = 2_000;
/// How long an operation keeps retrying a coordinator that is gone or moving: longer than a
/// dead broker takes to be fenced and its leaderships moved (`broker.session.timeout.ms`).
const RETRY_FOR_MS: u64 = 12_000;

/// How `__share_group_state` is created (Kafka's `shareGroupStateTopicConfigs`): deleted-by-
/// pruning rather than compacted, kept for ever otherwise.
#[derive(Debug, Clone)]
pub struct ShareStateTopic {
    pub partitions: i32,
    pub replication_factor: i16,
    pub min_insync_replicas: i16,
    pub segment_bytes: i32,
}

impl ShareStateTopic {
    pub fn from_config(c: &crate::config::BrokerConfig) -> Self {
        ShareStateTopic {
            partitions: c.share_coordinator_state_topic_num_partitions.max(1),
            replication_factor: c.share_coordinator_state_topic_replication_factor.max(1),
            // Capped at the replication factor, as the transaction log's.
            min_insync_replicas: c
                .share_coordinator_state_topic_min_isr
                .min(c.share_coordinator_state_topic_replication_factor.max(1))
                .max(1),
            segment_bytes: c.share_coordinator_state_topic_segment_bytes,
        }
    }

    pub fn configs(&self) -> Vec<(String, String)> {
        vec![
            ("cleanup.policy".to_string(), "delete".to_string()),
            ("compression.type".to_string(), "producer".to_string()),
            ("segment.bytes".to_string(), self.segment_bytes.to_string()),
            (
                "min.insync.replicas".to_string(),
                self.min_insync_replicas.to_string(),
            ),
            ("retention.ms".to_string(), "-1".to_string()),
        ]
    }
}

struct Inner {
    cluster: Arc<ClusterContext>,
    states: Arc<ShareStateCoordinator>,
    topic: ShareStateTopic,
    /// Connections to the coordinator brokers (one kept idle per broker).
    connections: PeerConnections<i32>,
}

#[derive(Clone)]
pub struct ClusterSharePersister(Arc<Inner>);

impl ClusterSharePersister {
    pub fn new(
        cluster: Arc<ClusterContext>,
        states: Arc<ShareStateCoordinator>,
        topic: ShareStateTopic,
    ) -> Self {
        let connections = PeerConnections::new(
            format!("strata-share-persister-{}", cluster.node_id),
            cluster.inter_broker_security.clone(),
        );
        ClusterSharePersister(Arc::new(Inner {
            cluster,
            states,
            topic,
            connections,
        }))
    }
}

/// Where one key's operation goes.
enum Target {
    Local,
    Remote(i32),
}

impl Inner {
    /// The share coordinator of `key`: creates the topic when missing and waits (bounded)
    /// for its partition to have a leader.
    async fn coordinator(&self, key: &SharePartitionKey) -> Result<Target, ErrorCode> {
        let partition = self.states.partition_for(key);
        let leader = |cluster: &ClusterContext| {
            cluster
                .image()
                .topics
                .get(SHARE_STATE_TOPIC_NAME)
                .and_then(|t| t.partitions.get(&partition).map(|p| p.leader))
                .filter(|l| *l >= 0)
        };
        if leader(&self.cluster).is_none() {
            if self.cluster.topic(SHARE_STATE_TOPIC_NAME).is_none() {
                self.cluster.create_topic_in_background(
                    SHARE_STATE_TOPIC_NAME,
                    self.topic.partitions,
                    self.topic.replication_factor,
                    self.topic.configs(),
                );
            }
            let mut published = self.cluster.published.subscribe();
            let _ = tokio::time::timeout(
                Duration::from_millis(COORDINATOR_WAIT_MS),
                published.wait_for(|image| {
                    image
                        .topics
                        .get(SHARE_STATE_TOPIC_NAME)
                        .and_then(|t| t.partitions.get(&partition))
                        .is_some_and(|p| p.leader >= 0)
                }),
            )
            .await;
        }
        match leader(&self.cluster) {
            Some(l) if l == self.cluster.node_id => {
                if !self.states.is_loaded(partition) {
                    // Leader in the image, not yet loaded by the publisher.
                    self.wait_loaded(partition).await?;
                }
                Ok(Target::Local)
            }
            Some(l) => Ok(Target::Remote(l)),
            None => Err(ErrorCode::COORDINATOR_NOT_AVAILABLE),
        }
    }

    async fn wait_loaded(&self, partition: i32) -> Result<(), ErrorCode> {
        let deadline = tokio::time::Instant::now() + Duration::from_millis(COORDINATOR_WAIT_MS);
        while !self.states.is_loaded(partition) {
            if tokio::time::Instant::now() >= deadline {
                return Err(ErrorCode::COORDINATOR_LOAD_IN_PROGRESS);
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        Ok(())
    }

    async fn call<Req: Encode, Resp: Decode>(
        &self,
        node: i32,
        api_key: i16,
        version: i16,
        request: &Req,
    ) -> Result<Resp, ErrorCode> {
        let addr = self
            .cluster
            .broker_address(node)
            .ok_or(ErrorCode::COORDINATOR_NOT_AVAILABLE)?;
        self.connections
            .call_typed(node, &addr, REQUEST_TIMEOUT_MS, api_key, version, request)
            .await
            .map_err(|e| {
                tracing::debug!(node, error = %e, "share state request failed");
                ErrorCode::COORDINATOR_NOT_AVAILABLE
            })
    }

    /// Runs the operation on the key's coordinator, again while it is unavailable.
    async fn on_coordinator<T, L, R, Fut>(
        &self,
        key: &SharePartitionKey,
        local: L,
        remote: R,
    ) -> Result<T, ErrorCode>
    where
        L: Fn() -> Result<T, ErrorCode>,
        R: Fn(i32) -> Fut,
        Fut: std::future::Future<Output = Result<T, ErrorCode>>,
    {
        let deadline = tokio::time::Instant::now() + Duration::from_millis(RETRY_FOR_MS);
        let mut pause_ms = 50;
        loop {
            let outcome = match self.coordinator(key).await {
                Ok(Target::Local) => local(),
                Ok(Target::Remote(node)) => remote(node).await,
                Err(code) => Err(code),
            };
            match outcome {
                Err(
                    ErrorCode::NOT_COORDINATOR
                    | ErrorCode::COORDINATOR_NOT_AVAILABLE
                    | ErrorCode::COORDINATOR_LOAD_IN_PROGRESS,
                ) if tokio::time::Instant::now() < deadline => {
                    tokio::time::sleep(Duration::from_millis(pause_ms)).await;
                    pause_ms = (pause_ms * 2).min(1_000);
                }
                other => return other,
            }
        }
    }
}

/// The one partition result of a single-key state response (every state response has
/// `results[].partitions[]`).
macro_rules! only_partition {
    ($response:expr) => {
        $response.results.first().and_then(|t| t.partitions.first())
    };
}

/// The error code of a single-key state response, as an outcome.
macro_rules! outcome {
    ($response:expr) => {
        result_code(
            only_partition!($response)
                .map_or(ErrorCode::UNKNOWN_SERVER_ERROR.code(), |p| p.error_code),
        )
    };
}

/// The one partition result of a single-key response: its error code.
fn result_code(code: i16) -> Result<(), ErrorCode> {
    match ErrorCode::from_code(code) {
        ErrorCode::NONE => Ok(()),
        other => Err(other),
    }
}

fn batches_in<B>(batches: &[B], f: impl Fn(&B) -> StateBatch) -> Vec<StateBatch> {
    batches.iter().map(f).collect()
}

impl SharePersister for ClusterSharePersister {
    fn initialize(
        &self,
        key: SharePartitionKey,
        state_epoch: i32,
        start_offset: i64,
    ) -> PersisterFuture<()> {
        let inner = self.0.clone();
        Box::pin(async move {
            let request = init_req::InitializeShareGroupStateRequest {
                group_id: key.group_id.clone(),
                topics: vec![init_req::InitializeStateData {
                    topic_id: key.topic_id,
                    partitions: vec![init_req::PartitionData {
                        partition: key.partition,
                        state_epoch,
                        start_offset,
                        ..Default::default()
                    }],
                    ..Default::default()
                }],
                ..Default::default()
            };
            inner
                .on_coordinator(
                    &key,
                    || {
                        inner
                            .states
                            .initialize(&key, state_epoch, start_offset)
                            .map_err(|e| e.code())
                    },
                    |node| {
                        let (inner, request) = (inner.clone(), request.clone());
                        async move {
                            let r: init_resp::InitializeShareGroupStateResponse =
                                inner.call(node, 83, 0, &request).await?;
                            outcome!(r)
                        }
                    },
                )
                .await
        })
    }

    fn read(
        &self,
        key: SharePartitionKey,
        leader_epoch: i32,
    ) -> PersisterFuture<Option<PersistedState>> {
        let inner = self.0.clone();
        Box::pin(async move {
            let request = read_req::ReadShareGroupStateRequest {
                group_id: key.group_id.clone(),
                topics: vec![read_req::ReadStateData {
                    topic_id: key.topic_id,
                    partitions: vec![read_req::PartitionData {
                        partition: key.partition,
                        leader_epoch,
                        ..Default::default()
                    }],
                    ..Default::default()
                }],
                ..Default::default()
            };
            inner
                .on_coordinator(
                    &key,
                    || inner.states.read(&key, leader_epoch).map_err(|e| e.code()),
                    |node| {
                        let (inner, request) = (inner.clone(), request.clone());
                        async move {
                            let r: read_resp::ReadShareGroupStateResponse =
                                inner.call(node, 84, 0, &request).await?;
                            let p = only_partition!(r).ok_or(ErrorCode::UNKNOWN_SERVER_ERROR)?;
                            // Kafka's answer for a share partition never initialized.
                            if p.error_code == ErrorCode::INVALID_REQUEST.code() {
                                return Ok(None);
                            }
                            result_code(p.error_code)?;
                            Ok(Some(PersistedState {
                                state_epoch: p.state_epoch,
                                start_offset: p.start_offset,
                                state_batches: batches_in(&p.state_batches, |b| StateBatch {
                                    first_offset: b.first_offset,
                                    last_offset: b.last_offset,
                                    delivery_state: b.delivery_state,
                                    delivery_count: b.delivery_count,
                                }),
                            }))
                        }
                    },
                )
                .await
        })
    }

    fn read_summary(&self, key: SharePartitionKey) -> PersisterFuture<Option<StateSummary>> {
        let inner = self.0.clone();
        Box::pin(async move {
            if inner.cluster.topic(SHARE_STATE_TOPIC_NAME).is_none() {
                return Ok(None);
            }
            let request = sum_req::ReadShareGroupStateSummaryRequest {
                group_id: key.group_id.clone(),
                topics: vec![sum_req::ReadStateSummaryData {
                    topic_id: key.topic_id,
                    partitions: vec![sum_req::PartitionData {
                        partition: key.partition,
                        leader_epoch: -1,
                        ..Default::default()
                    }],
                    ..Default::default()
                }],
                ..Default::default()
            };
            inner
                .on_coordinator(
                    &key,
                    || inner.states.read_summary(&key).map_err(|e| e.code()),
                    |node| {
                        let (inner, request) = (inner.clone(), request.clone());
                        async move {
                            let r: sum_resp::ReadShareGroupStateSummaryResponse =
                                inner.call(node, 87, 1, &request).await?;
                            let p = only_partition!(r).ok_or(ErrorCode::UNKNOWN_SERVER_ERROR)?;
                            if p.error_code == ErrorCode::INVALID_REQUEST.code() {
                                return Ok(None);
                            }
                            result_code(p.error_code)?;
                            Ok(Some(StateSummary {
                                state_epoch: p.state_epoch,
                                leader_epoch: p.leader_epoch,
                                start_offset: p.start_offset,
                                delivery_complete_count: p.delivery_complete_count,
                            }))
                        }
                    },
                )
                .await
        })
    }

    fn write(&self, write: StateWrite) -> PersisterFuture<()> {
        let inner = self.0.clone();
        Box::pin(async move {
            let request = write_req::WriteShareGroupStateRequest {
                group_id: write.key.group_id.clone(),
                topics: vec![write_req::WriteStateData {
                    topic_id: write.key.topic_id,
                    partitions: vec![write_req::PartitionData {
                        partition: write.key.partition,
                        state_epoch: write.state_epoch,
                        leader_epoch: write.leader_epoch,
                        start_offset: write.start_offset,
                        delivery_complete_count: write.delivery_complete_count,
                        state_batches: write
                            .state_batches
                            .iter()
                            .map(|b| write_req::StateBatch {
                                first_offset: b.first_offset,
                                last_offset: b.last_offset,
                                delivery_state: b.delivery_state,
                                delivery_count: b.delivery_count,
                                ..Default::default()
                            })
                            .collect(),
                        ..Default::default()
                    }],
                    ..Default::default()
                }],
                ..Default::default()
            };
            inner
                .on_coordinator(
                    &write.key,
                    || inner.states.write(&write).map_err(|e| e.code()),
                    |node| {
                        let (inner, request) = (inner.clone(), request.clone());
                        async move {
                            let r: write_resp::WriteShareGroupStateResponse =
                                inner.call(node, 85, 1, &request).await?;
                            outcome!(r)
                        }
                    },
                )
                .await
        })
    }

    fn delete(&self, keys: Vec<SharePartitionKey>) -> PersisterFuture<()> {
        let inner = self.0.clone();
        Box::pin(async move {
            if inner.cluster.topic(SHARE_STATE_TOPIC_NAME).is_none() {
                return Ok(());
            }
            for key in keys {
                let request = del_req::DeleteShareGroupStateRequest {
                    group_id: key.group_id.clone(),
                    topics: vec![del_req::DeleteStateData {
                        topic_id: key.topic_id,
                        partitions: vec![del_req::PartitionData {
                            partition: key.partition,
                            ..Default::default()
                        }],
                        ..Default::default()
                    }],
                    ..Default::default()
                };
                inner
                    .on_coordinator(
                        &key,
                        || {
                            inner
                                .states
                                .delete(std::slice::from_ref(&key))
                                .map_err(|e| e.code())
                        },
                        |node| {
                            let (inner, request) = (inner.clone(), request.clone());
                            async move {
                                let r: del_resp::DeleteShareGroupStateResponse =
                                    inner.call(node, 86, 0, &request).await?;
                                outcome!(r)
                            }
                        },
                    )
                    .await?;
            }
            Ok(())
        })
    }
}
