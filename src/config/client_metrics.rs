//! Client-metrics subscriptions: the CLIENT_METRICS (16) config resources of KIP-714, named
//! subscriptions with `metrics` (metric name prefixes), `interval.ms` (push interval) and
//! `match` (client selectors), validated and described as Kafka 4.3's `ClientMetricsConfigs`
//! does, so `kafka-client-metrics` and `kafka-configs --entity-type client-metrics` manage them.
//!
//! Strata has no metrics receiver plugin, so, as in Kafka without one, the telemetry APIs are
//! not advertised and no client is handed these subscriptions; they are stored and described.
use std::collections::BTreeMap;

use super::describe::{ConfigEntry, ConfigSource, ConfigSynonym};
use super::registry::ConfigType;

/// Kafka's `ClientMetricsConfigs.INTERVAL_MS_DEFAULT` (5 minutes).
const INTERVAL_MS_DEFAULT: i32 = 300_000;

/// The selectors a `match` entry may name.
const MATCH_PARAMS: &[&str] = &[
    "client_instance_id",
    "client_id",
    "client_software_name",
    "client_software_version",
    "client_source_address",
    "client_source_port",
];

/// Why a subscription change is refused: Kafka answers INVALID_REQUEST for a bad name, key or
/// interval and INVALID_CONFIG for a bad list or match pattern.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClientMetricsError {
    InvalidRequest(String),
    InvalidConfig(String),
}

fn list(value: &str) -> Vec<&str> {
    value
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .collect()
}

/// Validates a subscription's whole key set (Kafka's `ClientMetricsConfigs.validate`).
pub fn validate_client_metrics(
    name: &str,
    configs: &BTreeMap<String, String>,
) -> Result<(), ClientMetricsError> {
    use ClientMetricsError::*;
    if name.is_empty() {
        return Err(InvalidRequest("Subscription name can't be empty".into()));
    }
    for key in configs.keys() {
        if !matches!(key.as_str(), "metrics" | "interval.ms" | "match") {
            return Err(InvalidRequest(format!(
                "Unknown client metrics configuration: {key}"
            )));
        }
    }
    for key in ["metrics", "match"] {
        if let Some(v) = configs.get(key) {
            let items = list(v);
            let mut seen = std::collections::HashSet::new();
            if items.iter().any(|i| !seen.insert(*i)) {
                return Err(InvalidConfig(format!(
                    "Configuration '{key}' values must not be duplicated."
                )));
            }
        }
    }
    if let Some(v) = configs.get("interval.ms") {
        let ms: i32 = v.trim().parse().map_err(|_| {
            InvalidConfig(format!(
                "Invalid value {v} for configuration interval.ms: Not a number of type INT"
            ))
        })?;
        if !(100..=3_600_000).contains(&ms) {
            return Err(InvalidRequest(format!(
                "Invalid value {ms} for interval.ms, interval must be between 100 and 3600000 \
                 (1 hour)"
            )));
        }
    }
    if let Some(v) = configs.get("match") {
        for pattern in list(v) {
            let illegal = || InvalidConfig(format!("Illegal client matching pattern: {pattern}"));
            let parts: Vec<&str> = pattern.split('=').collect();
            if parts.len() != 2 || !MATCH_PARAMS.contains(&parts[0].trim()) {
                return Err(illegal());
            }
            regex::Regex::new(parts[1].trim()).map_err(|_| illegal())?;
        }
    }
    Ok(())
}

/// The three keys of a subscription as DescribeConfigs shows them (Kafka's
/// `ConfigHelper.createClientMetricsConfigEntry`): a set key has source CLIENT_METRICS_CONFIG
/// and itself as synonym; an unset one its default, DEFAULT_CONFIG and no synonym.
pub fn describe_client_metrics(configs: &BTreeMap<String, String>) -> Vec<ConfigEntry> {
    [
        ("interval.ms", ConfigType::Int),
        ("match", ConfigType::List),
        ("metrics", ConfigType::List),
    ]
    .into_iter()
    .map(|(key, config_type)| {
        let set = configs.get(key).map(|v| match config_type {
            ConfigType::List => list(v).join(","),
            _ => v.trim().to_string(),
        });
        let value = set.clone().unwrap_or_else(|| match config_type {
            ConfigType::Int => INTERVAL_MS_DEFAULT.to_string(),
            _ => String::new(),
        });
        let source = if set.is_some() {
            ConfigSource::ClientMetricsConfig
        } else {
            ConfigSource::DefaultConfig
        };
        ConfigEntry {
            name: key.to_string(),
            value: Some(value.clone()),
            source,
            is_default: set.is_none(),
            read_only: false,
            is_sensitive: false,
            synonyms: set
                .map(|_| ConfigSynonym {
                    name: key.to_string(),
                    value: Some(value),
                    source,
                })
                .into_iter()
                .collect(),
            config_type,
        }
    })
    .collect()
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
    fn kafka_checks() {
        use ClientMetricsError::*;
        let ok = set(&[
            (
                "metrics",
                "org.apache.kafka.producer., org.apache.kafka.consumer.",
            ),
            ("interval.ms", "1000"),
            (
                "match",
                "client_id=app-.*,client_software_name=apache-kafka-java",
            ),
        ]);
        assert_eq!(validate_client_metrics("sub", &ok), Ok(()));
        assert!(matches!(
            validate_client_metrics("", &ok),
            Err(InvalidRequest(_))
        ));
        assert_eq!(
            validate_client_metrics("s", &set(&[("interval", "1")])),
            Err(InvalidRequest(
                "Unknown client metrics configuration: interval".into()
            ))
        );
        assert!(matches!(
            validate_client_metrics("s", &set(&[("interval.ms", "99")])),
            Err(InvalidRequest(_))
        ));
        assert_eq!(
            validate_client_metrics("s", &set(&[("match", "client_name=x")])),
            Err(InvalidConfig(
                "Illegal client matching pattern: client_name=x".into()
            ))
        );
        assert!(matches!(
            validate_client_metrics("s", &set(&[("metrics", "a,a")])),
            Err(InvalidConfig(_))
        ));
        let described = describe_client_metrics(&ok);
        assert_eq!(described[0].value.as_deref(), Some("1000"));
        assert_eq!(described[0].source, ConfigSource::ClientMetricsConfig);
        assert_eq!(
            described[2].value.as_deref(),
            Some("org.apache.kafka.producer.,org.apache.kafka.consumer.")
        );
        let defaults = describe_client_metrics(&BTreeMap::new());
        assert_eq!(defaults[0].value.as_deref(), Some("300000"));
        assert!(defaults.iter().all(|e| e.synonyms.is_empty()));
    }
}
