//! DescribeConfigs entries for a topic or the broker (Kafka's `ConfigHelper` and
//! `DescribeConfigsResponse`): value (hidden when sensitive), source (`ConfigSource` ids),
//! is_default, read_only, synonyms in Kafka's order (topic override, then the broker's static
//! synonyms, then their defaults) and the v3 config type id.
//!
//! Strata has no dynamic broker configs yet, so sources 2 and 3 never appear.

use std::collections::BTreeMap;

use super::broker::BrokerConfig;
use super::registry::{broker_def, ConfigType, BROKER_CONFIGS};
use super::topic::{effective_values, render_value, TOPIC_CONFIGS};
use super::ConfigError;

/// `DescribeConfigsResponse.ConfigSource` ids.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(i8)]
pub enum ConfigSource {
    Unknown = 0,
    DynamicTopicConfig = 1,
    DynamicBrokerConfig = 2,
    DynamicDefaultBrokerConfig = 3,
    StaticBrokerConfig = 4,
    DefaultConfig = 5,
    /// A log level of a BROKER_LOGGER resource.
    DynamicBrokerLoggerConfig = 6,
    /// A key set on a CLIENT_METRICS resource (KIP-714).
    ClientMetricsConfig = 7,
    /// A key set on a GROUP resource (KIP-848).
    GroupConfig = 8,
}

impl ConfigSource {
    pub fn id(self) -> i8 {
        self as i8
    }
}

/// One synonym of a config entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigSynonym {
    pub name: String,
    pub value: Option<String>,
    pub source: ConfigSource,
}

/// One DescribeConfigs result entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigEntry {
    pub name: String,
    /// `None` when sensitive or when the key has no value (null default, not set).
    pub value: Option<String>,
    pub source: ConfigSource,
    pub is_default: bool,
    pub read_only: bool,
    pub is_sensitive: bool,
    pub synonyms: Vec<ConfigSynonym>,
    pub config_type: ConfigType,
}

impl ConfigEntry {
    /// The DescribeConfigs v3+ `config_type` id.
    pub fn config_type_id(&self) -> i8 {
        self.config_type.describe_id()
    }
}

/// Broker keys that are synonyms of each other, in precedence order (Kafka's
/// `DynamicBrokerConfig.brokerConfigSynonyms`).
const BROKER_SYNONYM_GROUPS: &[&[&str]] = &[
    &["log.roll.ms", "log.roll.hours"],
    &["log.roll.jitter.ms", "log.roll.jitter.hours"],
    &["log.flush.interval.ms", "log.flush.scheduler.interval.ms"],
    &[
        "log.retention.ms",
        "log.retention.minutes",
        "log.retention.hours",
    ],
    &["log.dirs", "log.dir"],
];

/// The maps a broker key's value and synonyms come from, most specific first (Kafka's
/// `ConfigHelper.configSynonyms`).
#[derive(Debug, Clone, Copy)]
pub struct ConfigLayers<'a> {
    /// The broker's own dynamic configs (DYNAMIC_BROKER_CONFIG).
    pub per_broker: &'a BTreeMap<String, String>,
    /// The cluster-wide dynamic default (DYNAMIC_DEFAULT_BROKER_CONFIG).
    pub default: &'a BTreeMap<String, String>,
    /// As started (STATIC_BROKER_CONFIG).
    pub static_configs: &'a BTreeMap<String, String>,
}

static NO_CONFIGS: BTreeMap<String, String> = BTreeMap::new();

