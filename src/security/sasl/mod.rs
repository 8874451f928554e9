//! The server side of SASL on a SASL_PLAINTEXT or SASL_SSL listener, as Kafka's
//! `SaslServerAuthenticator`: before authentication a connection may send ApiVersions,
//! SaslHandshake (v0-1) and SaslAuthenticate (v0-2) only, anything else closes it; an
//! unsupported mechanism is answered UNSUPPORTED_SASL_MECHANISM with the enabled list; a
//! failed exchange is answered SASL_AUTHENTICATION_FAILED with Kafka's message, logged once,
//! and the connection closed. A v0 handshake (kept by Kafka 4.x for kafka-python, KIP-896)
//! is followed by raw size-prefixed tokens instead of SaslAuthenticate requests.
//!
//! Re-authentication (KIP-368): with `connections.max.reauth.ms` (or an expiring OAUTHBEARER
//! token) the session has a lifetime, told to SaslAuthenticate v1+ clients; a client may
//! start a new exchange with SaslHandshake at any time, must keep its mechanism and principal,
//! and any other request after the session expired closes the connection.
//!
//! The session is a pure state machine over frames: the connection hands it each frame and
//! does what it says ([`Gate`]).
mod https;
pub mod jwks;
pub mod jwt;
pub mod oauthbearer;
pub mod plain;
pub mod scram;

use std::fmt;
use std::net::SocketAddr;
use std::sync::Arc;

use bytes::Bytes;

use crate::config::sasl::{ListenerSaslConfig, OAUTHBEARER, PLAIN};
use crate::error::ErrorCode;
use crate::protocol::codec::Decode;
use crate::protocol::header::{request_header_version, RequestHeader};
use crate::protocol::messages::sasl_authenticate_request::SaslAuthenticateRequest;
use crate::protocol::messages::sasl_authenticate_response::SaslAuthenticateResponse;
use crate::protocol::messages::sasl_handshake_request::SaslHandshakeRequest;
use crate::protocol::messages::sasl_handshake_response::SaslHandshakeResponse;
use crate::security::KafkaPrincipal;
use oauthbearer::{OAuthBearerServer, UnsecuredValidator, Validator};
use scram::{ScramCredential, ScramMechanism, ScramServer, TokenCredential};

pub const API_VERSIONS: i16 = 18;
pub const SASL_HANDSHAKE: i16 = 17;
pub const SASL_AUTHENTICATE: i16 = 36;

/// Why an exchange failed. `Explicit` messages reach the client as they are (Kafka's
/// `SaslAuthenticationException`); `Generic` ones are logged, and the client reads Kafka's
/// generic "invalid credentials" message (Kafka's `SaslException`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AuthError {
    Explicit(String),
    Generic(String),
}

impl fmt::Display for AuthError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AuthError::Explicit(m) | AuthError::Generic(m) => f.write_str(m),
        }
    }
}

impl AuthError {
    fn client_message(&self, mechanism: &str) -> String {
        match self {
            AuthError::Explicit(m) => m.clone(),
            AuthError::Generic(_) => format!(
                "Authentication failed during authentication due to invalid credentials with \
                 SASL mechanism {mechanism}"
            ),
        }
    }
}

/// Random bytes from the system's generator.
pub fn random_bytes(n: usize) -> Vec<u8> {
    use ring::rand::SecureRandom;
    let mut out = vec![0u8; n];
    ring::rand::SystemRandom::new()
        .fill(&mut out)
        .expect("the system random generator works");
    out
}

/// Compares secrets in time independent of where they differ.
pub fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// Where SCRAM credentials come from (the metadata image).
pub type ScramLookup<'a> = &'a dyn Fn(&str, ScramMechanism) -> Option<ScramCredential>;

/// Where delegation tokens come from (the metadata image): the live, unexpired token with
/// this id, its credential derived for this mechanism (KIP-48).
pub type TokenLookup<'a> = &'a dyn Fn(&str, ScramMechanism) -> Option<TokenCredential>;

/// What one SaslAuthenticate token produced: a challenge to send (exchange not done), or the
/// principal with its session lifetime in ms (0: unlimited) and the final bytes to send.
type TokenOutcome = (Option<Vec<u8>>, Option<(KafkaPrincipal, i64)>, Vec<u8>);

/// A reply the connection encodes and sends.
#[derive(Debug)]
pub enum SaslReply {
    Handshake(RequestHeader, SaslHandshakeResponse),
    Authenticate(RequestHeader, SaslAuthenticateResponse),
    /// A raw token after a v0 handshake, framed with its size only.
    Raw(Vec<u8>),
}

