//! SASL settings as Kafka's broker reads them: `sasl.enabled.mechanisms` (and its per-listener
//! form `listener.name.<l>.sasl.enabled.mechanisms`), the JAAS line of each listener and
//! mechanism (`listener.name.<l>.<mechanism>.sasl.jaas.config`, Kafka's
//! `JaasContext.loadServerContext`: PLAIN users as `user_<name>="<password>"` options of the
//! PlainLoginModule, the `username`/`password` options the broker itself logs in with),
//! `connections.max.reauth.ms` (global, per listener, per listener and mechanism, KIP-368),
//! `sasl.server.max.receive.size` and the mechanisms the peer client uses
//! (`sasl.mechanism.inter.broker.protocol`, `sasl.mechanism.controller.protocol`).
//!
//! Kafka's broker does not read an unprefixed `sasl.jaas.config` for its listeners (it falls
//! back to a static JAAS file, which Strata does not read), so that key stops start-up with a
//! pointer to the listener form rather than being ignored. GSSAPI (Kerberos) and custom
//! callback handlers are not implemented and stop start-up when a SASL listener would use them;
//! the one handler Strata knows is OAUTHBEARER's validating one, whose settings are
//! `config::oauth`.
use std::collections::BTreeMap;

use super::registry::split_list;
use super::{ConfigError, SecurityProtocol};

pub const PLAIN: &str = "PLAIN";
pub const SCRAM_SHA_256: &str = "SCRAM-SHA-256";
pub const SCRAM_SHA_512: &str = "SCRAM-SHA-512";
pub const OAUTHBEARER: &str = "OAUTHBEARER";
/// The mechanisms Strata serves.
pub const SUPPORTED_MECHANISMS: &[&str] = &[PLAIN, SCRAM_SHA_256, SCRAM_SHA_512, OAUTHBEARER];

/// One login module line of a JAAS configuration.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct JaasEntry {
    pub login_module: String,
    pub options: BTreeMap<String, String>,
}

/// Kafka's `JaasConfig` grammar: `<LoginModule class> <flag> key=value ... ;`, values quoted
/// (`"..."`, with `\` escapes) or bare words; one or more entries.
pub fn parse_jaas(text: &str) -> Result<Vec<JaasEntry>, String> {
    let mut tokens: Vec<(String, bool)> = Vec::new();
    let mut chars = text.chars().peekable();
    while let Some(&c) = chars.peek() {
        if c.is_whitespace() {
            chars.next();
        } else if c == '"' || c == '\'' {
            chars.next();
            let mut s = String::new();
            loop {
                match chars.next() {
                    None => return Err("unterminated quoted value".into()),
                    Some('\\') => match chars.next() {
                        Some(e) => s.push(e),
                        None => return Err("unterminated quoted value".into()),
                    },
                    Some(q) if q == c => break,
                    Some(o) => s.push(o),
                }
            }
            tokens.push((s, true));
        } else if c == '=' || c == ';' {
            chars.next();
            tokens.push((c.to_string(), false));
        } else {
            let mut s = String::new();
            while let Some(&w) = chars.peek() {
                if w.is_whitespace() || w == '=' || w == ';' || w == '"' {
                    break;
                }
                s.push(w);
                chars.next();
            }
            tokens.push((s, false));
        }
    }
    let mut entries = Vec::new();
    let mut i = 0;
    while i < tokens.len() {
        let (module, _) = &tokens[i];
        let flag = tokens.get(i + 1).map(|t| t.0.to_ascii_lowercase());
        if !matches!(
            flag.as_deref(),
            Some("required" | "requisite" | "sufficient" | "optional")
        ) {
            return Err(format!(
                "expected a login module and its control flag, found {module:?}"
            ));
        }
        let mut entry = JaasEntry {
            login_module: module.clone(),
            options: BTreeMap::new(),
        };
        i += 2;
        loop {
            match tokens.get(i) {
                None => return Err("missing ';' at the end of the login module".into()),
                Some((t, false)) if t == ";" => {
                    i += 1;
                    break;
                }
                Some((key, _)) => {
                    let eq = tokens.get(i + 1).map(|t| t.0.as_str());
                    let value = tokens.get(i + 2);
                    match (eq, value) {
                        (Some("="), Some((v, _))) => {
                            entry.options.insert(key.clone(), v.clone());
                            i += 3;
                        }
                        _ => return Err(format!("expected {key}=<value>")),
                    }
                }
            }
        }
        entries.push(entry);
    }
    if entries.is_empty() {
        return Err("no login module".into());
    }
    Ok(entries)
}

