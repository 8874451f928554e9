//! `strata storage` (Kafka's `kafka-storage` tool, KIP-853 for the voter options): a new
//! cluster id, and formatting a node's log dirs before its first start. Formatting writes
//! `meta.properties` (cluster.id, node.id, directory.id) in every log dir, the cluster id of
//! the quorum member in the metadata log dir, and with `--standalone` or
//! `--initial-controllers` the voters the quorum starts with, which a node whose config names
//! only `controller.quorum.bootstrap.servers` (Kafka 4's shipped `server.properties`) uses as
//! its `controller.quorum.voters` until the quorum stores its own. `--add-scram` adds SCRAM
//! credentials to the bootstrap metadata (`cluster::bootstrap_scram`). `--release-version`
//! and `--feature name=level` choose the feature levels the cluster starts at
//! (`controller::features::bootstrap_levels`); without them, Strata's defaults.
use std::path::{Path, PathBuf};

use crate::config::{BrokerConfig, ProcessRole, QuorumVoter};
use crate::protocol::codec::Uuid;
use crate::storage::checkpoint::{
    read_meta_properties, write_meta_properties, MetaProperties, META_PROPERTIES,
};

/// The file, in the metadata log dir, that keeps the cluster id of a quorum member.
pub const CLUSTER_ID_FILE: &str = "cluster.id";
/// The file, in the metadata log dir, with the voters a formatted node starts its quorum
/// with (`id@host:port` per line).
pub const BOOTSTRAP_VOTERS_FILE: &str = "bootstrap.voters";

/// The file, in the metadata log dir, with the feature levels the node was formatted with
/// (`name=level` per line): the first `FeatureLevel` records of a new metadata log.
pub const BOOTSTRAP_FEATURES_FILE: &str = "bootstrap.features";

/// The options of `strata storage format`, as `kafka-storage format` names them.
#[derive(Debug, Clone, Default)]
pub struct FormatOptions {
    pub cluster_id: String,
    /// This controller is the only voter of a new quorum.
    pub standalone: bool,
    /// `id@host:port:directory-id,...`: the voters of a new quorum.
    pub initial_controllers: Option<String>,
    /// Log dirs formatted already are skipped instead of refused.
    pub ignore_formatted: bool,
    /// `--add-scram` arguments (`SCRAM-SHA-512=[name=admin,password=admin-secret]`).
    pub add_scram: Vec<String>,
    /// `--release-version`: the `metadata.version` (`3.9`, `4.0-IV3`) the cluster starts at,
    /// and with it the default level of every other feature.
    pub release_version: Option<String>,
    /// `--feature name=level` arguments.
    pub features: Vec<String>,
}

/// The metadata log dir (the first log dir, as `metadata.log.dir` defaults in Kafka).
pub fn metadata_dir(config: &BrokerConfig) -> PathBuf {
    config.log_dirs[0].join(format!("{}-0", crate::storage::manager::METADATA_TOPIC))
}

/// A new cluster id (`kafka-storage random-uuid`).
pub fn random_uuid() -> String {
    Uuid::random().to_string()
}

/// The address other controllers reach this one at: its controller listener as advertised,
/// or as configured in `listeners` when `advertised.listeners` leaves it out (Kafka's
/// fallback), an unset host meaning this machine.
pub fn controller_address(config: &BrokerConfig) -> Option<(String, u16)> {
    let name = config
        .controller_listener_names
        .first()?
        .to_ascii_uppercase();
    let listener = config
        .advertised_listeners
        .iter()
        .find(|l| l.name == name)
        .or_else(|| config.listeners.iter().find(|l| l.name == name))?;
    let host = if listener.host.is_empty() || listener.host == "0.0.0.0" {
        "localhost".to_string()
    } else {
        listener.host.clone()
    };
    Some((host, listener.port))
}

