use std::collections::BTreeMap;

use bytes::BytesMut;

use super::*;
use crate::config::sasl::{parse_jaas, ListenerSaslConfig, SCRAM_SHA_512};
use crate::protocol::codec::Encode;

fn config(reauth_ms: i64) -> Arc<ListenerSaslConfig> {
    let mut jaas = BTreeMap::new();
    jaas.insert(
        PLAIN.to_string(),
        parse_jaas(
            "org.apache.kafka.common.security.plain.PlainLoginModule required \
             user_alice=\"alice-secret\" user_bob=\"bob-secret\";",
        )
        .unwrap()
        .remove(0),
    );
    let mechanisms: Vec<String> = vec![PLAIN.into(), SCRAM_SHA_512.into(), OAUTHBEARER.into()];
    Arc::new(ListenerSaslConfig {
        listener: "SASL_PLAINTEXT".into(),
        reauth_ms: mechanisms.iter().map(|m| (m.clone(), reauth_ms)).collect(),
        mechanisms,
        jaas,
        max_receive_size: 524288,
        oauth: None,
    })
}

fn frame(api_key: i16, version: i16, body: impl FnOnce(&mut BytesMut)) -> Bytes {
    let mut b = BytesMut::new();
    RequestHeader {
        api_key,
        api_version: version,
        correlation_id: 7,
        client_id: Some("test".into()),
        unknown_tagged_fields: Vec::new(),
    }
    .encode(&mut b, request_header_version(api_key, version));
    body(&mut b);
    b.freeze()
}

fn handshake(mechanism: &str, version: i16) -> Bytes {
    frame(SASL_HANDSHAKE, version, |b| {
        SaslHandshakeRequest {
            mechanism: mechanism.into(),
        }
        .encode(b, version)
    })
}

fn authenticate(token: &[u8], version: i16) -> Bytes {
    frame(SASL_AUTHENTICATE, version, |b| {
        SaslAuthenticateRequest {
            auth_bytes: Bytes::copy_from_slice(token),
            ..Default::default()
        }
        .encode(b, version)
    })
}

fn peer() -> SocketAddr {
    "127.0.0.1:5555".parse().unwrap()
}

fn no_scram(_: &str, _: ScramMechanism) -> Option<ScramCredential> {
    None
}

fn auth_response(
    g: Gate,
) -> (
    SaslAuthenticateResponse,
    Option<KafkaPrincipal>,
    Option<String>,
) {
    match g {
        Gate::Reply {
            reply: SaslReply::Authenticate(_, r),
            principal,
            close,
        } => (r, principal, close),
        other => panic!("expected a SaslAuthenticate reply, got {other:?}"),
    }
}

fn handshake_ok(s: &mut SaslSession, mechanism: &str) {
    match s.on_frame(&handshake(mechanism, 1), 0, &no_scram) {
        Gate::Reply {
            reply: SaslReply::Handshake(_, r),
            close: None,
            ..
        } => assert_eq!(r.error_code, 0),
        other => panic!("handshake refused: {other:?}"),
    }
}

#[test]
fn only_api_versions_and_sasl_requests_come_before_authentication() {
    let mut s = SaslSession::new(config(0), peer());
    assert!(matches!(
        s.on_frame(&frame(API_VERSIONS, 3, |_| {}), 0, &no_scram),
        Gate::Pass
    ));
    // Metadata before the handshake closes the connection.
    assert!(matches!(
        s.on_frame(&frame(3, 12, |_| {}), 0, &no_scram),
        Gate::Close(_)
    ));
    let mut s = SaslSession::new(config(0), peer());
    handshake_ok(&mut s, PLAIN);
    // ... and so does anything but SaslAuthenticate after it.
    assert!(matches!(
        s.on_frame(&frame(3, 12, |_| {}), 0, &no_scram),
        Gate::Close(_)
    ));
    assert!(!s.authenticated());
}

