//! The client side of SASL for this broker's own connections (Kafka's
//! `SaslClientAuthenticator` as a broker uses it for inter-broker and controller traffic):
//! SaslHandshake v1 naming the mechanism, then SaslAuthenticate requests carrying the tokens
//! of PLAIN (RFC 4616) or SCRAM-SHA-256/512 (RFC 5802, the server's signature checked), with
//! the login of the listener's JAAS line (`config::sasl::PeerLogin`).
//!
//! A refused login is not retried at once: like Kafka's `NetworkClient`, which keeps a node
//! whose authentication failed in backoff (`reconnect.backoff.ms` 50 doubling up to
//! `reconnect.backoff.max.ms` 1000), connections to that peer fail fast until the backoff
//! ends, and the failure is logged once per peer until a login to it succeeds again.
use std::collections::HashMap;
use std::time::{Duration, Instant};

use bytes::Bytes;
use tokio::io::{AsyncRead, AsyncWrite};

use super::frame::{self, decode_body, encode_request, PeerError};

use crate::config::sasl::{PeerLogin, PLAIN};
use crate::protocol::codec::{Decode, Encode};
use crate::protocol::messages::sasl_authenticate_request::SaslAuthenticateRequest;
use crate::protocol::messages::sasl_authenticate_response::SaslAuthenticateResponse;
use crate::protocol::messages::sasl_handshake_request::SaslHandshakeRequest;
use crate::protocol::messages::sasl_handshake_response::SaslHandshakeResponse;
use crate::security::sasl::scram::{ScramClient, ScramMechanism};
use crate::security::sasl::{SASL_AUTHENTICATE, SASL_HANDSHAKE};

/// SaslHandshake v1: the tokens follow in SaslAuthenticate requests (KIP-152).
const HANDSHAKE_VERSION: i16 = 1;
/// SaslAuthenticate v1 reports the session lifetime (KIP-368); Strata serves v0-2.
const AUTHENTICATE_VERSION: i16 = 1;
/// A SASL response larger than this is not a SASL response.
const MAX_SASL_RESPONSE_BYTES: usize = 1024 * 1024;
/// Kafka's `reconnect.backoff.ms` and `reconnect.backoff.max.ms` defaults.
const BACKOFF_INITIAL: Duration = Duration::from_millis(50);
const BACKOFF_MAX: Duration = Duration::from_millis(1000);

/// Why a login to a peer failed.
#[derive(Debug)]
pub enum SaslClientError {
    Io(std::io::Error),
    /// The peer answered with an error code (SASL_AUTHENTICATION_FAILED,
    /// UNSUPPORTED_SASL_MECHANISM, ILLEGAL_SASL_STATE).
    Refused {
        error_code: i16,
        message: String,
    },
    /// The peer's answer made no sense (a bad frame, a wrong SCRAM signature).
    Protocol(String),
    /// An earlier login to this peer failed and its backoff has not ended.
    BackingOff {
        remaining_ms: u64,
    },
}

impl std::fmt::Display for SaslClientError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SaslClientError::Io(e) => write!(f, "i/o during SASL authentication: {e}"),
            SaslClientError::Refused {
                error_code,
                message,
            } => write!(
                f,
                "SASL authentication refused (error {error_code}): {message}"
            ),
            SaslClientError::Protocol(m) => write!(f, "SASL authentication failed: {m}"),
            SaslClientError::BackingOff { remaining_ms } => write!(
                f,
                "SASL authentication to this peer failed; retrying in {remaining_ms} ms"
            ),
        }
    }
}

impl std::error::Error for SaslClientError {}

impl From<std::io::Error> for SaslClientError {
    fn from(e: std::io::Error) -> Self {
        SaslClientError::Io(e)
    }
}

impl From<SaslClientError> for std::io::Error {
    fn from(e: SaslClientError) -> Self {
        match e {
            SaslClientError::Io(e) => e,
            other => std::io::Error::new(std::io::ErrorKind::PermissionDenied, other.to_string()),
        }
    }
}

/// One login (listener, mechanism, credentials) with the backoff state of each peer address.
pub struct PeerSasl {
    login: PeerLogin,
    failures: parking_lot::Mutex<HashMap<String, Failure>>,
}

struct Failure {
    attempts: u32,
    retry_at: Instant,
}

impl std::fmt::Debug for PeerSasl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PeerSasl")
            .field("login", &self.login)
            .finish()
    }
}

