//! The broker's group-coordinator settings (the `group.consumer.*` and `group.share.*` keys
//! of Kafka's `GroupCoordinatorConfig` and `ShareGroupConfig`), read and checked at start-up
//! with Kafka's bounds and messages. A group's own dynamic configs (`config::group`) apply
//! over them.
use super::Props;
use crate::config::ConfigError;

/// The broker's share-group settings (Kafka's `ShareGroupConfig` and the `group.share.*`
/// keys of `GroupCoordinatorConfig`); a group's own `share.*` configs apply over them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupShareConfig {
    /// `group.share.enable`: share groups served even while `share.version` is 0.
    pub enable: bool,
    pub max_size: i32,
    pub session_timeout_ms: i32,
    pub min_session_timeout_ms: i32,
    pub max_session_timeout_ms: i32,
    pub heartbeat_interval_ms: i32,
    pub min_heartbeat_interval_ms: i32,
    pub max_heartbeat_interval_ms: i32,
    pub record_lock_duration_ms: i32,
    pub min_record_lock_duration_ms: i32,
    pub max_record_lock_duration_ms: i32,
    pub delivery_count_limit: i32,
    pub partition_max_record_locks: i32,
    pub max_share_sessions: i32,
}

/// Reads and checks them as Kafka does (its `between` bounds, then min <= value <= max and a
/// heartbeat shorter than the session).
pub(super) fn group_share_config(p: &Props) -> Result<GroupShareConfig, ConfigError> {
    let c = GroupShareConfig {
        enable: p.boolean("group.share.enable")?,
        max_size: p.int("group.share.max.size")?,
        session_timeout_ms: p.int("group.share.session.timeout.ms")?,
        min_session_timeout_ms: p.int("group.share.min.session.timeout.ms")?,
        max_session_timeout_ms: p.int("group.share.max.session.timeout.ms")?,
        heartbeat_interval_ms: p.int("group.share.heartbeat.interval.ms")?,
        min_heartbeat_interval_ms: p.int("group.share.min.heartbeat.interval.ms")?,
        max_heartbeat_interval_ms: p.int("group.share.max.heartbeat.interval.ms")?,
        record_lock_duration_ms: p.int("group.share.record.lock.duration.ms")?,
        min_record_lock_duration_ms: p.int("group.share.min.record.lock.duration.ms")?,
        max_record_lock_duration_ms: p.int("group.share.max.record.lock.duration.ms")?,
        delivery_count_limit: p.int("group.share.delivery.count.limit")?,
        partition_max_record_locks: p.int("group.share.partition.max.record.locks")?,
        max_share_sessions: p.int("group.share.max.share.sessions")?,
    };
    let bounded = [
        (
            "group.share.delivery.count.limit",
            c.delivery_count_limit,
            2,
            10,
        ),
        (
            "group.share.record.lock.duration.ms",
            c.record_lock_duration_ms,
            1_000,
            3_600_000,
        ),
        (
            "group.share.min.record.lock.duration.ms",
            c.min_record_lock_duration_ms,
            1_000,
            30_000,
        ),
        (
            "group.share.max.record.lock.duration.ms",
            c.max_record_lock_duration_ms,
            30_000,
            3_600_000,
        ),
        (
            "group.share.partition.max.record.locks",
            c.partition_max_record_locks,
            100,
            10_000,
        ),
    ];
    for (key, value, low, high) in bounded {
        if value < low || value > high {
            return Err(ConfigError::invalid(
                key,
                &value.to_string(),
                format!("Value must be no less than {low} and no more than {high}"),
            ));
        }
    }
    let rules = [
        (c.record_lock_duration_ms >= c.min_record_lock_duration_ms, "group.share.record.lock.duration.ms must be greater than or equal to group.share.min.record.lock.duration.ms"),
        (c.record_lock_duration_ms <= c.max_record_lock_duration_ms, "group.share.record.lock.duration.ms must be less than or equal to group.share.max.record.lock.duration.ms"),
        (c.max_heartbeat_interval_ms >= c.min_heartbeat_interval_ms, "group.share.max.heartbeat.interval.ms must be greater than or equal to group.share.min.heartbeat.interval.ms"),
        (c.heartbeat_interval_ms >= c.min_heartbeat_interval_ms, "group.share.heartbeat.interval.ms must be greater than or equal to group.share.min.heartbeat.interval.ms"),
        (c.heartbeat_interval_ms <= c.max_heartbeat_interval_ms, "group.share.heartbeat.interval.ms must be less than or equal to group.share.max.heartbeat.interval.ms"),
        (c.max_session_timeout_ms >= c.min_session_timeout_ms, "group.share.max.session.timeout.ms must be greater than or equal to group.share.min.session.timeout.ms"),
        (c.session_timeout_ms >= c.min_session_timeout_ms, "group.share.session.timeout.ms must be greater than or equal to group.share.min.session.timeout.ms"),
        (c.session_timeout_ms <= c.max_session_timeout_ms, "group.share.session.timeout.ms must be less than or equal to group.share.max.session.timeout.ms"),
        (c.heartbeat_interval_ms < c.session_timeout_ms, "group.share.heartbeat.interval.ms must be less than group.share.session.timeout.ms"),
    ];
    match rules.iter().find(|(ok, _)| !ok) {
        Some((_, reason)) => Err(ConfigError::Conflict {
            reason: reason.to_string(),
        }),
        None => Ok(c),
    }
}

