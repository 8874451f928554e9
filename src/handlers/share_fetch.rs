//! ShareFetch (API 78) v1-2, KIP-932: a share-group member's fetch. In order, as Kafka's
//! `handleShareFetchRequest`: the share session is opened, advanced or closed (its epoch
//! checked); the acknowledgements piggybacked on the request are applied; then records are
//! acquired for the member from every partition of its session this broker leads, waiting up
//! to `max_wait_ms` (capped at 30 s) when there are none, and waking early when new records
//! arrive, another member releases some, or an acquisition lock expires.
//!
//! v1 carries the record limit (`max_records`, which whole batches may exceed) and the lock
//! duration in the response; v2 adds the record-limit acquire mode (never more than
//! `max_records`, KIP-1206) and RENEW acknowledgements (KIP-1222).
use std::collections::BTreeMap;
use std::sync::Arc;

use super::common::authz::Authz;
use super::{later, ready, Broker, ConnectionContext, ResponseFuture};
use crate::error::ErrorCode;
use crate::protocol::acl::operation;
use crate::protocol::codec::Uuid;
use crate::protocol::header::RequestHeader;
use crate::protocol::messages::share_fetch_request::ShareFetchRequest;
use crate::protocol::messages::share_fetch_response::{
    AcquiredRecords, PartitionData, ShareFetchResponse, ShareFetchableTopicResponse,
};
use crate::replica::share_manager::{AckUndo, ShareSettings, ShareStartAt};
use crate::replica::share_partition::{AcknowledgeType, AcquireMode};
use crate::replica::share_sessions::FINAL_EPOCH;
use crate::replica::wait::wait_until;
use crate::replica::Partition;

/// Kafka's cap on how long a fetch may wait, whatever the client asks.
const MAX_WAIT_CAP_MS: i64 = 30_000;

/// The settings `group_id`'s share partitions run with, from its group configs.
pub fn share_settings(broker: &Broker, group_id: &str) -> ShareSettings {
    let s = broker.groups.config().share_partition_settings(group_id);
    let reset = s.auto_offset_reset.to_ascii_lowercase();
    let start_at = match reset.split_once(':') {
        Some(("by_duration", d)) => {
            let ms = crate::config::group::iso_duration_ms(d.trim()).unwrap_or(0);
            ShareStartAt::Timestamp(
                broker
                    .now_ms()
                    .saturating_sub(ms.clamp(0, i64::MAX as i128) as i64),
            )
        }
        _ if reset == "earliest" => ShareStartAt::Earliest,
        _ => ShareStartAt::Latest,
    };
    ShareSettings {
        record_lock_duration_ms: s.record_lock_duration_ms.max(1) as i64,
        delivery_count_limit: s.delivery_count_limit.clamp(1, u16::MAX as i32) as u16,
        max_record_locks: s.partition_max_record_locks.max(1) as i64,
        start_at,
        read_committed: s.isolation_level.eq_ignore_ascii_case("read_committed"),
    }
}

/// Acknowledgement batches as the share partitions take them; `None` when a type is not one
/// of Kafka's (or RENEW where the request did not announce it), which is INVALID_REQUEST.
pub fn acknowledgements<'a>(
    batches: impl IntoIterator<Item = (i64, i64, &'a [i8])>,
    renew_allowed: bool,
) -> Option<Vec<(i64, i64, Vec<AcknowledgeType>)>> {
    batches
        .into_iter()
        .map(|(first, last, ids)| {
            let types: Option<Vec<AcknowledgeType>> = ids
                .iter()
                .map(|t| AcknowledgeType::from_id(*t))
                .map(|t| t.filter(|t| renew_allowed || *t != AcknowledgeType::Renew))
                .collect();
            let types = types?;
            if types.is_empty() || first > last {
                return None;
            }
            Some((first, last, types))
        })
        .collect()
}

