//! The process's log output and its log levels at runtime (Kafka's `Log4jController` and
//! `RuntimeLoggerManager`, which serve the BROKER_LOGGER resource of DescribeConfigs and
//! IncrementalAlterConfigs).
//!
//! [`init`] installs the `tracing` subscriber: plain text, without ANSI colours unless the
//! output is a terminal (and `NO_COLOR` is unset), or one JSON object per line
//! (`--log-format json` / `strata.log.format=json`). Its level filter sits behind a reload
//! handle, so [`LogLevels::set`] changes what is logged at once, as Kafka's log4j levels do.
//!
//! Loggers are `tracing` targets named with dots as Kafka's loggers are (`strata.storage` is
//! the target `strata::storage`; `kafka-configs` accepts only `[a-zA-Z0-9._-]` in keys, and
//! the `::` form is accepted too); `root` is the level of everything else. Levels use Kafka's names (TRACE, DEBUG, INFO, WARN, ERROR, FATAL, OFF;
//! FATAL logs as ERROR, tracing has nothing above it).
//!
//! [`admit_line`] rate-limits the lines a client can cause at will (a refused connection, a
//! failed authentication or TLS handshake): one line per kind and source address per
//! [`LINE_INTERVAL`], the next one saying how many were suppressed meanwhile, so a flood from
//! one address cannot fill the disk while every new source is still seen at once.
//!
//! A leaf: it depends on no other module.
use std::collections::{BTreeMap, HashMap};
use std::io::IsTerminal;
use std::net::{IpAddr, Ipv4Addr};
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use tokio::time::Instant;

use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{reload, EnvFilter};

/// The root logger's name, as Kafka's.
pub const ROOT_LOGGER: &str = "root";

/// Kafka's `LogLevelConfig.VALID_LOG_LEVELS`, sorted as its messages list them.
pub const VALID_LOG_LEVELS: &[&str] = &["DEBUG", "ERROR", "FATAL", "INFO", "OFF", "TRACE", "WARN"];

/// The filter when `STRATA_LOG` is unset: openraft narrates every election at info.
pub const DEFAULT_FILTER: &str = "info,openraft=warn";

/// Loggers listed even when no level is set on them: Strata's own modules.
const KNOWN_LOGGERS: &[&str] = &[
    "openraft",
    "strata::cluster",
    "strata::controller",
    "strata::coordinator",
    "strata::handlers",
    "strata::net",
    "strata::replica",
    "strata::security",
    "strata::server",
    "strata::storage",
];

/// How log lines are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LogFormat {
    #[default]
    Text,
    /// One JSON object per line (timestamp, level, fields, target).
    Json,
}

impl LogFormat {
    pub fn from_name(name: &str) -> Option<LogFormat> {
        match name.trim().to_ascii_lowercase().as_str() {
            "text" => Some(LogFormat::Text),
            "json" => Some(LogFormat::Json),
            _ => None,
        }
    }
}

/// Why a log level change was refused: Kafka's error kind and message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LoggerError {
    /// INVALID_CONFIG in Kafka.
    InvalidConfig(String),
    /// INVALID_REQUEST in Kafka.
    InvalidRequest(String),
}

type Reload = Box<dyn Fn(&str) -> Result<(), String> + Send + Sync>;

/// The log levels of this process.
pub struct LogLevels {
    state: Mutex<Levels>,
    reload: OnceLock<Reload>,
}

#[derive(Debug, Clone)]
struct Levels {
    /// Kafka's level name of the root logger.
    root: String,
    /// Logger (target) to its Kafka level name.
    loggers: BTreeMap<String, String>,
    /// Directives of the start-up filter that are not `target=level` (span or field
    /// filters): kept as they are.
    other: Vec<String>,
}

impl Levels {
    fn parse(filter: &str) -> Levels {
        let mut levels = Levels {
            root: "INFO".into(),
            loggers: BTreeMap::new(),
            other: Vec::new(),
        };
        for directive in filter.split(',').map(str::trim).filter(|d| !d.is_empty()) {
            match directive.split_once('=') {
                None if kafka_level(directive).is_some() => {
                    levels.root = directive.to_ascii_uppercase();
                }
                Some((target, level)) if valid_logger(target) && kafka_level(level).is_some() => {
                    levels
                        .loggers
                        .insert(target.to_string(), level.to_ascii_uppercase());
                }
                _ => levels.other.push(directive.to_string()),
            }
        }
        levels
    }

