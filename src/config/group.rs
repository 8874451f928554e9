//! Group configs: the dynamic per-group settings of a GROUP (32) config resource, as Kafka
//! 4.3's `GroupConfig` defines them (KIP-848 for consumer groups, KIP-932 for share groups,
//! KIP-1071 for streams groups), set with `kafka-configs --entity-type groups`.
//!
//! A group's value of a key is its override, or else the broker's group-coordinator setting
//! the key is named after (`consumer.session.timeout.ms` follows
//! `group.consumer.session.timeout.ms`). Overrides are validated as Kafka's
//! `GroupConfig.validate` does: known names, typed values, and the resolved values inside
//! the broker's min/max bounds, with Kafka's messages.
//!
//! Strata acts on `consumer.session.timeout.ms` and `consumer.heartbeat.interval.ms` (the
//! consumer-group coordinator reads them per group) and on the `share.*` keys (the share-group
//! coordinator and the share partitions read them per group, over the broker's `group.share.*`
//! settings). The streams keys are stored and described as Kafka does for any group id, but
//! Strata has no streams groups, so nothing reads them; `consumer.assignment.interval.ms` and
//! `share.assignment.interval.ms` are stored too, while Strata computes a target assignment
//! at every change (as an interval of 0).
use std::collections::BTreeMap;

use super::describe::{ConfigEntry, ConfigSource, ConfigSynonym};
use super::registry::ConfigType;
use super::BrokerConfig;

pub const CONSUMER_SESSION_TIMEOUT_MS: &str = "consumer.session.timeout.ms";
pub const CONSUMER_HEARTBEAT_INTERVAL_MS: &str = "consumer.heartbeat.interval.ms";

/// How a key's value is typed and checked (Kafka's `ConfigDef` entries of `GroupConfig`).
#[derive(Debug, Clone, Copy)]
enum Kind {
    Int { at_least: i32 },
    Bool,
    IsolationLevel,
    AutoOffsetReset,
}

/// The keys in Kafka's definition order, with the broker setting each one defaults to.
const KEYS: &[(&str, Kind, Option<&str>)] = &[
    (
        CONSUMER_SESSION_TIMEOUT_MS,
        Kind::Int { at_least: 1 },
        Some("group.consumer.session.timeout.ms"),
    ),
    (
        CONSUMER_HEARTBEAT_INTERVAL_MS,
        Kind::Int { at_least: 1 },
        Some("group.consumer.heartbeat.interval.ms"),
    ),
    (
        "consumer.assignment.interval.ms",
        Kind::Int { at_least: 0 },
        Some("group.consumer.assignment.interval.ms"),
    ),
    (
        "share.session.timeout.ms",
        Kind::Int { at_least: 1 },
        Some("group.share.session.timeout.ms"),
    ),
    (
        "share.heartbeat.interval.ms",
        Kind::Int { at_least: 1 },
        Some("group.share.heartbeat.interval.ms"),
    ),
    (
        "share.record.lock.duration.ms",
        Kind::Int { at_least: 1000 },
        Some("group.share.record.lock.duration.ms"),
    ),
    (
        "share.delivery.count.limit",
        Kind::Int { at_least: 2 },
        Some("group.share.delivery.count.limit"),
    ),
    (
        "share.partition.max.record.locks",
        Kind::Int { at_least: 100 },
        Some("group.share.partition.max.record.locks"),
    ),
    ("share.auto.offset.reset", Kind::AutoOffsetReset, None),
    ("share.isolation.level", Kind::IsolationLevel, None),
    ("share.renew.acknowledge.enable", Kind::Bool, None),
    (
        "share.assignment.interval.ms",
        Kind::Int { at_least: 0 },
        Some("group.share.assignment.interval.ms"),
    ),
    (
        "streams.session.timeout.ms",
        Kind::Int { at_least: 1 },
        Some("group.streams.session.timeout.ms"),
    ),
    (
        "streams.heartbeat.interval.ms",
        Kind::Int { at_least: 1 },
        Some("group.streams.heartbeat.interval.ms"),
    ),
    (
        "streams.num.standby.replicas",
        Kind::Int { at_least: 0 },
        Some("group.streams.num.standby.replicas"),
    ),
    (
        "streams.initial.rebalance.delay.ms",
        Kind::Int { at_least: 0 },
        Some("group.streams.initial.rebalance.delay.ms"),
    ),
    (
        "streams.assignment.interval.ms",
        Kind::Int { at_least: 0 },
        Some("group.streams.assignment.interval.ms"),
    ),
];

