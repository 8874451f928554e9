//! Topic configuration (Kafka's `LogConfig` and `ServerTopicConfigSynonyms`): every topic key
//! with its type, default, validator and broker synonyms in Kafka's order
//! (`retention.ms` <- `log.retention.ms`, `log.retention.minutes`, `log.retention.hours`);
//! [`TopicConfig::resolve`] gives typed values from a topic's overrides over the broker's
//! config; [`validate_topic_override`] and [`apply_incremental_op`] serve AlterConfigs and
//! IncrementalAlterConfigs (SET, DELETE, APPEND, SUBTRACT).

use std::collections::BTreeMap;

use super::broker::BrokerConfig;
use super::registry::{
    split_list, ConfigDef, ConfigType, ConfigValue, Validator, CLEANUP_POLICIES, COMPRESSION_TYPES,
    LONG_MAX, TIMESTAMP_TYPES,
};
use super::ConfigError;

/// `cleanup.policy`: delete, compact, both or (Kafka 4.1+) neither.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CleanupPolicy {
    pub delete: bool,
    pub compact: bool,
}

impl CleanupPolicy {
    /// From validated list elements.
    pub fn from_list(items: &[String]) -> CleanupPolicy {
        CleanupPolicy {
            delete: items.iter().any(|i| i == "delete"),
            compact: items.iter().any(|i| i == "compact"),
        }
    }

    pub fn names(self) -> Vec<String> {
        let mut out = Vec::new();
        if self.delete {
            out.push("delete".to_string());
        }
        if self.compact {
            out.push("compact".to_string());
        }
        out
    }
}

/// `compression.type`: keep the producer's codec, or recompress with a given one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CompressionType {
    #[default]
    Producer,
    Uncompressed,
    Gzip,
    Snappy,
    Lz4,
    Zstd,
}

impl CompressionType {
    pub fn from_name(name: &str) -> Option<CompressionType> {
        Some(match name {
            "producer" => CompressionType::Producer,
            "uncompressed" => CompressionType::Uncompressed,
            "gzip" => CompressionType::Gzip,
            "snappy" => CompressionType::Snappy,
            "lz4" => CompressionType::Lz4,
            "zstd" => CompressionType::Zstd,
            _ => return None,
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            CompressionType::Producer => "producer",
            CompressionType::Uncompressed => "uncompressed",
            CompressionType::Gzip => "gzip",
            CompressionType::Snappy => "snappy",
            CompressionType::Lz4 => "lz4",
            CompressionType::Zstd => "zstd",
        }
    }
}

/// `message.timestamp.type`: the producer's CreateTime, or LogAppendTime set by the broker.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TimestampType {
    #[default]
    CreateTime,
    LogAppendTime,
}

impl TimestampType {
    /// Kafka's name (`message.timestamp.type` values).
    pub fn name(self) -> &'static str {
        match self {
            TimestampType::CreateTime => "CreateTime",
            TimestampType::LogAppendTime => "LogAppendTime",
        }
    }

    /// The type from Kafka's name (case-sensitive, as Kafka's validator).
    pub fn from_name(name: &str) -> Option<TimestampType> {
        match name {
            "CreateTime" => Some(TimestampType::CreateTime),
            "LogAppendTime" => Some(TimestampType::LogAppendTime),
            _ => None,
        }
    }
}

/// A topic key and the broker keys it falls back to, most specific first.
#[derive(Debug, Clone, Copy)]
pub struct TopicConfigDef {
    /// Type, Kafka's `LogConfig` default, validator.
    pub def: ConfigDef,
    pub broker_synonyms: &'static [&'static str],
}

const fn t(
    name: &'static str,
    config_type: ConfigType,
    default: &'static str,
    validator: Validator,
    broker_synonyms: &'static [&'static str],
) -> TopicConfigDef {
    TopicConfigDef {
        def: ConfigDef {
            name,
            config_type,
            default: Some(default),
            validator,
            dynamic: true,
        },
        broker_synonyms,
    }
}

use ConfigType::{Boolean as B, Double as D, Int as I, List as L, Long as G, String as T};
use Validator::{Any, AtLeast};

