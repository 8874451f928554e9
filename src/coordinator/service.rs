//! The facade the request handlers call (Kafka's `GroupCoordinatorService`): routes each group
//! to its `__consumer_offsets` shard, turns delayed JoinGroup/SyncGroup completions into
//! futures, and merges multi-group answers.
//!
//! Delayed responses: [`GroupCoordinator::join_group`] and [`GroupCoordinator::sync_group`]
//! register the request under the shard lock and return a [`PendingResponse`] at once; it
//! resolves when the shard completes the response (immediately, on another member's request,
//! or from [`GroupCoordinator::tick`]). The broker must call `tick` periodically (every
//! ~100 ms): it fires rebalance, session and sync timeouts and expires offsets.
use crate::coordinator::error::CoordinatorError;
use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};

use parking_lot::Mutex;
use tokio::sync::oneshot;

use crate::clock::SharedClock;
use crate::coordinator::runtime::{Completion, CoordinatorLog, CoordinatorRecord, ResponseId};
use crate::coordinator::shard::{GroupCoordinatorShard, LoadSummary};
use crate::coordinator::{partition_for, GroupConfig};
use crate::protocol::messages::delete_groups_request::DeleteGroupsRequest;
use crate::protocol::messages::delete_groups_response::{
    DeletableGroupResult, DeleteGroupsResponse,
};
use crate::protocol::messages::describe_groups_request::DescribeGroupsRequest;
use crate::protocol::messages::describe_groups_response::{DescribeGroupsResponse, DescribedGroup};
use crate::protocol::messages::heartbeat_request::HeartbeatRequest;
use crate::protocol::messages::heartbeat_response::HeartbeatResponse;
use crate::protocol::messages::join_group_request::JoinGroupRequest;
use crate::protocol::messages::join_group_response::JoinGroupResponse;
use crate::protocol::messages::leave_group_request::LeaveGroupRequest;
use crate::protocol::messages::leave_group_response::LeaveGroupResponse;
use crate::protocol::messages::list_groups_request::ListGroupsRequest;
use crate::protocol::messages::list_groups_response::ListGroupsResponse;
use crate::protocol::messages::offset_commit_request::OffsetCommitRequest;
use crate::protocol::messages::offset_commit_response::OffsetCommitResponse;
use crate::protocol::messages::offset_delete_request::OffsetDeleteRequest;
use crate::protocol::messages::offset_delete_response::OffsetDeleteResponse;
use crate::protocol::messages::offset_fetch_request::OffsetFetchRequest;
use crate::protocol::messages::offset_fetch_response::*;
use crate::protocol::messages::sync_group_request::SyncGroupRequest;
use crate::protocol::messages::sync_group_response::SyncGroupResponse;
use crate::protocol::messages::txn_offset_commit_request::TxnOffsetCommitRequest;
use crate::protocol::messages::txn_offset_commit_response::*;

/// What the coordinator needs from the request header.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RequestContext {
    pub api_version: i16,
    pub client_id: String,
    pub client_host: String,
}

impl RequestContext {
    pub fn new(api_version: i16, client_id: &str, client_host: &str) -> Self {
        RequestContext {
            api_version,
            client_id: client_id.to_string(),
            client_host: client_host.to_string(),
        }
    }
}

/// A JoinGroup or SyncGroup response that may not be ready yet. Resolves to NOT_COORDINATOR
/// if the coordinator drops the request (partition unloaded), as Kafka's
/// `GroupMetadataManager.onUnloaded` answers the members still waiting.
pub struct PendingResponse<T> {
    rx: oneshot::Receiver<T>,
    fallback: fn() -> T,
}

impl<T> Future for PendingResponse<T> {
    type Output = T;
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<T> {
        let fallback = self.fallback;
        match Pin::new(&mut self.rx).poll(cx) {
            Poll::Ready(Ok(v)) => Poll::Ready(v),
            Poll::Ready(Err(_)) => Poll::Ready(fallback()),
            Poll::Pending => Poll::Pending,
        }
    }
}

impl<T> PendingResponse<T> {
    /// The response if it is ready, without waiting (for sans-io callers and tests).
    pub fn try_take(&mut self) -> Option<T> {
        self.rx.try_recv().ok()
    }
}

