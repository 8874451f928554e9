//! Typed broker and topic configuration, following Kafka's convention (`KafkaConfig`,
//! `LogConfig`, `ConfigDef`, `ConfigHelper`):
//!
//! - [`properties`]: the Java `.properties` reader for `server.properties`;
//! - [`registry`]: every config key Strata knows, with type, default, validator and whether
//!   it is dynamically alterable; parsing a raw string into a [`ConfigValue`];
//! - [`broker`]: [`BrokerConfig`], built from defaults <- properties file <- `--override`
//!   list, with Kafka's synonym precedence (`log.retention.ms` > `.minutes` > `.hours`);
//! - [`topic`]: [`TopicConfig`], per-topic overrides over broker synonyms, override validation
//!   and incremental (APPEND/SUBTRACT) list edits;
//! - [`describe`]: DescribeConfigs entries (source, synonyms, type ids) for brokers and topics;
//! - [`dynamic`]: dynamic broker configs (per broker and cluster default) over the static ones.
//!
//! Config is a leaf: of ours it uses only `error` (for [`ConfigError`]'s code), so every layer
//! may read it; mapping its values to protocol or storage types is done where they are used.
use std::fmt;
use std::path::PathBuf;

use crate::error::ErrorCode;

pub mod admin;
pub mod broker;
pub mod client_metrics;
pub mod delegation_tokens;
pub mod describe;
pub mod dynamic;
pub mod group;
pub mod listener;
pub mod network;
pub mod oauth;
pub mod properties;
pub mod registry;
pub mod sasl;
pub mod security;
pub mod topic;

pub use broker::{BrokerConfig, Listener, ProcessRole, QuorumVoter};
pub use describe::{
    describe_broker_configs, describe_topic_configs, ConfigEntry, ConfigLayers, ConfigSource,
    ConfigSynonym,
};
pub use dynamic::{DynamicBrokerConfig, DynamicLayers};
pub use registry::{ConfigDef, ConfigType, ConfigValue, Validator};
pub use security::SecurityProtocol;
pub use topic::{
    apply_incremental_op, validate_topic_override, AlterConfigOp, CleanupPolicy, CompressionType,
    TimestampType, TopicConfig,
};

/// Why a configuration could not be read or applied. Every variant names the key (or line).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConfigError {
    /// A known key with a value of the wrong type or outside its valid range.
    InvalidValue {
        key: String,
        value: String,
        reason: String,
    },
    /// A topic config name that does not exist (Kafka answers INVALID_CONFIG).
    UnknownConfig { key: String },
    /// APPEND/SUBTRACT on a key that is not a list.
    NotAList { key: String },
    /// A malformed `.properties` line (bad `\u` escape).
    Properties { line: usize, reason: String },
    /// An `--override` that is not `key=value`.
    InvalidOverride(String),
    /// Two settings that contradict each other (e.g. `node.id` and `broker.id`).
    Conflict { reason: String },
    /// The properties file could not be read.
    Io { path: PathBuf, reason: String },
    /// A key Strata cannot honour, set to a value that would change security or durability.
    Unsupported {
        key: String,
        value: String,
        reason: String,
    },
}

impl ConfigError {
    pub(crate) fn invalid(key: &str, value: &str, reason: impl Into<String>) -> ConfigError {
        ConfigError::InvalidValue {
            key: key.to_string(),
            value: value.to_string(),
            reason: reason.into(),
        }
    }

    /// The Kafka error code for AlterConfigs/CreateTopics answers.
    pub fn error_code(&self) -> ErrorCode {
        ErrorCode::from(self)
    }
}

impl From<&ConfigError> for ErrorCode {
    /// What AlterConfigs / CreateTopics answer for a config Strata refuses.
    fn from(_: &ConfigError) -> ErrorCode {
        ErrorCode::INVALID_CONFIG
    }
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConfigError::InvalidValue { key, value, reason } => {
                write!(f, "Invalid value {value} for configuration {key}: {reason}")
            }
            ConfigError::UnknownConfig { key } => write!(f, "Unknown topic config name: {key}"),
            ConfigError::NotAList { key } => {
                write!(
                    f,
                    "Can only perform append and subtract operations on list configs: {key}"
                )
            }
            ConfigError::Properties { line, reason } => {
                write!(f, "properties line {line}: {reason}")
            }
            ConfigError::InvalidOverride(s) => write!(f, "override {s:?} is not key=value"),
            ConfigError::Conflict { reason } => write!(f, "{reason}"),
            ConfigError::Io { path, reason } => write!(f, "{}: {reason}", path.display()),
            ConfigError::Unsupported { key, value, reason } => write!(
                f,
                "Strata cannot honour {key}={value}: {reason}. Refusing to start rather than \
                 run without it"
            ),
        }
    }
}

impl std::error::Error for ConfigError {}

/// Something the caller should log but that does not stop the broker.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConfigWarning {
    /// A key that neither Strata nor Kafka's broker defines (probably a typo).
    UnknownKey(String),
    /// A Kafka broker key Strata accepts but does not act on (e.g. thread pool sizes).
    IgnoredKafkaKey(String),
}

impl fmt::Display for ConfigWarning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConfigWarning::UnknownKey(k) => {
                write!(
                    f,
                    "The configuration '{k}' was supplied but isn't a known config."
                )
            }
            ConfigWarning::IgnoredKafkaKey(k) => {
                write!(
                    f,
                    "The Kafka configuration '{k}' is accepted but has no effect in Strata."
                )
            }
        }
    }
}
