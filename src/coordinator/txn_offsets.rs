//! Offsets committed inside transactions (TxnOffsetCommit, KIP-98), Kafka's pending
//! transactional offsets of `OffsetMetadataManager`.
//!
//! A TxnOffsetCommit is written to `__consumer_offsets` as a transactional batch of the
//! producer. Replaying it only records the offsets as pending for that producer; the
//! transaction's COMMIT marker on the same partition makes them the group's committed offsets
//! and an ABORT marker drops them. Loading a partition replays records and markers in log
//! order, so a restart between the two keeps exactly the same outcome.
use crate::coordinator::records::{self, GroupRecord, OffsetAndMetadata};
use crate::coordinator::runtime::CoordinatorRecord;
use crate::coordinator::service::RequestContext;
use crate::coordinator::shard::GroupCoordinatorShard;
use crate::error::ErrorCode;
use crate::protocol::messages::txn_offset_commit_request::TxnOffsetCommitRequest;
use crate::protocol::messages::txn_offset_commit_response::*;

/// One offset waiting for its transaction to end.
#[derive(Debug, Clone, PartialEq)]
pub struct PendingOffset {
    pub group: String,
    pub topic: String,
    pub partition: i32,
    pub offset: OffsetAndMetadata,
}

/// What a `__consumer_offsets` partition holds, in log order, for loading.
#[derive(Debug, Clone)]
pub enum LoadItem {
    Record(CoordinatorRecord),
    /// A record of a producer's transactional batch.
    TxnRecord {
        producer_id: i64,
        record: CoordinatorRecord,
    },
    /// A COMMIT (true) or ABORT marker of a producer.
    Marker {
        producer_id: i64,
        commit: bool,
    },
}

impl GroupCoordinatorShard {
    /// Handles a TxnOffsetCommit: checks the group membership as OffsetCommit does (when the
    /// request names a generation), then appends the offsets inside the producer's transaction.
    pub fn txn_offset_commit(
        &mut self,
        now_ms: i64,
        ctx: &RequestContext,
        request: &TxnOffsetCommitRequest,
    ) -> TxnOffsetCommitResponse {
        let all = |code: i16| txn_offset_commit_error_response(request, code);
        if request.group_id.is_empty() {
            return all(ErrorCode::INVALID_GROUP_ID.code());
        }
        if let Some(g) = self.consumer_groups.get(request.group_id.as_str()) {
            // A KIP-848 group: the generation is the member epoch.
            if let Err(e) = g.validate_txn_offset_commit(&request.member_id, request.generation_id)
            {
                return all(e.code().code());
            }
        } else if ctx.api_version >= 3 && request.generation_id >= 0 {
            match self.groups.get(request.group_id.as_str()) {
                None => return all(ErrorCode::ILLEGAL_GENERATION.code()),
                Some(g) => {
                    if let Err(e) =
                        g.validate_member(&request.member_id, request.group_instance_id.as_deref())
                    {
                        return all(e.code().code());
                    }
                    if g.generation_id != request.generation_id {
                        return all(ErrorCode::ILLEGAL_GENERATION.code());
                    }
                }
            }
        }
        let mut response = all(0);
        let mut recs = Vec::new();
        for (ti, topic) in request.topics.iter().enumerate() {
            for (pi, p) in topic.partitions.iter().enumerate() {
                let metadata = p.committed_metadata.clone().unwrap_or_default();
                if metadata.len() > self.config.offset_metadata_max_bytes {
                    response.topics[ti].partitions[pi].error_code =
                        ErrorCode::OFFSET_METADATA_TOO_LARGE.code();
                    continue;
                }
                let offset = OffsetAndMetadata {
                    committed_offset: p.committed_offset,
                    leader_epoch: (p.committed_leader_epoch >= 0)
                        .then_some(p.committed_leader_epoch),
                    metadata,
                    commit_timestamp_ms: now_ms,
                    expire_timestamp_ms: None,
                };
                recs.push(records::offset_commit_record(
                    &request.group_id,
                    &topic.name,
                    p.partition_index,
                    &offset,
                ));
            }
        }
        if recs.is_empty() {
            return response;
        }
        match self.log_append_transactional(
            request.producer_id,
            request.producer_epoch,
            recs.clone(),
        ) {
            Ok(()) => {
                self.metrics.offset_commits.inc_by(recs.len() as i64);
                for r in &recs {
                    self.replay_txn_record(request.producer_id, r);
                }
            }
            Err(code) => {
                for t in &mut response.topics {
                    for p in &mut t.partitions {
                        if p.error_code == 0 {
                            p.error_code = code.code();
                        }
                    }
                }
            }
        }
        response
    }