/// What the connection does with a frame.
#[derive(Debug)]
pub enum Gate {
    /// An ordinary request: serve it.
    Pass,
    /// Send this reply; then take `principal` (authenticated) and close if `close` says why.
    Reply {
        reply: SaslReply,
        principal: Option<KafkaPrincipal>,
        close: Option<String>,
    },
    /// Close without a reply.
    Close(String),
}

enum Exchange {
    Plain,
    Scram(ScramServer),
    OAuthBearer(OAuthBearerServer),
}

enum Phase {
    /// Waiting for SaslHandshake (ApiVersions allowed).
    Handshake,
    /// After a v1 handshake: SaslAuthenticate requests carry the tokens.
    Authenticate {
        mechanism: String,
        exchange: Exchange,
    },
    /// After a v0 handshake: the next frames are raw tokens.
    RawTokens {
        mechanism: String,
        exchange: Exchange,
    },
    /// Authenticated; serving requests.
    Authenticated,
}

/// The established session.
struct Session {
    principal: KafkaPrincipal,
    /// Logged in with a delegation token (Kafka's `KafkaPrincipal.tokenAuthenticated`).
    token_authenticated: bool,
    mechanism: String,
    /// When the session ends (ms since the epoch); None: never.
    expires_at_ms: Option<i64>,
}

/// One connection's SASL state.
pub struct SaslSession {
    config: Arc<ListenerSaslConfig>,
    peer: SocketAddr,
    phase: Phase,
    session: Option<Session>,
}

enum Outcome {
    Challenge(Vec<u8>),
    Done {
        user: String,
        final_bytes: Vec<u8>,
        credential_expires_ms: Option<i64>,
        /// A delegation token login: the token's owner, who the connection acts as.
        token_owner: Option<KafkaPrincipal>,
    },
}

impl SaslSession {
    pub fn new(config: Arc<ListenerSaslConfig>, peer: SocketAddr) -> SaslSession {
        SaslSession {
            config,
            peer,
            phase: Phase::Handshake,
            session: None,
        }
    }

    /// Whether the first authentication has completed (re-authentications keep this true).
    pub fn authenticated(&self) -> bool {
        self.session.is_some()
    }

    /// Whether the session's principal logged in with a delegation token.
    pub fn token_authenticated(&self) -> bool {
        self.session.as_ref().is_some_and(|s| s.token_authenticated)
    }

    /// The largest frame a connection may send before it is authenticated.
    pub fn max_receive_size(&self) -> Option<usize> {
        (!self.authenticated()).then_some(self.config.max_receive_size.max(0) as usize)
    }

    /// Judges one frame (the bytes after the size prefix).
    pub fn on_frame(&mut self, frame: &Bytes, now_ms: i64, scram: ScramLookup<'_>) -> Gate {
        self.on_frame_with_tokens(frame, now_ms, scram, &|_, _| None)
    }

    /// [`Self::on_frame`], where SCRAM logins may also use delegation tokens.
    pub fn on_frame_with_tokens(
        &mut self,
        frame: &Bytes,
        now_ms: i64,
        scram: ScramLookup<'_>,
        tokens: TokenLookup<'_>,
    ) -> Gate {
        if let Phase::RawTokens { .. } = self.phase {
            return self.raw_token(frame, now_ms, scram, tokens);
        }
        if frame.len() < 4 {
            return Gate::Close("frame shorter than a request header".into());
        }
        let api_key = i16::from_be_bytes([frame[0], frame[1]]);
        match (&self.phase, api_key) {
            (Phase::Handshake, SASL_HANDSHAKE) => self.handshake(frame.clone()),
            // Kafka re-authenticates only sessions that expire; otherwise SaslHandshake is an
            // ordinary request, answered ILLEGAL_SASL_STATE.
            (Phase::Authenticated, SASL_HANDSHAKE)
                if self
                    .session
                    .as_ref()
                    .is_some_and(|s| s.expires_at_ms.is_some()) =>
            {
                self.handshake(frame.clone())
            }
            (Phase::Authenticate { .. }, SASL_AUTHENTICATE) => {
                self.authenticate(frame.clone(), now_ms, scram, tokens)
            }
            (Phase::Authenticated, _) => {
                let expired = self
                    .session
                    .as_ref()
                    .and_then(|s| s.expires_at_ms)
                    .is_some_and(|at| now_ms >= at);
                if expired {
                    Gate::Close(
                        "the SASL session expired and the client did not re-authenticate".into(),
                    )
                } else {
                    Gate::Pass
                }
            }
            (Phase::Handshake, API_VERSIONS) if self.session.is_none() => Gate::Pass,
            // A client re-authenticating may still have ordinary requests under way.
            (Phase::Authenticate { .. }, _) if self.session.is_some() => Gate::Pass,
            (Phase::Handshake, _) => Gate::Close(format!(
                "Unexpected Kafka request of type {api_key} during SASL handshake"
            )),
            (_, _) => Gate::Close(format!(
                "Unexpected Kafka request of type {api_key} during SASL authentication"
            )),
        }
    }

