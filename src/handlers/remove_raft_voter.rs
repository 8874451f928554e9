//! RemoveRaftVoter (key 81), version 0 (KIP-853 dynamic quorum): removes a controller from
//! the voters, for `kafka-metadata-quorum remove-controller`. The quorum leader decides
//! ([`RaftQuorum::remove_voter`](crate::controller::RaftQuorum::remove_voter)), also when it
//! removes itself (it steps down once the change is committed); brokers forward the request
//! to the active controller and other controllers answer NOT_LEADER_OR_FOLLOWER, as in
//! Kafka. Directory ids are not recorded: the voter is named by its id alone.
use super::ConnectionContext;
use std::sync::Arc;
use std::time::Duration;

use super::add_raft_voter::{leader_or_forwarded, voter_change_code};
use super::{Broker, ResponseFuture};
use crate::error::ErrorCode;
use crate::protocol::header::RequestHeader;
use crate::protocol::messages::remove_raft_voter_request::RemoveRaftVoterRequest;
use crate::protocol::messages::remove_raft_voter_response::RemoveRaftVoterResponse;

/// How long the leader waits for the change to commit (Kafka's request timeout; the request
/// carries none).
const REMOVE_TIMEOUT_MS: u64 = 30_000;

fn response(code: ErrorCode, message: Option<String>) -> RemoveRaftVoterResponse {
    RemoveRaftVoterResponse {
        error_code: code.code(),
        error_message: if code == ErrorCode::NONE {
            None
        } else {
            Some(message.unwrap_or_else(|| code.message()))
        },
        ..Default::default()
    }
}

pub async fn start(
    broker: Arc<Broker>,
    header: RequestHeader,
    request: RemoveRaftVoterRequest,
    conn: Arc<ConnectionContext>,
) -> ResponseFuture {
    // Kafka: ALTER on the cluster, CLUSTER_AUTHORIZATION_FAILED otherwise.
    if let Some(refused) = super::common::authz::refuse_cluster(
        &broker,
        &conn,
        &header,
        crate::protocol::acl::operation::ALTER,
        |r: &mut crate::protocol::messages::remove_raft_voter_response::RemoveRaftVoterResponse,
         code| r.error_code = code.code(),
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
    request: RemoveRaftVoterRequest,
) -> RemoveRaftVoterResponse {
    if request
        .cluster_id
        .as_ref()
        .is_some_and(|id| *id != broker.cluster_id)
    {
        return response(ErrorCode::INCONSISTENT_CLUSTER_ID, None);
    }
    if request.voter_id < 0 {
        return response(ErrorCode::VOTER_NOT_FOUND, None);
    }
    let quorum = match leader_or_forwarded(
        broker,
        crate::protocol::messages::remove_raft_voter_request::RemoveRaftVoterRequest::API_KEY,
        version,
        &request,
        REMOVE_TIMEOUT_MS,
        |code| response(code, None),
        |r: &RemoveRaftVoterResponse| r.error_code,
    )
    .await
    {
        Ok(quorum) => quorum,
        Err(answer) => return answer,
    };
    match quorum
        .remove_voter(
            request.voter_id as u64,
            Duration::from_millis(REMOVE_TIMEOUT_MS),
        )
        .await
    {
        Ok(()) => response(ErrorCode::NONE, None),
        Err(e) => response(voter_change_code(&e), Some(e.to_string())),
    }
}
