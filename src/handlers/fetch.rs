//! Fetch (key 1), versions 4-18 (topic ids from 13): long poll on `min_bytes` / `max_wait_ms`,
//! response `max_bytes` and `partition_max_bytes` with Kafka's rule that the first batch is
//! returned whole even when larger than the limits (so a consumer can always make progress),
//! whole batches starting at the one containing the fetch offset, and read_committed bounded
//! by the last stable offset.
//!
//! Incremental fetch sessions (KIP-227) are declined the way Kafka declines them when its
//! session cache is full: a session id of 0, after which clients send full fetches.
//!
//! A fetch with a replica id (`replica_id >= 0`, or ReplicaState from v15) comes from a
//! follower and is served by the replica manager: up to the log end offset, with the
//! follower's position recorded and diverging epochs reported (v12+). A follower that reports
//! a high watermark below the leader's (v18, KIP-1166) is answered at once rather than parked,
//! so a new high watermark reaches it without waiting for new data; for consumers v18 is v17.
//! Consumers get NOT_LEADER_OR_FOLLOWER from a partition this broker does not lead.
use super::common::authz::Authz;
use super::ConnectionContext;
use crate::protocol::acl::operation;
use std::sync::Arc;
use std::time::Duration;

use super::common::response::RecordsPlaceholders;
use super::{common::throttle, encode_response, Broker, ResponseFuture};
use crate::error::ErrorCode;
use crate::metrics::{counts_as_failed, PartitionOutcome};
use crate::protocol::codec::Uuid;
use crate::protocol::header::RequestHeader;
use crate::protocol::messages::fetch_request::{FetchRequest, FetchTopic};
use crate::protocol::messages::fetch_response::*;
use crate::replica::partition::Isolation;
use crate::replica::wait::wait_until;
use crate::replica::Partition;
use bytes::Bytes;

/// Kafka's cap on how long a fetch may wait, whatever the client asks.
const MAX_WAIT_CAP_MS: i32 = 30_000;

struct Gathered {
    response: FetchResponse,
    /// The records fields to send from segment files (zero-copy), by placeholder.
    placeholders: RecordsPlaceholders,
    bytes: usize,
    error: bool,
    /// How long gathering took (what `request_percentage` measures).
    took: Duration,
}

