//! The Envelope a broker wraps a forwarded admin request in (KIP-590, Kafka's
//! `ForwardingManager` and `EnvelopeUtils`): the client's own request header and body, its
//! principal serialized as Kafka's `DefaultKafkaPrincipalBuilder` does (a version-prefixed
//! `DefaultPrincipalData`) and its address, so the active controller acts for the client:
//! it authorizes the client's principal and charges the client's controller mutation quota
//! (KIP-599), which a broker cannot do for the whole cluster on its own.
//!
//! Strata envelopes the requests that mutate partitions (CreateTopics, CreatePartitions,
//! DeleteTopics): the ones a controller-side quota needs the client for; and the delegation
//! token changes (Create, Renew, ExpireDelegationToken), which the controller decides by the
//! client's principal (the token's owner and requester, who may renew). Other admin requests
//! are forwarded bare, authorized at the broker (see `handlers/common/authz.rs`).
use std::net::IpAddr;

use bytes::{Buf, BufMut, Bytes, BytesMut};

use crate::error::ErrorCode;
use crate::protocol::codec::{Decode, DecodeError, Encode};
use crate::protocol::header::{
    request_header_version, response_header_version, RequestHeader, ResponseHeader,
};
use crate::protocol::messages::default_principal_data::DefaultPrincipalData;
use crate::protocol::messages::envelope_request::EnvelopeRequest;
use crate::protocol::messages::envelope_response::EnvelopeResponse;
use crate::security::KafkaPrincipal;

/// The Envelope's API key and the one version Kafka defines.
pub const ENVELOPE_API_KEY: i16 = 58;
pub const ENVELOPE_VERSION: i16 = 0;

/// The API keys a broker forwards in an Envelope and a controller accepts in one.
pub const ENVELOPED_APIS: &[i16] = &[
    19, // CreateTopics
    20, // DeleteTopics
    37, // CreatePartitions
    38, // CreateDelegationToken
    39, // RenewDelegationToken
    40, // ExpireDelegationToken
];

/// The client a forwarded request acts for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ForwardedFor {
    pub principal: KafkaPrincipal,
    pub client_id: Option<String>,
    pub client_host: IpAddr,
}

/// Kafka's principal serialization: the `DefaultPrincipalData` version (i16) then the data.
pub fn serialize_principal(principal: &KafkaPrincipal) -> Bytes {
    let data = DefaultPrincipalData {
        r#type: principal.principal_type.clone(),
        name: principal.name.clone(),
        token_authenticated: false,
        ..Default::default()
    };
    let mut buf = BytesMut::new();
    buf.put_i16(0);
    data.encode(&mut buf, 0);
    buf.freeze()
}

/// Reads a serialized principal; None for an unknown version or malformed data (Kafka's
/// controller answers PRINCIPAL_DESERIALIZATION_FAILURE).
pub fn deserialize_principal(mut bytes: Bytes) -> Option<KafkaPrincipal> {
    if bytes.len() < 2 || bytes.get_i16() != 0 {
        return None;
    }
    let data = DefaultPrincipalData::decode(&mut bytes, 0).ok()?;
    if data.r#type.is_empty() {
        return None;
    }
    Some(KafkaPrincipal {
        principal_type: data.r#type,
        name: data.name,
    })
}

/// The client's address as the Envelope carries it: 4 or 16 bytes.
pub fn host_bytes(host: IpAddr) -> Bytes {
    match host {
        IpAddr::V4(a) => Bytes::copy_from_slice(&a.octets()),
        IpAddr::V6(a) => Bytes::copy_from_slice(&a.octets()),
    }
}

/// The address back from its bytes; None unless 4 or 16 bytes long.
pub fn host_from_bytes(bytes: &[u8]) -> Option<IpAddr> {
    match bytes.len() {
        4 => Some(IpAddr::from(<[u8; 4]>::try_from(bytes).ok()?)),
        16 => Some(IpAddr::from(<[u8; 16]>::try_from(bytes).ok()?)),
        _ => None,
    }
}

