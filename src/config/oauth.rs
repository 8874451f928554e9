//! OAUTHBEARER validation settings of a listener (KIP-768, Kafka's OIDC support): a listener
//! whose `listener.name.<l>.oauthbearer.sasl.server.callback.handler.class` names Kafka's
//! `OAuthBearerValidatorCallbackHandler` validates signed JWTs against the keys at
//! `sasl.oauthbearer.jwks.endpoint.url` (a `file:` JWKS, re-read when it changes, or an
//! `https:` one, refreshed every `sasl.oauthbearer.jwks.endpoint.refresh.ms`), checking
//! `sasl.oauthbearer.expected.audience`, `sasl.oauthbearer.expected.issuer` and the time claims
//! with `sasl.oauthbearer.clock.skew.seconds` of tolerance, and takes the principal from
//! `sasl.oauthbearer.sub.claim.name`. Without a handler class the unsecured validator stays.
//!
//! Each `sasl.oauthbearer.*` key is looked up as Kafka's `OAuthBearerConfig` does over the
//! listener's configs: the mechanism-prefixed form (`oauthbearer.sasl.oauthbearer.*`) first,
//! then the plain one; each of them in its `listener.name.<l>.` form first, then globally.
use super::ConfigError;

/// The validating handler's class in Kafka 4.x.
pub const VALIDATOR_CALLBACK_HANDLER: &str =
    "org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler";
/// Its Kafka 3.1-3.x name, still found in `server.properties` files.
pub const LEGACY_VALIDATOR_CALLBACK_HANDLER: &str =
    "org.apache.kafka.common.security.oauthbearer.secured.OAuthBearerValidatorCallbackHandler";

pub const JWKS_ENDPOINT_URL: &str = "sasl.oauthbearer.jwks.endpoint.url";
pub const JWKS_ENDPOINT_REFRESH_MS: &str = "sasl.oauthbearer.jwks.endpoint.refresh.ms";
pub const JWKS_ENDPOINT_RETRY_BACKOFF_MS: &str = "sasl.oauthbearer.jwks.endpoint.retry.backoff.ms";
pub const JWKS_ENDPOINT_RETRY_BACKOFF_MAX_MS: &str =
    "sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms";
pub const EXPECTED_AUDIENCE: &str = "sasl.oauthbearer.expected.audience";
pub const EXPECTED_ISSUER: &str = "sasl.oauthbearer.expected.issuer";
pub const CLOCK_SKEW_SECONDS: &str = "sasl.oauthbearer.clock.skew.seconds";
pub const SCOPE_CLAIM_NAME: &str = "sasl.oauthbearer.scope.claim.name";
pub const SUB_CLAIM_NAME: &str = "sasl.oauthbearer.sub.claim.name";

/// The `sasl.oauthbearer.*` broker keys Strata acts on.
pub const KEYS: &[&str] = &[
    JWKS_ENDPOINT_URL,
    JWKS_ENDPOINT_REFRESH_MS,
    JWKS_ENDPOINT_RETRY_BACKOFF_MS,
    JWKS_ENDPOINT_RETRY_BACKOFF_MAX_MS,
    EXPECTED_AUDIENCE,
    EXPECTED_ISSUER,
    CLOCK_SKEW_SECONDS,
    SCOPE_CLAIM_NAME,
    SUB_CLAIM_NAME,
];

/// Where the verification keys come from.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum JwksEndpoint {
    /// A JWKS document on disk.
    File(std::path::PathBuf),
    /// An `https://` URL, fetched and refreshed.
    Https(String),
}

