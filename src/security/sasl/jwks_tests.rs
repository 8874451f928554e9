//! The https JWKS endpoint's TLS client: a private CA trusted through the `ssl.truststore.*`
//! options of the OAUTHBEARER JAAS entry (Kafka's `JaasOptionsUtils`), and refused without.
use std::collections::BTreeMap;
use std::io::Write;
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

/// Log lines written while a test runs `f`.
fn logged(f: impl FnOnce()) -> String {
    #[derive(Clone, Default)]
    struct Captured(Arc<std::sync::Mutex<Vec<u8>>>);
    impl Write for Captured {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let captured = Captured::default();
    let writer = captured.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_writer(move || writer.clone())
        .with_ansi(false)
        .finish();
    tracing::subscriber::with_default(subscriber, f);
    let text = String::from_utf8_lossy(&captured.0.lock().unwrap()).into_owned();
    text
}

#[test]
fn es512_keys_and_tokens_are_refused_with_the_reason() {
    use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64URL;
    use base64::Engine;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("jwks.json");
    // A P-521 key (coordinates of 66 bytes) next to a usable RSA one.
    let rsa = Signer::rsa("rsa-1");
    let p521 = serde_json::json!({
        "kty": "EC", "crv": "P-521", "kid": "ec-521", "use": "sig",
        "x": B64URL.encode([1u8; 66]), "y": B64URL.encode([2u8; 66]),
    });
    let doc = serde_json::json!({ "keys": [rsa.jwk(), p521] });
    std::fs::write(&path, doc.to_string()).unwrap();
    let mut validator = None;
    let log = logged(|| validator = Some(JwtValidator::new(&settings(&path)).unwrap()));
    assert!(
        log.contains("P-521") && log.contains("ec-521") && log.contains("ring"),
        "{log}"
    );
    let v = validator.unwrap();
    // An ES512 token naming the P-521 key: refused, and the reason says why.
    let header = serde_json::json!({"alg": "ES512", "typ": "JWT", "kid": "ec-521"});
    let token = format!(
        "{}.{}.{}",
        B64URL.encode(header.to_string()),
        B64URL.encode(good_claims().to_string()),
        B64URL.encode([7u8; 132])
    );
    let why = v.validate(&token, NOW_MS).unwrap_err();
    assert!(why.contains("ES512") && why.contains("P-521"), "{why}");
    // The RSA key of the same set still works.
    assert!(v
        .validate(&rsa.sign("RS256", &good_claims()), NOW_MS)
        .is_ok());
}
