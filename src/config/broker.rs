//! [`BrokerConfig`]: the typed broker configuration (Kafka's `KafkaConfig`), built from
//! defaults <- `server.properties` <- `--override key=value`, with Kafka's precedence among
//! synonyms (`log.retention.ms` > `.minutes` > `.hours`, `log.roll.ms` > `.hours`,
//! `log.dirs` > `log.dir`, `node.id` = `broker.id`). Unknown keys become warnings for the
//! caller to log; a bad value for a known key is a [`ConfigError`] naming key and value.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::properties::parse_properties;
use super::registry::{broker_def, ConfigValue, IGNORED_KAFKA_KEYS};
use super::security::{check_listener_protocols, parse_protocol_map, refused_setting};
use super::topic::{CleanupPolicy, CompressionType, TimestampType};
use super::SecurityProtocol;
use super::{ConfigError, ConfigWarning};

const MS_PER_MINUTE: i64 = 60_000;
const MS_PER_HOUR: i64 = 3_600_000;

pub(crate) use super::listener::split_host_port;
pub use super::listener::{Listener, ProcessRole, QuorumVoter};

/// The broker's typed configuration. Durations end in `_ms`, sizes in `_bytes`.
#[derive(Debug, Clone, PartialEq)]
pub struct BrokerConfig {
    pub node_id: i32,
    pub process_roles: Vec<ProcessRole>,
    pub listeners: Vec<Listener>,
    /// Defaults to `listeners`.
    pub advertised_listeners: Vec<Listener>,
    pub controller_listener_names: Vec<String>,
    pub controller_quorum_voters: Vec<QuorumVoter>,
    /// `host:port` entries of `controller.quorum.bootstrap.servers` (KIP-853): where a
    /// process without `controller.quorum.voters` finds the quorum and its voters.
    pub controller_quorum_bootstrap_servers: Vec<String>,
    pub log_dirs: Vec<PathBuf>,
    pub num_partitions: i32,
    pub default_replication_factor: i32,
    pub auto_create_topics_enable: bool,
    pub delete_topic_enable: bool,
    /// `authorizer.class.name`: Kafka's StandardAuthorizer switches authorization on; empty
    /// (the default) means none, every client may use every API.
    pub authorizer_enabled: bool,
    /// `super.users`: principals every authorization allows.
    pub super_users: Vec<String>,
    /// `allow.everyone.if.no.acl.found`: whether a resource with no ACL at all is open.
    pub allow_everyone_if_no_acl_found: bool,
    pub message_max_bytes: i32,
    pub socket_request_max_bytes: i32,
    /// `socket.send.buffer.bytes`: SO_SNDBUF of accepted sockets; -1 leaves the OS's.
    pub socket_send_buffer_bytes: i32,
    /// `socket.receive.buffer.bytes`: SO_RCVBUF of the listening sockets (accepted ones
    /// inherit it, and it sets the TCP window scale offered); -1 leaves the OS's.
    pub socket_receive_buffer_bytes: i32,
    pub max_connections: i32,
    pub queued_max_requests: i32,
    /// The most partitions one DescribeTopicPartitions response holds.
    pub max_request_partition_size_limit: i32,
    /// -1: unbounded (Kafka's default).
    pub queued_max_request_bytes: i64,
    /// Negative: connections are never closed for idleness.
    pub connections_max_idle_ms: i64,
    pub max_connections_per_ip: i32,
    /// Host name or IP address to its own limit.
    pub max_connections_per_ip_overrides: BTreeMap<String, i32>,
    /// How long a request's bytes, once its size prefix is read, may take to arrive.
    pub request_read_timeout_ms: i64,
    /// `strata.log.format`: `text` (the default) or `json` (one object per line).
    pub log_format: String,
    /// `strata.log.durable.acks`: produce acknowledgements (acks=1 and all), coordinator
    /// writes and followers' fetch positions wait for the fsync of the records (group commit).
    pub log_durable_acks: bool,
    /// `strata.fetch.zero.copy`: consumers' fetched records go from the segment files to the
    /// socket with sendfile on plaintext listeners (read and written on TLS ones), rather
    /// than being copied into the encoded response.
    pub fetch_zero_copy: bool,
    /// Client quotas are measured over this many sample windows (Kafka's `quota.window.num`).
    pub quota_window_num: i32,
    /// The length of one quota sample window (Kafka's `quota.window.size.seconds`).
    pub quota_window_size_seconds: i32,
    /// The controller mutation quota's sample windows (Kafka's `controller.quota.window.num`):
    /// with the window size and the rate, they set the token bucket's burst (KIP-599).
    pub controller_quota_window_num: i32,
    /// Kafka's `controller.quota.window.size.seconds`.
    pub controller_quota_window_size_seconds: i32,
    /// Listener name (upper-cased) to its security protocol, with Kafka's KRaft defaults.
    pub listener_security_protocol_map: BTreeMap<String, SecurityProtocol>,
    /// `listener.name.<listener>.ssl.*`: listener name (upper-cased) to `ssl.*` key to value;
    /// these win over the global `ssl.*` keys for that listener.
    pub listener_ssl_configs: BTreeMap<String, BTreeMap<String, String>>,
    /// The listener other brokers replicate from (`inter.broker.listener.name`, or the
    /// listener named after `security.inter.broker.protocol`); None when neither is set.
    pub inter_broker_listener_name: Option<String>,
    /// SASL mechanisms, JAAS users and re-authentication per SASL listener.
    pub sasl: super::sasl::SaslConfig,
    pub max_inflight_requests_per_connection: i32,
    pub log_segment_bytes: i32,
    pub log_roll_ms: i64,
    pub log_roll_jitter_ms: i64,
    /// -1 means no time limit.
    pub log_retention_ms: i64,
    /// -1 means no size limit.
    pub log_retention_bytes: i64,
    pub log_retention_check_interval_ms: i64,
    pub log_index_interval_bytes: i32,
    pub log_index_size_max_bytes: i32,
    pub log_flush_interval_messages: i64,
    pub log_flush_interval_ms: i64,
    pub log_message_timestamp_type: TimestampType,
    pub log_message_timestamp_before_max_ms: i64,
    pub log_message_timestamp_after_max_ms: i64,
    pub log_cleanup_policy: CleanupPolicy,
    pub log_cleaner_enable: bool,
    pub log_cleaner_delete_retention_ms: i64,
    pub log_cleaner_min_compaction_lag_ms: i64,
    pub log_cleaner_max_compaction_lag_ms: i64,
    pub log_cleaner_min_cleanable_ratio: f64,
    /// Pause between cleaner passes (`log.cleaner.backoff.ms`).
    pub log_cleaner_backoff_ms: i64,
    /// Cleaner read plus write budget; `f64::MAX` (the default) is unlimited.
    pub log_cleaner_io_max_bytes_per_second: f64,
    pub log_segment_delete_delay_ms: i64,
    pub log_preallocate: bool,
    pub min_insync_replicas: i32,
    pub compression_type: CompressionType,
    pub unclean_leader_election_enable: bool,
    pub offsets_topic_num_partitions: i32,
    pub offsets_topic_replication_factor: i16,
    pub offsets_topic_segment_bytes: i32,
    /// From `offsets.retention.minutes`.
    pub offsets_retention_ms: i64,
    pub group_initial_rebalance_delay_ms: i32,
    pub group_min_session_timeout_ms: i32,
    pub group_max_session_timeout_ms: i32,
    pub group_max_size: i32,
    /// `group.consumer.session.timeout.ms` (KIP-848).
    pub group_consumer_session_timeout_ms: i32,
    /// `group.consumer.heartbeat.interval.ms` (KIP-848).
    pub group_consumer_heartbeat_interval_ms: i32,
    /// `group.consumer.min.session.timeout.ms`: the lowest group override allowed.
    pub group_consumer_min_session_timeout_ms: i32,
    /// `group.consumer.max.session.timeout.ms`: the highest group override allowed.
    pub group_consumer_max_session_timeout_ms: i32,
    /// `group.consumer.min.heartbeat.interval.ms`: the lowest group override allowed.
    pub group_consumer_min_heartbeat_interval_ms: i32,
    /// `group.consumer.max.heartbeat.interval.ms`: the highest group override allowed.
    pub group_consumer_max_heartbeat_interval_ms: i32,
    /// `group.consumer.max.size` (KIP-848).
    pub group_consumer_max_size: i32,
    /// `group.consumer.assignors` as short names (`uniform`, `range`); the first is the default.
    pub group_consumer_assignors: Vec<String>,
    /// The `group.share.*` settings (KIP-932).
    pub group_share: GroupShareConfig,
    /// `share.coordinator.state.topic.*` and `share.coordinator.snapshot.update.records.per.snapshot`:
    /// how `__share_group_state` is created and written (KIP-932).
    pub share_coordinator_state_topic_num_partitions: i32,
    pub share_coordinator_state_topic_replication_factor: i16,
    /// The topic's `min.insync.replicas`, capped at its replication factor as the
    /// transaction log's is.
    pub share_coordinator_state_topic_min_isr: i16,
    pub share_coordinator_state_topic_segment_bytes: i32,
    pub share_coordinator_snapshot_update_records_per_snapshot: i32,
    pub share_coordinator_state_topic_prune_interval_ms: i32,
    pub transaction_state_log_num_partitions: i32,
    pub transaction_state_log_replication_factor: i16,
    /// `transaction.state.log.min.isr`: the `min.insync.replicas` the transaction log is
    /// created with (capped at its replication factor, see `find_coordinator`).
    pub transaction_state_log_min_isr: i32,
    pub transaction_max_timeout_ms: i32,
    /// KIP-890 part 1: a partition leader asks the transaction coordinator before a
    /// transactional producer's first write to it (dynamic).
    pub transaction_partition_verification_enable: bool,
    pub transactional_id_expiration_ms: i32,
    pub producer_id_expiration_ms: i32,
    pub replica_lag_time_max_ms: i64,
    /// How often the replicas' high watermarks go to `replication-offset-checkpoint`.
    pub replica_high_watermark_checkpoint_interval_ms: i64,
    /// How often a broker heartbeats to the active controller (KRaft).
    pub broker_heartbeat_interval_ms: i32,
    /// How long the controller waits for a heartbeat before fencing a broker.
    pub broker_session_timeout_ms: i32,
    /// `strata.admin.listeners`: where /metrics and the health probes are served (empty: off).
    pub admin_listeners: Vec<super::admin::AdminListener>,
    /// `strata.metrics.max.partition.series`: the most per-partition series one scrape shows.
    pub metrics_max_partition_series: i32,
    /// `delegation.token.*` (KIP-48): the secret (or the deprecated master key), lifetimes
    /// and the controller's expiry sweep interval.
    pub delegation_tokens: super::delegation_tokens::TokenSettings,
    /// Known keys as set in the file or by overrides (raw text), for DescribeConfigs.
    pub static_configs: BTreeMap<String, String>,
    /// Every key as given (file and overrides, known or not): dynamic configs are resolved
    /// over these, as Kafka rebuilds its `KafkaConfig` from the static props.
    pub given_props: BTreeMap<String, String>,
}

