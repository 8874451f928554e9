//! SASL on a SASL_PLAINTEXT listener over real TCP (issue 13, sasl slice): each mechanism
//! succeeds and fails as Kafka's `SaslServerAuthenticator` answers, requests before
//! authentication close the connection, a stalled exchange hits its deadline, sessions expire
//! (KIP-368), and SCRAM credentials are managed with the admin APIs and survive a restart.
mod common;

use std::time::Duration;

use common::{api_call, Client, TestBroker};
use strata::protocol::messages::alter_user_scram_credentials_request::{
    AlterUserScramCredentialsRequest, ScramCredentialUpsertion,
};
use strata::protocol::messages::describe_user_scram_credentials_request::{
    DescribeUserScramCredentialsRequest, UserName,
};
use strata::protocol::messages::metadata_request::MetadataRequest;
use strata::protocol::messages::sasl_authenticate_request::SaslAuthenticateRequest;
use strata::protocol::messages::sasl_handshake_request::SaslHandshakeRequest;
use strata::security::sasl::scram::{ScramClient, ScramMechanism};

const PLAIN_JAAS: &str = "org.apache.kafka.common.security.plain.PlainLoginModule required \
    username=\"admin\" password=\"admin-secret\" user_admin=\"admin-secret\" \
    user_alice=\"alice-secret\";";

async fn sasl_broker(extra: &[(&str, &str)]) -> TestBroker {
    let mut settings: Vec<(&str, &str)> = vec![
        (
            "listeners",
            "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
        ),
        ("sasl.enabled.mechanisms", "PLAIN,SCRAM-SHA-512,OAUTHBEARER"),
        (
            "listener.name.sasl_plaintext.plain.sasl.jaas.config",
            PLAIN_JAAS,
        ),
    ];
    settings.extend_from_slice(extra);
    TestBroker::start(&settings).await
}

fn sasl_addr(b: &TestBroker) -> std::net::SocketAddr {
    b.running.as_ref().unwrap().local_addrs[1]
}

async fn handshake(c: &mut Client, mechanism: &str) -> (i16, Vec<String>) {
    let r = api_call!(
        c,
        sasl_handshake_request::SaslHandshakeRequest,
        sasl_handshake_response::SaslHandshakeResponse,
        1,
        SaslHandshakeRequest {
            mechanism: mechanism.into()
        }
    );
    (r.error_code, r.mechanisms)
}

async fn authenticate(
    c: &mut Client,
    token: &[u8],
) -> strata::protocol::messages::sasl_authenticate_response::SaslAuthenticateResponse {
    api_call!(
        c,
        sasl_authenticate_request::SaslAuthenticateRequest,
        sasl_authenticate_response::SaslAuthenticateResponse,
        2,
        SaslAuthenticateRequest {
            auth_bytes: bytes::Bytes::copy_from_slice(token),
            ..Default::default()
        }
    )
}

async fn metadata_ok(c: &mut Client) -> bool {
    let r = api_call!(
        c,
        metadata_request::MetadataRequest,
        metadata_response::MetadataResponse,
        12,
        MetadataRequest {
            topics: Some(vec![]),
            ..Default::default()
        }
    );
    !r.brokers.is_empty()
}

async fn scram_login(addr: std::net::SocketAddr, user: &str, password: &str) -> (Client, i16) {
    let mut c = Client::connect(addr).await;
    assert_eq!(handshake(&mut c, "SCRAM-SHA-512").await.0, 0);
    let mut client = ScramClient::new(ScramMechanism::Sha512, user, password);
    let first = authenticate(&mut c, &client.client_first()).await;
    if first.error_code != 0 {
        return (c, first.error_code);
    }
    let fin = client.client_final(&first.auth_bytes).unwrap();
    let done = authenticate(&mut c, &fin).await;
    if done.error_code == 0 {
        client.verify_server_final(&done.auth_bytes).unwrap();
    }
    (c, done.error_code)
}

