//! Starting a cluster member: the local quorum member (voter or not) over the controller
//! listeners of `controller.quorum.voters`, the controller when this process has that role,
//! and the broker's background tasks, which end with the controlled shutdown.
use std::collections::BTreeMap;
use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use crate::clock::SharedClock;
use crate::cluster::replica_fetcher::{BrokerAddressResolver, ReplicaFetcherManager};
use crate::config::{BrokerConfig, ProcessRole};
use crate::controller::image::MetadataImage;
use crate::controller::service::ControllerService;
use crate::controller::{QuorumConfig, RaftQuorum};
use crate::net::peer::PeerSecurity;
use crate::net::raft_transport::TcpRaftTransport;
use crate::storage::LogManager;

use super::{AdvertisedEndpoint, BrokerParts, ClusterContext, ControllerChannel, MetadataQuorum};
use crate::controller::raft::observer::ObserverQuorum;

/// Timeout of one Raft message to a peer (several heartbeat intervals).
const RAFT_CALL_TIMEOUT_MS: u64 = 1_000;

/// Timeout of one request to the active controller.
const CONTROLLER_REQUEST_TIMEOUT_MS: u64 = 5_000;

/// How long a process with only `controller.quorum.bootstrap.servers` looks for the quorum
/// at start before it gives up.
const BOOTSTRAP_DISCOVERY_MAX_MS: u64 = 30_000;

use super::format::{metadata_dir, CLUSTER_ID_FILE};

/// The cluster id and the voters a cluster member starts with. The id is derived from
/// `controller.quorum.voters` at the first start, or learnt from the quorum through
/// `controller.quorum.bootstrap.servers` (KIP-853), and kept in the metadata log dir: the
/// voter set changes, the cluster id does not (Kafka keeps it in `meta.properties`).
pub async fn resolve_quorum(
    config: &BrokerConfig,
) -> Result<(String, BTreeMap<i32, String>), String> {
    let dir = metadata_dir(config);
    let path = dir.join(CLUSTER_ID_FILE);
    let stored = match std::fs::read_to_string(&path) {
        Ok(s) if !s.trim().is_empty() => Some(s.trim().to_string()),
        Ok(_) => None,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(format!("cannot read {}: {e}", path.display())),
    };
    let configured = super::voters(config);
    let is_controller = config.process_roles.contains(&ProcessRole::Controller);
    let (cluster_id, voters) = if !configured.is_empty() {
        let derived = super::cluster_id_for(&configured);
        (stored.clone().unwrap_or(derived), configured)
    } else {
        let transport = raft_transport(controller_security(config)?, config.node_id);
        let found = crate::controller::raft::voters::discover::<MetadataImage>(
            &transport,
            config.node_id as u64,
            &config.controller_quorum_bootstrap_servers,
            // A controller that is already a member knows its id and its voters.
            if stored.is_some() && is_controller {
                RAFT_CALL_TIMEOUT_MS
            } else {
                BOOTSTRAP_DISCOVERY_MAX_MS
            },
        )
        .await;
        match (found, &stored) {
            (Ok(reply), Some(id)) if *id != reply.cluster_id => {
                return Err(format!(
                    "the quorum at {:?} has cluster id {} but this node's is {id}",
                    config.controller_quorum_bootstrap_servers, reply.cluster_id
                ))
            }
            (Ok(reply), _) => (
                reply.cluster_id,
                reply
                    .voters
                    .into_iter()
                    .map(|(id, addr)| (id as i32, addr))
                    .collect(),
            ),
            (Err(_), Some(id)) if is_controller => (id.clone(), BTreeMap::new()),
            (Err(e), _) => return Err(e),
        }
    };
    if stored.as_deref() != Some(cluster_id.as_str()) {
        std::fs::create_dir_all(&dir)
            .and_then(|_| {
                crate::controller::raft::types::write_durably(&path, cluster_id.as_bytes())
            })
            .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    }
    Ok((cluster_id, voters))
}