impl Default for BrokerConfig {
    fn default() -> Self {
        // The built-in defaults are checked by a test; they cannot fail at runtime.
        match BrokerConfig::from_props(&BTreeMap::new()) {
            Ok((config, _)) => config,
            Err(e) => unreachable!("built-in broker defaults are invalid: {e}"),
        }
    }
}

/// Typed look-ups over the merged properties, falling back to registry defaults.
struct Props<'a>(&'a BTreeMap<String, String>);

impl Props<'_> {
    fn value(&self, name: &str) -> Result<Option<ConfigValue>, ConfigError> {
        let def =
            broker_def(name).ok_or_else(|| ConfigError::UnknownConfig { key: name.into() })?;
        match self.0.get(name).map(String::as_str).or(def.default) {
            None => Ok(None),
            Some(raw) => def.parse(raw).map(Some),
        }
    }

    fn missing(name: &str) -> ConfigError {
        ConfigError::invalid(name, "", "Missing required configuration")
    }

    fn opt_int(&self, name: &str) -> Result<Option<i32>, ConfigError> {
        Ok(match self.value(name)? {
            Some(ConfigValue::Int(v)) => Some(v),
            _ => None,
        })
    }
    fn int(&self, name: &str) -> Result<i32, ConfigError> {
        self.opt_int(name)?.ok_or_else(|| Self::missing(name))
    }
    fn short(&self, name: &str) -> Result<i16, ConfigError> {
        match self.value(name)? {
            Some(ConfigValue::Short(v)) => Ok(v),
            _ => Err(Self::missing(name)),
        }
    }
    fn opt_long(&self, name: &str) -> Result<Option<i64>, ConfigError> {
        Ok(match self.value(name)? {
            Some(ConfigValue::Long(v)) => Some(v),
            _ => None,
        })
    }
    fn long(&self, name: &str) -> Result<i64, ConfigError> {
        self.opt_long(name)?.ok_or_else(|| Self::missing(name))
    }
    fn boolean(&self, name: &str) -> Result<bool, ConfigError> {
        match self.value(name)? {
            Some(ConfigValue::Boolean(v)) => Ok(v),
            _ => Err(Self::missing(name)),
        }
    }
    fn double(&self, name: &str) -> Result<f64, ConfigError> {
        match self.value(name)? {
            Some(ConfigValue::Double(v)) => Ok(v),
            _ => Err(Self::missing(name)),
        }
    }
    fn opt_string(&self, name: &str) -> Result<Option<String>, ConfigError> {
        Ok(match self.value(name)? {
            Some(ConfigValue::String(v)) => Some(v),
            _ => None,
        })
    }
    fn string(&self, name: &str) -> Result<String, ConfigError> {
        self.opt_string(name)?.ok_or_else(|| Self::missing(name))
    }
    fn opt_password(&self, name: &str) -> Result<Option<String>, ConfigError> {
        Ok(match self.value(name)? {
            Some(ConfigValue::Password(v)) => Some(v),
            _ => None,
        })
    }
    fn opt_list(&self, name: &str) -> Result<Option<Vec<String>>, ConfigError> {
        Ok(match self.value(name)? {
            Some(ConfigValue::List(v)) => Some(v),
            _ => None,
        })
    }
    fn raw(&self, name: &str) -> String {
        self.0.get(name).cloned().unwrap_or_default()
    }

    fn listeners(&self, name: &str) -> Result<Option<Vec<Listener>>, ConfigError> {
        let Some(items) = self.opt_list(name)? else {
            return Ok(None);
        };
        let mut out: Vec<Listener> = Vec::with_capacity(items.len());
        for item in items.iter().filter(|i| !i.is_empty()) {
            let l = Listener::parse(item).map_err(|why| ConfigError::invalid(name, item, why))?;
            if out.iter().any(|o| o.name == l.name) {
                return Err(ConfigError::invalid(
                    name,
                    item,
                    "Each listener must have a different name",
                ));
            }
            out.push(l);
        }
        Ok(Some(out))
    }
}