fn join_unloaded() -> JoinGroupResponse {
    JoinGroupResponse {
        error_code: CoordinatorError::NotCoordinator.wire(),
        generation_id: -1,
        protocol_name: Some(String::new()),
        ..Default::default()
    }
}

fn sync_unloaded() -> SyncGroupResponse {
    SyncGroupResponse {
        error_code: CoordinatorError::NotCoordinator.wire(),
        ..Default::default()
    }
}

#[derive(Default)]
struct Slot {
    shard: Option<GroupCoordinatorShard>,
    joins: HashMap<ResponseId, oneshot::Sender<JoinGroupResponse>>,
    syncs: HashMap<ResponseId, oneshot::Sender<SyncGroupResponse>>,
}

impl Slot {
    /// Hands the shard's completed responses to their waiters.
    fn deliver(&mut self) {
        let Some(shard) = self.shard.as_mut() else {
            return;
        };
        for c in shard.take_completions() {
            match c {
                Completion::Join { id, response } => {
                    if let Some(tx) = self.joins.remove(&id) {
                        let _ = tx.send(response);
                    }
                }
                Completion::Sync { id, response } => {
                    if let Some(tx) = self.syncs.remove(&id) {
                        let _ = tx.send(response);
                    }
                }
            }
        }
    }
}

/// The group coordinator of this broker: one shard per loaded `__consumer_offsets` partition.
pub struct GroupCoordinator {
    config: Arc<GroupConfig>,
    clock: SharedClock,
    log: Arc<dyn CoordinatorLog>,
    slots: Vec<Mutex<Slot>>,
    next_id: AtomicU64,
    metrics: crate::metrics::GroupCoordinatorMetrics,
    /// Told of every share-group member that leaves or is fenced, so the share partitions
    /// release the records it holds (Kafka's `ShareGroupListener.onMemberLeave`).
    share_member_left: std::sync::OnceLock<ShareMemberLeft>,
}

/// A share-group member left: (group id, member id).
pub type ShareMemberLeft = Arc<dyn Fn(&str, &str) + Send + Sync>;

impl GroupCoordinator {
    pub fn new(config: GroupConfig, clock: SharedClock, log: Arc<dyn CoordinatorLog>) -> Self {
        let n = config.offsets_topic_num_partitions.max(1) as usize;
        GroupCoordinator {
            config: Arc::new(config),
            clock,
            log,
            slots: (0..n).map(|_| Mutex::new(Slot::default())).collect(),
            next_id: AtomicU64::new(1),
            metrics: Default::default(),
            share_member_left: std::sync::OnceLock::new(),
        }
    }

    /// Counts into `metrics` (the broker's registered counters) from now on.
    pub fn with_metrics(mut self, metrics: crate::metrics::GroupCoordinatorMetrics) -> Self {
        self.metrics = metrics;
        self
    }

    /// Sets who hears of share-group members leaving (once, at start-up).
    pub fn on_share_member_left(&self, listener: ShareMemberLeft) {
        let _ = self.share_member_left.set(listener);
    }

    /// Tells the listener of the members `left`, outside every shard lock.
    fn notify_share_members_left(&self, left: Vec<(String, String)>) {
        if let Some(listener) = self.share_member_left.get() {
            for (group, member) in left {
                listener(&group, &member);
            }
        }
    }

    pub fn config(&self) -> &GroupConfig {
        &self.config
    }

    /// The `__consumer_offsets` partition of `group_id`.
    pub fn partition_for(&self, group_id: &str) -> i32 {
        partition_for(group_id, self.slots.len() as i32)
    }

    /// Becomes the coordinator of `partition`, replaying its records. Out-of-range
    /// partitions are ignored.
    pub fn load(
        &self,
        partition: i32,
        records: impl IntoIterator<Item = CoordinatorRecord>,
    ) -> LoadSummary {
        let Some(slot) = usize::try_from(partition)
            .ok()
            .and_then(|p| self.slots.get(p))
        else {
            return LoadSummary::default();
        };
        let mut shard =
            GroupCoordinatorShard::new(partition, self.config.clone(), self.log.clone());
        shard.metrics = self.metrics.clone();
        let summary = shard.load(records, self.clock.now_ms());
        // Requests waiting on a previous incarnation resolve to NOT_COORDINATOR.
        *slot.lock() = Slot {
            shard: Some(shard),
            ..Default::default()
        };
        summary
    }

