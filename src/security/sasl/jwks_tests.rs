//! The https JWKS endpoint's TLS client: a private CA trusted through the `ssl.truststore.*`
//! options of the OAUTHBEARER JAAS entry (Kafka's `JaasOptionsUtils`), and refused without.
use std::collections::BTreeMap;
use std::sync::Arc;

use super::https::tests::{answer_one, ca_pem_and_server};
use super::jwt::JwtValidator;
use super::jwt_tests::{good_claims, settings, Signer, NOW_MS};
use crate::config::oauth::{JwksEndpoint, OAuthValidation};

/// Serves `body` as JSON to every connection, for the life of the test process.
fn serve(server: rustls::ServerConfig, body: String) -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let server = Arc::new(server);
    let answer = format!(
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    std::thread::spawn(move || {
        for tcp in listener.incoming().flatten() {
            answer_one(server.clone(), tcp, answer.as_bytes());
        }
    });
    port
}

fn https_settings(port: u16, ssl: BTreeMap<String, String>) -> OAuthValidation {
    OAuthValidation {
        jwks_endpoint: JwksEndpoint::Https(format!("https://127.0.0.1:{port}/jwks")),
        jwks_ssl: ssl,
        ..settings(std::path::Path::new("/unused"))
    }
}

#[test]
fn an_https_jwks_endpoint_signed_by_a_private_ca_is_trusted_through_the_jaas_ssl_options() {
    let dir = tempfile::tempdir().unwrap();
    let (ca_pem, server) = ca_pem_and_server();
    let ca_path = dir.path().join("idp-ca.pem");
    std::fs::write(&ca_path, ca_pem).unwrap();
    let signer = Signer::rsa("rsa-https");
    let port = serve(
        server,
        serde_json::json!({ "keys": [signer.jwk()] }).to_string(),
    );
    let token = signer.sign("RS256", &good_claims());

    // The truststore given as JAAS options: the keys are fetched and the token accepted.
    let ssl: BTreeMap<String, String> = [
        ("ssl.truststore.type", "PEM"),
        ("ssl.truststore.location", ca_path.to_str().unwrap()),
    ]
    .iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    let v = JwtValidator::new(&https_settings(port, ssl)).unwrap();
    let t = v.validate(&token, NOW_MS).unwrap();
    assert_eq!(t.principal, "svc-orders");

    // Without them the system's roots do not know the CA: no keys, the token is refused.
    match JwtValidator::new(&https_settings(port, BTreeMap::new())) {
        Err(why) => assert!(why.contains("CA certificates"), "{why}"),
        Ok(v) => {
            let why = v.validate(&token, NOW_MS).unwrap_err();
            assert!(why.contains("verification key"), "{why}");
        }
    }

    // A bad option stops start-up with the option named.
    let bad: BTreeMap<String, String> = [
        ("ssl.truststore.type", "PEM"),
        ("ssl.truststore.location", "/no/such/ca.pem"),
    ]
    .iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    let why = JwtValidator::new(&https_settings(port, bad))
        .err()
        .expect("a missing truststore is refused");
    assert!(why.contains("ssl.truststore.location"), "{why}");
}