/// How a listener validates OAUTHBEARER tokens when its handler is Kafka's validating one.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct OAuthValidation {
    pub jwks_endpoint: JwksEndpoint,
    pub jwks_refresh_ms: i64,
    pub jwks_retry_backoff_ms: i64,
    pub jwks_retry_backoff_max_ms: i64,
    /// Empty: no audience expected (a token carrying `aud` is then refused, as jose4j does).
    pub expected_audience: Vec<String>,
    pub expected_issuer: Option<String>,
    pub clock_skew_seconds: i64,
    pub scope_claim_name: String,
    pub sub_claim_name: String,
    /// The `ssl.*` options of the listener's OAUTHBEARER JAAS entry: the JWKS endpoint's
    /// TLS client (Kafka's `JaasOptionsUtils.getSslClientConfig`).
    pub jwks_ssl: std::collections::BTreeMap<String, String>,
}

/// Whether `handler` is the validating handler (either of its names).
pub fn is_validator_handler(handler: &str) -> bool {
    let h = handler.trim();
    h == VALIDATOR_CALLBACK_HANDLER || h == LEGACY_VALIDATOR_CALLBACK_HANDLER
}

fn long(key: &str, raw: &str) -> Result<i64, ConfigError> {
    raw.trim()
        .parse::<i64>()
        .map_err(|_| ConfigError::invalid(key, raw, "Expected a 64-bit integer"))
}