    /// The `EnvFilter` directives for these levels.
    fn filter(&self) -> String {
        let mut parts = vec![tracing_level(&self.root).to_string()];
        parts.extend(
            self.loggers
                .iter()
                .map(|(t, l)| format!("{t}={}", tracing_level(l))),
        );
        parts.extend(self.other.iter().cloned());
        parts.join(",")
    }

    /// A logger's level: its own, else its closest ancestor's, else the root's (log4j's
    /// inheritance).
    fn effective(&self, logger: &str) -> String {
        let mut name = logger;
        loop {
            if let Some(level) = self.loggers.get(name) {
                return level.clone();
            }
            match name.rsplit_once("::") {
                Some((parent, _)) => name = parent,
                None => return self.root.clone(),
            }
        }
    }
}

/// A level name as Kafka spells it, if valid (case-insensitive, as log4j's `Level.toLevel`).
fn kafka_level(level: &str) -> Option<&'static str> {
    let upper = level.trim().to_ascii_uppercase();
    VALID_LOG_LEVELS.iter().copied().find(|l| *l == upper)
}

fn tracing_level(kafka: &str) -> &'static str {
    match kafka {
        "TRACE" => "trace",
        "DEBUG" => "debug",
        "WARN" => "warn",
        "ERROR" | "FATAL" => "error",
        "OFF" => "off",
        _ => "info",
    }
}

/// A logger name as its `tracing` target: `strata.storage` -> `strata::storage`.
fn target_of(logger: &str) -> String {
    logger.replace('.', "::")
}

/// A target as a logger name: `strata::storage` -> `strata.storage`.
fn logger_of(target: &str) -> String {
    target.replace("::", ".")
}

/// Whether `name` can name a `tracing` target: `ident(::ident)*`.
fn valid_logger(name: &str) -> bool {
    !name.is_empty()
        && name.split("::").all(|part| {
            part.chars()
                .next()
                .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
                && part.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        })
}

