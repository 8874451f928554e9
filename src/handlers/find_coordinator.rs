//! FindCoordinator (key 10), versions 0-6 (batched keys from v4): the group coordinator is the
//! leader of the group's `__consumer_offsets` partition, which on a single node is this broker.
//! The offsets topic (key type 0) and the transaction log (key type 1) are created on first
//! use, as Kafka does. v6 (KIP-932) is what share consumers send, with key type 0 for their
//! group; key type 2 (v6+) finds a share partition's share coordinator, the leader of its
//! `__share_group_state` partition, for the brokers' state RPCs: the key is
//! `group:topicId:partition` (INVALID_REQUEST otherwise), and the caller needs CLUSTER_ACTION,
//! as in Kafka.
use super::common::authz::Authz;
use super::ConnectionContext;
use crate::protocol::acl::operation;
use std::sync::Arc;

use super::{later, ready, Broker, ResponseFuture};
use crate::error::ErrorCode;
use crate::protocol::header::RequestHeader;
use crate::protocol::messages::find_coordinator_request::FindCoordinatorRequest;
use crate::protocol::messages::find_coordinator_response::*;

pub const KEY_TYPE_GROUP: i8 = 0;
pub const KEY_TYPE_TRANSACTION: i8 = 1;
pub const KEY_TYPE_SHARE: i8 = 2;

