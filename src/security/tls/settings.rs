//! A listener's TLS settings from Kafka's keys (`ssl.*`, with `listener.name.<listener>.ssl.*`
//! winning key by key, as Kafka's listener prefix does), checked and turned into rustls
//! configurations. Stores are PEM, or PKCS12 (type PKCS12, or JKS holding a PKCS12 file, as
//! Java reads it; see [`super::keystore`]). What rustls cannot honour stops start-up with an
//! error naming the key: keystores in the old JKS file format, encrypted PEM keys, TLS
//! versions before 1.2, cipher suites rustls lacks. The same `ssl.*` keys given as options of
//! a JAAS entry configure the client TLS of the OAUTHBEARER JWKS endpoint
//! ([`TlsSettings::from_options`], Kafka's `JaasOptionsUtils.createSSLSocketFactory`).
use std::path::PathBuf;
use std::sync::Arc;

use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::WebPkiClientVerifier;
use rustls::{RootCertStore, ServerConfig, SupportedProtocolVersion};

use super::client_auth::ClientCertificates;
use super::keystore::{self, StoreFile};
use super::mapping::PrincipalMapper;
use crate::config::BrokerConfig;

/// Why TLS cannot be set up as configured; the text names the key (and the file).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsConfigError(pub String);

impl std::fmt::Display for TlsConfigError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for TlsConfigError {}

fn err<T>(text: impl Into<String>) -> Result<T, TlsConfigError> {
    Err(TlsConfigError(text.into()))
}

/// `ssl.client.auth`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClientAuth {
    None,
    /// A client certificate is asked for; a client without one connects as ANONYMOUS.
    Requested,
    Required,
}

/// Where the key and certificate chain come from.
#[derive(Debug, Clone)]
enum KeySource {
    /// `ssl.keystore.location` of type PEM: the private key and the chain in one file.
    File { key: String, path: PathBuf },
    /// `ssl.keystore.key` and `ssl.keystore.certificate.chain`.
    Inline { key_pem: String, chain_pem: String },
    /// `ssl.keystore.location` of type PKCS12 or JKS, opened with `ssl.keystore.password`.
    Pkcs12(Pkcs12File),
}

#[derive(Debug, Clone)]
enum TrustSource {
    File {
        key: String,
        path: PathBuf,
    },
    Inline(String),
    /// `ssl.truststore.location` of type PKCS12 or JKS, opened with `ssl.truststore.password`.
    Pkcs12(Pkcs12File),
}

/// A PKCS12 store file, the key that names it and the password that opens it.
#[derive(Clone)]
struct Pkcs12File {
    key: String,
    path: PathBuf,
    password_key: String,
    password: String,
}

impl std::fmt::Debug for Pkcs12File {
    /// Without the password: settings end up in logs.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pkcs12File")
            .field("key", &self.key)
            .field("path", &self.path)
            .finish()
    }
}

impl Pkcs12File {
    fn what(&self) -> String {
        format!("{} ({})", self.key, self.path.display())
    }

    fn read(&self) -> Result<(String, Vec<u8>), TlsConfigError> {
        let data = std::fs::read(&self.path).map_err(|e| {
            TlsConfigError(format!(
                "{}: cannot read {}: {e}",
                self.key,
                self.path.display()
            ))
        })?;
        Ok((self.what(), data))
    }
}

/// One listener's (or the peer client's) TLS settings, resolved and checked.
#[derive(Clone)]
pub struct TlsSettings {
    /// The listener the settings are for (None: the global `ssl.*` keys).
    pub listener: Option<String>,
    keystore: Option<KeySource>,
    truststore: Option<TrustSource>,
    pub client_auth: ClientAuth,
    versions: Vec<&'static SupportedProtocolVersion>,
    pub(crate) provider: Arc<CryptoProvider>,
    pub mapper: PrincipalMapper,
    /// `ssl.endpoint.identification.algorithm=https` (Kafka's default): the peer client checks
    /// the server's host name against its certificate.
    pub endpoint_identification: bool,
}

