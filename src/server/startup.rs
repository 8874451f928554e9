//! Brings a broker up and down: opens the log dirs and the metadata log, opens every partition,
//! binds the listeners, runs the background tasks (retention, flush, checkpoints) and the log
//! cleaner ([`crate::server::log_cleaner`]), and on SIGINT/SIGTERM stops accepting, drains
//! connections (at most [`SHUTDOWN_DRAIN`] for responses still parked), lets a cleaner pass
//! in progress end, flushes and writes the clean-shutdown marker so the next start skips
//! recovery.
//!
//! [`SHUTDOWN_DRAIN`]: crate::server::connection::SHUTDOWN_DRAIN
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::broker::{group_config, txn_config, Broker, Limits};
use crate::clock::SharedClock;
use crate::cluster::replica_fetcher::{BrokerAddressResolver, ReplicaFetcherManager};
use crate::cluster::AdvertisedEndpoint;
use crate::config::BrokerConfig;
use crate::coordinator::offsets_topic::{
    InternalTopicLog, LocalMarkerWriter, OFFSETS_TOPIC, TRANSACTION_TOPIC,
};
use crate::coordinator::txn::TransactionCoordinator;
use crate::coordinator::GroupCoordinator;
use crate::replica::fetcher::FetcherConfig;
use crate::replica::ids::BrokerId;
use crate::replica::manager::ReplicationConfig;
use crate::replica::ReplicaManager;
use crate::storage::LogManager;

#[derive(Debug)]
pub enum StartupError {
    Storage(String),
    Metadata(String),
    Bind {
        listener: String,
        error: std::io::Error,
    },
    Config(String),
}

impl std::fmt::Display for StartupError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StartupError::Storage(e) => write!(f, "storage: {e}"),
            StartupError::Metadata(e) => write!(f, "metadata log: {e}"),
            StartupError::Bind { listener, error } => {
                write!(f, "cannot listen on {listener}: {error}")
            }
            StartupError::Config(e) => write!(f, "config: {e}"),
        }
    }
}

impl std::error::Error for StartupError {}

/// A started broker: its shared state, bound listeners and background tasks.
pub struct RunningBroker {
    pub broker: Arc<Broker>,
    pub local_addrs: Vec<std::net::SocketAddr>,
    /// The limits the connections share (request memory, request queue, per-IP counts).
    pub network: Arc<crate::server::listener::NetworkState>,
    /// The bound admin HTTP listeners (`strata.admin.listeners`; empty when off).
    pub admin_addrs: Vec<std::net::SocketAddr>,
    shutdown: CancellationToken,
    /// Ends the periodic tasks once the listeners have closed: group session timers and
    /// rebalances keep running while requests are still served, through the controlled
    /// shutdown and the drain (Kafka stops its coordinators after the socket server).
    background_stop: CancellationToken,
    admin: tokio::task::JoinHandle<()>,
    server: tokio::task::JoinHandle<()>,
    background: tokio::task::JoinHandle<()>,
    cleaner: tokio::task::JoinHandle<()>,
    fetchers: Option<tokio::task::JoinHandle<()>>,
    /// Cluster members' tasks (lifecycle, publisher, fetchers, controller); ends with the
    /// controlled shutdown.
    cluster_tasks: tokio::task::JoinHandle<()>,
}

impl RunningBroker {
    /// Requests shutdown (as SIGTERM does).
    pub fn shutdown_token(&self) -> CancellationToken {
        self.shutdown.clone()
    }

    /// Starts fetching, over TCP, the partitions this broker follows (the replica fetcher
    /// manager), reaching other brokers at the addresses `resolver` gives. Started by whoever
    /// knows the cluster's brokers (the metadata image); a second call does nothing.
    pub fn start_replica_fetchers(&mut self, resolver: BrokerAddressResolver) {
        if self.fetchers.is_some() {
            return;
        }
        let manager = ReplicaFetcherManager::new(
            self.broker.replicas.clone(),
            resolver,
            self.broker.clock.clone(),
        );
        self.fetchers = Some(tokio::spawn(manager.run(self.shutdown.clone())));
    }