pub fn handle(
    broker: &Broker,
    authz: &Authz,
    listener: &str,
    version: i16,
    request: &FindCoordinatorRequest,
) -> FindCoordinatorResponse {
    // Kafka: DESCRIBE on the group or transactional id whose coordinator is asked for.
    let find = |broker: &Broker, key_type: i8, key: &str| {
        let refused = match key_type {
            KEY_TYPE_GROUP if !authz.group(operation::DESCRIBE, key) => {
                Some(ErrorCode::GROUP_AUTHORIZATION_FAILED)
            }
            KEY_TYPE_TRANSACTION if !authz.transactional_id(operation::DESCRIBE, key) => {
                Some(ErrorCode::TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
            }
            KEY_TYPE_SHARE if version < 6 || share_key_partition(key).is_none() => {
                Some(ErrorCode::INVALID_REQUEST)
            }
            KEY_TYPE_SHARE if !authz.cluster(operation::CLUSTER_ACTION) => {
                Some(ErrorCode::CLUSTER_AUTHORIZATION_FAILED)
            }
            _ => None,
        };
        match refused {
            Some(code) => (code, -1, String::new(), -1),
            None => find(broker, listener, key_type, key),
        }
    };
    if version < 4 {
        let (error, node_id, host, port) = find(broker, request.key_type, &request.key);
        return FindCoordinatorResponse {
            error_code: error.code(),
            error_message: if error.is_ok() {
                None
            } else {
                Some(error.message())
            },
            node_id,
            host,
            port,
            ..Default::default()
        };
    }
    let coordinators = request
        .coordinator_keys
        .iter()
        .map(|key| {
            let (error, node_id, host, port) = find(broker, request.key_type, key);
            Coordinator {
                key: key.clone(),
                node_id,
                host,
                port,
                error_code: error.code(),
                error_message: if error.is_ok() {
                    None
                } else {
                    Some(error.message())
                },
                ..Default::default()
            }
        })
        .collect();
    FindCoordinatorResponse {
        coordinators,
        ..Default::default()
    }
}

/// How an internal topic is created: Kafka's `GroupCoordinator.offsetsTopicConfigs` and
/// `TransactionStateManager.transactionTopicConfigs`.
struct InternalTopic {
    name: &'static str,
    partitions: i32,
    replication_factor: i16,
    /// The configs it is created with.
    configs: Vec<(String, String)>,
}

/// The partition of a share coordinator key `group:topicId:partition`, when well formed (the
/// group id may hold colons; the topic id is Kafka's base64 form).
fn share_key_partition(key: &str) -> Option<i32> {
    let mut parts = key.rsplitn(3, ':');
    let partition: i32 = parts.next()?.parse().ok()?;
    let topic_id = parts.next()?;
    let group_id = parts.next()?;
    (partition >= 0 && !group_id.is_empty() && topic_id.len() == 22).then_some(partition)
}

/// The internal topic of a key type.
fn internal_topic(broker: &Broker, key_type: i8) -> Option<InternalTopic> {
    use crate::cluster::share_persister::ShareStateTopic;
    use crate::coordinator::offsets_topic::{
        internal_topic_configs, OFFSETS_TOPIC, TRANSACTION_TOPIC,
    };
    use crate::coordinator::share_state::SHARE_STATE_TOPIC_NAME;
    let c = &broker.config;
    match key_type {
        KEY_TYPE_GROUP => Some(InternalTopic {
            name: OFFSETS_TOPIC,
            partitions: c.offsets_topic_num_partitions.max(1),
            replication_factor: c.offsets_topic_replication_factor,
            configs: internal_topic_configs(c.offsets_topic_segment_bytes)
                .into_iter()
                .collect(),
        }),
        KEY_TYPE_TRANSACTION => {
            let mut configs = internal_topic_configs(104_857_600);
            configs.insert(
                "min.insync.replicas".to_string(),
                transaction_log_min_isr(
                    c.transaction_state_log_min_isr,
                    c.transaction_state_log_replication_factor,
                )
                .to_string(),
            );
            Some(InternalTopic {
                name: TRANSACTION_TOPIC,
                partitions: c.transaction_state_log_num_partitions.max(1),
                replication_factor: c.transaction_state_log_replication_factor,
                configs: configs.into_iter().collect(),
            })
        }
        KEY_TYPE_SHARE => {
            let topic = ShareStateTopic::from_config(c);
            Some(InternalTopic {
                name: SHARE_STATE_TOPIC_NAME,
                partitions: topic.partitions,
                replication_factor: topic.replication_factor,
                configs: topic.configs(),
            })
        }
        _ => None,
    }
}

/// The transaction log's `min.insync.replicas`. Kafka sets `transaction.state.log.min.isr`
/// as is (default 2); Strata caps it at the replication factor so that a zero-config single
/// node (replication factor 1) still commits transactions instead of answering
/// COORDINATOR_NOT_AVAILABLE for ever. With a replication factor of 3, as a cluster
/// configures it, the value is Kafka's.
pub fn transaction_log_min_isr(min_isr: i32, replication_factor: i16) -> i32 {
    min_isr.min(i32::from(replication_factor).max(1))
}

/// Asks the controller to create the internal topic of `key_type` unless it exists; true
/// if it exists already.
fn create_internal_topic(broker: &Broker, key_type: i8) -> bool {
    let Some(topic) = internal_topic(broker, key_type) else {
        return true;
    };
    if broker.cluster.topic(topic.name).is_some() {
        return true;
    }
    broker.cluster.create_topic_in_background(
        topic.name,
        topic.partitions,
        topic.replication_factor,
        topic.configs,
    );
    false
}

/// How long a request that needs a missing internal topic waits for its creation.
const INTERNAL_TOPIC_WAIT_MS: u64 = 1_000;

/// Creates the internal topic of `key_type` if missing and waits (bounded) until its
/// partitions are open and their coordinators loaded here: the controller usually takes
/// milliseconds, which spares the client a COORDINATOR_NOT_AVAILABLE round trip.
pub async fn await_internal_topic(broker: &Broker, key_type: i8) {
    if create_internal_topic(broker, key_type) {
        return;
    }
    let Some(InternalTopic { name: topic, .. }) = internal_topic(broker, key_type) else {
        return;
    };
    // Woken by each image the publisher hands out, not by polling.
    let mut published = broker.cluster.published.subscribe();
    let created = published.wait_for(|image| image.topic_meta(topic).is_some());
    let _ = tokio::time::timeout(
        std::time::Duration::from_millis(INTERNAL_TOPIC_WAIT_MS),
        created,
    )
    .await;
}

/// The coordinator for one key, (error, node id, host, port): the leader of the key's
/// partition of the internal topic, from the image. The topic is created on first use, with
/// COORDINATOR_NOT_AVAILABLE meanwhile, as Kafka answers while it creates it.
fn find(broker: &Broker, listener: &str, key_type: i8, key: &str) -> (ErrorCode, i32, String, i32) {
    let Some(InternalTopic { name: topic, .. }) = internal_topic(broker, key_type) else {
        return (ErrorCode::INVALID_REQUEST, -1, String::new(), -1);
    };
    let partition = match key_type {
        KEY_TYPE_GROUP => broker.groups.partition_for(key),
        KEY_TYPE_SHARE => {
            crate::coordinator::partition_for(key, broker.share_states.num_partitions())
        }
        _ => broker.txns.partition_for(key),
    };
    let cluster = &broker.cluster;
    let unavailable = (ErrorCode::COORDINATOR_NOT_AVAILABLE, -1, String::new(), -1);
    let image = cluster.image();
    let Some(t) = image.topics.get(topic) else {
        create_internal_topic(broker, key_type);
        return unavailable;
    };
    let Some(leader) = t.partitions.get(&partition).map(|p| p.leader) else {
        return unavailable;
    };
    match cluster
        .client_brokers_on(Some(listener))
        .into_iter()
        .find(|(id, ..)| *id == leader)
    {
        Some((id, host, port, _)) => (ErrorCode::NONE, id, host, port),
        None => unavailable,
    }
}

pub async fn start(
    broker: Arc<Broker>,
    header: RequestHeader,
    request: FindCoordinatorRequest,
    conn: Arc<ConnectionContext>,
) -> ResponseFuture {
    let authz = Authz::new(&broker, &conn);
    let key_types: Vec<i8> = if header.api_version < 4 {
        vec![request.key_type]
    } else {
        vec![request.key_type; usize::from(!request.coordinator_keys.is_empty())]
    };
    let missing: Vec<i8> = key_types
        .into_iter()
        .filter(|k| !create_internal_topic(&broker, *k))
        .collect();
    if missing.is_empty() {
        let response = handle(
            &broker,
            &authz,
            &conn.listener_name,
            header.api_version,
            &request,
        );
        return ready(header, Some(response));
    }
    let version = header.api_version;
    later(header, async move {
        for k in missing {
            await_internal_topic(&broker, k).await;
        }
        Some(handle(
            &broker,
            &authz,
            &conn.listener_name,
            version,
            &request,
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::transaction_log_min_isr;

    #[test]
    fn the_transaction_log_min_isr_is_capped_at_its_replication_factor() {
        // Kafka's default (2) on Strata's zero-config single node: one replica is enough.
        assert_eq!(transaction_log_min_isr(2, 1), 1);
        // A cluster's replication factor 3: Kafka's value as set.
        assert_eq!(transaction_log_min_isr(2, 3), 2);
        assert_eq!(transaction_log_min_isr(3, 3), 3);
        assert_eq!(transaction_log_min_isr(5, 3), 3);
    }
}