/// Every topic config Strata supports, in name order (as Kafka lists them).
#[rustfmt::skip]
pub static TOPIC_CONFIGS: &[TopicConfigDef] = &[
    t("cleanup.policy", L, "delete", Validator::ListOf(CLEANUP_POLICIES), &["log.cleanup.policy"]),
    t("compression.type", T, "producer", Validator::OneOf(COMPRESSION_TYPES), &["compression.type"]),
    t("delete.retention.ms", G, "86400000", AtLeast(0), &["log.cleaner.delete.retention.ms"]),
    t("file.delete.delay.ms", G, "60000", AtLeast(0), &["log.segment.delete.delay.ms"]),
    t("follower.replication.throttled.replicas", L, "", Validator::ThrottledReplicas, &[]),
    t("flush.messages", G, LONG_MAX, AtLeast(1), &["log.flush.interval.messages"]),
    t("flush.ms", G, LONG_MAX, AtLeast(0), &["log.flush.interval.ms", "log.flush.scheduler.interval.ms"]),
    t("index.interval.bytes", I, "4096", AtLeast(0), &["log.index.interval.bytes"]),
    t("leader.replication.throttled.replicas", L, "", Validator::ThrottledReplicas, &[]),
    t("local.retention.bytes", G, "-2", AtLeast(-2), &[]),
    t("local.retention.ms", G, "-2", AtLeast(-2), &[]),
    t("max.compaction.lag.ms", G, LONG_MAX, AtLeast(1), &["log.cleaner.max.compaction.lag.ms"]),
    t("max.message.bytes", I, "1048588", AtLeast(0), &["message.max.bytes"]),
    t("message.timestamp.after.max.ms", G, LONG_MAX, AtLeast(0), &["log.message.timestamp.after.max.ms"]),
    t("message.timestamp.before.max.ms", G, LONG_MAX, AtLeast(0), &["log.message.timestamp.before.max.ms"]),
    t("message.timestamp.type", T, "CreateTime", Validator::OneOf(TIMESTAMP_TYPES), &["log.message.timestamp.type"]),
    t("min.cleanable.dirty.ratio", D, "0.5", Validator::DoubleBetween(0.0, 1.0), &["log.cleaner.min.cleanable.ratio"]),
    t("min.compaction.lag.ms", G, "0", AtLeast(0), &["log.cleaner.min.compaction.lag.ms"]),
    t("min.insync.replicas", I, "1", AtLeast(1), &["min.insync.replicas"]),
    t("preallocate", B, "false", Any, &["log.preallocate"]),
    t("remote.storage.enable", B, "false", Any, &[]),
    t("retention.bytes", G, "-1", Any, &["log.retention.bytes"]),
    t("retention.ms", G, "604800000", AtLeast(-1), &["log.retention.ms", "log.retention.minutes", "log.retention.hours"]),
    t("segment.bytes", I, "1073741824", AtLeast(14), &["log.segment.bytes"]),
    t("segment.index.bytes", I, "10485760", AtLeast(4), &["log.index.size.max.bytes"]),
    t("segment.jitter.ms", G, "0", AtLeast(0), &["log.roll.jitter.ms", "log.roll.jitter.hours"]),
    t("segment.ms", G, "604800000", AtLeast(1), &["log.roll.ms", "log.roll.hours"]),
    t("unclean.leader.election.enable", B, "false", Any, &["unclean.leader.election.enable"]),
];

/// The topic key named `name`.
pub fn topic_def(name: &str) -> Option<&'static TopicConfigDef> {
    TOPIC_CONFIGS.iter().find(|d| d.def.name == name)
}

/// Typed topic configuration.
#[derive(Debug, Clone, PartialEq)]
pub struct TopicConfig {
    pub cleanup_policy: CleanupPolicy,
    pub compression_type: CompressionType,
    pub delete_retention_ms: i64,
    pub file_delete_delay_ms: i64,
    pub flush_messages: i64,
    pub flush_ms: i64,
    pub index_interval_bytes: i32,
    pub max_compaction_lag_ms: i64,
    pub max_message_bytes: i32,
    pub message_timestamp_after_max_ms: i64,
    pub message_timestamp_before_max_ms: i64,
    pub message_timestamp_type: TimestampType,
    pub min_cleanable_dirty_ratio: f64,
    pub min_compaction_lag_ms: i64,
    pub min_insync_replicas: i32,
    pub preallocate: bool,
    /// -1 means no size limit.
    pub retention_bytes: i64,
    /// -1 means no time limit.
    pub retention_ms: i64,
    pub segment_bytes: i32,
    pub segment_index_bytes: i32,
    pub segment_jitter_ms: i64,
    pub segment_ms: i64,
    pub unclean_leader_election_enable: bool,
}

