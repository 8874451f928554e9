//! DescribeUserScramCredentials (key 50), version 0 (KIP-554): the mechanisms and iteration
//! counts of users' SCRAM credentials, read from this broker's metadata image (never the
//! salts or keys). No users (null or empty): every user with a credential. A named user
//! without one is RESOURCE_NOT_FOUND; a user named twice is DUPLICATE_RESOURCE, as Kafka's
//! `ScramControlManager.describeScramCredentials` answers.
use super::ConnectionContext;
use std::collections::BTreeMap;
use std::sync::Arc;

use super::{ready, Broker, ResponseFuture};
use crate::controller::scram::ScramCredentials;
use crate::error::ErrorCode;
use crate::protocol::header::RequestHeader;
use crate::protocol::messages::describe_user_scram_credentials_request::DescribeUserScramCredentialsRequest;
use crate::protocol::messages::describe_user_scram_credentials_response::*;

pub fn handle(
    credentials: &ScramCredentials,
    request: &DescribeUserScramCredentialsRequest,
) -> DescribeUserScramCredentialsResponse {
    let describe = |user: &str| {
        let infos: Vec<CredentialInfo> = credentials
            .users
            .get(user)
            .map(|m| {
                m.iter()
                    .map(|(mechanism, c)| CredentialInfo {
                        mechanism: *mechanism,
                        iterations: c.iterations,
                        ..Default::default()
                    })
                    .collect()
            })
            .unwrap_or_default();
        DescribeUserScramCredentialsResult {
            user: user.to_string(),
            error_code: if infos.is_empty() {
                ErrorCode::RESOURCE_NOT_FOUND.code()
            } else {
                0
            },
            error_message: infos
                .is_empty()
                .then(|| "Attempt to describe a user credential that does not exist".into()),
            credential_infos: infos,
            ..Default::default()
        }
    };
    let results = match request.users.as_deref() {
        None | Some([]) => credentials.users.keys().map(|u| describe(u)).collect(),
        Some(users) => {
            let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
            for u in users {
                *counts.entry(u.name.as_str()).or_default() += 1;
            }
            let mut done = Vec::new();
            let mut out = Vec::new();
            for u in users {
                if done.contains(&u.name.as_str()) {
                    continue;
                }
                done.push(u.name.as_str());
                if counts[u.name.as_str()] > 1 {
                    out.push(DescribeUserScramCredentialsResult {
                        user: u.name.clone(),
                        error_code: ErrorCode::DUPLICATE_RESOURCE.code(),
                        error_message: Some(
                            "Cannot describe SCRAM credentials for the same user twice in a \
                             single request"
                                .into(),
                        ),
                        ..Default::default()
                    });
                } else {
                    out.push(describe(&u.name));
                }
            }
            out
        }
    };
    DescribeUserScramCredentialsResponse {
        results,
        ..Default::default()
    }
}

pub async fn start(
    broker: Arc<Broker>,
    header: RequestHeader,
    request: DescribeUserScramCredentialsRequest,
    conn: Arc<ConnectionContext>,
) -> ResponseFuture {
    // Kafka: DESCRIBE on the cluster, else the whole request is CLUSTER_AUTHORIZATION_FAILED.
    if let Some(refused) = super::common::authz::refuse_cluster(
        &broker,
        &conn,
        &header,
        crate::protocol::acl::operation::DESCRIBE,
        |r: &mut DescribeUserScramCredentialsResponse, code| {
            r.error_code = code.code();
            r.error_message = Some(code.message());
        },
    ) {
        return refused;
    }
    let image = broker.cluster.image();
    ready(header, Some(handle(&image.scram, &request)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::controller::scram::{ScramCredential, ScramMechanism};
    use crate::protocol::messages::describe_user_scram_credentials_request::UserName;

    #[test]
    fn describes_mechanisms_and_iterations_with_kafkas_errors() {
        let mut creds = ScramCredentials::default();
        creds.apply(&crate::controller::scram::credential_record(
            "alice",
            ScramMechanism::Sha512,
            &ScramCredential::from_password(ScramMechanism::Sha512, "x", 8192),
        ));
        let all = handle(&creds, &DescribeUserScramCredentialsRequest::default());
        assert_eq!(all.results.len(), 1);
        assert_eq!(all.results[0].user, "alice");
        assert_eq!(all.results[0].credential_infos[0].mechanism, 2);
        assert_eq!(all.results[0].credential_infos[0].iterations, 8192);
        let name = |n: &str| UserName {
            name: n.into(),
            ..Default::default()
        };
        let r = handle(
            &creds,
            &DescribeUserScramCredentialsRequest {
                users: Some(vec![
                    name("bob"),
                    name("alice"),
                    name("carol"),
                    name("carol"),
                ]),
                ..Default::default()
            },
        );
        let codes: Vec<(&str, i16)> = r
            .results
            .iter()
            .map(|x| (x.user.as_str(), x.error_code))
            .collect();
        assert_eq!(
            codes,
            vec![
                ("bob", ErrorCode::RESOURCE_NOT_FOUND.code()),
                ("alice", 0),
                ("carol", ErrorCode::DUPLICATE_RESOURCE.code())
            ]
        );
    }
}