/// The partition this broker leads for (topic id, index), or the error a share request gets,
/// with the current leader when another broker leads it.
pub fn led_partition(
    broker: &Broker,
    topic_id: Uuid,
    index: i32,
) -> Result<Arc<Partition>, (ErrorCode, i32, i32)> {
    let Some(name) = broker.cluster.topic_name_by_id(&topic_id) else {
        return Err((ErrorCode::UNKNOWN_TOPIC_ID, -1, -1));
    };
    let Some(partition) = broker.replicas.get(&name, index) else {
        return Err((broker.missing_partition_error(&name, index), -1, -1));
    };
    if !partition.is_leader() {
        let leader = partition.leader_id().map_or(-1, |b| b.0);
        return Err((
            ErrorCode::NOT_LEADER_OR_FOLLOWER,
            leader,
            partition.leader_epoch(),
        ));
    }
    Ok(partition)
}

/// The checks every share-group member request starts with, as Kafka's: share groups on,
/// a group and member id, READ on the group. Answers (group id, member id, authorizer).
pub fn member_request(
    broker: &Broker,
    conn: &ConnectionContext,
    group_id: &Option<String>,
    member_id: &Option<String>,
) -> Result<(String, String, Authz), ErrorCode> {
    if !broker.share_groups_enabled() {
        return Err(ErrorCode::UNSUPPORTED_VERSION);
    }
    let group_id = group_id.clone().unwrap_or_default();
    let member_id = member_id.clone().unwrap_or_default();
    if group_id.is_empty() || member_id.is_empty() {
        return Err(ErrorCode::INVALID_REQUEST);
    }
    let authz = Authz::new(broker, conn);
    if !authz.group(operation::READ, &group_id) {
        return Err(ErrorCode::GROUP_AUTHORIZATION_FAILED);
    }
    Ok((group_id, member_id, authz))
}

/// The checks AlterShareGroupOffsets and DeleteShareGroupOffsets start with: share groups
/// on, `op` on the group, and a group with no members (a group not known yet passes when
/// `missing_ok`). A refusal is a code and Kafka's message.
pub fn empty_group_request(
    broker: &Broker,
    conn: &ConnectionContext,
    group_id: &str,
    op: i8,
    missing_ok: bool,
) -> Result<Authz, (ErrorCode, Option<String>)> {
    if !broker.share_groups_enabled() {
        return Err((ErrorCode::UNSUPPORTED_VERSION, None));
    }
    let authz = Authz::new(broker, conn);
    if !authz.group(op, group_id) {
        return Err((ErrorCode::GROUP_AUTHORIZATION_FAILED, None));
    }
    match broker.groups.share_group_summary(group_id) {
        Ok(g) if g.members > 0 => Err((
            ErrorCode::NON_EMPTY_GROUP,
            Some(format!("Share group {group_id} is not empty.")),
        )),
        Ok(_) => Ok(authz),
        Err(crate::coordinator::CoordinatorError::GroupNotFound(m))
            if missing_ok && m.ends_with("not found.") =>
        {
            Ok(authz)
        }
        Err(e) => Err((e.code(), e.message())),
    }
}

fn top_level(code: ErrorCode) -> ShareFetchResponse {
    ShareFetchResponse {
        error_code: code.code(),
        error_message: Some(code.message()),
        ..Default::default()
    }
}

