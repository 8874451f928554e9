//! ApiVersions (key 18), versions 0-4: the advertised ranges come from the API table, so they
//! always match what dispatch serves. A request at a version we do not know gets a v0 answer
//! with UNSUPPORTED_VERSION and our ranges, so the client retries at a version we know (KIP-511).
use super::ConnectionContext;
use std::sync::Arc;

use super::{ready, Broker, ListenerScope, ResponseFuture, SUPPORTED_APIS};
use crate::error::ErrorCode;
use crate::protocol::header::RequestHeader;
use crate::protocol::messages::api_versions_request::ApiVersionsRequest;
use crate::protocol::messages::api_versions_response::{ApiVersion, ApiVersionsResponse};

/// The table's APIs that a listener of `scope` serves (Kafka advertises per listener).
fn api_keys(scope: ListenerScope) -> Vec<ApiVersion> {
    SUPPORTED_APIS
        .iter()
        .filter(|(key, ..)| {
            super::listener_serves(scope, *key) && !super::UNADVERTISED_APIS.contains(key)
        })
        .map(|(key, _, min, max)| ApiVersion {
            api_key: *key,
            min_version: *min,
            max_version: *max,
            ..Default::default()
        })
        .collect()
}

/// Kafka's check on client software names and versions (v3+).
fn valid_software_field(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b[0].is_ascii_alphanumeric()
        && b[b.len() - 1].is_ascii_alphanumeric()
        && b.iter()
            .all(|c| c.is_ascii_alphanumeric() || *c == b'-' || *c == b'.')
}

pub fn handle(
    request: &ApiVersionsRequest,
    version: i16,
    scope: ListenerScope,
) -> ApiVersionsResponse {
    if version >= 3
        && (!valid_software_field(&request.client_software_name)
            || !valid_software_field(&request.client_software_version))
    {
        return ApiVersionsResponse {
            error_code: ErrorCode::INVALID_REQUEST.code(),
            ..Default::default()
        };
    }
    ApiVersionsResponse {
        error_code: 0,
        api_keys: api_keys(scope),
        finalized_features_epoch: -1,
        ..Default::default()
    }
}

pub async fn start(
    broker: Arc<Broker>,
    header: RequestHeader,
    request: ApiVersionsRequest,
    conn: Arc<ConnectionContext>,
) -> ResponseFuture {
    let scope = super::connection_scope(&broker, &conn);
    let response = handle(&request, header.api_version, scope);
    ready(header, Some(response))
}

/// The answer to an ApiVersions request at a version we do not support: encoded as v0.
pub fn unsupported_version(mut header: RequestHeader, scope: ListenerScope) -> ResponseFuture {
    header.api_version = 0;
    let response = ApiVersionsResponse {
        error_code: ErrorCode::UNSUPPORTED_VERSION.code(),
        api_keys: api_keys(scope),
        ..Default::default()
    };
    ready(header, Some(response))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn software_names_are_checked() {
        assert!(valid_software_field("apache-kafka-java"));
        assert!(valid_software_field("3.9.0"));
        assert!(!valid_software_field(""));
        assert!(!valid_software_field("-x"));
        assert!(!valid_software_field("a b"));
    }

    #[test]
    fn a_broker_listener_advertises_every_broker_scoped_entry() {
        let r = handle(&ApiVersionsRequest::default(), 0, ListenerScope::Broker);
        let keys: Vec<i16> = r.api_keys.iter().map(|k| k.api_key).collect();
        assert_eq!(
            keys.len(),
            SUPPORTED_APIS.len()
                - super::super::CONTROLLER_ONLY_APIS.len()
                - super::super::UNADVERTISED_APIS.len()
        );
        // KIP-714 telemetry is served but not advertised, as Kafka without a receiver.
        assert!(!keys.contains(&71) && !keys.contains(&72));
        assert!(r
            .api_keys
            .iter()
            .any(|k| k.api_key == 0 && k.min_version == 0));
        // Kafka scopes these to controller listeners: a broker listener neither serves nor
        // advertises them.
        for key in [56, 62, 63, 67, 73] {
            assert!(!keys.contains(&key), "controller-only api {key} advertised");
        }
        for key in [19, 55, 80, 81] {
            assert!(keys.contains(&key), "api {key} in both scopes missing");
        }
    }

    #[test]
    fn a_controller_listener_advertises_the_controller_apis() {
        let r = handle(&ApiVersionsRequest::default(), 0, ListenerScope::Controller);
        let keys: Vec<i16> = r.api_keys.iter().map(|k| k.api_key).collect();
        assert!(keys
            .iter()
            .all(|k| super::super::CONTROLLER_APIS.contains(k)));
        for key in [18, 19, 55, 62, 63] {
            assert!(keys.contains(&key), "controller api {key} missing");
        }
        assert!(!keys.contains(&0) && !keys.contains(&1) && !keys.contains(&3));
    }
}
