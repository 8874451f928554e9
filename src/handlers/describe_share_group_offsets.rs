//! DescribeShareGroupOffsets (API 90) v0-1, KIP-932: each share partition's start offset and
//! (v1, KIP-1226) lag, which `kafka-share-groups --describe` shows. DESCRIBE on the group, and
//! on each topic (partitions of a topic the caller may not describe are left out, as Kafka
//! does). No topics (null) means every share partition the group has.
//!
//! The share partitions answered are those this broker leads: on a single node, all of them.
use std::sync::Arc;

use super::authz::Authz;
use super::{ready, Broker, ConnectionContext, ResponseFuture};
use crate::controller::acls::operation;
use crate::error::ErrorCode;
use crate::protocol::codec::Uuid;
use crate::protocol::header::RequestHeader;
use crate::protocol::messages::describe_share_group_offsets_request::DescribeShareGroupOffsetsRequest;
use crate::protocol::messages::describe_share_group_offsets_response::*;

pub async fn start(
    broker: Arc<Broker>,
    header: RequestHeader,
    request: DescribeShareGroupOffsetsRequest,
    conn: Arc<ConnectionContext>,
) -> ResponseFuture {
    let authz = Authz::new(&broker, &conn);
    let enabled = broker.cluster.image().features.share_groups_enabled();
    let groups = request
        .groups
        .iter()
        .map(|g| {
            let mut out = DescribeShareGroupOffsetsResponseGroup {
                group_id: g.group_id.clone(),
                ..Default::default()
            };
            let refused = if !enabled {
                Some((ErrorCode::UNSUPPORTED_VERSION, None))
            } else if !authz.group(operation::DESCRIBE, &g.group_id) {
                Some((ErrorCode::GROUP_AUTHORIZATION_FAILED, None))
            } else {
                match broker.groups.share_group_summary(&g.group_id) {
                    Ok(_) => None,
                    Err(e) => Some((e.code(), e.message())),
                }
            };
            if let Some((code, message)) = refused {
                out.error_code = code.code();
                out.error_message = message.or_else(|| Some(code.message()));
                return out;
            }
            // The partitions asked for, or every one the group has state for.
            let wanted: Vec<(String, Uuid, Vec<i32>)> = match &g.topics {
                Some(topics) => topics
                    .iter()
                    .map(|t| {
                        let id = broker
                            .cluster
                            .topic(&t.topic_name)
                            .map_or(Uuid::ZERO, |m| m.id);
                        (t.topic_name.clone(), id, t.partitions.clone())
                    })
                    .collect(),
                None => {
                    let mut by_topic: Vec<(String, Uuid, Vec<i32>)> = Vec::new();
                    for (id, p) in broker.shares.group_partitions(&g.group_id) {
                        let Some(name) = broker.cluster.topic_name_by_id(&id) else {
                            continue;
                        };
                        match by_topic.iter_mut().find(|(_, t, _)| *t == id) {
                            Some((_, _, ps)) => ps.push(p),
                            None => by_topic.push((name, id, vec![p])),
                        }
                    }
                    by_topic
                }
            };
            for (name, id, partitions) in wanted {
                if !authz.topic(operation::DESCRIBE, &name) {
                    continue;
                }
                let known = id != Uuid::ZERO;
                let partitions = partitions
                    .into_iter()
                    .map(|p| {
                        let mut r = DescribeShareGroupOffsetsResponsePartition {
                            partition_index: p,
                            start_offset: -1,
                            leader_epoch: -1,
                            lag: -1,
                            ..Default::default()
                        };
                        if !known {
                            r.error_code = ErrorCode::UNKNOWN_TOPIC_OR_PARTITION.code();
                            r.error_message = Some(ErrorCode::UNKNOWN_TOPIC_OR_PARTITION.message());
                        } else if let Some((start, lag)) =
                            broker.shares.describe(&g.group_id, id, p)
                        {
                            r.start_offset = start;
                            r.lag = lag;
                            r.leader_epoch = broker
                                .replicas
                                .get(&name, p)
                                .map_or(-1, |x| x.leader_epoch());
                        }
                        r
                    })
                    .collect();
                out.topics.push(DescribeShareGroupOffsetsResponseTopic {
                    topic_name: name,
                    topic_id: id,
                    partitions,
                    ..Default::default()
                });
            }
            out
        })
        .collect();
    ready(
        header,
        Some(DescribeShareGroupOffsetsResponse {
            groups,
            ..Default::default()
        }),
    )
}