#[tokio::test]
async fn plain_succeeds_and_fails_as_kafka_answers() {
    let b = sasl_broker(&[]).await;
    let mut c = Client::connect(sasl_addr(&b)).await;
    let (code, mechanisms) = handshake(&mut c, "PLAIN").await;
    assert_eq!(code, 0);
    assert_eq!(mechanisms, vec!["PLAIN", "SCRAM-SHA-512", "OAUTHBEARER"]);
    let r = authenticate(&mut c, b"\0alice\0alice-secret").await;
    assert_eq!((r.error_code, r.error_message.as_deref()), (0, None));
    assert_eq!(r.session_lifetime_ms, 0);
    assert!(metadata_ok(&mut c).await);

    let mut c = Client::connect(sasl_addr(&b)).await;
    handshake(&mut c, "PLAIN").await;
    let r = authenticate(&mut c, b"\0alice\0wrong").await;
    assert_eq!(r.error_code, 58, "SASL_AUTHENTICATION_FAILED");
    assert_eq!(
        r.error_message.as_deref(),
        Some("Authentication failed: Invalid username or password")
    );
    assert!(
        c.is_closed().await,
        "a failed authentication closes the connection"
    );

    // GSSAPI is not enabled: UNSUPPORTED_SASL_MECHANISM with the enabled list, then closed.
    let mut c = Client::connect(sasl_addr(&b)).await;
    let (code, mechanisms) = handshake(&mut c, "GSSAPI").await;
    assert_eq!(code, 33);
    assert_eq!(mechanisms.len(), 3);
    assert!(c.is_closed().await);

    // The PLAINTEXT listener answers the SASL APIs ILLEGAL_SASL_STATE.
    let mut c = b.client().await;
    assert_eq!(handshake(&mut c, "PLAIN").await.0, 34);
}

#[tokio::test]
async fn requests_before_authentication_close_the_connection() {
    let b = sasl_broker(&[]).await;
    // ApiVersions is served before the handshake ...
    let mut c = Client::connect(sasl_addr(&b)).await;
    let r = api_call!(
        c,
        api_versions_request::ApiVersionsRequest,
        api_versions_response::ApiVersionsResponse,
        2,
        strata::protocol::messages::api_versions_request::ApiVersionsRequest::default()
    );
    assert_eq!(r.error_code, 0);
    assert!(r
        .api_keys
        .iter()
        .any(|k| k.api_key == 36 && k.max_version == 2));
    // ... Metadata is not.
    let mut c2 = Client::connect(sasl_addr(&b)).await;
    let mut body = bytes::BytesMut::new();
    use strata::protocol::codec::Encode;
    strata::protocol::header::RequestHeader {
        api_key: 3,
        api_version: 12,
        correlation_id: 1,
        client_id: Some("t".into()),
        unknown_tagged_fields: vec![],
    }
    .encode(&mut body, 2);
    MetadataRequest::default().encode(&mut body, 12);
    use tokio::io::AsyncWriteExt;
    c2.stream.write_i32(body.len() as i32).await.unwrap();
    c2.stream.write_all(&body).await.unwrap();
    assert!(c2.is_closed().await);
    // Nor between the handshake and the authentication.
    handshake(&mut c, "PLAIN").await;
    c.stream.write_i32(body.len() as i32).await.unwrap();
    c.stream.write_all(&body).await.unwrap();
    assert!(c.is_closed().await);
}

#[tokio::test]
async fn a_stalled_exchange_hits_its_deadline() {
    let b = sasl_broker(&[("strata.request.read.timeout.ms", "500")]).await;
    let mut c = Client::connect(sasl_addr(&b)).await;
    handshake(&mut c, "SCRAM-SHA-512").await;
    // The client stops here; the broker closes the connection by the deadline.
    assert!(c.is_closed().await, "stalled SASL exchange still open");
    // A plaintext connection is not subject to it.
    let mut p = b.client().await;
    tokio::time::sleep(Duration::from_millis(700)).await;
    assert!(metadata_ok(&mut p).await);
}

