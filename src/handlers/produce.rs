//! Produce (key 0), versions 0-13 (v13 names topics by id), with 0-2 advertised but refused with UNSUPPORTED_VERSION as
//! Kafka 4 does (old librdkafka only enables compression when it sees them advertised). A
//! transactional producer's first write to a partition goes to its transaction coordinator
//! first (`produce_verification`): verified before v12 (KIP-890 part 1), added to the
//! transaction from v12 (part 2).
//!
//! Two stages: the appends run before the next request of the connection is read (so appends
//! keep connection order), and the response future is what waits for acknowledgement: with
//! acks=all, until the high watermark passes each partition's batch (Kafka's DelayedProduce),
//! or `timeout_ms` (REQUEST_TIMED_OUT). On a single node the high watermark is the log end
//! offset, so nothing waits, unless `strata.log.durable.acks` makes acks=1 and acks=all wait
//! for the group commit's fsync of the batch (`replica::durable_ack`).
use super::common::authz::Authz;
use super::ConnectionContext;
use crate::protocol::acl::operation;
use std::sync::Arc;
use std::time::Duration;

use super::common::produce_verification::Verified;
use super::{common::throttle, later, ready, Broker, ResponseFuture};
use crate::error::ErrorCode;
use crate::metrics::{counts_as_failed, PartitionOutcome, TopicCounters};
use crate::protocol::header::RequestHeader;
use crate::protocol::messages::produce_request::ProduceRequest;
use crate::protocol::messages::produce_response::*;
use crate::replica::durable_ack::{after_durable, DurableAck};
use crate::replica::txn_verification::TxnVerification;
use crate::replica::wait::wait_until;
use crate::replica::Partition;

/// A partition response waiting for its acknowledgement: the high watermark (acks=all) and,
/// with `strata.log.durable.acks`, the fsync of its batch.
pub struct AckWait {
    topic: usize,
    partition: usize,
    replica: Arc<Partition>,
    required_offset: i64,
    leader_epoch: i32,
    /// acks=all: the high watermark must pass the batch.
    replicated: bool,
    durable: Option<Arc<DurableAck>>,
}

fn partition_error(
    index: i32,
    code: ErrorCode,
    message: Option<String>,
) -> PartitionProduceResponse {
    PartitionProduceResponse {
        index,
        error_code: code.code(),
        base_offset: -1,
        log_append_time_ms: -1,
        log_start_offset: -1,
        error_message: message,
        ..Default::default()
    }
}

/// KIP-951: a NOT_LEADER_OR_FOLLOWER answer (v10+) names the current leader and its
/// endpoint, so the client can go there without a Metadata round trip.
fn add_leader_hints(broker: &Broker, listener: &str, version: i16, response: &mut ProduceResponse) {
    let cluster = &broker.cluster;
    if version < 10 {
        return;
    }
    let image = cluster.image();
    let brokers = cluster.client_brokers_on(Some(listener));
    let mut leaders = Vec::new();
    for t in response.responses.iter_mut() {
        for p in t
            .partition_responses
            .iter_mut()
            .filter(|p| p.error_code == ErrorCode::NOT_LEADER_OR_FOLLOWER.code())
        {
            if let Some(reg) = image.partition(&t.name, p.index) {
                p.current_leader.leader_id = reg.leader;
                p.current_leader.leader_epoch = reg.leader_epoch;
                if reg.leader >= 0 && !leaders.contains(&reg.leader) {
                    leaders.push(reg.leader);
                }
            }
        }
    }
    for (node_id, host, port, rack) in brokers.into_iter().filter(|b| leaders.contains(&b.0)) {
        response.node_endpoints.push(NodeEndpoint {
            node_id,
            host,
            port,
            rack,
            ..Default::default()
        });
    }
}

pub fn handle(broker: &Broker, version: i16, request: ProduceRequest) -> ProduceResponse {
    handle_with_waits(broker, version, request, None).0
}