/// The KIP-848 session timeout and heartbeat interval with their bounds, checked as Kafka's
/// `GroupCoordinatorConfig` does at start-up: [session, min, max, heartbeat, min, max].
pub(super) fn consumer_group_timings(p: &Props) -> Result<[i32; 6], ConfigError> {
    let v = [
        p.int("group.consumer.session.timeout.ms")?,
        p.int("group.consumer.min.session.timeout.ms")?,
        p.int("group.consumer.max.session.timeout.ms")?,
        p.int("group.consumer.heartbeat.interval.ms")?,
        p.int("group.consumer.min.heartbeat.interval.ms")?,
        p.int("group.consumer.max.heartbeat.interval.ms")?,
    ];
    let rules = [
        (v[5] >= v[4], "group.consumer.max.heartbeat.interval.ms must be greater than or equal to group.consumer.min.heartbeat.interval.ms"),
        (v[3] >= v[4], "group.consumer.heartbeat.interval.ms must be greater than or equal to group.consumer.min.heartbeat.interval.ms"),
        (v[3] <= v[5], "group.consumer.heartbeat.interval.ms must be less than or equal to group.consumer.max.heartbeat.interval.ms"),
        (v[2] >= v[1], "group.consumer.max.session.timeout.ms must be greater than or equal to group.consumer.min.session.timeout.ms"),
        (v[0] >= v[1], "group.consumer.session.timeout.ms must be greater than or equal to group.consumer.min.session.timeout.ms"),
        (v[0] <= v[2], "group.consumer.session.timeout.ms must be less than or equal to group.consumer.max.session.timeout.ms"),
        (v[3] < v[0], "group.consumer.heartbeat.interval.ms must be less than group.consumer.session.timeout.ms"),
    ];
    match rules.iter().find(|(ok, _)| !ok) {
        Some((_, reason)) => Err(ConfigError::Conflict {
            reason: reason.to_string(),
        }),
        None => Ok(v),
    }
}

/// Maps `group.consumer.assignors` entries (short names or Kafka's built-in class names) to
/// the short names the coordinator knows; anything else is refused.
pub(super) fn consumer_assignors(items: &[String]) -> Result<Vec<String>, ConfigError> {
    let mut out = Vec::new();
    for item in items.iter().map(|i| i.trim()).filter(|i| !i.is_empty()) {
        let name = match item {
            "uniform" | "org.apache.kafka.coordinator.group.assignor.UniformAssignor" => "uniform",
            "range" | "org.apache.kafka.coordinator.group.assignor.RangeAssignor" => "range",
            other => {
                return Err(ConfigError::invalid(
                    "group.consumer.assignors",
                    other,
                    "unknown assignor (Strata has uniform and range)",
                ))
            }
        };
        if !out.iter().any(|o| o == name) {
            out.push(name.to_string());
        }
    }
    if out.is_empty() {
        return Err(ConfigError::invalid(
            "group.consumer.assignors",
            "",
            "at least one assignor is required",
        ));
    }
    Ok(out)
}
