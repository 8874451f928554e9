//! PKCS12 keystores and truststores (issue 13): stores made at test time by keytool (its
//! default PBES2/AES-256 with an HmacSHA256 integrity check) and by `openssl pkcs12 -export`
//! (current and `-legacy` 3DES/RC2) serve an SSL listener with mutual TLS, under
//! `ssl.keystore.type` PKCS12 and Kafka's default JKS; the passwords act as in Kafka (a wrong
//! or missing one stops start-up with an error naming the key); a replaced PKCS12 keystore is
//! reloaded; the peer client (inter-broker, controller) uses PKCS12 stores too.
mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use common::certs::{server_leaf, Ca, Leaf};
use common::tls::{
    api_versions_ok, api_versions_round_trip, client_config, start_up_error, tls_broker_with,
    tls_connect,
};

/// Runs a tool that must succeed; returns its stdout and stderr.
fn run(cmd: &mut Command) -> String {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("{cmd:?}: {e} (openssl and keytool must be installed)"));
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{cmd:?} failed: {text}");
    text
}

fn s(p: &Path) -> String {
    p.display().to_string()
}

/// `openssl pkcs12 -export` of `leaf` (with the CA in its chain) to `name`; `legacy` picks
/// the 3DES/RC2 encryption of OpenSSL 1.x.
fn openssl_keystore(
    dir: &Path,
    name: &str,
    leaf: &Leaf,
    ca: &Ca,
    password: &str,
    legacy: bool,
) -> PathBuf {
    let key = dir.join(format!("{name}.key.pem"));
    let cert = dir.join(format!("{name}.cert.pem"));
    let chain = dir.join(format!("{name}.ca.pem"));
    std::fs::write(&key, &leaf.key_pem).unwrap();
    std::fs::write(&cert, &leaf.cert_pem).unwrap();
    std::fs::write(&chain, ca.pem()).unwrap();
    let out = dir.join(name);
    let mut cmd = Command::new("openssl");
    cmd.args([
        "pkcs12",
        "-export",
        "-name",
        "broker",
        "-inkey",
        &s(&key),
        "-in",
        &s(&cert),
    ])
    .args(["-certfile", &s(&chain), "-out", &s(&out)])
    .args(["-passout", &format!("pass:{password}")]);
    if legacy {
        cmd.arg("-legacy");
    }
    run(&mut cmd);
    out
}

/// keytool's own copy of a PKCS12 keystore, written with keytool's defaults.
fn keytool_keystore(dir: &Path, from: &Path, from_password: &str, password: &str) -> PathBuf {
    let out = dir.join("keytool.p12");
    run(Command::new("keytool")
        .args(["-importkeystore", "-noprompt", "-srcstoretype", "PKCS12"])
        .args(["-srckeystore", &s(from), "-srcstorepass", from_password])
        .args(["-destkeystore", &s(&out), "-deststoretype", "PKCS12"])
        .args(["-deststorepass", password]));
    out
}

/// A truststore holding `ca` as keytool's trusted-certificate entry.
fn keytool_truststore(dir: &Path, ca: &Ca, password: &str) -> PathBuf {
    let pem = dir.join("trusted-ca.pem");
    std::fs::write(&pem, ca.pem()).unwrap();
    let out = dir.join("truststore.p12");
    run(Command::new("keytool")
        .args([
            "-importcert",
            "-noprompt",
            "-alias",
            "test-ca",
            "-storetype",
            "PKCS12",
        ])
        .args([
            "-file",
            &s(&pem),
            "-keystore",
            &s(&out),
            "-storepass",
            password,
        ]));
    out
}

/// What `openssl pkcs12 -info` says protects the store.
fn protection(store: &Path, password: &str) -> String {
    run(Command::new("openssl")
        .args(["pkcs12", "-info", "-noout", "-legacy", "-in", &s(store)])
        .args(["-passin", &format!("pass:{password}")]))
}

struct Stores {
    _dir: tempfile::TempDir,
    ca: Ca,
    leaf: Leaf,
    keytool: PathBuf,
    openssl: PathBuf,
    legacy: PathBuf,
    truststore: PathBuf,
}

fn stores() -> Stores {
    let dir = tempfile::tempdir().unwrap();
    let ca = Ca::new("test-ca");
    let leaf = server_leaf(&ca);
    let openssl = openssl_keystore(dir.path(), "openssl.p12", &leaf, &ca, "openssl-pw", false);
    let legacy = openssl_keystore(dir.path(), "legacy.p12", &leaf, &ca, "legacy-pw", true);
    let keytool = keytool_keystore(dir.path(), &openssl, "openssl-pw", "keytool-pw");
    let truststore = keytool_truststore(dir.path(), &ca, "trust-pw");
    Stores {
        _dir: dir,
        ca,
        leaf,
        keytool,
        openssl,
        legacy,
        truststore,
    }
}

/// The certificate the broker at `addr` serves.
async fn served_leaf(addr: std::net::SocketAddr, ca: &Ca, client: &Leaf) -> Vec<u8> {
    let c = tls_connect(addr, client_config(ca, Some(client)))
        .await
        .unwrap();
    let (_, conn) = c.stream.get_ref();
    conn.peer_certificates().unwrap()[0].to_vec()
}

