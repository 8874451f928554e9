//! UpdateFeatures (key 57), versions 0-2 (KIP-584, KIP-778 upgrade types): decided by the
//! active controller (`controller::features::update_features`; forwarded from other brokers,
//! KIP-590) and answered once this node's image holds the new levels. Needs ALTER on the
//! cluster. Like Kafka's controller, one refused update fails the whole request with
//! INVALID_UPDATE_VERSION at the top level; per-feature results (v0-1) are sent on success only.
use std::sync::Arc;

use super::common::authz::Authz;
use super::{later, ready, Broker, ConnectionContext, ResponseFuture};
use crate::controller::features::{self, FeatureUpdate};
use crate::controller::service::{ControllerError, ControllerService};
use crate::error::ErrorCode;
use crate::protocol::acl::operation;
use crate::protocol::header::RequestHeader;
use crate::protocol::messages::update_features_request::UpdateFeaturesRequest;
use crate::protocol::messages::update_features_response::{
    UpdatableFeatureResult, UpdateFeaturesResponse,
};

fn failed(code: ErrorCode, message: String) -> UpdateFeaturesResponse {
    UpdateFeaturesResponse {
        error_code: code.code(),
        error_message: Some(message),
        ..Default::default()
    }
}

/// The request's updates with v0's `allow_downgrade` read as a safe downgrade (Kafka's
/// `UpdateFeaturesRequest.getFeature`); from v1 the `upgrade_type` field says it.
fn updates(request: &UpdateFeaturesRequest, version: i16) -> Vec<FeatureUpdate> {
    request
        .feature_updates
        .iter()
        .map(|u| FeatureUpdate {
            feature: u.feature.clone(),
            max_version_level: u.max_version_level,
            upgrade_type: match (version, u.allow_downgrade) {
                (0, true) => features::SAFE_DOWNGRADE,
                (0, false) => features::UPGRADE,
                _ => u.upgrade_type,
            },
        })
        .collect()
}

/// The active controller's side. The request reaches it at its own version (forwarded
/// requests keep theirs), which only decides how v0's downgrade flag reads.
pub async fn on_controller(
    controller: Arc<ControllerService>,
    request: UpdateFeaturesRequest,
    version: i16,
) -> Result<UpdateFeaturesResponse, ControllerError> {
    let node_id = controller.broker_config().node_id;
    let updates = updates(&request, version);
    let validate_only = request.validate_only;
    controller
        .run(move |image, _, _| {
            match features::update_features(image, node_id, &updates, validate_only) {
                Ok(records) => {
                    let response = UpdateFeaturesResponse {
                        // Kafka's `ApiError.NONE` has a null message.
                        error_message: None,
                        results: request
                            .feature_updates
                            .iter()
                            .map(|u| UpdatableFeatureResult {
                                feature: u.feature.clone(),
                                error_code: 0,
                                // Kafka fills in `Errors.NONE.message()` here.
                                error_message: Some("NONE".into()),
                                ..Default::default()
                            })
                            .collect(),
                        ..Default::default()
                    };
                    (records, response)
                }
                Err(why) => (
                    Vec::new(),
                    failed(
                        ErrorCode::INVALID_UPDATE_VERSION,
                        format!(
                            "The update failed for all features since the following feature \
                             had an error: {why}"
                        ),
                    ),
                ),
            }
        })
        .await
}

pub async fn start(
    broker: Arc<Broker>,
    header: RequestHeader,
    request: UpdateFeaturesRequest,
    conn: Arc<ConnectionContext>,
) -> ResponseFuture {
    if !Authz::new(&broker, &conn).cluster(operation::ALTER) {
        let code = ErrorCode::CLUSTER_AUTHORIZATION_FAILED;
        return ready(header, Some(failed(code, code.message())));
    }
    let cluster = broker.cluster.clone();
    let version = header.api_version;
    later(header, async move {
        let wanted: Vec<(String, i16)> = if request.validate_only {
            Vec::new()
        } else {
            request
                .feature_updates
                .iter()
                .map(|u| (u.feature.clone(), u.max_version_level))
                .collect()
        };
        let response = cluster
            .controller_op(
                UpdateFeaturesRequest::API_KEY,
                version,
                request,
                move |c, r| on_controller(c, r, version),
                |code| failed(code, code.message()),
            )
            .await;
        if response.error_code == 0 {
            // A client that asks this node's ApiVersions next sees the new levels.
            cluster
                .wait_until(|image| {
                    wanted
                        .iter()
                        .all(|(name, level)| image.features.level(name) == *level)
                })
                .await;
        }
        Some(response)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::messages::update_features_request::FeatureUpdateKey;

    #[test]
    fn v0_allow_downgrade_reads_as_a_safe_downgrade() {
        let request = UpdateFeaturesRequest {
            feature_updates: vec![
                FeatureUpdateKey {
                    feature: "group.version".into(),
                    max_version_level: 0,
                    allow_downgrade: true,
                    ..Default::default()
                },
                FeatureUpdateKey {
                    feature: "metadata.version".into(),
                    max_version_level: 26,
                    ..Default::default()
                },
            ],
            ..Default::default()
        };
        let types: Vec<i8> = updates(&request, 0)
            .iter()
            .map(|u| u.upgrade_type)
            .collect();
        assert_eq!(types, vec![features::SAFE_DOWNGRADE, features::UPGRADE]);
        // From v1 the field decides (its default is UPGRADE).
        let types: Vec<i8> = updates(&request, 1)
            .iter()
            .map(|u| u.upgrade_type)
            .collect();
        assert_eq!(types, vec![features::UPGRADE, features::UPGRADE]);
    }
}