pub async fn start(
    broker: Arc<Broker>,
    header: RequestHeader,
    request: ShareFetchRequest,
    conn: Arc<ConnectionContext>,
) -> ResponseFuture {
    let (group_id, member_id, authz) =
        match member_request(&broker, &conn, &request.group_id, &request.member_id) {
            Ok(checked) => checked,
            Err(code) => return ready(header, Some(top_level(code))),
        };
    let version = header.api_version;
    let epoch = request.share_session_epoch;
    let settings = share_settings(&broker, &group_id);
    let now = broker.now_ms();

    // 1. The session.
    let requested: Vec<(Uuid, i32)> = request
        .topics
        .iter()
        .flat_map(|t| {
            t.partitions
                .iter()
                .map(move |p| (t.topic_id, p.partition_index))
        })
        .collect();
    let forgotten: Vec<(Uuid, i32)> = request
        .forgotten_topics_data
        .iter()
        .flat_map(|t| t.partitions.iter().map(move |p| (t.topic_id, *p)))
        .collect();
    let session_partitions = if epoch == FINAL_EPOCH {
        match broker
            .shares
            .sessions()
            .acknowledge(&group_id, &member_id, FINAL_EPOCH)
        {
            Ok(closed) => {
                if closed.is_none() {
                    return ready(header, Some(top_level(ErrorCode::SHARE_SESSION_NOT_FOUND)));
                }
                Vec::new()
            }
            Err(code) => return ready(header, Some(top_level(code))),
        }
    } else {
        match broker.shares.sessions().fetch(
            &group_id, &member_id, epoch, &requested, &forgotten, conn.id,
        ) {
            Ok(p) => p,
            Err(code) => return ready(header, Some(top_level(code))),
        }
    };

    // 2. Acknowledgements, per partition named in the request.
    let mut answers: BTreeMap<(Uuid, i32), PartitionData> = BTreeMap::new();
    // Partitions whose acknowledgements applied: durable before the answer.
    let mut applied: Vec<((Uuid, i32), AckUndo)> = Vec::new();
    let renew_allowed = version >= 2 && request.is_renew_ack;
    for t in &request.topics {
        let readable = broker
            .cluster
            .topic_name_by_id(&t.topic_id)
            .is_some_and(|n| authz.topic(operation::READ, &n));
        for p in &t.partitions {
            let a = answers.entry((t.topic_id, p.partition_index)).or_default();
            a.partition_index = p.partition_index;
            a.current_leader.leader_id = -1;
            a.current_leader.leader_epoch = -1;
            if broker.cluster.topic_name_by_id(&t.topic_id).is_some() && !readable {
                a.error_code = ErrorCode::TOPIC_AUTHORIZATION_FAILED.code();
                continue;
            }
            if p.acknowledgement_batches.is_empty() {
                continue;
            }
            let batches = p.acknowledgement_batches.iter().map(|b| {
                (
                    b.first_offset,
                    b.last_offset,
                    b.acknowledge_types.as_slice(),
                )
            });
            let code = match acknowledgements(batches, renew_allowed) {
                None => ErrorCode::INVALID_REQUEST,
                Some(batches) => match led_partition(&broker, t.topic_id, p.partition_index) {
                    Err((code, ..)) => code,
                    Ok(_) => {
                        let (result, undo) = broker.shares.acknowledge(
                            &group_id,
                            &member_id,
                            t.topic_id,
                            p.partition_index,
                            &batches,
                            now,
                        );
                        if !undo.is_empty() {
                            applied.push(((t.topic_id, p.partition_index), undo));
                        }
                        result.err().unwrap_or(ErrorCode::NONE)
                    }
                },
            };
            a.acknowledge_error_code = code.code();
        }
    }
    if epoch == FINAL_EPOCH {
        // The session is closed: what the member still holds goes back to the others.
        broker.shares.release_member(&group_id, &member_id);
        return later(header, async move {
            let failed = persist_acknowledged(&broker, &group_id, applied).await;
            if !failed.is_empty() {
                // The records taken back are the closed member's: the others get them.
                broker.shares.release_member(&group_id, &member_id);
            }
            answer_failed_writes(failed, &mut answers);
            Some(respond(answers, &settings))
        });
    }

    // 3. Acquisition, with a long poll when nothing is available yet.
    let targets: Vec<(Uuid, i32)> = session_partitions
        .into_iter()
        .filter(|k| {
            answers
                .get(k)
                .is_none_or(|a| a.error_code == ErrorCode::NONE.code())
        })
        .filter(|(t, _)| {
            broker
                .cluster
                .topic_name_by_id(t)
                .is_none_or(|n| authz.topic(operation::READ, &n))
        })
        .collect();
    let max_wait_ms = (request.max_wait_ms.max(0) as i64).min(MAX_WAIT_CAP_MS);
    let deadline_ms = now.saturating_add(max_wait_ms);
    let mode = if version >= 2 && request.share_acquire_mode == 1 {
        AcquireMode::RecordLimit
    } else {
        AcquireMode::BatchOptimized
    };
    let max_records = if request.max_records > 0 {
        request.max_records as i64
    } else {
        i64::MAX
    };
    let max_bytes = request.max_bytes.max(0) as usize;
    let acked = answers.values().any(|a| a.acknowledge_error_code != 0)
        || request.topics.iter().any(|t| {
            t.partitions
                .iter()
                .any(|p| !p.acknowledgement_batches.is_empty())
        });
    later(header, async move {
        let failed = persist_acknowledged(&broker, &group_id, applied).await;
        answer_failed_writes(failed, &mut answers);
        // Each share partition is loaded from its durable state before its first acquisition
        // in this leader epoch; one that cannot be loaded answers why.
        let mut targets = targets;
        let mut loaded = Vec::with_capacity(targets.len());
        for (t, p) in targets.drain(..) {
            let Ok(partition) = led_partition(&broker, t, p) else {
                loaded.push((t, p));
                continue;
            };
            if epoch == 0 {
                // A consumer (re)starting: the offsets may have been altered or deleted
                // while the group was empty, on another broker.
                broker.shares.revalidate(&group_id, t, p).await;
            }
            match broker
                .shares
                .load(&group_id, t, &partition, &settings)
                .await
            {
                Ok(()) => loaded.push((t, p)),
                Err(code) => {
                    let a = answers.entry((t, p)).or_default();
                    a.partition_index = p;
                    a.error_code = load_error(code).code();
                }
            }
        }
        let targets = loaded;
        let gather = |answers: &mut BTreeMap<(Uuid, i32), PartitionData>| {
            acquire_all(
                &broker,
                &group_id,
                &member_id,
                &targets,
                &settings,
                max_records,
                mode,
                max_bytes,
                answers,
            )
        };
        let mut found = gather(&mut answers);
        // Acknowledgements alone answer at once (the client waits on them).
        while !found && !acked {
            let now = broker.now_ms();
            if now >= deadline_ms {
                break;
            }
            let lock_due = broker.shares.next_lock_deadline_ms(&group_id, &targets);
            let wake_ms = lock_due.map_or(deadline_ms, |d| d.clamp(now + 1, deadline_ms));
            let parts: Vec<Arc<Partition>> = targets
                .iter()
                .filter_map(|(t, p)| led_partition(&broker, *t, *p).ok())
                .collect();
            let until = tokio::time::Instant::now()
                + std::time::Duration::from_millis((wake_ms - now).max(1) as u64);
            let mut first = true;
            found = wait_until(&parts, until, || {
                // The first check runs before parking: nothing new yet.
                if std::mem::take(&mut first) {
                    return None;
                }
                gather(&mut answers).then_some(())
            })
            .await
            .is_some();
            if !found && lock_due.is_some() {
                found = gather(&mut answers);
            }
        }
        Some(respond(answers, &settings))
    })
}