#[tokio::test]
async fn keytool_and_openssl_pkcs12_stores_serve_mutual_tls() {
    let st = stores();
    // The stores are what the test claims: keytool's PBES2/AES-256 with HmacSHA256, and
    // OpenSSL's legacy 3DES key with RC2 certificates.
    let keytool = protection(&st.keytool, "keytool-pw");
    assert!(
        keytool.contains("AES-256-CBC") && keytool.contains("MAC: sha256"),
        "{keytool}"
    );
    let legacy = protection(&st.legacy, "legacy-pw");
    assert!(
        legacy.contains("TripleDES") && legacy.contains("RC2"),
        "{legacy}"
    );
    let trust = protection(&st.truststore, "trust-pw");
    assert!(trust.contains("AES-256-CBC"), "{trust}");

    let alice = st.ca.issue(&[(rcgen::DnType::CommonName, "alice")], &[]);
    let truststore = s(&st.truststore);
    // (keystore, its password, ssl.keystore.type (None: Kafka's default JKS), ssl.key.password)
    let cases = [
        (&st.keytool, "keytool-pw", Some("PKCS12"), None),
        (
            &st.openssl,
            "openssl-pw",
            Some("PKCS12"),
            Some("openssl-pw"),
        ),
        (&st.legacy, "legacy-pw", Some("PKCS12"), None),
        (&st.keytool, "keytool-pw", None, None),
    ];
    for (keystore, password, kind, key_password) in cases {
        let keystore = s(keystore);
        let mut keys = vec![
            ("ssl.keystore.location", keystore.as_str()),
            ("ssl.keystore.password", password),
            ("ssl.truststore.type", "PKCS12"),
            ("ssl.truststore.location", truststore.as_str()),
            ("ssl.truststore.password", "trust-pw"),
            ("ssl.client.auth", "required"),
        ];
        if let Some(kind) = kind {
            keys.push(("ssl.keystore.type", kind));
        }
        if let Some(kp) = key_password {
            keys.push(("ssl.key.password", kp));
        }
        let b = tls_broker_with(&keys).await;
        assert_eq!(
            served_leaf(b.tls, &st.ca, &alice).await,
            st.leaf.der.to_vec(),
            "{keystore}"
        );
        assert!(
            api_versions_ok(b.tls, client_config(&st.ca, Some(&alice))).await,
            "{keystore}"
        );
        // The truststore decides who may connect: no certificate, no connection.
        assert!(
            !api_versions_ok(b.tls, client_config(&st.ca, None)).await,
            "{keystore}"
        );
    }
}