    fn handshake(&mut self, mut frame: Bytes) -> Gate {
        let version = i16::from_be_bytes([frame[2], frame[3]]);
        if !(0..=1).contains(&version) {
            return Gate::Close(format!("unsupported SaslHandshake version {version}"));
        }
        let header = match RequestHeader::decode(
            &mut frame,
            request_header_version(SASL_HANDSHAKE, version),
        ) {
            Ok(h) => h,
            Err(e) => return Gate::Close(format!("bad header: {e}")),
        };
        let request = match SaslHandshakeRequest::decode(&mut frame, version) {
            Ok(r) => r,
            Err(e) => return Gate::Close(format!("malformed SaslHandshake: {e}")),
        };
        let mechanism = request.mechanism;
        let enabled = self.config.mechanisms.clone();
        let reply = |code: ErrorCode| {
            SaslReply::Handshake(
                header.clone(),
                SaslHandshakeResponse {
                    error_code: code.code(),
                    mechanisms: enabled.clone(),
                },
            )
        };
        if let Some(s) = &self.session {
            if s.mechanism != mechanism || version == 0 {
                let why = format!(
                    "re-authentication must use SaslHandshake v1 and the same mechanism ({}), \
                     not {mechanism} v{version}",
                    s.mechanism
                );
                self.log_failure(&mechanism, Some(&s.principal.name), &why);
                return Gate::Reply {
                    reply: reply(ErrorCode::ILLEGAL_SASL_STATE),
                    principal: None,
                    close: Some(why),
                };
            }
        }
        if !self.config.enabled(&mechanism) {
            let why = format!("Unsupported SASL mechanism {mechanism}");
            self.log_failure(&mechanism, None, &why);
            return Gate::Reply {
                reply: reply(ErrorCode::UNSUPPORTED_SASL_MECHANISM),
                principal: None,
                close: Some(why),
            };
        }
        let exchange = match mechanism.as_str() {
            PLAIN => Exchange::Plain,
            OAUTHBEARER => Exchange::OAuthBearer(OAuthBearerServer::default()),
            other => match ScramMechanism::from_name(other) {
                Some(m) => Exchange::Scram(ScramServer::new(m)),
                None => return Gate::Close(format!("mechanism {other} has no server")),
            },
        };
        self.phase = if version == 0 {
            Phase::RawTokens {
                mechanism,
                exchange,
            }
        } else {
            Phase::Authenticate {
                mechanism,
                exchange,
            }
        };
        Gate::Reply {
            reply: reply(ErrorCode::NONE),
            principal: None,
            close: None,
        }
    }

    fn validator(&self) -> Validator {
        if let Some(settings) = &self.config.oauth {
            return match jwt::JwtValidator::new(settings) {
                Ok(v) => Validator::Jwt(v),
                Err(why) => Validator::Unavailable(why),
            };
        }
        let opt = |k: &str| self.config.jaas_option(OAUTHBEARER, k);
        Validator::Unsecured(UnsecuredValidator {
            principal_claim: opt("unsecuredValidatorPrincipalClaimName")
                .unwrap_or("sub")
                .to_string(),
            scope_claim: opt("unsecuredValidatorScopeClaimName")
                .unwrap_or("scope")
                .to_string(),
            required_scopes: opt("unsecuredValidatorRequiredScope")
                .map(|s| s.split_whitespace().map(str::to_string).collect())
                .unwrap_or_default(),
            allowable_clock_skew_ms: opt("unsecuredValidatorAllowableClockSkewMs")
                .and_then(|s| s.trim().parse().ok())
                .unwrap_or(0),
        })
    }