/// Parses `--initial-controllers`: `id@host:port:directory-id` entries, comma-separated (the
/// directory id, a base64 UUID, is optional here).
fn parse_initial_controllers(s: &str) -> Result<Vec<(QuorumVoter, Option<Uuid>)>, String> {
    let mut out: Vec<(QuorumVoter, Option<Uuid>)> = Vec::new();
    for entry in s.split(',').map(str::trim).filter(|e| !e.is_empty()) {
        let (id, rest) = entry
            .split_once('@')
            .ok_or_else(|| format!("{entry:?}: expected id@host:port:directory-id"))?;
        let parts: Vec<&str> = rest.rsplitn(3, ':').collect();
        let (addr, dir_id) = match parts.as_slice() {
            [dir, port, host] if Uuid::parse(dir).is_some() => {
                (format!("{host}:{port}"), Uuid::parse(dir))
            }
            [port, host] => (format!("{host}:{port}"), None),
            [last, port, host] => {
                return Err(format!(
                    "{entry:?}: {last:?} is not a directory id (a base64 UUID) after {host}:{port}"
                ))
            }
            _ => return Err(format!("{entry:?}: expected id@host:port:directory-id")),
        };
        let voter =
            QuorumVoter::parse(&format!("{id}@{addr}")).map_err(|e| format!("{entry:?}: {e}"))?;
        if out.iter().any(|(v, _)| v.id == voter.id) {
            return Err(format!("controller {} is listed twice", voter.id));
        }
        out.push((voter, dir_id));
    }
    if out.is_empty() {
        return Err("--initial-controllers lists no controller".into());
    }
    Ok(out)
}

/// Formats the node's log dirs; returns one line per dir for the operator.
pub fn format(config: &BrokerConfig, options: &FormatOptions) -> Result<Vec<String>, String> {
    let cluster_id = Uuid::parse(&options.cluster_id)
        .filter(|u| !u.is_zero())
        .ok_or_else(|| {
            format!(
                "cluster id {:?} is not a base64 UUID (make one with `strata storage random-uuid`)",
                options.cluster_id
            )
        })?
        .to_string();
    let scram = super::bootstrap_scram::parse_all(&options.add_scram)?;
    let feature_levels = crate::controller::features::bootstrap_levels(
        options.release_version.as_deref(),
        &options.features,
    )?;
    let is_controller = config.process_roles.contains(&ProcessRole::Controller);
    if options.standalone && options.initial_controllers.is_some() {
        return Err("--standalone and --initial-controllers cannot be used together".into());
    }
    let wants_voters = options.standalone || options.initial_controllers.is_some();
    if wants_voters && !is_controller {
        return Err(
            "--standalone and --initial-controllers format a controller; process.roles has no \
             controller"
                .into(),
        );
    }
    if wants_voters && !config.controller_quorum_voters.is_empty() {
        return Err(
            "controller.quorum.voters already names the voters (a static quorum); \
             --standalone and --initial-controllers are for controller.quorum.bootstrap.servers"
                .into(),
        );
    }
    let mut metadata_dir_id = None;
    let voters: Vec<QuorumVoter> = if options.standalone {
        let (host, port) = controller_address(config).ok_or(
            "--standalone needs this node's controller listener (controller.listener.names \
             among listeners)",
        )?;
        if port == 0 {
            return Err("--standalone needs a fixed port on the controller listener".into());
        }
        vec![QuorumVoter {
            id: config.node_id,
            host,
            port,
        }]
    } else if let Some(list) = &options.initial_controllers {
        let parsed = parse_initial_controllers(list)?;
        if !parsed.iter().any(|(v, _)| v.id == config.node_id) {
            // Kafka formats such a node as an observer-to-be; here it would have no voter to
            // start with that is itself, so it joins through the bootstrap servers instead.
            tracing::info!(
                node_id = config.node_id,
                "this controller is not among --initial-controllers; it joins as an observer"
            );
        }
        metadata_dir_id = parsed
            .iter()
            .find(|(v, _)| v.id == config.node_id)
            .and_then(|(_, d)| *d);
        parsed.into_iter().map(|(v, _)| v).collect()
    } else {
        Vec::new()
    };

    let mut report = Vec::new();
    let meta_dir = metadata_dir(config);
    for (i, dir) in config.log_dirs.iter().enumerate() {
        let path = dir.join(META_PROPERTIES);
        match read_meta_properties(&path) {
            Ok(Some(existing)) => {
                if options.ignore_formatted {
                    report.push(format!("{} is already formatted; skipped", dir.display()));
                    continue;
                }
                return Err(format!(
                    "{} is already formatted (cluster.id {}); use --ignore-formatted to skip it",
                    dir.display(),
                    existing.cluster_id
                ));
            }
            Ok(None) => {}
            Err(e) => return Err(format!("cannot read {}: {e}", path.display())),
        }
        std::fs::create_dir_all(dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        let directory_id = match (i, metadata_dir_id) {
            (0, Some(id)) => id,
            _ => Uuid::random(),
        };
        write_meta_properties(
            &path,
            &MetaProperties {
                cluster_id: cluster_id.clone(),
                node_id: config.node_id,
                directory_id,
            },
        )
        .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
        if i == 0 {
            write_file(&meta_dir, CLUSTER_ID_FILE, &cluster_id)?;
            write_file(
                &meta_dir,
                BOOTSTRAP_FEATURES_FILE,
                &crate::controller::features::levels_to_text(&feature_levels),
            )?;
            if !voters.is_empty() {
                let text: String = voters
                    .iter()
                    .map(|v| format!("{}@{}:{}\n", v.id, v.host, v.port))
                    .collect();
                write_file(&meta_dir, BOOTSTRAP_VOTERS_FILE, &text)?;
            }
            if !scram.users.is_empty() {
                write_file(
                    &meta_dir,
                    super::bootstrap_scram::BOOTSTRAP_SCRAM_FILE,
                    &super::bootstrap_scram::to_file_text(&scram),
                )?;
            }
        }
        report.push(format!(
            "Formatting {} with cluster.id {cluster_id}",
            dir.display()
        ));
    }
    Ok(report)
}

fn write_file(dir: &Path, name: &str, text: &str) -> Result<(), String> {
    let path = dir.join(name);
    std::fs::create_dir_all(dir)
        .and_then(|_| crate::controller::raft::types::write_durably(&path, text.as_bytes()))
        .map_err(|e| format!("cannot write {}: {e}", path.display()))
}

/// The voters a formatted node starts with, if `strata storage format` recorded any.
pub fn formatted_voters(config: &BrokerConfig) -> Result<Vec<QuorumVoter>, String> {
    let path = metadata_dir(config).join(BOOTSTRAP_VOTERS_FILE);
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(format!("cannot read {}: {e}", path.display())),
    };
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(|l| QuorumVoter::parse(l).map_err(|e| format!("{}: {l:?}: {e}", path.display())))
        .collect()
}