fn gather(broker: &Broker, request: &FetchRequest, version: i16, zero_copy: bool) -> Gathered {
    let started = std::time::Instant::now();
    let mut placeholders = RecordsPlaceholders::default();
    let isolation = Isolation::from_wire(request.isolation_level);
    let mut remaining = if request.max_bytes <= 0 {
        0
    } else {
        request.max_bytes as usize
    };
    let mut total = 0usize;
    let mut error = false;
    let mut responses = Vec::with_capacity(request.topics.len());
    for topic in &request.topics {
        let name = if version >= 13 {
            broker.cluster.topic_name_by_id(&topic.topic_id)
        } else {
            Some(topic.topic.clone())
        };
        let mut partitions = Vec::with_capacity(topic.partitions.len());
        for fp in &topic.partitions {
            let mut pd = PartitionData {
                partition_index: fp.partition,
                high_watermark: -1,
                last_stable_offset: -1,
                log_start_offset: -1,
                aborted_transactions: None,
                preferred_read_replica: -1,
                records: Some(Default::default()),
                ..Default::default()
            };
            let Some(name) = name.as_deref() else {
                pd.error_code = ErrorCode::UNKNOWN_TOPIC_ID.code();
                error = true;
                partitions.push(pd);
                continue;
            };
            let Some(partition) = broker.replicas.get(name, fp.partition) else {
                pd.error_code = broker.missing_partition_error(name, fp.partition).code();
                error = true;
                partitions.push(pd);
                continue;
            };
            if !partition.is_leader() {
                pd.error_code = ErrorCode::NOT_LEADER_OR_FOLLOWER.code();
                pd.current_leader.leader_id = partition.leader_id().map_or(-1, |b| b.0);
                pd.current_leader.leader_epoch = partition.leader_epoch();
                error = true;
                partitions.push(pd);
                continue;
            }
            if let Err(e) = partition.check_leader_epoch(fp.current_leader_epoch) {
                pd.error_code = e.code().code();
                error = true;
                partitions.push(pd);
                continue;
            }
            pd.high_watermark = partition.high_watermark();
            pd.last_stable_offset = partition.last_stable_offset();
            pd.log_start_offset = partition.log_start_offset();

            let max = (fp.partition_max_bytes.max(0) as usize).min(remaining);
            // The first partition with data may exceed the limits by one batch (KIP-74).
            let min_one = total == 0;
            let read = if zero_copy {
                partition
                    .read_region(fp.fetch_offset, max, isolation, min_one)
                    .map(|d| match d.region {
                        Some(region) => {
                            let (n, next) = (region.len, region.next_offset);
                            (placeholders.add(region), n, next)
                        }
                        None => (Bytes::new(), 0, fp.fetch_offset),
                    })
            } else {
                partition
                    .read(fp.fetch_offset, max, isolation, min_one)
                    .map(|d| {
                        let next = last_offset_in(&d.records).map_or(fp.fetch_offset, |o| o + 1);
                        let n = d.records.len();
                        (d.records, n, next)
                    })
            };
            match read {
                Ok((records, n, next_offset)) => {
                    if isolation == Isolation::ReadCommitted {
                        // The aborted transactions that overlap what we return, so the
                        // consumer can drop their records (Kafka's collectAbortedTransactions).
                        pd.aborted_transactions = Some(
                            partition
                                .aborted_transactions(fp.fetch_offset, next_offset)
                                .into_iter()
                                .map(|a| AbortedTransaction {
                                    producer_id: a.producer_id,
                                    first_offset: a.first_offset,
                                    ..Default::default()
                                })
                                .collect(),
                        );
                    }
                    total += n;
                    remaining = remaining.saturating_sub(n);
                    pd.records = Some(records);
                }
                Err(e) => {
                    pd.error_code = e.code().code();
                    error = true;
                }
            }
            partitions.push(pd);
        }
        responses.push(FetchableTopicResponse {
            topic: topic.topic.clone(),
            topic_id: if version >= 13 {
                topic.topic_id
            } else {
                Uuid::ZERO
            },
            partitions,
            ..Default::default()
        });
    }
    Gathered {
        placeholders,
        response: FetchResponse {
            throttle_time_ms: 0,
            error_code: 0,
            session_id: 0,
            responses,
            ..Default::default()
        },
        bytes: total,
        error,
        took: started.elapsed(),
    }
}