#[tokio::test]
async fn wrong_or_missing_pkcs12_passwords_and_jks_files_stop_start_up_naming_the_key() {
    let st = stores();
    let dir = tempfile::tempdir().unwrap();
    let jks = dir.path().join("old.jks");
    run(Command::new("keytool")
        .args([
            "-genkeypair",
            "-alias",
            "b",
            "-keyalg",
            "EC",
            "-dname",
            "CN=b",
            "-validity",
            "2",
        ])
        .args([
            "-storetype",
            "JKS",
            "-keystore",
            &s(&jks),
            "-storepass",
            "jks-pass",
        ]));
    let pem = dir.path().join("broker.keystore.pem");
    std::fs::write(&pem, format!("{}{}", st.leaf.key_pem, st.leaf.cert_pem)).unwrap();
    let (keytool, truststore, jks, pem) = (s(&st.keytool), s(&st.truststore), s(&jks), s(&pem));
    let ks = |extra: &[(&'static str, &'static str)]| {
        let mut v: Vec<(&str, String)> = vec![
            ("ssl.keystore.type", "PKCS12".into()),
            ("ssl.keystore.location", keytool.clone()),
        ];
        v.extend(extra.iter().map(|(k, val)| (*k, val.to_string())));
        v
    };
    type Case = (Vec<(&'static str, String)>, Vec<&'static str>);
    let cases: Vec<Case> = vec![
        (
            ks(&[("ssl.keystore.password", "wrong")]),
            vec![
                "ssl.keystore.location",
                "keytool.p12",
                "wrong password (ssl.keystore.password)",
            ],
        ),
        (
            ks(&[]),
            vec!["ssl.keystore.location", "ssl.keystore.password is not"],
        ),
        (
            ks(&[
                ("ssl.keystore.password", "keytool-pw"),
                ("ssl.key.password", "other"),
            ]),
            vec!["ssl.key.password differs from ssl.keystore.password"],
        ),
        (
            ks(&[
                ("ssl.keystore.password", "keytool-pw"),
                ("ssl.truststore.type", "PKCS12"),
            ])
            .into_iter()
            .chain([
                ("ssl.truststore.location", truststore.clone()),
                ("ssl.truststore.password", "nope".into()),
            ])
            .collect(),
            vec![
                "ssl.truststore.location",
                "truststore.p12",
                "wrong password (ssl.truststore.password)",
            ],
        ),
        (
            ks(&[
                ("ssl.keystore.password", "keytool-pw"),
                ("ssl.truststore.type", "PKCS12"),
            ])
            .into_iter()
            .chain([("ssl.truststore.location", truststore.clone())])
            .collect(),
            vec!["ssl.truststore.location", "ssl.truststore.password is not"],
        ),
        (
            vec![
                ("ssl.keystore.location", jks.clone()),
                ("ssl.keystore.password", "jks-pass".into()),
            ],
            vec!["old.jks", "JKS format", "keytool -importkeystore"],
        ),
        (
            vec![
                ("ssl.keystore.type", "PKCS12".into()),
                ("ssl.keystore.location", pem.clone()),
                ("ssl.keystore.password", "x".into()),
            ],
            vec!["broker.keystore.pem", "not a PKCS12 keystore but PEM"],
        ),
        (
            vec![
                ("ssl.keystore.type", "PKCS12".into()),
                ("ssl.keystore.key", st.leaf.key_pem.clone()),
                ("ssl.keystore.certificate.chain", st.leaf.cert_pem.clone()),
            ],
            vec![
                "ssl.keystore.",
                "PEM stores only",
                "ssl.keystore.type=PKCS12",
            ],
        ),
        (
            vec![
                ("ssl.keystore.type", "BCFKS".into()),
                ("ssl.keystore.location", keytool.clone()),
            ],
            vec!["ssl.keystore.type=BCFKS", "PEM, PKCS12 or JKS"],
        ),
    ];
    for (keys, expected) in cases {
        let keys: Vec<(&str, &str)> = keys.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let e = start_up_error(dir.path(), &keys).await;
        for part in expected {
            assert!(e.contains(part), "{keys:?}: {e}");
        }
        assert!(
            !e.contains("keytool-pw") && !e.contains("jks-pass"),
            "a password in {e}"
        );
    }
}

#[tokio::test]
async fn a_replaced_pkcs12_keystore_is_served_to_new_connections() {
    let st = stores();
    let dir = tempfile::tempdir().unwrap();
    let live = dir.path().join("broker.p12");
    std::fs::copy(&st.keytool, &live).unwrap();
    let (live_s, truststore) = (s(&live), s(&st.truststore));
    let b = tls_broker_with(&[
        ("ssl.keystore.type", "PKCS12"),
        ("ssl.keystore.location", live_s.as_str()),
        ("ssl.keystore.password", "keytool-pw"),
        ("ssl.truststore.type", "PKCS12"),
        ("ssl.truststore.location", truststore.as_str()),
        ("ssl.truststore.password", "trust-pw"),
    ])
    .await;
    let alice = st.ca.issue(&[(rcgen::DnType::CommonName, "alice")], &[]);
    assert_eq!(
        served_leaf(b.tls, &st.ca, &alice).await,
        st.leaf.der.to_vec()
    );

    // A renewed certificate (same subject and names, new key), as keytool writes it.
    let renewed = server_leaf(&st.ca);
    let staged = openssl_keystore(dir.path(), "renewed.p12", &renewed, &st.ca, "tmp-pw", false);
    let staged = keytool_keystore(dir.path(), &staged, "tmp-pw", "keytool-pw");
    std::fs::rename(&staged, &live).unwrap();
    let mut served = Vec::new();
    for _ in 0..50 {
        served = served_leaf(b.tls, &st.ca, &alice).await;
        if served == renewed.der.to_vec() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(
        served,
        renewed.der.to_vec(),
        "the renewed certificate was not picked up"
    );
}

#[tokio::test]
async fn the_peer_client_connects_with_pkcs12_stores() {
    let st = stores();
    let (keystore, truststore) = (s(&st.keytool), s(&st.truststore));
    let keys = [
        ("ssl.keystore.type", "PKCS12"),
        ("ssl.keystore.location", keystore.as_str()),
        ("ssl.keystore.password", "keytool-pw"),
        ("ssl.truststore.type", "PKCS12"),
        ("ssl.truststore.location", truststore.as_str()),
        ("ssl.truststore.password", "trust-pw"),
        // The broker's certificate from the PKCS12 keystore is the peer's client certificate.
        ("ssl.client.auth", "required"),
    ];
    let b = tls_broker_with(&keys).await;
    let dir = tempfile::tempdir().unwrap();
    let mut all = vec![("listeners", "SSL://127.0.0.1:0")];
    all.extend_from_slice(&keys);
    let config = common::config_for(dir.path(), &all);
    let peer = strata::security::tls::client::for_listener(&config, "SSL")
        .expect("PKCS12 stores read")
        .expect("SSL listener");
    let addr = format!("localhost:{}", b.tls.port());
    let mut stream = strata::security::tls::client::connect(&addr, Some(&peer))
        .await
        .unwrap();
    let ok =
        tokio::time::timeout(Duration::from_secs(2), api_versions_round_trip(&mut stream)).await;
    assert_eq!(ok.ok().flatten(), Some(true));
}
