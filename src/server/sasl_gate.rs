//! The connection's side of SASL (issue 13, sasl slice): builds a connection's
//! [`SaslSession`] on a SASL listener, hands it each frame with the SCRAM credentials of the
//! current metadata image, and frames its replies. The exchange itself is `security::sasl`.
use std::collections::BTreeMap;
use std::sync::Arc;

use bytes::{BufMut, Bytes, BytesMut};

use crate::broker::Broker;
use crate::config::sasl::ListenerSaslConfig;
use crate::config::BrokerConfig;
use crate::handlers::{encode_response, ConnectionContext};
use crate::security::sasl::scram::{ScramMechanism, TokenCredential};
use crate::security::sasl::{Gate, SaslReply, SaslSession};

/// Each SASL listener's settings, shared by its connections.
pub type SaslListeners = BTreeMap<String, Arc<ListenerSaslConfig>>;

/// Each SASL listener's settings; a listener validating signed OAUTHBEARER tokens loads its
/// JWKS now, so a missing or malformed key set stops start-up (as Kafka's broker fails to
/// configure its validator).
pub fn listeners(config: &BrokerConfig) -> Result<SaslListeners, String> {
    let mut out = SaslListeners::new();
    for (name, c) in &config.sasl.listeners {
        if let Some(oauth) = &c.oauth {
            crate::security::sasl::jwt::JwtValidator::new(oauth).map_err(|why| {
                format!("listener {name}: OAUTHBEARER token validation cannot start: {why}")
            })?;
        }
        out.insert(name.clone(), Arc::new(c.clone()));
    }
    Ok(out)
}

/// The session of a connection accepted on a SASL listener; None on any other.
pub fn session(listeners: &SaslListeners, context: &ConnectionContext) -> Option<SaslSession> {
    if !matches!(
        context.security_protocol,
        crate::config::SecurityProtocol::SaslPlaintext | crate::config::SecurityProtocol::SaslSsl
    ) {
        return None;
    }
    let config = listeners
        .get(&context.listener_name.to_ascii_uppercase())
        .cloned()
        // Config parsing gives every SASL listener its settings; an empty one refuses all.
        .unwrap_or_default();
    Some(SaslSession::new(config, context.peer))
}

/// Judges a frame with the broker's current SCRAM credentials and delegation tokens; while the metadata log has
/// none, with the ones this node was formatted with (`storage format --add-scram`), so the
/// controllers and brokers of a new SCRAM cluster can log in to each other.
pub fn judge(broker: &Broker, session: &mut SaslSession, frame: &Bytes) -> Gate {
    let image = broker.cluster.image();
    let bootstrap = &broker.cluster.bootstrap_scram;
    let lookup = |user: &str, m: ScramMechanism| match image.scram.users.is_empty() {
        false => image.scram.credential(user, m).cloned(),
        true => bootstrap.credential(user, m).cloned(),
    };
    let now_ms = broker.now_ms();
    let settings = &broker.config.delegation_tokens;
    // A delegation token login (KIP-48): the live token, its credential derived from the HMAC
    // this node computes with the shared secret. An expired token the controller has not swept
    // yet is refused too.
    let tokens = |token_id: &str, m: ScramMechanism| {
        let token = image.delegation_tokens.get(token_id)?;
        if token.expired(now_ms) {
            return None;
        }
        let hmac = crate::controller::delegation_tokens::settings_hmac(settings, token_id)?;
        Some(TokenCredential {
            credential: crate::controller::delegation_tokens::token_scram_credential(m, &hmac),
            owner: token.owner.clone(),
            expiry_timestamp_ms: token.expiry_timestamp_ms,
        })
    };
    session.on_frame_with_tokens(frame, now_ms, &lookup, &tokens)
}

/// The framed bytes of a reply.
pub fn encode(reply: SaslReply) -> Bytes {
    match reply {
        SaslReply::Handshake(header, r) => encode_response(&header, &r),
        SaslReply::Authenticate(header, r) => encode_response(&header, &r),
        SaslReply::Raw(token) => {
            let mut b = BytesMut::with_capacity(4 + token.len());
            b.put_i32(token.len() as i32);
            b.put_slice(&token);
            b.freeze()
        }
    }
}
