//! The client side of TLS for this broker's own connections to other brokers and to the
//! controllers (replica fetchers, forwarding, transaction markers, the Raft transport): the
//! truststore the server certificate must chain to, the keystore as the client certificate
//! for mutual TLS, and the host-name check of `ssl.endpoint.identification.algorithm`
//! (`https`, Kafka's default; empty turns it off). It lives here rather than in `net` because
//! the OAUTHBEARER JWKS fetcher (`sasl::jwks`) builds its client configuration here too.
//!
//! The key material is reloaded when its files change, as the server side reloads it: before
//! a connection, at most once per [`super::RELOAD_POLL`], the files' modification times are
//! checked, and a changed set is loaded for this and later connections (established ones keep
//! their session). A broken file keeps the previous material, reported once.
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Instant, SystemTime};

use parking_lot::{Mutex, RwLock};

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::WebPkiServerVerifier;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{CertificateError, ClientConfig, DigitallySignedStruct, SignatureScheme};
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;

use super::settings::{TlsConfigError, TlsSettings};
use crate::security::read_ahead::ReadAhead;
use crate::security::stream::SecuredStream;

/// The client TLS for connecting to `listener` of other cluster members: Some when the
/// listener maps to SSL or SASL_SSL (the SASL exchange of SASL_SSL follows the handshake; it
/// is the SASL client's part), None for plaintext.
pub fn for_listener(
    config: &crate::config::BrokerConfig,
    listener: &str,
) -> Result<Option<PeerTls>, TlsConfigError> {
    use crate::config::SecurityProtocol;
    let listener = listener.to_ascii_uppercase();
    match config.listener_security_protocol_map.get(&listener) {
        Some(SecurityProtocol::Ssl | SecurityProtocol::SaslSsl) => {
            let settings = TlsSettings::resolve(config, Some(&listener))?;
            PeerTls::new(&settings)
                .map(Some)
                .map_err(|e| TlsConfigError(format!("listener {listener}: {e}")))
        }
        _ => Ok(None),
    }
}

/// Connects to `addr` (`host:port`), with the TLS handshake when `tls` is given.
pub async fn connect(addr: &str, tls: Option<&PeerTls>) -> std::io::Result<SecuredStream> {
    let tcp = TcpStream::connect(addr).await?;
    tcp.set_nodelay(true)?;
    match tls {
        None => Ok(SecuredStream::Plain(tcp)),
        Some(tls) => {
            let host = addr.rsplit_once(':').map_or(addr, |(h, _)| h);
            tls.connect(host, tcp).await
        }
    }
}

/// How this broker connects to one listener of its peers.
#[derive(Clone)]
pub struct PeerTls {
    inner: Arc<PeerTlsInner>,
}

struct PeerTlsInner {
    settings: TlsSettings,
    config: RwLock<Arc<ClientConfig>>,
    /// Each watched file with its modification time when last loaded.
    watched: Mutex<Vec<(PathBuf, Option<SystemTime>)>>,
    last_check: Mutex<Instant>,
}

impl std::fmt::Debug for PeerTls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PeerTls")
            .field("listener", &self.inner.settings.listener)
            .finish()
    }
}

fn modified(path: &PathBuf) -> Option<SystemTime> {
    std::fs::metadata(path).and_then(|m| m.modified()).ok()
}

impl PeerTls {
    /// From the TLS settings of the listener the peers serve on (this broker's own settings
    /// for that listener, as Kafka's inter-broker client uses them).
    pub fn new(settings: &TlsSettings) -> Result<PeerTls, TlsConfigError> {
        let config = client_config(settings)?;
        let watched = settings
            .watched_files()
            .into_iter()
            .map(|p| {
                let t = modified(&p);
                (p, t)
            })
            .collect();
        Ok(PeerTls {
            inner: Arc::new(PeerTlsInner {
                settings: settings.clone(),
                config: RwLock::new(config),
                watched: Mutex::new(watched),
                last_check: Mutex::new(Instant::now()),
            }),
        })
    }