/// Multiplies a duration in coarse units, saturating instead of overflowing.
fn to_ms(value: i64, ms_per_unit: i64) -> i64 {
    value.saturating_mul(ms_per_unit)
}

impl BrokerConfig {
    /// Reads `server.properties` text (if any), then applies `key=value` overrides.
    pub fn load(
        properties_text: Option<&str>,
        overrides: &[String],
    ) -> Result<(BrokerConfig, Vec<ConfigWarning>), ConfigError> {
        let mut props = match properties_text {
            Some(text) => parse_properties(text)?,
            None => BTreeMap::new(),
        };
        for o in overrides {
            let (k, v) = o
                .split_once('=')
                .ok_or_else(|| ConfigError::InvalidOverride(o.clone()))?;
            let k = k.trim();
            if k.is_empty() {
                return Err(ConfigError::InvalidOverride(o.clone()));
            }
            props.insert(k.to_string(), v.to_string());
        }
        BrokerConfig::from_props(&props)
    }

    /// [`load`](Self::load) with the properties read from `path`.
    pub fn load_file(
        path: Option<&Path>,
        overrides: &[String],
    ) -> Result<(BrokerConfig, Vec<ConfigWarning>), ConfigError> {
        let text = match path {
            Some(p) => Some(std::fs::read_to_string(p).map_err(|e| ConfigError::Io {
                path: p.to_path_buf(),
                reason: e.to_string(),
            })?),
            None => None,
        };
        BrokerConfig::load(text.as_deref(), overrides)
    }

