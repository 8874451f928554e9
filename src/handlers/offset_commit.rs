//! OffsetCommit (key 8), versions 2-10: the group coordinator validates and appends the
//! offsets; the answer waits until they are replicated to the ISR of the
//! group's `__consumer_offsets` partition, so a committed offset survives a failover.
//! Partitions that do not exist are answered UNKNOWN_TOPIC_OR_PARTITION before the
//! coordinator sees the request, as Kafka's `KafkaApis` does. v10 (KIP-848) names topics by
//! id: a known id is committed under its topic's name (offsets are kept by name, so v9 and
//! v10 clients of one group see the same offsets), an unknown one is answered
//! UNKNOWN_TOPIC_ID, and the answer names every topic by id again.
use super::common::authz::Authz;
use super::ConnectionContext;
use crate::error::ErrorCode;
use crate::protocol::acl::operation;
use std::sync::Arc;

use super::common::unknown_partitions::{add_errors, add_unknown, split_refused, split_unknown};
use super::{group_context, ready, Broker, ResponseFuture};
use crate::protocol::codec::Uuid;
use crate::protocol::header::RequestHeader;
use crate::protocol::messages::offset_commit_request::{
    OffsetCommitRequest, OffsetCommitRequestTopic,
};
use crate::protocol::messages::offset_commit_response::{
    OffsetCommitResponse, OffsetCommitResponsePartition, OffsetCommitResponseTopic,
};

pub async fn start(
    broker: Arc<Broker>,
    header: RequestHeader,
    request: OffsetCommitRequest,
    conn: Arc<ConnectionContext>,
) -> ResponseFuture {
    let mut request = request;
    let by_id = header.api_version >= 10;
    let unknown_ids = if by_id {
        resolve_topic_ids(&broker, &mut request.topics)
    } else {
        Vec::new()
    };
    // The ids asked for, by name, before refused and unknown partitions are split off.
    let asked_ids: Vec<(String, Uuid)> = request
        .topics
        .iter()
        .map(|t| (t.name.clone(), t.topic_id))
        .collect();
    let authz = Authz::new(&broker, &conn);
    if !authz.group(operation::READ, &request.group_id) {
        // Kafka: every partition fails when the group may not be read.
        let response = OffsetCommitResponse {
            topics: request
                .topics
                .iter()
                .chain(&unknown_ids)
                .map(|t| refused_topic(t, ErrorCode::GROUP_AUTHORIZATION_FAILED))
                .collect(),
            ..Default::default()
        };
        return ready(header, Some(response));
    }
    let refused = split_refused(&mut request.topics, |name| {
        authz.topic(operation::READ, name)
    });
    let unknown = split_unknown(&broker.cluster.image(), &mut request.topics);
    let mut response = if request.topics.is_empty() {
        // Nothing left to commit: Kafka answers without asking the coordinator.
        OffsetCommitResponse::default()
    } else {
        let ctx = group_context(&header, &conn);
        broker.groups.offset_commit(&ctx, &request)
    };
    let nothing_to_store = request.topics.is_empty();
    add_errors(
        &mut response.topics,
        refused,
        ErrorCode::TOPIC_AUTHORIZATION_FAILED,
    );
    add_unknown(&mut response.topics, unknown);
    if by_id {
        name_topics_by_id(&mut response.topics, &asked_ids, unknown_ids);
    }
    if nothing_to_store {
        return ready(header, Some(response));
    }
    // Not known to be durable: the client must not take it as committed.
    super::after_group_write(broker, header, request.group_id, response, |r, code| {
        for t in r.topics.iter_mut() {
            for p in t.partitions.iter_mut().filter(|p| p.error_code == 0) {
                p.error_code = code.code();
            }
        }
    })
}

/// Gives each v10 topic the name of its id; the topics whose id is unknown are taken out.
fn resolve_topic_ids(
    broker: &Broker,
    topics: &mut Vec<OffsetCommitRequestTopic>,
) -> Vec<OffsetCommitRequestTopic> {
    let mut unknown = Vec::new();
    topics.retain_mut(|t| match broker.cluster.topic_name_by_id(&t.topic_id) {
        Some(name) => {
            t.name = name;
            true
        }
        None => {
            unknown.push(t.clone());
            false
        }
    });
    unknown
}

/// The v10 answer: each topic carries the id it was asked by (the refused and unknown
/// partitions too), and the unknown ids are answered UNKNOWN_TOPIC_ID.
fn name_topics_by_id(
    response: &mut Vec<OffsetCommitResponseTopic>,
    asked: &[(String, Uuid)],
    unknown_ids: Vec<OffsetCommitRequestTopic>,
) {
    for t in response.iter_mut() {
        if let Some((_, id)) = asked.iter().find(|(name, _)| *name == t.name) {
            t.topic_id = *id;
        }
    }
    response.extend(
        unknown_ids
            .iter()
            .map(|t| refused_topic(t, ErrorCode::UNKNOWN_TOPIC_ID)),
    );
}

/// A requested topic answered with `code` for each of its partitions.
fn refused_topic(t: &OffsetCommitRequestTopic, code: ErrorCode) -> OffsetCommitResponseTopic {
    OffsetCommitResponseTopic {
        name: t.name.clone(),
        topic_id: t.topic_id,
        partitions: t
            .partitions
            .iter()
            .map(|p| OffsetCommitResponsePartition {
                partition_index: p.partition_index,
                error_code: code.code(),
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    }
}
