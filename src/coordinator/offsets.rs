//! Committed offsets (Kafka's `OffsetMetadataManager`): OffsetCommit v2-9, OffsetFetch v1-9,
//! OffsetDelete v0, and the periodic expiration of offsets (`offsets.retention.minutes`) and of
//! empty groups.
//!
//! Commits by group members are checked against the generation; commits with generation -1
//! and no member id ("simple" consumers, admin tools) are accepted while the group is empty or
//! does not exist, and replaying the first one creates the empty group, as in Kafka.
use crate::coordinator::error::CoordinatorError;
use crate::coordinator::group::{ClassicGroup, ClassicGroupState};
use crate::coordinator::records::{self, OffsetAndMetadata};
use crate::coordinator::service::RequestContext;
use crate::coordinator::shard::GroupCoordinatorShard;
use crate::protocol::messages::offset_commit_request::OffsetCommitRequest;
use crate::protocol::messages::offset_commit_response::{
    OffsetCommitResponse, OffsetCommitResponsePartition, OffsetCommitResponseTopic,
};
use crate::protocol::messages::offset_delete_request::OffsetDeleteRequest;
use crate::protocol::messages::offset_delete_response::{
    OffsetDeleteResponse, OffsetDeleteResponsePartition, OffsetDeleteResponseTopic,
};

/// From when an offset's retention counts (Kafka's `OffsetExpirationCondition` base).
type RetentionBase = dyn Fn(&OffsetAndMetadata) -> i64;

/// A committed offset as OffsetFetch reports it: -1 everywhere when nothing is committed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FetchedOffset {
    pub partition: i32,
    pub committed_offset: i64,
    pub leader_epoch: i32,
    pub metadata: String,
}

/// One group's OffsetFetch result: topic -> partitions, or a group-level error.
pub type FetchedOffsets = Result<Vec<(String, Vec<FetchedOffset>)>, CoordinatorError>;

/// Kafka's `ClassicGroup.validateOffsetCommit`.
fn validate_commit(
    group: Option<&ClassicGroup>,
    member_id: &str,
    instance: Option<&str>,
    generation: i32,
) -> Result<(), CoordinatorError> {
    let Some(group) = group else {
        // An unknown group takes only simple commits; otherwise the member is from an older,
        // deleted incarnation of the group.
        return if generation < 0 {
            Ok(())
        } else {
            Err(CoordinatorError::IllegalGeneration)
        };
    };
    if group.is_in(ClassicGroupState::Dead) {
        return Err(CoordinatorError::CoordinatorNotAvailable);
    }
    if generation < 0 && group.is_in(ClassicGroupState::Empty) {
        return Ok(());
    }
    if generation >= 0 || !member_id.is_empty() || instance.is_some() {
        group.validate_member(member_id, instance)?;
        if generation != group.generation_id {
            return Err(CoordinatorError::IllegalGeneration);
        }
    } else if !group.is_in(ClassicGroupState::Empty) {
        // No member id and no generation: only an empty group accepts it.
        return Err(CoordinatorError::UnknownMemberId);
    }
    if group.is_in(ClassicGroupState::CompletingRebalance) {
        // The member has the new generation from its JoinGroup but no assignment yet.
        return Err(CoordinatorError::RebalanceInProgress);
    }
    Ok(())
}

