//! The console's consumer-group JSON (`/api/v1/groups`, `/api/v1/groups/<id>`): every group
//! of the cluster (those this broker coordinates, and those the peer snapshot of
//! [`super::peers`] has) with its coordinator, state and protocol, members (client id, host)
//! with their assignments, and per-partition lag: the committed offset against the
//! partition's high watermark from its leader, the same numbers as `kafka-consumer-groups
//! --describe`.
//!
//! The listing and description go through the coordinator's ListGroups and DescribeGroups
//! (as `kafka-consumer-groups` sees them), and ConsumerGroupDescribe for KIP-848 groups. A
//! classic group's member assignment is the
//! consumer protocol's `ConsumerProtocolAssignment` bytes, decoded here with every length
//! checked against the bytes left; other protocols' assignments are shown as a byte count.

use serde_json::{json, Value};

use super::api::{figures, Page};
use super::lag::PartitionLag;
use super::peers::PeerSnapshot;
use crate::broker::Broker;
use crate::coordinator::service::RequestContext;
use crate::protocol::messages::consumer_group_describe_request::ConsumerGroupDescribeRequest;
use crate::protocol::messages::consumer_group_describe_response as cgd;
use crate::protocol::messages::describe_groups_request::DescribeGroupsRequest;
use crate::protocol::messages::describe_groups_response::DescribedGroup;
use crate::protocol::messages::list_groups_request::ListGroupsRequest;
use crate::protocol::messages::list_groups_response::ListedGroup;

/// The most topics or partitions decoded from one member assignment.
const MAX_ASSIGNMENT_ENTRIES: usize = 10_000;

/// The console reads the coordinator as a ListGroups v5 / DescribeGroups v5 client would.
fn context() -> RequestContext {
    RequestContext::new(5, "strata-console", "127.0.0.1")
}

/// One group as the console shows it, from this broker's coordinator or a peer's.
struct GroupView {
    coordinator_id: i32,
    listed: ListedGroup,
    described: DescribedGroup,
    /// ConsumerGroupDescribe's answer, for KIP-848 (`consumer` type) groups.
    consumer: Option<cgd::DescribedGroup>,
    /// Committed offsets: (topic, partition, offset), in that order.
    offsets: Vec<(String, i32, i64)>,
}

impl GroupView {
    /// Each committed offset with the partition's high watermark (from its leader, see
    /// [`super::api::figures`]) and the lag; partitions whose high watermark is unknown are
    /// left out.
    fn lag(&self, broker: &Broker, peers: &PeerSnapshot) -> Vec<PartitionLag> {
        self.offsets
            .iter()
            .filter_map(|(topic, partition, committed_offset)| {
                let high_watermark = figures(broker, peers, topic, *partition)?.high_watermark?;
                Some(PartitionLag {
                    group: self.listed.group_id.clone(),
                    topic: topic.clone(),
                    partition: *partition,
                    committed_offset: *committed_offset,
                    high_watermark,
                    lag: high_watermark - committed_offset,
                })
            })
            .collect()
    }

    fn members(&self) -> Vec<Value> {
        match &self.consumer {
            Some(g) if self.listed.group_type == "consumer" => consumer_protocol_members(g),
            _ => classic_members(
                &self.described.members,
                self.described.protocol_type == "consumer",
            ),
        }
    }
}

/// Every group of the cluster in id order: this broker's, then those the peer snapshot has
/// that this broker does not coordinate. Not yet described.
fn list_all(broker: &Broker, peers: &PeerSnapshot) -> Vec<(ListedGroup, Option<i32>)> {
    let mut listed: Vec<(ListedGroup, Option<i32>)> = broker
        .groups
        .list_groups(&context(), &ListGroupsRequest::default())
        .groups
        .into_iter()
        .map(|g| (g, None))
        .collect();
    let local: std::collections::HashSet<String> =
        listed.iter().map(|(g, _)| g.group_id.clone()).collect();
    listed.extend(
        peers
            .groups
            .iter()
            .filter(|g| !local.contains(&g.listed.group_id))
            .map(|g| (g.listed.clone(), Some(g.coordinator_id))),
    );
    listed.sort_by(|a, b| a.0.group_id.cmp(&b.0.group_id));
    listed
}

