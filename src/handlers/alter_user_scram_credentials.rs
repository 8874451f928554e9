//! AlterUserScramCredentials (key 51), version 0 (KIP-554): upserts (salt and salted password
//! computed by the client, stored as keys derived from them) and deletions of users' SCRAM
//! credentials, committed by the active controller (forwarded from other brokers, KIP-590)
//! as UserScramCredential / RemoveUserScramCredential records. The answer waits until this
//! broker's image shows the accepted changes, so a login right after it finds the user.
use super::ConnectionContext;
use std::sync::Arc;

use super::{later, Broker, ResponseFuture};
use crate::controller::scram::{alter_user_scram_credentials, ScramAlteration, ScramMechanism};
use crate::controller::service::{ControllerError, ControllerService};
use crate::error::ErrorCode;
use crate::protocol::header::RequestHeader;
use crate::protocol::messages::alter_user_scram_credentials_request::AlterUserScramCredentialsRequest;
use crate::protocol::messages::alter_user_scram_credentials_response::*;

fn alterations(request: &AlterUserScramCredentialsRequest) -> Vec<ScramAlteration> {
    let mut out: Vec<ScramAlteration> = request
        .deletions
        .iter()
        .map(|d| ScramAlteration::Delete {
            name: d.name.clone(),
            mechanism: d.mechanism,
        })
        .collect();
    out.extend(request.upsertions.iter().map(|u| ScramAlteration::Upsert {
        name: u.name.clone(),
        mechanism: u.mechanism,
        iterations: u.iterations,
        salt: u.salt.to_vec(),
        salted_password: u.salted_password.to_vec(),
    }));
    out
}

/// The active controller's side.
pub async fn on_controller(
    controller: Arc<ControllerService>,
    request: AlterUserScramCredentialsRequest,
) -> Result<AlterUserScramCredentialsResponse, ControllerError> {
    controller
        .run(move |image, _, _| {
            let (records, results) =
                alter_user_scram_credentials(&image.scram, &alterations(&request));
            (
                records,
                AlterUserScramCredentialsResponse {
                    results: results
                        .into_iter()
                        .map(|(user, code, message)| AlterUserScramCredentialsResult {
                            user,
                            error_code: code.code(),
                            error_message: message,
                            ..Default::default()
                        })
                        .collect(),
                    ..Default::default()
                },
            )
        })
        .await
}

pub async fn start(
    broker: Arc<Broker>,
    header: RequestHeader,
    request: AlterUserScramCredentialsRequest,
    conn: Arc<ConnectionContext>,
) -> ResponseFuture {
    // Kafka's controller: ALTER on the cluster, else every user's result is
    // CLUSTER_AUTHORIZATION_FAILED.
    let authorized = super::common::authz::Authz::new(&broker, &conn)
        .cluster(crate::protocol::acl::operation::ALTER);
    let cluster = broker.cluster.clone();
    let version = header.api_version;
    later(header, async move {
        let mut users: Vec<String> = Vec::new();
        for a in alterations(&request) {
            let name = match &a {
                ScramAlteration::Delete { name, .. } | ScramAlteration::Upsert { name, .. } => name,
            };
            if !users.contains(name) {
                users.push(name.clone());
            }
        }
        let failed = move |code: ErrorCode| AlterUserScramCredentialsResponse {
            results: users
                .iter()
                .map(|u| AlterUserScramCredentialsResult {
                    user: u.clone(),
                    error_code: code.code(),
                    error_message: Some(code.message()),
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        };
        if !authorized {
            return Some(failed(ErrorCode::CLUSTER_AUTHORIZATION_FAILED));
        }
        let expected = alterations(&request);
        let response = cluster
            .controller_op(
                AlterUserScramCredentialsRequest::API_KEY,
                version,
                request,
                on_controller,
                failed,
            )
            .await;
        // Wait for this broker's image to show every accepted change.
        let accepted: Vec<ScramAlteration> = expected
            .into_iter()
            .filter(|a| {
                let name = match a {
                    ScramAlteration::Delete { name, .. } | ScramAlteration::Upsert { name, .. } => {
                        name
                    }
                };
                response
                    .results
                    .iter()
                    .any(|r| &r.user == name && r.error_code == 0)
            })
            .collect();
        if !accepted.is_empty() {
            cluster
                .wait_until(|image| {
                    accepted.iter().all(|a| match a {
                        ScramAlteration::Delete { name, mechanism } => {
                            ScramMechanism::from_id(*mechanism)
                                .is_none_or(|m| image.scram.credential(name, m).is_none())
                        }
                        ScramAlteration::Upsert {
                            name,
                            mechanism,
                            salt,
                            iterations,
                            ..
                        } => ScramMechanism::from_id(*mechanism).is_none_or(|m| {
                            image
                                .scram
                                .credential(name, m)
                                .is_some_and(|c| &c.salt == salt && c.iterations == *iterations)
                        }),
                    })
                })
                .await;
        }
        Some(response)
    })
}