/// Wraps `request` (of `api_key` at `version`) for `client`: the inner header carries the
/// client's id, as Kafka forwards the client's own header.
pub fn wrap<Req: Encode>(
    api_key: i16,
    version: i16,
    request: &Req,
    client: &ForwardedFor,
) -> EnvelopeRequest {
    let mut inner = BytesMut::new();
    RequestHeader {
        api_key,
        api_version: version,
        correlation_id: 0,
        client_id: client.client_id.clone(),
        unknown_tagged_fields: Vec::new(),
    }
    .encode(&mut inner, request_header_version(api_key, version));
    request.encode(&mut inner, version);
    EnvelopeRequest {
        request_data: inner.freeze(),
        request_principal: Some(serialize_principal(&client.principal)),
        client_host_address: host_bytes(client.client_host),
        ..Default::default()
    }
}

/// The inner response of an Envelope answer for a request of `api_key` at `version`: the
/// Envelope's own error, or the decoded response.
pub fn unwrap<Resp: Decode>(
    api_key: i16,
    version: i16,
    response: EnvelopeResponse,
) -> Result<Resp, ErrorCode> {
    if response.error_code != 0 {
        return Err(ErrorCode::from_code(response.error_code));
    }
    let mut data = response
        .response_data
        .ok_or(ErrorCode::UNKNOWN_SERVER_ERROR)?;
    let decoded: Result<Resp, DecodeError> =
        ResponseHeader::decode(&mut data, response_header_version(api_key, version))
            .and_then(|_| Resp::decode(&mut data, version));
    decoded.map_err(|e| {
        tracing::warn!(api_key, error = %e, "the controller's enveloped answer is malformed");
        ErrorCode::UNKNOWN_SERVER_ERROR
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::messages::create_topics_request::{CreatableTopic, CreateTopicsRequest};

    #[test]
    fn a_principal_round_trips_in_kafkas_format() {
        let alice = KafkaPrincipal::user("alice");
        let bytes = serialize_principal(&alice);
        // Version 0, then compact strings (length + 1) and the bool, then no tagged fields.
        assert_eq!(&bytes[..], b"\x00\x00\x05User\x06alice\x00\x00");
        assert_eq!(deserialize_principal(bytes), Some(alice));
        assert_eq!(deserialize_principal(Bytes::from_static(b"\x00\x01")), None);
        assert_eq!(deserialize_principal(Bytes::from_static(b"\x00")), None);
        assert_eq!(
            deserialize_principal(Bytes::from_static(b"\x00\x00\x01")),
            None
        );
    }

    #[test]
    fn a_request_is_wrapped_with_the_clients_header() {
        let client = ForwardedFor {
            principal: KafkaPrincipal::user("alice"),
            client_id: Some("adminclient-1".into()),
            client_host: "10.0.0.7".parse().unwrap(),
        };
        let request = CreateTopicsRequest {
            topics: vec![CreatableTopic {
                name: "t".into(),
                num_partitions: 3,
                replication_factor: 1,
                ..Default::default()
            }],
            timeout_ms: 1000,
            ..Default::default()
        };
        let env = wrap(19, 7, &request, &client);
        assert_eq!(&env.client_host_address[..], &[10, 0, 0, 7]);
        assert_eq!(
            host_from_bytes(&env.client_host_address),
            Some(client.client_host)
        );
        let mut inner = env.request_data.clone();
        let header = RequestHeader::decode(&mut inner, request_header_version(19, 7)).unwrap();
        assert_eq!((header.api_key, header.api_version), (19, 7));
        assert_eq!(header.client_id.as_deref(), Some("adminclient-1"));
        assert_eq!(CreateTopicsRequest::decode(&mut inner, 7).unwrap(), request);
        let refused = EnvelopeResponse {
            error_code: ErrorCode::CLUSTER_AUTHORIZATION_FAILED.code(),
            ..Default::default()
        };
        let r: Result<CreateTopicsRequest, _> = unwrap(19, 7, refused);
        assert_eq!(r, Err(ErrorCode::CLUSTER_AUTHORIZATION_FAILED));
    }
}
