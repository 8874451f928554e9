//! Registration, heartbeats and controlled shutdown (Kafka's `BrokerLifecycleManager`,
//! KIP-631), and the sending of leaders' ISR proposals (`AlterPartitionManager`, KIP-497 with
//! KIP-903 broker epochs).
//!
//! A broker registers fenced with a fresh incarnation id and gets a broker epoch; the
//! controller unfences it once its heartbeats show it has caught up with the metadata log.
//! A heartbeat answered STALE_BROKER_EPOCH (the controller fenced and forgot this
//! incarnation) makes the broker register again. At shutdown the broker asks to shut down
//! (`want_shut_down`) until the controller has moved its leaderships away, bounded in time.
use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use super::BrokerParts;
use crate::error::ErrorCode;
use crate::metrics::IsrChange;
use crate::protocol::codec::Uuid;
use crate::protocol::messages::alter_partition_request::{
    AlterPartitionRequest, BrokerState, PartitionData, TopicData,
};
use crate::protocol::messages::alter_partition_response::AlterPartitionResponse;
use crate::protocol::messages::broker_heartbeat_request::BrokerHeartbeatRequest;
use crate::protocol::messages::broker_heartbeat_response::BrokerHeartbeatResponse;
use crate::protocol::messages::broker_registration_request::{
    BrokerRegistrationRequest, Feature, Listener,
};
use crate::protocol::messages::broker_registration_response::BrokerRegistrationResponse;
use crate::replica::{AlterPartition, AlterPartitionError, BrokerEpoch};

use super::ClusterContext;

/// Heartbeat interval of a broker that is not yet caught up and unfenced.
const STARTING_HEARTBEAT_INTERVAL: Duration = Duration::from_millis(5);

/// How long a shutting-down broker waits for the controller to move its leaderships.
const CONTROLLED_SHUTDOWN_MAX_MS: u64 = 5_000;

