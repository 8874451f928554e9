//! ApiVersions (key 18), versions 0-4: the advertised ranges come from the API table, so they
//! always match what dispatch serves. A request at a version we do not know gets a v0 answer
//! with UNSUPPORTED_VERSION and our ranges, so the client retries at a version we know (KIP-511).
//! From v3 it carries the feature levels this node supports and those the cluster finalized
//! (KIP-584), with the offset of the last feature change as their epoch.
use super::ConnectionContext;
use std::sync::Arc;

use super::{ready, Broker, ListenerScope, ResponseFuture, SUPPORTED_APIS};
use crate::controller::features::{self, FinalizedFeatures};
use crate::error::ErrorCode;
use crate::protocol::header::RequestHeader;
use crate::protocol::messages::api_versions_request::ApiVersionsRequest;
use crate::protocol::messages::api_versions_response::{
    ApiVersion, ApiVersionsResponse, FinalizedFeatureKey, SupportedFeatureKey,
};

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

/// The features this node supports. Before v4, one whose lowest level is 0 is left out: older
/// clients cannot read a range starting at 0 (KAFKA-17492, as Kafka's `alterFeatureLevel0`).
fn supported_features(version: i16) -> Vec<SupportedFeatureKey> {
    let mut advertised: Vec<_> = features::advertised().collect();
    advertised.sort_unstable();
    advertised
        .into_iter()
        .filter(|(_, min, _)| version >= 4 || *min > 0)
        .map(|(name, min, max)| SupportedFeatureKey {
            name: name.to_string(),
            min_version: min,
            max_version: max,
            ..Default::default()
        })
        .collect()
}

/// The finalized levels; a feature at 0 (disabled) is not listed, and each level is both the
/// min and the max, as Kafka answers since KIP-778.
fn finalized_features(finalized: &FinalizedFeatures) -> Vec<FinalizedFeatureKey> {
    finalized
        .levels
        .iter()
        .filter(|(_, level)| **level != 0)
        .map(|(name, level)| FinalizedFeatureKey {
            name: name.clone(),
            max_version_level: *level,
            min_version_level: *level,
            ..Default::default()
        })
        .collect()
}

pub fn handle(
    request: &ApiVersionsRequest,
    version: i16,
    scope: ListenerScope,
    finalized: &FinalizedFeatures,
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
        supported_features: supported_features(version),
        finalized_features: finalized_features(finalized),
        finalized_features_epoch: finalized.epoch,
        zk_migration_ready: false,
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
    let image = broker.cluster.image();
    let response = handle(&request, header.api_version, scope, &image.features);
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

    /// The features part of ApiVersions as Kafka writes it: these bytes are what Kafka
    /// 4.1.2's `ApiVersionsResponseData.write` (kafka-clients jar) produced for the same
    /// content (api keys cut to UpdateFeatures 0-2, finalized epoch 7).
    const GOLDEN_V3: &str =
        "000002003900000002000000000003002a030e6b726166742e76657273696f6e0001000100116d65746164\
        6174612e76657273696f6e0011001a00010800000000000000070256050e67726f75702e76657273696f6e\
        00010001000e6b726166742e76657273696f6e0001000100116d657461646174612e76657273696f6e001a\
        001a00147472616e73616374696f6e2e76657273696f6e0002000200";
    const GOLDEN_V4: &str =
        "0000020039000000020000000000030056050e67726f75702e76657273696f6e00000001000e6b72616674\
        2e76657273696f6e0001000100116d657461646174612e76657273696f6e0011001a00147472616e736163\
        74696f6e2e76657273696f6e0000000200010800000000000000070256050e67726f75702e76657273696f\
        6e00010001000e6b726166742e76657273696f6e0001000100116d657461646174612e76657273696f6e00\
        1a001a00147472616e73616374696f6e2e76657273696f6e0002000200";

    fn unhex(s: &str) -> Vec<u8> {
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }

    fn finalized_at_defaults() -> FinalizedFeatures {
        let mut f = FinalizedFeatures::default();
        for (name, level) in features::bootstrap_levels(None, &[]).unwrap() {
            f.apply(&name, level);
        }
        f.epoch = 7;
        f
    }

    #[test]
    fn features_are_encoded_as_kafka_encodes_them() {
        use crate::protocol::codec::{Decode, Encode};
        let request = ApiVersionsRequest {
            client_software_name: "apache-kafka-java".into(),
            client_software_version: "4.1.2".into(),
            ..Default::default()
        };
        for (version, golden) in [(3, GOLDEN_V3), (4, GOLDEN_V4)] {
            let mut r = handle(
                &request,
                version,
                ListenerScope::Broker,
                &finalized_at_defaults(),
            );
            r.api_keys.retain(|k| k.api_key == 57);
            // The golden bytes are Kafka 4.1.2's, which had no production share groups;
            // everything else must match byte for byte.
            r.supported_features.retain(|f| f.name != "share.version");
            r.finalized_features.retain(|f| f.name != "share.version");
            assert_eq!(r.api_keys.len(), 1, "UpdateFeatures advertised");
            let mut buf = bytes::BytesMut::new();
            r.encode(&mut buf, version);
            assert_eq!(buf.to_vec(), unhex(golden), "v{version}");
            // And Kafka's bytes decode to the same response.
            let mut golden = bytes::Bytes::from(unhex(golden));
            let decoded = ApiVersionsResponse::decode(&mut golden, version).unwrap();
            assert!(golden.is_empty());
            assert_eq!(decoded, r);
        }
        // Before v3 there are no feature fields at all; nothing finalized: epoch -1.
        let r = handle(
            &request,
            3,
            ListenerScope::Broker,
            &FinalizedFeatures::default(),
        );
        assert!(r.finalized_features.is_empty());
        assert_eq!(r.finalized_features_epoch, -1);
    }

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
        let r = handle(
            &ApiVersionsRequest::default(),
            0,
            ListenerScope::Broker,
            &FinalizedFeatures::default(),
        );
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
        let r = handle(
            &ApiVersionsRequest::default(),
            0,
            ListenerScope::Controller,
            &FinalizedFeatures::default(),
        );
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
