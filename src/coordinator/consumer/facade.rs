//! The [`GroupCoordinator`] entry points for KIP-848: ConsumerGroupHeartbeat v0-1 and
//! ConsumerGroupDescribe v0-1, routed to the group's `__consumer_offsets` shard.
use super::TopicsView;
use crate::coordinator::error::CoordinatorError;
use crate::coordinator::service::{GroupCoordinator, RequestContext};
use crate::protocol::messages::consumer_group_describe_request::ConsumerGroupDescribeRequest;
use crate::protocol::messages::consumer_group_describe_response::{
    ConsumerGroupDescribeResponse, DescribedGroup,
};
use crate::protocol::messages::consumer_group_heartbeat_request::ConsumerGroupHeartbeatRequest;
use crate::protocol::messages::consumer_group_heartbeat_response::ConsumerGroupHeartbeatResponse;

impl GroupCoordinator {
    /// ConsumerGroupHeartbeat v0-1. `topics` is the broker's view of the topics (ids and
    /// partition counts) the group's subscriptions are resolved against.
    pub fn consumer_group_heartbeat(
        &self,
        ctx: &RequestContext,
        request: &ConsumerGroupHeartbeatRequest,
        topics: &TopicsView,
    ) -> ConsumerGroupHeartbeatResponse {
        if request.group_id.is_empty() {
            let e = CoordinatorError::InvalidRequest("GroupId can't be empty.".into());
            return ConsumerGroupHeartbeatResponse {
                error_code: e.wire(),
                error_message: e.message(),
                ..Default::default()
            };
        }
        self.with_shard(&request.group_id, |s, now| {
            s.consumer_group_heartbeat(now, ctx, request, topics)
        })
        .unwrap_or_else(|| ConsumerGroupHeartbeatResponse {
            error_code: CoordinatorError::NotCoordinator.wire(),
            ..Default::default()
        })
    }

    /// ConsumerGroupDescribe v0-1.
    pub fn consumer_group_describe(
        &self,
        _ctx: &RequestContext,
        request: &ConsumerGroupDescribeRequest,
        topics: &TopicsView,
    ) -> ConsumerGroupDescribeResponse {
        let groups = request
            .group_ids
            .iter()
            .map(|id| {
                if id.is_empty() {
                    return DescribedGroup {
                        group_id: id.clone(),
                        error_code: CoordinatorError::InvalidGroupId.wire(),
                        ..Default::default()
                    };
                }
                self.with_shard(id, |s, _| s.consumer_group_describe(id, topics))
                    .unwrap_or_else(|| DescribedGroup {
                        group_id: id.clone(),
                        error_code: CoordinatorError::NotCoordinator.wire(),
                        ..Default::default()
                    })
            })
            .collect();
        ConsumerGroupDescribeResponse {
            groups,
            ..Default::default()
        }
    }
}