/// Appends, and lists the acks=all partitions whose acknowledgement must wait. `verified`:
/// what transaction verification decided (None: nothing to check).
pub fn handle_with_waits(
    broker: &Broker,
    version: i16,
    request: ProduceRequest,
    verified: Option<&Verified>,
) -> (ProduceResponse, Vec<AckWait>) {
    let acks = request.acks;
    let acks_valid = matches!(acks, 0 | 1 | -1);
    let now_ms = broker.now_ms();
    let mut waits = Vec::new();
    let responses = request
        .topic_data
        .into_iter()
        .enumerate()
        .map(|(topic_index, topic)| {
            // Looked up once per topic and request, and only for a topic with a local replica.
            let mut counters: Option<TopicCounters> = None;
            let partition_responses = topic
                .partition_data
                .into_iter()
                .enumerate()
                .map(|(partition_index, pd)| {
                    if version < 3 {
                        return partition_error(pd.index, ErrorCode::UNSUPPORTED_VERSION, None);
                    }
                    if !acks_valid {
                        return partition_error(pd.index, ErrorCode::INVALID_REQUIRED_ACKS, None);
                    }
                                        let Some(partition) = broker.replicas.get(&topic.name, pd.index) else {
                        let code = broker.missing_partition_error(&topic.name, pd.index);
                        broker.metrics.record(None, PartitionOutcome::ProduceFailed { counts_as_failed: counts_as_failed(code) });
                        broker.metrics.requests.record_error(ProduceRequest::API_KEY, code);
                        return partition_error(pd.index, code, None);
                    };
                    let counters: &TopicCounters = counters.get_or_insert_with(|| broker.metrics.topic(&topic.name));
                    let bytes = pd.records.as_ref().map_or(0, |r| r.len()) as u64;
                    let Some(records) = pd.records else {
                        return partition_error(pd.index, ErrorCode::CORRUPT_MESSAGE, None);
                    };
                    let verification = match verified {
                        None => TxnVerification::NotRequired,
                        Some(v) => match v.refusal(&topic.name, pd.index) {
                            Some((code, message)) => {
                                broker.metrics.record(Some(counters), PartitionOutcome::ProduceFailed { counts_as_failed: counts_as_failed(code) });
                                broker.metrics.requests.record_error(ProduceRequest::API_KEY, code);
                                return partition_error(pd.index, code, Some(message));
                            }
                            None => v.verification(&topic.name, pd.index),
                        },
                    };
                    match partition.append_client_records(records, acks, now_ms, verification) {
                        Ok(out) => {
                            let records = (out.last_offset - out.base_offset + 1).max(0) as u64;
                            broker.metrics.record(Some(counters), PartitionOutcome::Produced { records, bytes });
                            let durable = match acks {
                                0 => None,
                                _ => DurableAck::request(broker.replicas.logs(), &partition, out.last_offset + 1),
                            };
                            if acks == -1 || durable.is_some() {
                                waits.push(AckWait {
                                    topic: topic_index,
                                    partition: partition_index,
                                    replica: partition.clone(),
                                    required_offset: out.last_offset + 1,
                                    leader_epoch: out.leader_epoch,
                                    replicated: acks == -1,
                                    durable,
                                });
                            }
                            PartitionProduceResponse {
                                index: pd.index,
                                error_code: 0,
                                base_offset: out.base_offset,
                                log_append_time_ms: out.log_append_time_ms,
                                log_start_offset: out.log_start_offset,
                                ..Default::default()
                            }
                        }
                        Err(e) => {
                            tracing::debug!(topic = %topic.name, partition = pd.index, error = ?e, "produce refused");
                            broker.metrics.record(Some(counters), PartitionOutcome::ProduceFailed { counts_as_failed: counts_as_failed(e.code()) });
                            broker.metrics.requests.record_error(ProduceRequest::API_KEY, e.code());
                            match e.record_errors() {
                                // KIP-467: the client fails only the listed records.
                                Some((message, records)) => PartitionProduceResponse {
                                    record_errors: records
                                        .iter()
                                        .map(|r| BatchIndexAndErrorMessage {
                                            batch_index: r.batch_index,
                                            batch_index_error_message: Some(r.message.clone()),
                                            ..Default::default()
                                        })
                                        .collect(),
                                    ..partition_error(pd.index, e.code(), Some(message.to_string()))
                                },
                                None => partition_error(pd.index, e.code(), Some(e.message())),
                            }
                        }
                    }
                })
                .collect();
            TopicProduceResponse { name: topic.name, topic_id: topic.topic_id, partition_responses, ..Default::default() }
        })
        .collect();
    let response = ProduceResponse {
        responses,
        throttle_time_ms: 0,
        ..Default::default()
    };
    (response, waits)
}

/// Settles the waits that are complete; returns whether all are.
fn settle(response: &mut ProduceResponse, waits: &mut Vec<AckWait>) -> bool {
    waits.retain(|w| {
        let outcome = after_durable(w.durable.as_deref(), &w.replica, || {
            if w.replicated {
                w.replica
                    .acks_all_outcome(w.required_offset, w.leader_epoch)
            } else {
                Some(Ok(()))
            }
        });
        match outcome {
            None => true,
            Some(Ok(())) => false,
            Some(Err(e)) => {
                let r = &mut response.responses[w.topic].partition_responses[w.partition];
                r.error_code = e.code().code();
                r.error_message = Some(e.message());
                false
            }
        }
    });
    waits.is_empty()
}