/// The login module Kafka expects for a mechanism's JAAS line (its callback handlers read the
/// options of entries of this module).
fn login_module_for(mechanism: &str) -> &'static str {
    match mechanism {
        PLAIN => "org.apache.kafka.common.security.plain.PlainLoginModule",
        OAUTHBEARER => "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule",
        _ => "org.apache.kafka.common.security.scram.ScramLoginModule",
    }
}

/// The SASL settings of one listener.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ListenerSaslConfig {
    /// Upper-cased, as listener names are.
    pub listener: String,
    /// Enabled mechanisms, in configured order.
    pub mechanisms: Vec<String>,
    /// The JAAS entry of each mechanism that has one.
    pub jaas: BTreeMap<String, JaasEntry>,
    /// `connections.max.reauth.ms` for each enabled mechanism (0: sessions never expire).
    pub reauth_ms: BTreeMap<String, i64>,
    /// `sasl.server.max.receive.size`: the largest frame accepted before authentication.
    pub max_receive_size: i32,
    /// OAUTHBEARER's signed-JWT validation (`config::oauth`); None: the unsecured validator.
    pub oauth: Option<super::oauth::OAuthValidation>,
}

impl ListenerSaslConfig {
    pub fn enabled(&self, mechanism: &str) -> bool {
        self.mechanisms.iter().any(|m| m == mechanism)
    }

    /// PLAIN's users: `user_<name>` options of the PlainLoginModule entry.
    pub fn plain_password(&self, user: &str) -> Option<&str> {
        self.jaas
            .get(PLAIN)?
            .options
            .get(&format!("user_{user}"))
            .map(|s| s.as_str())
    }

    /// An option of the mechanism's JAAS entry.
    pub fn jaas_option(&self, mechanism: &str, option: &str) -> Option<&str> {
        self.jaas
            .get(mechanism)?
            .options
            .get(option)
            .map(|s| s.as_str())
    }

    pub fn reauth_ms(&self, mechanism: &str) -> i64 {
        self.reauth_ms.get(mechanism).copied().unwrap_or(0)
    }
}

/// Every SASL setting of the broker.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SaslConfig {
    /// Only the listeners whose protocol is SASL_PLAINTEXT or SASL_SSL.
    pub listeners: BTreeMap<String, ListenerSaslConfig>,
    pub mechanism_inter_broker: String,
    pub mechanism_controller: String,
    /// How the peer client logs in to the inter-broker listener, when it is SASL.
    pub inter_broker_login: Option<PeerLogin>,
    /// How the peer client logs in to the controller listener, when it is SASL.
    pub controller_login: Option<PeerLogin>,
}

impl SaslConfig {
    pub fn listener(&self, name: &str) -> Option<&ListenerSaslConfig> {
        self.listeners.get(&name.to_ascii_uppercase())
    }
}

/// Whether `key` is a SASL key this module reads (so the generic refusal of unimplemented
/// security keys lets it through). `listener.name.<l>.` forms included.
pub fn handles(key: &str) -> bool {
    if key == "sasl.jaas.config" {
        // Refused by `parse` with a pointer to the listener form.
        return true;
    }
    let inner = match key.strip_prefix("listener.name.") {
        Some(rest) => match rest.split_once('.') {
            Some((_, k)) => k,
            None => return false,
        },
        None => key,
    };
    let inner_no_mech = SUPPORTED_MECHANISMS
        .iter()
        .find_map(|m| inner.strip_prefix(&format!("{}.", m.to_ascii_lowercase())))
        .unwrap_or(inner);
    matches!(
        inner_no_mech,
        "sasl.enabled.mechanisms"
            | "sasl.mechanism.inter.broker.protocol"
            | "sasl.mechanism.controller.protocol"
            | "connections.max.reauth.ms"
            | "sasl.server.max.receive.size"
    ) || (inner_no_mech == "sasl.jaas.config" && inner != inner_no_mech)
        || super::oauth::KEYS.contains(&inner_no_mech)
        // Only OAUTHBEARER's handler can be set: to Kafka's validating one (`parse` checks).
        || (inner_no_mech == "sasl.server.callback.handler.class"
            && inner.starts_with("oauthbearer.")
            && key.starts_with("listener.name."))
}