#[test]
fn an_unsupported_mechanism_gets_the_enabled_list_and_a_close() {
    let mut s = SaslSession::new(config(0), peer());
    match s.on_frame(&handshake("GSSAPI", 1), 0, &no_scram) {
        Gate::Reply {
            reply: SaslReply::Handshake(h, r),
            close: Some(_),
            ..
        } => {
            assert_eq!(h.correlation_id, 7);
            assert_eq!(r.error_code, ErrorCode::UNSUPPORTED_SASL_MECHANISM.code());
            assert_eq!(r.mechanisms, vec!["PLAIN", "SCRAM-SHA-512", "OAUTHBEARER"]);
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn plain_success_sets_the_principal_and_failure_closes_with_kafkas_message() {
    let mut s = SaslSession::new(config(0), peer());
    handshake_ok(&mut s, PLAIN);
    let (r, principal, close) =
        auth_response(s.on_frame(&authenticate(b"\0alice\0alice-secret", 2), 0, &no_scram));
    assert_eq!(r.error_code, 0);
    assert_eq!(r.session_lifetime_ms, 0);
    assert_eq!(principal, Some(KafkaPrincipal::user("alice")));
    assert!(close.is_none());
    assert!(s.authenticated());
    assert!(matches!(
        s.on_frame(&frame(3, 12, |_| {}), 0, &no_scram),
        Gate::Pass
    ));

    let mut s = SaslSession::new(config(0), peer());
    handshake_ok(&mut s, PLAIN);
    let (r, principal, close) =
        auth_response(s.on_frame(&authenticate(b"\0alice\0nope", 2), 0, &no_scram));
    assert_eq!(r.error_code, ErrorCode::SASL_AUTHENTICATION_FAILED.code());
    assert_eq!(
        r.error_message.as_deref(),
        Some("Authentication failed: Invalid username or password")
    );
    assert!(principal.is_none());
    assert!(close.is_some());
    assert!(!s.authenticated());
}

#[test]
fn scram_through_the_session_with_a_generic_message_for_a_bad_proof() {
    let cred = ScramCredential::from_password(ScramMechanism::Sha512, "pw", 4096);
    let lookup = |u: &str, m: ScramMechanism| {
        (u == "carol" && m == ScramMechanism::Sha512).then(|| cred.clone())
    };
    for (password, ok) in [("pw", true), ("bad", false)] {
        let mut s = SaslSession::new(config(0), peer());
        handshake_ok(&mut s, SCRAM_SHA_512);
        let mut client = scram::ScramClient::new(ScramMechanism::Sha512, "carol", password);
        let (r, _, _) =
            auth_response(s.on_frame(&authenticate(&client.client_first(), 1), 0, &lookup));
        let fin = client.client_final(&r.auth_bytes).unwrap();
        let (r, principal, close) = auth_response(s.on_frame(&authenticate(&fin, 1), 0, &lookup));
        if ok {
            assert_eq!(r.error_code, 0);
            client.verify_server_final(&r.auth_bytes).unwrap();
            assert_eq!(principal, Some(KafkaPrincipal::user("carol")));
        } else {
            assert_eq!(r.error_code, ErrorCode::SASL_AUTHENTICATION_FAILED.code());
            assert_eq!(
                r.error_message.as_deref(),
                Some(
                    "Authentication failed during authentication due to invalid credentials \
                     with SASL mechanism SCRAM-SHA-512"
                )
            );
            assert!(close.is_some());
        }
    }
}

#[test]
fn sessions_expire_and_re_authentication_keeps_the_principal() {
    let mut s = SaslSession::new(config(1000), peer());
    handshake_ok(&mut s, PLAIN);
    let (r, _, _) =
        auth_response(s.on_frame(&authenticate(b"\0alice\0alice-secret", 1), 0, &no_scram));
    assert_eq!(r.session_lifetime_ms, 1000);
    assert!(matches!(
        s.on_frame(&frame(3, 12, |_| {}), 999, &no_scram),
        Gate::Pass
    ));
    // Re-authenticating in time renews the session.
    match s.on_frame(&handshake(PLAIN, 1), 900, &no_scram) {
        Gate::Reply { close: None, .. } => {}
        other => panic!("{other:?}"),
    }
    let (r, _, _) =
        auth_response(s.on_frame(&authenticate(b"\0alice\0alice-secret", 1), 900, &no_scram));
    assert_eq!(r.error_code, 0);
    assert!(matches!(
        s.on_frame(&frame(3, 12, |_| {}), 1500, &no_scram),
        Gate::Pass
    ));
    // Expired: the next request closes the connection.
    assert!(matches!(
        s.on_frame(&frame(3, 12, |_| {}), 1900, &no_scram),
        Gate::Close(_)
    ));

    // Another principal is refused.
    let mut s = SaslSession::new(config(1000), peer());
    handshake_ok(&mut s, PLAIN);
    auth_response(s.on_frame(&authenticate(b"\0alice\0alice-secret", 1), 0, &no_scram));
    handshake_ok(&mut s, PLAIN);
    let (r, _, close) =
        auth_response(s.on_frame(&authenticate(b"\0bob\0bob-secret", 1), 10, &no_scram));
    assert_eq!(r.error_code, ErrorCode::SASL_AUTHENTICATION_FAILED.code());
    assert_eq!(
        r.error_message.as_deref(),
        Some("Cannot change principals during re-authentication from User:alice: User:bob")
    );
    assert!(close.is_some());
}

#[test]
fn oauthbearer_lifetime_follows_the_token() {
    let mut s = SaslSession::new(config(0), peer());
    handshake_ok(&mut s, OAUTHBEARER);
    let token = oauthbearer::unsecured_token(r#"{"sub":"dave","exp":100}"#);
    let msg = format!("n,,\u{1}auth=Bearer {token}\u{1}\u{1}");
    let (r, principal, _) =
        auth_response(s.on_frame(&authenticate(msg.as_bytes(), 2), 40_000, &no_scram));
    assert_eq!(r.error_code, 0);
    assert_eq!(r.session_lifetime_ms, 60_000);
    assert_eq!(principal, Some(KafkaPrincipal::user("dave")));
}

#[test]
fn a_validating_listener_refuses_unsigned_tokens_and_accepts_signed_ones() {
    use super::jwt_tests::{good_claims, settings, write_jwks, Signer, NOW_MS};
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("jwks.json");
    let signer = Signer::rsa("k1");
    write_jwks(&path, &[&signer]);
    let mut cfg = (*config(0)).clone();
    cfg.oauth = Some(settings(&path));
    let cfg = Arc::new(cfg);
    // The unsecured token the default validator takes is refused: the error challenge, then
    // SASL_AUTHENTICATION_FAILED with Kafka's status JSON, and the connection closed.
    let mut s = SaslSession::new(cfg.clone(), peer());
    handshake_ok(&mut s, OAUTHBEARER);
    let unsigned = oauthbearer::unsecured_token(&good_claims().to_string());
    let msg = format!("n,,\u{1}auth=Bearer {unsigned}\u{1}\u{1}");
    let (r, principal, close) =
        auth_response(s.on_frame(&authenticate(msg.as_bytes(), 2), NOW_MS, &no_scram));
    assert_eq!(
        (r.error_code, &r.auth_bytes[..]),
        (0, &br#"{"status":"invalid_token"}"#[..])
    );
    assert!(principal.is_none() && close.is_none());
    let (r, principal, close) =
        auth_response(s.on_frame(&authenticate(&[1], 2), NOW_MS, &no_scram));
    assert_eq!(r.error_code, ErrorCode::SASL_AUTHENTICATION_FAILED.code());
    assert_eq!(
        r.error_message.as_deref(),
        Some(r#"{"status":"invalid_token"}"#)
    );
    assert!(principal.is_none() && close.is_some());
    // A signed token: the subject is the principal, the session ends with the token.
    let mut s = SaslSession::new(cfg, peer());
    handshake_ok(&mut s, OAUTHBEARER);
    let token = signer.sign("RS256", &good_claims());
    let msg = format!("n,,\u{1}auth=Bearer {token}\u{1}\u{1}");
    let (r, principal, _) =
        auth_response(s.on_frame(&authenticate(msg.as_bytes(), 2), NOW_MS, &no_scram));
    assert_eq!(r.error_code, 0);
    assert_eq!(r.session_lifetime_ms, 3_600_000);
    assert_eq!(principal, Some(KafkaPrincipal::user("svc-orders")));
}

#[test]
fn a_v0_handshake_is_followed_by_raw_tokens() {
    let mut s = SaslSession::new(config(0), peer());
    match s.on_frame(&handshake(PLAIN, 0), 0, &no_scram) {
        Gate::Reply { close: None, .. } => {}
        other => panic!("{other:?}"),
    }
    match s.on_frame(&Bytes::from_static(b"\0alice\0alice-secret"), 0, &no_scram) {
        Gate::Reply {
            reply: SaslReply::Raw(t),
            principal: Some(p),
            close: None,
        } => {
            assert!(t.is_empty());
            assert_eq!(p, KafkaPrincipal::user("alice"));
        }
        other => panic!("{other:?}"),
    }
    let mut s = SaslSession::new(config(0), peer());
    s.on_frame(&handshake(PLAIN, 0), 0, &no_scram);
    assert!(matches!(
        s.on_frame(&Bytes::from_static(b"\0alice\0x"), 0, &no_scram),
        Gate::Close(_)
    ));
}

#[test]
fn a_tokenauth_scram_login_acts_as_the_token_owner_until_the_token_expires() {
    use base64::Engine;
    let hmac = b"the-token-hmac".to_vec();
    let password = base64::engine::general_purpose::STANDARD.encode(&hmac);
    let cred = ScramCredential::from_password(ScramMechanism::Sha512, &password, 4096);
    let tokens = |id: &str, m: ScramMechanism| {
        (id == "tok" && m == ScramMechanism::Sha512).then(|| TokenCredential {
            credential: cred.clone(),
            owner: "User:alice".into(),
            expiry_timestamp_ms: 60_000,
        })
    };
    let login = |client: scram::ScramClient, s: &mut SaslSession| {
        let mut client = client;
        handshake_ok(s, SCRAM_SHA_512);
        let first = authenticate(&client.client_first(), 1);
        let (r, _, close) = auth_response(s.on_frame_with_tokens(&first, 1000, &no_scram, &tokens));
        if r.error_code != 0 {
            return (r, None, close);
        }
        let fin = client.client_final(&r.auth_bytes).unwrap();
        auth_response(s.on_frame_with_tokens(&authenticate(&fin, 1), 1000, &no_scram, &tokens))
    };
    let mut s = SaslSession::new(config(0), peer());
    let client =
        scram::ScramClient::new(ScramMechanism::Sha512, "tok", &password).with_token_auth();
    let (r, principal, close) = login(client, &mut s);
    assert_eq!((r.error_code, close), (0, None));
    assert_eq!(principal, Some(KafkaPrincipal::user("alice")));
    assert!(s.token_authenticated());
    // The session ends when the token expires (Kafka's credential lifetime).
    assert_eq!(r.session_lifetime_ms, 59_000);

    // Without `tokenauth` the token id is an unknown user; an unknown token fails too.
    for client in [
        scram::ScramClient::new(ScramMechanism::Sha512, "tok", &password),
        scram::ScramClient::new(ScramMechanism::Sha512, "other", &password).with_token_auth(),
    ] {
        let mut s = SaslSession::new(config(0), peer());
        let (r, principal, close) = login(client, &mut s);
        assert_eq!(r.error_code, ErrorCode::SASL_AUTHENTICATION_FAILED.code());
        assert!(principal.is_none() && close.is_some());
        assert!(!s.token_authenticated());
    }
    // A SCRAM user login is not token-authenticated.
    let user = ScramCredential::from_password(ScramMechanism::Sha512, "pw", 4096);
    let users = |u: &str, _: ScramMechanism| (u == "carol").then(|| user.clone());
    let mut s = SaslSession::new(config(0), peer());
    handshake_ok(&mut s, SCRAM_SHA_512);
    let mut client = scram::ScramClient::new(ScramMechanism::Sha512, "carol", "pw");
    let (r, _, _) = auth_response(s.on_frame_with_tokens(
        &authenticate(&client.client_first(), 1),
        0,
        &users,
        &tokens,
    ));
    let fin = client.client_final(&r.auth_bytes).unwrap();
    let (r, principal, _) =
        auth_response(s.on_frame_with_tokens(&authenticate(&fin, 1), 0, &users, &tokens));
    assert_eq!(r.error_code, 0);
    assert_eq!(principal, Some(KafkaPrincipal::user("carol")));
    assert!(!s.token_authenticated());
}