    /// Stops coordinating `partition`; its waiting requests resolve to NOT_COORDINATOR.
    pub fn unload(&self, partition: i32) {
        if let Some(slot) = usize::try_from(partition)
            .ok()
            .and_then(|p| self.slots.get(p))
        {
            *slot.lock() = Slot::default();
        }
    }

    /// Runs `f` on the shard of `group_id`, or returns `None` if it is not loaded here.
    pub(crate) fn with_shard<R>(
        &self,
        group_id: &str,
        f: impl FnOnce(&mut GroupCoordinatorShard, i64) -> R,
    ) -> Option<R> {
        let slot = self.slots.get(self.partition_for(group_id) as usize)?;
        let mut slot = slot.lock();
        let now = self.clock.now_ms();
        let shard = slot.shard.as_mut()?;
        let r = f(shard, now);
        let left = shard.take_share_members_left();
        slot.deliver();
        drop(slot);
        self.notify_share_members_left(left);
        Some(r)
    }

    fn next_response_id(&self) -> ResponseId {
        ResponseId(self.next_id.fetch_add(1, Ordering::Relaxed))
    }

    /// JoinGroup v0-9. The returned future resolves when the join phase completes.
    pub fn join_group(
        &self,
        ctx: &RequestContext,
        request: &JoinGroupRequest,
    ) -> PendingResponse<JoinGroupResponse> {
        self.delayed(
            &request.group_id,
            join_unloaded,
            |slot| &mut slot.joins,
            |shard, now, id| shard.join_group(now, ctx, request, id),
            || {
                let mut r = crate::coordinator::shard::join_error(
                    CoordinatorError::NotCoordinator,
                    &request.member_id,
                );
                r.protocol_name = Some(String::new());
                r
            },
        )
    }

    /// SyncGroup v0-5. The returned future resolves when the leader's assignment is stored.
    pub fn sync_group(
        &self,
        ctx: &RequestContext,
        request: &SyncGroupRequest,
    ) -> PendingResponse<SyncGroupResponse> {
        self.delayed(
            &request.group_id,
            sync_unloaded,
            |slot| &mut slot.syncs,
            |shard, now, id| shard.sync_group(now, ctx, request, id),
            || crate::coordinator::shard::sync_error(CoordinatorError::NotCoordinator),
        )
    }

    /// Registers a request whose response the shard completes later (`start` hands it the
    /// response id), under the slot lock so that a completion cannot overtake the waiter.
    fn delayed<T>(
        &self,
        group_id: &str,
        fallback: fn() -> T,
        waiters: impl FnOnce(&mut Slot) -> &mut HashMap<ResponseId, oneshot::Sender<T>>,
        start: impl FnOnce(&mut GroupCoordinatorShard, i64, ResponseId),
        not_coordinator: impl FnOnce() -> T,
    ) -> PendingResponse<T> {
        let (tx, rx) = oneshot::channel();
        let id = self.next_response_id();
        let slot = &self.slots[self.partition_for(group_id) as usize % self.slots.len()];
        let mut slot = slot.lock();
        let now = self.clock.now_ms();
        match slot.shard.as_mut() {
            Some(shard) => {
                start(shard, now, id);
                waiters(&mut slot).insert(id, tx);
                slot.deliver();
            }
            None => {
                let _ = tx.send(not_coordinator());
            }
        }
        PendingResponse { rx, fallback }
    }

    /// Heartbeat v0-4.
    pub fn heartbeat(&self, ctx: &RequestContext, request: &HeartbeatRequest) -> HeartbeatResponse {
        self.with_shard(&request.group_id, |s, now| s.heartbeat(now, ctx, request))
            .unwrap_or(HeartbeatResponse {
                error_code: CoordinatorError::NotCoordinator.wire(),
                ..Default::default()
            })
    }

    /// LeaveGroup v0-5.
    pub fn leave_group(
        &self,
        ctx: &RequestContext,
        request: &LeaveGroupRequest,
    ) -> LeaveGroupResponse {
        self.with_shard(&request.group_id, |s, now| s.leave_group(now, ctx, request))
            .unwrap_or(LeaveGroupResponse {
                error_code: CoordinatorError::NotCoordinator.wire(),
                ..Default::default()
            })
    }