    /// Loads the key material again if a watched file changed since it was last loaded;
    /// returns whether new material is in use.
    pub fn reload_if_changed(&self) -> bool {
        let inner = &self.inner;
        let now: Vec<(PathBuf, Option<SystemTime>)> = inner
            .watched
            .lock()
            .iter()
            .map(|(p, _)| (p.clone(), modified(p)))
            .collect();
        {
            let mut watched = inner.watched.lock();
            if *watched == now {
                return false;
            }
            // Remember the new times whatever happens, so a broken file is reported once.
            *watched = now;
        }
        let listener = inner.settings.listener.as_deref().unwrap_or("?");
        match client_config(&inner.settings) {
            Ok(config) => {
                *inner.config.write() = config;
                tracing::info!(
                    listener,
                    "reloaded the peer client's TLS key material: new connections to other \
                     brokers and controllers use it"
                );
                true
            }
            Err(e) => {
                tracing::error!(listener, error = %e, "the changed TLS key material of the peer client is not usable; keeping the previous one");
                false
            }
        }
    }

    /// Checks the files at most once per poll interval (a stat per file; the reading and
    /// parsing happen only when one changed).
    fn reload_if_due(&self) {
        {
            let mut last = self.inner.last_check.lock();
            if last.elapsed() < super::RELOAD_POLL {
                return;
            }
            *last = Instant::now();
        }
        self.reload_if_changed();
    }

    /// The TLS handshake as a client to `host` over a connected socket.
    pub async fn connect(&self, host: &str, tcp: TcpStream) -> std::io::Result<SecuredStream> {
        self.reload_if_due();
        let name = ServerName::try_from(host.trim_matches(|c| c == '[' || c == ']').to_string())
            .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e))?;
        let config = self.inner.config.read().clone();
        let stream = TlsConnector::from(config)
            .connect(name, ReadAhead::new(tcp))
            .await?;
        Ok(SecuredStream::Tls(Box::new(stream.into())))
    }
}

/// The rustls client configuration for `settings`: its truststore (required) and keystore.
fn client_config(settings: &TlsSettings) -> Result<Arc<ClientConfig>, TlsConfigError> {
    let Some(roots) = settings.load_roots()? else {
        return Err(TlsConfigError(format!(
            "listener {}: connecting to other brokers over TLS needs a truststore \
             (ssl.truststore.location or ssl.truststore.certificates)",
            settings.listener.as_deref().unwrap_or("?")
        )));
    };
    client_config_with_roots(settings, roots)
}

/// The rustls client configuration for `settings` checking servers against `roots` (its own
/// truststore, or the system's where Kafka would use the JVM's default).
pub fn client_config_with_roots(
    settings: &TlsSettings,
    roots: rustls::RootCertStore,
) -> Result<Arc<ClientConfig>, TlsConfigError> {
    let verifier =
        WebPkiServerVerifier::builder_with_provider(Arc::new(roots), settings.provider.clone())
            .build()
            .map_err(|e| TlsConfigError(format!("ssl.truststore: {e}")))?;
    let verifier: Arc<dyn ServerCertVerifier> = if settings.endpoint_identification {
        verifier
    } else {
        Arc::new(NoHostnameCheck(verifier))
    };
    let builder = ClientConfig::builder_with_provider(settings.provider.clone())
        .with_protocol_versions(settings.versions())
        .map_err(|e| TlsConfigError(e.to_string()))?
        .dangerous()
        .with_custom_certificate_verifier(verifier);
    let config = match settings.load_identity()? {
        Some((chain, key)) => builder
            .with_client_auth_cert(chain, key)
            .map_err(|e| TlsConfigError(format!("client certificate: {e}")))?,
        None => builder.with_no_client_auth(),
    };
    Ok(Arc::new(config))
}

/// The chain must still verify; only a name mismatch is let through.
#[derive(Debug)]
struct NoHostnameCheck(Arc<WebPkiServerVerifier>);

impl ServerCertVerifier for NoHostnameCheck {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        match self
            .0
            .verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now)
        {
            Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.supported_verify_schemes()
    }
}