/// The value a topic key inherits from the broker (its synonyms already resolved there).
fn broker_value(name: &str, b: &BrokerConfig) -> Option<ConfigValue> {
    use ConfigValue::{Boolean, Double, Int, List, Long, String as S};
    Some(match name {
        "cleanup.policy" => List(b.log_cleanup_policy.names()),
        "compression.type" => S(b.compression_type.name().into()),
        "delete.retention.ms" => Long(b.log_cleaner_delete_retention_ms),
        "file.delete.delay.ms" => Long(b.log_segment_delete_delay_ms),
        "flush.messages" => Long(b.log_flush_interval_messages),
        "flush.ms" => Long(b.log_flush_interval_ms),
        "index.interval.bytes" => Int(b.log_index_interval_bytes),
        "max.compaction.lag.ms" => Long(b.log_cleaner_max_compaction_lag_ms),
        "max.message.bytes" => Int(b.message_max_bytes),
        "message.timestamp.after.max.ms" => Long(b.log_message_timestamp_after_max_ms),
        "message.timestamp.before.max.ms" => Long(b.log_message_timestamp_before_max_ms),
        "message.timestamp.type" => S(b.log_message_timestamp_type.name().into()),
        "min.cleanable.dirty.ratio" => Double(b.log_cleaner_min_cleanable_ratio),
        "min.compaction.lag.ms" => Long(b.log_cleaner_min_compaction_lag_ms),
        "min.insync.replicas" => Int(b.min_insync_replicas),
        "preallocate" => Boolean(b.log_preallocate),
        "retention.bytes" => Long(b.log_retention_bytes),
        "retention.ms" => Long(b.log_retention_ms),
        "segment.bytes" => Int(b.log_segment_bytes),
        "segment.index.bytes" => Int(b.log_index_size_max_bytes),
        "segment.jitter.ms" => Long(b.log_roll_jitter_ms),
        "segment.ms" => Long(b.log_roll_ms),
        "unclean.leader.election.enable" => Boolean(b.unclean_leader_election_enable),
        _ => return None,
    })
}

/// Kafka's `ConfigDef.convertToString` for a typed value.
pub fn render_value(v: &ConfigValue) -> String {
    match v {
        ConfigValue::Boolean(b) => b.to_string(),
        ConfigValue::Int(n) => n.to_string(),
        ConfigValue::Short(n) => n.to_string(),
        ConfigValue::Long(n) => n.to_string(),
        // `{:?}` prints 1.0 like Java's Double.toString, not 1.
        ConfigValue::Double(d) => format!("{d:?}"),
        ConfigValue::String(s) | ConfigValue::Class(s) | ConfigValue::Password(s) => s.clone(),
        ConfigValue::List(items) => items.join(","),
    }
}

/// Each topic key's effective value and whether it comes from a topic override.
pub(crate) fn effective_values(
    overrides: &BTreeMap<String, String>,
    broker: &BrokerConfig,
) -> Result<Vec<(&'static TopicConfigDef, ConfigValue, bool)>, ConfigError> {
    if let Some(unknown) = overrides.keys().find(|k| topic_def(k).is_none()) {
        return Err(ConfigError::UnknownConfig {
            key: unknown.clone(),
        });
    }
    let mut out = Vec::with_capacity(TOPIC_CONFIGS.len());
    for td in TOPIC_CONFIGS {
        let name = td.def.name;
        let (value, overridden) = match overrides.get(name) {
            Some(raw) => (td.def.parse(raw)?, true),
            None => match broker_value(name, broker) {
                Some(v) => (v, false),
                None => (td.def.parse(td.def.default.unwrap_or(""))?, false),
            },
        };
        out.push((td, value, overridden));
    }
    Ok(out)
}

