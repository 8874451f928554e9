//! The [`GroupCoordinator`] entry points for KIP-932: ShareGroupHeartbeat v1 and
//! ShareGroupDescribe v1, routed to the group's `__consumer_offsets` shard.
use crate::coordinator::consumer::TopicsView;
use crate::coordinator::error::CoordinatorError;
use crate::coordinator::service::{GroupCoordinator, RequestContext};
use crate::protocol::messages::share_group_describe_request::ShareGroupDescribeRequest;
use crate::protocol::messages::share_group_describe_response::{
    DescribedGroup, ShareGroupDescribeResponse,
};
use crate::protocol::messages::share_group_heartbeat_request::ShareGroupHeartbeatRequest;
use crate::protocol::messages::share_group_heartbeat_response::ShareGroupHeartbeatResponse;

impl GroupCoordinator {
    /// ShareGroupHeartbeat v1. `topics` is the broker's view of the topics.
    pub fn share_group_heartbeat(
        &self,
        ctx: &RequestContext,
        request: &ShareGroupHeartbeatRequest,
        topics: &TopicsView,
    ) -> ShareGroupHeartbeatResponse {
        if request.group_id.is_empty() {
            let e = CoordinatorError::InvalidRequest("GroupId can't be empty.".into());
            return ShareGroupHeartbeatResponse {
                error_code: e.wire(),
                error_message: e.message(),
                ..Default::default()
            };
        }
        self.with_shard(&request.group_id, |s, now| {
            s.share_group_heartbeat(now, ctx, request, topics)
        })
        .unwrap_or_else(|| ShareGroupHeartbeatResponse {
            error_code: CoordinatorError::NotCoordinator.wire(),
            ..Default::default()
        })
    }

    /// ShareGroupDescribe v1.
    pub fn share_group_describe(
        &self,
        request: &ShareGroupDescribeRequest,
        topics: &TopicsView,
    ) -> ShareGroupDescribeResponse {
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
                self.with_shard(id, |s, _| s.share_group_describe(id, topics))
                    .unwrap_or_else(|| DescribedGroup {
                        group_id: id.clone(),
                        error_code: CoordinatorError::NotCoordinator.wire(),
                        ..Default::default()
                    })
            })
            .collect();
        ShareGroupDescribeResponse {
            groups,
            ..Default::default()
        }
    }
}

/// What the share-group admin requests need of a group.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShareGroupSummary {
    pub members: usize,
}

impl GroupCoordinator {
    /// The share group `group_id`: `Err(NotCoordinator)` when its partition is not loaded
    /// here, `Err(GroupNotFound)` when it is no share group (Kafka's messages).
    pub fn share_group_summary(
        &self,
        group_id: &str,
    ) -> Result<ShareGroupSummary, CoordinatorError> {
        self.with_shard(group_id, |s, _| match s.share_groups.get(group_id) {
            Some(g) => Ok(ShareGroupSummary {
                members: g.members.len(),
            }),
            None if s.groups.contains_key(group_id) || s.consumer_groups.contains_key(group_id) => {
                Err(CoordinatorError::GroupNotFound(format!(
                    "Group {group_id} is not a share group."
                )))
            }
            None => Err(CoordinatorError::GroupNotFound(format!(
                "Group {group_id} not found."
            ))),
        })
        .unwrap_or(Err(CoordinatorError::NotCoordinator))
    }
}
