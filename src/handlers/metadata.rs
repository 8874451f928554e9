//! Metadata (key 3), versions 0-13: brokers, topics with ids and leader epochs, and topic
//! auto-creation (`auto.create.topics.enable`, `num.partitions`) when the client allows it (v4+;
//! always for older versions, as Kafka). v13's top-level error code (KIP-1102) is always 0: a
//! Kafka 4.3 broker never sets it either (clients act on REBOOTSTRAP_REQUIRED there, which only
//! a future broker is to send).
use super::common::authz::Authz;
use super::ConnectionContext;
use crate::protocol::acl::{operation, resource_type, CLUSTER_NAME};
use std::sync::Arc;

use super::{later, ready, Broker, ResponseFuture};
use crate::controller::topics::validate_topic_name;
use crate::controller::TopicMeta;
use crate::error::ErrorCode;
use crate::protocol::codec::Uuid;
use crate::protocol::header::RequestHeader;
use crate::protocol::messages::metadata_request::MetadataRequest;
use crate::protocol::messages::metadata_response::*;

pub fn brokers(broker: &Broker, listener: &str) -> Vec<MetadataResponseBroker> {
    broker
        .cluster
        .client_brokers_on(Some(listener))
        .into_iter()
        .map(|(node_id, host, port, rack)| MetadataResponseBroker {
            node_id,
            host,
            port,
            rack,
            ..Default::default()
        })
        .collect()
}

/// A topic as the controller's image describes it: leaders, replicas, ISR and the replicas
/// on brokers that are fenced or gone (offline).
fn topic_response(broker: &Broker, meta: &TopicMeta) -> MetadataResponseTopic {
    let image = broker.cluster.image();
    let partitions = image
        .topics
        .get(&meta.name)
        .map(|t| {
            t.partitions
                .iter()
                .map(|(&p, reg)| {
                    let offline: Vec<i32> = reg
                        .replicas
                        .iter()
                        .copied()
                        .filter(|r| image.brokers.get(r).map_or(true, |b| b.fenced))
                        .collect();
                    MetadataResponsePartition {
                        error_code: if reg.leader < 0 {
                            ErrorCode::LEADER_NOT_AVAILABLE.code()
                        } else {
                            0
                        },
                        partition_index: p,
                        leader_id: reg.leader,
                        leader_epoch: reg.leader_epoch,
                        replica_nodes: reg.replicas.clone(),
                        isr_nodes: reg.isr.clone(),
                        offline_replicas: offline,
                        ..Default::default()
                    }
                })
                .collect()
        })
        .unwrap_or_default();
    MetadataResponseTopic {
        error_code: 0,
        name: Some(meta.name.clone()),
        topic_id: meta.id,
        is_internal: meta.is_internal,
        partitions,
        ..Default::default()
    }
}

fn error_topic(name: Option<String>, id: Uuid, code: ErrorCode) -> MetadataResponseTopic {
    MetadataResponseTopic {
        error_code: code.code(),
        name,
        topic_id: id,
        ..Default::default()
    }
}

/// Whether a Metadata request may auto-create `name` (Kafka: CREATE on the cluster, or on
/// the topic); checked only for topics the caller may describe.
fn may_create(authz: &Authz, name: &str) -> bool {
    authz.visible(operation::CREATE, resource_type::CLUSTER, CLUSTER_NAME)
        || authz.topic(operation::CREATE, name)
}

