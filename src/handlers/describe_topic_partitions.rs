//! DescribeTopicPartitions (key 75), version 0 (KIP-966): topics and their partitions, a page at a
//! time, as `kafka-topics --describe` in Kafka 3.8+ asks for them instead of Metadata.
//!
//! Follows Kafka's `DescribeTopicPartitionsRequestHandler`: topics in name order, from the
//! cursor's topic and partition on; a page holds at most
//! `min(ResponsePartitionLimit, max.request.partition.size.limit)` partitions (at least one), and
//! the next cursor points at the first partition left out. A topic named in the request that
//! the caller may not describe is answered TOPIC_AUTHORIZATION_FAILED without its id; when the
//! request names no topic (all topics) such topics, and topics that do not exist, are left out.
//! Strata keeps no eligible leader replicas (KIP-966 ELR), so those lists are empty, as Kafka's
//! with ELR off.
use std::sync::Arc;

use super::common::authz::Authz;
use super::{ready, Broker, ConnectionContext, ResponseFuture};
use crate::controller::image::{is_internal_topic, MetadataImage, TopicImage};
use crate::controller::topics::validate_topic_name;
use crate::error::ErrorCode;
use crate::protocol::acl::{operation, resource_type};
use crate::protocol::codec::Uuid;
use crate::protocol::header::RequestHeader;
use crate::protocol::messages::describe_topic_partitions_request::DescribeTopicPartitionsRequest;
use crate::protocol::messages::describe_topic_partitions_response::*;

pub async fn start(
    broker: Arc<Broker>,
    header: RequestHeader,
    request: DescribeTopicPartitionsRequest,
    conn: Arc<ConnectionContext>,
) -> ResponseFuture {
    let authz = Authz::new(&broker, &conn);
    let image = broker.cluster.image();
    let limit = broker.config.max_request_partition_size_limit;
    ready(header, Some(handle(&image, &authz, limit, request)))
}

/// The page of topics and partitions `request` asks for, `max_partitions` being the broker's
/// `max.request.partition.size.limit`.
pub fn handle(
    image: &MetadataImage,
    authz: &Authz,
    max_partitions: i32,
    request: DescribeTopicPartitionsRequest,
) -> DescribeTopicPartitionsResponse {
    let all_topics = request.topics.is_empty();
    let (cursor_topic, cursor_partition) =
        request.cursor.as_ref().map_or((String::new(), 0), |c| {
            (c.topic_name.clone(), c.partition_index)
        });
    // Topics at or after the cursor's, in name order, each once.
    let mut names: Vec<String> = if all_topics {
        image
            .topics
            .keys()
            .filter(|n| n.as_str() >= cursor_topic.as_str())
            .cloned()
            .collect()
    } else {
        request
            .topics
            .iter()
            .map(|t| t.name.clone())
            .filter(|n| n.as_str() >= cursor_topic.as_str())
            .collect()
    };
    names.sort();
    names.dedup();
    let bad_cursor = match &request.cursor {
        // The cursor's topic must be one the request names.
        Some(c) if !all_topics && names.binary_search(&c.topic_name).is_err() => true,
        Some(c) => c.partition_index < 0,
        None => false,
    };
    if bad_cursor {
        // Kafka fails the whole request: every named topic carries the error.
        return DescribeTopicPartitionsResponse {
            topics: request
                .topics
                .into_iter()
                .map(|t| error_topic(t.name, ErrorCode::INVALID_REQUEST))
                .collect(),
            ..Default::default()
        };
    }

    let mut refused = Vec::new();
    let mut response = DescribeTopicPartitionsResponse::default();
    let mut remaining = max_partitions.min(request.response_partition_limit).max(1) as usize;
    for name in names {
        if all_topics {
            if !authz.visible(operation::DESCRIBE, resource_type::TOPIC, &name) {
                continue;
            }
        } else if !authz.topic(operation::DESCRIBE, &name) {
            refused.push(error_topic(name, ErrorCode::TOPIC_AUTHORIZATION_FAILED));
            continue;
        }
        if remaining == 0 {
            // The page is full at a topic boundary: the next one starts with this topic.
            response.next_cursor = Some(Cursor {
                topic_name: name,
                partition_index: 0,
                ..Default::default()
            });
            break;
        }
        let Some(topic) = image.topics.get(&name) else {
            if !all_topics {
                let code = match validate_topic_name(&name) {
                    Ok(()) => ErrorCode::UNKNOWN_TOPIC_OR_PARTITION,
                    Err(_) => ErrorCode::INVALID_TOPIC_EXCEPTION,
                };
                response.topics.push(error_topic(name, code));
            }
            continue;
        };
        let first = if name == cursor_topic {
            cursor_partition
        } else {
            0
        };
        let (partitions, next) = page_of(image, topic, first, remaining);
        remaining -= partitions.len();
        response.topics.push(DescribeTopicPartitionsResponseTopic {
            error_code: 0,
            topic_id: Uuid(topic.topic_id),
            is_internal: is_internal_topic(&name),
            partitions,
            topic_authorized_operations: authz.authorized_operations(resource_type::TOPIC, &name),
            name: Some(name.clone()),
            ..Default::default()
        });
        if let Some(partition_index) = next {
            response.next_cursor = Some(Cursor {
                topic_name: name,
                partition_index,
                ..Default::default()
            });
            break;
        }
    }
    response.topics.extend(refused);
    response
}

/// Up to `max` partitions of `topic` from index `first`, and the index of the first one left
/// out (None when the rest of the topic fitted).
fn page_of(
    image: &MetadataImage,
    topic: &TopicImage,
    first: i32,
    max: usize,
) -> (Vec<DescribeTopicPartitionsResponsePartition>, Option<i32>) {
    let mut partitions = Vec::new();
    for (&index, reg) in topic.partitions.range(first..) {
        if partitions.len() == max {
            return (partitions, Some(index));
        }
        // Offline: on a broker that is fenced or no longer registered.
        let offline_replicas = reg
            .replicas
            .iter()
            .copied()
            .filter(|r| image.brokers.get(r).map_or(true, |b| b.fenced))
            .collect();
        partitions.push(DescribeTopicPartitionsResponsePartition {
            error_code: 0,
            partition_index: index,
            leader_id: reg.leader,
            leader_epoch: reg.leader_epoch,
            replica_nodes: reg.replicas.clone(),
            isr_nodes: reg.isr.clone(),
            eligible_leader_replicas: Some(Vec::new()),
            last_known_elr: Some(Vec::new()),
            offline_replicas,
            ..Default::default()
        });
    }
    (partitions, None)
}

fn error_topic(name: String, code: ErrorCode) -> DescribeTopicPartitionsResponseTopic {
    DescribeTopicPartitionsResponseTopic {
        error_code: code.code(),
        name: Some(name),
        topic_id: Uuid::ZERO,
        is_internal: false,
        partitions: Vec::new(),
        topic_authorized_operations: i32::MIN,
        ..Default::default()
    }
}
