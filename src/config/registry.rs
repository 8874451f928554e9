//! The registry of configuration keys (Kafka's `ConfigDef`): for every broker key Strata
//! knows, its type, default, validator and whether Kafka lets it change dynamically; and the
//! conversion of a raw string into a typed [`ConfigValue`] (Kafka's `ConfigDef.parseType`:
//! values are trimmed, booleans are case-insensitive, lists are comma-separated).

use super::ConfigError;

/// A config's type, with Kafka's DescribeConfigs (v3+) type ids.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConfigType {
    Boolean,
    String,
    Int,
    Short,
    Long,
    Double,
    List,
    Class,
    Password,
}

impl ConfigType {
    /// `DescribeConfigsResponse.ConfigType` id.
    pub fn describe_id(self) -> i8 {
        match self {
            ConfigType::Boolean => 1,
            ConfigType::String => 2,
            ConfigType::Int => 3,
            ConfigType::Short => 4,
            ConfigType::Long => 5,
            ConfigType::Double => 6,
            ConfigType::List => 7,
            ConfigType::Class => 8,
            ConfigType::Password => 9,
        }
    }
}

/// What values a key accepts beyond its type (Kafka's `ConfigDef.Validator`s).
#[derive(Debug, Clone, Copy)]
pub enum Validator {
    Any,
    /// Numbers at least this.
    AtLeast(i64),
    /// Numbers in this inclusive range.
    Between(i64, i64),
    /// Doubles in this inclusive range.
    DoubleBetween(f64, f64),
    /// One of these strings (case-sensitive, as Kafka's `ValidString`).
    OneOf(&'static [&'static str]),
    /// A list whose every element is one of these (Kafka's `ValidList`).
    ListOf(&'static [&'static str]),
    /// `NAME://host:port` entries (checked by the broker parser).
    Listeners,
    /// `id@host:port` entries.
    QuorumVoters,
    /// `*` or `partition:broker` entries (Kafka's `ThrottledReplicaListValidator`).
    ThrottledReplicas,
}

/// A typed config value.
#[derive(Debug, Clone, PartialEq)]
pub enum ConfigValue {
    Boolean(bool),
    Int(i32),
    Short(i16),
    Long(i64),
    Double(f64),
    String(String),
    List(Vec<String>),
    Class(String),
    Password(String),
}

impl ConfigValue {
    /// The number for numeric values (for range validators).
    fn as_i64(&self) -> Option<i64> {
        match self {
            ConfigValue::Int(v) => Some(*v as i64),
            ConfigValue::Short(v) => Some(*v as i64),
            ConfigValue::Long(v) => Some(*v),
            _ => None,
        }
    }
}

/// One config key.
#[derive(Debug, Clone, Copy)]
pub struct ConfigDef {
    pub name: &'static str,
    pub config_type: ConfigType,
    /// The default as Kafka would print it; `None` when the key has no default (null).
    pub default: Option<&'static str>,
    pub validator: Validator,
    /// Whether Kafka allows changing it at runtime (DescribeConfigs `read_only` is the opposite).
    pub dynamic: bool,
}

impl ConfigDef {
    pub fn is_sensitive(&self) -> bool {
        self.config_type == ConfigType::Password
    }

    /// Parses and validates a raw value; errors name the key and the value.
    pub fn parse(&self, raw: &str) -> Result<ConfigValue, ConfigError> {
        let v = parse_type(self.name, self.config_type, raw)?;
        self.validate(raw, &v)?;
        Ok(v)
    }