pub fn handle(
    broker: &Broker,
    authz: &Authz,
    listener: &str,
    version: i16,
    request: MetadataRequest,
) -> MetadataResponse {
    let include_topic_operations = request.include_topic_authorized_operations;
    let include_cluster_operations = request.include_cluster_authorized_operations;
    let described = |mut t: MetadataResponseTopic| {
        if include_topic_operations {
            if let Some(name) = &t.name {
                t.topic_authorized_operations =
                    authz.authorized_operations(resource_type::TOPIC, name);
            }
        }
        t
    };
    // v0: an empty list means all topics; v1+: null means all topics.
    let requested = match request.topics {
        None => None,
        Some(t) if t.is_empty() && version == 0 => None,
        Some(t) => Some(t),
    };
    let allow_auto_create = (version < 4 || request.allow_auto_topic_creation)
        && broker.config.auto_create_topics_enable;
    let topics = match requested {
        // All topics: those the caller may not describe are left out, as in Kafka.
        None => broker
            .cluster
            .topics()
            .iter()
            .filter(|t| authz.visible(operation::DESCRIBE, resource_type::TOPIC, &t.name))
            .map(|t| described(topic_response(broker, t)))
            .collect(),
        Some(list) => list
            .into_iter()
            .map(|t| {
                let name = match (&t.name, t.topic_id.is_zero()) {
                    (Some(n), _) => n.clone(),
                    (None, false) => match broker.cluster.topic_name_by_id(&t.topic_id) {
                        Some(n) => n,
                        None => return error_topic(None, t.topic_id, ErrorCode::UNKNOWN_TOPIC_ID),
                    },
                    (None, true) => {
                        return error_topic(None, t.topic_id, ErrorCode::INVALID_REQUEST)
                    }
                };
                // Kafka answers a named topic the caller may not describe with
                // TOPIC_AUTHORIZATION_FAILED, its name and no id, whether it exists or not.
                if !authz.topic(operation::DESCRIBE, &name) {
                    return error_topic(
                        Some(name),
                        Uuid::ZERO,
                        ErrorCode::TOPIC_AUTHORIZATION_FAILED,
                    );
                }
                if let Some(meta) = broker.cluster.topic(&name) {
                    return described(topic_response(broker, &meta));
                }
                if validate_topic_name(&name).is_err() {
                    return error_topic(Some(name), Uuid::ZERO, ErrorCode::INVALID_TOPIC_EXCEPTION);
                }
                if !allow_auto_create {
                    return error_topic(
                        Some(name),
                        Uuid::ZERO,
                        ErrorCode::UNKNOWN_TOPIC_OR_PARTITION,
                    );
                }
                if !may_create(authz, &name) {
                    return error_topic(
                        Some(name),
                        Uuid::ZERO,
                        ErrorCode::TOPIC_AUTHORIZATION_FAILED,
                    );
                }
                // As Kafka: ask the controller and answer LEADER_NOT_AVAILABLE, so the client
                // asks again once the topic exists ([`start`] gives it a moment first).
                broker.cluster.auto_create_topic(&name);
                error_topic(Some(name), Uuid::ZERO, ErrorCode::LEADER_NOT_AVAILABLE)
            })
            .collect(),
    };
    MetadataResponse {
        throttle_time_ms: 0,
        brokers: brokers(broker, listener),
        cluster_id: Some(broker.cluster_id.clone()),
        // KRaft brokers name a live broker here: admin requests sent to it are forwarded to
        // the active controller.
        controller_id: broker.node_id,
        topics,
        cluster_authorized_operations: if include_cluster_operations {
            authz.authorized_operations(resource_type::CLUSTER, CLUSTER_NAME)
        } else {
            i32::MIN
        },
        ..Default::default()
    }
}

pub async fn start(
    broker: Arc<Broker>,
    header: RequestHeader,
    request: MetadataRequest,
    conn: Arc<ConnectionContext>,
) -> ResponseFuture {
    let version = header.api_version;
    let authz = Authz::new(&broker, &conn);
    let missing = auto_created(&broker, &authz, version, &request);
    if missing.is_empty() {
        let response = handle(&broker, &authz, &conn.listener_name, version, request);
        return ready(header, Some(response));
    }
    // The controller usually creates a topic within milliseconds: waiting that long spares
    // the client the LEADER_NOT_AVAILABLE round trip (and its retry backoff).
    later(header, async move {
        for name in &missing {
            broker.cluster.auto_create_topic(name);
        }
        let created = broker.cluster.wait_until(|image| {
            missing.iter().all(|n| {
                image
                    .topics
                    .get(n)
                    .is_some_and(|t| !t.partitions.is_empty())
            })
        });
        let deadline =
            tokio::time::Instant::now() + std::time::Duration::from_millis(AUTO_CREATE_WAIT_MS);
        let _ = tokio::time::timeout_at(deadline, created).await;
        Some(handle(
            &broker,
            &authz,
            &conn.listener_name,
            version,
            request,
        ))
    })
}

/// How long a Metadata request waits for the topics it auto-creates.
const AUTO_CREATE_WAIT_MS: u64 = 500;

/// The topics this request would auto-create.
fn auto_created(
    broker: &Broker,
    authz: &Authz,
    version: i16,
    request: &MetadataRequest,
) -> Vec<String> {
    let allowed = (version < 4 || request.allow_auto_topic_creation)
        && broker.config.auto_create_topics_enable;
    if !allowed {
        return Vec::new();
    }
    request
        .topics
        .iter()
        .flatten()
        .filter_map(|t| t.name.clone())
        .filter(|n| broker.cluster.topic(n).is_none())
        .filter(|n| validate_topic_name(n).is_ok())
        .filter(|n| {
            authz.visible(operation::DESCRIBE, resource_type::TOPIC, n)
                && (authz.visible(operation::CREATE, resource_type::CLUSTER, CLUSTER_NAME)
                    || authz.visible(operation::CREATE, resource_type::TOPIC, n))
        })
        .collect()
}