    /// One token through the mechanism; `claimed` collects the user name for the log.
    #[allow(clippy::too_many_arguments)]
    fn step(
        &self,
        exchange: &mut Exchange,
        token: &[u8],
        now_ms: i64,
        mechanism: &str,
        scram: ScramLookup<'_>,
        tokens: TokenLookup<'_>,
        claimed: &mut Option<String>,
        reason: &mut Option<String>,
    ) -> Result<Outcome, AuthError> {
        match exchange {
            Exchange::Plain => {
                let config = &self.config;
                let user = plain::authenticate(
                    token,
                    &|u| config.plain_password(u).map(str::to_string),
                    claimed,
                )?;
                Ok(Outcome::Done {
                    user,
                    final_bytes: Vec::new(),
                    credential_expires_ms: None,
                    token_owner: None,
                })
            }
            Exchange::Scram(server) => {
                let m = ScramMechanism::from_name(mechanism).expect("a SCRAM exchange");
                let step =
                    server.step_with_tokens(token, &|u| scram(u, m), &|t| tokens(t, m), claimed)?;
                match step {
                    scram::Step::Challenge(c) => Ok(Outcome::Challenge(c)),
                    scram::Step::Complete { user, server_final } => {
                        // A token login acts as the token's owner until the token expires
                        // (Kafka's credential lifetime, which bounds the session).
                        let token = server.token_owner().map(|(owner, expiry)| {
                            let owner = KafkaPrincipal::parse(owner)
                                .unwrap_or_else(|| KafkaPrincipal::user(owner));
                            (owner, expiry)
                        });
                        Ok(Outcome::Done {
                            user,
                            final_bytes: server_final,
                            credential_expires_ms: token.as_ref().map(|t| t.1),
                            token_owner: token.map(|t| t.0),
                        })
                    }
                }
            }
            Exchange::OAuthBearer(server) => {
                match server.step(token, &self.validator(), now_ms, claimed, reason)? {
                    oauthbearer::Step::Challenge(c) => Ok(Outcome::Challenge(c)),
                    oauthbearer::Step::Complete(t) => Ok(Outcome::Done {
                        user: t.principal,
                        final_bytes: Vec::new(),
                        credential_expires_ms: Some(t.expires_at_ms),
                        token_owner: None,
                    }),
                }
            }
        }
    }

    /// Runs a token; on success returns (principal, final bytes, session lifetime ms).
    fn run_token(
        &mut self,
        token: &[u8],
        now_ms: i64,
        scram: ScramLookup<'_>,
        tokens: TokenLookup<'_>,
    ) -> Result<TokenOutcome, (String, AuthError)> {
        let phase = std::mem::replace(&mut self.phase, Phase::Handshake);
        let (mechanism, mut exchange, raw) = match phase {
            Phase::Authenticate {
                mechanism,
                exchange,
            } => (mechanism, exchange, false),
            Phase::RawTokens {
                mechanism,
                exchange,
            } => (mechanism, exchange, true),
            other => {
                self.phase = other;
                return Err((
                    String::new(),
                    AuthError::Generic("no SASL exchange under way".into()),
                ));
            }
        };
        let mut claimed = None;
        let mut reason = None;
        let result = self.step(
            &mut exchange,
            token,
            now_ms,
            &mechanism,
            scram,
            tokens,
            &mut claimed,
            &mut reason,
        );
        match result {
            Ok(Outcome::Challenge(c)) => {
                self.phase = if raw {
                    Phase::RawTokens {
                        mechanism,
                        exchange,
                    }
                } else {
                    Phase::Authenticate {
                        mechanism,
                        exchange,
                    }
                };
                Ok((Some(c), None, Vec::new()))
            }
            Ok(Outcome::Done {
                user,
                final_bytes,
                credential_expires_ms,
                token_owner,
            }) => {
                let token_authenticated = token_owner.is_some();
                let principal = token_owner.unwrap_or_else(|| KafkaPrincipal::user(user));
                if let Some(previous) = &self.session {
                    if previous.principal != principal {
                        let err = AuthError::Explicit(format!(
                            "Cannot change principals during re-authentication from {}: {}",
                            previous.principal, principal
                        ));
                        self.log_failure(&mechanism, Some(&principal.name), &err.to_string());
                        return Err((mechanism, err));
                    }
                }
                let reauth_ms = self.config.reauth_ms(&mechanism);
                let mut lifetime: Option<i64> = (reauth_ms > 0).then_some(reauth_ms);
                if let Some(exp) = credential_expires_ms {
                    let left = (exp - now_ms).max(0);
                    lifetime = Some(lifetime.map_or(left, |l| l.min(left)));
                }
                self.session = Some(Session {
                    principal: principal.clone(),
                    token_authenticated,
                    mechanism,
                    expires_at_ms: lifetime.map(|l| now_ms + l),
                });
                self.phase = Phase::Authenticated;
                Ok((None, Some((principal, lifetime.unwrap_or(0))), final_bytes))
            }
            Err(e) => {
                let logged = match &reason {
                    Some(r) => format!("{e} ({r})"),
                    None => e.to_string(),
                };
                self.log_failure(&mechanism, claimed.as_deref(), &logged);
                Err((mechanism, e))
            }
        }
    }