    /// Waits for the listeners to stop and drain, then flushes and marks a clean shutdown.
    pub async fn wait(self) -> Result<(), StartupError> {
        let _ = self.server.await;
        self.shutdown.cancel();
        self.background_stop.cancel();
        let _ = self.admin.await;
        let _ = self.cluster_tasks.await;
        let _ = self.background.await;
        // No follower append may race the final snapshots and the log shutdown.
        if let Some(fetchers) = self.fetchers {
            let _ = fetchers.await;
        }
        // A cleaner pass in progress finishes (unthrottled) before the logs close.
        let _ = self.cleaner.await;
        // The replicas' last high watermarks, so they restart from there (Kafka's
        // `ReplicaManager.shutdown(checkpointHW = true)`, before the logs close).
        if let Err(e) = self.broker.replicas.checkpoint_high_watermarks() {
            tracing::warn!(error = ?e, "high watermark checkpoint not written at shutdown");
        }
        // Producer snapshots at the log end, so the next start-up replays nothing.
        for p in self.broker.replicas.all() {
            if let Err(e) = p.take_producer_snapshot() {
                tracing::warn!(topic = %p.topic, partition = p.index, error = ?e, "producer snapshot not written at shutdown");
            }
        }
        self.broker
            .replicas
            .logs()
            .shutdown()
            .map_err(|e| StartupError::Storage(format!("{e:?}")))?;
        tracing::info!("shut down cleanly");
        Ok(())
    }

    pub async fn stop(self) -> Result<(), StartupError> {
        self.shutdown.cancel();
        self.wait().await
    }
}