    /// Builds the typed config from merged properties (file and overrides already applied).
    pub fn from_props(
        props: &BTreeMap<String, String>,
    ) -> Result<(BrokerConfig, Vec<ConfigWarning>), ConfigError> {
        let mut warnings = Vec::new();
        let mut static_configs = BTreeMap::new();
        let mut listener_ssl_configs: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
        for (k, v) in props {
            if let Some(reason) = refused_setting(k, v) {
                return Err(ConfigError::Unsupported {
                    key: k.clone(),
                    value: v.clone(),
                    reason,
                });
            }
            if broker_def(k).is_some() {
                static_configs.insert(k.clone(), v.clone());
            } else if let Some((listener, key)) = listener_ssl_key(k) {
                listener_ssl_configs
                    .entry(listener)
                    .or_default()
                    .insert(key, v.clone());
            } else if super::sasl::handles(k) {
                // Read by config::sasl below.
            } else if IGNORED_KAFKA_KEYS.contains(&k.as_str()) || k.starts_with("listener.name.") {
                warnings.push(ConfigWarning::IgnoredKafkaKey(k.clone()));
            } else {
                warnings.push(ConfigWarning::UnknownKey(k.clone()));
            }
        }
        let p = Props(&static_configs);

        let node_id = match (
            static_configs.contains_key("node.id"),
            p.opt_int("broker.id")?,
        ) {
            (true, Some(b)) if b != p.int("node.id")? && b >= 0 => {
                return Err(ConfigError::Conflict {
                    reason: format!(
                        "broker.id ({b}) and node.id ({}) must match when both are set",
                        p.int("node.id")?
                    ),
                })
            }
            (false, Some(b)) if b >= 0 => b,
            _ => p.int("node.id")?,
        };

        let mut process_roles = Vec::new();
        for role in p.opt_list("process.roles")?.unwrap_or_default() {
            let r = if role == "broker" {
                ProcessRole::Broker
            } else {
                ProcessRole::Controller
            };
            if process_roles.contains(&r) {
                return Err(ConfigError::invalid(
                    "process.roles",
                    &p.raw("process.roles"),
                    "duplicate role",
                ));
            }
            process_roles.push(r);
        }
        if process_roles.is_empty() {
            return Err(ConfigError::invalid(
                "process.roles",
                &p.raw("process.roles"),
                "at least one role is required",
            ));
        }

        let listeners = p.listeners("listeners")?.unwrap_or_default();
        let advertised_listeners = p
            .listeners("advertised.listeners")?
            .unwrap_or_else(|| listeners.clone());
        let controller_listener_names = p
            .opt_string("controller.listener.names")?
            .map(|s| super::registry::split_list(&s))
            .unwrap_or_default();
        let listener_names: Vec<String> = listeners.iter().map(|l| l.name.clone()).collect();
        let listener_security_protocol_map = parse_protocol_map(
            &p.string("listener.security.protocol.map")?,
            static_configs.contains_key("listener.security.protocol.map"),
            &listener_names,
            &controller_listener_names,
        )?;
        check_listener_protocols(
            &listener_security_protocol_map,
            "listeners",
            &listener_names,
        )?;
        let advertised_names: Vec<String> = advertised_listeners
            .iter()
            .map(|l| l.name.clone())
            .collect();
        check_listener_protocols(
            &listener_security_protocol_map,
            "advertised.listeners",
            &advertised_names,
        )?;
        check_listener_protocols(
            &listener_security_protocol_map,
            "controller.listener.names",
            &controller_listener_names,
        )?;
        let inter_broker_listener_name = inter_broker_listener(
            &static_configs,
            &listener_names,
            process_roles.contains(&ProcessRole::Broker),
        )?;
        // The listener the peer client logs in to: Kafka's inter-broker listener, else (as
        // cluster start-up resolves it) the first listener that is not a controller one.
        let resolved_inter_broker = inter_broker_listener_name.clone().or_else(|| {
            listener_names
                .iter()
                .find(|n| {
                    !controller_listener_names
                        .iter()
                        .any(|c| c.eq_ignore_ascii_case(n))
                })
                .cloned()
        });
        let sasl = super::sasl::parse(
            props,
            &listener_security_protocol_map,
            &listener_names,
            &controller_listener_names,
            resolved_inter_broker.as_deref(),
        )?;
        let max_connections_per_ip_overrides =
            super::network::parse_per_ip_overrides(&p.string("max.connections.per.ip.overrides")?)?;
        super::network::check_network_settings(
            p.int("max.connections.per.ip")?,
            &max_connections_per_ip_overrides,
            p.long("queued.max.request.bytes")?,
            p.int("socket.request.max.bytes")?,
        )?;
        let mut controller_quorum_voters = Vec::new();
        for v in p.opt_list("controller.quorum.voters")?.unwrap_or_default() {
            controller_quorum_voters.push(
                QuorumVoter::parse(&v)
                    .map_err(|why| ConfigError::invalid("controller.quorum.voters", &v, why))?,
            );
        }

        let log_dirs: Vec<PathBuf> = match p.opt_list("log.dirs")? {
            Some(dirs) if !dirs.is_empty() => dirs.into_iter().map(PathBuf::from).collect(),
            _ => vec![PathBuf::from(p.string("log.dir")?)],
        };

        let log_retention_ms = match (
            p.opt_long("log.retention.ms")?,
            p.opt_int("log.retention.minutes")?,
            p.opt_int("log.retention.hours")?,
        ) {
            (Some(ms), _, _) => ms,
            (None, Some(min), _) => to_ms(min as i64, MS_PER_MINUTE),
            (None, None, Some(h)) => to_ms(h as i64, MS_PER_HOUR),
            (None, None, None) => -1,
        };
        // Kafka: any negative retention means "no time limit".
        let log_retention_ms = if log_retention_ms < 0 {
            -1
        } else {
            log_retention_ms
        };
        let log_roll_ms = match p.opt_long("log.roll.ms")? {
            Some(ms) => ms,
            None => to_ms(p.int("log.roll.hours")? as i64, MS_PER_HOUR),
        };
        let log_roll_jitter_ms = match p.opt_long("log.roll.jitter.ms")? {
            Some(ms) => ms,
            None => to_ms(p.int("log.roll.jitter.hours")? as i64, MS_PER_HOUR),
        };
        let log_flush_interval_ms = match p.opt_long("log.flush.interval.ms")? {
            Some(ms) => ms,
            None => p.long("log.flush.scheduler.interval.ms")?,
        };

        let group_min_session_timeout_ms = p.int("group.min.session.timeout.ms")?;
        let group_max_session_timeout_ms = p.int("group.max.session.timeout.ms")?;
        if group_max_session_timeout_ms < group_min_session_timeout_ms {
            return Err(ConfigError::Conflict {
                reason:
                    "group.max.session.timeout.ms must not be below group.min.session.timeout.ms"
                        .into(),
            });
        }
        let consumer_timings = consumer_group_timings(&p)?;
        let timestamp_type = p.string("log.message.timestamp.type")?;
        let compression = p.string("compression.type")?;

        let mut controller_quorum_bootstrap_servers = Vec::new();
        for s in p
            .opt_list("controller.quorum.bootstrap.servers")?
            .unwrap_or_default()
        {
            let s = s.trim();
            let valid = s
                .rsplit_once(':')
                .is_some_and(|(h, port)| !h.is_empty() && port.parse::<u16>().is_ok());
            if !valid {
                return Err(ConfigError::invalid(
                    "controller.quorum.bootstrap.servers",
                    s,
                    "expected host:port",
                ));
            }
            controller_quorum_bootstrap_servers.push(s.to_string());
        }

        let config = BrokerConfig {
            node_id,
            process_roles,
            listeners,
            advertised_listeners,
            controller_listener_names,
            controller_quorum_voters,
            controller_quorum_bootstrap_servers,
            log_dirs,
            num_partitions: p.int("num.partitions")?,
            default_replication_factor: p.int("default.replication.factor")?,
            auto_create_topics_enable: p.boolean("auto.create.topics.enable")?,
            delete_topic_enable: p.boolean("delete.topic.enable")?,
            authorizer_enabled: !p
                .opt_string("authorizer.class.name")?
                .unwrap_or_default()
                .trim()
                .is_empty(),
            super_users: super::security::parse_super_users(
                &p.opt_string("super.users")?.unwrap_or_default(),
            )?,
            allow_everyone_if_no_acl_found: p.boolean("allow.everyone.if.no.acl.found")?,
            message_max_bytes: p.int("message.max.bytes")?,
            socket_request_max_bytes: p.int("socket.request.max.bytes")?,
            socket_send_buffer_bytes: p.int("socket.send.buffer.bytes")?,
            socket_receive_buffer_bytes: p.int("socket.receive.buffer.bytes")?,
            max_connections: p.int("max.connections")?,
            queued_max_requests: p.int("queued.max.requests")?,
            max_request_partition_size_limit: p.int("max.request.partition.size.limit")?,
            queued_max_request_bytes: p.long("queued.max.request.bytes")?,
            connections_max_idle_ms: p.long("connections.max.idle.ms")?,
            max_connections_per_ip: p.int("max.connections.per.ip")?,
            max_connections_per_ip_overrides,
            request_read_timeout_ms: p.long("strata.request.read.timeout.ms")?,
            log_format: p.string("strata.log.format")?,
            log_durable_acks: p.boolean("strata.log.durable.acks")?,
            fetch_zero_copy: p.boolean("strata.fetch.zero.copy")?,
            quota_window_num: p.int("quota.window.num")?,
            quota_window_size_seconds: p.int("quota.window.size.seconds")?,
            controller_quota_window_num: p.int("controller.quota.window.num")?,
            controller_quota_window_size_seconds: p.int("controller.quota.window.size.seconds")?,
            listener_security_protocol_map,
            listener_ssl_configs,
            inter_broker_listener_name,
            sasl,
            max_inflight_requests_per_connection: p
                .int("strata.max.inflight.requests.per.connection")?,
            log_segment_bytes: p.int("log.segment.bytes")?,
            log_roll_ms,
            log_roll_jitter_ms,
            log_retention_ms,
            log_retention_bytes: p.long("log.retention.bytes")?,
            log_retention_check_interval_ms: p.long("log.retention.check.interval.ms")?,
            log_index_interval_bytes: p.int("log.index.interval.bytes")?,
            log_index_size_max_bytes: p.int("log.index.size.max.bytes")?,
            log_flush_interval_messages: p.long("log.flush.interval.messages")?,
            log_flush_interval_ms,
            log_message_timestamp_type: TimestampType::from_name(&timestamp_type).ok_or_else(
                || ConfigError::invalid("log.message.timestamp.type", &timestamp_type, "unknown"),
            )?,
            log_message_timestamp_before_max_ms: p.long("log.message.timestamp.before.max.ms")?,
            log_message_timestamp_after_max_ms: p.long("log.message.timestamp.after.max.ms")?,
            log_cleanup_policy: CleanupPolicy::from_list(
                &p.opt_list("log.cleanup.policy")?.unwrap_or_default(),
            ),
            log_cleaner_enable: p.boolean("log.cleaner.enable")?,
            log_cleaner_delete_retention_ms: p.long("log.cleaner.delete.retention.ms")?,
            log_cleaner_min_compaction_lag_ms: p.long("log.cleaner.min.compaction.lag.ms")?,
            log_cleaner_max_compaction_lag_ms: p.long("log.cleaner.max.compaction.lag.ms")?,
            log_cleaner_min_cleanable_ratio: p.double("log.cleaner.min.cleanable.ratio")?,
            log_cleaner_backoff_ms: p.long("log.cleaner.backoff.ms")?,
            log_cleaner_io_max_bytes_per_second: p.double("log.cleaner.io.max.bytes.per.second")?,
            log_segment_delete_delay_ms: p.long("log.segment.delete.delay.ms")?,
            log_preallocate: p.boolean("log.preallocate")?,
            min_insync_replicas: p.int("min.insync.replicas")?,
            compression_type: CompressionType::from_name(&compression)
                .ok_or_else(|| ConfigError::invalid("compression.type", &compression, "unknown"))?,
            unclean_leader_election_enable: p.boolean("unclean.leader.election.enable")?,
            offsets_topic_num_partitions: p.int("offsets.topic.num.partitions")?,
            offsets_topic_replication_factor: p.short("offsets.topic.replication.factor")?,
            offsets_topic_segment_bytes: p.int("offsets.topic.segment.bytes")?,
            offsets_retention_ms: to_ms(p.int("offsets.retention.minutes")? as i64, MS_PER_MINUTE),
            group_initial_rebalance_delay_ms: p.int("group.initial.rebalance.delay.ms")?,
            group_min_session_timeout_ms,
            group_max_session_timeout_ms,
            group_max_size: p.int("group.max.size")?,
            group_consumer_session_timeout_ms: consumer_timings[0],
            group_consumer_min_session_timeout_ms: consumer_timings[1],
            group_consumer_max_session_timeout_ms: consumer_timings[2],
            group_consumer_heartbeat_interval_ms: consumer_timings[3],
            group_consumer_min_heartbeat_interval_ms: consumer_timings[4],
            group_consumer_max_heartbeat_interval_ms: consumer_timings[5],
            group_consumer_max_size: p.int("group.consumer.max.size")?,
            group_consumer_assignors: consumer_assignors(
                &p.opt_list("group.consumer.assignors")?.unwrap_or_default(),
            )?,
            group_share: group_share_config(&p)?,
            share_coordinator_state_topic_num_partitions: p
                .int("share.coordinator.state.topic.num.partitions")?,
            share_coordinator_state_topic_replication_factor: p
                .short("share.coordinator.state.topic.replication.factor")?,
            share_coordinator_state_topic_min_isr: p
                .short("share.coordinator.state.topic.min.isr")?,
            share_coordinator_state_topic_segment_bytes: p
                .int("share.coordinator.state.topic.segment.bytes")?,
            share_coordinator_snapshot_update_records_per_snapshot: p
                .int("share.coordinator.snapshot.update.records.per.snapshot")?,
            share_coordinator_state_topic_prune_interval_ms: p
                .int("share.coordinator.state.topic.prune.interval.ms")?,
            transaction_state_log_num_partitions: p.int("transaction.state.log.num.partitions")?,
            transaction_state_log_replication_factor: p
                .short("transaction.state.log.replication.factor")?,
            transaction_state_log_min_isr: p.int("transaction.state.log.min.isr")?,
            transaction_max_timeout_ms: p.int("transaction.max.timeout.ms")?,
            transaction_partition_verification_enable: p
                .boolean("transaction.partition.verification.enable")?,
            transactional_id_expiration_ms: p.int("transactional.id.expiration.ms")?,
            producer_id_expiration_ms: p.int("producer.id.expiration.ms")?,
            replica_lag_time_max_ms: p.long("replica.lag.time.max.ms")?,
            replica_high_watermark_checkpoint_interval_ms: p
                .long("replica.high.watermark.checkpoint.interval.ms")?,
            broker_heartbeat_interval_ms: p.int("broker.heartbeat.interval.ms")?,
            broker_session_timeout_ms: p.int("broker.session.timeout.ms")?,
            admin_listeners: super::admin::parse_admin_listeners(
                &p.opt_list("strata.admin.listeners")?
                    .unwrap_or_default()
                    .join(","),
            )?,
            metrics_max_partition_series: p.int("strata.metrics.max.partition.series")?,
            delegation_tokens: super::delegation_tokens::TokenSettings {
                // Kafka: the secret key, else the deprecated master key; empty disables.
                secret_key: p
                    .opt_password("delegation.token.secret.key")?
                    .filter(|s| !s.is_empty())
                    .or(p.opt_password("delegation.token.master.key")?)
                    .filter(|s| !s.is_empty()),
                max_lifetime_ms: p.long("delegation.token.max.lifetime.ms")?,
                expiry_time_ms: p.long("delegation.token.expiry.time.ms")?,
                expiry_check_interval_ms: p.long("delegation.token.expiry.check.interval.ms")?,
            },
            static_configs,
            given_props: props.clone(),
        };
        Ok((config, warnings))
    }
}

