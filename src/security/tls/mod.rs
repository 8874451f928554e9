//! TLS for SSL and SASL_SSL listeners (rustls), server side: the handshake under a deadline,
//! the principal from the client certificate (`ssl.principal.mapping.rules`), and reloading
//! the key material when its files change (short-lived certificates), as Kafka's dynamic
//! keystore update does: new connections get the new certificate, a broken new file keeps
//! the old one, and (Kafka's `ssl.allow.dn.changes=false` default) a new certificate must keep
//! the old one's subject and subject alternative names. Client certificates are checked by
//! webpki, with the X.509 v1 leaves Java accepts checked by [`client_auth`].
pub mod client;
mod client_auth;
pub mod dn;
mod keystore;
pub mod mapping;
pub mod settings;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use parking_lot::{Mutex, RwLock};
use rustls::pki_types::CertificateDer;
use rustls::ServerConfig;
use tokio::net::TcpStream;
use tokio_rustls::TlsAcceptor;
use tokio_util::sync::CancellationToken;

pub use settings::{ClientAuth, TlsConfigError, TlsSettings};

use super::read_ahead::ReadAhead;
use super::KafkaPrincipal;
use crate::config::BrokerConfig;

/// How often the key material's files are checked for changes.
pub const RELOAD_POLL: Duration = Duration::from_secs(1);

/// Why a TLS connection was closed before its first request.
#[derive(Debug)]
pub enum HandshakeError {
    /// No handshake within the deadline (a client that connected and stalls).
    Timeout(Duration),
    /// Not TLS, a certificate the broker does not trust, no certificate where one is required.
    Failed(std::io::Error),
    /// The certificate's subject matched no `ssl.principal.mapping.rules` rule.
    NoPrincipal(String),
}

impl std::fmt::Display for HandshakeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            HandshakeError::Timeout(d) => write!(f, "no TLS handshake within {} ms", d.as_millis()),
            HandshakeError::Failed(e) => write!(f, "TLS handshake failed: {e}"),
            HandshakeError::NoPrincipal(e) => write!(f, "no principal for the certificate: {e}"),
        }
    }
}

/// One listener's TLS server side.
pub struct ServerTls {
    settings: TlsSettings,
    /// The configuration new connections get, and its leaf certificate.
    current: RwLock<(Arc<ServerConfig>, CertificateDer<'static>)>,
    /// Each watched file with its modification time when last loaded.
    watched: Mutex<Vec<(PathBuf, Option<SystemTime>)>>,
    handshake_timeout: Duration,
}

impl ServerTls {
    /// Reads and checks `listener`'s key material; an error names the key and the file.
    pub fn new(
        config: &BrokerConfig,
        listener: &str,
        handshake_timeout: Duration,
    ) -> Result<Arc<ServerTls>, TlsConfigError> {
        let settings = TlsSettings::resolve(config, Some(listener))?;
        let watched = settings
            .watched_files()
            .into_iter()
            .map(|p| {
                let t = modified(&p);
                (p, t)
            })
            .collect();
        let server = settings
            .server_config()
            .map_err(|e| TlsConfigError(format!("listener {listener}: {e}")))?;
        Ok(Arc::new(ServerTls {
            settings,
            current: RwLock::new(server),
            watched: Mutex::new(watched),
            handshake_timeout,
        }))
    }

    pub fn settings(&self) -> &TlsSettings {
        &self.settings
    }

