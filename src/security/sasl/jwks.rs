//! The verification keys of OAUTHBEARER's signed-JWT validation (KIP-768): a JWKS document
//! (RFC 7517) read from a `file:` URL and re-read when the file changes (Kafka's
//! `JwksFileVerificationKeyResolver` over a `CachedFile`), or fetched from an `https:` URL by a
//! background thread every `sasl.oauthbearer.jwks.endpoint.refresh.ms`, retrying a failed
//! fetch with exponential backoff from `...retry.backoff.ms` up to `...retry.backoff.max.ms`,
//! and sooner when a token names a key id the set lacks (Kafka's `RefreshingHttpsJwks`).
//! A document that cannot be read keeps the keys already loaded; each failure is logged once.
//! The https client's TLS comes from the `ssl.*` options of the listener's OAUTHBEARER JAAS
//! entry, as Kafka's `VerificationKeyResolverFactory` builds its socket factory from them
//! (a truststore for a private CA, a keystore for mutual TLS, protocols, host-name check);
//! without a truststore there, the system's CA certificates are used.
//!
//! RSA and EC (P-256, P-384, P-521) keys are read; other key types are skipped, as no
//! algorithm Strata verifies could use them.
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex, OnceLock};
use std::time::{Duration, SystemTime};

use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64URL;
use base64::Engine;
use serde_json::Value;

use crate::config::oauth::{JwksEndpoint, OAuthValidation};

/// A JWKS document larger than this is refused rather than held in memory.
pub const MAX_JWKS_BYTES: usize = 1 << 20;

/// The public part of one JWK.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PublicKey {
    Rsa {
        n: Vec<u8>,
        e: Vec<u8>,
    },
    /// `crv` P-256, P-384 or P-521; `point` is the uncompressed SEC1 point (`04 || x || y`).
    Ec {
        crv: String,
        point: Vec<u8>,
    },
}

/// One verification key of the set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Jwk {
    pub kid: Option<String>,
    /// `use`: keys marked for encryption are never used to verify.
    pub usage: Option<String>,
    /// `alg`: when present, the only algorithm the key may verify.
    pub alg: Option<String>,
    pub key: PublicKey,
}

fn b64_field(obj: &serde_json::Map<String, Value>, name: &str) -> Result<Vec<u8>, String> {
    let s = obj
        .get(name)
        .and_then(Value::as_str)
        .ok_or_else(|| format!("missing member {name}"))?;
    B64URL
        .decode(s.trim_end_matches('='))
        .map_err(|e| format!("member {name} is not Base64URL: {e}"))
}

/// Parses a JWKS document (`{"keys":[...]}`); keys of other types are skipped.
pub fn parse_jwks(bytes: &[u8]) -> Result<Vec<Jwk>, String> {
    let doc: Value =
        serde_json::from_slice(bytes).map_err(|e| format!("the JWKS is not JSON: {e}"))?;
    let keys = doc
        .get("keys")
        .and_then(Value::as_array)
        .ok_or("the JWKS has no \"keys\" array")?;
    let mut out = Vec::new();
    for (i, k) in keys.iter().enumerate() {
        let obj = k.as_object().ok_or(format!("key {i} is not an object"))?;
        let text = |n: &str| obj.get(n).and_then(Value::as_str).map(str::to_string);
        let key = match text("kty").as_deref() {
            Some("RSA") => PublicKey::Rsa {
                n: b64_field(obj, "n").map_err(|e| format!("key {i}: {e}"))?,
                e: b64_field(obj, "e").map_err(|e| format!("key {i}: {e}"))?,
            },
            Some("EC") => {
                let crv = text("crv").ok_or(format!("key {i}: missing member crv"))?;
                let len = match crv.as_str() {
                    "P-256" => 32,
                    "P-384" => 48,
                    "P-521" => 66,
                    _ => continue,
                };
                let x = b64_field(obj, "x").map_err(|e| format!("key {i}: {e}"))?;
                let y = b64_field(obj, "y").map_err(|e| format!("key {i}: {e}"))?;
                if x.len() != len || y.len() != len {
                    return Err(format!("key {i}: {crv} coordinates must be {len} bytes"));
                }
                let mut point = Vec::with_capacity(1 + 2 * len);
                point.push(4);
                point.extend_from_slice(&x);
                point.extend_from_slice(&y);
                PublicKey::Ec { crv, point }
            }
            Some(_) => continue,
            None => return Err(format!("key {i} has no kty")),
        };
        out.push(Jwk {
            kid: text("kid"),
            usage: text("use"),
            alg: text("alg"),
            key,
        });
    }
    Ok(out)
}