/// Kafka's defaults for the keys read here.
fn default_of(key: &str) -> Option<&'static str> {
    Some(match key {
        "ssl.keystore.type" | "ssl.truststore.type" => "JKS",
        "ssl.client.auth" => "none",
        "ssl.enabled.protocols" => "TLSv1.2,TLSv1.3",
        "ssl.protocol" => "TLSv1.3",
        "ssl.principal.mapping.rules" => "DEFAULT",
        "ssl.endpoint.identification.algorithm" => "https",
        _ => return None,
    })
}

/// Where the `ssl.*` keys are read from.
enum Lookup<'a> {
    /// The broker's configuration, a listener's prefixed keys first.
    Broker {
        config: &'a BrokerConfig,
        listener: Option<&'a str>,
    },
    /// The options of a JAAS entry; `what` names them in errors.
    Options {
        options: &'a std::collections::BTreeMap<String, String>,
        what: &'a str,
    },
}

impl Lookup<'_> {
    /// The value and the key it was set under (listener form first); empty counts as unset.
    fn get(&self, key: &str) -> Option<(String, String)> {
        let (config, listener) = match self {
            Lookup::Broker { config, listener } => (config, listener),
            Lookup::Options { options, what } => {
                let v = options.get(key)?;
                return (!v.trim().is_empty()).then(|| (format!("{what} option {key}"), v.clone()));
            }
        };
        if let Some(l) = listener {
            let overrides = config.listener_ssl_configs.get(&l.to_ascii_uppercase());
            if let Some(v) = overrides.and_then(|o| o.get(key)) {
                if !v.trim().is_empty() {
                    return Some((
                        format!("listener.name.{}.{key}", l.to_ascii_lowercase()),
                        v.clone(),
                    ));
                }
            }
        }
        let v = config.static_configs.get(key)?;
        (!v.trim().is_empty()).then(|| (key.to_string(), v.clone()))
    }

    fn value(&self, key: &str) -> (String, String) {
        self.get(key).unwrap_or_else(|| {
            (
                key.to_string(),
                default_of(key).unwrap_or_default().to_string(),
            )
        })
    }
}

impl TlsSettings {
    /// The settings of `listener` (None: the global `ssl.*` keys only).
    pub fn resolve(
        config: &BrokerConfig,
        listener: Option<&str>,
    ) -> Result<TlsSettings, TlsConfigError> {
        Self::resolve_from(&Lookup::Broker { config, listener }, listener)
    }

    /// The settings given as `ssl.*` options of a JAAS entry (`what` names the entry in
    /// errors), for a client: the JWKS endpoint's.
    pub fn from_options(
        options: &std::collections::BTreeMap<String, String>,
        what: &str,
    ) -> Result<TlsSettings, TlsConfigError> {
        Self::resolve_from(&Lookup::Options { options, what }, None)
    }

