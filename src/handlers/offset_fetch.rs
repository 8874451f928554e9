//! OffsetFetch (key 9): committed offsets from the group coordinator; with `require_stable`
//! (KIP-447) offsets pending in an open transaction answer UNSTABLE_OFFSET_COMMIT. v10
//! (KIP-848) names topics by id, as Kafka's `KafkaApis` serves it: a known id is looked up
//! by its topic's name, an unknown one is answered UNKNOWN_TOPIC_ID (offset -1), and when a
//! group's offsets are fetched for all topics, a topic that no longer exists (so has no id)
//! is left out, as it cannot be named.
use super::common::authz::Authz;
use super::ConnectionContext;
use crate::error::ErrorCode;
use crate::protocol::acl::operation;
use crate::protocol::codec::Uuid;
use crate::protocol::messages::offset_fetch_request::OffsetFetchRequestTopics;
use crate::protocol::messages::offset_fetch_response::{
    OffsetFetchResponse, OffsetFetchResponsePartitions, OffsetFetchResponseTopics,
};
use std::sync::Arc;

use super::{group_context, ready, Broker, ResponseFuture};
use crate::protocol::header::RequestHeader;
use crate::protocol::messages::offset_fetch_request::OffsetFetchRequest;

pub async fn start(
    broker: Arc<Broker>,
    header: RequestHeader,
    request: OffsetFetchRequest,
    conn: Arc<ConnectionContext>,
) -> ResponseFuture {
    let mut request = request;
    let unknown_ids = if header.api_version >= 10 {
        resolve_topic_ids(&broker, &mut request)
    } else {
        Vec::new()
    };
    let ctx = group_context(&header, &conn);
    let mut response = broker.groups.offset_fetch_stable(&ctx, &request);
    authorize(&Authz::new(&broker, &conn), &request, &mut response);
    if header.api_version >= 10 {
        name_topics_by_id(&broker, &mut response, unknown_ids);
    }
    ready(header, Some(response))
}

/// Gives each v10 topic the name of its id; the topics whose id is unknown are taken out and
/// returned with their group.
fn resolve_topic_ids(
    broker: &Broker,
    request: &mut OffsetFetchRequest,
) -> Vec<(String, OffsetFetchRequestTopics)> {
    let mut unknown = Vec::new();
    for g in request.groups.iter_mut() {
        let Some(topics) = g.topics.as_mut() else {
            continue;
        };
        topics.retain_mut(|t| match broker.cluster.topic_name_by_id(&t.topic_id) {
            Some(name) => {
                t.name = name;
                true
            }
            None => {
                unknown.push((g.group_id.clone(), t.clone()));
                false
            }
        });
    }
    unknown
}

/// The v10 answer: every topic carries its id (one without an id is left out), and the
/// unknown ids of a group that was answered are UNKNOWN_TOPIC_ID.
fn name_topics_by_id(
    broker: &Broker,
    response: &mut OffsetFetchResponse,
    unknown_ids: Vec<(String, OffsetFetchRequestTopics)>,
) {
    let image = broker.cluster.image();
    for g in response.groups.iter_mut() {
        g.topics.retain_mut(|t| match image.topic(&t.name) {
            Some(topic) => {
                t.topic_id = Uuid(topic.topic_id);
                true
            }
            None => false,
        });
        if g.error_code != 0 {
            continue;
        }
        for (_, t) in unknown_ids.iter().filter(|(group, _)| *group == g.group_id) {
            g.topics.push(OffsetFetchResponseTopics {
                topic_id: t.topic_id,
                partitions: t
                    .partition_indexes
                    .iter()
                    .map(|&partition_index| OffsetFetchResponsePartitions {
                        partition_index,
                        committed_offset: -1,
                        metadata: Some(String::new()),
                        error_code: ErrorCode::UNKNOWN_TOPIC_ID.code(),
                        ..Default::default()
                    })
                    .collect(),
                ..Default::default()
            });
        }
    }
}

/// Kafka's checks, applied to the answer: DESCRIBE on each group (GROUP_AUTHORIZATION_FAILED
/// for the group otherwise, with no offsets) and on each topic (a named topic's partitions
/// answer TOPIC_AUTHORIZATION_FAILED; with all topics asked for, refused ones are left out).
fn authorize(authz: &Authz, request: &OffsetFetchRequest, response: &mut OffsetFetchResponse) {
    if !authz.enabled() {
        return;
    }
    let group_refused = ErrorCode::GROUP_AUTHORIZATION_FAILED.code();
    let topic_refused = ErrorCode::TOPIC_AUTHORIZATION_FAILED.code();
    if request.groups.is_empty() {
        if !authz.group(operation::DESCRIBE, &request.group_id) {
            response.error_code = group_refused;
            for p in response
                .topics
                .iter_mut()
                .flat_map(|t| t.partitions.iter_mut())
            {
                p.committed_offset = -1;
                p.metadata = Some(String::new());
                p.error_code = group_refused;
            }
            return;
        }
        let all = request.topics.is_none();
        response.topics.retain_mut(|t| {
            if authz.topic(operation::DESCRIBE, &t.name) {
                return true;
            }
            for p in t.partitions.iter_mut() {
                p.committed_offset = -1;
                p.metadata = Some(String::new());
                p.error_code = topic_refused;
            }
            !all
        });
        return;
    }
    for g in response.groups.iter_mut() {
        if !authz.group(operation::DESCRIBE, &g.group_id) {
            g.error_code = group_refused;
            g.topics.clear();
            continue;
        }
        let all = request
            .groups
            .iter()
            .find(|r| r.group_id == g.group_id)
            .map_or(true, |r| r.topics.is_none());
        g.topics.retain_mut(|t| {
            if authz.topic(operation::DESCRIBE, &t.name) {
                return true;
            }
            for p in t.partitions.iter_mut() {
                p.committed_offset = -1;
                p.metadata = Some(String::new());
                p.error_code = topic_refused;
            }
            !all
        });
    }
}