/// Opens storage and metadata and binds the listeners; the broker serves once this returns.
pub async fn start(
    mut config: BrokerConfig,
    clock: SharedClock,
) -> Result<RunningBroker, StartupError> {
    let started = std::time::Instant::now();
    // A node formatted with `strata storage format --standalone / --initial-controllers`
    // starts its quorum with the voters it was formatted with.
    crate::cluster::format::apply_formatted_voters(&mut config).map_err(StartupError::Config)?;
    crate::cluster::format::require_formatted(&config).map_err(StartupError::Config)?;
    let embedded = crate::cluster::embedded::is_embedded(&config);
    if embedded {
        crate::cluster::embedded::prepare(&mut config).map_err(StartupError::Config)?;
    }
    let network = crate::server::listener::NetworkState::from_config(&config)
        .map_err(StartupError::Config)?;
    let log_dirs: Vec<PathBuf> = config.log_dirs.clone();
    let default_tc = crate::config::TopicConfig::resolve(&Default::default(), &config)
        .map_err(|e| StartupError::Config(e.to_string()))?;
    let default_log = crate::replica::PartitionConfig::from_topic_config(&default_tc).log;
    let logs = LogManager::open(
        log_dirs.clone(),
        config.node_id,
        default_log,
        clock.now_ms(),
    )
    .map_err(|e| StartupError::Storage(format!("{e:?}")))?;
    let logs = Arc::new(logs);
    if config.log_durable_acks {
        logs.enable_group_commit();
        tracing::info!("strata.log.durable.acks: acknowledgements wait for fsync (group commit)");
    }

    // TLS key material is read and checked before anything binds: a missing or unreadable
    // file stops start-up with an error naming the key and the file.
    let mut listener_tls = std::collections::HashMap::new();
    for l in &config.listeners {
        let protocol = config.listener_security_protocol_map.get(&l.name).copied();
        if matches!(
            protocol,
            Some(crate::config::SecurityProtocol::Ssl | crate::config::SecurityProtocol::SaslSsl)
        ) {
            let handshake_timeout =
                std::time::Duration::from_millis(config.request_read_timeout_ms.max(1) as u64);
            let tls = crate::security::tls::ServerTls::new(&config, &l.name, handshake_timeout)
                .map_err(|e| StartupError::Config(e.to_string()))?;
            listener_tls.insert(l.name.clone(), tls);
        }
    }

    let mut listeners = Vec::new();
    let mut local_addrs = Vec::new();
    for l in &config.listeners {
        let bind = format!("{}:{}", l.bind_host(), l.port);
        let listener = super::listener::bind(&bind, config.socket_receive_buffer_bytes)
            .await
            .map_err(|error| StartupError::Bind {
                listener: bind.clone(),
                error,
            })?;
        local_addrs.push(listener.local_addr().map_err(|error| StartupError::Bind {
            listener: bind.clone(),
            error,
        })?);
        listeners.push(listener);
    }
    // The admin listener binds with the Kafka listeners, so a port in use stops start-up
    // (unless the listener is only the default one).
    let admin_listeners = crate::admin::server::bind_at_start_up(&config)
        .await
        .map_err(|(listener, error)| StartupError::Bind { listener, error })?;
    let admin_addrs = admin_listeners
        .iter()
        .filter_map(|l| l.local_addr().ok())
        .collect::<Vec<_>>();
    if embedded {
        crate::cluster::embedded::set_lone_voter(&mut config, &local_addrs)
            .map_err(StartupError::Config)?;
    }
    // Advertise what was configured, or what we bound (port 0 resolves to the real port).
    let advertised = if config.advertised_listeners.is_empty() {
        &config.listeners
    } else {
        &config.advertised_listeners
    };
    // A controller listener that `advertised.listeners` leaves out is advertised as
    // `listeners` has it, as Kafka falls back for controller listeners.
    let controller_names: Vec<String> = config
        .controller_listener_names
        .iter()
        .map(|n| n.to_ascii_uppercase())
        .collect();
    let fallback: Vec<(usize, &crate::config::Listener)> = if config.advertised_listeners.is_empty()
    {
        Vec::new()
    } else {
        config
            .listeners
            .iter()
            .enumerate()
            .filter(|(_, l)| {
                controller_names.contains(&l.name) && !advertised.iter().any(|a| a.name == l.name)
            })
            .collect()
    };
    let endpoints: Vec<AdvertisedEndpoint> = advertised
        .iter()
        .enumerate()
        .chain(fallback)
        .map(|(i, l)| AdvertisedEndpoint {
            name: l.name.clone(),
            host: if l.host.is_empty() || l.host == "0.0.0.0" {
                "127.0.0.1".into()
            } else {
                l.host.clone()
            },
            port: if l.port == 0 {
                local_addrs.get(i).map(|a| a.port() as i32).unwrap_or(0)
            } else {
                l.port as i32
            },
        })
        .collect();

    let replicas = Arc::new(ReplicaManager::with_config(
        logs.clone(),
        ReplicationConfig {
            local: BrokerId(config.node_id),
            replica_lag_time_max_ms: config.replica_lag_time_max_ms,
            // Leaders long-poll follower fetches, so no pause after an empty answer.
            fetcher: FetcherConfig {
                idle_backoff_ms: 0,
                ..FetcherConfig::default()
            },
        },
    ));
    let producer_ids =
        crate::cluster::producer_ids::ControllerProducerIds::new(config.node_id, replicas.clone());
    // A lone voter keeps the id its log dirs were formatted with; members derive theirs from
    // the voters, or learn it through the bootstrap servers.
    let (cluster_id, voters) = if embedded {
        (logs.cluster_id(), crate::cluster::voters(&config))
    } else {
        crate::cluster::startup::resolve_quorum(&config)
            .await
            .map_err(StartupError::Metadata)?
    };
    let cluster = crate::cluster::startup::start_cluster(
        &config,
        &cluster_id,
        voters,
        &endpoints,
        clock.clone(),
        &logs,
    )
    .await
    .map_err(StartupError::Metadata)?;
    producer_ids.attach(cluster.clone());
    let metrics = crate::metrics::BrokerMetrics::new(crate::handlers::SUPPORTED_APIS);
    let groups = Arc::new(
        GroupCoordinator::new(
            group_config(&config),
            clock.clone(),
            Arc::new(InternalTopicLog {
                topic: OFFSETS_TOPIC,
                replicas: replicas.clone(),
                clock: clock.clone(),
                required_acks: -1,
            }),
        )
        .with_metrics(metrics.group_coordinator.clone()),
    );
    let share_states = Arc::new(crate::coordinator::share_state::ShareStateCoordinator::new(
        crate::coordinator::share_state::ShareStateConfig {
            num_partitions: config.share_coordinator_state_topic_num_partitions.max(1),
            updates_per_snapshot: config
                .share_coordinator_snapshot_update_records_per_snapshot
                .max(0),
        },
        clock.clone(),
        Arc::new(InternalTopicLog {
            topic: crate::coordinator::share_state::SHARE_STATE_TOPIC_NAME,
            replicas: replicas.clone(),
            clock: clock.clone(),
            required_acks: -1,
        }),
    ));
    let persister = crate::cluster::share_persister::ClusterSharePersister::new(
        cluster.clone(),
        share_states.clone(),
        crate::cluster::share_persister::ShareStateTopic::from_config(&config),
    );
    let shares = Arc::new(
        crate::replica::share_manager::SharePartitionManager::new(
            config.group_share.max_share_sessions.max(1) as usize,
            Arc::new(persister),
        )
        .with_metrics(metrics.share_groups.clone()),
    );
    {
        let shares = shares.clone();
        groups.on_share_member_left(Arc::new(move |group, member| {
            shares.member_left(group, member)
        }));
    }
    let local_markers = LocalMarkerWriter {
        replicas: replicas.clone(),
        groups: groups.clone(),
        clock: clock.clone(),
    };
    let markers = Arc::new(crate::cluster::markers::ClusterMarkerWriter::new(
        local_markers,
    ));
    let txns = Arc::new(TransactionCoordinator::new(
        txn_config(&config),
        clock.clone(),
        Arc::new(InternalTopicLog {
            topic: TRANSACTION_TOPIC,
            replicas: replicas.clone(),
            clock: clock.clone(),
            required_acks: -1,
        }),
        producer_ids.clone(),
        markers.clone(),
    ));
    let broker = Arc::new(Broker {
        authorizer: crate::security::Authorizer::from_config(&config).map(Arc::new),
        node_id: config.node_id,
        cluster_id,
        limits: Limits {
            max_connections: config.max_connections.max(1) as usize,
            max_inflight_requests_per_connection: config.max_inflight_requests_per_connection.max(1)
                as usize,
            socket_request_max_bytes: config.socket_request_max_bytes.max(1) as usize,
        },
        replicas: replicas.clone(),
        groups,
        shares,
        share_states,
        txns,
        endpoints,
        clock,
        quotas: Arc::new(crate::security::quotas::QuotaManagers::new(
            config.quota_window_num,
            config.quota_window_size_seconds,
            config.controller_quota_window_num,
            config.controller_quota_window_size_seconds,
        )),
        metrics,
        dynamic: crate::config::DynamicBrokerConfig::new(config.clone()),
        client_metrics: Default::default(),
        txn_verifier: Default::default(),
        config,
        cluster: cluster.clone(),
    });

    {
        // A confirmed remote marker lets the coordinator complete its transaction at once.
        let weak = Arc::downgrade(&broker);
        markers.attach(
            cluster.clone(),
            Arc::new(move || {
                if let Some(b) = weak.upgrade() {
                    b.txns.tick();
                }
            }),
        );
    }

    let shutdown = CancellationToken::new();
    let background_stop = CancellationToken::new();
    let background = tokio::spawn(background_tasks(
        broker.clone(),
        shutdown.clone(),
        background_stop.clone(),
    ));
    let cleaner = tokio::spawn(crate::server::log_cleaner::run(
        broker.clone(),
        shutdown.clone(),
    ));
    // A member keeps serving through its controlled shutdown, so that its leaderships move
    // (and its quorum peers hear it) before the listeners close.
    let serving = CancellationToken::new();
    let cluster_tasks = crate::cluster::startup::spawn_tasks(
        Arc::new(broker.parts()),
        cluster.clone(),
        shutdown.clone(),
        serving.clone(),
    );
    let listeners = listeners
        .into_iter()
        .zip(&broker.config.listeners)
        .map(|(l, c)| {
            let controller = broker
                .config
                .controller_listener_names
                .iter()
                .any(|n| n.eq_ignore_ascii_case(&c.name));
            let bound = crate::server::listener::BoundListener {
                name: c.name.clone(),
                security_protocol: broker
                    .config
                    .listener_security_protocol_map
                    .get(&c.name)
                    .copied()
                    .unwrap_or(crate::config::SecurityProtocol::Plaintext),
                scope: if controller {
                    crate::handlers::ListenerScope::Controller
                } else {
                    crate::handlers::ListenerScope::Broker
                },
                tls: listener_tls.get(&c.name).cloned(),
            };
            (l, bound)
        })
        .collect();
    let admin = tokio::spawn(crate::admin::server::serve(
        broker.clone(),
        admin_listeners,
        shutdown.clone(),
    ));
    // Cluster members open their client listeners at once (their quorum may still be
    // forming, and peers fetch through them); a lone voter once it is ready, below.
    let (clients_open, clients_open_rx) = tokio::sync::watch::channel(!embedded);
    let server = tokio::spawn(crate::server::serve(
        broker.clone(),
        network.clone(),
        listeners,
        serving,
        clients_open_rx,
    ));
    // A lone voter has everything it needs locally: it returns once it is unfenced with its
    // partitions open, as a single Kafka node starts serving after its first unfence.
    // Cluster members return at once: their quorum may still be forming.
    if embedded {
        if let Err(e) = wait_ready(&cluster).await {
            shutdown.cancel();
            background_stop.cancel();
            return Err(e);
        }
        if !producer_ids.wait_for_block(EMBEDDED_READY_MAX_MS).await {
            tracing::warn!("no producer-id block from the controller yet");
        }
        clients_open.send_replace(true);
    }
    tracing::info!(
        node_id = broker.node_id,
        cluster_id = %broker.cluster_id,
        listeners = ?local_addrs,
        admin_listeners = ?admin_addrs,
        partitions = broker.replicas.all().len(),
        startup_ms = started.elapsed().as_millis() as u64,
        "strata started"
    );
    Ok(RunningBroker {
        broker,
        local_addrs,
        network,
        admin_addrs,
        shutdown,
        background_stop,
        admin,
        server,
        background,
        cleaner,
        fetchers: None,
        cluster_tasks,
    })
}