    fn resolve_from(l: &Lookup<'_>, listener: Option<&str>) -> Result<TlsSettings, TlsConfigError> {
        let keystore = keystore(l)?;
        let truststore = truststore(l)?;
        let (auth_key, auth) = l.value("ssl.client.auth");
        let client_auth = match auth.trim().to_ascii_lowercase().as_str() {
            "none" => ClientAuth::None,
            "requested" => ClientAuth::Requested,
            "required" => ClientAuth::Required,
            other => {
                return err(format!(
                    "{auth_key}={other}: expected none, requested or required"
                ))
            }
        };
        if client_auth != ClientAuth::None && truststore.is_none() {
            return err(format!(
                "{auth_key}={auth} needs a truststore to check client certificates against \
                 (ssl.truststore.location or ssl.truststore.certificates)"
            ));
        }
        let (proto_key, proto) = l.value("ssl.protocol");
        if !matches!(proto.trim(), "TLS" | "TLSv1.2" | "TLSv1.3") {
            return err(format!(
                "{proto_key}={proto}: Strata's TLS (rustls) offers TLS, TLSv1.2 and TLSv1.3"
            ));
        }
        let (versions_key, versions_raw) = l.value("ssl.enabled.protocols");
        let mut versions = Vec::new();
        for v in split(&versions_raw) {
            versions.push(match v.as_str() {
                "TLSv1.2" => &rustls::version::TLS12,
                "TLSv1.3" => &rustls::version::TLS13,
                other => {
                    return err(format!(
                        "{versions_key}: {other} is not supported; rustls implements TLSv1.2 \
                         and TLSv1.3 only"
                    ))
                }
            });
        }
        if versions.is_empty() {
            return err(format!("{versions_key} is empty: no TLS version to offer"));
        }
        let mut provider = rustls::crypto::ring::default_provider();
        if let Some((suites_key, suites_raw)) = l.get("ssl.cipher.suites") {
            let mut chosen = Vec::new();
            for name in split(&suites_raw) {
                let found = rustls::crypto::ring::ALL_CIPHER_SUITES.iter().find(|s| {
                    s.suite()
                        .as_str()
                        .is_some_and(|r| iana_name(r) == name.as_str())
                });
                match found {
                    Some(s) => chosen.push(*s),
                    None => {
                        return err(format!(
                            "{suites_key}: cipher suite {name} is not available in rustls (it \
                             offers {})",
                            rustls::crypto::ring::ALL_CIPHER_SUITES
                                .iter()
                                .filter_map(|s| s.suite().as_str().map(iana_name))
                                .collect::<Vec<_>>()
                                .join(", ")
                        ))
                    }
                }
            }
            if !chosen.is_empty() {
                provider.cipher_suites = chosen;
            }
        }
        let (rules_key, rules) = l.value("ssl.principal.mapping.rules");
        let mapper = PrincipalMapper::parse(&rules)
            .map_err(|e| TlsConfigError(format!("{rules_key}: {e}")))?;
        let (_, algorithm) = l.value("ssl.endpoint.identification.algorithm");
        let endpoint_identification = match algorithm.trim().to_ascii_lowercase().as_str() {
            "" => false,
            "https" => true,
            other => {
                return err(format!(
                    "ssl.endpoint.identification.algorithm={other}: expected https or empty"
                ))
            }
        };
        let settings = TlsSettings {
            listener: listener.map(str::to_string),
            keystore,
            truststore,
            client_auth,
            versions,
            provider: Arc::new(provider),
            mapper,
            endpoint_identification,
        };
        // A version with none of the chosen suites cannot work; rustls says so here.
        ServerConfig::builder_with_provider(settings.provider.clone())
            .with_protocol_versions(&settings.versions)
            .map_err(|e| {
                TlsConfigError(format!(
                    "ssl.cipher.suites and ssl.enabled.protocols do not fit together: {e}"
                ))
            })?;
        Ok(settings)
    }

    /// The files whose changes reload the certificates.
    pub fn watched_files(&self) -> Vec<PathBuf> {
        let mut files = Vec::new();
        match &self.keystore {
            Some(KeySource::File { path, .. } | KeySource::Pkcs12(Pkcs12File { path, .. })) => {
                files.push(path.clone())
            }
            Some(KeySource::Inline { .. }) | None => {}
        }
        match &self.truststore {
            Some(TrustSource::File { path, .. } | TrustSource::Pkcs12(Pkcs12File { path, .. })) => {
                files.push(path.clone())
            }
            Some(TrustSource::Inline(_)) | None => {}
        }
        files
    }

    pub fn has_keystore(&self) -> bool {
        self.keystore.is_some()
    }