/// Kafka's checks before any append: WRITE on the transactional id of a transactional
/// producer (every partition fails with TRANSACTIONAL_ID_AUTHORIZATION_FAILED otherwise, as
/// when transactional records come without a transactional id, authorizer or not), and WRITE
/// on each topic (TOPIC_AUTHORIZATION_FAILED for that topic's partitions). The refused topics
/// are taken out of `request` and returned with their answer.
fn authorize(authz: &Authz, request: &mut ProduceRequest) -> Vec<TopicProduceResponse> {
    let refuse_all = match request.transactional_id.as_deref() {
        Some(id) => !authz.transactional_id(operation::WRITE, id),
        None => has_transactional_records(request),
    };
    let mut refused = Vec::new();
    request.topic_data.retain(|topic| {
        let code = if refuse_all {
            ErrorCode::TRANSACTIONAL_ID_AUTHORIZATION_FAILED
        } else if !authz.topic(operation::WRITE, &topic.name) {
            ErrorCode::TOPIC_AUTHORIZATION_FAILED
        } else {
            return true;
        };
        refused.push(TopicProduceResponse {
            name: topic.name.clone(),
            topic_id: topic.topic_id,
            partition_responses: topic
                .partition_data
                .iter()
                .map(|pd| partition_error(pd.index, code, None))
                .collect(),
            ..Default::default()
        });
        false
    });
    refused
}

/// Produce v13 names topics by id (KIP-516): each is resolved to its name here, so the rest of
/// the path is the same for every version; an id no topic has is answered UNKNOWN_TOPIC_ID.
fn resolve_topic_ids(
    broker: &Broker,
    version: i16,
    request: &mut ProduceRequest,
) -> Vec<TopicProduceResponse> {
    let mut unknown = Vec::new();
    if version < 13 {
        return unknown;
    }
    request.topic_data.retain_mut(|topic| {
        if let Some(name) = broker.cluster.topic_name_by_id(&topic.topic_id) {
            topic.name = name;
            return true;
        }
        unknown.push(TopicProduceResponse {
            topic_id: topic.topic_id,
            partition_responses: topic
                .partition_data
                .iter()
                .map(|pd| partition_error(pd.index, ErrorCode::UNKNOWN_TOPIC_ID, None))
                .collect(),
            ..Default::default()
        });
        false
    });
    unknown
}

/// Kafka's `RequestUtils.hasTransactionalRecords`: any batch with the transactional flag.
fn has_transactional_records(request: &ProduceRequest) -> bool {
    request
        .topic_data
        .iter()
        .flat_map(|t| &t.partition_data)
        .filter_map(|p| p.records.as_deref())
        .any(|r| {
            crate::protocol::records::batch::BatchIter::new(r).any(|(h, _)| h.is_transactional())
        })
}

/// Bytes of records a Produce request carries (what `producer_byte_rate` measures).
fn produced_bytes(request: &ProduceRequest) -> usize {
    request
        .topic_data
        .iter()
        .flat_map(|t| &t.partition_data)
        .map(|p| p.records.as_ref().map_or(0, |r| r.len()))
        .sum()
}

pub async fn start(
    broker: Arc<Broker>,
    header: RequestHeader,
    mut request: ProduceRequest,
    conn: Arc<ConnectionContext>,
) -> ResponseFuture {
    let acks = request.acks;
    let timeout_ms = request.timeout_ms.max(0) as u64;
    let mut refused = resolve_topic_ids(&broker, header.api_version, &mut request);
    refused.extend(authorize(&Authz::new(&broker, &conn), &mut request));
    let produced = produced_bytes(&request);
    let started = std::time::Instant::now();
    // Kafka mutes the connection while it verifies: the next request waits, as here.
    let verified =
        super::common::produce_verification::verify(&broker, &request, header.api_version).await;
    let (mut response, mut waits) =
        handle_with_waits(&broker, header.api_version, request, verified.as_ref());
    response.responses.extend(refused);
    // Kafka records both quotas once the appends are done and answers with the larger
    // throttle; the connection is muted for it (even with acks=0, which gets no answer).
    let client = throttle::QuotaClient::of(&broker, &header, &conn);
    if client.any_quota() {
        let bandwidth = broker.quotas.produce.record_and_get_throttle_time_ms(
            &client.image.client_quotas,
            &client.user,
            &client.client_id,
            produced as f64,
            broker.now_ms(),
        );
        let request_time = if acks == 0 {
            0
        } else {
            throttle::request_time_throttle_ms(&broker, &client, started.elapsed())
        };
        response.throttle_time_ms = throttle::apply(&conn, &[bandwidth, request_time]);
    }
    // acks=0: Kafka sends no response at all.
    if acks == 0 {
        return ready::<ProduceResponse>(header, None);
    }
    if settle(&mut response, &mut waits) {
        add_leader_hints(
            &broker,
            &conn.listener_name,
            header.api_version,
            &mut response,
        );
        return ready(header, Some(response));
    }
    let version = header.api_version;
    later(header, async move {
        let deadline = tokio::time::Instant::now() + Duration::from_millis(timeout_ms);
        let partitions: Vec<Arc<Partition>> = waits.iter().map(|w| w.replica.clone()).collect();
        let settled = wait_until(&partitions, deadline, || {
            settle(&mut response, &mut waits).then_some(())
        })
        .await;
        if settled.is_some() {
            add_leader_hints(&broker, &conn.listener_name, version, &mut response);
        } else {
            for w in &waits {
                let r = &mut response.responses[w.topic].partition_responses[w.partition];
                r.error_code = ErrorCode::REQUEST_TIMED_OUT.code();
            }
        }
        Some(response)
    })
}
