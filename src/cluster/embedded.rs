//! The single-node default as a quorum of one (Kafka's combined `broker,controller` mode with
//! one voter), so a process started with no configuration runs the same controller, metadata
//! image, registration and publisher as a cluster member.
//!
//! With no `controller.quorum.voters`, the process adds a private controller listener on
//! loopback (an ephemeral port unless `controller.listener.names` names a configured one) and
//! becomes the only voter on it. Data written by earlier single-node versions, whose metadata
//! lived in the line log `__strata_metadata.log`, is imported into the quorum once.
use std::path::Path;

use crate::config::{BrokerConfig, Listener, ProcessRole, QuorumVoter};
use crate::controller::records::{MetadataRecord, NO_LEADER, RESOURCE_TOPIC};
use crate::controller::service::ControllerService;
use crate::controller::MetadataStore;
use crate::storage::LogManager;

/// The listener added for the lone voter when none is named.
pub const EMBEDDED_CONTROLLER_LISTENER: &str = "CONTROLLER";

/// The metadata log of single-node versions before the quorum of one.
const LEGACY_METADATA_LOG: &str = "__strata_metadata.log";

/// Whether `config` runs the embedded quorum of one (no voters and no bootstrap servers
/// configured).
pub fn is_embedded(config: &BrokerConfig) -> bool {
    config.controller_quorum_voters.is_empty()
        && config.controller_quorum_bootstrap_servers.is_empty()
}

/// Gives an embedded node its controller listener before the listeners are bound.
pub fn prepare(config: &mut BrokerConfig) -> Result<(), String> {
    let roles = &config.process_roles;
    if !(roles.contains(&ProcessRole::Broker) && roles.contains(&ProcessRole::Controller)) {
        return Err(
            "a node without both the broker and controller roles needs controller.quorum.voters \
             or controller.quorum.bootstrap.servers"
                .into(),
        );
    }
    let named = config
        .controller_listener_names
        .first()
        .map(|n| n.to_ascii_uppercase());
    if let Some(name) = &named {
        if config.listeners.iter().any(|l| &l.name == name) {
            return Ok(());
        }
    }
    let listener = Listener {
        name: named.unwrap_or_else(|| EMBEDDED_CONTROLLER_LISTENER.to_string()),
        host: "127.0.0.1".into(),
        port: 0,
    };
    config.controller_listener_names = vec![listener.name.clone()];
    // A private loopback listener between this process and itself.
    config
        .listener_security_protocol_map
        .entry(listener.name.clone())
        .or_insert(crate::config::SecurityProtocol::Plaintext);
    // Advertised endpoints are matched to bound ones by position.
    if config.advertised_listeners.len() == config.listeners.len() {
        config.advertised_listeners.push(listener.clone());
    }
    config.listeners.push(listener);
    Ok(())
}

/// Once the listeners are bound: this node is the only voter, at its controller listener.
pub fn set_lone_voter(
    config: &mut BrokerConfig,
    bound: &[std::net::SocketAddr],
) -> Result<(), String> {
    let name = config
        .controller_listener_names
        .first()
        .cloned()
        .ok_or("no controller listener")?;
    let index = config
        .listeners
        .iter()
        .position(|l| l.name == name)
        .ok_or("the controller listener is not bound")?;
    let addr = bound
        .get(index)
        .ok_or("the controller listener is not bound")?;
    let host = match config.listeners[index].host.as_str() {
        "" | "0.0.0.0" => "127.0.0.1".to_string(),
        h => h.to_string(),
    };
    config.controller_quorum_voters = vec![QuorumVoter {
        id: config.node_id,
        host,
        port: addr.port(),
    }];
    Ok(())
}

/// Imports the topics, configs and producer-id high mark of a legacy single-node metadata
/// log into the quorum, once: the log is renamed after the records are committed, so a
/// crash in between imports again into an image that already has the topics (skipped).
pub async fn import_legacy_metadata(
    dir: &Path,
    controller: &ControllerService,
    logs: &LogManager,
    node_id: i32,
) -> Result<(), String> {
    let path = dir.join(LEGACY_METADATA_LOG);
    if !path.exists() {
        return Ok(());
    }
    let legacy = MetadataStore::open(dir).map_err(|e| e.to_string())?;
    let topics = legacy.topics();
    let next_producer_id = legacy.producer_id_limit();
    drop(legacy);
    let mut records = Vec::new();
    for t in &topics {
        records.push(MetadataRecord::Topic {
            name: t.name.clone(),
            topic_id: t.id.0,
        });
        for p in 0..t.partitions {
            // The quorum's leader epoch continues the one the data was written under.
            let leader_epoch = logs
                .get(&t.name, p)
                .and_then(|l| l.latest_epoch())
                .unwrap_or(0);
            records.push(MetadataRecord::Partition {
                topic_id: t.id.0,
                partition: p,
                replicas: vec![node_id],
                isr: vec![node_id],
                leader: if node_id >= 0 { node_id } else { NO_LEADER },
                leader_epoch,
                partition_epoch: 0,
                adding_replicas: Vec::new(),
                removing_replicas: Vec::new(),
                // The broker tells the controller where the log is (KIP-858).
                directories: Vec::new(),
            });
        }
        for (name, value) in &t.configs {
            records.push(MetadataRecord::Config {
                resource_type: RESOURCE_TOPIC,
                resource_name: t.name.clone(),
                name: name.clone(),
                value: Some(value.clone()),
            });
        }
    }
    records.push(MetadataRecord::ProducerIds {
        broker_id: node_id,
        broker_epoch: -1,
        next_producer_id,
    });
    let imported = controller
        .run(move |image, _, _| {
            if topics.iter().any(|t| image.topics.contains_key(&t.name)) {
                return (Vec::new(), false);
            }
            (records, true)
        })
        .await
        .map_err(|e| format!("{e:?}"))?;
    if imported {
        tracing::info!("imported the single-node metadata log into the controller quorum");
    }
    let done = dir.join(format!("{LEGACY_METADATA_LOG}.imported"));
    std::fs::rename(&path, &done).map_err(|e| e.to_string())?;
    Ok(())
}