    /// The certificate chain and key, read now (files are read again on every call).
    pub fn load_identity(
        &self,
    ) -> Result<Option<(Vec<CertificateDer<'static>>, PrivateKeyDer<'static>)>, TlsConfigError>
    {
        let Some(source) = &self.keystore else {
            return Ok(None);
        };
        let (what, key_pem, chain_pem) = match source {
            KeySource::File { key, path } => {
                let text = read(key, path)?;
                let what = format!("{key} ({})", path.display());
                (what, text.clone(), text)
            }
            KeySource::Inline { key_pem, chain_pem } => (
                "ssl.keystore.key / ssl.keystore.certificate.chain".to_string(),
                key_pem.clone(),
                chain_pem.clone(),
            ),
            KeySource::Pkcs12(file) => {
                let (what, data) = file.read()?;
                let store = StoreFile {
                    what: &what,
                    password_key: &file.password_key,
                };
                return keystore::read_identity(&store, &data, &file.password).map(Some);
            }
        };
        if key_pem.contains("ENCRYPTED PRIVATE KEY") || key_pem.contains("Proc-Type: 4,ENCRYPTED") {
            return err(format!(
                "{what}: the private key is encrypted; Strata reads unencrypted PEM keys only \
                 (decrypt it with `openssl pkcs8 -topk8 -nocrypt`, keep the file private, and \
                 leave ssl.key.password unset)"
            ));
        }
        let chain: Vec<CertificateDer<'static>> =
            CertificateDer::pem_slice_iter(chain_pem.as_bytes())
                .collect::<Result<_, _>>()
                .map_err(|e| TlsConfigError(format!("{what}: bad PEM certificate: {e}")))?;
        if chain.is_empty() {
            return err(format!(
                "{what}: no certificate (-----BEGIN CERTIFICATE-----) found"
            ));
        }
        let key = PrivateKeyDer::from_pem_slice(key_pem.as_bytes())
            .map_err(|e| TlsConfigError(format!("{what}: no usable private key: {e}")))?;
        Ok(Some((chain, key)))
    }

    /// The trusted certificates, read now.
    pub fn load_roots(&self) -> Result<Option<RootCertStore>, TlsConfigError> {
        let Some(source) = &self.truststore else {
            return Ok(None);
        };
        let (what, pem) = match source {
            TrustSource::File { key, path } => {
                (format!("{key} ({})", path.display()), read(key, path)?)
            }
            TrustSource::Inline(pem) => ("ssl.truststore.certificates".to_string(), pem.clone()),
            TrustSource::Pkcs12(file) => {
                let (what, data) = file.read()?;
                let store = StoreFile {
                    what: &what,
                    password_key: &file.password_key,
                };
                let mut roots = RootCertStore::empty();
                for cert in keystore::read_trusted(&store, &data, &file.password)? {
                    roots.add(cert).map_err(|e| {
                        TlsConfigError(format!("{what}: unusable certificate: {e}"))
                    })?;
                }
                return Ok(Some(roots));
            }
        };
        let mut roots = RootCertStore::empty();
        for cert in CertificateDer::pem_slice_iter(pem.as_bytes()) {
            let cert =
                cert.map_err(|e| TlsConfigError(format!("{what}: bad PEM certificate: {e}")))?;
            roots
                .add(cert)
                .map_err(|e| TlsConfigError(format!("{what}: unusable certificate: {e}")))?;
        }
        if roots.is_empty() {
            return err(format!(
                "{what}: no certificate (-----BEGIN CERTIFICATE-----) found"
            ));
        }
        Ok(Some(roots))
    }