/// Whether `name` is a group config key.
pub fn is_group_config(name: &str) -> bool {
    KEYS.iter().any(|(k, _, _)| *k == name)
}

/// The broker settings group configs default to and are bounded by. The consumer-group ones
/// come from the broker config; the share and streams ones are Kafka 4.3's defaults, as
/// Strata has no share or streams group settings of its own.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupConfigDefaults {
    /// Broker setting name to its value (every setting named in [`KEYS`] and [`BOUNDS`]).
    values: BTreeMap<&'static str, i32>,
}

/// Kafka 4.3's `GroupCoordinatorConfig`/`ShareGroupConfig` defaults of the settings Strata
/// does not have.
const KAFKA_DEFAULTS: &[(&str, i32)] = &[
    ("group.consumer.assignment.interval.ms", 1000),
    ("group.consumer.min.assignment.interval.ms", 0),
    ("group.consumer.max.assignment.interval.ms", 15000),
    ("group.share.session.timeout.ms", 45000),
    ("group.share.min.session.timeout.ms", 45000),
    ("group.share.max.session.timeout.ms", 60000),
    ("group.share.heartbeat.interval.ms", 5000),
    ("group.share.min.heartbeat.interval.ms", 5000),
    ("group.share.max.heartbeat.interval.ms", 15000),
    ("group.share.record.lock.duration.ms", 30000),
    ("group.share.min.record.lock.duration.ms", 15000),
    ("group.share.max.record.lock.duration.ms", 60000),
    ("group.share.delivery.count.limit", 5),
    ("group.share.min.delivery.count.limit", 2),
    ("group.share.max.delivery.count.limit", 10),
    ("group.share.partition.max.record.locks", 2000),
    ("group.share.min.partition.max.record.locks", 100),
    ("group.share.max.partition.max.record.locks", 4000),
    ("group.share.assignment.interval.ms", 1000),
    ("group.share.min.assignment.interval.ms", 0),
    ("group.share.max.assignment.interval.ms", 15000),
    ("group.streams.session.timeout.ms", 45000),
    ("group.streams.min.session.timeout.ms", 45000),
    ("group.streams.max.session.timeout.ms", 60000),
    ("group.streams.heartbeat.interval.ms", 5000),
    ("group.streams.min.heartbeat.interval.ms", 5000),
    ("group.streams.max.heartbeat.interval.ms", 15000),
    ("group.streams.num.standby.replicas", 0),
    ("group.streams.max.standby.replicas", 2),
    ("group.streams.initial.rebalance.delay.ms", 3000),
    ("group.streams.assignment.interval.ms", 1000),
    ("group.streams.min.assignment.interval.ms", 0),
    ("group.streams.max.assignment.interval.ms", 15000),
];