    fn validate(&self, raw: &str, v: &ConfigValue) -> Result<(), ConfigError> {
        let bad = |reason: String| Err(ConfigError::invalid(self.name, raw, reason));
        match self.validator {
            Validator::Any | Validator::Listeners | Validator::QuorumVoters => Ok(()),
            Validator::AtLeast(min) => match v.as_i64() {
                Some(n) if n < min => bad(format!("Value must be at least {min}")),
                _ => Ok(()),
            },
            Validator::Between(min, max) => match v.as_i64() {
                Some(n) if n < min || n > max => {
                    bad(format!("Value must be between {min} and {max}"))
                }
                _ => Ok(()),
            },
            Validator::DoubleBetween(min, max) => match v {
                ConfigValue::Double(d) if !(min..=max).contains(d) => {
                    bad(format!("Value must be between {min} and {max}"))
                }
                _ => Ok(()),
            },
            Validator::OneOf(allowed) => match v {
                ConfigValue::String(s) if !allowed.contains(&s.as_str()) => {
                    bad(format!("String must be one of: {}", allowed.join(", ")))
                }
                _ => Ok(()),
            },
            Validator::ThrottledReplicas => match v {
                ConfigValue::List(items) => {
                    let pair = |i: &str| {
                        i.split_once(':').is_some_and(|(p, b)| {
                            p.trim().parse::<u32>().is_ok() && b.trim().parse::<u32>().is_ok()
                        })
                    };
                    let wildcard = items.len() == 1 && items[0] == "*";
                    if wildcard || items.iter().all(|i| pair(i)) {
                        Ok(())
                    } else {
                        bad("Must be '*' or a list of [partitionId]:[brokerId]".into())
                    }
                }
                _ => Ok(()),
            },
            Validator::ListOf(allowed) => match v {
                ConfigValue::List(items) => {
                    for item in items {
                        if !allowed.contains(&item.as_str()) {
                            return bad(format!(
                                "Invalid value {item}: must be one of {}",
                                allowed.join(", ")
                            ));
                        }
                    }
                    Ok(())
                }
                _ => Ok(()),
            },
        }
    }
}

/// Kafka's `ConfigDef.parseType` for string input.
pub fn parse_type(
    key: &str,
    config_type: ConfigType,
    raw: &str,
) -> Result<ConfigValue, ConfigError> {
    let trimmed = raw.trim();
    let bad = |what: &str| ConfigError::invalid(key, raw, format!("Expected value to be {what}"));
    Ok(match config_type {
        ConfigType::Boolean => {
            if trimmed.eq_ignore_ascii_case("true") {
                ConfigValue::Boolean(true)
            } else if trimmed.eq_ignore_ascii_case("false") {
                ConfigValue::Boolean(false)
            } else {
                return Err(bad("either true or false"));
            }
        }
        ConfigType::Int => ConfigValue::Int(trimmed.parse().map_err(|_| bad("a 32-bit integer"))?),
        ConfigType::Short => {
            ConfigValue::Short(trimmed.parse().map_err(|_| bad("a 16-bit integer"))?)
        }
        ConfigType::Long => {
            ConfigValue::Long(trimmed.parse().map_err(|_| bad("a 64-bit integer"))?)
        }
        ConfigType::Double => {
            let d: f64 = trimmed.parse().map_err(|_| bad("a double"))?;
            if !d.is_finite() {
                return Err(bad("a finite double"));
            }
            ConfigValue::Double(d)
        }
        ConfigType::String => ConfigValue::String(trimmed.to_string()),
        ConfigType::Class => ConfigValue::Class(trimmed.to_string()),
        // Passwords are not trimmed by Kafka.
        ConfigType::Password => ConfigValue::Password(raw.to_string()),
        ConfigType::List => ConfigValue::List(split_list(trimmed)),
    })
}

/// A comma-separated list, elements trimmed; the empty string is the empty list.
pub fn split_list(s: &str) -> Vec<String> {
    let s = s.trim();
    if s.is_empty() {
        return Vec::new();
    }
    s.split(',').map(|p| p.trim().to_string()).collect()
}

const fn def(
    name: &'static str,
    config_type: ConfigType,
    default: Option<&'static str>,
    validator: Validator,
    dynamic: bool,
) -> ConfigDef {
    ConfigDef {
        name,
        config_type,
        default,
        validator,
        dynamic,
    }
}

