//! CreatePartitions (key 37), versions 0-3: grows a topic's partition count; shrinking or
//! keeping the count is INVALID_PARTITIONS, as Kafka. The active controller
//! places the new partitions ([`on_controller`]); brokers forward.
use super::ConnectionContext;
use std::sync::Arc;

use super::{later, Broker, ResponseFuture};
use crate::controller::service::{ControllerError, ControllerService};
use crate::controller::{create_partitions, CreatePartitionsSpec};
use crate::error::ErrorCode;
use crate::protocol::header::RequestHeader;
use crate::protocol::messages::create_partitions_request::CreatePartitionsRequest;
use crate::protocol::messages::create_partitions_response::*;

pub const CREATE_PARTITIONS_KEY: i16 = 37;

/// The active controller's side: new partitions placed like at creation.
pub async fn on_controller(
    controller: Arc<ControllerService>,
    request: CreatePartitionsRequest,
) -> Result<CreatePartitionsResponse, ControllerError> {
    controller
        .run(move |image, _, _| {
            let specs: Vec<CreatePartitionsSpec> = request
                .topics
                .iter()
                .map(|t| CreatePartitionsSpec {
                    name: t.name.clone(),
                    count: t.count,
                    assignments: t
                        .assignments
                        .as_ref()
                        .map(|a| a.iter().map(|x| x.broker_ids.clone()).collect()),
                })
                .collect();
            let (records, results) = create_partitions(image, &specs, request.validate_only);
            let results = results
                .into_iter()
                .map(|(name, code, message)| CreatePartitionsTopicResult {
                    name,
                    error_code: code.code(),
                    error_message: message,
                    ..Default::default()
                })
                .collect();
            (
                records,
                CreatePartitionsResponse {
                    throttle_time_ms: 0,
                    results,
                    ..Default::default()
                },
            )
        })
        .await
}

pub async fn start(
    broker: Arc<Broker>,
    header: RequestHeader,
    request: CreatePartitionsRequest,
    _conn: Arc<ConnectionContext>,
) -> ResponseFuture {
    let cluster = broker.cluster.clone();
    let version = header.api_version;
    {
        let names: Vec<String> = request.topics.iter().map(|t| t.name.clone()).collect();
        let counts: Vec<(String, i32)> = request
            .topics
            .iter()
            .filter(|_| !request.validate_only)
            .map(|t| (t.name.clone(), t.count))
            .collect();
        return later(header, async move {
            let failed = |code: ErrorCode| CreatePartitionsResponse {
                results: names
                    .iter()
                    .map(|n| CreatePartitionsTopicResult {
                        name: n.clone(),
                        error_code: code.code(),
                        error_message: Some(code.message()),
                        ..Default::default()
                    })
                    .collect(),
                ..Default::default()
            };
            let response = cluster
                .controller_op(
                    CREATE_PARTITIONS_KEY,
                    version,
                    request,
                    on_controller,
                    failed,
                )
                .await;
            let grown: Vec<(String, usize)> = response
                .results
                .iter()
                .filter(|r| r.error_code == 0)
                .filter_map(|r| {
                    counts
                        .iter()
                        .find(|(n, _)| *n == r.name)
                        .map(|(n, c)| (n.clone(), *c as usize))
                })
                .collect();
            cluster
                .wait_until(|image| {
                    grown.iter().all(|(n, c)| {
                        image
                            .topics
                            .get(n)
                            .map_or(true, |t| t.partitions.len() >= *c)
                    })
                })
                .await;
            Some(response)
        });
    }
}