    /// Replays one record of a transactional batch: the offset becomes pending. As a plain
    /// commit, it creates a simple group when no group holds the id (Kafka creates it here,
    /// not at the marker).
    pub fn replay_txn_record(&mut self, producer_id: i64, record: &CoordinatorRecord) {
        if let Ok(GroupRecord::OffsetCommit {
            key,
            value: Some(v),
        }) = records::decode(record)
        {
            self.create_simple_group_if_absent(&key.group);
            let pending = self.pending_txn_offsets.entry(producer_id).or_default();
            pending.retain(|p| {
                !(p.group == key.group && p.topic == key.topic && p.partition == key.partition)
            });
            pending.push(PendingOffset {
                group: key.group,
                topic: key.topic,
                partition: key.partition,
                offset: OffsetAndMetadata::from(&v),
            });
        }
    }

    /// Replays a transaction marker: COMMIT publishes the producer's pending offsets. It
    /// creates no group beside a consumer or share group of the same id: that empty classic
    /// group made every KIP-848 heartbeat fail after a committed transaction (issue 37). A
    /// simple group is made only if the group went away while the transaction was open.
    pub fn replay_txn_marker(&mut self, producer_id: i64, commit: bool) {
        let Some(pending) = self.pending_txn_offsets.remove(&producer_id) else {
            return;
        };
        if !commit {
            return;
        }
        for p in pending {
            self.create_simple_group_if_absent(&p.group);
            self.offsets
                .entry(p.group)
                .or_default()
                .entry(p.topic)
                .or_default()
                .insert(p.partition, p.offset);
        }
    }

    /// Whether an open transaction holds an offset for this group partition (OffsetFetch with
    /// `require_stable` answers UNSTABLE_OFFSET_COMMIT then, KIP-447).
    pub fn has_pending_txn_offset(&self, group: &str, topic: &str, partition: i32) -> bool {
        self.pending_txn_offsets.values().any(|v| {
            v.iter()
                .any(|p| p.group == group && p.topic == topic && p.partition == partition)
        })
    }

    /// Whether an open transaction holds an offset of this group: the offsets cleanup keeps
    /// the group then, as Kafka's `cleanupExpiredOffsets` does.
    pub fn has_pending_txn_offsets(&self, group: &str) -> bool {
        self.pending_txn_offsets
            .values()
            .any(|v| v.iter().any(|p| p.group == group))
    }