/// Kafka's checks: a follower needs CLUSTER_ACTION on the cluster (every partition fails
/// with TOPIC_AUTHORIZATION_FAILED otherwise), a consumer READ on each topic. Refused topics
/// are taken out of `request` and returned with their answer; a topic id this broker does not
/// know stays in, for UNKNOWN_TOPIC_ID.
fn authorize(
    broker: &Broker,
    authz: &Authz,
    request: &mut FetchRequest,
    version: i16,
    follower: bool,
) -> Vec<FetchableTopicResponse> {
    let refuse_all = follower && !authz.cluster(operation::CLUSTER_ACTION);
    if !refuse_all && !authz.enabled() {
        return Vec::new();
    }
    let mut refused = Vec::new();
    request.topics.retain(|t| {
        let name = if version >= 13 {
            broker.cluster.topic_name_by_id(&t.topic_id)
        } else {
            Some(t.topic.clone())
        };
        let denied =
            refuse_all || (!follower && name.is_some_and(|n| !authz.topic(operation::READ, &n)));
        if !denied {
            return true;
        }
        refused.push(FetchableTopicResponse {
            topic: t.topic.clone(),
            topic_id: t.topic_id,
            partitions: t
                .partitions
                .iter()
                .map(|p| PartitionData {
                    partition_index: p.partition,
                    error_code: ErrorCode::TOPIC_AUTHORIZATION_FAILED.code(),
                    high_watermark: -1,
                    last_stable_offset: -1,
                    log_start_offset: -1,
                    preferred_read_replica: -1,
                    records: Some(Default::default()),
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        });
        false
    });
    refused
}

/// The replicas a fetch reads, to wait on: a change to any of them may complete it. One it
/// names that is not here answers an error at once, so it needs no waiting.
fn requested_partitions(
    broker: &Broker,
    request: &FetchRequest,
    resolve: impl Fn(&FetchTopic) -> Option<String>,
) -> Vec<Arc<Partition>> {
    let mut partitions = Vec::new();
    for topic in &request.topics {
        let Some(name) = resolve(topic) else {
            continue;
        };
        partitions.extend(
            topic
                .partitions
                .iter()
                .filter_map(|fp| broker.replicas.get(&name, fp.partition)),
        );
    }
    partitions
}

/// Bytes of records in a response, and whether any partition failed or diverged.
fn response_size(response: &FetchResponse) -> (usize, bool) {
    let mut bytes = 0;
    let mut error = false;
    for p in response.responses.iter().flat_map(|t| &t.partitions) {
        bytes += p.records.as_ref().map_or(0, |r| r.len());
        error |= p.error_code != 0 || p.diverging_epoch.epoch >= 0;
    }
    (bytes, error)
}

/// The last offset of the last whole batch in `records`.
fn last_offset_in(records: &[u8]) -> Option<i64> {
    crate::protocol::records::batch::BatchIter::new(records)
        .last()
        .map(|(h, _)| h.last_offset())
}

pub async fn start(
    broker: Arc<Broker>,
    header: RequestHeader,
    mut request: FetchRequest,
    conn: Arc<ConnectionContext>,
) -> ResponseFuture {
    let version = header.api_version;
    let client = throttle::QuotaClient::of(&broker, &header, &conn);
    if request.replica_id >= 0 || request.replica_state.replica_id >= 0 {
        // Kafka's request metrics count a replica's fetch as `FetchFollower`.
        crate::metrics::request::mark_follower_fetch();
    }
    let flexible = FetchResponse::is_flexible(version);
    let zero_copy = broker.config.fetch_zero_copy && !client.any_quota();
    let answer = async move {
        let none = RecordsPlaceholders::default;
        // A client continuing a session we never created is told it does not exist.
        if request.session_id != 0 && request.session_epoch > 0 {
            let response = FetchResponse {
                error_code: ErrorCode::FETCH_SESSION_ID_NOT_FOUND.code(),
                session_id: 0,
                ..Default::default()
            };
            return Some((response, none()));
        }
        let deadline = tokio::time::Instant::now()
            + Duration::from_millis(request.max_wait_ms.clamp(0, MAX_WAIT_CAP_MS) as u64);
        let min_bytes = request.min_bytes.max(0) as usize;
        let follower = request.replica_id >= 0 || request.replica_state.replica_id >= 0;
        let refused = authorize(
            &broker,
            &Authz::new(&broker, &conn),
            &mut request,
            version,
            follower,
        );
        if follower && !refused.is_empty() {
            let response = FetchResponse {
                responses: refused,
                ..Default::default()
            };
            return Some((response, none()));
        }
        if follower {
            let resolve = |t: &crate::protocol::messages::fetch_request::FetchTopic| {
                if version >= 13 {
                    // The controller may make us leader of a partition before our metadata
                    // store lists its topic; the replica itself knows its topic id.
                    broker
                        .cluster
                        .topic_name_by_id(&t.topic_id)
                        .or_else(|| broker.replicas.topic_name_by_id(&t.topic_id))
                } else {
                    Some(t.topic.clone())
                }
            };
            let serve = || {
                broker
                    .replicas
                    .serve_follower_fetch(&request, &resolve, broker.now_ms())
            };
            let partitions = requested_partitions(&broker, &request, |t| resolve(t));
            let mut response = wait_until(&partitions, deadline, || {
                let response = serve();
                let (bytes, error) = response_size(&response);
                (min_bytes == 0
                    || bytes >= min_bytes
                    || error
                    || follower_high_watermark_behind(&request, &response))
                .then_some(response)
            })
            .await
            // At the deadline: what there is.
            .unwrap_or_else(serve);
            if version < 13 {
                for t in &mut response.responses {
                    t.topic_id = Uuid::ZERO;
                }
            }
            return Some((response, none()));
        }
        // A consumer with a byte-rate quota gets at most what its quota allows over the
        // quota windows in one response (Kafka's `getMaxValueInQuotaWindow`).
        if let Some(cap) = client
            .any_quota()
            .then(|| {
                broker.quotas.fetch.max_value_in_quota_window(
                    &client.image.client_quotas,
                    &client.user,
                    &client.client_id,
                )
            })
            .flatten()
        {
            let cap = cap.clamp(1.0, i32::MAX as f64) as i32;
            if request.max_bytes <= 0 || request.max_bytes > cap {
                request.max_bytes = cap;
            }
        }
        let partitions = requested_partitions(&broker, &request, |t| {
            if version >= 13 {
                broker.cluster.topic_name_by_id(&t.topic_id)
            } else {
                Some(t.topic.clone())
            }
        });
        let mut gathered = wait_until(&partitions, deadline, || {
            let g = gather(&broker, &request, version, zero_copy);
            (min_bytes == 0 || g.bytes >= min_bytes || g.error).then_some(g)
        })
        .await
        .unwrap_or_else(|| gather(&broker, &request, version, zero_copy));
        let placeholders = std::mem::take(&mut gathered.placeholders);
        let mut response = if client.any_quota() {
            throttled(&broker, &client, &conn, gathered)
        } else {
            gathered.response
        };
        record_metrics(&broker, &request, version, &response, &placeholders);
        response.responses.extend(refused);
        Some((response, placeholders))
    };
    Box::pin(async move {
        let (response, placeholders) = answer.await?;
        if placeholders.is_empty() {
            return Some(encode_response(&header, &response).into());
        }
        let framed = encode_response(&header, &response);
        match placeholders.splice(framed, flexible) {
            Some(r) => Some(r),
            None => {
                // Never expected; the records are read into memory instead.
                tracing::error!("a fetch response lost its record placeholders");
                let mut response = response;
                for p in response
                    .responses
                    .iter_mut()
                    .flat_map(|t| &mut t.partitions)
                {
                    if let Some(region) =
                        p.records.as_deref().and_then(|r| placeholders.region_of(r))
                    {
                        p.records = Some(region.read().ok()?.into());
                    }
                }
                Some(encode_response(&header, &response).into())
            }
        }
    })
}

/// Whether a follower's fetch (v18, KIP-1166) reports, for a partition served without error,
/// a high watermark below the leader's: the answer then carries news and is sent at once.
/// Versions before 18 read the field as `i64::MAX` (not reported), which never is behind.
fn follower_high_watermark_behind(request: &FetchRequest, response: &FetchResponse) -> bool {
    // The response lists the request's topics and partitions in the request's order.
    request
        .topics
        .iter()
        .zip(&response.responses)
        .any(|(asked, answered)| {
            asked
                .partitions
                .iter()
                .zip(&answered.partitions)
                .any(|(fp, pd)| pd.error_code == 0 && fp.high_watermark < pd.high_watermark)
        })
}

/// Counts a consumer fetch's partitions on Kafka's `BrokerTopicMetrics` (total and failed
/// fetches, bytes out) and its partition errors, once per response (not per long-poll pass).
/// The gathered topics come first in the response, in request order.
fn record_metrics(
    broker: &Broker,
    request: &FetchRequest,
    version: i16,
    response: &FetchResponse,
    placeholders: &RecordsPlaceholders,
) {
    for (asked, answered) in request.topics.iter().zip(&response.responses) {
        let name = if version >= 13 {
            broker.cluster.topic_name_by_id(&asked.topic_id)
        } else {
            Some(asked.topic.clone())
        };
        // Series only for topics that exist, so made-up names cannot create them.
        let counters = name.and_then(|n| {
            broker
                .metrics
                .topic_if(&n, || broker.cluster.topic(&n).is_some())
        });
        for p in &answered.partitions {
            let code = ErrorCode::from_code(p.error_code);
            let outcome = if code.is_ok() {
                let bytes = p.records.as_deref().map_or(0, |r| {
                    placeholders
                        .region_of(r)
                        .map_or(r.len(), |region| region.len)
                }) as u64;
                PartitionOutcome::Fetched { bytes }
            } else {
                broker
                    .metrics
                    .requests
                    .record_error(FetchRequest::API_KEY, code);
                PartitionOutcome::FetchFailed {
                    counts_as_failed: counts_as_failed(code),
                }
            };
            broker.metrics.record(counters.as_ref(), outcome);
        }
    }
}

/// Records a consumer's fetch against its quotas (Kafka's `KafkaApis.handleFetchRequest`): the
/// response's record bytes against `consumer_byte_rate` and the time to gather them against
/// `request_percentage`. A throttled consumer gets an empty response carrying the larger
/// throttle (its bytes un-recorded, since it does not get them) and its connection is muted.
fn throttled(
    broker: &Broker,
    client: &throttle::QuotaClient,
    conn: &ConnectionContext,
    gathered: Gathered,
) -> FetchResponse {
    let now_ms = broker.now_ms();
    let quotas = &client.image.client_quotas;
    let bytes = gathered.bytes as f64;
    let bandwidth = broker.quotas.fetch.record_and_get_throttle_time_ms(
        quotas,
        &client.user,
        &client.client_id,
        bytes,
        now_ms,
    );
    let request_time = throttle::request_time_throttle_ms(broker, client, gathered.took);
    let throttle_time_ms = throttle::apply(conn, &[bandwidth, request_time]);
    if throttle_time_ms == 0 {
        return gathered.response;
    }
    broker
        .quotas
        .fetch
        .unrecord(quotas, &client.user, &client.client_id, bytes, now_ms);
    FetchResponse {
        throttle_time_ms,
        error_code: 0,
        session_id: 0,
        responses: Vec::new(),
        ..Default::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::codec::{Decode, Encode};
    use crate::protocol::messages::fetch_request::{FetchPartition, FetchTopic};
    use bytes::BytesMut;

    fn asked(high_watermarks: &[i64]) -> FetchRequest {
        FetchRequest {
            topics: vec![FetchTopic {
                partitions: high_watermarks
                    .iter()
                    .enumerate()
                    .map(|(i, &hw)| FetchPartition {
                        partition: i as i32,
                        high_watermark: hw,
                        ..Default::default()
                    })
                    .collect(),
                ..Default::default()
            }],
            ..Default::default()
        }
    }

    fn answered(partitions: &[(i16, i64)]) -> FetchResponse {
        FetchResponse {
            responses: vec![FetchableTopicResponse {
                partitions: partitions
                    .iter()
                    .enumerate()
                    .map(|(i, &(error_code, high_watermark))| PartitionData {
                        partition_index: i as i32,
                        error_code,
                        high_watermark,
                        ..Default::default()
                    })
                    .collect(),
                ..Default::default()
            }],
            ..Default::default()
        }
    }

    #[test]
    fn a_follower_behind_the_leaders_high_watermark_is_answered_at_once() {
        // Caught up on both partitions: nothing to tell, the fetch may wait.
        assert!(!follower_high_watermark_behind(
            &asked(&[10, 7]),
            &answered(&[(0, 10), (0, 7)])
        ));
        // Behind on the second.
        assert!(follower_high_watermark_behind(
            &asked(&[10, 6]),
            &answered(&[(0, 10), (0, 7)])
        ));
        // Not reported (before v18, or a follower without the feature).
        assert!(!follower_high_watermark_behind(
            &asked(&[i64::MAX]),
            &answered(&[(0, 7)])
        ));
        // A partition in error has no high watermark to compare.
        assert!(!follower_high_watermark_behind(
            &asked(&[3]),
            &answered(&[(ErrorCode::NOT_LEADER_OR_FOLLOWER.code(), -1)])
        ));
    }

    #[test]
    fn v18_carries_the_followers_high_watermark_as_tag_1() {
        let encode = |r: &FetchRequest, version: i16| {
            let mut out = BytesMut::new();
            r.encode(&mut out, version);
            out.freeze()
        };
        // Not reported: no tag, the same bytes as v17.
        let plain = asked(&[i64::MAX]);
        assert_eq!(encode(&plain, 17), encode(&plain, 18));
        let reported = asked(&[42]);
        let v18 = encode(&reported, 18);
        assert_eq!(v18.len(), encode(&plain, 18).len() + 1 + 1 + 1 + 8 - 1);
        let back = FetchRequest::decode(&mut v18.clone(), 18).unwrap();
        assert_eq!(back.topics[0].partitions[0].high_watermark, 42);
        // v17 has no such field: it is not written, and reads back as not reported.
        let v17 = encode(&reported, 17);
        let back = FetchRequest::decode(&mut v17.clone(), 17).unwrap();
        assert_eq!(back.topics[0].partitions[0].high_watermark, i64::MAX);
    }
}