use ConfigType::{
    Boolean as B, Double as D, Int as I, List as L, Long as G, Short as S, String as T,
};
use Validator::{Any, AtLeast};

/// `Long.MAX_VALUE`, Kafka's "never" for many intervals.
pub const LONG_MAX: &str = "9223372036854775807";
/// `Double.MAX_VALUE` as Java prints it: Kafka's "unlimited" for byte rates.
pub const DOUBLE_MAX: &str = "1.7976931348623157E308";
/// `Integer.MAX_VALUE`.
pub const INT_MAX: &str = "2147483647";

/// Valid `cleanup.policy` elements.
pub const CLEANUP_POLICIES: &[&str] = &["delete", "compact"];
/// Valid `compression.type` values for topics and the broker.
pub const COMPRESSION_TYPES: &[&str] =
    &["uncompressed", "zstd", "lz4", "snappy", "gzip", "producer"];
/// Valid `message.timestamp.type` values.
pub const TIMESTAMP_TYPES: &[&str] = &["CreateTime", "LogAppendTime"];

/// Every broker key Strata reads, with Kafka's defaults except where noted:
/// `node.id` 1, `listeners` on 127.0.0.1:9092, `log.dir` `./strata-data`, `max.connections`
/// 10000 and internal-topic replication factors 1 (Kafka's shipped single-node
/// `server.properties` values) so that a broker with no configuration works on one machine.
#[rustfmt::skip]
pub static BROKER_CONFIGS: &[ConfigDef] = &[
    def("node.id", I, Some("1"), AtLeast(0), false),
    def("broker.id", I, None, AtLeast(-1), false),
    def("process.roles", L, Some("broker,controller"), Validator::ListOf(&["broker", "controller"]), false),
    def("listeners", L, Some("PLAINTEXT://127.0.0.1:9092"), Validator::Listeners, true),
    def("advertised.listeners", L, None, Validator::Listeners, true),
    def("controller.listener.names", T, None, Any, false),
    def("controller.quorum.voters", L, Some(""), Validator::QuorumVoters, false),
    def("controller.quorum.bootstrap.servers", L, Some(""), Any, false),
    def("log.dirs", L, None, Any, false),
    def("log.dir", T, Some("./strata-data"), Any, false),
    def("num.partitions", I, Some("1"), AtLeast(1), false),
    def("default.replication.factor", I, Some("1"), AtLeast(1), false),
    def("auto.create.topics.enable", B, Some("true"), Any, false),
    def("delete.topic.enable", B, Some("true"), Any, false),
    def("authorizer.class.name", T, Some(""), Any, false),
    def("super.users", T, None, Any, false),
    def("allow.everyone.if.no.acl.found", B, Some("false"), Any, false),
    def("message.max.bytes", I, Some("1048588"), AtLeast(0), true),
    def("socket.request.max.bytes", I, Some("104857600"), AtLeast(1), false),
    // SO_SNDBUF of each accepted socket and SO_RCVBUF of the listening one; -1: the OS's own
    // (autotuned) size. The receive default is -1, not Kafka's 102400: a fixed 100 KiB
    // window cost rdkafka_performance 14 % of its 1 KiB produce rate (BENCHMARKS.md).
    def("socket.send.buffer.bytes", I, Some("102400"), AtLeast(-1), false),
    def("socket.receive.buffer.bytes", I, Some("-1"), AtLeast(-1), false),
    def("max.connections", I, Some("10000"), AtLeast(0), true),
    def("queued.max.requests", I, Some("500"), AtLeast(1), false),
    def("max.request.partition.size.limit", I, Some("2000"), AtLeast(1), false),
    def("queued.max.request.bytes", G, Some("-1"), Any, false),
    def("connections.max.idle.ms", G, Some("600000"), Any, false),
    def("max.connections.per.ip", I, Some(INT_MAX), AtLeast(0), true),
    def("max.connections.per.ip.overrides", T, Some(""), Any, true),
    def("strata.request.read.timeout.ms", G, Some("30000"), AtLeast(1), false),
    // The admin HTTP listener (config::admin): /metrics and the health probes.
    def("strata.admin.listeners", L, Some("http://127.0.0.1:9644"), Any, false),
    def("strata.metrics.max.partition.series", I, Some("10000"), AtLeast(0), false),
    def("strata.log.format", T, Some("text"), Validator::OneOf(&["text", "json"]), false),
    def("strata.log.durable.acks", B, Some("false"), Any, false),
    def("strata.fetch.zero.copy", B, Some("true"), Any, false),
    // SASL (config::sasl reads these and their listener.name.<l>. forms).
    def("sasl.enabled.mechanisms", L, Some("GSSAPI"), Any, false),
    def("sasl.mechanism.inter.broker.protocol", T, Some("GSSAPI"), Any, false),
    def("sasl.mechanism.controller.protocol", T, Some("GSSAPI"), Any, false),
    def("connections.max.reauth.ms", G, Some("0"), Any, false),
    def("sasl.server.max.receive.size", I, Some("524288"), Any, false),
    // OAUTHBEARER signed-JWT validation (config::oauth; also read per listener and mechanism).
    def("sasl.oauthbearer.jwks.endpoint.url", T, None, Any, false),
    def("sasl.oauthbearer.jwks.endpoint.refresh.ms", G, Some("3600000"), Any, false),
    def("sasl.oauthbearer.jwks.endpoint.retry.backoff.ms", G, Some("100"), Any, false),
    def("sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms", G, Some("10000"), Any, false),
    def("sasl.oauthbearer.expected.audience", L, None, Any, false),
    def("sasl.oauthbearer.expected.issuer", T, None, Any, false),
    def("sasl.oauthbearer.clock.skew.seconds", I, Some("30"), Any, false),
    def("sasl.oauthbearer.scope.claim.name", T, Some("scope"), Any, false),
    def("sasl.oauthbearer.sub.claim.name", T, Some("sub"), Any, false),
    // Delegation tokens (KIP-48; controller::delegation_tokens).
    def("delegation.token.secret.key", ConfigType::Password, None, Any, false),
    def("delegation.token.master.key", ConfigType::Password, None, Any, false),
    def("delegation.token.max.lifetime.ms", G, Some("604800000"), AtLeast(1), false),
    def("delegation.token.expiry.time.ms", G, Some("86400000"), AtLeast(1), false),
    def("delegation.token.expiry.check.interval.ms", G, Some("3600000"), AtLeast(1), false),
    def("listener.security.protocol.map", T, Some(super::security::DEFAULT_PROTOCOL_MAP), Any, false),
    def("strata.max.inflight.requests.per.connection", I, Some("16"), AtLeast(1), false),
    def("quota.window.num", I, Some("11"), AtLeast(1), false),
    def("quota.window.size.seconds", I, Some("1"), AtLeast(1), false),
    def("controller.quota.window.num", I, Some("11"), AtLeast(1), false),
    def("controller.quota.window.size.seconds", I, Some("1"), AtLeast(1), false),
    def("log.segment.bytes", I, Some("1073741824"), AtLeast(14), true),
    def("log.roll.ms", G, None, AtLeast(1), true),
    def("log.roll.hours", I, Some("168"), AtLeast(1), true),
    def("log.roll.jitter.ms", G, None, AtLeast(0), true),
    def("log.roll.jitter.hours", I, Some("0"), AtLeast(0), true),
    def("log.retention.ms", G, None, Any, true),
    def("log.retention.minutes", I, None, Any, true),
    def("log.retention.hours", I, Some("168"), Any, true),
    def("log.retention.bytes", G, Some("-1"), Any, true),
    def("log.retention.check.interval.ms", G, Some("300000"), AtLeast(1), false),
    def("log.index.interval.bytes", I, Some("4096"), AtLeast(0), true),
    def("log.index.size.max.bytes", I, Some("10485760"), AtLeast(4), true),
    def("log.flush.interval.messages", G, Some(LONG_MAX), AtLeast(1), true),
    def("log.flush.interval.ms", G, None, AtLeast(0), true),
    def("log.flush.scheduler.interval.ms", G, Some(LONG_MAX), Any, false),
    def("log.message.timestamp.type", T, Some("CreateTime"), Validator::OneOf(TIMESTAMP_TYPES), true),
    def("log.message.timestamp.before.max.ms", G, Some(LONG_MAX), AtLeast(0), true),
    def("log.message.timestamp.after.max.ms", G, Some(LONG_MAX), AtLeast(0), true),
    def("log.cleanup.policy", L, Some("delete"), Validator::ListOf(CLEANUP_POLICIES), true),
    def("log.cleaner.enable", B, Some("true"), Any, false),
    def("log.cleaner.delete.retention.ms", G, Some("86400000"), AtLeast(0), true),
    def("log.cleaner.min.compaction.lag.ms", G, Some("0"), AtLeast(0), true),
    def("log.cleaner.max.compaction.lag.ms", G, Some(LONG_MAX), AtLeast(1), true),
    def("log.cleaner.min.cleanable.ratio", D, Some("0.5"), Validator::DoubleBetween(0.0, 1.0), true),
    def("log.cleaner.backoff.ms", G, Some("15000"), AtLeast(0), true),
    def("log.cleaner.io.max.bytes.per.second", D, Some(DOUBLE_MAX), Any, true),
    def("log.segment.delete.delay.ms", G, Some("60000"), AtLeast(0), true),
    def("log.preallocate", B, Some("false"), Any, true),
    def("min.insync.replicas", I, Some("1"), AtLeast(1), true),
    def("compression.type", T, Some("producer"), Validator::OneOf(COMPRESSION_TYPES), true),
    def("unclean.leader.election.enable", B, Some("false"), Any, true),
    def("offsets.topic.num.partitions", I, Some("50"), AtLeast(1), false),
    def("offsets.topic.replication.factor", S, Some("1"), AtLeast(1), false),
    def("offsets.topic.segment.bytes", I, Some("104857600"), AtLeast(1), false),
    def("offsets.retention.minutes", I, Some("10080"), AtLeast(1), false),
    def("group.initial.rebalance.delay.ms", I, Some("3000"), AtLeast(0), false),
    def("group.min.session.timeout.ms", I, Some("6000"), AtLeast(0), false),
    def("group.max.session.timeout.ms", I, Some("1800000"), AtLeast(0), false),
    def("group.max.size", I, Some(INT_MAX), AtLeast(1), false),
    def("group.consumer.session.timeout.ms", I, Some("45000"), AtLeast(1), false),
    def("group.consumer.heartbeat.interval.ms", I, Some("5000"), AtLeast(1), false),
    def("group.consumer.min.session.timeout.ms", I, Some("45000"), AtLeast(1), false),
    def("group.consumer.max.session.timeout.ms", I, Some("60000"), AtLeast(1), false),
    def("group.consumer.min.heartbeat.interval.ms", I, Some("5000"), AtLeast(1), false),
    def("group.consumer.max.heartbeat.interval.ms", I, Some("15000"), AtLeast(1), false),
    def("group.consumer.max.size", I, Some(INT_MAX), AtLeast(1), false),
    def("group.consumer.assignors", L, Some("uniform,range"), Any, false),
    // Share groups (KIP-932; Kafka's `ShareGroupConfig` and `GroupCoordinatorConfig`).
    // `group.share.enable` is Kafka's internal switch: share groups without `share.version`.
    def("group.share.enable", B, Some("false"), Any, false),
    def("group.share.max.size", I, Some("200"), AtLeast(1), false),
    def("group.share.session.timeout.ms", I, Some("45000"), AtLeast(1), false),
    def("group.share.min.session.timeout.ms", I, Some("45000"), AtLeast(1), false),
    def("group.share.max.session.timeout.ms", I, Some("60000"), AtLeast(1), false),
    def("group.share.heartbeat.interval.ms", I, Some("5000"), AtLeast(1), false),
    def("group.share.min.heartbeat.interval.ms", I, Some("5000"), AtLeast(1), false),
    def("group.share.max.heartbeat.interval.ms", I, Some("15000"), AtLeast(1), false),
    def("group.share.record.lock.duration.ms", I, Some("30000"), AtLeast(1000), false),
    def("group.share.min.record.lock.duration.ms", I, Some("15000"), AtLeast(1000), false),
    def("group.share.max.record.lock.duration.ms", I, Some("60000"), AtLeast(30000), false),
    def("group.share.delivery.count.limit", I, Some("5"), AtLeast(2), false),
    def("group.share.partition.max.record.locks", I, Some("2000"), AtLeast(100), false),
    def("group.share.max.share.sessions", I, Some("2000"), AtLeast(1), false),
    // The share coordinator's `__share_group_state` (KIP-932; Kafka's `ShareCoordinatorConfig`;
    // the replication factor defaults to 1 like the other internal topics on a single node).
    def("share.coordinator.state.topic.num.partitions", I, Some("50"), AtLeast(1), false),
    def("share.coordinator.state.topic.replication.factor", S, Some("1"), AtLeast(1), false),
    def("share.coordinator.state.topic.min.isr", S, Some("2"), AtLeast(1), false),
    def("share.coordinator.state.topic.segment.bytes", I, Some("104857600"), AtLeast(1), false),
    def("share.coordinator.snapshot.update.records.per.snapshot", I, Some("500"), AtLeast(0), false),
    def("share.coordinator.state.topic.prune.interval.ms", I, Some("300000"), AtLeast(1), false),
    def("transaction.state.log.num.partitions", I, Some("50"), AtLeast(1), false),
    def("transaction.state.log.replication.factor", S, Some("1"), AtLeast(1), false),
    def("transaction.state.log.min.isr", I, Some("2"), AtLeast(1), false),
    def("transaction.max.timeout.ms", I, Some("900000"), AtLeast(1), false),
    def("transaction.partition.verification.enable", B, Some("true"), Any, true),
    def("transactional.id.expiration.ms", I, Some("604800000"), AtLeast(1), false),
    def("producer.id.expiration.ms", I, Some("86400000"), AtLeast(1), true),
    def("replica.lag.time.max.ms", G, Some("30000"), AtLeast(0), false),
    def("replica.high.watermark.checkpoint.interval.ms", G, Some("5000"), AtLeast(1), false),
    def("broker.heartbeat.interval.ms", I, Some("2000"), AtLeast(1), false),
    def("broker.session.timeout.ms", I, Some("9000"), AtLeast(1), false),
    // TLS (issue 13, security::tls). Each may also be set per listener as
    // `listener.name.<listener>.<key>`, which wins. Key material is reloaded when its files
    // change, not through AlterConfigs, so none is dynamic here.
    def("ssl.keystore.type", T, Some("JKS"), Any, false),
    def("ssl.keystore.location", T, None, Any, false),
    def("ssl.keystore.password", ConfigType::Password, None, Any, false),
    def("ssl.key.password", ConfigType::Password, None, Any, false),
    def("ssl.keystore.key", ConfigType::Password, None, Any, false),
    def("ssl.keystore.certificate.chain", ConfigType::Password, None, Any, false),
    def("ssl.truststore.type", T, Some("JKS"), Any, false),
    def("ssl.truststore.location", T, None, Any, false),
    def("ssl.truststore.password", ConfigType::Password, None, Any, false),
    def("ssl.truststore.certificates", ConfigType::Password, None, Any, false),
    def("ssl.client.auth", T, Some("none"), Any, false),
    def("ssl.enabled.protocols", L, Some("TLSv1.2,TLSv1.3"), Any, false),
    def("ssl.protocol", T, Some("TLSv1.3"), Any, false),
    def("ssl.cipher.suites", L, Some(""), Any, false),
    def("ssl.principal.mapping.rules", T, Some("DEFAULT"), Any, false),
    def("ssl.endpoint.identification.algorithm", T, Some("https"), Any, false),
    def("security.inter.broker.protocol", T, Some("PLAINTEXT"), Any, false),
    def("inter.broker.listener.name", T, None, Any, false),
];

