//! The real binary's log output (issue 14): no ANSI colour codes when stdout is a pipe, JSON
//! lines with `--log-format json` or `strata.log.format=json`, and one line per refused
//! connection or failed authentication per client address, however many there are.
mod common;

use std::time::Duration;

use common::process::Strata;
use common::{api_call, incremental_alter, Client};

/// What the broker logged so far, once its start-up line is in (the reader thread reports
/// the port before it stores the line).
fn lines(s: &Strata) -> Vec<String> {
    for _ in 0..100 {
        if s.logged("strata started") {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    s.log.lock().unwrap().clone()
}

/// The `127.0.0.1:<port>` addresses of the start-up line, in listener order.
fn listener_addrs(s: &Strata) -> Vec<std::net::SocketAddr> {
    let logged = lines(s);
    let line = logged
        .iter()
        .find(|l| l.contains("strata started"))
        .unwrap();
    line.match_indices("127.0.0.1:")
        .filter_map(|(at, _)| {
            let digits: String = line[at + 10..]
                .chars()
                .take_while(char::is_ascii_digit)
                .collect();
            digits.parse::<u16>().ok()
        })
        .map(|port| std::net::SocketAddr::from(([127, 0, 0, 1], port)))
        .collect()
}

#[tokio::test]
async fn piped_text_logs_carry_no_colour_codes() {
    let dir = tempfile::tempdir().unwrap();
    // No NO_COLOR: that the output is a pipe is reason enough.
    let s = Strata::spawn_with(dir.path(), &[], &[]);
    let logged = lines(&s);
    s.stop();
    assert!(logged.iter().any(|l| l.contains("strata started")));
    let coloured: Vec<&String> = logged.iter().filter(|l| l.contains('\u{1b}')).collect();
    assert!(
        coloured.is_empty(),
        "ANSI escapes in piped logs: {coloured:?}"
    );
}

/// Every line of the broker's output is one JSON object with a level and a message.
fn assert_json_lines(logged: &[String]) {
    assert!(!logged.is_empty());
    for line in logged {
        let v: serde_json::Value =
            serde_json::from_str(line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"));
        assert!(v["level"].is_string(), "no level: {line}");
        assert!(v["fields"]["message"].is_string(), "no message: {line}");
    }
    assert!(logged.iter().any(|l| l.contains("strata started")));
}

#[tokio::test]
async fn json_lines_from_the_flag_or_the_config_key() {
    let dir = tempfile::tempdir().unwrap();
    let s = Strata::spawn_with(dir.path(), &[], &["--log-format", "json"]);
    let logged = lines(&s);
    s.stop();
    assert_json_lines(&logged);
    let dir = tempfile::tempdir().unwrap();
    let s = Strata::spawn_with(dir.path(), &[], &["--override", "strata.log.format=json"]);
    let logged = lines(&s);
    s.stop();
    assert_json_lines(&logged);
}

const PLAIN_JAAS: &str = "org.apache.kafka.common.security.plain.PlainLoginModule required \
    username=\"admin\" password=\"admin-secret\" user_admin=\"admin-secret\";";

/// A PLAIN login with a wrong password on a fresh connection; its error code.
async fn bad_login(addr: std::net::SocketAddr) -> i16 {
    let mut c = Client::connect(addr).await;
    let r = api_call!(
        c,
        sasl_handshake_request::SaslHandshakeRequest,
        sasl_handshake_response::SaslHandshakeResponse,
        1,
        sasl_handshake_request::SaslHandshakeRequest {
            mechanism: "PLAIN".into()
        }
    );
    assert_eq!(r.error_code, 0);
    let r = api_call!(
        c,
        sasl_authenticate_request::SaslAuthenticateRequest,
        sasl_authenticate_response::SaslAuthenticateResponse,
        2,
        sasl_authenticate_request::SaslAuthenticateRequest {
            auth_bytes: bytes::Bytes::from_static(b"\0admin\0wrong"),
            ..Default::default()
        }
    );
    r.error_code
}

#[tokio::test]
async fn refused_connections_and_failed_logins_log_one_line_per_address() {
    let dir = tempfile::tempdir().unwrap();
    let jaas = format!("listener.name.sasl_plaintext.plain.sasl.jaas.config={PLAIN_JAAS}");
    let s = Strata::spawn_with(
        dir.path(),
        &[("NO_COLOR", "1")],
        &[
            "--override",
            "listeners=PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
            "--override",
            "sasl.enabled.mechanisms=PLAIN",
            "--override",
            &jaas,
        ],
    );
    let sasl = listener_addrs(&s)[1];
    for _ in 0..5 {
        assert_eq!(
            bad_login(sasl).await,
            strata::error::ErrorCode::SASL_AUTHENTICATION_FAILED.code()
        );
    }
    // One connection per address from now on (a dynamic change): this admin connection
    // and the broker's own keep theirs, the next 20 from the same address are refused.
    let mut admin = Client::connect(s.addr).await;
    let one = [("max.connections.per.ip", 0, Some("1"))];
    assert_eq!(
        incremental_alter(&mut admin, 4, "1", &one, false).await.0,
        0
    );
    // The broker applies a dynamic change once it reads it back from the metadata log, a
    // moment after the answer (as Kafka does): wait for the first refusal.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while !Client::connect(s.addr).await.is_closed().await {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the limit was never applied"
        );
    }
    for _ in 0..20 {
        let mut c = Client::connect(s.addr).await;
        assert!(c.is_closed().await);
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    let logged = lines(&s);
    let count = |needle: &str| logged.iter().filter(|l| l.contains(needle)).count();
    assert_eq!(
        count("Failed authentication from 127.0.0.1"),
        1,
        "{logged:#?}"
    );
    assert_eq!(
        count("Rejected connection from 127.0.0.1"),
        1,
        "{logged:#?}"
    );
    drop(admin);
    s.stop();
}
