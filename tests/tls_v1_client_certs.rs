//! X.509 v1 client certificates on an SSL listener with `ssl.client.auth=required` (issue 35):
//! Kafka (Java) accepts a v1 end-entity certificate that a trusted CA signed, and
//! `openssl x509 -req` without an extensions file writes exactly that, so Strata accepts it
//! too, over TLS 1.3 and 1.2, RSA and EC, with its principal from the subject as for v3. A v1
//! certificate from an untrusted CA, one out of its validity, and any chain where a v1
//! certificate acts as the CA are refused, and so is a client that has the certificate but
//! not its key. The certificates are made with the `openssl` CLI
//! as an operator would; the broker's own certificate comes from rcgen.
mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use x509_parser::prelude::{FromDer, X509Certificate, X509Version};

use common::certs::{server_leaf, Ca};
use common::tls::{api_versions_ok, tls_broker, tls_connect};

/// The openssl configuration every command here reads, so the machine's own defaults (which
/// may add extensions) play no part: a CA gets `ca_ext`, a leaf's request nothing, and
/// `openssl ca` (used only to set validity dates in the past or future) adds nothing either.
const OPENSSL_CNF: &str = "\
[req]
distinguished_name = dn
[dn]
[ca_ext]
basicConstraints = critical,CA:TRUE
keyUsage = critical,keyCertSign,cRLSign
subjectKeyIdentifier = hash
[v3_leaf]
basicConstraints = critical,CA:FALSE
extendedKeyUsage = clientAuth
[ca]
default_ca = dated
[dated]
database = index.txt
new_certs_dir = .
serial = serial
default_md = sha256
policy = anything
unique_subject = no
[anything]
commonName = supplied
organizationName = optional
organizationalUnitName = optional
";

/// A temporary directory where certificates are made with the `openssl` CLI.
struct Openssl {
    dir: tempfile::TempDir,
}

/// A certificate and its key, as files in the directory.
struct Issued {
    cert: PathBuf,
    key: PathBuf,
}

