//! Listener security: Kafka's `SecurityProtocol`, `listener.security.protocol.map` with its
//! KRaft defaults and validation, and the keys that secure a Kafka broker or its data which
//! Strata cannot honour yet (TLS, SASL, authorizers other than the standard one, flush
//! checkpoints): set to anything but their defaults they stop start-up with an error naming
//! the key, never a warning.
use std::collections::BTreeMap;
use std::fmt;

use super::registry::split_list;
use super::ConfigError;

/// Kafka's `SecurityProtocol`: how a listener's connections are secured.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SecurityProtocol {
    Plaintext,
    Ssl,
    SaslPlaintext,
    SaslSsl,
}

impl SecurityProtocol {
    /// Kafka's names (`SecurityProtocol.forName` is case-insensitive).
    pub fn from_name(name: &str) -> Option<SecurityProtocol> {
        Some(match name.trim().to_ascii_uppercase().as_str() {
            "PLAINTEXT" => SecurityProtocol::Plaintext,
            "SSL" => SecurityProtocol::Ssl,
            "SASL_PLAINTEXT" => SecurityProtocol::SaslPlaintext,
            "SASL_SSL" => SecurityProtocol::SaslSsl,
            _ => return None,
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            SecurityProtocol::Plaintext => "PLAINTEXT",
            SecurityProtocol::Ssl => "SSL",
            SecurityProtocol::SaslPlaintext => "SASL_PLAINTEXT",
            SecurityProtocol::SaslSsl => "SASL_SSL",
        }
    }

    /// The id Kafka sends on the wire (BrokerRegistration, UpdateMetadata).
    pub fn id(self) -> i16 {
        match self {
            SecurityProtocol::Plaintext => 0,
            SecurityProtocol::Ssl => 1,
            SecurityProtocol::SaslPlaintext => 2,
            SecurityProtocol::SaslSsl => 3,
        }
    }
}

impl fmt::Display for SecurityProtocol {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Kafka's default `listener.security.protocol.map`: each protocol's name maps to itself.
pub const DEFAULT_PROTOCOL_MAP: &str =
    "PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL";

const PROTOCOL_MAP_KEY: &str = "listener.security.protocol.map";

/// Parses `listener.security.protocol.map` as Kafka's `KafkaConfig` does: `NAME:PROTOCOL`
/// entries, listener names upper-cased, protocol names case-insensitive. `explicit` is whether
/// the key was set: when it was not, a KRaft node maps its controller listener names to
/// PLAINTEXT as well, unless a listener or controller listener is named after SSL or SASL_*
/// (Kafka's `effectiveListenerSecurityProtocolMap`).
pub fn parse_protocol_map(
    raw: &str,
    explicit: bool,
    listener_names: &[String],
    controller_listener_names: &[String],
) -> Result<BTreeMap<String, SecurityProtocol>, ConfigError> {
    let mut map = BTreeMap::new();
    for entry in split_list(raw) {
        let Some((name, protocol)) = entry.split_once(':') else {
            return Err(ConfigError::invalid(
                PROTOCOL_MAP_KEY,
                raw,
                format!("Map entry {entry:?} is not NAME:PROTOCOL"),
            ));
        };
        let name = name.trim();
        if name.is_empty() {
            return Err(ConfigError::invalid(
                PROTOCOL_MAP_KEY,
                raw,
                format!("Map entry {entry:?} has an empty listener name"),
            ));
        }
        let protocol = SecurityProtocol::from_name(protocol).ok_or_else(|| {
            ConfigError::invalid(
                PROTOCOL_MAP_KEY,
                raw,
                format!("Invalid security protocol `{}`", protocol.trim()),
            )
        })?;
        map.insert(name.to_ascii_uppercase(), protocol);
    }
    if !explicit {
        let secured = |n: &String| {
            SecurityProtocol::from_name(n).is_some_and(|p| p != SecurityProtocol::Plaintext)
        };
        if !controller_listener_names.iter().any(secured) && !listener_names.iter().any(secured) {
            for name in controller_listener_names {
                map.entry(name.to_ascii_uppercase())
                    .or_insert(SecurityProtocol::Plaintext);
            }
        }
    }
    Ok(map)
}

/// Checks that every listener has a security protocol (Kafka: "No security protocol defined
/// for listener") and that Strata can serve it: PLAINTEXT and SSL; until SASL exists (issue 13)
/// a SASL listener stops start-up, rather than serving a port its operator believes is
/// authenticated without authentication.
pub fn check_listener_protocols(
    map: &BTreeMap<String, SecurityProtocol>,
    key: &str,
    names: &[String],
) -> Result<(), ConfigError> {
    for name in names {
        match map.get(&name.to_ascii_uppercase()) {
            None => {
                return Err(ConfigError::invalid(
                    key,
                    name,
                    format!(
                        "No security protocol defined for listener {name} (add it to \
                         {PROTOCOL_MAP_KEY})"
                    ),
                ))
            }
            // TLS is served by `security::tls`, SASL (after TLS for SASL_SSL) by
            // `security::sasl`.
            Some(
                SecurityProtocol::Plaintext
                | SecurityProtocol::Ssl
                | SecurityProtocol::SaslPlaintext
                | SecurityProtocol::SaslSsl,
            ) => {}
        }
    }
    Ok(())
}

/// The `authorizer.class.name` that switches on Strata's authorizer (Kafka's KRaft one).
pub const STANDARD_AUTHORIZER: &str = "org.apache.kafka.metadata.authorizer.StandardAuthorizer";

/// Parses `super.users` as Kafka's `StandardAuthorizer` does: principals (`Type:name`)
/// separated by semicolons, blanks ignored.
pub fn parse_super_users(raw: &str) -> Result<Vec<String>, ConfigError> {
    let mut users = Vec::new();
    for entry in raw.split(';').map(str::trim).filter(|e| !e.is_empty()) {
        // Kafka's `SecurityUtils.parseKafkaPrincipal`: a non-empty type before the first colon.
        if !entry.split_once(':').is_some_and(|(t, _)| !t.is_empty()) {
            return Err(ConfigError::invalid(
                "super.users",
                raw,
                format!("{entry:?} is not a principal (Type:name, e.g. User:admin)"),
            ));
        }
        users.push(entry.to_string());
    }
    Ok(users)
}

/// Kafka's defaults for the TLS and SASL keys a `server.properties` commonly spells out; such
/// a key set to its default asks for nothing Strata lacks.
const SECURITY_KEY_DEFAULTS: &[(&str, &str)] = &[
    ("ssl.client.auth", "none"),
    ("ssl.protocol", "TLSv1.3"),
    ("ssl.enabled.protocols", "TLSv1.2,TLSv1.3"),
    ("ssl.keystore.type", "JKS"),
    ("ssl.truststore.type", "JKS"),
    ("ssl.keymanager.algorithm", "SunX509"),
    ("ssl.trustmanager.algorithm", "PKIX"),
    ("ssl.endpoint.identification.algorithm", "https"),
    ("ssl.principal.mapping.rules", "DEFAULT"),
    ("ssl.allow.dn.changes", "false"),
    ("ssl.allow.san.changes", "false"),
    ("sasl.enabled.mechanisms", "GSSAPI"),
    ("sasl.mechanism.inter.broker.protocol", "GSSAPI"),
    ("sasl.mechanism.controller.protocol", "GSSAPI"),
    ("sasl.kerberos.principal.to.local.rules", "DEFAULT"),
    ("security.inter.broker.protocol", "PLAINTEXT"),
    ("allow.everyone.if.no.acl.found", "false"),
    ("connections.max.reauth.ms", "0"),
    ("log.flush.offset.checkpoint.interval.ms", "60000"),
    ("log.flush.start.offset.checkpoint.interval.ms", "60000"),
];

/// The TLS keys Strata acts on (security::tls), globally and per listener.
pub const TLS_KEYS: &[&str] = &[
    "ssl.keystore.type",
    "ssl.keystore.location",
    "ssl.keystore.password",
    "ssl.key.password",
    "ssl.keystore.key",
    "ssl.keystore.certificate.chain",
    "ssl.truststore.type",
    "ssl.truststore.location",
    "ssl.truststore.password",
    "ssl.truststore.certificates",
    "ssl.client.auth",
    "ssl.enabled.protocols",
    "ssl.protocol",
    "ssl.cipher.suites",
    "ssl.principal.mapping.rules",
    "ssl.endpoint.identification.algorithm",
];

/// Why Strata refuses to start with `key=value`: keys that secure the broker (TLS, SASL,
/// authorization) or make its data durable in Kafka, which Strata does not
/// implement, set to anything but their default or empty. Running without them would silently
/// weaken what the operator configured, so start-up stops with an error naming the key.
/// Per-listener forms (`listener.name.<name>.<key>`) are judged by their inner key.
pub fn refused_setting(key: &str, value: &str) -> Option<String> {
    // The SASL keys Strata implements are read and validated by `config::sasl`.
    if super::sasl::handles(key) {
        return None;
    }
    let inner = match key.strip_prefix("listener.name.") {
        Some(rest) => rest.split_once('.').map(|(_, k)| k).unwrap_or(rest),
        None => key,
    };
    let value_norm: String = value.chars().filter(|c| !c.is_whitespace()).collect();
    if value_norm.is_empty() {
        return None;
    }
    // TLS as `security::tls` implements it (which refuses values rustls cannot honour).
    if TLS_KEYS.contains(&inner)
        || (inner == "security.inter.broker.protocol"
            && ["PLAINTEXT", "SSL"].contains(&value_norm.to_ascii_uppercase().as_str()))
    {
        return None;
    }
    if let Some((_, default)) = SECURITY_KEY_DEFAULTS.iter().find(|(k, _)| *k == inner) {
        if value_norm.eq_ignore_ascii_case(default) {
            return None;
        }
    }
    let tls_or_sasl = inner.starts_with("ssl.")
        || inner.starts_with("sasl.")
        || inner.contains(".sasl.")
        || inner == "security.inter.broker.protocol"
        || inner == "connections.max.reauth.ms"
        || inner == "principal.builder.class";
    if tls_or_sasl {
        return Some(
            "Strata's TLS and SASL do not implement this setting or value, and it would change \
             how clients are authenticated, so it is refused rather than ignored"
                .into(),
        );
    }
    if inner == "authorizer.class.name" && value.trim() != STANDARD_AUTHORIZER {
        return Some(format!(
            "Strata's only authorizer is Kafka's {STANDARD_AUTHORIZER} (ACLs in the metadata \
             log); no other class can be loaded"
        ));
    }
    if inner.starts_with("log.flush.") {
        return Some(
            "Strata does not implement this flush setting; it flushes on its own schedule".into(),
        );
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn the_default_map_maps_protocols_to_themselves_and_controllers_to_plaintext() {
        let m = parse_protocol_map(
            DEFAULT_PROTOCOL_MAP,
            false,
            &names(&["PLAINTEXT", "CONTROLLER"]),
            &names(&["CONTROLLER"]),
        )
        .unwrap();
        assert_eq!(m["PLAINTEXT"], SecurityProtocol::Plaintext);
        assert_eq!(m["SSL"], SecurityProtocol::Ssl);
        assert_eq!(m["SASL_SSL"], SecurityProtocol::SaslSsl);
        assert_eq!(m["CONTROLLER"], SecurityProtocol::Plaintext);
        // Set explicitly, the map is taken as written (Kafka adds nothing).
        let m =
            parse_protocol_map("plaintext:plaintext", true, &[], &names(&["CONTROLLER"])).unwrap();
        assert!(!m.contains_key("CONTROLLER"));
        // With an SSL listener in sight Kafka adds no implicit controller mapping either.
        let m = parse_protocol_map(
            DEFAULT_PROTOCOL_MAP,
            false,
            &names(&["SSL"]),
            &names(&["CONTROLLER"]),
        )
        .unwrap();
        assert!(!m.contains_key("CONTROLLER"));
    }

    #[test]
    fn bad_map_entries_name_the_key() {
        for raw in ["PLAINTEXT", "A:TLS", ":PLAINTEXT"] {
            let err = parse_protocol_map(raw, true, &[], &[]).unwrap_err();
            assert!(
                matches!(&err, ConfigError::InvalidValue { key, .. } if key == PROTOCOL_MAP_KEY),
                "{raw}: {err}"
            );
        }
    }

    #[test]
    fn every_listener_needs_a_known_protocol() {
        let m = parse_protocol_map(DEFAULT_PROTOCOL_MAP, true, &[], &[]).unwrap();
        assert!(check_listener_protocols(&m, "listeners", &names(&["PLAINTEXT"])).is_ok());
        let err = check_listener_protocols(&m, "listeners", &names(&["INTERNAL"])).unwrap_err();
        assert!(err
            .to_string()
            .contains("No security protocol defined for listener INTERNAL"));
        assert!(check_listener_protocols(&m, "listeners", &names(&["SSL"])).is_ok());
        assert!(check_listener_protocols(&m, "listeners", &names(&["SASL_PLAINTEXT"])).is_ok());
        assert!(check_listener_protocols(&m, "listeners", &names(&["SASL_SSL"])).is_ok());
    }

    #[test]
    fn security_and_durability_keys_are_refused_unless_default() {
        for (k, v) in [
            ("ssl.keymanager.algorithm", "PKIX"),
            ("ssl.provider", "SunJSSE"),
            ("sasl.kerberos.service.name", "kafka"),
            ("listener.name.sasl_ssl.gssapi.sasl.jaas.config", "x"),
            ("sasl.oauthbearer.token.endpoint.url", "https://idp/token"),
            ("listener.name.external.ssl.engine.factory.class", "x.Y"),
            (
                "authorizer.class.name",
                "kafka.security.authorizer.AclAuthorizer",
            ),
            ("log.flush.offset.checkpoint.interval.ms", "1000"),
        ] {
            assert!(refused_setting(k, v).is_some(), "{k}={v} accepted");
        }
        for (k, v) in [
            ("ssl.client.auth", "none"),
            ("ssl.enabled.protocols", "TLSv1.2, TLSv1.3"),
            ("sasl.enabled.mechanisms", "GSSAPI"),
            ("security.inter.broker.protocol", "plaintext"),
            ("security.inter.broker.protocol", "SSL"),
            ("ssl.keystore.location", "/etc/k.pem"),
            ("ssl.client.auth", "required"),
            ("listener.name.external.ssl.keystore.location", "/k"),
            ("authorizer.class.name", ""),
            ("authorizer.class.name", STANDARD_AUTHORIZER),
            ("super.users", "User:admin"),
            ("sasl.oauthbearer.jwks.endpoint.url", "file:///jwks.json"),
            (
                "listener.name.x.oauthbearer.sasl.oauthbearer.expected.audience",
                "kafka",
            ),
            (
                "listener.name.x.oauthbearer.sasl.server.callback.handler.class",
                "org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler",
            ),
            ("allow.everyone.if.no.acl.found", "true"),
            ("num.io.threads", "8"),
            ("log.flush.offset.checkpoint.interval.ms", "60000"),
        ] {
            assert!(refused_setting(k, v).is_none(), "{k}={v} refused");
        }
    }
}