/// What a source holds: the keys last loaded and when the document last failed.
#[derive(Default)]
struct Loaded {
    keys: Arc<Vec<Jwk>>,
    /// The file's (modification time, length) when last read.
    file_stamp: Option<(Option<SystemTime>, u64)>,
    /// A key id a token named that the set lacked: the refresher fetches at once.
    refresh_wanted: bool,
}

/// The keys of one JWKS endpoint, shared by every listener configured with it.
pub struct KeySource {
    endpoint: JwksEndpoint,
    state: Mutex<Loaded>,
    wake: Condvar,
}

impl KeySource {
    fn new(endpoint: JwksEndpoint) -> KeySource {
        KeySource {
            endpoint,
            state: Mutex::new(Loaded::default()),
            wake: Condvar::new(),
        }
    }

    /// The current keys: a file is re-read first when it changed.
    pub fn keys(&self) -> Arc<Vec<Jwk>> {
        if let JwksEndpoint::File(path) = &self.endpoint {
            let _ = self.reload_file(path);
        }
        self.state.lock().expect("jwks lock").keys.clone()
    }

    /// A token named `kid`, which the set lacks: an https source fetches again now.
    pub fn key_missing(&self, kid: &str) {
        if let JwksEndpoint::Https(url) = &self.endpoint {
            tracing::info!(url = %url, kid = %kid, "no JWKS key with this kid; refreshing the key set");
            self.state.lock().expect("jwks lock").refresh_wanted = true;
            self.wake.notify_all();
        }
    }

    /// Re-reads the file when its stamp changed; an unreadable or malformed file keeps the
    /// keys already loaded, and is reported once per change.
    fn reload_file(&self, path: &Path) -> Result<(), String> {
        let meta = std::fs::metadata(path)
            .map_err(|e| format!("cannot read JWKS file {}: {e}", path.display()))?;
        let stamp = (meta.modified().ok(), meta.len());
        if self.state.lock().expect("jwks lock").file_stamp == Some(stamp) {
            return Ok(());
        }
        let result = read_jwks_file(path);
        let mut state = self.state.lock().expect("jwks lock");
        state.file_stamp = Some(stamp);
        match result {
            Ok(keys) => {
                tracing::info!(path = %path.display(), keys = keys.len(), "JWKS file loaded");
                state.keys = Arc::new(keys);
                Ok(())
            }
            Err(why) => {
                tracing::warn!(path = %path.display(), reason = %why, "JWKS file not loaded; keeping the keys already loaded");
                Err(why)
            }
        }
    }

    /// Starts the refresher of an https source (its first fetch before returning, so
    /// tokens can be validated at once); checks a file source is readable.
    fn start(self: &Arc<Self>, settings: &OAuthValidation) -> Result<(), String> {
        match &self.endpoint {
            JwksEndpoint::File(path) => self.reload_file(path),
            JwksEndpoint::Https(url) => {
                let roots = tls_client(&settings.jwks_ssl)?;
                let first = super::https::get(url, &roots, MAX_JWKS_BYTES)
                    .and_then(|body| parse_jwks(&body));
                match first {
                    Ok(keys) => self.state.lock().expect("jwks lock").keys = Arc::new(keys),
                    // Kafka logs and keeps retrying; tokens fail until the keys arrive.
                    Err(why) => {
                        tracing::warn!(url = %url, reason = %why, "JWKS fetch failed; retrying")
                    }
                }
                let me = self.clone();
                let (url, refresh, backoff, backoff_max) = (
                    url.clone(),
                    settings.jwks_refresh_ms,
                    settings.jwks_retry_backoff_ms,
                    settings.jwks_retry_backoff_max_ms,
                );
                std::thread::Builder::new()
                    .name("jwks-refresh".into())
                    .spawn(move || me.refresh_loop(&url, &roots, refresh, backoff, backoff_max))
                    .map_err(|e| format!("cannot start the JWKS refresher: {e}"))?;
                Ok(())
            }
        }
    }