    /// The TLS handshake on an accepted socket within the deadline; then, when
    /// `principal_from_certificate` (SSL listeners; on SASL_SSL the SASL exchange decides),
    /// the principal from the client certificate: ANONYMOUS without one.
    pub async fn accept(
        &self,
        tcp: TcpStream,
        principal_from_certificate: bool,
    ) -> Result<
        (
            tokio_rustls::server::TlsStream<ReadAhead<TcpStream>>,
            Option<KafkaPrincipal>,
        ),
        HandshakeError,
    > {
        let acceptor = TlsAcceptor::from(self.current.read().0.clone());
        let stream = match tokio::time::timeout(
            self.handshake_timeout,
            acceptor.accept(ReadAhead::new(tcp)),
        )
        .await
        {
            Err(_) => return Err(HandshakeError::Timeout(self.handshake_timeout)),
            Ok(Err(e)) => return Err(HandshakeError::Failed(e)),
            Ok(Ok(s)) => s,
        };
        if !principal_from_certificate {
            return Ok((stream, None));
        }
        let leaf = stream
            .get_ref()
            .1
            .peer_certificates()
            .and_then(|c| c.first().cloned());
        let principal = match leaf {
            None => KafkaPrincipal::anonymous(),
            Some(cert) => {
                let dn = dn::subject_rfc2253(&cert).ok_or_else(|| {
                    HandshakeError::NoPrincipal("the certificate does not parse".into())
                })?;
                let name = self
                    .settings
                    .mapper
                    .name(&dn)
                    .map_err(|e| HandshakeError::NoPrincipal(e.0))?;
                KafkaPrincipal::user(name)
            }
        };
        Ok((stream, Some(principal)))
    }

    /// Loads the key material again if a watched file changed since it was last loaded.
    /// Returns whether a new configuration is in use.
    pub fn reload_if_changed(&self) -> bool {
        let changed: Vec<(PathBuf, Option<SystemTime>)> = {
            let watched = self.watched.lock();
            watched
                .iter()
                .map(|(p, _)| (p.clone(), modified(p)))
                .collect()
        };
        if *self.watched.lock() == changed {
            return false;
        }
        // Remember the new times whatever happens, so a broken file is reported once.
        *self.watched.lock() = changed;
        let listener = self.settings.listener.as_deref().unwrap_or("?");
        let result = self
            .settings
            .server_config()
            .and_then(|(config, leaf)| self.same_identity(&leaf).map(|_| (config, leaf)));
        match result {
            Ok(config) => {
                *self.current.write() = config;
                tracing::info!(
                    listener,
                    "reloaded the TLS key material: new connections use it"
                );
                true
            }
            Err(e) => {
                tracing::error!(listener, error = %e, "the changed TLS key material is not usable; keeping the previous one");
                false
            }
        }
    }

    /// Kafka (with `ssl.allow.dn.changes` and `ssl.allow.san.changes` false, their defaults)
    /// refuses a new certificate whose subject or alternative names differ from the old one.
    fn same_identity(&self, new_leaf: &CertificateDer<'_>) -> Result<(), TlsConfigError> {
        let old_leaf = self.current.read().1.clone();
        let ident = |der: &[u8]| {
            use x509_parser::prelude::FromDer;
            x509_parser::certificate::X509Certificate::from_der(der)
                .ok()
                .map(|(_, c)| {
                    let san = c
                        .subject_alternative_name()
                        .ok()
                        .flatten()
                        .map(|s| format!("{:?}", s.value.general_names));
                    (dn::name_rfc2253(c.subject()), san)
                })
        };
        let (old_id, new_id) = (ident(&old_leaf), ident(new_leaf));
        if old_id != new_id {
            return Err(TlsConfigError(format!(
                "the new certificate's subject or alternative names differ from the current \
                 one's ({old_id:?} -> {new_id:?}); Kafka refuses that too \
                 (ssl.allow.dn.changes and ssl.allow.san.changes are false)"
            )));
        }
        Ok(())
    }

    /// Checks the watched files every [`RELOAD_POLL`] until `shutdown`.
    pub async fn watch(self: Arc<Self>, shutdown: CancellationToken) {
        if self.watched.lock().is_empty() {
            return;
        }
        loop {
            tokio::select! {
                _ = shutdown.cancelled() => return,
                _ = tokio::time::sleep(RELOAD_POLL) => {}
            }
            let me = self.clone();
            // Reading and parsing files blocks; keep it off the async workers.
            let _ = tokio::task::spawn_blocking(move || me.reload_if_changed()).await;
        }
    }
}

impl std::fmt::Debug for ServerTls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerTls")
            .field("listener", &self.settings.listener)
            .field("client_auth", &self.settings.client_auth)
            .finish()
    }
}

fn modified(path: &PathBuf) -> Option<SystemTime> {
    std::fs::metadata(path).and_then(|m| m.modified()).ok()
}