/// The range checks of Kafka's `GroupConfig.validateValues`, in its order: the key, then the
/// broker settings of its lower and upper bound.
const BOUNDS: &[(&str, Option<&str>, &str)] = &[
    (
        CONSUMER_HEARTBEAT_INTERVAL_MS,
        Some("group.consumer.min.heartbeat.interval.ms"),
        "group.consumer.max.heartbeat.interval.ms",
    ),
    (
        CONSUMER_SESSION_TIMEOUT_MS,
        Some("group.consumer.min.session.timeout.ms"),
        "group.consumer.max.session.timeout.ms",
    ),
    (
        "consumer.assignment.interval.ms",
        Some("group.consumer.min.assignment.interval.ms"),
        "group.consumer.max.assignment.interval.ms",
    ),
    (
        "share.heartbeat.interval.ms",
        Some("group.share.min.heartbeat.interval.ms"),
        "group.share.max.heartbeat.interval.ms",
    ),
    (
        "share.session.timeout.ms",
        Some("group.share.min.session.timeout.ms"),
        "group.share.max.session.timeout.ms",
    ),
    (
        "share.record.lock.duration.ms",
        Some("group.share.min.record.lock.duration.ms"),
        "group.share.max.record.lock.duration.ms",
    ),
    (
        "share.delivery.count.limit",
        Some("group.share.min.delivery.count.limit"),
        "group.share.max.delivery.count.limit",
    ),
    (
        "share.partition.max.record.locks",
        Some("group.share.min.partition.max.record.locks"),
        "group.share.max.partition.max.record.locks",
    ),
    (
        "share.assignment.interval.ms",
        Some("group.share.min.assignment.interval.ms"),
        "group.share.max.assignment.interval.ms",
    ),
    (
        "streams.heartbeat.interval.ms",
        Some("group.streams.min.heartbeat.interval.ms"),
        "group.streams.max.heartbeat.interval.ms",
    ),
    (
        "streams.session.timeout.ms",
        Some("group.streams.min.session.timeout.ms"),
        "group.streams.max.session.timeout.ms",
    ),
    (
        "streams.num.standby.replicas",
        None,
        "group.streams.max.standby.replicas",
    ),
    (
        "streams.assignment.interval.ms",
        Some("group.streams.min.assignment.interval.ms"),
        "group.streams.max.assignment.interval.ms",
    ),
];

/// Session timeouts that must exceed their heartbeat interval.
const SESSION_OVER_HEARTBEAT: &[(&str, &str)] = &[
    (CONSUMER_SESSION_TIMEOUT_MS, CONSUMER_HEARTBEAT_INTERVAL_MS),
    ("share.session.timeout.ms", "share.heartbeat.interval.ms"),
    (
        "streams.session.timeout.ms",
        "streams.heartbeat.interval.ms",
    ),
];

impl Default for GroupConfigDefaults {
    fn default() -> Self {
        GroupConfigDefaults::with_consumer(45_000, 45_000, 60_000, 5_000, 5_000, 15_000)
    }
}

impl GroupConfigDefaults {
    fn with_consumer(
        session_ms: i32,
        min_session_ms: i32,
        max_session_ms: i32,
        heartbeat_ms: i32,
        min_heartbeat_ms: i32,
        max_heartbeat_ms: i32,
    ) -> Self {
        let mut values: BTreeMap<&'static str, i32> = KAFKA_DEFAULTS.iter().copied().collect();
        values.insert("group.consumer.session.timeout.ms", session_ms);
        values.insert("group.consumer.min.session.timeout.ms", min_session_ms);
        values.insert("group.consumer.max.session.timeout.ms", max_session_ms);
        values.insert("group.consumer.heartbeat.interval.ms", heartbeat_ms);
        values.insert("group.consumer.min.heartbeat.interval.ms", min_heartbeat_ms);
        values.insert("group.consumer.max.heartbeat.interval.ms", max_heartbeat_ms);
        GroupConfigDefaults { values }
    }

    pub fn from_broker(c: &BrokerConfig) -> Self {
        let mut d = GroupConfigDefaults::with_consumer(
            c.group_consumer_session_timeout_ms,
            c.group_consumer_min_session_timeout_ms,
            c.group_consumer_max_session_timeout_ms,
            c.group_consumer_heartbeat_interval_ms,
            c.group_consumer_min_heartbeat_interval_ms,
            c.group_consumer_max_heartbeat_interval_ms,
        );
        let s = &c.group_share;
        for (name, value) in [
            ("group.share.session.timeout.ms", s.session_timeout_ms),
            (
                "group.share.min.session.timeout.ms",
                s.min_session_timeout_ms,
            ),
            (
                "group.share.max.session.timeout.ms",
                s.max_session_timeout_ms,
            ),
            ("group.share.heartbeat.interval.ms", s.heartbeat_interval_ms),
            (
                "group.share.min.heartbeat.interval.ms",
                s.min_heartbeat_interval_ms,
            ),
            (
                "group.share.max.heartbeat.interval.ms",
                s.max_heartbeat_interval_ms,
            ),
            (
                "group.share.record.lock.duration.ms",
                s.record_lock_duration_ms,
            ),
            (
                "group.share.min.record.lock.duration.ms",
                s.min_record_lock_duration_ms,
            ),
            (
                "group.share.max.record.lock.duration.ms",
                s.max_record_lock_duration_ms,
            ),
            ("group.share.delivery.count.limit", s.delivery_count_limit),
            (
                "group.share.partition.max.record.locks",
                s.partition_max_record_locks,
            ),
        ] {
            d.values.insert(name, value);
        }
        d
    }