/// How long a lone voter may take to register, be unfenced and open its partitions.
const EMBEDDED_READY_MAX_MS: u64 = 30_000;

async fn wait_ready(cluster: &crate::cluster::ClusterContext) -> Result<(), StartupError> {
    let mut ready = cluster.ready.subscribe();
    let became_ready = tokio::time::timeout(
        Duration::from_millis(EMBEDDED_READY_MAX_MS),
        ready.wait_for(|r| *r),
    )
    .await
    .is_ok_and(|r| r.is_ok());
    if became_ready {
        Ok(())
    } else {
        Err(StartupError::Metadata(
            "the broker was not registered and unfenced by its own controller in time".into(),
        ))
    }
}

/// How long a share partition with nothing in flight stays in memory unused.
const SHARE_PARTITION_IDLE_MS: i64 = 10 * 60 * 1000;

/// Drops the records of `__share_group_state` partitions led here that no share partition's
/// state needs any more (below each one's oldest last snapshot), as Kafka's share coordinator
/// prunes its topic (`share.coordinator.state.topic.prune.interval.ms`).
fn prune_share_state(broker: &Broker) {
    use crate::coordinator::share_state::SHARE_STATE_TOPIC_NAME;
    for (partition, offset) in broker.share_states.redundant_offsets() {
        let Some(p) = broker.replicas.get(SHARE_STATE_TOPIC_NAME, partition) else {
            continue;
        };
        let offset = offset.min(p.high_watermark());
        if offset <= p.log_start_offset() {
            continue;
        }
        match p.delete_records_before(offset) {
            Ok(start) => tracing::debug!(partition, log_start_offset = start, "pruned share state"),
            Err(e) => tracing::debug!(partition, error = ?e, "share state not pruned"),
        }
    }
}