/// How this broker logs in to one SASL listener of its peers (Kafka's broker-side client
/// login: the JAAS entry of `listener.name.<listener>.<mechanism>.sasl.jaas.config`, its
/// `username` and `password` options, for the mechanism named by
/// `sasl.mechanism.inter.broker.protocol` or `sasl.mechanism.controller.protocol`).
#[derive(Clone, PartialEq, Eq, Default)]
pub struct PeerLogin {
    /// Upper-cased listener name.
    pub listener: String,
    pub mechanism: String,
    pub username: String,
    pub password: String,
}

impl std::fmt::Debug for PeerLogin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PeerLogin")
            .field("listener", &self.listener)
            .field("mechanism", &self.mechanism)
            .field("username", &self.username)
            .field("password", &"[hidden]")
            .finish()
    }
}

/// The mechanisms the peer client can log in with.
const PEER_MECHANISMS: &[&str] = &[PLAIN, SCRAM_SHA_256, SCRAM_SHA_512];

/// The login for a peer listener that is SASL_PLAINTEXT or SASL_SSL (None for any other).
/// `mechanism_key` names the setting that chose the mechanism; `enabled` is the listener's
/// enabled mechanisms when this node serves it (Kafka requires the inter-broker mechanism to
/// be among them, so that the brokers can authenticate each other).
fn peer_login(
    props: &BTreeMap<String, String>,
    protocols: &BTreeMap<String, SecurityProtocol>,
    listener: &str,
    mechanism_key: &str,
    enabled: Option<&[String]>,
) -> Result<Option<PeerLogin>, ConfigError> {
    let upper = listener.to_ascii_uppercase();
    if !matches!(
        protocols.get(&upper),
        Some(SecurityProtocol::SaslPlaintext | SecurityProtocol::SaslSsl)
    ) {
        return Ok(None);
    }
    let raw = props.get(mechanism_key).map(|s| s.trim()).unwrap_or("");
    let mechanism = if raw.is_empty() { "GSSAPI" } else { raw }.to_ascii_uppercase();
    if !PEER_MECHANISMS.contains(&mechanism.as_str()) {
        return Err(ConfigError::Unsupported {
            key: mechanism_key.into(),
            value: mechanism.clone(),
            reason: format!(
                "listener {upper} carries inter-broker or controller traffic over SASL, and \
                 {mechanism_key} chooses how this broker logs in to it ({mechanism}{}); \
                 Strata's peer client logs in with PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512",
                if raw.is_empty() {
                    " is Kafka's default: GSSAPI/Kerberos is not implemented"
                } else {
                    ""
                }
            ),
        });
    }
    if let Some(enabled) = enabled {
        if !enabled.contains(&mechanism) {
            return Err(ConfigError::invalid(
                mechanism_key,
                &mechanism,
                format!(
                    "{mechanism_key} must be included in sasl.enabled.mechanisms of listener \
                     {upper} when SASL is used for its traffic"
                ),
            ));
        }
    }
    let lower = upper.to_ascii_lowercase();
    let jaas_key = format!(
        "listener.name.{lower}.{}.sasl.jaas.config",
        mechanism.to_ascii_lowercase()
    );
    let found = props
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case(&jaas_key))
        .map(|(_, v)| v.as_str());
    let missing = |what: &str| {
        ConfigError::invalid(
            &jaas_key,
            "[hidden]",
            format!(
                "listener {upper} carries inter-broker or controller traffic with {mechanism}: \
                 its JAAS line needs {what} (username=\"...\" password=\"...\", the \
                 credentials this broker logs in to its peers with)"
            ),
        )
    };
    let Some(text) = found else {
        return Err(missing("to exist"));
    };
    let entries =
        parse_jaas(text).map_err(|why| ConfigError::invalid(&jaas_key, "[hidden]", why))?;
    let module = login_module_for(&mechanism);
    let entry = entries
        .into_iter()
        .find(|e| e.login_module == module)
        .ok_or_else(|| missing(&format!("a {module} entry")))?;
    let (Some(username), Some(password)) =
        (entry.options.get("username"), entry.options.get("password"))
    else {
        return Err(missing("the username and password options"));
    };
    Ok(Some(PeerLogin {
        listener: upper,
        mechanism,
        username: username.clone(),
        password: password.clone(),
    }))
}