/// Writes the share partitions whose acknowledgements applied, before they are answered: the
/// partitions whose write failed, with the error to answer. Their acknowledgements are taken
/// back, so the member still holds the records and may acknowledge them again.
pub(super) async fn persist_acknowledged(
    broker: &Broker,
    group_id: &str,
    applied: Vec<((Uuid, i32), AckUndo)>,
) -> Vec<((Uuid, i32), ErrorCode)> {
    let mut failed = Vec::new();
    for ((topic_id, partition), undo) in applied {
        if let Err(code) = broker.shares.persist(group_id, topic_id, partition).await {
            broker.shares.undo(group_id, topic_id, partition, undo);
            failed.push(((topic_id, partition), load_error(code)));
        }
    }
    failed
}

/// Answers the failed writes as the partitions' acknowledgement errors.
fn answer_failed_writes(
    failed: Vec<((Uuid, i32), ErrorCode)>,
    answers: &mut BTreeMap<(Uuid, i32), PartitionData>,
) {
    for (key, code) in failed {
        if let Some(a) = answers.get_mut(&key) {
            a.acknowledge_error_code = code.code();
        }
    }
}

/// A persister error as a share consumer should see it: a fenced leader is no leader (the
/// client refreshes its metadata and finds the new one).
pub(super) fn load_error(code: ErrorCode) -> ErrorCode {
    match code {
        ErrorCode::FENCED_LEADER_EPOCH | ErrorCode::FENCED_STATE_EPOCH => {
            ErrorCode::NOT_LEADER_OR_FOLLOWER
        }
        other => other,
    }
}

