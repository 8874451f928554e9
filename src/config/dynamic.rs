//! Dynamic broker configs (Kafka's `DynamicBrokerConfig`, KIP-226): the two layers kept in
//! the metadata log as `Config` records of BROKER resources, the cluster-wide default (empty
//! resource name, `<default>` in `kafka-configs`) and the per-broker one (the broker id), over
//! the static config the process started with. Precedence, as Kafka: per-broker, then
//! default, then static, then the built-in default, per key; synonyms (`log.retention.ms` >
//! `.minutes` > `.hours`) are resolved after merging, so a static `log.retention.ms` still
//! wins over a dynamic `log.retention.hours`, exactly as in Kafka.
//!
//! [`validate_layer`] is the check both the receiving broker and the controller run on a
//! resource's resulting layer: a key Kafka cannot change at runtime is refused with Kafka's
//! own message; a key Kafka changes at runtime but Strata applies only at start-up is refused
//! too (never accepted and ignored); values are parsed with the key's type and validator.
//!
//! [`DynamicBrokerConfig`] holds the effective config; the metadata publisher updates it and
//! its subscribers (listeners, the log cleaner) react, as Kafka's `Reconfigurable`s do.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::broker::BrokerConfig;
use super::registry::{broker_def, IGNORED_KAFKA_KEYS};
use super::topic::{edit_value, AlterConfigOp, TOPIC_CONFIGS};
use super::ConfigError;

/// Broker keys that are not topic defaults and that Strata applies at runtime: connection
/// limits (the listeners), the cleaner's throughput and pause, producer-id expiration.
const RUNTIME_KEYS: &[&str] = &[
    "max.connections",
    "max.connections.per.ip",
    "max.connections.per.ip.overrides",
    "log.cleaner.io.max.bytes.per.second",
    "log.cleaner.backoff.ms",
    "producer.id.expiration.ms",
    "transaction.partition.verification.enable",
];

/// Whether a change of `name` takes effect without a restart: a topic default (every
/// partition's config is resolved again, so topics without their own override follow it) or
/// one of [`RUNTIME_KEYS`].
pub fn applied_dynamically(name: &str) -> bool {
    let dynamic = broker_def(name).is_some_and(|d| d.dynamic);
    let topic_default = TOPIC_CONFIGS
        .iter()
        .any(|t| t.broker_synonyms.contains(&name));
    dynamic && (topic_default || RUNTIME_KEYS.contains(&name))
}

/// Scala's `Set(a, b)` rendering, as Kafka's messages list config names.
fn scala_set(names: &[&str]) -> String {
    format!("Set({})", names.join(", "))
}

/// Checks a BROKER resource's resulting layer (every key it would hold): Kafka's
/// `DynamicBrokerConfig.validateConfigs` (INVALID_REQUEST with its message), plus the keys
/// Strata refuses. The error is the message for the resource's result.
pub fn validate_layer(layer: &BTreeMap<String, String>) -> Result<(), String> {
    let names: Vec<&str> = layer.keys().map(String::as_str).collect();
    let pick = |pred: &dyn Fn(&str) -> bool| -> Vec<&str> {
        names.iter().copied().filter(|n| pred(n)).collect()
    };
    let not_dynamic = pick(&|n| broker_def(n).is_some_and(|d| !d.dynamic));
    if !not_dynamic.is_empty() {
        return Err(format!(
            "Cannot update these configs dynamically: {}",
            scala_set(&not_dynamic)
        ));
    }
    let not_applied =
        pick(&|n| broker_def(n).is_some_and(|d| d.dynamic) && !applied_dynamically(n));
    if !not_applied.is_empty() {
        return Err(format!(
            "Cannot update these configs dynamically: {} (Kafka can, but Strata applies them \
             only at start-up: set them in server.properties and restart)",
            scala_set(&not_applied)
        ));
    }
    let ignored = pick(&|n| IGNORED_KAFKA_KEYS.contains(&n));
    if !ignored.is_empty() {
        return Err(format!(
            "Cannot update these configs dynamically: {} (Strata has no such setting)",
            scala_set(&ignored)
        ));
    }
    let unknown = pick(&|n| broker_def(n).is_none());
    if !unknown.is_empty() {
        // Kafka keeps unknown keys for custom plugins; Strata has none to read them.
        return Err(format!(
            "Unknown broker configs: {} (Strata loads no plugins that could read them)",
            scala_set(&unknown)
        ));
    }
    for (name, value) in layer {
        if let Some(def) = broker_def(name) {
            def.parse(value).map_err(|e| e.to_string())?;
        }
    }
    Ok(())
}