    /// OffsetCommit v2-9. Topic existence is the handler's check (UNKNOWN_TOPIC_OR_PARTITION).
    pub fn offset_commit(
        &self,
        ctx: &RequestContext,
        request: &OffsetCommitRequest,
    ) -> OffsetCommitResponse {
        self.with_shard(&request.group_id, |s, now| {
            s.offset_commit(now, ctx, request)
        })
        .unwrap_or_else(|| {
            super::offsets::offset_commit_error_response(
                request,
                CoordinatorError::NotCoordinator.wire(),
            )
        })
    }

    fn fetch_group(
        &self,
        group_id: &str,
        topics: Option<Vec<(String, Vec<i32>)>>,
    ) -> crate::coordinator::offsets::FetchedOffsets {
        self.with_shard(group_id, |s, _| {
            s.fetch_offsets(group_id, topics.as_deref())
        })
        .unwrap_or(Err(CoordinatorError::NotCoordinator))
    }

    /// OffsetFetch v1-9: one group (v1-7) or several (v8+). `require_stable` is answered
    /// normally: there are no pending transactional offsets yet.
    pub fn offset_fetch(
        &self,
        ctx: &RequestContext,
        request: &OffsetFetchRequest,
    ) -> OffsetFetchResponse {
        if ctx.api_version >= 8 {
            let groups = request
                .groups
                .iter()
                .map(|g| {
                    let topics = g.topics.as_ref().map(|ts| {
                        ts.iter()
                            .map(|t| (t.name.clone(), t.partition_indexes.clone()))
                            .collect()
                    });
                    let checked = if ctx.api_version >= 9 {
                        self.with_shard(&g.group_id, |s, _| {
                            s.consumer_groups
                                .get(&g.group_id)
                                .map(|cg| {
                                    cg.validate_offset_fetch(g.member_id.as_deref(), g.member_epoch)
                                })
                                .unwrap_or(Ok(()))
                        })
                        .unwrap_or(Ok(()))
                    } else {
                        Ok(())
                    };
                    let fetched = checked.and_then(|_| self.fetch_group(&g.group_id, topics));
                    match fetched {
                        Ok(ts) => OffsetFetchResponseGroup {
                            group_id: g.group_id.clone(),
                            topics: ts
                                .into_iter()
                                .map(|(name, ps)| OffsetFetchResponseTopics {
                                    name,
                                    partitions: ps
                                        .into_iter()
                                        .map(|p| OffsetFetchResponsePartitions {
                                            partition_index: p.partition,
                                            committed_offset: p.committed_offset,
                                            committed_leader_epoch: p.leader_epoch,
                                            metadata: Some(p.metadata),
                                            error_code: 0,
                                            ..Default::default()
                                        })
                                        .collect(),
                                    ..Default::default()
                                })
                                .collect(),
                            error_code: 0,
                            ..Default::default()
                        },
                        Err(code) => OffsetFetchResponseGroup {
                            group_id: g.group_id.clone(),
                            error_code: code.wire(),
                            ..Default::default()
                        },
                    }
                })
                .collect();
            return OffsetFetchResponse {
                groups,
                ..Default::default()
            };
        }
        let topics = request.topics.as_ref().map(|ts| {
            ts.iter()
                .map(|t| (t.name.clone(), t.partition_indexes.clone()))
                .collect()
        });
        match self.fetch_group(&request.group_id, topics) {
            Ok(ts) => OffsetFetchResponse {
                topics: ts
                    .into_iter()
                    .map(|(name, ps)| OffsetFetchResponseTopic {
                        name,
                        partitions: ps
                            .into_iter()
                            .map(|p| OffsetFetchResponsePartition {
                                partition_index: p.partition,
                                committed_offset: p.committed_offset,
                                committed_leader_epoch: p.leader_epoch,
                                metadata: Some(p.metadata),
                                error_code: 0,
                                ..Default::default()
                            })
                            .collect(),
                        ..Default::default()
                    })
                    .collect(),
                ..Default::default()
            },
            // v0-1 have no top-level error: the handler copies it to every partition.
            Err(code) => OffsetFetchResponse {
                error_code: code.wire(),
                ..Default::default()
            },
        }
    }

