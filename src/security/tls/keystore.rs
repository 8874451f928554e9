//! Java keystore files for TLS: PKCS12 keystores and truststores (`ssl.keystore.type` /
//! `ssl.truststore.type` PKCS12, and JKS when the file is in fact PKCS12), read with the
//! `p12-keystore` crate. Covers what keytool writes since Java 9 (PBES2 with AES-256 and an
//! HmacSHA256 integrity check) and the legacy 3DES/RC2 stores of `openssl pkcs12 -export
//! -legacy`.
//!
//! Passwords as Kafka's `DefaultSslEngineFactory` uses them: `ssl.keystore.password` opens
//! the keystore and its key (`ssl.key.password`, when set, must open the key; keytool and
//! openssl both protect a PKCS12 key with the store password, so it has to equal it), and
//! `ssl.truststore.password` opens the truststore. Trusted are what Java's trust manager
//! takes from a store: the certificates of its trusted-certificate entries and the first
//! certificate of each key entry.
//!
//! Java's JKS and PKCS12 store types both read either file format (its "dual format"
//! keystores), so Kafka's default `ssl.keystore.type=JKS` works with a keytool-made PKCS12
//! file; here the file's first bytes decide too. A file in the old proprietary JKS format is
//! refused: no well-kept Rust crate reads it.
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};

use p12_keystore::{KeyStore, KeyStoreEntry, Pkcs12ImportPolicy};

use super::settings::TlsConfigError;

/// The first bytes of a keystore in Java's proprietary JKS format.
const JKS_MAGIC: [u8; 4] = [0xFE, 0xED, 0xFE, 0xED];

/// How to reach a store's file for the messages: `key (path)`.
pub(super) struct StoreFile<'a> {
    pub what: &'a str,
    pub password_key: &'a str,
}

/// The certificate chain and private key of the keystore in `data`.
pub(super) fn read_identity(
    file: &StoreFile<'_>,
    data: &[u8],
    password: &str,
) -> Result<(Vec<CertificateDer<'static>>, PrivateKeyDer<'static>), TlsConfigError> {
    let store = open(file, data, password)?;
    let mut chains = store.entries().filter_map(|(alias, e)| match e {
        KeyStoreEntry::PrivateKeyChain(chain) if !chain.certs().is_empty() => Some((alias, chain)),
        _ => None,
    });
    let Some((alias, chain)) = chains.next() else {
        return Err(TlsConfigError(format!(
            "{}: the keystore holds no private key with its certificate",
            file.what
        )));
    };
    // Java's key manager would pick among several keys by the handshake's key type; a broker
    // keystore holds one, so a second is named in the log rather than silently ignored.
    if let Some((other, _)) = chains.next() {
        tracing::warn!(keystore = file.what, used = %alias, ignored = %other, "the keystore holds more than one private key; using the first");
    }
    let certs = chain
        .certs()
        .iter()
        .map(|c| CertificateDer::from(c.as_der().to_vec()))
        .collect();
    let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(chain.key().as_der().to_vec()));
    Ok((certs, key))
}

/// The certificates the truststore in `data` trusts.
pub(super) fn read_trusted(
    file: &StoreFile<'_>,
    data: &[u8],
    password: &str,
) -> Result<Vec<CertificateDer<'static>>, TlsConfigError> {
    let store = open(file, data, password)?;
    let trusted: Vec<CertificateDer<'static>> = store
        .entries()
        .filter_map(|(_, e)| match e {
            KeyStoreEntry::Certificate(c) => Some(c.as_der()),
            KeyStoreEntry::PrivateKeyChain(chain) => chain.certs().first().map(|c| c.as_der()),
            KeyStoreEntry::Secret(_) => None,
        })
        .map(|der| CertificateDer::from(der.to_vec()))
        .collect();
    if trusted.is_empty() {
        return Err(TlsConfigError(format!(
            "{}: the truststore holds no trusted certificate (a PKCS12 certificate is trusted \
             when it carries Java's trusted-certificate attribute, as `keytool -importcert` \
             writes it, or belongs to a key entry)",
            file.what
        )));
    }
    Ok(trusted)
}

fn open(file: &StoreFile<'_>, data: &[u8], password: &str) -> Result<KeyStore, TlsConfigError> {
    if data.starts_with(&JKS_MAGIC) {
        return Err(TlsConfigError(format!(
            "{}: the file is in Java's JKS format, which Strata cannot read (no well-kept Rust \
             crate reads it); convert it to PKCS12 with `keytool -importkeystore \
             -srckeystore <file> -destkeystore <new.p12> -deststoretype PKCS12` and point the \
             location at the new file",
            file.what
        )));
    }
    // A PKCS12 file is one DER SEQUENCE; anything else (a PEM file, say) gets a hint.
    if data.first() != Some(&0x30) {
        return Err(TlsConfigError(format!(
            "{}: the file is not a PKCS12 keystore{}",
            file.what,
            if data.starts_with(b"-----BEGIN") {
                " but PEM: set the store's type to PEM"
            } else {
                ""
            }
        )));
    }
    KeyStore::from_pkcs12(data, password, Pkcs12ImportPolicy::Strict).map_err(|e| {
        use p12_keystore::error::Error;
        TlsConfigError(match e {
            // The integrity check (or, without one, the decryption) fails the same way for a
            // wrong password and a damaged file; the password is by far the likelier cause.
            Error::MacError(_) | Error::UnpadError | Error::Pkcs5Error(_) => format!(
                "{}: cannot open the PKCS12 keystore: wrong password ({}) or a damaged file",
                file.what, file.password_key
            ),
            Error::UnsupportedEncryptionScheme | Error::UnsupportedMacAlgorithm => format!(
                "{}: the PKCS12 keystore is protected by an algorithm Strata cannot read ({e}); \
                 re-create it with keytool (PBES2/AES-256) or `openssl pkcs12 -export`",
                file.what
            ),
            other => format!("{}: not a readable PKCS12 keystore: {other}", file.what),
        })
    })
}