/// Reads the validation settings; `get(key)` answers a `sasl.oauthbearer.*` key with the
/// name it was found under and its value, following the precedence in the module comment.
pub fn parse(
    get: &dyn Fn(&str) -> Option<(String, String)>,
) -> Result<OAuthValidation, ConfigError> {
    let (url_key, url) = get(JWKS_ENDPOINT_URL).ok_or_else(|| {
        ConfigError::invalid(
            JWKS_ENDPOINT_URL,
            "",
            "the OAuthBearerValidatorCallbackHandler needs the JWKS endpoint its keys come from \
             (file:///path/jwks.json or https://...)",
        )
    })?;
    let url = url.trim().to_string();
    let jwks_endpoint = if let Some(path) = url.strip_prefix("file://") {
        if !path.starts_with('/') {
            return Err(ConfigError::invalid(
                &url_key,
                &url,
                "a file: URL needs an absolute path (file:///path/to/jwks.json)",
            ));
        }
        JwksEndpoint::File(path.into())
    } else if url.to_ascii_lowercase().starts_with("https://") {
        JwksEndpoint::Https(url.clone())
    } else {
        return Err(ConfigError::invalid(
            &url_key,
            &url,
            "the JWKS endpoint must be a file: or https: URL",
        ));
    };
    let long_or = |key: &str, default: i64| -> Result<i64, ConfigError> {
        match get(key) {
            Some((k, v)) => long(&k, &v),
            None => Ok(default),
        }
    };
    let jwks_refresh_ms = long_or(JWKS_ENDPOINT_REFRESH_MS, 3_600_000)?;
    if jwks_refresh_ms < 0 {
        return Err(ConfigError::invalid(
            JWKS_ENDPOINT_REFRESH_MS,
            &jwks_refresh_ms.to_string(),
            "must be non-negative",
        ));
    }
    let jwks_retry_backoff_ms = long_or(JWKS_ENDPOINT_RETRY_BACKOFF_MS, 100)?.max(0);
    let jwks_retry_backoff_max_ms = long_or(JWKS_ENDPOINT_RETRY_BACKOFF_MAX_MS, 10_000)?.max(0);
    let clock_skew_seconds = long_or(CLOCK_SKEW_SECONDS, 30)?;
    if clock_skew_seconds < 0 {
        return Err(ConfigError::invalid(
            CLOCK_SKEW_SECONDS,
            &clock_skew_seconds.to_string(),
            "must be non-negative",
        ));
    }
    let expected_audience = get(EXPECTED_AUDIENCE)
        .map(|(_, v)| super::registry::split_list(&v))
        .unwrap_or_default()
        .into_iter()
        .filter(|a| !a.is_empty())
        .collect();
    let non_blank = |key: &str, default: Option<&str>| -> Result<Option<String>, ConfigError> {
        match get(key) {
            Some((k, v)) if v.trim().is_empty() => Err(ConfigError::invalid(
                &k,
                &v,
                "No value was found for the OAuth configuration",
            )),
            Some((_, v)) => Ok(Some(v.trim().to_string())),
            None => Ok(default.map(str::to_string)),
        }
    };
    Ok(OAuthValidation {
        jwks_endpoint,
        jwks_refresh_ms,
        jwks_retry_backoff_ms,
        jwks_retry_backoff_max_ms,
        expected_audience,
        expected_issuer: non_blank(EXPECTED_ISSUER, None)?,
        clock_skew_seconds,
        scope_claim_name: non_blank(SCOPE_CLAIM_NAME, Some("scope"))?.unwrap_or_default(),
        sub_claim_name: non_blank(SUB_CLAIM_NAME, Some("sub"))?.unwrap_or_default(),
        jwks_ssl: Default::default(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn getter(kv: &[(&str, &str)]) -> impl Fn(&str) -> Option<(String, String)> {
        let map: BTreeMap<String, String> = kv
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |k: &str| map.get(k).map(|v| (k.to_string(), v.clone()))
    }

    #[test]
    fn validation_settings_take_kafkas_defaults() {
        let c = parse(&getter(&[(JWKS_ENDPOINT_URL, "file:///etc/jwks.json")])).unwrap();
        assert_eq!(c.jwks_endpoint, JwksEndpoint::File("/etc/jwks.json".into()));
        assert_eq!(
            (
                c.jwks_refresh_ms,
                c.jwks_retry_backoff_ms,
                c.jwks_retry_backoff_max_ms
            ),
            (3_600_000, 100, 10_000)
        );
        assert_eq!(c.clock_skew_seconds, 30);
        assert_eq!(
            (c.scope_claim_name.as_str(), c.sub_claim_name.as_str()),
            ("scope", "sub")
        );
        assert!(c.expected_audience.is_empty() && c.expected_issuer.is_none());
        let c = parse(&getter(&[
            (JWKS_ENDPOINT_URL, "https://idp.example/keys"),
            (EXPECTED_AUDIENCE, "kafka, strata"),
            (EXPECTED_ISSUER, "https://idp.example"),
            (CLOCK_SKEW_SECONDS, "5"),
            (SUB_CLAIM_NAME, "client_id"),
        ]))
        .unwrap();
        assert_eq!(
            c.jwks_endpoint,
            JwksEndpoint::Https("https://idp.example/keys".into())
        );
        assert_eq!(c.expected_audience, vec!["kafka", "strata"]);
        assert_eq!(c.expected_issuer.as_deref(), Some("https://idp.example"));
        assert_eq!(c.clock_skew_seconds, 5);
        assert_eq!(c.sub_claim_name, "client_id");
    }

    #[test]
    fn bad_validation_settings_name_the_key() {
        for kv in [
            vec![],
            vec![(JWKS_ENDPOINT_URL, "http://idp.example/keys")],
            vec![(JWKS_ENDPOINT_URL, "file://relative/jwks.json")],
            vec![
                (JWKS_ENDPOINT_URL, "file:///j.json"),
                (JWKS_ENDPOINT_REFRESH_MS, "-1"),
            ],
            vec![
                (JWKS_ENDPOINT_URL, "file:///j.json"),
                (CLOCK_SKEW_SECONDS, "x"),
            ],
            vec![(JWKS_ENDPOINT_URL, "file:///j.json"), (SUB_CLAIM_NAME, " ")],
        ] {
            let err = parse(&getter(&kv)).unwrap_err();
            assert!(
                err.to_string().contains("sasl.oauthbearer."),
                "{kv:?}: {err}"
            );
        }
        assert!(is_validator_handler(VALIDATOR_CALLBACK_HANDLER));
        assert!(is_validator_handler(LEGACY_VALIDATOR_CALLBACK_HANDLER));
        assert!(!is_validator_handler("com.example.MyHandler"));
    }
}