/// Starts the quorum member and the controller. A lone voter (the embedded default) waits to
/// lead and imports any metadata of earlier single-node versions before the broker starts.
pub async fn start_cluster(
    config: &BrokerConfig,
    cluster_id: &str,
    voters: BTreeMap<i32, String>,
    endpoints: &[AdvertisedEndpoint],
    clock: SharedClock,
    logs: &LogManager,
) -> Result<Arc<ClusterContext>, String> {
    let controller_listeners: Vec<String> = config
        .controller_listener_names
        .iter()
        .map(|n| n.to_ascii_uppercase())
        .collect();
    let client_listeners: Vec<String> = endpoints
        .iter()
        .map(|e| e.name.clone())
        .filter(|n| !controller_listeners.contains(n))
        .collect();
    if client_listeners.is_empty() && config.process_roles.contains(&ProcessRole::Broker) {
        return Err("a broker needs a listener that is not in controller.listener.names".into());
    }
    let configured = super::voters(config);
    let mut quorum_config = QuorumConfig::new(
        config.node_id as u64,
        configured
            .iter()
            .map(|(id, addr)| (*id as u64, addr.clone()))
            .collect::<BTreeMap<_, _>>(),
        metadata_dir(config),
    );
    quorum_config.static_voters = is_static_quorum(config, &configured)?;
    quorum_config.cluster_id = cluster_id.to_string();
    quorum_config.bootstrap_servers = config.controller_quorum_bootstrap_servers.clone();
    quorum_config.advertised_addr = endpoints
        .iter()
        .find(|e| controller_listeners.contains(&e.name))
        .map(|e| format!("{}:{}", e.host, e.port))
        .unwrap_or_default();
    let controller_security = controller_security(config)?;
    // Kafka's inter-broker listener when configured; else the first client listener.
    let inter_broker_listener = config
        .inter_broker_listener_name
        .clone()
        .or_else(|| client_listeners.first().cloned())
        .unwrap_or_default();
    let inter_broker_security = if inter_broker_listener.is_empty() {
        PeerSecurity::default()
    } else {
        PeerSecurity::for_listener(
            config,
            &inter_broker_listener,
            config.sasl.inter_broker_login.as_ref(),
        )?
    };
    let transport = Arc::new(raft_transport(controller_security.clone(), config.node_id));
    let bootstrap_scram = super::bootstrap_scram::formatted(config)?;
    let is_controller = config.process_roles.contains(&ProcessRole::Controller);
    let is_voter = voters.contains_key(&config.node_id);
    // A controller may start outside the voter set only to be added (KIP-853 bootstrap
    // servers); the controller role is what makes a process a voter or a voter-to-be.
    let joining = is_controller && !config.controller_quorum_bootstrap_servers.is_empty();
    if is_controller != is_voter && !joining {
        return Err(format!(
            "node {} {} the controller role but {} among controller.quorum.voters",
            config.node_id,
            if is_controller { "has" } else { "lacks" },
            if is_voter { "is" } else { "is not" },
        ));
    }
    let (quorum, controller) = if is_controller {
        if quorum_config.advertised_addr.is_empty() {
            return Err("a controller needs a listener named in controller.listener.names".into());
        }
        let raft = RaftQuorum::<MetadataImage>::start(quorum_config, transport)
            .await
            .map_err(|e| format!("{e:?}"))?;
        let mut controller = ControllerService::new(
            Arc::new(raft.clone()),
            crate::controller::service::controller_config(config),
            config.clone(),
            clock,
        );
        if let Some(levels) = super::format::formatted_features(config)? {
            controller
                .set_bootstrap_features(crate::controller::features::bootstrap_records(&levels));
        }
        let controller = Arc::new(controller);
        controller.set_bootstrap_records(super::bootstrap_scram::records(&bootstrap_scram));
        (MetadataQuorum::Voter(raft), Some(controller))
    } else {
        // An observer follows the voters the quorum names, configured or discovered.
        quorum_config.voters = voters
            .iter()
            .map(|(id, addr)| (*id as u64, addr.clone()))
            .collect();
        (
            MetadataQuorum::Observer(ObserverQuorum::start(quorum_config, transport)),
            None,
        )
    };
    let quorum = Arc::new(quorum);
    // Only a lone voter that is still alone (not one that has had voters added since)
    // must lead before it serves.
    // (Right after a first initialize openraft may not have published the membership yet:
    // none counts as alone.)
    let still_alone = quorum.voter().is_some_and(|q| {
        q.voter_addresses()
            .keys()
            .all(|id| *id == config.node_id as u64)
    });
    if voters.len() == 1 && voters.contains_key(&config.node_id) && still_alone {
        if let Some(controller) = &controller {
            wait_to_lead(controller).await?;
            super::embedded::import_legacy_metadata(
                &config.log_dirs[0],
                controller,
                logs,
                config.node_id,
            )
            .await?;
        }
    }
    let channel = ControllerChannel::new(
        config.node_id,
        voters.clone(),
        quorum.clone(),
        CONTROLLER_REQUEST_TIMEOUT_MS,
    )
    .with_security(controller_security);
    Ok(Arc::new(ClusterContext {
        node_id: config.node_id,
        quorum,
        is_broker: config.process_roles.contains(&ProcessRole::Broker),
        controller,
        channel,
        inter_broker_listener,
        inter_broker_security,
        bootstrap_scram,
        client_listeners,
        voters,
        auto_creating: Default::default(),
        caught_up: tokio::sync::watch::channel(false).0,
        ready: tokio::sync::watch::channel(false).0,
        last_heartbeat_ok_ms: std::sync::atomic::AtomicI64::new(0),
        published: tokio::sync::watch::channel(Arc::new(MetadataImage::default())).0,
    }))
}

/// Whether `configured` (the process's `controller.quorum.voters`) is a static quorum, whose
/// addresses are where the voters are reached, rather than the voters `strata storage
/// format` recorded for a dynamic quorum to start with (`apply_formatted_voters` puts those
/// in the same place), which the stored membership supersedes.
fn is_static_quorum(
    config: &BrokerConfig,
    configured: &BTreeMap<i32, String>,
) -> Result<bool, String> {
    if configured.is_empty() {
        return Ok(false);
    }
    if config.log_dirs.is_empty() {
        return Ok(true);
    }
    let formatted: BTreeMap<i32, String> = super::format::formatted_voters(config)?
        .iter()
        .map(|v| (v.id, format!("{}:{}", v.host, v.port)))
        .collect();
    Ok(&formatted != configured)
}