    /// The server configuration, reading the key material now, and the leaf certificate.
    pub fn server_config(
        &self,
    ) -> Result<(Arc<ServerConfig>, CertificateDer<'static>), TlsConfigError> {
        let Some((chain, key)) = self.load_identity()? else {
            return err(format!(
                "listener {} uses TLS but has no key and certificate: set \
                 ssl.keystore.location (ssl.keystore.type PEM or PKCS12) or ssl.keystore.key and \
                 ssl.keystore.certificate.chain",
                self.listener.as_deref().unwrap_or("?")
            ));
        };
        let builder = ServerConfig::builder_with_provider(self.provider.clone())
            .with_protocol_versions(&self.versions)
            .map_err(|e| TlsConfigError(e.to_string()))?;
        // Read even when no client certificate is asked for: Kafka builds its trust managers
        // from the truststore either way, so a wrong password or a broken file stops start-up.
        let roots = self.load_roots()?;
        let builder = match self.client_auth {
            ClientAuth::None => builder.with_no_client_auth(),
            ClientAuth::Requested | ClientAuth::Required => {
                let roots = Arc::new(roots.unwrap_or_else(RootCertStore::empty));
                let verifier = WebPkiClientVerifier::builder_with_provider(
                    roots.clone(),
                    self.provider.clone(),
                );
                let verifier = if self.client_auth == ClientAuth::Requested {
                    verifier.allow_unauthenticated()
                } else {
                    verifier
                };
                let verifier = verifier.build().map_err(|e| {
                    TlsConfigError(format!(
                        "ssl.truststore: cannot check client certificates: {e}"
                    ))
                })?;
                // Kafka (Java) also accepts X.509 v1 client certificates, which webpki refuses.
                builder.with_client_cert_verifier(Arc::new(ClientCertificates::new(
                    verifier,
                    roots,
                    self.provider.signature_verification_algorithms,
                )))
            }
        };
        let leaf = chain[0].clone();
        let config = builder.with_single_cert(chain, key).map_err(|e| {
            TlsConfigError(format!(
                "the key does not fit the certificate or is of an unsupported type: {e}"
            ))
        })?;
        Ok((Arc::new(config), leaf))
    }

    pub(crate) fn versions(&self) -> &[&'static SupportedProtocolVersion] {
        &self.versions
    }
}

/// rustls names TLS 1.3 suites `TLS13_*`; Kafka (Java) uses the IANA `TLS_*` names.
fn iana_name(rustls_name: &str) -> String {
    match rustls_name.strip_prefix("TLS13_") {
        Some(rest) => format!("TLS_{rest}"),
        None => rustls_name.to_string(),
    }
}

fn split(raw: &str) -> Vec<String> {
    raw.split(',')
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .collect()
}

fn read(key: &str, path: &PathBuf) -> Result<String, TlsConfigError> {
    std::fs::read_to_string(path)
        .map_err(|e| TlsConfigError(format!("{key}: cannot read {}: {e}", path.display())))
}

/// How a store file is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum StoreKind {
    Pem,
    /// PKCS12 or JKS: Java reads either file format under either name.
    Java,
}

fn store_type(l: &Lookup<'_>, key: &str) -> Result<(String, StoreKind), TlsConfigError> {
    let (type_key, kind) = l.value(key);
    match kind.trim().to_ascii_uppercase().as_str() {
        "PEM" => Ok((type_key, StoreKind::Pem)),
        "PKCS12" | "JKS" => Ok((format!("{type_key}={}", kind.trim()), StoreKind::Java)),
        other => err(format!(
            "{type_key}={other} is not supported: expected PEM, PKCS12 or JKS (a JKS store \
             must be a PKCS12 file, as keytool writes since Java 9)"
        )),
    }
}

/// The location and password of a PKCS12 store (inline PEM keys refused, as Kafka does).
fn pkcs12_file(
    l: &Lookup<'_>,
    type_key: &str,
    location: Option<(String, String)>,
    inline: Option<(String, String)>,
    password_key: &str,
) -> Result<Option<Pkcs12File>, TlsConfigError> {
    if let Some((k, _)) = inline {
        return err(format!(
            "{k} is for PEM stores only, but {type_key}; set the type to PEM or use the \
             location"
        ));
    }
    let password = l.get(password_key);
    let Some((key, path)) = location else {
        return match password {
            Some((pk, _)) => err(format!("{pk} is set but there is no store location")),
            None => Ok(None),
        };
    };
    let Some((password_key, password)) = password else {
        // Java opens a truststore without its password, skipping the integrity check and
        // every encrypted bag: keytool encrypts the certificates, so nothing would be trusted.
        return err(format!(
            "{key} ({type_key}) is set but {password_key} is not: the store's password is \
             needed to read it"
        ));
    };
    Ok(Some(Pkcs12File {
        key,
        path: PathBuf::from(path.trim()),
        password_key,
        password,
    }))
}