impl PeerSasl {
    pub fn new(login: PeerLogin) -> PeerSasl {
        PeerSasl {
            login,
            failures: parking_lot::Mutex::new(HashMap::new()),
        }
    }

    pub fn login(&self) -> &PeerLogin {
        &self.login
    }

    /// Logs in to `addr` over `stream`, unless a failed login to it is still backing off.
    /// Returns the session lifetime the peer gave (KIP-368), if any.
    pub async fn authenticate<S: AsyncRead + AsyncWrite + Unpin>(
        &self,
        addr: &str,
        stream: &mut S,
        client_id: &str,
    ) -> Result<Option<Duration>, SaslClientError> {
        if let Some(f) = self.failures.lock().get(addr) {
            let now = Instant::now();
            if f.retry_at > now {
                return Err(SaslClientError::BackingOff {
                    remaining_ms: (f.retry_at - now).as_millis() as u64,
                });
            }
        }
        let result = authenticate(stream, &self.login, client_id, 0).await;
        match &result {
            Ok(_) => {
                if self.failures.lock().remove(addr).is_some() {
                    tracing::info!(
                        peer = addr,
                        listener = %self.login.listener,
                        "SASL authentication to the peer succeeds again"
                    );
                }
            }
            // An i/o error is the connection's, not the login's: the caller's reconnects
            // handle it.
            Err(SaslClientError::Io(_)) => {}
            Err(e) => {
                let mut failures = self.failures.lock();
                let entry = failures.entry(addr.to_string()).or_insert(Failure {
                    attempts: 0,
                    retry_at: Instant::now(),
                });
                if entry.attempts == 0 {
                    tracing::error!(
                        peer = addr,
                        listener = %self.login.listener,
                        mechanism = %self.login.mechanism,
                        user = %self.login.username,
                        error = %e,
                        "SASL authentication to a peer failed; retrying with backoff (logged once until it succeeds)"
                    );
                }
                let backoff = BACKOFF_INITIAL
                    .saturating_mul(1u32 << entry.attempts.min(8))
                    .min(BACKOFF_MAX);
                entry.attempts = entry.attempts.saturating_add(1);
                entry.retry_at = Instant::now() + backoff;
            }
        }
        result
    }
}

/// One SASL exchange on `stream`: SaslHandshake v1, then SaslAuthenticate until the
/// mechanism is done. Correlation ids start at `first_correlation_id`. Returns the session
/// lifetime the peer gave (None: the session does not expire).
pub async fn authenticate<S: AsyncRead + AsyncWrite + Unpin>(
    stream: &mut S,
    login: &PeerLogin,
    client_id: &str,
    first_correlation_id: i32,
) -> Result<Option<Duration>, SaslClientError> {
    let mut correlation_id = first_correlation_id;
    let handshake: SaslHandshakeResponse = exchange(
        stream,
        SASL_HANDSHAKE,
        HANDSHAKE_VERSION,
        &mut correlation_id,
        client_id,
        &SaslHandshakeRequest {
            mechanism: login.mechanism.clone(),
        },
    )
    .await?;
    if handshake.error_code != 0 {
        return Err(SaslClientError::Refused {
            error_code: handshake.error_code,
            message: format!(
                "the peer does not enable {} (it enables {:?})",
                login.mechanism, handshake.mechanisms
            ),
        });
    }
    let mut step = |token: Vec<u8>| {
        let request = SaslAuthenticateRequest {
            auth_bytes: Bytes::from(token),
            ..Default::default()
        };
        let id = correlation_id;
        correlation_id = correlation_id.wrapping_add(1);
        (request, id)
    };
    let lifetime = if login.mechanism == PLAIN {
        // authzid empty: the identity is the user itself.
        let token = format!("\0{}\0{}", login.username, login.password).into_bytes();
        let (req, id) = step(token);
        let resp = authenticate_step(stream, id, client_id, &req).await?;
        resp.session_lifetime_ms
    } else {
        let mechanism = ScramMechanism::from_name(&login.mechanism).ok_or_else(|| {
            SaslClientError::Protocol(format!("no client for mechanism {}", login.mechanism))
        })?;
        let mut scram = ScramClient::new(mechanism, &login.username, &login.password);
        let (req, id) = step(scram.client_first());
        let first = authenticate_step(stream, id, client_id, &req).await?;
        let client_final = scram
            .client_final(&first.auth_bytes)
            .map_err(SaslClientError::Protocol)?;
        let (req, id) = step(client_final);
        let last = authenticate_step(stream, id, client_id, &req).await?;
        scram
            .verify_server_final(&last.auth_bytes)
            .map_err(SaslClientError::Protocol)?;
        last.session_lifetime_ms
    };
    Ok((lifetime > 0).then(|| Duration::from_millis(lifetime as u64)))
}