/// Acquires for the member from every target partition, into `answers`; whether anything was
/// acquired or failed (either answers the fetch).
#[allow(clippy::too_many_arguments)]
fn acquire_all(
    broker: &Broker,
    group_id: &str,
    member_id: &str,
    targets: &[(Uuid, i32)],
    settings: &ShareSettings,
    max_records: i64,
    mode: AcquireMode,
    max_bytes: usize,
    answers: &mut BTreeMap<(Uuid, i32), PartitionData>,
) -> bool {
    let now = broker.now_ms();
    let mut records_left = max_records;
    let mut bytes_left = max_bytes;
    let mut any = false;
    for &(topic_id, index) in targets {
        if records_left <= 0 {
            break;
        }
        let a = answers.entry((topic_id, index)).or_default();
        a.partition_index = index;
        let partition = match led_partition(broker, topic_id, index) {
            Ok(p) => p,
            Err((code, leader, epoch)) => {
                a.error_code = code.code();
                a.current_leader.leader_id = leader;
                a.current_leader.leader_epoch = epoch;
                any = true;
                continue;
            }
        };
        a.current_leader.leader_id = broker.node_id;
        a.current_leader.leader_epoch = partition.leader_epoch();
        let budget = if bytes_left == 0 { 1 } else { bytes_left };
        match broker.shares.acquire(
            group_id,
            member_id,
            topic_id,
            &partition,
            settings,
            records_left,
            mode,
            budget,
            now,
        ) {
            Ok(got) if !got.ranges.is_empty() => {
                records_left -= got
                    .ranges
                    .iter()
                    .map(|r| r.last_offset - r.first_offset + 1)
                    .sum::<i64>();
                bytes_left = bytes_left.saturating_sub(got.records.len());
                a.records = Some(got.records);
                a.acquired_records = got
                    .ranges
                    .iter()
                    .map(|r| AcquiredRecords {
                        first_offset: r.first_offset,
                        last_offset: r.last_offset,
                        delivery_count: r.delivery_count.min(i16::MAX as u16) as i16,
                        ..Default::default()
                    })
                    .collect();
                any = true;
            }
            Ok(_) => {}
            Err(code) => {
                a.error_code = code.code();
                any = true;
            }
        }
    }
    any
}

fn respond(
    answers: BTreeMap<(Uuid, i32), PartitionData>,
    settings: &ShareSettings,
) -> ShareFetchResponse {
    let mut by_topic: BTreeMap<Uuid, Vec<PartitionData>> = BTreeMap::new();
    for ((topic_id, _), mut a) in answers {
        if a.records.is_none() {
            a.records = Some(Default::default());
        }
        by_topic.entry(topic_id).or_default().push(a);
    }
    ShareFetchResponse {
        acquisition_lock_timeout_ms: settings.record_lock_duration_ms.min(i32::MAX as i64) as i32,
        responses: by_topic
            .into_iter()
            .map(|(topic_id, partitions)| ShareFetchableTopicResponse {
                topic_id,
                partitions,
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    }
}
