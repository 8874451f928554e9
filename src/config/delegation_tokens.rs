//! The delegation token settings (KIP-48, Kafka's `DelegationTokenManagerConfigs`): the
//! secret that keys every token's HMAC, and the token lifetimes. The tokens themselves are
//! `controller::delegation_tokens`.

/// Kafka's `delegation.token.max.lifetime.ms` default: 7 days.
pub const DEFAULT_MAX_LIFETIME_MS: i64 = 7 * 24 * 60 * 60 * 1000;
/// Kafka's `delegation.token.expiry.time.ms` default: 24 hours.
pub const DEFAULT_EXPIRY_TIME_MS: i64 = 24 * 60 * 60 * 1000;
/// Kafka's `delegation.token.expiry.check.interval.ms` default: 1 hour.
pub const DEFAULT_EXPIRY_CHECK_INTERVAL_MS: i64 = 60 * 60 * 1000;

/// The broker and controller settings for tokens (Kafka's `DelegationTokenManagerConfigs`).
#[derive(Clone, PartialEq, Eq)]
pub struct TokenSettings {
    /// `delegation.token.secret.key` (or the deprecated `delegation.token.master.key`); None
    /// or empty: tokens are disabled (DELEGATION_TOKEN_AUTH_DISABLED).
    pub secret_key: Option<String>,
    pub max_lifetime_ms: i64,
    /// How long a token lives without renewal (and the longest one renewal extends it).
    pub expiry_time_ms: i64,
    /// How often the active controller removes expired tokens.
    pub expiry_check_interval_ms: i64,
}

impl Default for TokenSettings {
    fn default() -> Self {
        TokenSettings {
            secret_key: None,
            max_lifetime_ms: DEFAULT_MAX_LIFETIME_MS,
            expiry_time_ms: DEFAULT_EXPIRY_TIME_MS,
            expiry_check_interval_ms: DEFAULT_EXPIRY_CHECK_INTERVAL_MS,
        }
    }
}

impl TokenSettings {
    /// Kafka's `tokenAuthEnabled`: a non-empty secret.
    pub fn enabled(&self) -> bool {
        self.secret().is_some()
    }

    /// The secret, if set and not empty.
    pub fn secret(&self) -> Option<&str> {
        self.secret_key.as_deref().filter(|s| !s.is_empty())
    }
}

/// Never prints the secret (configs are logged at start-up).
impl std::fmt::Debug for TokenSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TokenSettings")
            .field("secret_key", &self.secret_key.as_ref().map(|_| "[hidden]"))
            .field("max_lifetime_ms", &self.max_lifetime_ms)
            .field("expiry_time_ms", &self.expiry_time_ms)
            .field("expiry_check_interval_ms", &self.expiry_check_interval_ms)
            .finish()
    }
}
