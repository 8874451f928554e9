//! The check of client certificates on SSL and SASL_SSL listeners (`ssl.client.auth`
//! requested or required): rustls' WebPKI verifier, plus the one kind of certificate Java's
//! PKIX validation (and so Kafka) accepts and webpki refuses outright: an X.509 v1 end-entity
//! certificate, which is what `openssl x509 -req` writes when no extensions file is given, so
//! many existing deployments' client certificates are v1.
//!
//! A v1 client certificate is accepted only when a trusted CA (a truststore entry) issued it
//! directly: its issuer is a trust anchor's subject, its signature verifies with that anchor's
//! key under the listener's signature algorithms, and now is within its validity. A v1
//! certificate is never a CA: one presented as an intermediate is refused by webpki, and a v1
//! leaf whose issuer is not a trust anchor is refused here (chains through intermediates are
//! webpki's, which needs a v3 leaf). Everything about v3 certificates stays webpki's; the
//! handshake signature of a v1 certificate is checked with its key and the same algorithm
//! table rustls uses.
use std::sync::Arc;
use std::time::Duration;

use rustls::client::danger::HandshakeSignatureValid;
use rustls::crypto::WebPkiSupportedAlgorithms;
use rustls::pki_types::{CertificateDer, SubjectPublicKeyInfoDer, UnixTime};
use rustls::server::danger::{ClientCertVerified, ClientCertVerifier};
use rustls::{
    CertificateError, DigitallySignedStruct, DistinguishedName, Error, PeerMisbehaved,
    RootCertStore, SignatureScheme,
};
use x509_parser::prelude::{FromDer, X509Certificate, X509Version};

/// WebPKI's client verifier, and what it refuses that Kafka accepts (X.509 v1 leaves).
#[derive(Debug)]
pub(super) struct ClientCertificates {
    webpki: Arc<dyn ClientCertVerifier>,
    roots: Arc<RootCertStore>,
    algorithms: WebPkiSupportedAlgorithms,
}

impl ClientCertificates {
    /// `webpki` must have been built from the same `roots` and `algorithms`.
    pub(super) fn new(
        webpki: Arc<dyn ClientCertVerifier>,
        roots: Arc<RootCertStore>,
        algorithms: WebPkiSupportedAlgorithms,
    ) -> ClientCertificates {
        ClientCertificates {
            webpki,
            roots,
            algorithms,
        }
    }

    /// A v1 leaf issued by a trust anchor, whose signature verifies and which is valid now.
    fn verify_v1(&self, leaf: &V1Leaf<'_>, now: UnixTime) -> Result<(), Error> {
        let issuers: Vec<_> = self
            .roots
            .roots
            .iter()
            // An anchor's name constraints would need checking against the subject; webpki
            // does that for v3 leaves, so a constrained anchor vouches for none of these.
            .filter(|a| a.subject.as_ref() == leaf.issuer && a.name_constraints.is_none())
            .collect();
        if issuers.is_empty() {
            return Err(CertificateError::UnknownIssuer.into());
        }
        let mut bad_signature = false;
        let signed_by_an_issuer = issuers.iter().any(|anchor| {
            let Some((key_alg, key)) = split_spki(anchor.subject_public_key_info.as_ref()) else {
                return false;
            };
            let fitting = self.algorithms.all.iter().filter(|alg| {
                alg.signature_alg_id().as_ref() == leaf.signature_alg
                    && alg.public_key_alg_id().as_ref() == key_alg
            });
            for alg in fitting {
                match alg.verify_signature(key, leaf.tbs, leaf.signature) {
                    Ok(()) => return true,
                    Err(_) => bad_signature = true,
                }
            }
            false
        });
        if !signed_by_an_issuer {
            return Err(match bad_signature {
                true => CertificateError::BadSignature,
                false => CertificateError::UnsupportedSignatureAlgorithmContext {
                    signature_algorithm_id: leaf.signature_alg.to_vec(),
                    supported_algorithms: self
                        .algorithms
                        .all
                        .iter()
                        .map(|alg| alg.signature_alg_id())
                        .collect(),
                },
            }
            .into());
        }
        let now_s = now.as_secs();
        if now_s < leaf.not_before {
            return Err(CertificateError::NotValidYetContext {
                time: now,
                not_before: unix_time(leaf.not_before),
            }
            .into());
        }
        if now_s > leaf.not_after {
            return Err(CertificateError::ExpiredContext {
                time: now,
                not_after: unix_time(leaf.not_after),
            }
            .into());
        }
        Ok(())
    }
}