    /// OffsetDelete v0.
    pub fn offset_delete(
        &self,
        _ctx: &RequestContext,
        request: &OffsetDeleteRequest,
    ) -> OffsetDeleteResponse {
        self.with_shard(&request.group_id, |s, _| s.offset_delete(request))
            .unwrap_or(OffsetDeleteResponse {
                error_code: CoordinatorError::NotCoordinator.wire(),
                ..Default::default()
            })
    }

    /// ListGroups v0-5 over every loaded shard (filters apply from v4 and v5).
    pub fn list_groups(
        &self,
        ctx: &RequestContext,
        request: &ListGroupsRequest,
    ) -> ListGroupsResponse {
        let states: &[String] = if ctx.api_version >= 4 {
            &request.states_filter
        } else {
            &[]
        };
        let types: &[String] = if ctx.api_version >= 5 {
            &request.types_filter
        } else {
            &[]
        };
        let mut groups = Vec::new();
        for slot in &self.slots {
            if let Some(shard) = slot.lock().shard.as_ref() {
                groups.extend(shard.list_groups(states, types));
            }
        }
        ListGroupsResponse {
            groups,
            ..Default::default()
        }
    }

    /// DescribeGroups v0-5.
    pub fn describe_groups(
        &self,
        ctx: &RequestContext,
        request: &DescribeGroupsRequest,
    ) -> DescribeGroupsResponse {
        let groups = request
            .groups
            .iter()
            .map(|id| {
                if id.is_empty() {
                    return DescribedGroup {
                        error_code: CoordinatorError::InvalidGroupId.wire(),
                        group_id: id.clone(),
                        ..Default::default()
                    };
                }
                self.with_shard(id, |s, _| s.describe_group(id, ctx.api_version))
                    .unwrap_or_else(|| DescribedGroup {
                        error_code: CoordinatorError::NotCoordinator.wire(),
                        group_id: id.clone(),
                        ..Default::default()
                    })
            })
            .collect();
        DescribeGroupsResponse {
            groups,
            ..Default::default()
        }
    }

    /// DeleteGroups v0-2.
    pub fn delete_groups(
        &self,
        _ctx: &RequestContext,
        request: &DeleteGroupsRequest,
    ) -> DeleteGroupsResponse {
        let results = request
            .groups_names
            .iter()
            .map(|id| DeletableGroupResult {
                group_id: id.clone(),
                error_code: CoordinatorError::wire_result(
                    &self
                        .with_shard(id, |s, _| s.delete_group(id))
                        .unwrap_or(Err(CoordinatorError::NotCoordinator)),
                ),
                ..Default::default()
            })
            .collect();
        DeleteGroupsResponse {
            results,
            ..Default::default()
        }
    }

    /// Fires due timers on every shard and delivers the responses they complete. Call every
    /// ~100 ms.
    /// TxnOffsetCommit v0-4: offsets committed inside a transaction.
    pub fn txn_offset_commit(
        &self,
        ctx: &RequestContext,
        request: &TxnOffsetCommitRequest,
    ) -> TxnOffsetCommitResponse {
        self.with_shard(&request.group_id, |s, now| {
            s.txn_offset_commit(now, ctx, request)
        })
        .unwrap_or_else(|| {
            super::txn_offsets::txn_offset_commit_error_response(
                request,
                CoordinatorError::NotCoordinator.wire(),
            )
        })
    }

    /// A transaction marker was written to `partition`: publish or drop the producer's pending
    /// offsets there.
    pub fn complete_txn(&self, partition: i32, producer_id: i64, commit: bool) {
        if let Some(slot) = usize::try_from(partition)
            .ok()
            .and_then(|p| self.slots.get(p))
        {
            if let Some(shard) = slot.lock().shard.as_mut() {
                shard.replay_txn_marker(producer_id, commit);
            }
        }
    }