/// Describes one listed group: through this broker's coordinator (`remote` None) or from the
/// snapshot of the peer that coordinates it.
fn view(
    broker: &Broker,
    peers: &PeerSnapshot,
    listed: ListedGroup,
    remote: Option<i32>,
) -> GroupView {
    if let Some(coordinator_id) = remote {
        let g = peers
            .groups
            .iter()
            .find(|g| g.coordinator_id == coordinator_id && g.listed.group_id == listed.group_id);
        return GroupView {
            coordinator_id,
            described: g.map(|g| g.described.clone()).unwrap_or_default(),
            consumer: g.and_then(|g| g.consumer.clone()),
            offsets: g.map(|g| g.offsets.clone()).unwrap_or_default(),
            listed,
        };
    }
    let ids = vec![listed.group_id.clone()];
    let described = broker
        .groups
        .describe_groups(
            &context(),
            &DescribeGroupsRequest {
                groups: ids.clone(),
                ..Default::default()
            },
        )
        .groups
        .into_iter()
        .next()
        .unwrap_or_default();
    let consumer = (listed.group_type == "consumer")
        .then(|| {
            let request = ConsumerGroupDescribeRequest {
                group_ids: ids,
                ..Default::default()
            };
            broker
                .groups
                .consumer_group_describe(&context(), &request, &broker.topics_view())
                .groups
                .into_iter()
                .find(|g| g.error_code == 0)
        })
        .flatten();
    let mut offsets: Vec<(String, i32, i64)> = broker
        .groups
        .committed_offsets_of(&listed.group_id)
        .into_iter()
        .collect();
    offsets.sort();
    GroupView {
        coordinator_id: broker.cluster.node_id,
        listed,
        described,
        consumer,
        offsets,
    }
}

/// A group's lag totals: (partitions with a committed offset, sum, max).
fn lag_totals<'a>(lags: impl Iterator<Item = &'a PartitionLag>) -> (usize, i64, Option<i64>) {
    lags.fold((0, 0, None), |(n, sum, max), l| {
        (
            n + 1,
            sum + l.lag,
            Some(max.map_or(l.lag, |m: i64| m.max(l.lag))),
        )
    })
}

/// `/api/v1/groups`: a page of the cluster's groups in id order with their lag totals.
pub fn groups(broker: &Broker, peers: &PeerSnapshot, page: Page) -> Value {
    let (listed, meta) = page.slice(list_all(broker, peers));
    let groups: Vec<Value> = listed
        .into_iter()
        .map(|(listed, remote)| {
            let g = view(broker, peers, listed, remote);
            let lags = g.lag(broker, peers);
            let (partitions, sum, max) = lag_totals(lags.iter());
            json!({
                "group_id": g.listed.group_id,
                "coordinator": g.coordinator_id,
                "state": g.listed.group_state,
                "type": g.listed.group_type,
                "protocol_type": g.listed.protocol_type,
                "members": g.members().len(),
                "partitions": partitions,
                "lag_sum": sum,
                "lag_max": max,
            })
        })
        .collect();
    let mut out = meta;
    out["groups"] = Value::Array(groups);
    out
}

/// `/api/v1/groups/<id>`: one group; None for a group no broker reported.
pub fn group(broker: &Broker, peers: &PeerSnapshot, group_id: &str) -> Option<Value> {
    let (listed, remote) = list_all(broker, peers)
        .into_iter()
        .find(|(g, _)| g.group_id == group_id)?;
    let g = view(broker, peers, listed, remote);
    let offsets: Vec<Value> = g
        .lag(broker, peers)
        .into_iter()
        .map(|l| {
            json!({
                "topic": l.topic,
                "partition": l.partition,
                "committed_offset": l.committed_offset,
                "high_watermark": l.high_watermark,
                "lag": l.lag,
            })
        })
        .collect();
    Some(json!({
        "group_id": group_id,
        "coordinator": g.coordinator_id,
        "state": g.listed.group_state,
        "type": g.listed.group_type,
        "protocol_type": g.described.protocol_type,
        "protocol": g.described.protocol_data,
        "members": g.members(),
        "offsets": offsets,
    }))
}

/// A classic group's members as DescribeGroups gives them; the assignment decoded when the
/// protocol is the consumer protocol.
fn classic_members(
    members: &[crate::protocol::messages::describe_groups_response::DescribedGroupMember],
    consumer: bool,
) -> Vec<Value> {
    members
        .iter()
        .map(|m| {
            let assignment = if consumer {
                decode_assignment(&m.member_assignment).map(|topics| {
                    topics
                        .into_iter()
                        .map(
                            |(topic, partitions)| json!({"topic": topic, "partitions": partitions}),
                        )
                        .collect::<Vec<_>>()
                })
            } else {
                None
            };
            json!({
                "member_id": m.member_id,
                "group_instance_id": m.group_instance_id,
                "client_id": m.client_id,
                "host": m.client_host,
                "assignment": assignment,
                "assignment_bytes": m.member_assignment.len(),
            })
        })
        .collect()
}

