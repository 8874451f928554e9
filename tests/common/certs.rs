//! Certificates for the TLS tests, made with rcgen: a CA, the leaves it issues, and the PEM
//! keystore and truststore files a broker reads.
#![allow(dead_code)]
use std::path::{Path, PathBuf};

use rustls::pki_types::CertificateDer;

/// A certificate authority and the certificates it issues.
pub struct Ca {
    pub cert: rcgen::Certificate,
    issuer: rcgen::Issuer<'static, rcgen::KeyPair>,
}

/// A leaf certificate with its key, as PEM and as rustls wants them.
pub struct Leaf {
    pub cert_pem: String,
    pub key_pem: String,
    pub der: CertificateDer<'static>,
    pub key_der: Vec<u8>,
}

impl Ca {
    pub fn new(name: &str) -> Ca {
        let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
        params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        params.distinguished_name = dn(&[(rcgen::DnType::CommonName, name)]);
        params.key_usages = vec![
            rcgen::KeyUsagePurpose::KeyCertSign,
            rcgen::KeyUsagePurpose::CrlSign,
        ];
        let key = rcgen::KeyPair::generate().unwrap();
        let cert = params.self_signed(&key).unwrap();
        Ca {
            cert,
            issuer: rcgen::Issuer::new(params, key),
        }
    }

    pub fn pem(&self) -> String {
        self.cert.pem()
    }

    pub fn issue(&self, subject: &[(rcgen::DnType, &str)], sans: &[&str]) -> Leaf {
        let mut params =
            rcgen::CertificateParams::new(sans.iter().map(|s| s.to_string()).collect::<Vec<_>>())
                .unwrap();
        params.distinguished_name = dn(subject);
        let key = rcgen::KeyPair::generate().unwrap();
        let cert = params.signed_by(&key, &self.issuer).unwrap();
        Leaf {
            cert_pem: cert.pem(),
            key_pem: key.serialize_pem(),
            der: cert.der().clone(),
            key_der: key.serialize_der(),
        }
    }
}

pub fn dn(parts: &[(rcgen::DnType, &str)]) -> rcgen::DistinguishedName {
    let mut dn = rcgen::DistinguishedName::new();
    for (t, v) in parts {
        dn.push(t.clone(), *v);
    }
    dn
}

pub fn server_leaf(ca: &Ca) -> Leaf {
    ca.issue(
        &[(rcgen::DnType::CommonName, "broker")],
        &["localhost", "127.0.0.1"],
    )
}

/// Writes the PEM keystore (key and chain in one file) and the truststore; returns the
/// broker keys for them.
pub fn write_stores(dir: &Path, leaf: &Leaf, trust: &[&Ca]) -> (PathBuf, PathBuf) {
    let keystore = dir.join("broker.keystore.pem");
    let truststore = dir.join("truststore.pem");
    std::fs::write(&keystore, format!("{}{}", leaf.key_pem, leaf.cert_pem)).unwrap();
    let trusted: String = trust.iter().map(|c| c.pem()).collect();
    std::fs::write(&truststore, trusted).unwrap();
    (keystore, truststore)
}