/// One IncrementalAlterConfigs op on a BROKER layer's key: the key's new value (`None`:
/// removed). Keys outside the registry can only be set or deleted; [`validate_layer`] then
/// refuses them with the reason.
pub fn apply_broker_op(
    name: &str,
    current: Option<&str>,
    op: AlterConfigOp,
    value: Option<&str>,
) -> Result<Option<String>, ConfigError> {
    match (broker_def(name), op) {
        (Some(def), _) => edit_value(def, current, op, value),
        (None, AlterConfigOp::Delete) => Ok(None),
        (None, AlterConfigOp::Set) => Ok(value.map(str::to_string)),
        (None, _) => Err(ConfigError::invalid(
            name,
            value.unwrap_or("null"),
            "Unknown config name",
        )),
    }
}

/// The two dynamic layers of one broker.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DynamicLayers {
    /// The cluster-wide default (resource name "").
    pub default: BTreeMap<String, String>,
    /// This broker's own (resource name = its id).
    pub per_broker: BTreeMap<String, String>,
}

impl DynamicLayers {
    /// The dynamic keys in precedence order applied over each other.
    pub fn merged(&self) -> BTreeMap<String, String> {
        let mut out = self.default.clone();
        out.extend(self.per_broker.clone());
        out
    }

    /// These layers over `static_config`, for DescribeConfigs.
    pub fn view<'a>(&'a self, static_config: &'a BrokerConfig) -> super::ConfigLayers<'a> {
        super::ConfigLayers {
            per_broker: &self.per_broker,
            default: &self.default,
            static_configs: &static_config.static_configs,
        }
    }
}

/// The effective broker config: the static one with the dynamic layers applied.
pub struct DynamicBrokerConfig {
    static_config: BrokerConfig,
    layers: parking_lot::RwLock<DynamicLayers>,
    current: tokio::sync::watch::Sender<Arc<BrokerConfig>>,
}

impl std::fmt::Debug for DynamicBrokerConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DynamicBrokerConfig")
            .field("layers", &*self.layers.read())
            .finish()
    }
}

impl DynamicBrokerConfig {
    pub fn new(static_config: BrokerConfig) -> Arc<DynamicBrokerConfig> {
        let (current, _) = tokio::sync::watch::channel(Arc::new(static_config.clone()));
        Arc::new(DynamicBrokerConfig {
            static_config,
            layers: parking_lot::RwLock::new(DynamicLayers::default()),
            current,
        })
    }

    /// The config the process started with.
    pub fn static_config(&self) -> &BrokerConfig {
        &self.static_config
    }

    /// The effective config now.
    pub fn current(&self) -> Arc<BrokerConfig> {
        self.current.borrow().clone()
    }

    /// Follows the effective config (Kafka's `Reconfigurable.reconfigure` callbacks).
    pub fn subscribe(&self) -> tokio::sync::watch::Receiver<Arc<BrokerConfig>> {
        self.current.subscribe()
    }

    pub fn layers(&self) -> DynamicLayers {
        self.layers.read().clone()
    }

    /// The effective config these layers would give (nothing is applied).
    pub fn resolve(&self, layers: &DynamicLayers) -> Result<BrokerConfig, ConfigError> {
        self.static_config.with_dynamic(&layers.merged())
    }

    /// Applies new layers (from the metadata image). Returns whether the effective config
    /// changed; an invalid combination leaves the previous config in force (Kafka logs and
    /// skips an invalid dynamic config too).
    pub fn update(&self, layers: DynamicLayers) -> Result<bool, ConfigError> {
        if *self.layers.read() == layers {
            return Ok(false);
        }
        let config = self.resolve(&layers)?;
        *self.layers.write() = layers;
        let changed = **self.current.borrow() != config;
        if changed {
            self.current.send_replace(Arc::new(config));
        }
        Ok(changed)
    }
}

