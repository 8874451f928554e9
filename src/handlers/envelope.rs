//! Envelope (key 58), version 0 (KIP-590): a broker's forwarded admin request, served on
//! controller listeners as Kafka's `ControllerApis.handleEnvelopeRequest`. The sender must
//! be a broker (CLUSTER_ACTION on the cluster, else CLUSTER_AUTHORIZATION_FAILED); the
//! principal must deserialize (else PRINCIPAL_DESERIALIZATION_FAILURE); the inner request
//! must be one Strata forwards in an envelope (else INVALID_REQUEST). The inner request then
//! runs through its own handler as the client: authorized with the client's principal and
//! charged to the client's controller mutation quota, and its answer (header and body) goes
//! back in `response_data`.
use std::net::SocketAddr;
use std::sync::Arc;

use bytes::Bytes;

use super::{Broker, ConnectionContext, ResponseFuture};
use crate::cluster::envelope::{deserialize_principal, host_from_bytes, ENVELOPED_APIS};
use crate::error::ErrorCode;
use crate::protocol::acl::operation;
use crate::protocol::codec::{Decode, DecodeError};
use crate::protocol::header::{request_header_version, RequestHeader};
use crate::protocol::messages::envelope_request::EnvelopeRequest;
use crate::protocol::messages::envelope_response::EnvelopeResponse;

fn refused(code: ErrorCode) -> EnvelopeResponse {
    EnvelopeResponse {
        response_data: None,
        error_code: code.code(),
        ..Default::default()
    }
}

/// The inner request's header and body, the client's principal and address; the Envelope's
/// error otherwise.
fn open(
    request: EnvelopeRequest,
    conn: &ConnectionContext,
) -> Result<(RequestHeader, Bytes, ConnectionContext), ErrorCode> {
    let principal = request
        .request_principal
        .and_then(deserialize_principal)
        .ok_or(ErrorCode::PRINCIPAL_DESERIALIZATION_FAILURE)?;
    let host = host_from_bytes(&request.client_host_address).ok_or(ErrorCode::INVALID_REQUEST)?;
    let mut data = request.request_data;
    if data.len() < 4 {
        return Err(ErrorCode::INVALID_REQUEST);
    }
    let api_key = i16::from_be_bytes([data[0], data[1]]);
    let api_version = i16::from_be_bytes([data[2], data[3]]);
    let supported = super::supported_range(api_key)
        .is_some_and(|(min, max)| (min..=max).contains(&api_version));
    if !ENVELOPED_APIS.contains(&api_key) || !supported {
        tracing::warn!(
            api_key,
            api_version,
            "an Envelope carries a request Strata does not forward"
        );
        return Err(ErrorCode::INVALID_REQUEST);
    }
    let header = RequestHeader::decode(&mut data, request_header_version(api_key, api_version))
        .map_err(|_| ErrorCode::INVALID_REQUEST)?;
    let client = conn.forwarded_for(principal, SocketAddr::new(host, 0));
    Ok((header, data, client))
}

/// Runs the inner request through its own handler (one of [`ENVELOPED_APIS`]).
async fn run_inner(
    broker: Arc<Broker>,
    header: RequestHeader,
    mut body: Bytes,
    client: Arc<ConnectionContext>,
) -> Result<ResponseFuture, DecodeError> {
    use crate::protocol::messages::{
        create_delegation_token_request::CreateDelegationTokenRequest,
        create_partitions_request::CreatePartitionsRequest,
        create_topics_request::CreateTopicsRequest, delete_topics_request::DeleteTopicsRequest,
        expire_delegation_token_request::ExpireDelegationTokenRequest,
        renew_delegation_token_request::RenewDelegationTokenRequest,
    };
    let version = header.api_version;
    Ok(match header.api_key {
        CreateTopicsRequest::API_KEY => {
            let request = CreateTopicsRequest::decode(&mut body, version)?;
            super::create_topics::start(broker, header, request, client).await
        }
        DeleteTopicsRequest::API_KEY => {
            let request = DeleteTopicsRequest::decode(&mut body, version)?;
            super::delete_topics::start(broker, header, request, client).await
        }
        CreatePartitionsRequest::API_KEY => {
            let request = CreatePartitionsRequest::decode(&mut body, version)?;
            super::create_partitions::start(broker, header, request, client).await
        }
        CreateDelegationTokenRequest::API_KEY => {
            let request = CreateDelegationTokenRequest::decode(&mut body, version)?;
            super::create_delegation_token::start(broker, header, request, client).await
        }
        RenewDelegationTokenRequest::API_KEY => {
            let request = RenewDelegationTokenRequest::decode(&mut body, version)?;
            super::renew_delegation_token::start(broker, header, request, client).await
        }
        ExpireDelegationTokenRequest::API_KEY => {
            let request = ExpireDelegationTokenRequest::decode(&mut body, version)?;
            super::expire_delegation_token::start(broker, header, request, client).await
        }
        other => return Err(DecodeError::UnknownApiKey(other)),
    })
}

pub async fn start(
    broker: Arc<Broker>,
    header: RequestHeader,
    request: EnvelopeRequest,
    conn: Arc<ConnectionContext>,
) -> ResponseFuture {
    // Kafka: CLUSTER_ACTION on the cluster, or the envelope is refused whole.
    let authz = super::common::authz::Authz::new(&broker, &conn);
    if authz.require_cluster(operation::CLUSTER_ACTION).is_err() {
        tracing::warn!(principal = %conn.principal(), "an Envelope from a principal that is not a broker");
        return super::ready(
            header,
            Some(refused(ErrorCode::CLUSTER_AUTHORIZATION_FAILED)),
        );
    }
    let (inner_header, body, client) = match open(request, &conn) {
        Ok(opened) => opened,
        Err(code) => return super::ready(header, Some(refused(code))),
    };
    let inner = match run_inner(broker, inner_header, body, Arc::new(client)).await {
        Ok(inner) => inner,
        Err(e) => {
            tracing::warn!(error = %e, "the request in an Envelope is malformed");
            return super::ready(header, Some(refused(ErrorCode::INVALID_REQUEST)));
        }
    };
    super::later(header, async move {
        // The inner answer is framed for a connection: its size prefix is not part of it.
        let framed = inner.await.map(|r| r.into_bytes());
        let response = match framed {
            Some(Ok(framed)) if framed.len() >= 4 => EnvelopeResponse {
                response_data: Some(framed.slice(4..)),
                error_code: 0,
                ..Default::default()
            },
            _ => refused(ErrorCode::UNKNOWN_SERVER_ERROR),
        };
        Some(response)
    })
}