async fn authenticate_step<S: AsyncRead + AsyncWrite + Unpin>(
    stream: &mut S,
    correlation_id: i32,
    client_id: &str,
    request: &SaslAuthenticateRequest,
) -> Result<SaslAuthenticateResponse, SaslClientError> {
    let mut id = correlation_id;
    let resp: SaslAuthenticateResponse = exchange(
        stream,
        SASL_AUTHENTICATE,
        AUTHENTICATE_VERSION,
        &mut id,
        client_id,
        request,
    )
    .await?;
    if resp.error_code != 0 {
        return Err(SaslClientError::Refused {
            error_code: resp.error_code,
            message: resp.error_message.unwrap_or_default(),
        });
    }
    Ok(resp)
}

/// Writes one request and reads its response (header checked, body decoded whole), in the
/// framing every peer connection uses.
async fn exchange<S: AsyncRead + AsyncWrite + Unpin, Req: Encode, Resp: Decode>(
    stream: &mut S,
    api_key: i16,
    api_version: i16,
    correlation_id: &mut i32,
    client_id: &str,
    request: &Req,
) -> Result<Resp, SaslClientError> {
    let id = *correlation_id;
    *correlation_id = correlation_id.wrapping_add(1);
    let frame = encode_request(api_key, api_version, id, client_id, request);
    let mut body = frame::exchange(
        stream,
        &frame,
        api_key,
        api_version,
        id,
        MAX_SASL_RESPONSE_BYTES,
    )
    .await
    .map_err(protocol_error)?;
    decode_body(&mut body, api_version).map_err(protocol_error)
}

