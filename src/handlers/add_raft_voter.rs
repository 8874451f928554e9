//! AddRaftVoter (key 80), version 0 (KIP-853 dynamic quorum): makes a controller that
//! follows the metadata log a voter, for `kafka-metadata-quorum add-controller`. The quorum
//! leader decides ([`RaftQuorum::add_voter`](crate::controller::RaftQuorum::add_voter));
//! a broker forwards the request to the active controller as Kafka's `KafkaApis` does, and
//! a controller that does not lead answers NOT_LEADER_OR_FOLLOWER as Kafka's raft client
//! does, so the admin client looks for the leader again.
use super::ConnectionContext;
use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use super::{Broker, ResponseFuture};
use crate::controller::{MetadataImage, Quorum, RaftQuorum, VoterChangeError};
use crate::error::ErrorCode;
use crate::protocol::codec::{Decode, Encode};
use crate::protocol::header::RequestHeader;
use crate::protocol::messages::add_raft_voter_request::AddRaftVoterRequest;
use crate::protocol::messages::add_raft_voter_response::AddRaftVoterResponse;

/// The bounds put on the request's `timeout_ms`: a zero timeout could never see a voter
/// catch up, and a huge one would hold the one change slot for ever.
const MIN_TIMEOUT_MS: i32 = 100;
const MAX_TIMEOUT_MS: i32 = 300_000;
/// Added to the timeout of a forwarded request, for the round trip to the controller.
const FORWARD_MARGIN_MS: u64 = 2_000;
/// The pause before a forward is sent again to the leader known then.
const FORWARD_RETRY_BACKOFF: Duration = Duration::from_millis(100);

fn response(code: ErrorCode, message: Option<String>) -> AddRaftVoterResponse {
    AddRaftVoterResponse {
        error_code: code.code(),
        error_message: if code == ErrorCode::NONE {
            None
        } else {
            Some(message.unwrap_or_else(|| code.message()))
        },
        ..Default::default()
    }
}

/// The Kafka error of a refused voter change (`AddVoterHandler` / `RemoveVoterHandler`).
pub fn voter_change_code(e: &VoterChangeError) -> ErrorCode {
    ErrorCode::from(e)
}

/// The quorum when this process leads it. Otherwise the answer: a broker forwards the
/// request to the active controller (with `timeout_ms` plus the round trip); a controller
/// that does not lead answers NOT_LEADER_OR_FOLLOWER, and so does a failed forward.
pub(super) async fn leader_or_forwarded<'a, Req: Encode, Resp: Decode>(
    broker: &'a Broker,
    api_key: i16,
    version: i16,
    request: &Req,
    timeout_ms: u64,
    error: impl Fn(ErrorCode) -> Resp,
    error_code: impl Fn(&Resp) -> i16,
) -> Result<&'a RaftQuorum<MetadataImage>, Resp> {
    let cluster = &broker.cluster;
    if let Some(quorum) = cluster.quorum.voter().filter(|q| q.is_leader()) {
        return Ok(quorum);
    }
    if !cluster.is_broker {
        return Err(error(ErrorCode::NOT_LEADER_OR_FOLLOWER));
    }
    // As Kafka's controller channel, a forward that finds no leader, cannot reach it, or
    // reaches a controller that no longer leads is sent again to the leader known then, until
    // the request's own deadline: right after an election the broker's view lags.
    let deadline = Instant::now() + Duration::from_millis(timeout_ms + FORWARD_MARGIN_MS);
    let not_leader = ErrorCode::NOT_LEADER_OR_FOLLOWER.code();
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let answer = cluster
            .channel
            .call_with_timeout::<_, Resp>(api_key, version, request, left.as_millis() as u64)
            .await;
        let retry = match &answer {
            Ok(r) => error_code(r) == not_leader,
            Err(e) => {
                tracing::debug!(api_key, error = %e, "forwarding a voter change failed");
                true
            }
        };
        if !retry || Instant::now() + FORWARD_RETRY_BACKOFF >= deadline {
            return Err(answer.unwrap_or_else(|_| error(ErrorCode::NOT_LEADER_OR_FOLLOWER)));
        }
        tokio::time::sleep(FORWARD_RETRY_BACKOFF).await;
    }
}

pub async fn start(
    broker: Arc<Broker>,
    header: RequestHeader,
    request: AddRaftVoterRequest,
    conn: Arc<ConnectionContext>,
) -> ResponseFuture {
    // Kafka: ALTER on the cluster, CLUSTER_AUTHORIZATION_FAILED otherwise.
    if let Some(refused) = super::common::authz::refuse_cluster(
        &broker,
        &conn,
        &header,
        crate::protocol::acl::operation::ALTER,
        |r: &mut crate::protocol::messages::add_raft_voter_response::AddRaftVoterResponse, code| {
            r.error_code = code.code()
        },
    ) {
        return refused;
    }
    let version = header.api_version;
    super::later(header, async move {
        Some(handle(&broker, version, request).await)
    })
}

pub async fn handle(
    broker: &Broker,
    version: i16,
    request: AddRaftVoterRequest,
) -> AddRaftVoterResponse {
    if request
        .cluster_id
        .as_ref()
        .is_some_and(|id| *id != broker.cluster_id)
    {
        return response(ErrorCode::INCONSISTENT_CLUSTER_ID, None);
    }
    if request.voter_id < 0 {
        return response(ErrorCode::INVALID_REQUEST, Some("negative voter id".into()));
    }
    let timeout_ms = request.timeout_ms.clamp(MIN_TIMEOUT_MS, MAX_TIMEOUT_MS) as u64;
    let quorum = match leader_or_forwarded(
        broker,
        crate::protocol::messages::add_raft_voter_request::AddRaftVoterRequest::API_KEY,
        version,
        &request,
        timeout_ms,
        |code| response(code, None),
        |r: &AddRaftVoterResponse| r.error_code,
    )
    .await
    {
        Ok(quorum) => quorum,
        Err(answer) => return answer,
    };
    // The voter is reached on the listener the quorum uses, as Kafka's leader picks the
    // new voter's endpoint for its own controller listener.
    let names: Vec<String> = broker
        .config
        .controller_listener_names
        .iter()
        .map(|n| n.to_ascii_uppercase())
        .collect();
    let Some(listener) = request
        .listeners
        .iter()
        .find(|l| names.contains(&l.name.to_ascii_uppercase()))
    else {
        return response(
            ErrorCode::INVALID_REQUEST,
            Some(format!(
                "the new voter has no endpoint for the controller listener {names:?}"
            )),
        );
    };
    let host = if listener.host.contains(':') {
        format!("[{}]", listener.host)
    } else {
        listener.host.clone()
    };
    let addr = format!("{host}:{}", listener.port);
    match quorum
        .add_voter(
            request.voter_id as u64,
            addr,
            Duration::from_millis(timeout_ms),
        )
        .await
    {
        Ok(()) => response(ErrorCode::NONE, None),
        Err(e) => response(voter_change_code(&e), Some(e.to_string())),
    }
}