impl TopicConfig {
    /// The typed configuration of a topic with these overrides on this broker.
    pub fn resolve(
        overrides: &BTreeMap<String, String>,
        broker: &BrokerConfig,
    ) -> Result<TopicConfig, ConfigError> {
        let values: BTreeMap<&str, ConfigValue> = effective_values(overrides, broker)?
            .into_iter()
            .map(|(td, v, _)| (td.def.name, v))
            .collect();
        let missing = |k: &str| ConfigError::invalid(k, "", "missing value");
        let long = |k: &str| match values.get(k) {
            Some(ConfigValue::Long(v)) => Ok(*v),
            _ => Err(missing(k)),
        };
        let int = |k: &str| match values.get(k) {
            Some(ConfigValue::Int(v)) => Ok(*v),
            _ => Err(missing(k)),
        };
        let boolean = |k: &str| match values.get(k) {
            Some(ConfigValue::Boolean(v)) => Ok(*v),
            _ => Err(missing(k)),
        };
        let string = |k: &str| match values.get(k) {
            Some(ConfigValue::String(v)) => Ok(v.clone()),
            _ => Err(missing(k)),
        };
        let cleanup = match values.get("cleanup.policy") {
            Some(ConfigValue::List(items)) => CleanupPolicy::from_list(items),
            _ => return Err(missing("cleanup.policy")),
        };
        let ratio = match values.get("min.cleanable.dirty.ratio") {
            Some(ConfigValue::Double(d)) => *d,
            _ => return Err(missing("min.cleanable.dirty.ratio")),
        };
        let compression = string("compression.type")?;
        let timestamp_type = string("message.timestamp.type")?;
        let retention_ms = long("retention.ms")?;
        let config = TopicConfig {
            cleanup_policy: cleanup,
            compression_type: CompressionType::from_name(&compression)
                .ok_or_else(|| ConfigError::invalid("compression.type", &compression, "unknown"))?,
            delete_retention_ms: long("delete.retention.ms")?,
            file_delete_delay_ms: long("file.delete.delay.ms")?,
            flush_messages: long("flush.messages")?,
            flush_ms: long("flush.ms")?,
            index_interval_bytes: int("index.interval.bytes")?,
            max_compaction_lag_ms: long("max.compaction.lag.ms")?,
            max_message_bytes: int("max.message.bytes")?,
            message_timestamp_after_max_ms: long("message.timestamp.after.max.ms")?,
            message_timestamp_before_max_ms: long("message.timestamp.before.max.ms")?,
            message_timestamp_type: TimestampType::from_name(&timestamp_type).ok_or_else(|| {
                ConfigError::invalid("message.timestamp.type", &timestamp_type, "unknown")
            })?,
            min_cleanable_dirty_ratio: ratio,
            min_compaction_lag_ms: long("min.compaction.lag.ms")?,
            min_insync_replicas: int("min.insync.replicas")?,
            preallocate: boolean("preallocate")?,
            retention_bytes: long("retention.bytes")?,
            retention_ms: if retention_ms < 0 { -1 } else { retention_ms },
            segment_bytes: int("segment.bytes")?,
            segment_index_bytes: int("segment.index.bytes")?,
            segment_jitter_ms: long("segment.jitter.ms")?,
            segment_ms: long("segment.ms")?,
            unclean_leader_election_enable: boolean("unclean.leader.election.enable")?,
        };
        // Kafka's LogConfig.validate: the compaction lags must not cross.
        if config.min_compaction_lag_ms > config.max_compaction_lag_ms {
            return Err(ConfigError::invalid(
                "min.compaction.lag.ms",
                &config.min_compaction_lag_ms.to_string(),
                "conflict: min.compaction.lag.ms must not exceed max.compaction.lag.ms",
            ));
        }
        Ok(config)
    }
}

/// Checks one topic override for AlterConfigs/CreateTopics; an unknown name is an error.
pub fn validate_topic_override(name: &str, value: &str) -> Result<(), ConfigError> {
    let td = topic_def(name).ok_or_else(|| ConfigError::UnknownConfig { key: name.into() })?;
    td.def.parse(value).map(|_| ())
}

/// IncrementalAlterConfigs operation ids.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AlterConfigOp {
    Set = 0,
    Delete = 1,
    Append = 2,
    Subtract = 3,
}