/// A KIP-848 (`consumer` type) group's members, read as ConsumerGroupDescribe reports them:
/// DescribeGroups answers such a group as Dead with no members, as Kafka's does.
fn consumer_protocol_members(group: &cgd::DescribedGroup) -> Vec<Value> {
    group
        .members
        .iter()
        .map(|m| {
            let assignment: Vec<Value> = m
                .assignment
                .topic_partitions
                .iter()
                .map(|t| json!({"topic": t.topic_name, "partitions": t.partitions}))
                .collect();
            json!({
                "member_id": m.member_id,
                "group_instance_id": m.instance_id,
                "client_id": m.client_id,
                "host": m.client_host,
                "member_epoch": m.member_epoch,
                "assignment": assignment,
            })
        })
        .collect()
}

/// Reads big-endian integers and length-prefixed strings, never past the end.
struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        if self.0.len() < n {
            return None;
        }
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        Some(head)
    }
    fn i16(&mut self) -> Option<i16> {
        Some(i16::from_be_bytes(self.take(2)?.try_into().ok()?))
    }
    fn i32(&mut self) -> Option<i32> {
        Some(i32::from_be_bytes(self.take(4)?.try_into().ok()?))
    }
    /// An array length: negative (null) reads as empty; a length the remaining bytes cannot
    /// hold (each entry at least `min_entry` bytes) is an error.
    fn len(&mut self, min_entry: usize) -> Option<usize> {
        let n = self.i32()?.max(0) as usize;
        (n <= MAX_ASSIGNMENT_ENTRIES && n * min_entry <= self.0.len()).then_some(n)
    }
    fn string(&mut self) -> Option<String> {
        let n = usize::try_from(self.i16()?).ok()?;
        Some(String::from_utf8_lossy(self.take(n)?).into_owned())
    }
}

/// The topics and partitions of a consumer protocol assignment (`ConsumerProtocolAssignment`
/// v0-3: version, then [topic, [partition]], then user data, which is not read). None when the
/// bytes are empty or malformed.
pub fn decode_assignment(bytes: &[u8]) -> Option<Vec<(String, Vec<i32>)>> {
    let mut r = Reader(bytes);
    let _version = r.i16()?;
    let topics = r.len(6)?;
    let mut out = Vec::with_capacity(topics);
    for _ in 0..topics {
        let topic = r.string()?;
        let n = r.len(4)?;
        let partitions = (0..n).map(|_| r.i32()).collect::<Option<Vec<i32>>>()?;
        out.push((topic, partitions));
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn assignment(topics: &[(&str, &[i32])]) -> Vec<u8> {
        let mut b = 1i16.to_be_bytes().to_vec();
        b.extend((topics.len() as i32).to_be_bytes());
        for (t, ps) in topics {
            b.extend((t.len() as i16).to_be_bytes());
            b.extend(t.as_bytes());
            b.extend((ps.len() as i32).to_be_bytes());
            for p in *ps {
                b.extend(p.to_be_bytes());
            }
        }
        b.extend((-1i32).to_be_bytes());
        b
    }

    #[test]
    fn decodes_a_consumer_assignment() {
        let bytes = assignment(&[("orders", &[0, 2]), ("t", &[])]);
        assert_eq!(
            decode_assignment(&bytes),
            Some(vec![
                ("orders".to_string(), vec![0, 2]),
                ("t".to_string(), vec![])
            ])
        );
    }

    #[test]
    fn malformed_assignments_are_none_without_allocating_their_lengths() {
        assert_eq!(decode_assignment(&[]), None);
        let bytes = assignment(&[("orders", &[0, 2])]);
        assert_eq!(decode_assignment(&bytes[..bytes.len() - 9]), None);
        // A topic count of two billion in a ten-byte assignment.
        let mut huge = 0i16.to_be_bytes().to_vec();
        huge.extend(i32::MAX.to_be_bytes());
        huge.extend([0, 1, b'x', 0]);
        assert_eq!(decode_assignment(&huge), None);
    }
}
