//! The console's consumer-group JSON (`/api/v1/groups`, `/api/v1/groups/<id>`): the groups
//! this broker coordinates with their state and protocol, members (client id, host) with
//! their assignments, and per-partition lag from [`super::lag`], the same numbers as
//! `kafka_consumergroup_lag` and `kafka-consumer-groups --describe`.
//!
//! The listing and description go through the coordinator's ListGroups and DescribeGroups
//! (as `kafka-consumer-groups` sees them), and ConsumerGroupDescribe for KIP-848 groups. A classic group's member assignment is the
//! consumer protocol's `ConsumerProtocolAssignment` bytes, decoded here with every length
//! checked against the bytes left; other protocols' assignments are shown as a byte count.
use std::collections::BTreeMap;

use serde_json::{json, Value};

use super::api::Page;
use super::lag::{consumer_lag, PartitionLag};
use crate::broker::Broker;
use crate::coordinator::service::RequestContext;
use crate::protocol::messages::consumer_group_describe_request::ConsumerGroupDescribeRequest;
use crate::protocol::messages::describe_groups_request::DescribeGroupsRequest;
use crate::protocol::messages::list_groups_request::ListGroupsRequest;

/// The most topics or partitions decoded from one member assignment.
const MAX_ASSIGNMENT_ENTRIES: usize = 10_000;

/// The console reads the coordinator as a ListGroups v5 / DescribeGroups v5 client would.
fn context() -> RequestContext {
    RequestContext::new(5, "strata-console", "127.0.0.1")
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

/// `/api/v1/groups`: a page of groups in id order with their lag totals.
pub fn groups(broker: &Broker, page: Page) -> Value {
    let mut listed = broker
        .groups
        .list_groups(&context(), &ListGroupsRequest::default())
        .groups;
    listed.sort_by(|a, b| a.group_id.cmp(&b.group_id));
    let lags = consumer_lag(broker);
    let mut by_group: BTreeMap<&str, Vec<&PartitionLag>> = BTreeMap::new();
    for l in &lags {
        by_group.entry(l.group.as_str()).or_default().push(l);
    }
    let (listed, meta) = page.slice(listed);
    let ids: Vec<String> = listed.iter().map(|g| g.group_id.clone()).collect();
    let described = broker.groups.describe_groups(
        &context(),
        &DescribeGroupsRequest {
            groups: ids,
            ..Default::default()
        },
    );
    let groups: Vec<Value> = listed
        .iter()
        .zip(described.groups.iter())
        .map(|(g, d)| {
            let (partitions, sum, max) = lag_totals(
                by_group
                    .get(g.group_id.as_str())
                    .into_iter()
                    .flatten()
                    .copied(),
            );
            json!({
                "group_id": g.group_id,
                "state": g.group_state,
                "type": g.group_type,
                "protocol_type": g.protocol_type,
                "members": d.members.len(),
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

/// `/api/v1/groups/<id>`: one group; None for a group this broker does not know.
pub fn group(broker: &Broker, group_id: &str) -> Option<Value> {
    let listed = broker
        .groups
        .list_groups(&context(), &ListGroupsRequest::default())
        .groups
        .into_iter()
        .find(|g| g.group_id == group_id)?;
    let d = broker
        .groups
        .describe_groups(
            &context(),
            &DescribeGroupsRequest {
                groups: vec![group_id.to_string()],
                ..Default::default()
            },
        )
        .groups
        .into_iter()
        .next()
        .unwrap_or_default();
    let consumer = d.protocol_type == "consumer";
    let members: Vec<Value> = if listed.group_type == "consumer" {
        consumer_protocol_members(broker, group_id)
    } else {
        classic_members(&d.members, consumer)
    };
    let offsets: Vec<Value> = consumer_lag(broker)
        .into_iter()
        .filter(|l| l.group == group_id)
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
        "state": listed.group_state,
        "type": listed.group_type,
        "protocol_type": d.protocol_type,
        "protocol": d.protocol_data,
        "members": members,
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
fn consumer_protocol_members(broker: &Broker, group_id: &str) -> Vec<Value> {
    let request = ConsumerGroupDescribeRequest {
        group_ids: vec![group_id.to_string()],
        ..Default::default()
    };
    let described =
        broker
            .groups
            .consumer_group_describe(&context(), &request, &broker.topics_view());
    described
        .groups
        .into_iter()
        .filter(|g| g.error_code == 0)
        .flat_map(|g| g.members)
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