impl LogLevels {
    fn new(filter: &str) -> LogLevels {
        LogLevels {
            state: Mutex::new(Levels::parse(filter)),
            reload: OnceLock::new(),
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, Levels> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Every logger with its effective level: `root` first, then by name.
    pub fn loggers(&self) -> Vec<(String, String)> {
        let state = self.state();
        let mut names: Vec<String> = KNOWN_LOGGERS.iter().map(|s| s.to_string()).collect();
        names.extend(state.loggers.keys().cloned());
        names.sort();
        names.dedup();
        let mut out = vec![(ROOT_LOGGER.to_string(), state.root.clone())];
        out.extend(names.into_iter().map(|n| {
            let level = state.effective(&n);
            (logger_of(&n), level)
        }));
        out
    }

    /// Kafka's `validateLogLevelConfigs` for a SET.
    pub fn check_set(&self, logger: &str, level: Option<&str>) -> Result<(), LoggerError> {
        check_exists(logger)?;
        match level.and_then(kafka_level) {
            Some(_) => Ok(()),
            None => Err(LoggerError::InvalidConfig(format!(
                "Cannot set the log level of {logger} to {} as it is not a supported log \
                 level. Valid log levels are {}",
                level.unwrap_or("null"),
                VALID_LOG_LEVELS.join(", ")
            ))),
        }
    }

    /// Kafka's `validateLogLevelConfigs` for a DELETE.
    pub fn check_unset(&self, logger: &str) -> Result<(), LoggerError> {
        check_exists(logger)?;
        if logger == ROOT_LOGGER {
            return Err(LoggerError::InvalidRequest(format!(
                "Removing the log level of the {ROOT_LOGGER} logger is not allowed"
            )));
        }
        Ok(())
    }

    /// Sets a logger's level (checked with [`check_set`](Self::check_set) first).
    pub fn set(&self, logger: &str, level: &str) {
        let Some(level) = kafka_level(level) else {
            return;
        };
        {
            let mut state = self.state();
            if logger == ROOT_LOGGER {
                state.root = level.to_string();
            } else {
                state.loggers.insert(target_of(logger), level.to_string());
            }
        }
        self.apply();
        tracing::warn!("Updated the log level of {logger} to {level}");
    }

    /// Removes a logger's own level: it inherits again.
    pub fn unset(&self, logger: &str) {
        self.state().loggers.remove(&target_of(logger));
        self.apply();
        tracing::warn!("Unset the log level of {logger}");
    }

    fn apply(&self) {
        let filter = self.state().filter();
        if let Some(reload) = self.reload.get() {
            if let Err(e) = reload(&filter) {
                tracing::error!(error = %e, "could not apply the log levels");
            }
        }
    }
}

fn check_exists(logger: &str) -> Result<(), LoggerError> {
    if logger == ROOT_LOGGER || valid_logger(&target_of(logger)) {
        Ok(())
    } else {
        Err(LoggerError::InvalidConfig(format!(
            "Logger {logger} does not exist!"
        )))
    }
}

static LEVELS: OnceLock<LogLevels> = OnceLock::new();

/// The process's log levels (the default filter until [`init`] runs, e.g. in tests).
pub fn levels() -> &'static LogLevels {
    LEVELS.get_or_init(|| LogLevels::new(DEFAULT_FILTER))
}

/// Installs the subscriber: `filter` (EnvFilter syntax, from `STRATA_LOG`) behind a reload
/// handle, text or JSON lines on stdout, colours only on a terminal without `NO_COLOR`.
pub fn init(format: LogFormat, filter: &str) {
    let levels = LEVELS.get_or_init(|| LogLevels::new(filter));
    let env_filter = EnvFilter::try_new(levels.state().filter())
        .unwrap_or_else(|_| EnvFilter::new(DEFAULT_FILTER));
    let (filter_layer, handle) = reload::Layer::new(env_filter);
    let _ = levels.reload.set(Box::new(move |directives: &str| {
        let f = EnvFilter::try_new(directives).map_err(|e| e.to_string())?;
        handle.reload(f).map_err(|e| e.to_string())
    }));
    let ansi = std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none();
    let registry = tracing_subscriber::registry().with(filter_layer);
    let _ = match format {
        LogFormat::Text => registry
            .with(
                tracing_subscriber::fmt::layer()
                    .with_target(false)
                    .with_ansi(ansi),
            )
            .try_init(),
        LogFormat::Json => registry
            .with(tracing_subscriber::fmt::layer().json().with_ansi(false))
            .try_init(),
    };
}

/// What a rate-limited line reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LineKind {
    /// A connection refused by a connection limit.
    RejectedConnection,
    /// A SASL authentication that failed.
    FailedAuthentication,
    /// A TLS handshake that failed or timed out.
    FailedTlsHandshake,
}

/// At most one line per kind and source in this interval.
pub const LINE_INTERVAL: Duration = Duration::from_secs(10);
/// Sources tracked at most; beyond, the rest share one entry.
pub const MAX_TRACKED_SOURCES: usize = 10_000;

/// Per-source line limiter: when a line may be logged, and how many were suppressed.
pub struct SourceRateLimit {
    interval: Duration,
    max_sources: usize,
    /// (kind, source) -> (when its last line was logged, lines suppressed since).
    sources: Mutex<HashMap<(LineKind, IpAddr), (Instant, u64)>>,
}

impl SourceRateLimit {
    pub fn new(interval: Duration, max_sources: usize) -> SourceRateLimit {
        SourceRateLimit {
            interval,
            max_sources,
            sources: Mutex::new(HashMap::new()),
        }
    }

    /// Whether a line about `source` may be logged at `now`; if so, the number of lines
    /// suppressed for it since its last one.
    pub fn admit(&self, kind: LineKind, source: IpAddr, now: Instant) -> Option<u64> {
        let mut sources = self.sources.lock().unwrap_or_else(|p| p.into_inner());
        let mut key = (kind, source);
        if !sources.contains_key(&key) && sources.len() >= self.max_sources {
            let interval = self.interval;
            sources.retain(|_, (last, suppressed)| {
                now.duration_since(*last) < interval || *suppressed > 0
            });
            if sources.len() >= self.max_sources {
                key = (kind, IpAddr::V4(Ipv4Addr::UNSPECIFIED));
            }
        }
        match sources.get_mut(&key) {
            Some((last, suppressed)) if now.duration_since(*last) < self.interval => {
                *suppressed += 1;
                None
            }
            Some((last, suppressed)) => {
                *last = now;
                Some(std::mem::take(suppressed))
            }
            None => {
                sources.insert(key, (now, 0));
                Some(0)
            }
        }
    }
}