impl Openssl {
    fn new() -> Openssl {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("openssl.cnf"), OPENSSL_CNF).unwrap();
        std::fs::write(dir.path().join("index.txt"), "").unwrap();
        std::fs::write(dir.path().join("serial"), "1000\n").unwrap();
        Openssl { dir }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn run(&self, args: &[&str]) {
        let out = Command::new("openssl")
            .args(args)
            .current_dir(self.dir.path())
            .output()
            .expect("the openssl CLI runs");
        assert!(
            out.status.success(),
            "openssl {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// A self-signed v3 CA (`openssl req -x509`).
    fn ca(&self, name: &str) -> Issued {
        let (cert, key) = (format!("{name}.crt"), format!("{name}.key"));
        self.run(&[
            "req",
            "-x509",
            "-config",
            "openssl.cnf",
            "-extensions",
            "ca_ext",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-keyout",
            &key,
            "-out",
            &cert,
            "-subj",
            &format!("/CN={name}"),
            "-days",
            "2",
        ]);
        self.issued(name)
    }

    /// A key and its certificate request (`openssl req -new`); `ec` for a P-256 key.
    fn request(&self, name: &str, subject: &str, ec: bool) {
        let key_spec = if ec { "ec" } else { "rsa:2048" };
        let mut args = vec!["req", "-new", "-config", "openssl.cnf", "-newkey", key_spec];
        if ec {
            args.extend(["-pkeyopt", "ec_paramgen_curve:P-256"]);
        }
        let (key, csr) = (format!("{name}.key"), format!("{name}.csr"));
        args.extend(["-nodes", "-keyout", &key, "-out", &csr, "-subj", subject]);
        self.run(&args);
    }

    /// A certificate signed by `issuer` the way `openssl x509 -req` does it, without an
    /// extensions file (v1), or with the `v3_leaf` extensions (v3).
    fn sign(&self, name: &str, subject: &str, issuer: &Issued, v3: bool, ec: bool) -> Issued {
        self.request(name, subject, ec);
        let (csr, cert) = (format!("{name}.csr"), format!("{name}.crt"));
        let (ca, ca_key) = (
            issuer.cert.display().to_string(),
            issuer.key.display().to_string(),
        );
        let mut args = vec![
            "x509",
            "-req",
            "-in",
            &csr,
            "-CA",
            &ca,
            "-CAkey",
            &ca_key,
            "-set_serial",
            "0x2a",
            "-out",
            &cert,
            "-days",
            "1",
            "-sha256",
        ];
        if v3 {
            args.extend(["-extfile", "openssl.cnf", "-extensions", "v3_leaf"]);
        }
        self.run(&args);
        self.issued(name)
    }

    /// A v1 certificate signed by `issuer` valid only between `start` and `end`
    /// (YYYYMMDDHHMMSSZ): `openssl ca` without extensions, as `x509 -req` cannot date one.
    fn dated(&self, name: &str, subject: &str, issuer: &Issued, start: &str, end: &str) -> Issued {
        self.request(name, subject, false);
        let (csr, cert) = (format!("{name}.csr"), format!("{name}.crt"));
        let (ca, ca_key) = (
            issuer.cert.display().to_string(),
            issuer.key.display().to_string(),
        );
        self.run(&[
            "ca",
            "-batch",
            "-config",
            "openssl.cnf",
            "-cert",
            &ca,
            "-keyfile",
            &ca_key,
            "-in",
            &csr,
            "-out",
            &cert,
            "-startdate",
            start,
            "-enddate",
            end,
            "-notext",
        ]);
        self.issued(name)
    }

    fn issued(&self, name: &str) -> Issued {
        Issued {
            cert: self.path(&format!("{name}.crt")),
            key: self.path(&format!("{name}.key")),
        }
    }
}

fn der(path: &Path) -> CertificateDer<'static> {
    CertificateDer::from_pem_file(path).expect("a PEM certificate")
}

fn version(path: &Path) -> X509Version {
    let der = der(path);
    X509Certificate::from_der(&der).unwrap().1.version()
}

/// A client trusting the broker's CA and presenting `chain` (leaf first) with `leaf`'s key,
/// over `versions`. Given to rustls as a resolved key: its own consistency check of the key
/// against the certificate parses with webpki, which refuses v1.
fn client(
    broker_ca: &Ca,
    leaf: &Issued,
    chain: &[&Issued],
    versions: &[&'static rustls::SupportedProtocolVersion],
) -> Arc<rustls::ClientConfig> {
    let mut roots = rustls::RootCertStore::empty();
    roots.add(broker_ca.cert.der().clone()).unwrap();
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let key = PrivateKeyDer::from_pem_file(&leaf.key).expect("a PEM key");
    let signing_key = provider.key_provider.load_private_key(key).unwrap();
    let certs = std::iter::once(der(&leaf.cert))
        .chain(chain.iter().map(|c| der(&c.cert)))
        .collect();
    let certified = rustls::sign::CertifiedKey::new(certs, signing_key);
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_protocol_versions(versions)
        .unwrap()
        .with_root_certificates(roots)
        .with_client_cert_resolver(Arc::new(rustls::sign::SingleCertAndKey::from(certified)));
    Arc::new(config)
}

const TLS13: &[&rustls::SupportedProtocolVersion] = &[&rustls::version::TLS13];
const TLS12: &[&rustls::SupportedProtocolVersion] = &[&rustls::version::TLS12];

/// The broker's PEM keystore (rcgen) and a truststore holding `trusted` (openssl).
fn stores(dir: &Path, broker_ca: &Ca, trusted: &Issued) -> (PathBuf, PathBuf) {
    let leaf = server_leaf(broker_ca);
    let keystore = dir.join("broker.keystore.pem");
    std::fs::write(&keystore, format!("{}{}", leaf.key_pem, leaf.cert_pem)).unwrap();
    let truststore = dir.join("truststore.pem");
    std::fs::copy(&trusted.cert, &truststore).unwrap();
    (keystore, truststore)
}

/// The principal an SSL listener with `rules` gives the connection of `client`, from
/// ServerTls itself (None: refused).
async fn principal_for(
    keystore: &Path,
    truststore: &Path,
    rules: &str,
    client: Arc<rustls::ClientConfig>,
) -> Option<String> {
    let dir = tempfile::tempdir().unwrap();
    let (ks, ts) = (
        keystore.display().to_string(),
        truststore.display().to_string(),
    );
    let config = common::config_for(
        dir.path(),
        &[
            ("listeners", "SSL://127.0.0.1:0"),
            ("ssl.keystore.type", "PEM"),
            ("ssl.keystore.location", &ks),
            ("ssl.truststore.type", "PEM"),
            ("ssl.truststore.location", &ts),
            ("ssl.client.auth", "required"),
            ("ssl.principal.mapping.rules", rules),
        ],
    );
    let tls =
        strata::security::tls::ServerTls::new(&config, "SSL", Duration::from_secs(2)).unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let server = tokio::spawn(async move {
        let (tcp, _) = listener.accept().await.unwrap();
        let accepted = tls.accept(tcp, true).await;
        accepted.ok().map(|(_, p)| p.unwrap().to_string())
    });
    let c = tls_connect(addr, client).await;
    let principal = server.await.unwrap();
    drop(c);
    principal
}

#[tokio::test]
async fn a_v1_client_certificate_signed_by_a_trusted_ca_connects_with_its_principal() {
    let ssl = Openssl::new();
    let trusted = ssl.ca("trusted-ca");
    let alice = ssl.sign(
        "alice",
        "/O=Example/OU=Clients/CN=alice",
        &trusted,
        false,
        false,
    );
    let bob = ssl.sign("bob", "/O=Example/OU=Clients/CN=bob", &trusted, false, true);
    assert_eq!(
        version(&alice.cert),
        X509Version::V1,
        "openssl x509 -req writes v1"
    );
    assert_eq!(version(&bob.cert), X509Version::V1);
    let broker_ca = Ca::new("broker-ca");
    let (ks, ts) = stores(ssl.dir.path(), &broker_ca, &trusted);
    let b = tls_broker(&ks, &ts, &[("ssl.client.auth", "required")]).await;
    // TLS 1.3 and 1.2 check the client's handshake signature differently; RSA and EC keys.
    for (who, leaf) in [("alice", &alice), ("bob", &bob)] {
        for versions in [TLS13, TLS12] {
            assert!(
                api_versions_ok(b.tls, client(&broker_ca, leaf, &[], versions)).await,
                "{who} over {versions:?}"
            );
        }
    }
    // A v3 certificate from the same CA still works.
    let carol = ssl.sign("carol", "/CN=carol", &trusted, true, false);
    assert_eq!(version(&carol.cert), X509Version::V3);
    assert!(api_versions_ok(b.tls, client(&broker_ca, &carol, &[], TLS13)).await);

    // The principal comes from the subject as for a v3 certificate: DEFAULT, and the rules.
    let tls13 = || client(&broker_ca, &alice, &[], TLS13);
    assert_eq!(
        principal_for(&ks, &ts, "DEFAULT", tls13()).await.as_deref(),
        Some("User:CN=alice,OU=Clients,O=Example")
    );
    assert_eq!(
        principal_for(
            &ks,
            &ts,
            "RULE:^CN=(.*?),OU=Clients.*$/$1/U, DEFAULT",
            tls13()
        )
        .await
        .as_deref(),
        Some("User:ALICE")
    );
    let tls12 = client(&broker_ca, &bob, &[], TLS12);
    assert_eq!(
        principal_for(&ks, &ts, "RULE:^CN=(.*?),.*$/$1/", tls12)
            .await
            .as_deref(),
        Some("User:bob")
    );
}

#[tokio::test]
async fn v1_client_certificates_from_an_untrusted_ca_or_out_of_their_validity_are_refused() {
    let ssl = Openssl::new();
    let trusted = ssl.ca("trusted-ca");
    let rogue = ssl.ca("rogue-ca");
    // Another CA under the trusted one's very name: only its signature tells them apart.
    let impostor = {
        let dir = Openssl::new();
        let ca = dir.ca("trusted-ca");
        let copy = |p: &Path, name: &str| {
            let to = ssl.path(name);
            std::fs::copy(p, &to).unwrap();
            to
        };
        Issued {
            cert: copy(&ca.cert, "impostor.crt"),
            key: copy(&ca.key, "impostor.key"),
        }
    };
    let broker_ca = Ca::new("broker-ca");
    let (ks, ts) = stores(ssl.dir.path(), &broker_ca, &trusted);
    let b = tls_broker(&ks, &ts, &[("ssl.client.auth", "required")]).await;
    let good = ssl.sign("good", "/CN=good", &trusted, false, false);
    let refused = [
        (
            "untrusted CA",
            ssl.sign("rogue-leaf", "/CN=mallory", &rogue, false, false),
        ),
        (
            "a CA with the trusted name",
            ssl.sign("imp-leaf", "/CN=mallory", &impostor, false, false),
        ),
        (
            "expired",
            ssl.dated(
                "expired",
                "/CN=late",
                &trusted,
                "20200101000000Z",
                "20200102000000Z",
            ),
        ),
        (
            "not yet valid",
            ssl.dated(
                "early",
                "/CN=early",
                &trusted,
                "20990101000000Z",
                "20990102000000Z",
            ),
        ),
    ];
    for (why, leaf) in &refused {
        assert_eq!(version(&leaf.cert), X509Version::V1, "{why}");
        for versions in [TLS13, TLS12] {
            assert!(
                !api_versions_ok(b.tls, client(&broker_ca, leaf, &[], versions)).await,
                "{why} over {versions:?} was accepted"
            );
        }
    }
    // The certificate without its key: the handshake signature gives the client away.
    let stolen = Issued {
        cert: good.cert.clone(),
        key: refused[0].1.key.clone(),
    };
    for versions in [TLS13, TLS12] {
        assert!(
            !api_versions_ok(b.tls, client(&broker_ca, &stolen, &[], versions)).await,
            "a v1 certificate with another key over {versions:?} was accepted"
        );
    }
    // The refusals left the listener serving.
    assert!(api_versions_ok(b.tls, client(&broker_ca, &good, &[], TLS13)).await);
}

#[tokio::test]
async fn a_v1_certificate_never_acts_as_a_ca() {
    let ssl = Openssl::new();
    let root = ssl.ca("root-ca");
    // An intermediate made the v1 way and signed by the trusted root.
    let v1_ca = ssl.sign(
        "v1-intermediate",
        "/CN=v1-intermediate",
        &root,
        false,
        false,
    );
    assert_eq!(version(&v1_ca.cert), X509Version::V1);
    let v1_leaf = ssl.sign("v1-leaf", "/CN=under-v1", &v1_ca, false, false);
    let v3_leaf = ssl.sign("v3-leaf", "/CN=under-v1", &v1_ca, true, false);
    let broker_ca = Ca::new("broker-ca");
    let (ks, ts) = stores(ssl.dir.path(), &broker_ca, &root);
    let b = tls_broker(&ks, &ts, &[("ssl.client.auth", "required")]).await;
    for (why, leaf) in [("v1 leaf", &v1_leaf), ("v3 leaf", &v3_leaf)] {
        for versions in [TLS13, TLS12] {
            assert!(
                !api_versions_ok(b.tls, client(&broker_ca, leaf, &[&v1_ca], versions)).await,
                "{why} under a v1 CA over {versions:?} was accepted"
            );
        }
    }
    // The v1 intermediate itself is a fine client certificate: the root signed it.
    assert!(api_versions_ok(b.tls, client(&broker_ca, &v1_ca, &[], TLS13)).await);
}
