//! Delegation tokens (KIP-48) on an in-process broker: a SCRAM user creates a token over a
//! SASL_PLAINTEXT connection, a new connection logs in with it (SCRAM `tokenauth=true`, token
//! id and base64 HMAC) as the token's owner and may not manage tokens, the token survives a
//! restart, is renewed, expired and then refused at login and swept by the controller; the
//! APIs are refused over PLAINTEXT and without a secret; creating for another owner and
//! describing others' tokens follow Kafka's ACLs.
mod common;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use base64::Engine;
use bytes::{Buf, Bytes, BytesMut};
use common::authz::{acl, grant, AUTHORIZER, SUPER_USERS};
use common::{api_call, Client, TestBroker};
use hmac::Mac;
use strata::broker::Broker;
use strata::config::SecurityProtocol;
use strata::handlers::{ConnectionContext, ListenerScope, Outcome};
use strata::protocol::acl::{operation as op, pattern_type, resource_type as rt};
use strata::protocol::codec::{Decode, Encode};
use strata::protocol::header::{request_header_version, response_header_version, RequestHeader};
use strata::protocol::messages::alter_user_scram_credentials_request::{
    AlterUserScramCredentialsRequest, ScramCredentialUpsertion,
};
use strata::protocol::messages::create_delegation_token_request::{
    CreatableRenewers, CreateDelegationTokenRequest,
};
use strata::protocol::messages::create_delegation_token_response::CreateDelegationTokenResponse;
use strata::protocol::messages::describe_delegation_token_request::{
    DescribeDelegationTokenOwner, DescribeDelegationTokenRequest,
};
use strata::protocol::messages::describe_delegation_token_response::DescribeDelegationTokenResponse;
use strata::protocol::messages::expire_delegation_token_request::ExpireDelegationTokenRequest;
use strata::protocol::messages::metadata_request::MetadataRequest;
use strata::protocol::messages::renew_delegation_token_request::RenewDelegationTokenRequest;
use strata::protocol::messages::sasl_authenticate_request::SaslAuthenticateRequest;
use strata::protocol::messages::sasl_handshake_request::SaslHandshakeRequest;
use strata::security::sasl::scram::{ScramClient, ScramMechanism};
use strata::security::KafkaPrincipal;

const SECRET: &str = "the-shared-token-secret";
const HOUR: i64 = 3_600_000;

fn settings(secret: bool) -> Vec<(&'static str, &'static str)> {
    let mut s = vec![
        (
            "listeners",
            "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
        ),
        ("sasl.enabled.mechanisms", "SCRAM-SHA-256,SCRAM-SHA-512"),
        ("delegation.token.expiry.time.ms", "3600000"),
        ("delegation.token.max.lifetime.ms", "7200000"),
        ("delegation.token.expiry.check.interval.ms", "200"),
    ];
    if secret {
        s.push(("delegation.token.secret.key", SECRET));
    }
    s
}