impl<'a> ConfigLayers<'a> {
    /// A broker without dynamic configs.
    pub fn static_only(broker: &'a BrokerConfig) -> ConfigLayers<'a> {
        ConfigLayers {
            per_broker: &NO_CONFIGS,
            default: &NO_CONFIGS,
            static_configs: &broker.static_configs,
        }
    }

    /// The set layers in precedence order, each with its source.
    fn set(&self) -> [(&'a BTreeMap<String, String>, ConfigSource); 3] {
        [
            (self.per_broker, ConfigSource::DynamicBrokerConfig),
            (self.default, ConfigSource::DynamicDefaultBrokerConfig),
            (self.static_configs, ConfigSource::StaticBrokerConfig),
        ]
    }
}

/// The values of `names` (in order) in each layer, then the defaults of those that have one.
fn broker_synonyms(names: &[&str], layers: &ConfigLayers, sensitive: bool) -> Vec<ConfigSynonym> {
    let shown = |v: &str| if sensitive { None } else { Some(v.to_string()) };
    let mut out = Vec::new();
    for (map, source) in layers.set() {
        for name in names {
            if let Some(v) = map.get(*name) {
                out.push(ConfigSynonym {
                    name: name.to_string(),
                    value: shown(v),
                    source,
                });
            }
        }
    }
    for name in names {
        if let Some(default) = broker_def(name).and_then(|d| d.default) {
            out.push(ConfigSynonym {
                name: name.to_string(),
                value: shown(default),
                source: ConfigSource::DefaultConfig,
            });
        }
    }
    out
}

/// The synonyms of one broker key (its set layers, then its default), as a group config
/// that follows the key lists them.
pub fn broker_key_synonyms(layers: &ConfigLayers, name: &str) -> Vec<ConfigSynonym> {
    broker_synonyms(&[name], layers, false)
}

/// Every topic config of a topic with these overrides, in name order.
pub fn describe_topic_configs(
    overrides: &BTreeMap<String, String>,
    broker: &BrokerConfig,
    layers: &ConfigLayers,
) -> Result<Vec<ConfigEntry>, ConfigError> {
    let values = effective_values(overrides, broker)?;
    debug_assert_eq!(values.len(), TOPIC_CONFIGS.len());
    let mut out = Vec::with_capacity(values.len());
    for (td, value, overridden) in values {
        let name = td.def.name;
        let sensitive = td.def.is_sensitive();
        let mut synonyms = Vec::new();
        if overridden {
            synonyms.push(ConfigSynonym {
                name: name.to_string(),
                value: overrides.get(name).filter(|_| !sensitive).cloned(),
                source: ConfigSource::DynamicTopicConfig,
            });
        }
        synonyms.extend(broker_synonyms(td.broker_synonyms, layers, sensitive));
        let source = synonyms
            .first()
            .map_or(ConfigSource::DefaultConfig, |s| s.source);
        out.push(ConfigEntry {
            name: name.to_string(),
            value: if sensitive {
                None
            } else {
                Some(render_value(&value))
            },
            source,
            is_default: source == ConfigSource::DefaultConfig,
            read_only: false,
            is_sensitive: sensitive,
            synonyms,
            config_type: td.def.config_type,
        });
    }
    Ok(out)
}

/// Every broker config Strata knows, in registry order, as broker `node` describes them
/// (`per_broker`), or only the keys set in the cluster-wide default layer, with only their
/// default-layer synonyms (Kafka's `ConfigHelper` for an empty BROKER resource name). Values
/// are the most specific layer's; keys that Kafka cannot change at runtime are read-only.
pub fn describe_broker_configs(layers: &ConfigLayers, per_broker: bool) -> Vec<ConfigEntry> {
    BROKER_CONFIGS
        .iter()
        .filter(|def| per_broker || layers.default.contains_key(def.name))
        .map(|def| {
            let sensitive = def.is_sensitive();
            let group: &[&str] = BROKER_SYNONYM_GROUPS
                .iter()
                .find(|g| g.contains(&def.name))
                .copied()
                .unwrap_or(std::slice::from_ref(&def.name));
            // As Kafka: drop the synonyms listed before this key (e.g. describing
            // `log.retention.hours` does not show `log.retention.ms`).
            let synonyms: Vec<ConfigSynonym> = broker_synonyms(group, layers, sensitive)
                .into_iter()
                .skip_while(|s| s.name != def.name)
                .filter(|s| per_broker || s.source == ConfigSource::DynamicDefaultBrokerConfig)
                .collect();
            let layered = layers
                .set()
                .into_iter()
                .filter(|(_, source)| {
                    per_broker || *source == ConfigSource::DynamicDefaultBrokerConfig
                })
                .find_map(|(map, source)| map.get(def.name).map(|v| (Some(v.clone()), source)));
            let (value, source) =
                layered.unwrap_or((def.default.map(str::to_string), ConfigSource::DefaultConfig));
            ConfigEntry {
                name: def.name.to_string(),
                value: if sensitive { None } else { value },
                source,
                is_default: source == ConfigSource::DefaultConfig,
                read_only: !def.dynamic,
                is_sensitive: sensitive,
                synonyms,
                config_type: def.config_type,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn find<'a>(entries: &'a [ConfigEntry], name: &str) -> &'a ConfigEntry {
        entries.iter().find(|e| e.name == name).unwrap()
    }

    fn syn(name: &str, value: &str, source: ConfigSource) -> ConfigSynonym {
        ConfigSynonym {
            name: name.into(),
            value: Some(value.into()),
            source,
        }
    }

    #[test]
    fn topic_synonyms_in_kafka_order() {
        let broker = BrokerConfig::load(Some("log.retention.minutes=30"), &[])
            .unwrap()
            .0;
        let overrides: BTreeMap<String, String> =
            [("retention.ms".to_string(), "5000".to_string())].into();
        let entries =
            describe_topic_configs(&overrides, &broker, &ConfigLayers::static_only(&broker))
                .unwrap();
        let e = find(&entries, "retention.ms");
        assert_eq!(e.value.as_deref(), Some("5000"));
        assert_eq!(e.source, ConfigSource::DynamicTopicConfig);
        assert!(!e.is_default && !e.read_only && !e.is_sensitive);
        assert_eq!(e.config_type_id(), 5);
        assert_eq!(
            e.synonyms,
            vec![
                syn("retention.ms", "5000", ConfigSource::DynamicTopicConfig),
                syn(
                    "log.retention.minutes",
                    "30",
                    ConfigSource::StaticBrokerConfig
                ),
                syn("log.retention.hours", "168", ConfigSource::DefaultConfig),
            ]
        );
        // Without the override, the static broker synonym decides value and source.
        let entries = describe_topic_configs(
            &BTreeMap::new(),
            &broker,
            &ConfigLayers::static_only(&broker),
        )
        .unwrap();
        let e = find(&entries, "retention.ms");
        assert_eq!(e.value.as_deref(), Some("1800000"));
        assert_eq!(e.source, ConfigSource::StaticBrokerConfig);
        let e = find(&entries, "segment.bytes");
        assert_eq!(
            (e.source, e.is_default, e.config_type_id()),
            (ConfigSource::DefaultConfig, true, 3)
        );
        assert_eq!(
            e.synonyms,
            vec![syn(
                "log.segment.bytes",
                "1073741824",
                ConfigSource::DefaultConfig
            )]
        );
        assert_eq!(find(&entries, "cleanup.policy").config_type_id(), 7);
        assert_eq!(
            find(&entries, "min.cleanable.dirty.ratio").value.as_deref(),
            Some("0.5")
        );
        assert_eq!(entries.len(), TOPIC_CONFIGS.len());
    }

    #[test]
    fn topic_describe_rejects_unknown_overrides() {
        let overrides: BTreeMap<String, String> = [("bogus".to_string(), "1".to_string())].into();
        let broker = BrokerConfig::default();
        let layers = ConfigLayers::static_only(&broker);
        assert!(describe_topic_configs(&overrides, &broker, &layers).is_err());
    }

    #[test]
    fn broker_entries() {
        let broker = BrokerConfig::load(Some("log.retention.ms=100\nnum.partitions=4"), &[])
            .unwrap()
            .0;
        let entries = describe_broker_configs(&ConfigLayers::static_only(&broker), true);
        let e = find(&entries, "num.partitions");
        assert_eq!(
            (e.value.as_deref(), e.source, e.read_only),
            (Some("4"), ConfigSource::StaticBrokerConfig, true)
        );
        let e = find(&entries, "log.retention.ms");
        assert!(!e.read_only);
        assert_eq!(
            e.synonyms,
            vec![
                syn("log.retention.ms", "100", ConfigSource::StaticBrokerConfig),
                syn("log.retention.hours", "168", ConfigSource::DefaultConfig),
            ]
        );
        let e = find(&entries, "log.retention.hours");
        assert_eq!(
            e.synonyms,
            vec![syn(
                "log.retention.hours",
                "168",
                ConfigSource::DefaultConfig
            )]
        );
        assert!(e.is_default);
        let e = find(&entries, "log.retention.minutes");
        assert_eq!(e.value, None);
        assert_eq!(e.synonyms, vec![]);
        assert_eq!(
            find(&entries, "offsets.topic.replication.factor").config_type_id(),
            4
        );
        assert_eq!(entries.len(), BROKER_CONFIGS.len());
    }
}