    fn authenticate(
        &mut self,
        mut frame: Bytes,
        now_ms: i64,
        scram: ScramLookup<'_>,
        tokens: TokenLookup<'_>,
    ) -> Gate {
        let version = i16::from_be_bytes([frame[2], frame[3]]);
        if !(0..=2).contains(&version) {
            return Gate::Close(format!("unsupported SaslAuthenticate version {version}"));
        }
        let header = match RequestHeader::decode(
            &mut frame,
            request_header_version(SASL_AUTHENTICATE, version),
        ) {
            Ok(h) => h,
            Err(e) => return Gate::Close(format!("bad header: {e}")),
        };
        let request = match SaslAuthenticateRequest::decode(&mut frame, version) {
            Ok(r) => r,
            Err(e) => return Gate::Close(format!("malformed SaslAuthenticate: {e}")),
        };
        let respond = |code: ErrorCode, message: Option<String>, bytes: Vec<u8>, life: i64| {
            SaslReply::Authenticate(
                header.clone(),
                SaslAuthenticateResponse {
                    error_code: code.code(),
                    error_message: message,
                    auth_bytes: Bytes::from(bytes),
                    session_lifetime_ms: life,
                    ..Default::default()
                },
            )
        };
        match self.run_token(&request.auth_bytes, now_ms, scram, tokens) {
            Ok((Some(challenge), _, _)) => Gate::Reply {
                reply: respond(ErrorCode::NONE, None, challenge, 0),
                principal: None,
                close: None,
            },
            Ok((None, Some((principal, lifetime)), final_bytes)) => Gate::Reply {
                reply: respond(ErrorCode::NONE, None, final_bytes, lifetime),
                principal: Some(principal),
                close: None,
            },
            Ok((None, None, _)) => Gate::Close("SASL exchange ended without an outcome".into()),
            Err((mechanism, e)) => {
                let message = e.client_message(&mechanism);
                Gate::Reply {
                    reply: respond(
                        ErrorCode::SASL_AUTHENTICATION_FAILED,
                        Some(message.clone()),
                        Vec::new(),
                        0,
                    ),
                    principal: None,
                    close: Some(message),
                }
            }
        }
    }

    fn raw_token(
        &mut self,
        frame: &Bytes,
        now_ms: i64,
        scram: ScramLookup<'_>,
        tokens: TokenLookup<'_>,
    ) -> Gate {
        match self.run_token(frame, now_ms, scram, tokens) {
            Ok((Some(challenge), _, _)) => Gate::Reply {
                reply: SaslReply::Raw(challenge),
                principal: None,
                close: None,
            },
            Ok((None, principal, final_bytes)) => Gate::Reply {
                reply: SaslReply::Raw(final_bytes),
                principal: principal.map(|p| p.0),
                close: None,
            },
            // Raw tokens have no error frame: Kafka closes the connection.
            Err((_, e)) => Gate::Close(format!("SASL authentication failed: {e}")),
        }
    }

    /// One line per failure, rate-limited per client address (a client retrying bad
    /// credentials in a loop must not fill the disk).
    fn log_failure(&self, mechanism: &str, user: Option<&str>, why: &str) {
        let kind = crate::logging::LineKind::FailedAuthentication;
        let Some(suppressed) = crate::logging::admit_line(kind, self.peer.ip()) else {
            return;
        };
        tracing::info!(
            peer = %self.peer,
            listener = %self.config.listener,
            mechanism = %mechanism,
            user = user.unwrap_or("(unknown)"),
            reason = %why,
            suppressed_since_last_line = suppressed,
            "Failed authentication from {} on listener {} with {mechanism}: {why}",
            self.peer.ip(),
            self.config.listener,
        );
    }
}

#[cfg(test)]
mod jwks_tests;
#[cfg(test)]
mod jwt_tests;
#[cfg(test)]
mod tests;