#[tokio::test]
async fn sessions_expire_without_re_authentication() {
    let b = sasl_broker(&[("connections.max.reauth.ms", "1000")]).await;
    let mut c = Client::connect(sasl_addr(&b)).await;
    handshake(&mut c, "PLAIN").await;
    let r = authenticate(&mut c, b"\0alice\0alice-secret").await;
    assert_eq!(r.error_code, 0);
    assert_eq!(r.session_lifetime_ms, 1000);
    assert!(metadata_ok(&mut c).await);
    // Re-authenticating in time keeps the connection ...
    assert_eq!(handshake(&mut c, "PLAIN").await.0, 0);
    let r = authenticate(&mut c, b"\0alice\0alice-secret").await;
    assert_eq!((r.error_code, r.session_lifetime_ms), (0, 1000));
    // ... as another principal it is refused.
    assert_eq!(handshake(&mut c, "PLAIN").await.0, 0);
    let r = authenticate(&mut c, b"\0admin\0admin-secret").await;
    assert_eq!(r.error_code, 58);
    assert_eq!(
        r.error_message.as_deref(),
        Some("Cannot change principals during re-authentication from User:alice: User:admin")
    );
    assert!(c.is_closed().await);

    // Not re-authenticated in time: the next request closes the connection.
    let mut c = Client::connect(sasl_addr(&b)).await;
    handshake(&mut c, "PLAIN").await;
    authenticate(&mut c, b"\0alice\0alice-secret").await;
    tokio::time::sleep(Duration::from_millis(1200)).await;
    let mut body = bytes::BytesMut::new();
    use strata::protocol::codec::Encode;
    strata::protocol::header::RequestHeader {
        api_key: 3,
        api_version: 12,
        correlation_id: 9,
        client_id: Some("t".into()),
        unknown_tagged_fields: vec![],
    }
    .encode(&mut body, 2);
    MetadataRequest::default().encode(&mut body, 12);
    use tokio::io::AsyncWriteExt;
    c.stream.write_i32(body.len() as i32).await.unwrap();
    c.stream.write_all(&body).await.unwrap();
    assert!(c.is_closed().await, "expired session still served");
}