/// How this node connects to the controller listener of the quorum's members: its TLS and
/// the SASL login of `sasl.mechanism.controller.protocol`.
fn controller_security(config: &BrokerConfig) -> Result<PeerSecurity, String> {
    match config.controller_listener_names.first() {
        Some(name) => {
            PeerSecurity::for_listener(config, name, config.sasl.controller_login.as_ref())
        }
        None => Ok(PeerSecurity::default()),
    }
}

/// The Raft transport to the controller listeners of the quorum's members, with that
/// listener's TLS and SASL login.
fn raft_transport(security: PeerSecurity, node_id: i32) -> TcpRaftTransport {
    TcpRaftTransport::new(RAFT_CALL_TIMEOUT_MS)
        .with_security(format!("strata-raft-{node_id}"), security)
}

/// How long a lone voter may take to elect itself before the start fails.
const LONE_VOTER_ELECTION_MAX_MS: u64 = 10_000;

async fn wait_to_lead(controller: &ControllerService) -> Result<(), String> {
    let deadline =
        tokio::time::Instant::now() + std::time::Duration::from_millis(LONE_VOTER_ELECTION_MAX_MS);
    while !controller.is_active() {
        if tokio::time::Instant::now() >= deadline {
            return Err("the lone controller voter did not become leader".into());
        }
        tokio::time::sleep(std::time::Duration::from_millis(2)).await;
    }
    Ok(())
}

/// Waits until the active controller reports that this broker's image includes its own
/// registration, so that a restarted broker never acts on partition states older than the
/// ones it last saw (Kafka brokers likewise publish only after their initial catch-up).
async fn caught_up(cluster: &ClusterContext, shutdown: &CancellationToken) -> bool {
    let mut rx = cluster.caught_up.subscribe();
    tokio::select! {
        _ = shutdown.cancelled() => false,
        r = rx.wait_for(|c| *c) => r.is_ok(),
    }
}

/// Spawns the member's tasks; the returned handle ends once they have all stopped, after the
/// controlled shutdown, and `serving` is cancelled when the listeners may close.
pub fn spawn_tasks(
    broker: Arc<BrokerParts>,
    cluster: Arc<ClusterContext>,
    shutdown: CancellationToken,
    serving: CancellationToken,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let stop_workers = CancellationToken::new();
        let mut tasks = Vec::new();
        if let Some(controller) = cluster.controller.clone() {
            tasks.push(tokio::spawn(crate::controller::service::run_periodic(
                controller,
                stop_workers.clone(),
            )));
        }
        if broker.config.process_roles.contains(&ProcessRole::Broker) {
            spawn_broker_tasks(&broker, &cluster, &stop_workers, &mut tasks);
            // The lifecycle returns after the controlled shutdown.
            super::lifecycle::run(broker.clone(), cluster.clone(), shutdown.clone()).await;
        } else {
            // A controller-only process neither registers nor hosts partitions.
            tasks.push(tokio::spawn(super::image_metrics::follow(
                broker.metrics.clone(),
                cluster.clone(),
                stop_workers.clone(),
            )));
            shutdown.cancelled().await;
        }
        serving.cancel();
        stop_workers.cancel();
        for t in tasks {
            let _ = t.await;
        }
        cluster.quorum.shutdown().await;
    })
}

/// The broker role's tasks: the publisher once caught up, ISR changes to the controller, and
/// the replica fetchers.
fn spawn_broker_tasks(
    broker: &Arc<BrokerParts>,
    cluster: &Arc<ClusterContext>,
    stop_workers: &CancellationToken,
    tasks: &mut Vec<tokio::task::JoinHandle<()>>,
) {
    {
        let (broker, cluster, stop) = (broker.clone(), cluster.clone(), stop_workers.clone());
        tasks.push(tokio::spawn(async move {
            if caught_up(&cluster, &stop).await {
                super::publisher::run(broker, cluster, stop).await;
            }
        }));
    }
    tasks.push(tokio::spawn(super::lifecycle::run_alter_partition_sender(
        broker.clone(),
        cluster.clone(),
        stop_workers.clone(),
    )));
    tasks.push(tokio::spawn(super::dir_assignments::run(
        broker.clone(),
        cluster.clone(),
        stop_workers.clone(),
    )));
    let resolver_cluster = cluster.clone();
    let resolver: BrokerAddressResolver =
        Arc::new(move |id: crate::replica::BrokerId| resolver_cluster.broker_address(id.0));
    let fetchers =
        ReplicaFetcherManager::new(broker.replicas.clone(), resolver, broker.clock.clone())
            .with_security(cluster.inter_broker_security.clone());
    tasks.push(tokio::spawn(fetchers.run(stop_workers.clone())));
}