/// Periodic work: retention (`log.retention.check.interval.ms`), time-based flush
/// (`flush.ms`) and the flush of rolled segments (every second), recovery-point checkpoints,
/// high-watermark checkpoints (`replica.high.watermark.checkpoint.interval.ms`),
/// producer-id expiration, and stopping the replicas of a log dir that went offline (which
/// requests `shutdown` when no dir is left). Runs until `stop`.
async fn background_tasks(
    broker: Arc<Broker>,
    shutdown: CancellationToken,
    stop: CancellationToken,
) {
    let retention_every =
        Duration::from_millis(broker.config.log_retention_check_interval_ms.max(100) as u64);
    let mut retention = tokio::time::interval(retention_every);
    let mut checkpoint = tokio::time::interval(Duration::from_secs(60));
    let mut high_watermark_checkpoint = tokio::time::interval(Duration::from_millis(
        broker
            .config
            .replica_high_watermark_checkpoint_interval_ms
            .max(1) as u64,
    ));
    let mut flush = tokio::time::interval(Duration::from_millis(1000));
    let mut group_tick = tokio::time::interval(Duration::from_millis(100));
    let mut share_state_prune = tokio::time::interval(Duration::from_millis(
        broker
            .config
            .share_coordinator_state_topic_prune_interval_ms
            .max(1) as u64,
    ));
    // Kafka's isr-expiration task runs every replica.lag.time.max.ms / 2.
    let mut isr_check = tokio::time::interval(Duration::from_millis(
        (broker.config.replica_lag_time_max_ms / 2).clamp(10, 5_000) as u64,
    ));
    loop {
        tokio::select! {
            _ = stop.cancelled() => return,
            _ = retention.tick() => {
                let now = broker.now_ms();
                for p in broker.replicas.all() {
                    if let Err(e) = p.log.apply_retention(now) {
                        tracing::warn!(topic = %p.topic, partition = p.index, error = ?e, "retention failed");
                    }
                    p.expire_producers(now, broker.dynamic.current().producer_id_expiration_ms as i64);
                }
            }
            _ = share_state_prune.tick() => prune_share_state(&broker),
            _ = flush.tick() => {
                broker.txns.tick();
                // Share-partition changes no request waited on (lock expiries, releases),
                // written in the background so a failover keeps them too.
                let shares = broker.shares.clone();
                tokio::spawn(async move { shares.persist_all().await });
                broker.shares.evict_idle(broker.now_ms(), SHARE_PARTITION_IDLE_MS);
                let now = broker.now_ms();
                for p in broker.replicas.all() {
                    if let Err(e) = p.log.flush_if_due(now) {
                        tracing::warn!(topic = %p.topic, partition = p.index, error = ?e, "flush failed");
                    }
                    // Rolled segments are made durable off the append path, which bounds
                    // crash recovery to the active segment (as Kafka's flush on roll).
                    if let Err(e) = p.log.flush_sealed_segments() {
                        tracing::warn!(topic = %p.topic, partition = p.index, error = ?e, "flush of rolled segments failed");
                    }
                }
            }
            _ = group_tick.tick() => {
                broker.groups.tick();
                // Kafka halts when its last log dir fails: nothing could be served or written.
                // With a dir left the broker keeps serving it: the heartbeat reports the
                // offline dirs and the controller moves their replicas' leaderships and ISR
                // memberships to other brokers (KIP-858).
                let failures = broker.replicas.handle_log_dir_failures();
                if failures.all_offline {
                    tracing::error!(
                        offline_log_dirs = ?broker.replicas.logs().offline_log_dirs(),
                        "every log dir is offline; shutting down"
                    );
                    shutdown.cancel();
                    return;
                }
            }
            // Leaders propose shrinks through `take_alter_partitions`; sole replicas never do.
            _ = isr_check.tick() => broker.replicas.maybe_shrink_isr(broker.now_ms()),
            _ = high_watermark_checkpoint.tick() => {
                if let Err(e) = broker.replicas.checkpoint_high_watermarks() {
                    tracing::warn!(error = ?e, "high watermark checkpoint failed");
                }
            }
            _ = checkpoint.tick() => {
                if let Err(e) = broker.replicas.logs().checkpoint() {
                    tracing::warn!(error = ?e, "checkpoint failed");
                }
            }
        }
    }
}