/// A failed exchange: the connection's i/o error as it is, anything else a SASL response that
/// makes no sense.
fn protocol_error(e: PeerError) -> SaslClientError {
    match e {
        PeerError::Io(e) => SaslClientError::Io(e),
        PeerError::TooLarge { size, .. } => {
            SaslClientError::Protocol(format!("a SASL response frame of {size} bytes"))
        }
        other => SaslClientError::Protocol(other.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::header::RequestHeader;
    use bytes::{BufMut, BytesMut};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// A frame helper for the tests: a response frame of `body` after header v0.
    fn response_frame(correlation_id: i32, body: impl FnOnce(&mut BytesMut)) -> Vec<u8> {
        let mut b = BytesMut::new();
        b.put_i32(0);
        b.put_i32(correlation_id);
        body(&mut b);
        let len = (b.len() - 4) as i32;
        b[..4].copy_from_slice(&len.to_be_bytes());
        b.to_vec()
    }

    use tokio::net::{TcpListener, TcpStream};

    fn login(mechanism: &str, password: &str) -> PeerLogin {
        PeerLogin {
            listener: "INTERNAL".into(),
            mechanism: mechanism.into(),
            username: "admin".into(),
            password: password.into(),
        }
    }

    async fn read_request(s: &mut TcpStream) -> (RequestHeader, Bytes) {
        let size = s.read_i32().await.unwrap();
        let mut b = vec![0u8; size as usize];
        s.read_exact(&mut b).await.unwrap();
        let mut b = Bytes::from(b);
        let (h, _) = RequestHeader::decode_detect(&mut b).unwrap();
        (h, b)
    }

    /// A peer that accepts PLAIN for admin/secret: checks the handshake names PLAIN and the
    /// token is `\0admin\0secret`, and answers as Kafka does.
    async fn plain_peer() -> String {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        tokio::spawn(async move {
            loop {
                let Ok((mut s, _)) = listener.accept().await else {
                    return;
                };
                let (h, mut body) = read_request(&mut s).await;
                assert_eq!((h.api_key, h.api_version), (SASL_HANDSHAKE, 1));
                let req = SaslHandshakeRequest::decode(&mut body, 1).unwrap();
                assert_eq!(req.mechanism, "PLAIN");
                let out = response_frame(h.correlation_id, |b| {
                    SaslHandshakeResponse {
                        error_code: 0,
                        mechanisms: vec!["PLAIN".into()],
                    }
                    .encode(b, 1)
                });
                s.write_all(&out).await.unwrap();
                let (h, mut body) = read_request(&mut s).await;
                assert_eq!((h.api_key, h.api_version), (SASL_AUTHENTICATE, 1));
                let req = SaslAuthenticateRequest::decode(&mut body, 1).unwrap();
                let ok = &req.auth_bytes[..] == b"\0admin\0secret";
                let out = response_frame(h.correlation_id, |b| {
                    SaslAuthenticateResponse {
                        error_code: if ok { 0 } else { 58 },
                        error_message: (!ok)
                            .then(|| "Authentication failed: Invalid username or password".into()),
                        session_lifetime_ms: if ok { 60_000 } else { 0 },
                        ..Default::default()
                    }
                    .encode(b, 1)
                });
                s.write_all(&out).await.unwrap();
            }
        });
        addr
    }

    #[tokio::test]
    async fn plain_logs_in_and_reports_the_session_lifetime() {
        let addr = plain_peer().await;
        let sasl = PeerSasl::new(login("PLAIN", "secret"));
        let mut s = TcpStream::connect(&addr).await.unwrap();
        let life = sasl.authenticate(&addr, &mut s, "t").await.unwrap();
        assert_eq!(life, Some(Duration::from_secs(60)));
    }

    #[tokio::test]
    async fn a_refused_login_backs_off_then_is_tried_again() {
        let addr = plain_peer().await;
        let sasl = PeerSasl::new(login("PLAIN", "wrong"));
        let mut s = TcpStream::connect(&addr).await.unwrap();
        let e = sasl.authenticate(&addr, &mut s, "t").await.unwrap_err();
        match e {
            SaslClientError::Refused {
                error_code,
                message,
            } => {
                assert_eq!(error_code, 58);
                assert!(
                    message.contains("Invalid username or password"),
                    "{message}"
                );
            }
            e => panic!("{e:?}"),
        }
        // Right after: no connection attempt, the backoff answers.
        let mut s = TcpStream::connect(&addr).await.unwrap();
        let e = sasl.authenticate(&addr, &mut s, "t").await.unwrap_err();
        assert!(
            matches!(e, SaslClientError::BackingOff { remaining_ms } if remaining_ms <= 50),
            "{e:?}"
        );
        // After the backoff the login is tried again (and refused again).
        tokio::time::sleep(BACKOFF_INITIAL + Duration::from_millis(10)).await;
        let e = sasl.authenticate(&addr, &mut s, "t").await.unwrap_err();
        assert!(matches!(e, SaslClientError::Refused { .. }), "{e:?}");
        // The second backoff is twice the first.
        let e = sasl.authenticate(&addr, &mut s, "t").await.unwrap_err();
        assert!(
            matches!(e, SaslClientError::BackingOff { remaining_ms } if remaining_ms > 50 && remaining_ms <= 100),
            "{e:?}"
        );
    }

    #[tokio::test]
    async fn an_unsupported_mechanism_and_a_garbage_answer_are_errors_not_hangs() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        tokio::spawn(async move {
            // First peer: UNSUPPORTED_SASL_MECHANISM. Second: a frame of -1 bytes.
            let (mut s, _) = listener.accept().await.unwrap();
            let (h, _) = read_request(&mut s).await;
            let out = response_frame(h.correlation_id, |b| {
                SaslHandshakeResponse {
                    error_code: 33,
                    mechanisms: vec!["PLAIN".into()],
                }
                .encode(b, 1)
            });
            s.write_all(&out).await.unwrap();
            let (mut s2, _) = listener.accept().await.unwrap();
            let _ = read_request(&mut s2).await;
            s2.write_all(&(-1i32).to_be_bytes()).await.unwrap();
            let mut rest = Vec::new();
            let _ = s.read_to_end(&mut rest).await;
        });
        let mut s = TcpStream::connect(&addr).await.unwrap();
        let e = authenticate(&mut s, &login("SCRAM-SHA-512", "x"), "t", 0)
            .await
            .unwrap_err();
        assert!(
            matches!(e, SaslClientError::Refused { error_code: 33, ref message } if message.contains("SCRAM-SHA-512")),
            "{e:?}"
        );
        let mut s = TcpStream::connect(&addr).await.unwrap();
        let e = authenticate(&mut s, &login("PLAIN", "x"), "t", 0)
            .await
            .unwrap_err();
        assert!(matches!(e, SaslClientError::Protocol(_)), "{e:?}");
    }
}
