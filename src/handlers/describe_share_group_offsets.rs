//! DescribeShareGroupOffsets (API 90) v0-1, KIP-932: each share partition's start offset and
//! (v1, KIP-1226) lag, which `kafka-share-groups --describe` shows. DESCRIBE on the group, and
//! on each topic (partitions of a topic the caller may not describe are left out, as Kafka
//! does). No topics (null) means every share partition the group has.
//!
//! The start offset comes from the share partition's leader when it is this broker, else from
//! the durable state (ReadShareGroupStateSummary on its share coordinator); the lag needs the
//! partition's high watermark, read from the local replica or else asked of the leader.
use std::collections::BTreeMap;
use std::sync::Arc;

use super::common::authz::Authz;
use super::{later, Broker, ConnectionContext, ResponseFuture};
use crate::cluster::leader_offsets::high_watermarks;
use crate::error::ErrorCode;
use crate::protocol::acl::operation;
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
    let enabled = broker.share_groups_enabled();
    // Each group's answer so far, and (for the groups allowed) what to look up.
    let mut described: Vec<(DescribeShareGroupOffsetsResponseGroup, Option<Wanted>)> = Vec::new();
    for g in &request.groups {
        let out = DescribeShareGroupOffsetsResponseGroup {
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
            let mut out = out;
            out.error_code = code.code();
            out.error_message = message.or_else(|| Some(code.message()));
            described.push((out, None));
            continue;
        }
        let wanted = match &g.topics {
            Some(topics) => Wanted {
                all: false,
                topics: topics
                    .iter()
                    .filter(|t| authz.topic(operation::DESCRIBE, &t.topic_name))
                    .map(|t| {
                        let id = broker
                            .cluster
                            .topic(&t.topic_name)
                            .map_or(Uuid::ZERO, |m| m.id);
                        (t.topic_name.clone(), id, t.partitions.clone())
                    })
                    .collect(),
            },
            None => {
                let image = broker.cluster.image();
                Wanted {
                    all: true,
                    topics: image
                        .topics
                        .values()
                        .filter(|t| !crate::controller::image::is_internal_topic(&t.name))
                        .filter(|t| authz.topic(operation::DESCRIBE, &t.name))
                        .map(|t| {
                            (
                                t.name.clone(),
                                Uuid(t.topic_id),
                                t.partitions.keys().copied().collect(),
                            )
                        })
                        .collect(),
                }
            }
        };
        described.push((out, Some(wanted)));
    }
    later(header, async move {
        let mut groups = Vec::with_capacity(described.len());
        for (mut out, wanted) in described {
            if let Some(wanted) = wanted {
                out.topics = describe_group(&broker, &out.group_id, wanted).await;
            }
            groups.push(out);
        }
        Some(DescribeShareGroupOffsetsResponse {
            groups,
            ..Default::default()
        })
    })
}

/// The partitions to describe: those asked for, or (`all`) every partition, of which those
/// with state are answered.
struct Wanted {
    all: bool,
    topics: Vec<(String, Uuid, Vec<i32>)>,
}

async fn describe_group(
    broker: &Broker,
    group_id: &str,
    wanted: Wanted,
) -> Vec<DescribeShareGroupOffsetsResponseTopic> {
    let mut topics = Vec::new();
    // Lags to finish with a high watermark from the partition's leader:
    // (topic at, partition at, start offset, delivery-complete count).
    let mut remote: Vec<(usize, usize, i64, i64)> = Vec::new();
    for (name, id, partitions) in wanted.topics {
        let mut answered = Vec::new();
        for p in partitions {
            let mut r = DescribeShareGroupOffsetsResponsePartition {
                partition_index: p,
                start_offset: -1,
                leader_epoch: -1,
                lag: -1,
                ..Default::default()
            };
            if id == Uuid::ZERO {
                r.error_code = ErrorCode::UNKNOWN_TOPIC_OR_PARTITION.code();
                r.error_message = Some(ErrorCode::UNKNOWN_TOPIC_OR_PARTITION.message());
                answered.push(r);
                continue;
            }
            let replica = broker.replicas.get(&name, p);
            // The leader's live view when it is here, else the durable state; the leader epoch
            // is the one the state was last read or written at, as Kafka answers it.
            if let Some((start, lag)) = broker.shares.describe(group_id, id, p) {
                (r.start_offset, r.lag) = (start, lag);
                r.leader_epoch = replica.as_ref().map_or(-1, |x| x.leader_epoch());
            } else {
                match broker.shares.summary(group_id, id, p).await {
                    Ok(Some(s)) => {
                        r.start_offset = s.start_offset;
                        r.leader_epoch = s.leader_epoch;
                        let complete = s.delivery_complete_count as i64;
                        match &replica {
                            _ if complete < 0 => {}
                            Some(x) => r.lag = lag(x.high_watermark(), s.start_offset, complete),
                            None => remote.push((
                                topics.len(),
                                answered.len(),
                                s.start_offset,
                                complete,
                            )),
                        }
                    }
                    Ok(None) if wanted.all => continue,
                    Ok(None) => {}
                    Err(code) => {
                        r.error_code = code.code();
                        r.error_message = Some(code.message());
                    }
                }
            }
            answered.push(r);
        }
        if !answered.is_empty() || !wanted.all {
            topics.push(DescribeShareGroupOffsetsResponseTopic {
                topic_name: name,
                topic_id: id,
                partitions: answered,
                ..Default::default()
            });
        }
    }
    if !remote.is_empty() {
        let mut leaders: BTreeMap<String, Vec<i32>> = BTreeMap::new();
        for (t, p, ..) in &remote {
            leaders
                .entry(topics[*t].topic_name.clone())
                .or_default()
                .push(topics[*t].partitions[*p].partition_index);
        }
        let high_watermarks = high_watermarks(&broker.cluster, &leaders).await;
        for (t, p, start, complete) in remote {
            let topic = &mut topics[t];
            let r = &mut topic.partitions[p];
            if let Some(hw) = high_watermarks.get(&(topic.topic_name.clone(), r.partition_index)) {
                r.lag = lag(*hw, start, complete);
            }
        }
    }
    topics
}

/// KIP-1226's share-partition lag: records below the high watermark from the start offset
/// whose delivery is not complete.
fn lag(high_watermark: i64, start_offset: i64, delivery_complete_count: i64) -> i64 {
    (high_watermark - start_offset - delivery_complete_count).max(0)
}
