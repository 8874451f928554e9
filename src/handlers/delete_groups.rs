//! DeleteGroups (key 42): empty groups are removed by tombstones; each group's answer waits
//! until its tombstones reached the ISR of its `__consumer_offsets` partition. A deleted share
//! group's durable share-partition state goes with it (DeleteShareGroupState on every
//! partition of every topic: a share partition without state is skipped).
use super::common::authz::Authz;
use super::ConnectionContext;
use crate::error::ErrorCode;
use crate::protocol::acl::operation;
use crate::protocol::messages::delete_groups_response::DeletableGroupResult;
use std::sync::Arc;

use super::{group_context, later, Broker, ResponseFuture};
use crate::coordinator::offsets_topic::OFFSETS_TOPIC;
use crate::protocol::header::RequestHeader;
use crate::protocol::messages::delete_groups_request::DeleteGroupsRequest;

pub async fn start(
    broker: Arc<Broker>,
    header: RequestHeader,
    request: DeleteGroupsRequest,
    conn: Arc<ConnectionContext>,
) -> ResponseFuture {
    let mut request = request;
    let authz = Authz::new(&broker, &conn);
    let mut refused = Vec::new();
    request.groups_names.retain(|g| {
        let allowed = authz.group(operation::DELETE, g);
        if !allowed {
            refused.push(DeletableGroupResult {
                group_id: g.clone(),
                error_code: ErrorCode::GROUP_AUTHORIZATION_FAILED.code(),
                ..Default::default()
            });
        }
        allowed
    });
    let share_groups: Vec<String> = request
        .groups_names
        .iter()
        .filter(|g| broker.groups.share_group_summary(g).is_ok())
        .cloned()
        .collect();
    let ctx = group_context(&header, &conn);
    let mut response = broker.groups.delete_groups(&ctx, &request);
    response.results.extend(refused);
    later(header, async move {
        let deleted_shares: Vec<&String> = share_groups
            .iter()
            .filter(|g| {
                response
                    .results
                    .iter()
                    .any(|r| r.group_id == **g && r.error_code == 0)
            })
            .collect();
        if !deleted_shares.is_empty() {
            let image = broker.cluster.image();
            let all: Vec<(crate::protocol::codec::Uuid, i32)> = image
                .topics
                .values()
                .filter(|t| !crate::controller::image::is_internal_topic(&t.name))
                .flat_map(|t| {
                    t.partitions
                        .keys()
                        .map(move |p| (crate::protocol::codec::Uuid(t.topic_id), *p))
                })
                .collect();
            for g in deleted_shares {
                if let Err(code) = broker.shares.delete_state(g, &all).await {
                    tracing::warn!(group_id = %g, ?code, "share group state not deleted");
                }
            }
        }
        // One deadline for all, and one wait per partition however many groups it holds.
        let deadline = Broker::coordinator_append_deadline();
        let mut outcomes: Vec<(i32, Result<(), ErrorCode>)> = Vec::new();
        for r in response.results.iter_mut().filter(|r| r.error_code == 0) {
            let partition = broker.groups.partition_for(&r.group_id);
            let outcome = match outcomes.iter().find(|(p, _)| *p == partition) {
                Some((_, outcome)) => *outcome,
                None => {
                    let outcome = broker
                        .wait_replicated_until(OFFSETS_TOPIC, partition, deadline)
                        .await;
                    outcomes.push((partition, outcome));
                    outcome
                }
            };
            if let Err(code) = outcome {
                r.error_code = code.code();
            }
        }
        Some(response)
    })
}