    fn setting(&self, name: &str) -> i32 {
        self.values.get(name).copied().unwrap_or_default()
    }

    /// A key's value when the group does not override it.
    fn default_of(&self, kind: Kind, synonym: Option<&str>) -> String {
        match (kind, synonym) {
            (_, Some(s)) => self.setting(s).to_string(),
            (Kind::AutoOffsetReset, None) => "latest".into(),
            (Kind::IsolationLevel, None) => "read_uncommitted".into(),
            _ => "true".into(),
        }
    }
}

fn invalid(key: &str, value: &str, reason: &str) -> String {
    format!("Invalid value {value} for configuration {key}: {reason}")
}

/// Checks one value as Kafka's `ConfigDef.parse` does; the int value when it is one.
fn parse(key: &str, kind: Kind, value: &str) -> Result<Option<i32>, String> {
    let v = value.trim();
    match kind {
        Kind::Int { at_least } => {
            let n: i32 = v
                .parse()
                .map_err(|_| invalid(key, value, "Not a number of type INT"))?;
            if n < at_least {
                return Err(invalid(
                    key,
                    value,
                    &format!("Value must be at least {at_least}"),
                ));
            }
            Ok(Some(n))
        }
        Kind::Bool => {
            if v.eq_ignore_ascii_case("true") || v.eq_ignore_ascii_case("false") {
                Ok(None)
            } else {
                Err(invalid(
                    key,
                    value,
                    "Expected value to be either true or false",
                ))
            }
        }
        Kind::IsolationLevel => match v {
            "read_committed" | "read_uncommitted" => Ok(None),
            _ => Err(invalid(
                key,
                value,
                "String must be one of: read_committed, read_uncommitted",
            )),
        },
        Kind::AutoOffsetReset => {
            if is_share_auto_offset_reset(v) {
                Ok(None)
            } else {
                Err(invalid(
                    key,
                    value,
                    &format!(
                        "Invalid value `{v}` for configuration {key}. The value must be either \
                         'earliest', 'latest' or of the format 'by_duration:<PnDTnHnMn.nS>'."
                    ),
                ))
            }
        }
    }
}

/// `earliest`, `latest` or `by_duration:<ISO-8601 duration, not negative>` (Kafka's
/// `ShareGroupAutoOffsetResetStrategy`).
fn is_share_auto_offset_reset(v: &str) -> bool {
    let lower = v.to_ascii_lowercase();
    match lower.split_once(':') {
        None => lower == "earliest" || lower == "latest",
        Some(("by_duration", d)) => iso_duration_ms(d.trim()).is_some_and(|ms| ms >= 0),
        Some(_) => false,
    }
}