impl GroupCoordinatorShard {
    /// Handles an OffsetCommit.
    pub fn offset_commit(
        &mut self,
        now_ms: i64,
        ctx: &RequestContext,
        request: &OffsetCommitRequest,
    ) -> OffsetCommitResponse {
        let all = |code: i16| offset_commit_error_response(request, code);
        if request.group_id.is_empty() {
            return all(CoordinatorError::InvalidGroupId.wire());
        }
        let group_id = request.group_id.as_str();
        let instance = request
            .group_instance_id
            .as_deref()
            .filter(|_| ctx.api_version >= 7);
        let generation = if ctx.api_version >= 1 {
            request.generation_id_or_member_epoch
        } else {
            -1
        };
        let checked = match self.consumer_groups.get(group_id) {
            // Share groups keep no committed offsets (their progress is share state).
            None if self.share_groups.contains_key(group_id) => {
                Err(CoordinatorError::GroupNotFound(format!(
                    "Group {group_id} is not a consumer group."
                )))
            }
            // KIP-848 groups check the member epoch (OffsetCommit v9 carries it).
            Some(g) => g.validate_offset_commit(&request.member_id, generation, ctx.api_version),
            // OffsetCommit v9+ names the missing group (KIP-848: both protocols' members
            // use it); older versions keep ILLEGAL_GENERATION, as Kafka's
            // `OffsetMetadataManager.validateOffsetCommit`.
            None if ctx.api_version >= 9
                && generation >= 0
                && !self.groups.contains_key(group_id) =>
            {
                Err(CoordinatorError::GroupIdNotFound)
            }
            None => validate_commit(
                self.groups.get(group_id),
                &request.member_id,
                instance,
                generation,
            ),
        };
        if let Err(e) = checked {
            return all(e.wire());
        }
        if let Some(m) = self
            .groups
            .get_mut(group_id)
            .and_then(|g| g.members.get_mut(&request.member_id))
        {
            // A commit is as good as a heartbeat.
            m.heartbeat_deadline_ms = Some(now_ms.saturating_add(m.session_timeout_ms as i64));
        }
        // v2-4 may ask for an explicit retention (written as an expire timestamp, value v1).
        let expire =
            (ctx.api_version >= 2 && ctx.api_version <= 4 && request.retention_time_ms >= 0)
                .then(|| now_ms.saturating_add(request.retention_time_ms));
        let mut response = all(0);
        let mut recs = Vec::new();
        for (ti, topic) in request.topics.iter().enumerate() {
            for (pi, p) in topic.partitions.iter().enumerate() {
                let metadata = p.committed_metadata.clone().unwrap_or_default();
                if metadata.len() > self.config.offset_metadata_max_bytes {
                    if let Some(r) = response
                        .topics
                        .get_mut(ti)
                        .and_then(|t| t.partitions.get_mut(pi))
                    {
                        r.error_code = CoordinatorError::OffsetMetadataTooLarge.wire();
                    }
                    continue;
                }
                let offset = OffsetAndMetadata {
                    committed_offset: p.committed_offset,
                    leader_epoch: (p.committed_leader_epoch >= 0)
                        .then_some(p.committed_leader_epoch),
                    metadata,
                    commit_timestamp_ms: now_ms,
                    expire_timestamp_ms: expire,
                };
                recs.push(records::offset_commit_record(
                    group_id,
                    &topic.name,
                    p.partition_index,
                    &offset,
                ));
            }
        }
        let committed = recs.len() as i64;
        match self.write(recs) {
            Ok(()) => {
                self.metrics.offset_commits.inc_by(committed);
            }
            Err(e) => {
                let code = e.offset_commit_code().code();
                for t in &mut response.topics {
                    for p in &mut t.partitions {
                        if p.error_code == 0 {
                            p.error_code = code;
                        }
                    }
                }
            }
        }
        response
    }

    /// The committed offsets of `group_id` for `topics` (all of them when `None`).
    pub fn fetch_offsets(
        &self,
        group_id: &str,
        topics: Option<&[(String, Vec<i32>)]>,
    ) -> FetchedOffsets {
        if let Some(g) = self.groups.get(group_id) {
            if g.is_in(ClassicGroupState::Dead) {
                return Err(CoordinatorError::GroupIdNotFound);
            }
        }
        let committed = self.offsets.get(group_id);
        let to_fetched = |partition: i32, o: Option<&OffsetAndMetadata>| match o {
            Some(o) => FetchedOffset {
                partition,
                committed_offset: o.committed_offset,
                leader_epoch: o.leader_epoch.unwrap_or(-1),
                metadata: o.metadata.clone(),
            },
            None => FetchedOffset {
                partition,
                committed_offset: -1,
                leader_epoch: -1,
                metadata: String::new(),
            },
        };
        Ok(match topics {
            Some(topics) => topics
                .iter()
                .map(|(name, partitions)| {
                    let t = committed.and_then(|c| c.get(name));
                    let ps = partitions
                        .iter()
                        .map(|p| to_fetched(*p, t.and_then(|t| t.get(p))))
                        .collect();
                    (name.clone(), ps)
                })
                .collect(),
            None => committed
                .map(|c| {
                    c.iter()
                        .map(|(name, ps)| {
                            (
                                name.clone(),
                                ps.iter().map(|(p, o)| to_fetched(*p, Some(o))).collect(),
                            )
                        })
                        .collect()
                })
                .unwrap_or_default(),
        })
    }