    fn refresh_loop(
        &self,
        url: &str,
        roots: &Arc<rustls::ClientConfig>,
        refresh_ms: i64,
        backoff_ms: i64,
        backoff_max_ms: i64,
    ) {
        let mut wait_ms = refresh_ms.max(1);
        loop {
            {
                let state = self.state.lock().expect("jwks lock");
                let (mut state, _) = self
                    .wake
                    .wait_timeout_while(state, Duration::from_millis(wait_ms as u64), |s| {
                        !s.refresh_wanted
                    })
                    .expect("jwks lock");
                state.refresh_wanted = false;
            }
            match super::https::get(url, roots, MAX_JWKS_BYTES).and_then(|b| parse_jwks(&b)) {
                Ok(keys) => {
                    tracing::debug!(url = %url, keys = keys.len(), "JWKS refreshed");
                    self.state.lock().expect("jwks lock").keys = Arc::new(keys);
                    wait_ms = refresh_ms.max(1);
                }
                Err(why) => {
                    let next = if wait_ms >= refresh_ms.max(1) {
                        backoff_ms.max(1)
                    } else {
                        (wait_ms * 2).min(backoff_max_ms.max(1))
                    };
                    tracing::warn!(url = %url, reason = %why, retry_ms = next, "JWKS refresh failed; keeping the keys already loaded");
                    wait_ms = next;
                }
            }
        }
    }
}

fn read_jwks_file(path: &Path) -> Result<Vec<Jwk>, String> {
    let meta = std::fs::metadata(path).map_err(|e| e.to_string())?;
    if meta.len() > MAX_JWKS_BYTES as u64 {
        return Err(format!("larger than {MAX_JWKS_BYTES} bytes"));
    }
    let bytes = std::fs::read(path).map_err(|e| e.to_string())?;
    parse_jwks(&bytes)
}

/// The TLS client of an https JWKS endpoint: from the JAAS entry's `ssl.*` options when
/// there are any (their truststore, else the system's roots), else the system's roots with
/// rustls' defaults.
fn tls_client(
    ssl: &std::collections::BTreeMap<String, String>,
) -> Result<Arc<rustls::ClientConfig>, String> {
    if ssl.is_empty() {
        return super::https::config_for(&system_roots()?);
    }
    use crate::security::tls::settings::TlsSettings;
    let what = "the OAUTHBEARER sasl.jaas.config";
    let settings = TlsSettings::from_options(ssl, what).map_err(|e| e.0)?;
    let roots = match settings.load_roots().map_err(|e| e.0)? {
        Some(roots) => roots,
        None => system_roots()?,
    };
    crate::security::tls::client::client_config_with_roots(&settings, roots).map_err(|e| e.0)
}

/// The CA certificates an https JWKS endpoint is checked against: the PEM bundle named by
/// `SSL_CERT_FILE`, else the system's.
fn system_roots() -> Result<rustls::RootCertStore, String> {
    use rustls_pki_types::pem::PemObject;
    use rustls_pki_types::CertificateDer;
    let candidates: Vec<PathBuf> = std::env::var_os("SSL_CERT_FILE")
        .map(PathBuf::from)
        .into_iter()
        .chain(
            [
                "/etc/ssl/certs/ca-certificates.crt",
                "/etc/pki/tls/certs/ca-bundle.crt",
                "/etc/ssl/cert.pem",
            ]
            .map(PathBuf::from),
        )
        .collect();
    for path in candidates.iter().filter(|p| p.exists()) {
        let mut roots = rustls::RootCertStore::empty();
        let certs =
            CertificateDer::pem_file_iter(path).map_err(|e| format!("{}: {e}", path.display()))?;
        for cert in certs.flatten() {
            let _ = roots.add(cert);
        }
        if !roots.is_empty() {
            return Ok(roots);
        }
    }
    Err(format!(
        "no CA certificates to check the https JWKS endpoint against (looked at SSL_CERT_FILE \
         and {:?})",
        &candidates
    ))
}

/// The key source of `settings`' endpoint, made and started on first use and shared after
/// (Kafka keeps one resolver per configuration for the same reason: one refresher per URL).
pub fn shared(settings: &OAuthValidation) -> Result<Arc<KeySource>, String> {
    type Key = (JwksEndpoint, std::collections::BTreeMap<String, String>);
    static SOURCES: OnceLock<Mutex<HashMap<Key, Arc<KeySource>>>> = OnceLock::new();
    let mut sources = SOURCES
        .get_or_init(Default::default)
        .lock()
        .expect("jwks sources lock");
    // The same URL reached with other TLS options is another source.
    let key = (settings.jwks_endpoint.clone(), settings.jwks_ssl.clone());
    if let Some(s) = sources.get(&key) {
        return Ok(s.clone());
    }
    let source = Arc::new(KeySource::new(settings.jwks_endpoint.clone()));
    source.start(settings)?;
    sources.insert(key, source.clone());
    Ok(source)
}