/// Parses Java's `Duration.parse` format (`PnDTnHnMn.nS`, signs allowed per part) into whole
/// milliseconds.
pub fn iso_duration_ms(text: &str) -> Option<i128> {
    let re = regex::Regex::new(
        r"(?i)^([-+]?)P(?:([-+]?[0-9]+)D)?(T(?:([-+]?[0-9]+)H)?(?:([-+]?[0-9]+)M)?(?:([-+]?[0-9]+)(?:[.,]([0-9]{0,9}))?S)?)?$",
    )
    .ok()?;
    let c = re.captures(text)?;
    let part = |i: usize| c.get(i).map(|m| m.as_str().parse::<i128>());
    let (days, hours, minutes, seconds) = (part(2), part(4), part(5), part(6));
    if days.is_none() && hours.is_none() && minutes.is_none() && seconds.is_none() {
        return None;
    }
    // "PT" with no part after the T is not a duration.
    if c.get(3).is_some_and(|t| t.as_str().len() == 1) {
        return None;
    }
    let n = |p: Option<Result<i128, _>>| -> Option<i128> { p.unwrap_or(Ok(0)).ok() };
    let seconds_value = n(seconds)?;
    let mut fraction_ms = 0i128;
    if let Some(f) = c.get(7) {
        let digits = format!("{:0<3}", f.as_str());
        fraction_ms = digits[..3].parse::<i128>().ok()?;
        if c.get(6).is_some_and(|s| s.as_str().starts_with('-')) {
            fraction_ms = -fraction_ms;
        }
    }
    let total = n(days)? * 86_400_000
        + n(hours)? * 3_600_000
        + n(minutes)? * 60_000
        + seconds_value * 1000
        + fraction_ms;
    Some(if &c[1] == "-" { -total } else { total })
}

/// Validates a group's whole override set (Kafka's `GroupConfig.validate`): every name is a
/// group config, every value parses, and the resolved values respect the broker's bounds.
pub fn validate_group_configs(
    overrides: &BTreeMap<String, String>,
    defaults: &GroupConfigDefaults,
) -> Result<(), String> {
    check_names_and_values(overrides)?;
    let value = |key: &str| -> i32 {
        overrides
            .get(key)
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or_else(|| {
                let (_, kind, synonym) = KEYS.iter().find(|(k, _, _)| *k == key).unwrap();
                defaults
                    .default_of(*kind, *synonym)
                    .parse()
                    .unwrap_or_default()
            })
    };
    for (key, min, max) in BOUNDS {
        let v = value(key);
        if let Some(min) = min {
            if v < defaults.setting(min) {
                return Err(format!("{key} must be greater than or equal to {min}"));
            }
        }
        if v > defaults.setting(max) {
            return Err(format!("{key} must be less than or equal to {max}"));
        }
    }
    for (session, heartbeat) in SESSION_OVER_HEARTBEAT {
        if value(session) <= value(heartbeat) {
            return Err(format!("{session} must be greater than {heartbeat}"));
        }
    }
    Ok(())
}

/// The checks that need no broker settings: known names and well-typed values (what the
/// controller checks again before it writes the records).
pub fn check_names_and_values(overrides: &BTreeMap<String, String>) -> Result<(), String> {
    for name in overrides.keys() {
        if !is_group_config(name) {
            return Err(format!("Unknown group config name: {name}"));
        }
    }
    for (key, kind, _) in KEYS {
        if let Some(v) = overrides.get(*key) {
            parse(key, *kind, v)?;
        }
    }
    Ok(())
}

/// Every group config of a group with these overrides, as Kafka 4.3's DescribeConfigs shows
/// it: the synonyms are the override (source GROUP_CONFIG), then the broker setting the key
/// follows, as `broker_synonyms` gives it for a setting Strata has (static, then default) or
/// at Kafka's default for one it has not; a key without a broker setting lists its own
/// default. The entry's source is its first synonym's.
pub fn describe_group_configs(
    overrides: &BTreeMap<String, String>,
    defaults: &GroupConfigDefaults,
    broker_synonyms: impl Fn(&str) -> Vec<ConfigSynonym>,
) -> Vec<ConfigEntry> {
    let mut entries: Vec<ConfigEntry> = KEYS
        .iter()
        .map(|(key, kind, synonym)| {
            let default = defaults.default_of(*kind, *synonym);
            let mut synonyms = Vec::new();
            if let Some(v) = overrides.get(*key) {
                synonyms.push(ConfigSynonym {
                    name: key.to_string(),
                    value: Some(v.trim().to_string()),
                    source: ConfigSource::GroupConfig,
                });
            }
            let from_broker = synonym.map(&broker_synonyms).unwrap_or_default();
            if from_broker.is_empty() {
                synonyms.push(ConfigSynonym {
                    name: synonym.unwrap_or(key).to_string(),
                    value: Some(default.clone()),
                    source: ConfigSource::DefaultConfig,
                });
            } else {
                synonyms.extend(from_broker);
            }
            let (value, source) = match overrides.get(*key) {
                Some(v) => (v.trim().to_string(), ConfigSource::GroupConfig),
                None => (default, synonyms[0].source),
            };
            ConfigEntry {
                name: key.to_string(),
                value: Some(value),
                source,
                is_default: source == ConfigSource::DefaultConfig,
                read_only: false,
                is_sensitive: false,
                synonyms,
                config_type: match kind {
                    Kind::Int { .. } => ConfigType::Int,
                    Kind::Bool => ConfigType::Boolean,
                    Kind::IsolationLevel | Kind::AutoOffsetReset => ConfigType::String,
                },
            }
        })
        .collect();
    entries.sort_by(|a, b| a.name.cmp(&b.name));
    entries
}