fn parse_long(key: &str, v: &str) -> Result<i64, ConfigError> {
    v.trim()
        .parse::<i64>()
        .map_err(|_| ConfigError::invalid(key, v, "Expected a 64-bit integer"))
}

/// Reads the SASL settings for the listeners in `protocols` (name -> protocol of each
/// configured listener) from the raw properties.
pub fn parse(
    props: &BTreeMap<String, String>,
    protocols: &BTreeMap<String, SecurityProtocol>,
    listener_names: &[String],
    controller_listener_names: &[String],
    inter_broker_listener: Option<&str>,
) -> Result<SaslConfig, ConfigError> {
    let get = |k: &str| props.get(k).map(|s| s.as_str());
    if let Some(v) = get("sasl.jaas.config") {
        if !v.trim().is_empty() {
            return Err(ConfigError::Unsupported {
                key: "sasl.jaas.config".into(),
                value: "[hidden]".into(),
                reason: "a Kafka broker does not read an unprefixed sasl.jaas.config for its \
                         listeners; set listener.name.<listener>.<mechanism>.sasl.jaas.config \
                         (e.g. listener.name.sasl_plaintext.plain.sasl.jaas.config)"
                    .into(),
            });
        }
    }
    let global_mechanisms = get("sasl.enabled.mechanisms").unwrap_or("GSSAPI");
    let global_reauth = match get("connections.max.reauth.ms") {
        Some(v) => parse_long("connections.max.reauth.ms", v)?,
        None => 0,
    };
    let max_receive_size = match get("sasl.server.max.receive.size") {
        Some(v) => v.trim().parse::<i32>().map_err(|_| {
            ConfigError::invalid("sasl.server.max.receive.size", v, "Expected an integer")
        })?,
        None => 524288,
    };
    let mut out = SaslConfig {
        listeners: BTreeMap::new(),
        mechanism_inter_broker: get("sasl.mechanism.inter.broker.protocol")
            .unwrap_or("GSSAPI")
            .trim()
            .to_string(),
        mechanism_controller: get("sasl.mechanism.controller.protocol")
            .unwrap_or("GSSAPI")
            .trim()
            .to_string(),
        inter_broker_login: None,
        controller_login: None,
    };
    for name in listener_names {
        let upper = name.to_ascii_uppercase();
        if !matches!(
            protocols.get(&upper),
            Some(SecurityProtocol::SaslPlaintext | SecurityProtocol::SaslSsl)
        ) {
            continue;
        }
        let prefix = format!("listener.name.{}.", upper.to_ascii_lowercase());
        // Kafka matches the prefix on the lower-cased listener name.
        let lget = |k: &str| {
            props
                .iter()
                .find(|(key, _)| {
                    key.len() == prefix.len() + k.len()
                        && key[..prefix.len()].eq_ignore_ascii_case(&prefix)
                        && &key[prefix.len()..] == k
                })
                .map(|(key, v)| (key.clone(), v.as_str()))
        };
        let (mech_key, mech_raw) = lget("sasl.enabled.mechanisms")
            .unwrap_or_else(|| ("sasl.enabled.mechanisms".into(), global_mechanisms));
        let mechanisms: Vec<String> = split_list(mech_raw)
            .into_iter()
            .map(|m| m.to_ascii_uppercase())
            .collect();
        if mechanisms.is_empty() {
            return Err(ConfigError::invalid(
                &mech_key,
                mech_raw,
                format!("listener {upper} is SASL but enables no mechanism"),
            ));
        }
        for m in &mechanisms {
            if !SUPPORTED_MECHANISMS.contains(&m.as_str()) {
                return Err(ConfigError::Unsupported {
                    key: mech_key.clone(),
                    value: mech_raw.to_string(),
                    reason: format!(
                        "listener {upper} enables SASL mechanism {m}; Strata serves PLAIN, \
                         SCRAM-SHA-256, SCRAM-SHA-512 and OAUTHBEARER (GSSAPI/Kerberos is not \
                         implemented)"
                    ),
                });
            }
        }
        let mut cfg = ListenerSaslConfig {
            listener: upper.clone(),
            mechanisms: mechanisms.clone(),
            jaas: BTreeMap::new(),
            reauth_ms: BTreeMap::new(),
            max_receive_size,
            oauth: None,
        };
        let listener_reauth = match lget("connections.max.reauth.ms") {
            Some((k, v)) => parse_long(&k, v)?,
            None => global_reauth,
        };
        for m in &mechanisms {
            let lower = m.to_ascii_lowercase();
            if let Some((k, handler)) = lget(&format!("{lower}.sasl.server.callback.handler.class"))
                .or_else(|| lget("sasl.server.callback.handler.class"))
            {
                if m == OAUTHBEARER && super::oauth::is_validator_handler(handler) {
                    // Kafka's OAuthBearerConfig: the mechanism-prefixed key before the plain
                    // one, each in the listener's form before the global one.
                    let oauth_get = |key: &str| -> Option<(String, String)> {
                        let prefixed = format!("{lower}.{key}");
                        lget(&prefixed)
                            .or_else(|| get(&prefixed).map(|v| (prefixed.clone(), v)))
                            .or_else(|| lget(key))
                            .or_else(|| get(key).map(|v| (key.to_string(), v)))
                            .map(|(k, v)| (k, v.to_string()))
                    };
                    cfg.oauth = Some(super::oauth::parse(&oauth_get)?);
                } else {
                    return Err(ConfigError::Unsupported {
                        key: k,
                        value: "(class)".into(),
                        reason: format!(
                            "custom SASL callback handlers are Java classes Strata cannot load \
                             (OAUTHBEARER's may be {})",
                            super::oauth::VALIDATOR_CALLBACK_HANDLER
                        ),
                    });
                }
            }
            let reauth = match lget(&format!("{lower}.connections.max.reauth.ms")) {
                Some((k, v)) => parse_long(&k, v)?,
                None => listener_reauth,
            };
            cfg.reauth_ms.insert(m.clone(), reauth);
            match lget(&format!("{lower}.sasl.jaas.config")) {
                Some((k, v)) => {
                    let entries =
                        parse_jaas(v).map_err(|why| ConfigError::invalid(&k, "[hidden]", why))?;
                    let module = login_module_for(m);
                    let entry = entries
                        .into_iter()
                        .find(|e| e.login_module == module)
                        .ok_or_else(|| {
                            ConfigError::invalid(
                                &k,
                                "[hidden]",
                                format!("mechanism {m} needs a {module} entry"),
                            )
                        })?;
                    cfg.jaas.insert(m.clone(), entry);
                }
                None if m == PLAIN => {
                    // Kafka fails start-up without a JAAS entry for the listener; PLAIN has
                    // no other source of users.
                    return Err(ConfigError::invalid(
                        &format!("{prefix}plain.sasl.jaas.config"),
                        "",
                        format!(
                            "listener {upper} enables PLAIN, which needs a PlainLoginModule \
                             line with its users (user_<name>=\"<password>\")"
                        ),
                    ));
                }
                None => {}
            }
        }
        // Kafka's JWKS client takes its TLS from the OAUTHBEARER JAAS entry's `ssl.*` options.
        if let (Some(oauth), Some(entry)) = (cfg.oauth.as_mut(), cfg.jaas.get(OAUTHBEARER)) {
            oauth.jwks_ssl = entry
                .options
                .iter()
                .filter(|(k, _)| k.starts_with("ssl."))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
        }
        out.listeners.insert(upper, cfg);
    }
    // The logins of the peer client. Kafka's inter-broker listener is the resolved one
    // (`inter.broker.listener.name`, `security.inter.broker.protocol`, else Strata's first
    // broker listener); the controller listener is the first of `controller.listener.names`.
    let served = |l: &str| {
        out.listeners
            .get(&l.to_ascii_uppercase())
            .map(|c| c.mechanisms.clone())
    };
    if let Some(l) = inter_broker_listener {
        out.inter_broker_login = peer_login(
            props,
            protocols,
            l,
            "sasl.mechanism.inter.broker.protocol",
            served(l).as_deref(),
        )?;
    }
    if let Some(l) = controller_listener_names.first() {
        out.controller_login = peer_login(
            props,
            protocols,
            l,
            "sasl.mechanism.controller.protocol",
            served(l).as_deref(),
        )?;
    }
    Ok(out)
}

#[cfg(test)]
#[path = "sasl_tests.rs"]
mod tests;
