//! BrokerHeartbeat (key 63), versions 0-1 (KIP-631): served by the active controller. Keeps
//! a broker's session alive, unfences it once it has caught up with the metadata log, and
//! carries the controlled shutdown (`want_shut_down`): leaderships move away first, then
//! `should_shut_down` is answered.
use super::ConnectionContext;
use std::sync::Arc;

use super::{Broker, ResponseFuture};
use crate::controller::service::{ControllerError, ControllerService};
use crate::controller::{broker_heartbeat, BrokerHeartbeatRequest as Heartbeat};
use crate::error::ErrorCode;
use crate::protocol::header::RequestHeader;
use crate::protocol::messages::broker_heartbeat_request::BrokerHeartbeatRequest;
use crate::protocol::messages::broker_heartbeat_response::BrokerHeartbeatResponse;

fn error(code: ErrorCode) -> BrokerHeartbeatResponse {
    BrokerHeartbeatResponse {
        error_code: code.code(),
        is_caught_up: false,
        is_fenced: true,
        should_shut_down: false,
        ..Default::default()
    }
}

pub async fn on_controller(
    controller: Arc<ControllerService>,
    request: BrokerHeartbeatRequest,
) -> Result<BrokerHeartbeatResponse, ControllerError> {
    let hb = Heartbeat {
        broker_id: request.broker_id,
        broker_epoch: request.broker_epoch,
        current_metadata_offset: request.current_metadata_offset,
        want_fence: request.want_fence,
        want_shutdown: request.want_shut_down,
        offline_log_dirs: request.offline_log_dirs.iter().map(|d| d.0).collect(),
    };
    controller
        .run(move |image, heartbeats, ctx| {
            let (records, reply) = broker_heartbeat(
                image,
                ctx.config,
                &hb,
                heartbeats,
                ctx.now_ms,
                ctx.committed_offset,
            );
            (
                records,
                BrokerHeartbeatResponse {
                    error_code: reply.error.code(),
                    is_caught_up: reply.is_caught_up,
                    is_fenced: reply.is_fenced,
                    should_shut_down: reply.should_shutdown,
                    ..Default::default()
                },
            )
        })
        .await
}

pub async fn start(
    broker: Arc<Broker>,
    header: RequestHeader,
    request: BrokerHeartbeatRequest,
    conn: Arc<ConnectionContext>,
) -> ResponseFuture {
    // Kafka: CLUSTER_ACTION on the cluster, CLUSTER_AUTHORIZATION_FAILED otherwise.
    if let Some(refused) = super::common::authz::refuse_cluster(
        &broker,
        &conn,
        &header,
        crate::protocol::acl::operation::CLUSTER_ACTION,
        |r: &mut crate::protocol::messages::broker_heartbeat_response::BrokerHeartbeatResponse,
         code| r.error_code = code.code(),
    ) {
        return refused;
    }
    super::controller_only(&broker, header, request, on_controller, error)
}