/// Kafka broker keys that Strata accepts without acting on them: a Kafka `server.properties`
/// loads without "unknown key" noise for these.
pub static IGNORED_KAFKA_KEYS: &[&str] = &[
    "num.network.threads",
    "num.io.threads",
    "num.replica.fetchers",
    "num.recovery.threads.per.data.dir",
    "offsets.topic.compression.codec",
    "group.coordinator.rebalance.protocols",
    "share.coordinator.state.topic.replication.factor",
    "share.coordinator.state.topic.min.isr",
    "metadata.log.dir",
    "zookeeper.connect",
    "zookeeper.connection.timeout.ms",
];

/// The broker key named `name`.
pub fn broker_def(name: &str) -> Option<&'static ConfigDef> {
    BROKER_CONFIGS.iter().find(|d| d.name == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registry_defaults_parse_and_names_are_unique() {
        let mut names = std::collections::BTreeSet::new();
        for d in BROKER_CONFIGS {
            assert!(names.insert(d.name), "duplicate {}", d.name);
            if let Some(default) = d.default {
                d.parse(default)
                    .unwrap_or_else(|e| panic!("{}: {e}", d.name));
            }
        }
    }

    #[test]
    fn type_parsing_follows_kafka() {
        let k = "k";
        assert_eq!(
            parse_type(k, B, " TRUE ").unwrap(),
            ConfigValue::Boolean(true)
        );
        assert!(parse_type(k, B, "yes").is_err());
        assert_eq!(parse_type(k, I, " 42").unwrap(), ConfigValue::Int(42));
        assert!(parse_type(k, I, "2147483648").is_err());
        assert!(parse_type(k, S, "40000").is_err());
        assert_eq!(
            parse_type(k, L, " a , b,c ").unwrap(),
            ConfigValue::List(vec!["a".into(), "b".into(), "c".into()])
        );
        assert_eq!(parse_type(k, L, "  ").unwrap(), ConfigValue::List(vec![]));
        assert!(parse_type(k, D, "NaN").is_err());
        assert_eq!(
            parse_type(k, ConfigType::Password, " s ").unwrap(),
            ConfigValue::Password(" s ".into())
        );
    }

    #[test]
    fn validators_name_key_and_value() {
        let d = broker_def("num.partitions").unwrap();
        let err = d.parse("0").unwrap_err();
        assert_eq!(
            err,
            ConfigError::InvalidValue {
                key: "num.partitions".into(),
                value: "0".into(),
                reason: "Value must be at least 1".into()
            }
        );
        assert!(broker_def("log.cleanup.policy")
            .unwrap()
            .parse("delete,compact")
            .is_ok());
        assert!(broker_def("log.cleanup.policy")
            .unwrap()
            .parse("delete,zap")
            .is_err());
        assert!(broker_def("compression.type")
            .unwrap()
            .parse("brotli")
            .is_err());
        assert!(broker_def("log.cleaner.min.cleanable.ratio")
            .unwrap()
            .parse("1.5")
            .is_err());
        assert_eq!(
            broker_def("log.cleaner.io.max.bytes.per.second")
                .unwrap()
                .parse(DOUBLE_MAX),
            Ok(ConfigValue::Double(f64::MAX))
        );
        assert!(broker_def("log.cleaner.backoff.ms")
            .unwrap()
            .parse("-1")
            .is_err());
    }
}