#[cfg(test)]
#[path = "broker_tests.rs"]
mod tests;

#[path = "broker_groups.rs"]
mod groups;
pub use groups::GroupShareConfig;
use groups::{consumer_assignors, consumer_group_timings, group_share_config};

/// `listener.name.<listener>.ssl.<rest>` as (LISTENER, `ssl.<rest>`).
fn listener_ssl_key(key: &str) -> Option<(String, String)> {
    let rest = key.strip_prefix("listener.name.")?;
    let (listener, inner) = rest.split_once('.')?;
    if listener.is_empty() || !inner.starts_with("ssl.") {
        return None;
    }
    Some((listener.to_ascii_uppercase(), inner.to_string()))
}

/// Kafka's inter-broker listener: `inter.broker.listener.name`, or the listener named after
/// `security.inter.broker.protocol`; not both. A broker must have that listener.
fn inter_broker_listener(
    static_configs: &BTreeMap<String, String>,
    listener_names: &[String],
    is_broker: bool,
) -> Result<Option<String>, ConfigError> {
    let name = static_configs
        .get("inter.broker.listener.name")
        .map(|s| s.trim())
        .filter(|s| !s.is_empty());
    let protocol = static_configs
        .get("security.inter.broker.protocol")
        .map(|s| s.trim())
        .filter(|s| !s.is_empty());
    let chosen = match (name, protocol) {
        (Some(_), Some(_)) => {
            return Err(ConfigError::Conflict {
                reason: "Only one of inter.broker.listener.name and \
                         security.inter.broker.protocol should be set."
                    .into(),
            })
        }
        (Some(n), None) => n.to_ascii_uppercase(),
        (None, Some(p)) => match SecurityProtocol::from_name(p) {
            Some(p) => p.name().to_string(),
            None => {
                return Err(ConfigError::invalid(
                    "security.inter.broker.protocol",
                    p,
                    "unknown security protocol",
                ))
            }
        },
        (None, None) => return Ok(None),
    };
    if is_broker && !listener_names.contains(&chosen) {
        return Err(ConfigError::Conflict {
            reason: format!(
                "inter-broker listener {chosen} (inter.broker.listener.name or \
                 security.inter.broker.protocol) must be one of the listeners"
            ),
        });
    }
    Ok(Some(chosen))
}