async fn register(
    broker: &BrokerParts,
    cluster: &ClusterContext,
    incarnation_id: Uuid,
) -> Result<i64, String> {
    let listeners = broker
        .endpoints
        .iter()
        .filter(|e| cluster.client_listeners.contains(&e.name))
        .map(|e| Listener {
            name: e.name.clone(),
            host: e.host.clone(),
            port: e.port as u16,
            security_protocol: 0,
            ..Default::default()
        })
        .collect();
    let request = BrokerRegistrationRequest {
        broker_id: broker.node_id,
        cluster_id: broker.cluster_id.clone(),
        incarnation_id,
        listeners,
        rack: None,
        // KIP-858: the controller learns our log dirs by `directory_id`; those offline now
        // are in the first heartbeat's `offline_log_dirs`, which takes their replicas out.
        // A dir whose id could not be read is left out.
        log_dirs: broker
            .replicas
            .logs()
            .log_dir_states()
            .iter()
            .map(|d| d.directory_id())
            .filter(|id| *id != Uuid::ZERO)
            .collect(),
        previous_broker_epoch: -1,
        // The levels this software supports; the controller refuses us (UNSUPPORTED_VERSION)
        // when a finalized level is outside them.
        features: crate::controller::features::advertised()
            .map(|(name, min, max)| Feature {
                name: name.to_string(),
                min_supported_version: min,
                max_supported_version: max,
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    };
    let response: BrokerRegistrationResponse = cluster
        .channel
        .call_with_timeout(
            crate::protocol::messages::broker_registration_request::BrokerRegistrationRequest::API_KEY,
            3,
            &request,
            session_call_timeout_ms(broker),
        )
        .await
        .map_err(|e| e.to_string())?;
    let code = ErrorCode::from_code(response.error_code);
    if code != ErrorCode::NONE {
        return Err(format!("registration refused: {code:?}"));
    }
    Ok(response.broker_epoch)
}

/// A registration or heartbeat must fail fast enough to be retried within one session
/// (`broker.session.timeout.ms`), or a healthy broker stuck on a dead controller is fenced.
fn session_call_timeout_ms(broker: &BrokerParts) -> u64 {
    (broker.config.broker_session_timeout_ms as u64 / 3).max(100)
}

async fn heartbeat(
    broker: &BrokerParts,
    cluster: &ClusterContext,
    broker_id: i32,
    broker_epoch: i64,
    want_shut_down: bool,
) -> Result<BrokerHeartbeatResponse, String> {
    let request = BrokerHeartbeatRequest {
        broker_id,
        broker_epoch,
        current_metadata_offset: cluster.image_offset() as i64,
        want_fence: false,
        want_shut_down,
        // Every heartbeat repeats them, as Kafka's BrokerLifecycleManager does.
        offline_log_dirs: broker.replicas.offline_directory_ids(),
        ..Default::default()
    };
    cluster
        .channel
        .call_with_timeout(
            crate::protocol::messages::broker_heartbeat_request::BrokerHeartbeatRequest::API_KEY,
            1,
            &request,
            session_call_timeout_ms(broker),
        )
        .await
        .map_err(|e| e.to_string())
}

/// Resolves once the broker has more offline log dirs than `reported`: a failed dir is
/// reported at once rather than at the next heartbeat (Kafka's
/// `BrokerLifecycleManager.propagateDirectoryFailure`), so its leaderships move quickly.
async fn offline_dirs_changed(broker: &BrokerParts, reported: usize) {
    loop {
        tokio::time::sleep(Duration::from_millis(20)).await;
        if broker.replicas.offline_directory_ids().len() > reported {
            return;
        }
    }
}

/// Registers, then heartbeats every `broker.heartbeat.interval.ms` until shutdown, then
/// asks for a controlled shutdown.
pub async fn run(
    broker: Arc<BrokerParts>,
    cluster: Arc<ClusterContext>,
    shutdown: CancellationToken,
) {
    let interval = Duration::from_millis(broker.config.broker_heartbeat_interval_ms.max(10) as u64);
    let incarnation_id = Uuid::random();
    let mut broker_epoch: Option<i64> = None;
    let mut fenced = true;
    loop {
        if shutdown.is_cancelled() {
            break;
        }
        // Until it is caught up and unfenced a starting broker heartbeats every few
        // milliseconds (as Kafka's lifecycle manager does during its initial catch-up), so
        // a single node serves within milliseconds of its start.
        let mut next = interval;
        match broker_epoch {
            None => match register(&broker, &cluster, incarnation_id).await {
                Ok(epoch) => {
                    tracing::info!(broker_epoch = epoch, "registered with the controller");
                    broker.replicas.set_broker_epoch(BrokerEpoch(epoch));
                    broker_epoch = Some(epoch);
                    continue;
                }
                Err(e) => tracing::debug!(error = %e, "registration failed; retrying"),
            },
            Some(epoch) => match heartbeat(&broker, &cluster, broker.node_id, epoch, false).await {
                Ok(r) => match ErrorCode::from_code(r.error_code) {
                    ErrorCode::NONE => {
                        cluster
                            .last_heartbeat_ok_ms
                            .store(broker.clock.now_ms(), std::sync::atomic::Ordering::Relaxed);
                        if r.is_caught_up && !*cluster.caught_up.borrow() {
                            tracing::info!("metadata caught up with the controller");
                            cluster.caught_up.send_replace(true);
                        }
                        if fenced != r.is_fenced {
                            tracing::info!(fenced = r.is_fenced, "controller changed our fencing");
                            fenced = r.is_fenced;
                        }
                        if fenced || !r.is_caught_up {
                            next = STARTING_HEARTBEAT_INTERVAL;
                        }
                    }
                    ErrorCode::STALE_BROKER_EPOCH | ErrorCode::BROKER_ID_NOT_REGISTERED => {
                        tracing::warn!(
                            "controller no longer knows this registration; registering again"
                        );
                        broker_epoch = None;
                        continue;
                    }
                    other => tracing::debug!(error = ?other, "heartbeat refused"),
                },
                Err(e) => tracing::debug!(error = %e, "heartbeat failed"),
            },
        }
        let reported_offline = broker.replicas.offline_directory_ids().len();
        tokio::select! {
            _ = shutdown.cancelled() => break,
            _ = tokio::time::sleep(next) => {}
            _ = offline_dirs_changed(&broker, reported_offline) => {}
        }
    }
    // Controlled shutdown: leaderships move before the listeners close.
    if let Some(epoch) = broker_epoch {
        let deadline =
            tokio::time::Instant::now() + Duration::from_millis(CONTROLLED_SHUTDOWN_MAX_MS);
        while tokio::time::Instant::now() < deadline {
            match heartbeat(&broker, &cluster, broker.node_id, epoch, true).await {
                Ok(r) if r.should_shut_down => {
                    tracing::info!("controlled shutdown complete");
                    return;
                }
                _ => tokio::time::sleep(Duration::from_millis(200)).await,
            }
        }
        tracing::warn!("controlled shutdown did not complete in time");
    }
}

fn to_request(
    broker_id: i32,
    broker_epoch: i64,
    proposals: &[(AlterPartition, Uuid, IsrChange)],
) -> AlterPartitionRequest {
    let mut topics: Vec<TopicData> = Vec::new();
    for (p, topic_id, _) in proposals {
        let data = PartitionData {
            partition_index: p.partition,
            leader_epoch: p.leader_epoch.0,
            new_isr: p.isr_ids().iter().map(|b| b.0).collect(),
            new_isr_with_epochs: p
                .new_isr
                .iter()
                .map(|m| BrokerState {
                    broker_id: m.broker.0,
                    broker_epoch: m.broker_epoch.0,
                    ..Default::default()
                })
                .collect(),
            partition_epoch: p.partition_epoch.0,
            ..Default::default()
        };
        match topics.iter_mut().find(|t| t.topic_id == *topic_id) {
            Some(t) => t.partitions.push(data),
            None => topics.push(TopicData {
                topic_name: p.topic.clone(),
                topic_id: *topic_id,
                partitions: vec![data],
                ..Default::default()
            }),
        }
    }
    AlterPartitionRequest {
        broker_id,
        broker_epoch,
        topics,
        ..Default::default()
    }
}

fn alter_partition_error(code: ErrorCode) -> Option<AlterPartitionError> {
    Some(match code {
        ErrorCode::FENCED_LEADER_EPOCH => AlterPartitionError::FencedLeaderEpoch,
        ErrorCode::INVALID_UPDATE_VERSION => AlterPartitionError::InvalidUpdateVersion,
        ErrorCode::INELIGIBLE_REPLICA => AlterPartitionError::IneligibleReplica,
        ErrorCode::UNKNOWN_TOPIC_OR_PARTITION | ErrorCode::UNKNOWN_TOPIC_ID => {
            AlterPartitionError::UnknownTopicOrPartition
        }
        ErrorCode::NOT_LEADER_OR_FOLLOWER => AlterPartitionError::NotLeaderOrFollower,
        _ => return None,
    })
}

/// Sends the leaders' ISR proposals to the controller. A proposal whose request failed on
/// the network is sent again; one the controller refused is dropped by its partition.
pub async fn run_alter_partition_sender(
    broker: Arc<BrokerParts>,
    cluster: Arc<ClusterContext>,
    shutdown: CancellationToken,
) {
    // Each proposal with its topic id and which way it changes the ISR (for the ISR meters,
    // counted when the controller answers).
    let mut pending: Vec<(AlterPartition, Uuid, IsrChange)> = Vec::new();
    loop {
        tokio::select! {
            _ = shutdown.cancelled() => return,
            _ = tokio::time::sleep(Duration::from_millis(50)) => {}
        }
        let now = broker.now_ms();
        broker.replicas.maybe_shrink_isr(now);
        for p in broker.replicas.take_alter_partitions() {
            let replica = broker.replicas.get(&p.topic, p.partition);
            let topic_id = replica.as_ref().map(|x| x.topic_id).unwrap_or(Uuid::ZERO);
            // The leader's ISR before the change: a proposal only adds or only removes.
            let current = replica.map_or(0, |x| x.isr().len());
            let change = match p.new_isr.len() > current {
                true => IsrChange::Expand,
                false => IsrChange::Shrink,
            };
            pending.retain(|(q, ..)| !(q.topic == p.topic && q.partition == p.partition));
            pending.push((p, topic_id, change));
        }
        if pending.is_empty() {
            continue;
        }
        let epoch = broker.replicas.broker_epoch().0;
        let request = to_request(broker.node_id, epoch, &pending);
        let response: AlterPartitionResponse = match cluster
            .channel
            .call(
                crate::protocol::messages::alter_partition_request::AlterPartitionRequest::API_KEY,
                3,
                &request,
            )
            .await
        {
            Ok(r) => r,
            Err(e) => {
                tracing::debug!(error = %e, "AlterPartition failed; will retry");
                tokio::time::sleep(Duration::from_millis(200)).await;
                continue;
            }
        };
        if ErrorCode::from_code(response.error_code) != ErrorCode::NONE {
            tracing::debug!(
                error = response.error_code,
                "AlterPartition refused as a whole; will retry"
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
            continue;
        }
        let mut done = Vec::new();
        for t in &response.topics {
            for r in &t.partitions {
                let Some(idx) = pending
                    .iter()
                    .position(|(p, id, _)| *id == t.topic_id && p.partition == r.partition_index)
                else {
                    continue;
                };
                let code = ErrorCode::from_code(r.error_code);
                broker
                    .metrics
                    .replication
                    .isr_change_answered(pending[idx].2, code == ErrorCode::NONE);
                if code != ErrorCode::NONE {
                    if let Some(err) = alter_partition_error(code) {
                        broker
                            .replicas
                            .on_alter_partition_error(&pending[idx].0, err);
                    }
                }
                done.push(idx);
            }
        }
        done.sort_unstable();
        for idx in done.into_iter().rev() {
            pending.remove(idx);
        }
    }
}