fn sasl_addr(b: &TestBroker) -> SocketAddr {
    b.running.as_ref().unwrap().local_addrs[1]
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

/// HMAC-SHA512 of the token id under the secret, computed here as Kafka documents it.
fn expected_hmac(token_id: &str) -> Vec<u8> {
    let mut mac = hmac::Hmac::<sha2::Sha512>::new_from_slice(SECRET.as_bytes()).unwrap();
    mac.update(token_id.as_bytes());
    mac.finalize().into_bytes().to_vec()
}

async fn add_user(b: &TestBroker, user: &str, password: &str) {
    let salt = b"0123456789abcdef".to_vec();
    let salted = ScramMechanism::Sha512.salted_password(password.as_bytes(), &salt, 4096);
    let mut admin = b.client().await;
    let r = api_call!(
        admin,
        alter_user_scram_credentials_request::AlterUserScramCredentialsRequest,
        alter_user_scram_credentials_response::AlterUserScramCredentialsResponse,
        0,
        AlterUserScramCredentialsRequest {
            upsertions: vec![ScramCredentialUpsertion {
                name: user.into(),
                mechanism: 2,
                iterations: 4096,
                salt: salt.into(),
                salted_password: salted.into(),
                ..Default::default()
            }],
            ..Default::default()
        }
    );
    assert_eq!(r.results[0].error_code, 0);
}

/// A SCRAM login on the SASL listener: the connection and SaslAuthenticate's error code.
async fn login(addr: SocketAddr, client: ScramClient, mechanism: &str) -> (Client, i16) {
    let mut c = Client::connect(addr).await;
    let r = api_call!(
        c,
        sasl_handshake_request::SaslHandshakeRequest,
        sasl_handshake_response::SaslHandshakeResponse,
        1,
        SaslHandshakeRequest {
            mechanism: mechanism.into()
        }
    );
    assert_eq!(r.error_code, 0);
    let mut client = client;
    let first = api_call!(
        c,
        sasl_authenticate_request::SaslAuthenticateRequest,
        sasl_authenticate_response::SaslAuthenticateResponse,
        2,
        SaslAuthenticateRequest {
            auth_bytes: Bytes::from(client.client_first()),
            ..Default::default()
        }
    );
    if first.error_code != 0 {
        return (c, first.error_code);
    }
    let fin = client.client_final(&first.auth_bytes).unwrap();
    let done = api_call!(
        c,
        sasl_authenticate_request::SaslAuthenticateRequest,
        sasl_authenticate_response::SaslAuthenticateResponse,
        2,
        SaslAuthenticateRequest {
            auth_bytes: Bytes::from(fin),
            ..Default::default()
        }
    );
    if done.error_code == 0 {
        client.verify_server_final(&done.auth_bytes).unwrap();
    }
    (c, done.error_code)
}

async fn user_login(b: &TestBroker, user: &str, password: &str) -> Client {
    let client = ScramClient::new(ScramMechanism::Sha512, user, password);
    let (c, code) = login(sasl_addr(b), client, "SCRAM-SHA-512").await;
    assert_eq!(code, 0);
    c
}

/// A token login with SCRAM-SHA-256: user name the token id, password the base64 HMAC.
async fn token_login(b: &TestBroker, token_id: &str, hmac: &[u8]) -> (Client, i16) {
    let password = base64::engine::general_purpose::STANDARD.encode(hmac);
    let client = ScramClient::new(ScramMechanism::Sha256, token_id, &password).with_token_auth();
    login(sasl_addr(b), client, "SCRAM-SHA-256").await
}

async fn create(
    c: &mut Client,
    request: CreateDelegationTokenRequest,
) -> CreateDelegationTokenResponse {
    api_call!(
        c,
        create_delegation_token_request::CreateDelegationTokenRequest,
        create_delegation_token_response::CreateDelegationTokenResponse,
        3,
        request
    )
}

async fn describe(c: &mut Client) -> DescribeDelegationTokenResponse {
    api_call!(
        c,
        describe_delegation_token_request::DescribeDelegationTokenRequest,
        describe_delegation_token_response::DescribeDelegationTokenResponse,
        3,
        DescribeDelegationTokenRequest {
            owners: None,
            ..Default::default()
        }
    )
}

async fn renew(c: &mut Client, hmac: &[u8], period: i64) -> (i16, i64) {
    let r = api_call!(
        c,
        renew_delegation_token_request::RenewDelegationTokenRequest,
        renew_delegation_token_response::RenewDelegationTokenResponse,
        2,
        RenewDelegationTokenRequest {
            hmac: Bytes::copy_from_slice(hmac),
            renew_period_ms: period,
            ..Default::default()
        }
    );
    (r.error_code, r.expiry_timestamp_ms)
}

async fn expire(c: &mut Client, hmac: &[u8], period: i64) -> (i16, i64) {
    let r = api_call!(
        c,
        expire_delegation_token_request::ExpireDelegationTokenRequest,
        expire_delegation_token_response::ExpireDelegationTokenResponse,
        2,
        ExpireDelegationTokenRequest {
            hmac: Bytes::copy_from_slice(hmac),
            expiry_time_period_ms: period,
            ..Default::default()
        }
    );
    (r.error_code, r.expiry_timestamp_ms)
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

fn renewer(name: &str) -> CreatableRenewers {
    CreatableRenewers {
        principal_type: "User".into(),
        principal_name: name.into(),
        ..Default::default()
    }
}

#[tokio::test]
async fn a_token_authenticates_its_owner_until_it_expires() {
    let b = TestBroker::start(&settings(true)).await;
    add_user(&b, "alice", "alice-secret").await;

    // PLAINTEXT: Kafka refuses token requests on unauthenticated connections.
    let mut plain = b.client().await;
    let r = create(&mut plain, CreateDelegationTokenRequest::default()).await;
    assert_eq!(r.error_code, 64, "DELEGATION_TOKEN_REQUEST_NOT_ALLOWED");
    assert_eq!(
        (r.principal_name.as_str(), r.max_timestamp_ms),
        ("ANONYMOUS", -1)
    );

    let mut alice = user_login(&b, "alice", "alice-secret").await;
    let before = now_ms();
    let r = create(
        &mut alice,
        CreateDelegationTokenRequest {
            renewers: vec![renewer("bob")],
            ..Default::default()
        },
    )
    .await;
    let after = now_ms();
    assert_eq!(r.error_code, 0);
    assert_eq!(
        (r.principal_type.as_str(), r.principal_name.as_str()),
        ("User", "alice")
    );
    assert_eq!(
        (
            r.token_requester_principal_type.as_str(),
            r.token_requester_principal_name.as_str()
        ),
        ("User", "alice")
    );
    assert!((before..=after).contains(&r.issue_timestamp_ms));
    assert_eq!(r.expiry_timestamp_ms, r.issue_timestamp_ms + HOUR);
    assert_eq!(r.max_timestamp_ms, r.issue_timestamp_ms + 2 * HOUR);
    assert_eq!(r.token_id.len(), 22);
    assert_eq!(r.hmac.to_vec(), expected_hmac(&r.token_id));
    let (token_id, hmac) = (r.token_id.clone(), r.hmac.to_vec());

    // A token login acts as the owner, and may not manage tokens.
    let (mut t, code) = token_login(&b, &token_id, &hmac).await;
    assert_eq!(code, 0, "token login");
    assert!(metadata_ok(&mut t).await);
    let r = create(&mut t, CreateDelegationTokenRequest::default()).await;
    assert_eq!(r.error_code, 64);
    assert_eq!(
        r.principal_name, "alice",
        "the token connection acts as its owner"
    );
    assert_eq!(describe(&mut t).await.error_code, 64);
    assert_eq!(renew(&mut t, &hmac, 0).await, (64, -1));
    // A wrong HMAC, or the token id without `tokenauth`, fails as bad credentials.
    let (_, code) = token_login(&b, &token_id, b"not-the-hmac").await;
    assert_eq!(code, 58);
    let password = base64::engine::general_purpose::STANDARD.encode(&hmac);
    let plain_scram = ScramClient::new(ScramMechanism::Sha256, &token_id, &password);
    assert_eq!(
        login(sasl_addr(&b), plain_scram, "SCRAM-SHA-256").await.1,
        58
    );

    let d = describe(&mut alice).await;
    assert_eq!(d.error_code, 0);
    assert_eq!(d.tokens.len(), 1);
    let t0 = &d.tokens[0];
    assert_eq!(t0.token_id, token_id);
    assert_eq!(t0.hmac.to_vec(), hmac);
    assert_eq!(t0.principal_name, "alice");
    assert_eq!(t0.token_requester_principal_name, "alice");
    assert_eq!(t0.renewers.len(), 1);
    assert_eq!(
        (
            t0.renewers[0].principal_type.as_str(),
            t0.renewers[0].principal_name.as_str()
        ),
        ("User", "bob")
    );
    let (issued, max) = (t0.issue_timestamp, t0.max_timestamp);
    drop((alice, t));

    // The token is in the metadata log: it survives a restart.
    let b = b.restart(&settings(true)).await;
    let (mut t, code) = token_login(&b, &token_id, &hmac).await;
    assert_eq!(code, 0, "token login after the restart");
    assert!(metadata_ok(&mut t).await);
    let mut alice = user_login(&b, "alice", "alice-secret").await;
    let d = describe(&mut alice).await;
    assert_eq!(d.tokens.len(), 1);
    assert_eq!(
        (d.tokens[0].issue_timestamp, d.tokens[0].max_timestamp),
        (issued, max)
    );

    // Renewal: now + the requested 10 minutes.
    let before = now_ms();
    let (code, expiry) = renew(&mut alice, &hmac, 600_000).await;
    assert_eq!(code, 0);
    assert!(
        (before + 600_000..=now_ms() + 600_000).contains(&expiry),
        "{expiry}"
    );
    assert_eq!(
        describe(&mut alice).await.tokens[0].expiry_timestamp,
        expiry
    );

    // Expired now: logins and renewals are refused, and the controller sweeps it away.
    let before = now_ms();
    let (code, expiry) = expire(&mut alice, &hmac, 0).await;
    assert_eq!(code, 0);
    assert!((before..=now_ms()).contains(&expiry));
    tokio::time::sleep(Duration::from_millis(5)).await;
    let (_, code) = token_login(&b, &token_id, &hmac).await;
    assert_eq!(code, 58, "an expired token fails authentication");
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        let (code, _) = renew(&mut alice, &hmac, 0).await;
        if code == 62 {
            break; // DELEGATION_TOKEN_NOT_FOUND: swept
        }
        assert_eq!(code, 66, "DELEGATION_TOKEN_EXPIRED until the sweep");
        assert!(
            tokio::time::Instant::now() < deadline,
            "the token was never swept"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(describe(&mut alice).await.tokens.is_empty());
    assert_eq!(expire(&mut alice, &hmac, -1).await.0, 62);
    drop(t);
}

#[tokio::test]
async fn without_a_secret_the_apis_answer_auth_disabled() {
    let b = TestBroker::start(&settings(false)).await;
    add_user(&b, "alice", "alice-secret").await;
    let mut alice = user_login(&b, "alice", "alice-secret").await;
    let r = create(&mut alice, CreateDelegationTokenRequest::default()).await;
    assert_eq!(r.error_code, 61, "DELEGATION_TOKEN_AUTH_DISABLED");
    assert!(r.token_id.is_empty());
    assert_eq!(describe(&mut alice).await.error_code, 61);
    assert_eq!(renew(&mut alice, b"x", 0).await.0, 61);
    assert_eq!(expire(&mut alice, b"x", 0).await.0, 61);
    // No secret, no token logins.
    let (_, code) = token_login(&b, "AAAAAAAAAAAAAAAAAAAAAA", b"x").await;
    assert_eq!(code, 58);
}

/// One request as `principal` on a SASL_PLAINTEXT connection context (as a SCRAM login
/// would leave it), through `handlers::start`.
async fn call_sasl<Req: Encode, Resp: Decode>(
    broker: &Arc<Broker>,
    principal: &str,
    api_key: i16,
    version: i16,
    request: &Req,
) -> Resp {
    let peer: SocketAddr = "127.0.0.1:40000".parse().unwrap();
    let conn = Arc::new(ConnectionContext::new(
        "SASL_PLAINTEXT".into(),
        SecurityProtocol::SaslPlaintext,
        ListenerScope::Broker,
        peer,
    ));
    conn.set_principal(KafkaPrincipal::parse(principal).unwrap());
    let header = RequestHeader {
        api_key,
        api_version: version,
        correlation_id: 7,
        client_id: Some("token-test".into()),
        unknown_tagged_fields: vec![],
    };
    let mut frame = BytesMut::new();
    header.encode(&mut frame, request_header_version(api_key, version));
    request.encode(&mut frame, version);
    let fut = match strata::handlers::start(broker, frame.freeze(), &conn).await {
        Outcome::Respond(fut) => fut,
        Outcome::Close(why) => panic!("api {api_key} v{version} closed: {why}"),
    };
    let mut bytes: Bytes = fut
        .await
        .expect("a response")
        .into_bytes()
        .expect("region bytes");
    bytes.advance(4);
    assert_eq!(bytes.get_i32(), 7);
    if response_header_version(api_key, version) >= 1 {
        assert_eq!(bytes.get_u8(), 0, "no tagged fields");
    }
    Resp::decode(&mut bytes, version).expect("response decodes")
}

#[tokio::test]
async fn other_owners_need_create_tokens_and_describe_tokens_on_the_user() {
    let mut s = settings(true);
    s.extend([AUTHORIZER, ("super.users", SUPER_USERS)]);
    let tb = TestBroker::start(&s).await;
    let b = tb.running.as_ref().unwrap().broker.clone();
    let for_bob = CreateDelegationTokenRequest {
        owner_principal_type: Some("User".into()),
        owner_principal_name: Some("bob".into()),
        ..Default::default()
    };
    let r: CreateDelegationTokenResponse = call_sasl(&b, "User:alice", 38, 3, &for_bob).await;
    assert_eq!(r.error_code, 65, "DELEGATION_TOKEN_AUTHORIZATION_FAILED");
    assert_eq!(
        (
            r.principal_name.as_str(),
            r.token_requester_principal_name.as_str()
        ),
        ("bob", "alice")
    );
    // A renewer that is not a User principal.
    let bad = CreateDelegationTokenRequest {
        renewers: vec![CreatableRenewers {
            principal_type: "Group".into(),
            principal_name: "g".into(),
            ..Default::default()
        }],
        ..Default::default()
    };
    let r: CreateDelegationTokenResponse = call_sasl(&b, "User:alice", 38, 3, &bad).await;
    assert_eq!(r.error_code, 67, "INVALID_PRINCIPAL_TYPE");

    grant(
        &b,
        vec![acl(
            rt::USER,
            "User:bob",
            pattern_type::LITERAL,
            "User:alice",
            op::CREATE_TOKENS,
        )],
    )
    .await;
    let r: CreateDelegationTokenResponse = call_sasl(&b, "User:alice", 38, 3, &for_bob).await;
    assert_eq!(r.error_code, 0);
    assert_eq!(
        (
            r.principal_name.as_str(),
            r.token_requester_principal_name.as_str()
        ),
        ("bob", "alice")
    );
    let bob_token = r.token_id.clone();
    // Owned by bob: alice (the requester) sees it; carol does not until she may.
    let r: CreateDelegationTokenResponse = call_sasl(
        &b,
        "User:dave",
        38,
        1,
        &CreateDelegationTokenRequest::default(),
    )
    .await;
    assert_eq!(r.error_code, 0);
    assert_eq!(r.principal_name, "dave");
    let ids = |r: &DescribeDelegationTokenResponse| {
        r.tokens
            .iter()
            .map(|t| t.token_id.clone())
            .collect::<Vec<_>>()
    };
    // Null owners: every owner's tokens the caller may see.
    let all = DescribeDelegationTokenRequest {
        owners: None,
        ..Default::default()
    };
    let r: DescribeDelegationTokenResponse = call_sasl(&b, "User:alice", 41, 3, &all).await;
    assert_eq!(ids(&r), vec![bob_token.clone()]);
    assert_eq!(r.tokens[0].token_requester_principal_name, "alice");
    let r: DescribeDelegationTokenResponse = call_sasl(&b, "User:carol", 41, 3, &all).await;
    assert!(r.tokens.is_empty());
    grant(
        &b,
        vec![acl(
            rt::USER,
            "User:bob",
            pattern_type::LITERAL,
            "User:carol",
            op::DESCRIBE_TOKENS,
        )],
    )
    .await;
    let r: DescribeDelegationTokenResponse = call_sasl(&b, "User:carol", 41, 3, &all).await;
    assert_eq!(ids(&r), vec![bob_token.clone()]);
    // An owner filter; an empty owner list describes nothing.
    let only = |name: &str| DescribeDelegationTokenRequest {
        owners: Some(vec![DescribeDelegationTokenOwner {
            principal_type: "User".into(),
            principal_name: name.into(),
            ..Default::default()
        }]),
        ..Default::default()
    };
    let r: DescribeDelegationTokenResponse =
        call_sasl(&b, "User:admin", 41, 3, &only("dave")).await;
    assert_eq!(r.tokens.len(), 1);
    assert_eq!(r.tokens[0].principal_name, "dave");
    let none = DescribeDelegationTokenRequest {
        owners: Some(vec![]),
        ..Default::default()
    };
    let r: DescribeDelegationTokenResponse = call_sasl(&b, "User:admin", 41, 3, &none).await;
    assert_eq!((r.error_code, r.tokens.len()), (0, 0));
    // Only the owner and renewers may renew: alice requested bob's token but may not.
    let hmac = expected_hmac(&bob_token);
    let renew = RenewDelegationTokenRequest {
        hmac: hmac.clone().into(),
        renew_period_ms: 1000,
        ..Default::default()
    };
    let r: strata::protocol::messages::renew_delegation_token_response::RenewDelegationTokenResponse =
        call_sasl(&b, "User:alice", 39, 2, &renew).await;
    assert_eq!(r.error_code, 63, "DELEGATION_TOKEN_OWNER_MISMATCH");
    let r: strata::protocol::messages::renew_delegation_token_response::RenewDelegationTokenResponse =
        call_sasl(&b, "User:bob", 39, 2, &renew).await;
    assert_eq!(r.error_code, 0);
}