    /// Becomes the coordinator of `partition`, replaying records and transaction markers in
    /// log order.
    pub fn load_items(
        &self,
        partition: i32,
        items: Vec<crate::coordinator::txn_offsets::LoadItem>,
    ) -> LoadSummary {
        let Some(slot) = usize::try_from(partition)
            .ok()
            .and_then(|p| self.slots.get(p))
        else {
            return LoadSummary::default();
        };
        let mut shard =
            GroupCoordinatorShard::new(partition, self.config.clone(), self.log.clone());
        shard.metrics = self.metrics.clone();
        let summary = shard.load_items(items, self.clock.now_ms());
        *slot.lock() = Slot {
            shard: Some(shard),
            ..Default::default()
        };
        summary
    }

    /// Whether an open transaction holds an offset of this group partition.
    fn unstable(&self, group_id: &str, topic: &str, partition: i32) -> bool {
        self.with_shard(group_id, |s, _| {
            s.has_pending_txn_offset(group_id, topic, partition)
        })
        .unwrap_or(false)
    }

    /// OffsetFetch with `require_stable` (v7+, KIP-447): partitions with offsets pending in an
    /// open transaction answer UNSTABLE_OFFSET_COMMIT, so the consumer retries.
    pub fn offset_fetch_stable(
        &self,
        ctx: &RequestContext,
        request: &OffsetFetchRequest,
    ) -> OffsetFetchResponse {
        let mut response = self.offset_fetch(ctx, request);
        if ctx.api_version < 7 || !request.require_stable {
            return response;
        }
        let unstable = crate::error::ErrorCode::UNSTABLE_OFFSET_COMMIT.code();
        if ctx.api_version >= 8 {
            for g in &mut response.groups {
                for t in &mut g.topics {
                    for p in &mut t.partitions {
                        if self.unstable(&g.group_id, &t.name, p.partition_index) {
                            p.error_code = unstable;
                            p.committed_offset = -1;
                        }
                    }
                }
            }
        } else {
            for t in &mut response.topics {
                for p in &mut t.partitions {
                    if self.unstable(&request.group_id, &t.name, p.partition_index) {
                        p.error_code = unstable;
                        p.committed_offset = -1;
                    }
                }
            }
        }
        response
    }

    pub fn tick(&self) {
        let now = self.clock.now_ms();
        for slot in &self.slots {
            let mut slot = slot.lock();
            if let Some(shard) = slot.shard.as_mut() {
                shard.tick(now);
                let left = shard.take_share_members_left();
                slot.deliver();
                drop(slot);
                self.notify_share_members_left(left);
            }
        }
    }

    /// Every loaded group's committed offsets as (group, topic, partition, offset), for the
    /// consumer-lag metrics computed when `/metrics` is read (never on the commit path).
    pub fn committed_offsets(&self) -> Vec<(String, String, i32, i64)> {
        let mut out = Vec::new();
        for slot in &self.slots {
            if let Some(shard) = slot.lock().shard.as_ref() {
                for (group, topics) in &shard.offsets {
                    for (topic, partitions) in topics {
                        for (partition, o) in partitions {
                            out.push((
                                group.clone(),
                                topic.clone(),
                                *partition,
                                o.committed_offset,
                            ));
                        }
                    }
                }
            }
        }
        out
    }

    /// One loaded group's committed offsets as (topic, partition, offset), for the console.
    pub fn committed_offsets_of(&self, group: &str) -> Vec<(String, i32, i64)> {
        let mut out = Vec::new();
        for slot in &self.slots {
            if let Some(topics) = slot
                .lock()
                .shard
                .as_ref()
                .and_then(|s| s.offsets.get(group))
            {
                for (topic, partitions) in topics {
                    for (partition, o) in partitions {
                        out.push((topic.clone(), *partition, o.committed_offset));
                    }
                }
            }
        }
        out
    }

    /// The state of every group of the loaded shards (classic and consumer groups).
    pub fn group_states(&self) -> Vec<String> {
        let mut out = Vec::new();
        for slot in &self.slots {
            if let Some(shard) = slot.lock().shard.as_ref() {
                out.extend(
                    shard
                        .list_groups(&[], &[])
                        .into_iter()
                        .map(|g| g.group_state),
                );
            }
        }
        out
    }

    /// The durable view of a shard (tests and diagnostics).
    pub fn snapshot(&self, partition: i32) -> Option<crate::coordinator::ShardSnapshot> {
        let slot = self.slots.get(usize::try_from(partition).ok()?)?;
        let slot = slot.lock();
        slot.shard.as_ref().map(|s| s.snapshot())
    }
}