/// The consumer-group timings a group's overrides set: (session timeout, heartbeat
/// interval), `None` where the broker's applies.
pub fn consumer_timings(overrides: &BTreeMap<String, String>) -> (Option<i32>, Option<i32>) {
    let int = |k: &str| overrides.get(k).and_then(|v| v.trim().parse().ok());
    (
        int(CONSUMER_SESSION_TIMEOUT_MS),
        int(CONSUMER_HEARTBEAT_INTERVAL_MS),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn kafka_checks_and_messages() {
        let d = GroupConfigDefaults::default();
        assert_eq!(validate_group_configs(&set(&[]), &d), Ok(()));
        assert_eq!(
            validate_group_configs(&set(&[(CONSUMER_SESSION_TIMEOUT_MS, "50000")]), &d),
            Ok(())
        );
        assert_eq!(
            validate_group_configs(&set(&[("consumer.session.timeout", "1")]), &d),
            Err("Unknown group config name: consumer.session.timeout".into())
        );
        assert_eq!(
            validate_group_configs(&set(&[(CONSUMER_SESSION_TIMEOUT_MS, "abc")]), &d),
            Err(
                "Invalid value abc for configuration consumer.session.timeout.ms: Not a number \
                 of type INT"
                    .into()
            )
        );
        assert_eq!(
            validate_group_configs(&set(&[(CONSUMER_SESSION_TIMEOUT_MS, "0")]), &d),
            Err(
                "Invalid value 0 for configuration consumer.session.timeout.ms: Value must be \
                 at least 1"
                    .into()
            )
        );
        assert_eq!(
            validate_group_configs(&set(&[(CONSUMER_SESSION_TIMEOUT_MS, "10000")]), &d),
            Err(
                "consumer.session.timeout.ms must be greater than or equal to \
                 group.consumer.min.session.timeout.ms"
                    .into()
            )
        );
        assert_eq!(
            validate_group_configs(&set(&[(CONSUMER_HEARTBEAT_INTERVAL_MS, "16000")]), &d),
            Err(
                "consumer.heartbeat.interval.ms must be less than or equal to \
                 group.consumer.max.heartbeat.interval.ms"
                    .into()
            )
        );
        assert_eq!(
            validate_group_configs(&set(&[("streams.num.standby.replicas", "3")]), &d),
            Err(
                "streams.num.standby.replicas must be less than or equal to \
                 group.streams.max.standby.replicas"
                    .into()
            )
        );
        // Bounds the broker widened allow more, and the session must still exceed the
        // heartbeat.
        let wide = GroupConfigDefaults::with_consumer(45_000, 1_000, 60_000, 5_000, 1_000, 15_000);
        assert_eq!(
            validate_group_configs(&set(&[(CONSUMER_SESSION_TIMEOUT_MS, "6000")]), &wide),
            Ok(())
        );
        assert_eq!(
            validate_group_configs(&set(&[(CONSUMER_SESSION_TIMEOUT_MS, "4000")]), &wide),
            Err(
                "consumer.session.timeout.ms must be greater than consumer.heartbeat.interval.ms"
                    .into()
            )
        );
        assert!(validate_group_configs(&set(&[("share.isolation.level", "none")]), &d).is_err());
        assert!(
            validate_group_configs(&set(&[("share.renew.acknowledge.enable", "yes")]), &d).is_err()
        );
    }

    #[test]
    fn share_auto_offset_reset_values() {
        for ok in [
            "earliest",
            "LATEST",
            "by_duration:PT1H",
            "by_duration:P1DT2H3M4.5S",
        ] {
            assert!(is_share_auto_offset_reset(ok), "{ok}");
        }
        for bad in [
            "none",
            "by_duration:",
            "by_duration:-PT1H",
            "by_duration:PT",
            "x:PT1S",
        ] {
            assert!(!is_share_auto_offset_reset(bad), "{bad}");
        }
        assert_eq!(iso_duration_ms("PT1.5S"), Some(1500));
        assert_eq!(iso_duration_ms("P2D"), Some(172_800_000));
        assert_eq!(iso_duration_ms("PT-1M"), Some(-60_000));
    }

    #[test]
    fn described_values_follow_the_broker_and_overrides() {
        let d = GroupConfigDefaults::with_consumer(50_000, 45_000, 60_000, 6_000, 5_000, 15_000);
        // The broker sets its session timeout statically (a static synonym, then Kafka's
        // default); it has no share settings of its own.
        let broker = |key: &str| -> Vec<ConfigSynonym> {
            let synonym = |value: &str, source| ConfigSynonym {
                name: key.into(),
                value: Some(value.into()),
                source,
            };
            match key {
                "group.consumer.session.timeout.ms" => vec![
                    synonym("50000", ConfigSource::StaticBrokerConfig),
                    synonym("45000", ConfigSource::DefaultConfig),
                ],
                "group.consumer.heartbeat.interval.ms" => {
                    vec![synonym("6000", ConfigSource::DefaultConfig)]
                }
                _ => Vec::new(),
            }
        };
        let overrides = set(&[(CONSUMER_HEARTBEAT_INTERVAL_MS, "7000")]);
        let entries = describe_group_configs(&overrides, &d, broker);
        assert_eq!(entries.len(), 17);
        let get = |k: &str| entries.iter().find(|e| e.name == k).unwrap();
        let synonyms = |e: &ConfigEntry| -> Vec<(String, Option<String>, ConfigSource)> {
            e.synonyms
                .iter()
                .map(|s| (s.name.clone(), s.value.clone(), s.source))
                .collect()
        };
        let session = get(CONSUMER_SESSION_TIMEOUT_MS);
        assert_eq!(session.value.as_deref(), Some("50000"));
        assert_eq!(session.source, ConfigSource::StaticBrokerConfig);
        assert_eq!(session.synonyms.len(), 2);
        let heartbeat = get(CONSUMER_HEARTBEAT_INTERVAL_MS);
        assert_eq!(heartbeat.value.as_deref(), Some("7000"));
        assert_eq!(heartbeat.source, ConfigSource::GroupConfig);
        assert_eq!(
            synonyms(heartbeat),
            vec![
                (
                    CONSUMER_HEARTBEAT_INTERVAL_MS.to_string(),
                    Some("7000".to_string()),
                    ConfigSource::GroupConfig
                ),
                (
                    "group.consumer.heartbeat.interval.ms".to_string(),
                    Some("6000".to_string()),
                    ConfigSource::DefaultConfig
                ),
            ]
        );
        // A share setting Strata lacks: Kafka's default under the broker name.
        let lock = get("share.record.lock.duration.ms");
        assert_eq!(
            synonyms(lock),
            vec![(
                "group.share.record.lock.duration.ms".to_string(),
                Some("30000".to_string()),
                ConfigSource::DefaultConfig
            )]
        );
        // No broker setting at all: the key's own default.
        let reset = get("share.auto.offset.reset");
        assert_eq!(reset.value.as_deref(), Some("latest"));
        assert_eq!(reset.synonyms[0].name, "share.auto.offset.reset");
        assert_eq!(reset.source, ConfigSource::DefaultConfig);
        assert_eq!(consumer_timings(&overrides), (None, Some(7000)));
    }
}