/// The process-wide limiter of [`LineKind`] lines.
pub fn admit_line(kind: LineKind, source: IpAddr) -> Option<u64> {
    static LIMIT: OnceLock<SourceRateLimit> = OnceLock::new();
    LIMIT
        .get_or_init(|| SourceRateLimit::new(LINE_INTERVAL, MAX_TRACKED_SOURCES))
        .admit(kind, source, Instant::now())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_line_per_source_and_interval_with_the_suppressed_count() {
        let limit = SourceRateLimit::new(Duration::from_secs(10), 2);
        let t0 = Instant::now();
        let a: IpAddr = "10.0.0.1".parse().unwrap();
        let b: IpAddr = "10.0.0.2".parse().unwrap();
        let kind = LineKind::FailedAuthentication;
        assert_eq!(limit.admit(kind, a, t0), Some(0));
        let flood = (0..50)
            .filter(|_| limit.admit(kind, a, t0).is_some())
            .count();
        assert_eq!(flood, 0);
        // Another source, or another kind of line, is not held back by the flood.
        assert_eq!(limit.admit(kind, b, t0), Some(0));
        assert_eq!(limit.admit(LineKind::RejectedConnection, a, t0), Some(0));
        let later = t0 + Duration::from_secs(10);
        assert_eq!(limit.admit(kind, a, later), Some(50));
        assert_eq!(limit.admit(kind, a, later), None);
        // Past the tracked-source cap, new sources share one entry: still bounded.
        let c: IpAddr = "10.0.0.3".parse().unwrap();
        let d: IpAddr = "10.0.0.4".parse().unwrap();
        assert_eq!(limit.admit(LineKind::FailedTlsHandshake, c, t0), Some(0));
        assert_eq!(limit.admit(LineKind::FailedTlsHandshake, d, t0), None);
        assert!(limit.sources.lock().unwrap().len() <= 5);
    }

    #[test]
    fn levels_parse_inherit_and_render() {
        let mut l = Levels::parse("warn,openraft=error,strata::storage=debug,[span]=trace");
        assert_eq!(l.root, "WARN");
        assert_eq!(l.effective("strata::storage::log"), "DEBUG");
        assert_eq!(l.effective("strata::server"), "WARN");
        assert_eq!(l.other, vec!["[span]=trace".to_string()]);
        l.loggers.insert("strata::server".into(), "FATAL".into());
        assert_eq!(
            l.filter(),
            "warn,openraft=error,strata::server=error,strata::storage=debug,[span]=trace"
        );
    }

    #[test]
    fn kafka_messages_for_bad_changes() {
        let l = LogLevels::new(DEFAULT_FILTER);
        assert_eq!(l.check_set("strata.server", Some("debug")), Ok(()));
        assert_eq!(l.check_set("strata::server", Some("debug")), Ok(()));
        assert_eq!(
            l.check_set("strata.server", Some("LOUD")),
            Err(LoggerError::InvalidConfig(
                "Cannot set the log level of strata.server to LOUD as it is not a supported \
                 log level. Valid log levels are DEBUG, ERROR, FATAL, INFO, OFF, TRACE, WARN"
                    .into()
            ))
        );
        assert_eq!(
            l.check_set("kafka-server", Some("INFO")),
            Err(LoggerError::InvalidConfig(
                "Logger kafka-server does not exist!".into()
            ))
        );
        assert_eq!(
            l.check_unset("root"),
            Err(LoggerError::InvalidRequest(
                "Removing the log level of the root logger is not allowed".into()
            ))
        );
        l.set("strata.net", "trace");
        assert_eq!(l.state().filter(), "info,openraft=warn,strata::net=trace");
        let all = l.loggers();
        assert_eq!(all[0], ("root".to_string(), "INFO".to_string()));
        assert!(all.contains(&("strata.net".to_string(), "TRACE".to_string())));
        assert!(all.contains(&("openraft".to_string(), "WARN".to_string())));
        l.unset("strata.net");
        let back = ("strata.net".to_string(), "INFO".to_string());
        assert!(l.loggers().contains(&back));
    }
}