impl AlterConfigOp {
    pub fn from_id(id: i8) -> Option<AlterConfigOp> {
        Some(match id {
            0 => AlterConfigOp::Set,
            1 => AlterConfigOp::Delete,
            2 => AlterConfigOp::Append,
            3 => AlterConfigOp::Subtract,
            _ => return None,
        })
    }
}

fn parts(s: &str) -> Vec<String> {
    split_list(s)
        .into_iter()
        .filter(|p| !p.is_empty())
        .collect()
}

/// Applies one IncrementalAlterConfigs operation to a topic's override of `name` and returns
/// the new override (`None` = removed). APPEND/SUBTRACT work on list keys only and start from
/// the current override or, without one, the topic default, as Kafka's controller does.
pub fn apply_incremental_op(
    name: &str,
    current: Option<&str>,
    op: AlterConfigOp,
    value: Option<&str>,
) -> Result<Option<String>, ConfigError> {
    let td = topic_def(name).ok_or_else(|| ConfigError::UnknownConfig { key: name.into() })?;
    let new_value = edit_value(&td.def, current, op, value)?;
    if let Some(v) = &new_value {
        validate_topic_override(name, v)?;
    }
    Ok(new_value)
}

/// One SET, DELETE, APPEND or SUBTRACT on a key of `def` (Kafka's
/// `prepareIncrementalConfigs`): the new value (`None`: removed), not yet validated. List
/// edits start from the current value, else the key's default.
pub(crate) fn edit_value(
    def: &ConfigDef,
    current: Option<&str>,
    op: AlterConfigOp,
    value: Option<&str>,
) -> Result<Option<String>, ConfigError> {
    let name = def.name;
    Ok(Some(match op {
        AlterConfigOp::Delete => return Ok(None),
        AlterConfigOp::Set => value
            .ok_or_else(|| ConfigError::invalid(name, "null", "Null value not supported"))?
            .to_string(),
        AlterConfigOp::Append | AlterConfigOp::Subtract => {
            if def.config_type != ConfigType::List {
                return Err(ConfigError::NotAList { key: name.into() });
            }
            let mut list = parts(current.or(def.default).unwrap_or(""));
            let edits = parts(value.unwrap_or(""));
            if op == AlterConfigOp::Append {
                for e in edits {
                    if !list.contains(&e) {
                        list.push(e);
                    }
                }
            } else {
                list.retain(|item| !edits.contains(item));
            }
            list.join(",")
        }
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn broker(text: &str) -> BrokerConfig {
        BrokerConfig::load(Some(text), &[]).unwrap().0
    }

    #[test]
    fn defaults_follow_the_broker() {
        let c = TopicConfig::resolve(&BTreeMap::new(), &BrokerConfig::default()).unwrap();
        assert_eq!(c.retention_ms, 604_800_000);
        assert_eq!(c.segment_ms, 604_800_000);
        assert_eq!(c.segment_bytes, 1 << 30);
        assert_eq!(c.max_message_bytes, 1_048_588);
        assert_eq!(
            c.cleanup_policy,
            CleanupPolicy {
                delete: true,
                compact: false
            }
        );
        assert_eq!(c.message_timestamp_type, TimestampType::CreateTime);
        assert_eq!(c.min_cleanable_dirty_ratio, 0.5);
        let b =
            broker("log.retention.minutes=2\nlog.segment.bytes=2048\nlog.cleanup.policy=compact");
        let c = TopicConfig::resolve(&BTreeMap::new(), &b).unwrap();
        assert_eq!(c.retention_ms, 120_000);
        assert_eq!(c.segment_bytes, 2048);
        assert!(c.cleanup_policy.compact && !c.cleanup_policy.delete);
    }

    #[test]
    fn overrides_win_and_are_validated() {
        let b = broker("log.retention.hours=1");
        let o = map(&[
            ("retention.ms", "1000"),
            ("cleanup.policy", "compact,delete"),
            ("message.timestamp.type", "LogAppendTime"),
            ("compression.type", "zstd"),
        ]);
        let c = TopicConfig::resolve(&o, &b).unwrap();
        assert_eq!(c.retention_ms, 1000);
        assert!(c.cleanup_policy.compact && c.cleanup_policy.delete);
        assert_eq!(c.message_timestamp_type, TimestampType::LogAppendTime);
        // Stored as zstd: `replica::partition_config` maps the type to the record codec.
        assert_eq!(c.compression_type, CompressionType::Zstd);
        assert_eq!(
            TopicConfig::resolve(&map(&[("retention.mss", "1")]), &b).unwrap_err(),
            ConfigError::UnknownConfig {
                key: "retention.mss".into()
            }
        );
        assert!(TopicConfig::resolve(&map(&[("segment.bytes", "10")]), &b).is_err());
        assert!(TopicConfig::resolve(
            &map(&[
                ("min.compaction.lag.ms", "10"),
                ("max.compaction.lag.ms", "5")
            ]),
            &b
        )
        .is_err());
    }

    #[test]
    fn validate_override_names_unknown_keys() {
        assert!(validate_topic_override("retention.ms", "-1").is_ok());
        assert!(validate_topic_override("retention.ms", "-2").is_err());
        assert!(validate_topic_override("message.timestamp.type", "createtime").is_err());
        let err = validate_topic_override("log.retention.ms", "1").unwrap_err();
        assert_eq!(
            err,
            ConfigError::UnknownConfig {
                key: "log.retention.ms".into()
            }
        );
        assert_eq!(err.error_code(), crate::error::ErrorCode::INVALID_CONFIG);
    }

    #[test]
    fn incremental_list_ops() {
        use AlterConfigOp::*;
        assert_eq!(
            apply_incremental_op("cleanup.policy", None, Append, Some("compact"))
                .unwrap()
                .as_deref(),
            Some("delete,compact")
        );
        assert_eq!(
            apply_incremental_op("cleanup.policy", Some("compact"), Append, Some("compact"))
                .unwrap()
                .as_deref(),
            Some("compact")
        );
        assert_eq!(
            apply_incremental_op(
                "cleanup.policy",
                Some("delete,compact"),
                Subtract,
                Some("delete")
            )
            .unwrap()
            .as_deref(),
            Some("compact")
        );
        assert!(apply_incremental_op("cleanup.policy", None, Append, Some("shred")).is_err());
        assert_eq!(
            apply_incremental_op("retention.ms", None, Append, Some("1")).unwrap_err(),
            ConfigError::NotAList {
                key: "retention.ms".into()
            }
        );
        assert_eq!(
            apply_incremental_op("retention.ms", Some("5"), Delete, None).unwrap(),
            None
        );
        assert_eq!(
            apply_incremental_op("retention.ms", None, Set, Some("7"))
                .unwrap()
                .as_deref(),
            Some("7")
        );
        assert!(apply_incremental_op("nope", None, Set, Some("7")).is_err());
        // kafka-reassign-partitions appends throttled replicas.
        let key = "leader.replication.throttled.replicas";
        let r = apply_incremental_op(key, None, Append, Some("0:1,1:2"));
        assert_eq!(r.unwrap().as_deref(), Some("0:1,1:2"));
        let r = apply_incremental_op(key, Some("0:1,1:2"), Subtract, Some("0:1"));
        assert_eq!(r.unwrap().as_deref(), Some("1:2"));
        assert!(validate_topic_override(key, "*").is_ok());
        assert!(validate_topic_override(key, "0:x").is_err());
        assert!(validate_topic_override("remote.storage.enable", "false").is_ok());
        assert_eq!(AlterConfigOp::from_id(3), Some(Subtract));
        assert_eq!(AlterConfigOp::from_id(4), None);
    }

    #[test]
    fn every_topic_default_parses_and_has_a_broker_value() {
        let b = BrokerConfig::default();
        for td in TOPIC_CONFIGS {
            td.def.parse(td.def.default.unwrap_or("")).unwrap();
            // Keys without a broker synonym take the topic default.
            let has_synonym = !td.broker_synonyms.is_empty();
            assert_eq!(
                broker_value(td.def.name, &b).is_some(),
                has_synonym,
                "{}",
                td.def.name
            );
            for s in td.broker_synonyms {
                assert!(super::super::registry::broker_def(s).is_some(), "{s}");
            }
        }
    }
}