impl ClientCertVerifier for ClientCertificates {
    fn offer_client_auth(&self) -> bool {
        self.webpki.offer_client_auth()
    }

    fn client_auth_mandatory(&self) -> bool {
        self.webpki.client_auth_mandatory()
    }

    fn root_hint_subjects(&self) -> &[DistinguishedName] {
        self.webpki.root_hint_subjects()
    }

    fn verify_client_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        now: UnixTime,
    ) -> Result<ClientCertVerified, Error> {
        match V1Leaf::parse(end_entity) {
            None => self
                .webpki
                .verify_client_cert(end_entity, intermediates, now),
            Some(leaf) => {
                self.verify_v1(&leaf?, now)?;
                Ok(ClientCertVerified::assertion())
            }
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, Error> {
        let Some(leaf) = V1Leaf::parse(cert) else {
            return self.webpki.verify_tls12_signature(message, cert, dss);
        };
        let leaf = leaf?;
        let (key_alg, key) = split_spki(leaf.spki_value).ok_or(CertificateError::BadEncoding)?;
        // TLS 1.2 names a scheme that fits several algorithms (ECDSA's curves): the one whose
        // key type is the certificate's, as rustls tries them for v3 certificates.
        let candidates = self
            .algorithms
            .mapping
            .iter()
            .find(|(scheme, _)| *scheme == dss.scheme)
            .map(|(_, algs)| *algs)
            .ok_or(PeerMisbehaved::SignedHandshakeWithUnadvertisedSigScheme)?;
        let alg = candidates
            .iter()
            .find(|alg| alg.public_key_alg_id().as_ref() == key_alg)
            .ok_or_else(
                || CertificateError::UnsupportedSignatureAlgorithmForPublicKeyContext {
                    signature_algorithm_id: candidates
                        .first()
                        .map(|alg| alg.signature_alg_id().as_ref().to_vec())
                        .unwrap_or_default(),
                    public_key_algorithm_id: key_alg.to_vec(),
                },
            )?;
        alg.verify_signature(key, message, dss.signature())
            .map_err(|_| CertificateError::BadSignature)?;
        Ok(HandshakeSignatureValid::assertion())
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, Error> {
        let Some(leaf) = V1Leaf::parse(cert) else {
            return self.webpki.verify_tls13_signature(message, cert, dss);
        };
        let spki = SubjectPublicKeyInfoDer::from(leaf?.spki);
        rustls::crypto::verify_tls13_signature_with_raw_key(message, &spki, dss, &self.algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.webpki.supported_verify_schemes()
    }
}

/// The parts of a v1 certificate its check needs, borrowed from its DER.
struct V1Leaf<'a> {
    /// The DER `tbsCertificate`: what the issuer signed.
    tbs: &'a [u8],
    /// The `signatureAlgorithm`'s contents (as rustls' algorithm identifiers are written).
    signature_alg: &'a [u8],
    signature: &'a [u8],
    /// The issuer name's contents (as a trust anchor's subject is kept).
    issuer: &'a [u8],
    /// The DER `subjectPublicKeyInfo`, and its contents.
    spki: &'a [u8],
    spki_value: &'a [u8],
    /// Seconds since the epoch.
    not_before: u64,
    not_after: u64,
}

impl<'a> V1Leaf<'a> {
    /// None unless `der` is an X.509 v1 certificate (anything else, including what does not
    /// parse, is webpki's to judge); an error when it is v1 but malformed.
    fn parse(der: &'a [u8]) -> Option<Result<V1Leaf<'a>, Error>> {
        let (rest, cert) = X509Certificate::from_der(der).ok()?;
        if cert.version() != X509Version::V1 {
            return None;
        }
        let bad = || Error::from(CertificateError::BadEncoding);
        let parts = || -> Option<V1Leaf<'a>> {
            // A v1 certificate has no extensions or unique identifiers, and the algorithm
            // inside what was signed must be the one the signature claims (as webpki checks).
            if !rest.is_empty()
                || !cert.extensions().is_empty()
                || cert.tbs_certificate.issuer_uid.is_some()
                || cert.tbs_certificate.subject_uid.is_some()
                || cert.signature_algorithm != cert.tbs_certificate.signature
                || cert.signature_value.unused_bits != 0
            {
                return None;
            }
            let tbs_cert = &cert.tbs_certificate;
            let (_, body, _) = tlv(der, SEQUENCE)?;
            let (tbs, _, after_tbs) = tlv(body, SEQUENCE)?;
            let (_, signature_alg, after_alg) = tlv(after_tbs, SEQUENCE)?;
            let (_, bits, _) = tlv(after_alg, BIT_STRING)?;
            let (_, signature) = bits.split_first()?;
            let spki = tbs_cert.subject_pki.raw;
            let validity = cert.validity();
            Some(V1Leaf {
                tbs,
                signature_alg,
                signature,
                issuer: tlv(tbs_cert.issuer.as_raw(), SEQUENCE)?.1,
                spki,
                spki_value: tlv(spki, SEQUENCE)?.1,
                not_before: u64::try_from(validity.not_before.timestamp()).unwrap_or(0),
                not_after: u64::try_from(validity.not_after.timestamp()).unwrap_or(0),
            })
        };
        Some(parts().ok_or_else(bad))
    }
}

const SEQUENCE: u8 = 0x30;
const BIT_STRING: u8 = 0x03;

/// One DER element at the start of `input` with tag `tag`: (its whole encoding, its contents,
/// what follows it).
fn tlv(input: &[u8], tag: u8) -> Option<(&[u8], &[u8], &[u8])> {
    let (&first, rest) = input.split_first()?;
    if first != tag {
        return None;
    }
    let (&len0, rest) = rest.split_first()?;
    let (len, rest) = if len0 < 0x80 {
        (len0 as usize, rest)
    } else {
        let n = (len0 & 0x7f) as usize;
        if n == 0 || n > 4 || rest.len() < n {
            return None;
        }
        let len = rest[..n].iter().fold(0usize, |l, b| (l << 8) | *b as usize);
        (len, &rest[n..])
    };
    if rest.len() < len {
        return None;
    }
    let header = input.len() - rest.len();
    Some((&input[..header + len], &rest[..len], &rest[len..]))
}

/// A `subjectPublicKeyInfo`'s contents split into the algorithm identifier's contents and
/// the key (the bit string's bytes), as rustls' signature algorithms take them.
fn split_spki(value: &[u8]) -> Option<(&[u8], &[u8])> {
    let (_, alg, rest) = tlv(value, SEQUENCE)?;
    let (_, bits, rest) = tlv(rest, BIT_STRING)?;
    let (&unused, key) = bits.split_first()?;
    (unused == 0 && rest.is_empty()).then_some((alg, key))
}

fn unix_time(secs: u64) -> UnixTime {
    UnixTime::since_unix_epoch(Duration::from_secs(secs))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tlv_reads_short_and_long_lengths_and_refuses_truncation() {
        let short = [0x30, 0x02, 0xaa, 0xbb, 0x01];
        assert_eq!(
            tlv(&short, SEQUENCE),
            Some((&short[..4], &short[2..4], &short[4..]))
        );
        let mut long = vec![0x30, 0x81, 0x80];
        long.extend(std::iter::repeat(7u8).take(0x80));
        assert_eq!(tlv(&long, SEQUENCE).map(|t| t.1.len()), Some(0x80));
        assert_eq!(tlv(&long[..50], SEQUENCE), None);
        assert_eq!(tlv(&short, BIT_STRING), None);
        assert_eq!(tlv(&[0x30, 0x80], SEQUENCE), None);
    }

    #[test]
    fn split_spki_wants_no_unused_bits_and_nothing_after_the_key() {
        // AlgorithmIdentifier { 1.2.3 }, BIT STRING 00 01 02
        let spki = [
            0x30, 0x04, 0x06, 0x02, 0x2a, 0x03, 0x03, 0x03, 0x00, 0x01, 0x02,
        ];
        assert_eq!(split_spki(&spki), Some((&spki[2..6], &[0x01, 0x02][..])));
        let mut unused = spki;
        unused[8] = 1;
        assert_eq!(split_spki(&unused), None);
        let mut trailing = spki.to_vec();
        trailing.push(0);
        assert_eq!(split_spki(&trailing), None);
    }
}