fn keystore(l: &Lookup<'_>) -> Result<Option<KeySource>, TlsConfigError> {
    let location = l.get("ssl.keystore.location");
    let key = l.get("ssl.keystore.key");
    let chain = l.get("ssl.keystore.certificate.chain");
    let (type_key, kind) = store_type(l, "ssl.keystore.type")?;
    if kind == StoreKind::Java {
        let file = pkcs12_file(
            l,
            &type_key,
            location,
            key.or(chain),
            "ssl.keystore.password",
        )?;
        if let (Some(file), Some((k, key_password))) = (&file, l.get("ssl.key.password")) {
            // Kafka opens the key with ssl.key.password; keytool and openssl both protect a
            // PKCS12 key with the store password, so another value cannot open it.
            if key_password != file.password {
                return err(format!(
                    "{k} differs from {}: a PKCS12 keystore's key is protected by the store \
                     password (keytool and openssl write it so); leave {k} unset or give it \
                     the same value",
                    file.password_key
                ));
            }
        }
        return Ok(file.map(KeySource::Pkcs12));
    }
    if location.is_none() && key.is_none() && chain.is_none() {
        return Ok(None);
    }
    if let Some((k, _)) = l.get("ssl.keystore.password") {
        return err(format!(
            "{k}: a PEM keystore has no store password (Kafka refuses it too); only \
             ssl.key.password applies to PEM keys"
        ));
    }
    if let Some((k, _)) = l.get("ssl.key.password") {
        return err(format!(
            "{k}: encrypted PEM keys are not supported (no well-kept Rust crate decrypts \
             them); decrypt the key with `openssl pkcs8 -topk8 -nocrypt` and leave {k} unset"
        ));
    }
    match (location, key, chain) {
        (Some((k, path)), None, None) => Ok(Some(KeySource::File {
            key: k,
            path: PathBuf::from(path.trim()),
        })),
        (None, Some((_, key_pem)), Some((_, chain_pem))) => {
            Ok(Some(KeySource::Inline { key_pem, chain_pem }))
        }
        (Some((k, _)), _, _) => err(format!(
            "{k} and ssl.keystore.key / ssl.keystore.certificate.chain are both set; set one"
        )),
        (None, Some((k, _)), None) | (None, None, Some((k, _))) => err(format!(
            "{k}: ssl.keystore.key and ssl.keystore.certificate.chain go together"
        )),
        (None, None, None) => Ok(None),
    }
}

fn truststore(l: &Lookup<'_>) -> Result<Option<TrustSource>, TlsConfigError> {
    let location = l.get("ssl.truststore.location");
    let inline = l.get("ssl.truststore.certificates");
    let (type_key, kind) = store_type(l, "ssl.truststore.type")?;
    if kind == StoreKind::Java {
        let file = pkcs12_file(l, &type_key, location, inline, "ssl.truststore.password")?;
        return Ok(file.map(TrustSource::Pkcs12));
    }
    if location.is_none() && inline.is_none() {
        return Ok(None);
    }
    if let Some((k, _)) = l.get("ssl.truststore.password") {
        return err(format!(
            "{k}: a PEM truststore has no password (Kafka refuses it too); leave it unset"
        ));
    }
    match (location, inline) {
        (Some((k, path)), None) => Ok(Some(TrustSource::File {
            key: k,
            path: PathBuf::from(path.trim()),
        })),
        (None, Some((_, pem))) => Ok(Some(TrustSource::Inline(pem))),
        (Some((k, _)), Some(_)) => err(format!(
            "{k} and ssl.truststore.certificates are both set; set one"
        )),
        (None, None) => Ok(None),
    }
}