impl BrokerConfig {
    /// This (static) config with the dynamic keys of `dynamic` applied: the static props are
    /// read again with the dynamic values over them, and only the fields Strata applies at
    /// runtime are taken from the result, so what start-up derived (embedded voters, TLS,
    /// listeners) stays as it is.
    pub fn with_dynamic(
        &self,
        dynamic: &BTreeMap<String, String>,
    ) -> Result<BrokerConfig, ConfigError> {
        let mut props = self.given_props.clone();
        props.extend(dynamic.iter().map(|(k, v)| (k.clone(), v.clone())));
        let (fresh, _) = BrokerConfig::from_props(&props)?;
        let mut c = self.clone();
        macro_rules! take {
            ($($field:ident),* $(,)?) => { $( c.$field = fresh.$field.clone(); )* };
        }
        take!(
            message_max_bytes,
            max_connections,
            max_connections_per_ip,
            max_connections_per_ip_overrides,
            log_segment_bytes,
            log_roll_ms,
            log_roll_jitter_ms,
            log_retention_ms,
            log_retention_bytes,
            log_index_interval_bytes,
            log_index_size_max_bytes,
            log_flush_interval_messages,
            log_flush_interval_ms,
            log_message_timestamp_type,
            log_message_timestamp_before_max_ms,
            log_message_timestamp_after_max_ms,
            log_cleanup_policy,
            log_cleaner_delete_retention_ms,
            log_cleaner_min_compaction_lag_ms,
            log_cleaner_max_compaction_lag_ms,
            log_cleaner_min_cleanable_ratio,
            log_cleaner_backoff_ms,
            log_cleaner_io_max_bytes_per_second,
            log_segment_delete_delay_ms,
            log_preallocate,
            min_insync_replicas,
            compression_type,
            unclean_leader_election_enable,
            producer_id_expiration_ms,
            transaction_partition_verification_enable,
        );
        Ok(c)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layer(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn validation_messages_follow_kafka() {
        assert_eq!(
            validate_layer(&layer(&[("log.retention.ms", "5000")])),
            Ok(())
        );
        assert_eq!(
            validate_layer(&layer(&[("num.partitions", "3")])).unwrap_err(),
            "Cannot update these configs dynamically: Set(num.partitions)"
        );
        assert!(validate_layer(&layer(&[("listeners", "PLAINTEXT://:1")]))
            .unwrap_err()
            .contains("Strata applies them only at start-up"));
        assert!(validate_layer(&layer(&[("num.io.threads", "8")]))
            .unwrap_err()
            .contains("no such setting"));
        assert!(validate_layer(&layer(&[("bogus.key", "1")]))
            .unwrap_err()
            .starts_with("Unknown broker configs: Set(bogus.key)"));
        assert_eq!(
            validate_layer(&layer(&[("log.retention.ms", "soon")])).unwrap_err(),
            "Invalid value soon for configuration log.retention.ms: Expected value to be a \
             64-bit integer"
        );
        assert!(applied_dynamically("message.max.bytes"));
        assert!(applied_dynamically("log.segment.bytes"));
        assert!(!applied_dynamically("advertised.listeners"));
    }

    #[test]
    fn layers_merge_per_key_then_synonyms_resolve() {
        let (static_config, _) =
            BrokerConfig::load(Some("log.retention.ms=100\nmax.connections=50"), &[]).unwrap();
        let d = DynamicBrokerConfig::new(static_config);
        let rx = d.subscribe();
        let layers = DynamicLayers {
            default: layer(&[("log.retention.hours", "1"), ("log.segment.bytes", "2048")]),
            per_broker: layer(&[("log.segment.bytes", "4096"), ("max.connections", "7")]),
        };
        assert_eq!(d.update(layers.clone()), Ok(true));
        assert!(rx.has_changed().unwrap());
        let c = d.current();
        // The static log.retention.ms outranks the dynamic log.retention.hours (Kafka's rule).
        assert_eq!(c.log_retention_ms, 100);
        assert_eq!(c.log_segment_bytes, 4096);
        assert_eq!(c.max_connections, 7);
        assert_eq!(d.static_config().log_segment_bytes, 1073741824);
        assert_eq!(d.update(layers), Ok(false));
        // An invalid combination keeps the config in force.
        let bad = DynamicLayers {
            default: layer(&[("log.segment.bytes", "1")]),
            ..Default::default()
        };
        assert!(d.update(bad).is_err());
        assert_eq!(d.current().log_segment_bytes, 4096);
    }
}