    /// Handles an OffsetDelete.
    pub fn offset_delete(&mut self, request: &OffsetDeleteRequest) -> OffsetDeleteResponse {
        let top = |code: i16| OffsetDeleteResponse {
            error_code: code,
            ..Default::default()
        };
        if request.group_id.is_empty() {
            return top(CoordinatorError::InvalidGroupId.wire());
        }
        let group_id = request.group_id.as_str();
        let Some(group) = self.groups.get(group_id) else {
            return top(CoordinatorError::GroupIdNotFound.wire());
        };
        let consumer = group.protocol_type.as_deref()
            == Some(crate::coordinator::group::CONSUMER_PROTOCOL_TYPE);
        match group.state {
            ClassicGroupState::Dead => return top(CoordinatorError::GroupIdNotFound.wire()),
            ClassicGroupState::Empty => {}
            // A live non-consumer group's subscriptions are opaque: refuse.
            _ if !consumer => return top(CoordinatorError::NonEmptyGroup.wire()),
            _ => {}
        }
        let committed = self.offsets.get(group_id);
        let mut recs = Vec::new();
        let mut response = top(0);
        for t in &request.topics {
            let subscribed = group.is_subscribed_to_topic(&t.name);
            let mut partitions = Vec::new();
            for p in &t.partitions {
                let result = if subscribed {
                    Err(CoordinatorError::GroupSubscribedToTopic)
                } else {
                    let has = committed
                        .and_then(|c| c.get(&t.name))
                        .map(|ps| ps.contains_key(&p.partition_index))
                        .unwrap_or(false);
                    if has {
                        recs.push(records::offset_commit_tombstone(
                            group_id,
                            &t.name,
                            p.partition_index,
                        ));
                    }
                    Ok(())
                };
                partitions.push(OffsetDeleteResponsePartition {
                    partition_index: p.partition_index,
                    error_code: CoordinatorError::wire_result(&result),
                });
            }
            response.topics.push(OffsetDeleteResponseTopic {
                name: t.name.clone(),
                partitions,
            });
        }
        let deleted = recs.len() as i64;
        if let Err(e) = self.write(recs) {
            return top(e.wire());
        }
        self.metrics.offset_deletions.inc_by(deleted);
        response
    }

    /// Expires offsets past retention and deletes empty groups left without offsets (Kafka's
    /// `cleanupGroupMetadata` / `OffsetExpirationCondition`).
    pub(crate) fn cleanup_group_metadata(&mut self, now_ms: i64) {
        let retention = self.config.offsets_retention_ms;
        let ids: Vec<String> = self.groups.keys().cloned().collect();
        for id in ids {
            let Some(group) = self.groups.get(&id) else {
                continue;
            };
            // Which offsets may expire and from when their retention counts.
            let base: Option<Box<RetentionBase>> = match (&group.protocol_type, group.state) {
                (Some(_), ClassicGroupState::Empty) => {
                    let since = group.current_state_timestamp_ms;
                    Some(Box::new(move |o: &OffsetAndMetadata| {
                        since.unwrap_or(o.commit_timestamp_ms)
                    }))
                }
                (None, _) => Some(Box::new(|o: &OffsetAndMetadata| o.commit_timestamp_ms)),
                _ => None,
            };
            let Some(base) = base else { continue };
            let mut recs = Vec::new();
            let mut remaining = 0usize;
            if let Some(committed) = self.offsets.get(&id) {
                for (topic, ps) in committed {
                    for (p, o) in ps {
                        let expired = match o.expire_timestamp_ms {
                            Some(t) => now_ms >= t,
                            None => now_ms.saturating_sub(base(o)) >= retention,
                        };
                        if expired {
                            recs.push(records::offset_commit_tombstone(&id, topic, *p));
                        } else {
                            remaining += 1;
                        }
                    }
                }
            }
            let deletable = remaining == 0
                && group.is_in(ClassicGroupState::Empty)
                && group.pending_members.is_empty()
                && !self.has_pending_txn_offsets(&id);
            let expired = recs.len() as i64;
            if deletable {
                recs.push(records::group_metadata_tombstone(&id));
            }
            if recs.is_empty() {
                continue;
            }
            tracing::info!(group = %id, records = recs.len(), "expiring offsets");
            match self.write(recs) {
                Ok(()) => {
                    self.metrics.offset_expirations.inc_by(expired);
                }
                Err(e) => tracing::warn!(group = %id, error = %e, "failed to expire offsets"),
            }
        }
    }

    /// All committed offsets of a group, for DeleteGroups.
    pub(crate) fn offset_tombstones(
        &self,
        group_id: &str,
    ) -> Vec<crate::coordinator::CoordinatorRecord> {
        let mut out = Vec::new();
        if let Some(c) = self.offsets.get(group_id) {
            for (topic, ps) in c {
                for p in ps.keys() {
                    out.push(records::offset_commit_tombstone(group_id, topic, *p));
                }
            }
        }
        out
    }
}

/// An OffsetCommit answer with `code` for every partition of `request`.
pub(crate) fn offset_commit_error_response(
    request: &OffsetCommitRequest,
    code: i16,
) -> OffsetCommitResponse {
    OffsetCommitResponse {
        topics: request
            .topics
            .iter()
            .map(|t| OffsetCommitResponseTopic {
                name: t.name.clone(),
                partitions: t
                    .partitions
                    .iter()
                    .map(|p| OffsetCommitResponsePartition {
                        partition_index: p.partition_index,
                        error_code: code,
                        ..Default::default()
                    })
                    .collect(),
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    }
}