/// The feature levels `strata storage format` recorded, if it was run since feature
/// versioning (a node formatted before starts at the defaults).
pub fn formatted_features(
    config: &BrokerConfig,
) -> Result<Option<std::collections::BTreeMap<String, i16>>, String> {
    if config.log_dirs.is_empty() {
        return Ok(None);
    }
    let path = metadata_dir(config).join(BOOTSTRAP_FEATURES_FILE);
    match std::fs::read_to_string(&path) {
        Ok(text) => crate::controller::features::levels_from_text(&text)
            .map(Some)
            .map_err(|e| format!("{}: {e}", path.display())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(format!("cannot read {}: {e}", path.display())),
    }
}

/// Gives a node without `controller.quorum.voters` the voters it was formatted with, so
/// `--standalone` and `--initial-controllers` start a quorum as Kafka's bootstrap checkpoint
/// does.
pub fn apply_formatted_voters(config: &mut BrokerConfig) -> Result<(), String> {
    if !config.controller_quorum_voters.is_empty() || config.log_dirs.is_empty() {
        return Ok(());
    }
    config.controller_quorum_voters = formatted_voters(config)?;
    Ok(())
}

/// Refuses to start a controller that can only learn its quorum from itself and was never
/// formatted (Kafka 4's shipped `server.properties` before `kafka-storage format
/// --standalone`): no one could answer its bootstrap request. Checked before the log dirs
/// are opened, so that formatting afterwards finds them untouched.
pub fn require_formatted(config: &BrokerConfig) -> Result<(), String> {
    let is_controller = config.process_roles.contains(&ProcessRole::Controller);
    if !is_controller
        || !config.controller_quorum_voters.is_empty()
        || config.log_dirs.is_empty()
        || !bootstraps_only_itself(config)
        || metadata_dir(config).join(CLUSTER_ID_FILE).exists()
    {
        return Ok(());
    }
    Err(format!(
        "node {} is a controller whose controller.quorum.bootstrap.servers {:?} name only \
         itself, and its log dirs are not formatted: run `strata storage format --cluster-id \
         $(strata storage random-uuid) --standalone --config <file>` first (or \
         --initial-controllers for several controllers)",
        config.node_id, config.controller_quorum_bootstrap_servers
    ))
}

/// Whether `controller.quorum.bootstrap.servers` names only this node's own controller
/// listener: no one else can answer, and only a formatted node knows its quorum.
pub fn bootstraps_only_itself(config: &BrokerConfig) -> bool {
    let Some((host, port)) = controller_address(config) else {
        return false;
    };
    let local =
        |h: &str| h == host || h == "localhost" || h == "127.0.0.1" || h == "::1" || h == "[::1]";
    !config.controller_quorum_bootstrap_servers.is_empty()
        && config
            .controller_quorum_bootstrap_servers
            .iter()
            .all(|s| match s.rsplit_once(':') {
                Some((h, p)) => p.parse::<u16>().ok() == Some(port) && local(h),
                None => false,
            })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(keys: &[&str]) -> BrokerConfig {
        let keys: Vec<String> = keys.iter().map(|k| k.to_string()).collect();
        BrokerConfig::load(None, &keys).expect("config").0
    }

    #[test]
    fn the_controller_address_falls_back_to_listeners() {
        let c = config(&[
            "listeners=PLAINTEXT://:9092,CONTROLLER://:9093",
            "advertised.listeners=PLAINTEXT://localhost:9092",
            "controller.listener.names=CONTROLLER",
        ]);
        assert_eq!(controller_address(&c), Some(("localhost".into(), 9093)));
        let c = config(&[
            "listeners=PLAINTEXT://:9092,CONTROLLER://:9093",
            "advertised.listeners=PLAINTEXT://h1:9092,CONTROLLER://h1:9093",
            "controller.listener.names=CONTROLLER",
        ]);
        assert_eq!(controller_address(&c), Some(("h1".into(), 9093)));
    }

    #[test]
    fn a_bootstrap_list_of_only_itself_is_recognised() {
        let base = [
            "process.roles=broker,controller",
            "listeners=PLAINTEXT://:9092,CONTROLLER://:9093",
            "advertised.listeners=PLAINTEXT://localhost:9092,CONTROLLER://localhost:9093",
            "controller.listener.names=CONTROLLER",
        ];
        let with = |servers: &str| {
            let mut keys = base.to_vec();
            let s = format!("controller.quorum.bootstrap.servers={servers}");
            keys.push(&s);
            bootstraps_only_itself(&config(&keys))
        };
        assert!(with("localhost:9093"));
        assert!(with("127.0.0.1:9093"));
        assert!(!with("localhost:9093,other:9093"));
        assert!(!with("localhost:9094"));
    }

    #[test]
    fn initial_controllers_parse_with_and_without_directory_ids() {
        let dir = Uuid::random().to_string();
        let v = parse_initial_controllers(&format!("1@localhost:9093:{dir},2@h2:9094")).unwrap();
        assert_eq!(v.len(), 2);
        assert_eq!(
            (v[0].0.id, v[0].0.host.as_str(), v[0].0.port),
            (1, "localhost", 9093)
        );
        assert_eq!(v[0].1.map(|u| u.to_string()), Some(dir));
        assert_eq!((v[1].0.id, v[1].0.port, v[1].1), (2, 9094, None));
        assert!(parse_initial_controllers("1@h:9093,1@h:9094").is_err());
        assert!(parse_initial_controllers("1@h:9093:notauuid").is_err());
        assert!(parse_initial_controllers("").is_err());
    }
}