    /// Loads a partition from its records and markers in log order.
    pub fn load_items(
        &mut self,
        items: Vec<LoadItem>,
        now_ms: i64,
    ) -> crate::coordinator::shard::LoadSummary {
        let mut plain = Vec::new();
        let mut summary = crate::coordinator::shard::LoadSummary::default();
        for item in items {
            match item {
                LoadItem::Record(r) => plain.push(r),
                other => {
                    // Keep log order: flush the plain records read so far first.
                    let s = self.load(std::mem::take(&mut plain), now_ms);
                    summary.replayed += s.replayed;
                    summary.skipped += s.skipped;
                    match other {
                        LoadItem::TxnRecord {
                            producer_id,
                            record,
                        } => {
                            self.replay_txn_record(producer_id, &record);
                            summary.replayed += 1;
                        }
                        LoadItem::Marker {
                            producer_id,
                            commit,
                        } => self.replay_txn_marker(producer_id, commit),
                        LoadItem::Record(_) => {}
                    }
                }
            }
        }
        let s = self.load(plain, now_ms);
        summary.replayed += s.replayed;
        summary.skipped += s.skipped;
        summary
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::coordinator::runtime::InMemoryCoordinatorLog;
    use crate::coordinator::GroupConfig;
    use crate::protocol::messages::txn_offset_commit_request::*;

    fn request(offset: i64) -> TxnOffsetCommitRequest {
        TxnOffsetCommitRequest {
            transactional_id: "tx".into(),
            group_id: "g".into(),
            producer_id: 9,
            producer_epoch: 0,
            topics: vec![TxnOffsetCommitRequestTopic {
                name: "t".into(),
                partitions: vec![TxnOffsetCommitRequestPartition {
                    partition_index: 0,
                    committed_offset: offset,
                    committed_metadata: Some("m".into()),
                    ..Default::default()
                }],
                ..Default::default()
            }],
            ..Default::default()
        }
    }

    fn shard() -> GroupCoordinatorShard {
        GroupCoordinatorShard::new(
            0,
            Arc::new(GroupConfig::default()),
            Arc::new(InMemoryCoordinatorLog::new()),
        )
    }

    fn committed(s: &GroupCoordinatorShard) -> Option<i64> {
        s.offsets
            .get("g")
            .and_then(|g| g.get("t"))
            .and_then(|t| t.get(&0))
            .map(|o| o.committed_offset)
    }

    #[test]
    fn offsets_become_visible_only_on_commit() {
        let mut s = shard();
        let ctx = RequestContext::new(3, "c", "/h");
        let r = s.txn_offset_commit(0, &ctx, &request(42));
        assert_eq!(r.topics[0].partitions[0].error_code, 0);
        assert_eq!(committed(&s), None);
        assert!(s.has_pending_txn_offset("g", "t", 0));
        s.replay_txn_marker(9, true);
        assert_eq!(committed(&s), Some(42));
        assert!(!s.has_pending_txn_offset("g", "t", 0));
    }

    #[test]
    fn aborted_offsets_are_dropped_and_load_replays_in_log_order() {
        let mut s = shard();
        let ctx = RequestContext::new(3, "c", "/h");
        s.txn_offset_commit(0, &ctx, &request(7));
        s.replay_txn_marker(9, false);
        assert_eq!(committed(&s), None);
        let rec = records::offset_commit_record(
            "g",
            "t",
            0,
            &OffsetAndMetadata {
                committed_offset: 5,
                leader_epoch: None,
                metadata: String::new(),
                commit_timestamp_ms: 0,
                expire_timestamp_ms: None,
            },
        );
        let mut loaded = shard();
        loaded.load_items(
            vec![
                LoadItem::TxnRecord {
                    producer_id: 9,
                    record: rec.clone(),
                },
                LoadItem::Marker {
                    producer_id: 9,
                    commit: true,
                },
                LoadItem::TxnRecord {
                    producer_id: 9,
                    record: rec,
                },
            ],
            0,
        );
        assert_eq!(committed(&loaded), Some(5));
        assert!(
            loaded.has_pending_txn_offset("g", "t", 0),
            "the second transaction is still open"
        );
    }

    #[test]
    fn unknown_generation_is_refused() {
        let mut s = shard();
        let ctx = RequestContext::new(3, "c", "/h");
        let mut req = request(1);
        req.generation_id = 4;
        req.member_id = "m".into();
        assert_eq!(
            s.txn_offset_commit(0, &ctx, &req).topics[0].partitions[0].error_code,
            ErrorCode::ILLEGAL_GENERATION.code()
        );
    }
}

/// A TxnOffsetCommit answer with `code` for every partition of `request`.
pub(crate) fn txn_offset_commit_error_response(
    request: &TxnOffsetCommitRequest,
    code: i16,
) -> TxnOffsetCommitResponse {
    TxnOffsetCommitResponse {
        topics: request
            .topics
            .iter()
            .map(|t| TxnOffsetCommitResponseTopic {
                name: t.name.clone(),
                partitions: t
                    .partitions
                    .iter()
                    .map(|p| TxnOffsetCommitResponsePartition {
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