#[tokio::test]
async fn oauthbearer_unsecured_tokens() {
    use base64::Engine;
    let b = sasl_broker(&[]).await;
    let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD;
    let exp = common::now_ms() / 1000 + 3600;
    let token = format!(
        "{}.{}.",
        b64.encode(r#"{"alg":"none"}"#),
        b64.encode(format!(r#"{{"sub":"alice","exp":{exp}}}"#))
    );
    let mut c = Client::connect(sasl_addr(&b)).await;
    assert_eq!(handshake(&mut c, "OAUTHBEARER").await.0, 0);
    let r = authenticate(
        &mut c,
        format!("n,,\u{1}auth=Bearer {token}\u{1}\u{1}").as_bytes(),
    )
    .await;
    assert_eq!(r.error_code, 0);
    // The token's expiry bounds the session.
    assert!(r.session_lifetime_ms > 3_500_000 && r.session_lifetime_ms <= 3_600_000);
    assert!(metadata_ok(&mut c).await);

    let expired = format!(
        "{}.{}.",
        b64.encode(r#"{"alg":"none"}"#),
        b64.encode(r#"{"sub":"alice","exp":1000}"#)
    );
    let mut c = Client::connect(sasl_addr(&b)).await;
    handshake(&mut c, "OAUTHBEARER").await;
    let r = authenticate(
        &mut c,
        format!("n,,\u{1}auth=Bearer {expired}\u{1}\u{1}").as_bytes(),
    )
    .await;
    assert_eq!(r.error_code, 0);
    assert_eq!(&r.auth_bytes[..], br#"{"status":"invalid_token"}"#);
    let r = authenticate(&mut c, &[1]).await;
    assert_eq!(r.error_code, 58);
    assert!(c.is_closed().await);
}

#[tokio::test]
async fn scram_credentials_via_the_admin_apis_survive_a_restart() {
    let b = sasl_broker(&[]).await;
    // No credential yet: SCRAM fails with Kafka's generic message.
    let (_, code) = scram_login(sasl_addr(&b), "bob", "bob-secret").await;
    assert_eq!(code, 58);

    let salt = b"0123456789abcdef".to_vec();
    let salted = ScramMechanism::Sha512.salted_password(b"bob-secret", &salt, 8192);
    let mut admin = b.client().await;
    let r = api_call!(
        admin,
        alter_user_scram_credentials_request::AlterUserScramCredentialsRequest,
        alter_user_scram_credentials_response::AlterUserScramCredentialsResponse,
        0,
        AlterUserScramCredentialsRequest {
            upsertions: vec![
                ScramCredentialUpsertion {
                    name: "bob".into(),
                    mechanism: 2,
                    iterations: 8192,
                    salt: salt.clone().into(),
                    salted_password: salted.clone().into(),
                    ..Default::default()
                },
                ScramCredentialUpsertion {
                    name: "weak".into(),
                    mechanism: 2,
                    iterations: 100,
                    salt: salt.clone().into(),
                    salted_password: salted.clone().into(),
                    ..Default::default()
                },
            ],
            ..Default::default()
        }
    );
    let results: Vec<(String, i16)> = r
        .results
        .iter()
        .map(|x| (x.user.clone(), x.error_code))
        .collect();
    assert_eq!(results, vec![("bob".into(), 0), ("weak".into(), 93)]);

    let describe = |users: Option<Vec<&str>>| DescribeUserScramCredentialsRequest {
        users: users.map(|u| {
            u.into_iter()
                .map(|n| UserName {
                    name: n.into(),
                    ..Default::default()
                })
                .collect()
        }),
        ..Default::default()
    };
    let r = api_call!(
        admin,
        describe_user_scram_credentials_request::DescribeUserScramCredentialsRequest,
        describe_user_scram_credentials_response::DescribeUserScramCredentialsResponse,
        0,
        describe(None)
    );
    assert_eq!(r.results.len(), 1);
    assert_eq!(r.results[0].user, "bob");
    assert_eq!(
        (
            r.results[0].credential_infos[0].mechanism,
            r.results[0].credential_infos[0].iterations
        ),
        (2, 8192)
    );

    let (mut c, code) = scram_login(sasl_addr(&b), "bob", "bob-secret").await;
    assert_eq!(code, 0);
    assert!(metadata_ok(&mut c).await);
    let (_, code) = scram_login(sasl_addr(&b), "bob", "wrong").await;
    assert_eq!(code, 58);

    drop(c);
    let b = b
        .restart(&[
            (
                "listeners",
                "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
            ),
            ("sasl.enabled.mechanisms", "PLAIN,SCRAM-SHA-512,OAUTHBEARER"),
            (
                "listener.name.sasl_plaintext.plain.sasl.jaas.config",
                PLAIN_JAAS,
            ),
        ])
        .await;
    let (mut c, code) = scram_login(sasl_addr(&b), "bob", "bob-secret").await;
    assert_eq!(code, 0, "the credential survived the restart");
    assert!(metadata_ok(&mut c).await);
    let mut admin = b.client().await;
    let r = api_call!(
        admin,
        describe_user_scram_credentials_request::DescribeUserScramCredentialsRequest,
        describe_user_scram_credentials_response::DescribeUserScramCredentialsResponse,
        0,
        describe(Some(vec!["bob", "nobody"]))
    );
    let codes: Vec<(String, i16)> = r
        .results
        .iter()
        .map(|x| (x.user.clone(), x.error_code))
        .collect();
    assert_eq!(codes, vec![("bob".into(), 0), ("nobody".into(), 91)]);
}

/// Kafka answers Metadata with the endpoints of the listener the request came on: a client on
/// the SASL listener must be sent to SASL ports, not to the first (PLAINTEXT) listener, where
/// its SaslHandshake would be refused (librdkafka then fails every connection).
#[tokio::test]
async fn metadata_names_the_brokers_on_the_listener_it_came_on() {
    let b = sasl_broker(&[]).await;
    let addrs = b.running.as_ref().unwrap().local_addrs.clone();
    let brokers_seen_by = |r: &strata::protocol::messages::metadata_response::MetadataResponse| {
        r.brokers.iter().map(|b| b.port).collect::<Vec<_>>()
    };
    let metadata = MetadataRequest {
        topics: Some(vec![]),
        ..Default::default()
    };
    let mut plain = Client::connect(addrs[0]).await;
    let r = api_call!(
        plain,
        metadata_request::MetadataRequest,
        metadata_response::MetadataResponse,
        12,
        metadata.clone()
    );
    assert_eq!(brokers_seen_by(&r), vec![addrs[0].port() as i32]);

    let mut sasl = Client::connect(addrs[1]).await;
    assert_eq!(handshake(&mut sasl, "PLAIN").await.0, 0);
    assert_eq!(
        authenticate(&mut sasl, b"\0alice\0alice-secret")
            .await
            .error_code,
        0
    );
    let r = api_call!(
        sasl,
        metadata_request::MetadataRequest,
        metadata_response::MetadataResponse,
        12,
        metadata
    );
    assert_eq!(brokers_seen_by(&r), vec![addrs[1].port() as i32]);
}
