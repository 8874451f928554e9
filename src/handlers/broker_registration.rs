//! BrokerRegistration (key 62), versions 0-4 (KIP-631, KIP-903): served by the active
//! controller. A broker registers fenced with its listeners and incarnation id and gets a
//! new broker epoch; a retry of the same incarnation gets the same epoch. A broker whose
//! supported feature levels do not cover the finalized ones is refused with UNSUPPORTED_VERSION.
use super::ConnectionContext;
use std::sync::Arc;

use super::{Broker, ResponseFuture};
use crate::controller::service::{ControllerError, ControllerService};
use crate::controller::{register_broker, BrokerEndpoint, RegisterBrokerRequest};
use crate::error::ErrorCode;
use crate::protocol::header::RequestHeader;
use crate::protocol::messages::broker_registration_request::BrokerRegistrationRequest;
use crate::protocol::messages::broker_registration_response::BrokerRegistrationResponse;

fn error(code: ErrorCode) -> BrokerRegistrationResponse {
    BrokerRegistrationResponse {
        error_code: code.code(),
        broker_epoch: -1,
        ..Default::default()
    }
}

pub async fn on_controller(
    controller: Arc<ControllerService>,
    request: BrokerRegistrationRequest,
) -> Result<BrokerRegistrationResponse, ControllerError> {
    let req = RegisterBrokerRequest {
        broker_id: request.broker_id,
        incarnation_id: request.incarnation_id.to_string(),
        endpoints: request
            .listeners
            .iter()
            .map(|l| BrokerEndpoint {
                name: l.name.clone(),
                host: l.host.clone(),
                port: l.port as i32,
                security_protocol: l.security_protocol,
            })
            .collect(),
        rack: request.rack.clone(),
        // Empty before v2: the controller then trusts every replica of the broker to be
        // online (Kafka's MIGRATING).
        log_dirs: request.log_dirs.iter().map(|d| d.0).collect(),
        features: request
            .features
            .iter()
            .map(|f| {
                (
                    f.name.clone(),
                    f.min_supported_version,
                    f.max_supported_version,
                )
            })
            .collect(),
    };
    let broker_id = req.broker_id;
    controller
        .run_then(
            move |image, heartbeats, ctx| {
                let (records, result) =
                    register_broker(image, ctx.config, &req, heartbeats, ctx.now_ms);
                let response = match result {
                    Ok(broker_epoch) => BrokerRegistrationResponse {
                        error_code: 0,
                        broker_epoch,
                        ..Default::default()
                    },
                    Err(code) => error(code),
                };
                (records, response)
            },
            // The broker is caught up once its image includes its own registration.
            move |heartbeats, offset, _| {
                heartbeats.set_registration_offset(broker_id, offset as i64)
            },
        )
        .await
}

pub async fn start(
    broker: Arc<Broker>,
    header: RequestHeader,
    request: BrokerRegistrationRequest,
    conn: Arc<ConnectionContext>,
) -> ResponseFuture {
    // Kafka: CLUSTER_ACTION on the cluster, CLUSTER_AUTHORIZATION_FAILED otherwise.
    if let Some(refused) = super::common::authz::refuse_cluster(
        &broker,
        &conn,
        &header,
        crate::protocol::acl::operation::CLUSTER_ACTION,
        |r: &mut crate::protocol::messages::broker_registration_response::BrokerRegistrationResponse, code| r.error_code = code.code(),
    ) {
        return refused;
    }
    super::controller_only(&broker, header, request, on_controller, error)
}
