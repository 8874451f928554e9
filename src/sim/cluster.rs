//! The simulated cluster: in-process brokers (a `LogManager` over a temp dir and a
//! `ReplicaManager` each), the simulated network carrying their replica fetches, the
//! controller (real decisions, see `controller.rs`) with broker registration and heartbeats,
//! an acks=all producer and a consumer, and the fault schedule — all driven by one
//! seeded RNG and a manual clock, one step at a time, with the invariants checked after every
//! step.
//!
//! Faults: dropped, delayed and cut links; isolation of a live broker from the controller
//! (its heartbeats, metadata and AlterPartitions do not get through, so it is fenced when its
//! session expires and may go on believing it leads: a zombie leader,
//! which clients with stale metadata still produce to and consume from); process crashes (the OS keeps what was written);
//! power losses, which lose everything past each log's recovery point (the last fsync) and are
//! only injected while every partition the broker is in the ISR of has another live ISR member
//! — Kafka, which does not fsync by default, loses acknowledged data when the whole ISR loses
//! power (KIP-966 territory); a failed log dir on one of a broker's two dirs
//! (`log_dirs.rs`, KIP-858); and restarts. The controller-side operations (controlled
//! shutdown, reassignment, preferred election, controller failover) are in `admin.rs`; the
//! answer to a committed AlterPartition is sometimes lost, and the leader's retry must be
//! refused (`answer_alter_partitions`).
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use super::clients::PendingAck;
use super::controller::{BrokerMetadata, SimController};
use super::invariants::Checker;
use super::network::{Envelope, Network, Payload};
use super::rng::SimRng;
use crate::replica::fetcher::FetcherConfig;
use crate::replica::manager::ReplicationConfig;
use crate::replica::{BrokerEpoch, BrokerId, PartitionConfig, ReplicaManager};
use crate::storage::{LogConfig, LogManager};

pub use super::config::{SimConfig, SimStats};

pub const TOPIC: &str = "sim";

/// A running broker process.
pub struct Node {
    pub logs: Arc<LogManager>,
    pub replicas: ReplicaManager,
}

pub struct SimBroker {
    pub id: BrokerId,
    pub dir: PathBuf,
    pub node: Option<Node>,
    /// When a crashed broker comes back.
    pub restart_at_ms: i64,
    /// Of the current process; each start is a new incarnation.
    pub incarnation: u32,
    /// The broker epoch the controller gave the current process, once registered.
    pub epoch: Option<BrokerEpoch>,
    /// The current process's copy of the metadata log.
    pub metadata: BrokerMetadata,
    /// When the current process next registers (until registered) or heartbeats.
    pub next_heartbeat_ms: i64,
    /// A controlled shutdown in progress: until when the broker waits for the controller to
    /// let it go before it stops anyway (Kafka's broker gives up after a timeout too).
    pub shutdown_deadline_ms: Option<i64>,
    /// Changes whenever this broker's logs may have lost or rewritten records (a new process,
    /// a truncation, a replica deleted): the checker's memo of batches already found on them
    /// holds only within one generation.
    pub log_generation: u64,
    /// AlterPartitions that did not reach the controller: the process sends them again until
    /// they are answered or a newer proposal for the partition replaces them, as
    /// `cluster::lifecycle::run_alter_partition_sender` does. Gone with the process.
    pub alter_unsent: Vec<crate::replica::AlterPartition>,
    /// One of its log dirs failed: when its disk is replaced (the process restarts).
    pub log_dir_repair_at_ms: Option<i64>,
}

/// How a broker process ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopKind {
    /// The process dies; the OS keeps what was written.
    Crash,
    /// Everything past each log's last fsync is lost too.
    PowerLoss,
    /// The controller let it go: it flushes and stops.
    Controlled,
    /// It asked to shut down but was not let go in time, and stops anyway.
    ShutdownTimeout,
}

/// An AlterPartition on its way to the controller.
#[derive(Debug, Clone)]
pub struct AlterPartitionInFlight {
    pub arrives_at_ms: i64,
    pub from: BrokerId,
    pub request: crate::replica::AlterPartition,
    /// The same request sent again because the answer to a committed one was lost: the
    /// controller must refuse it (its partition epoch is stale), never commit it twice.
    pub retry_of_committed: bool,
}

/// Of the AlterPartitions the controller commits, the share whose answer is lost (drawn from
/// the operations' stream, so only runs with controller operations see it).
const ALTER_PARTITION_ANSWER_LOSS: f64 = 0.1;

pub struct Sim {
    pub config: SimConfig,
    pub rng: SimRng,
    /// The controller-side operations' own random stream (see `SimConfig::admin_probability`).
    pub(super) ops_rng: SimRng,
    /// While a new active controller is being elected nothing reaches the controller.
    pub(super) controller_down_until_ms: i64,
    next_log_generation: u64,
    pub now_ms: i64,
    pub net: Network,
    pub controller: SimController,
    pub brokers: Vec<SimBroker>,
    pub checker: Checker,
    /// Live brokers the controller cannot hear from, until when.
    pub(super) isolated_until: BTreeMap<BrokerId, i64>,
    /// Controller inbox: AlterPartition requests and when they arrive.
    pub(super) alter_inbox: Vec<AlterPartitionInFlight>,
    pub(super) pending: Vec<PendingAck>,
    /// Next offset the consumer reads, per partition.
    pub(super) consumer_position: BTreeMap<i32, i64>,
    pub(super) next_value: u64,
    pub trace: Vec<String>,
    pub stats: SimStats,
    _dir: tempfile::TempDir,
}

fn log_config() -> LogConfig {
    LogConfig {
        segment_bytes: 8 * 1024,
        segment_index_bytes: 4 * 1024,
        index_interval_bytes: 256,
        ..LogConfig::default()
    }
}

impl Sim {
    pub fn new(seed: u64, config: SimConfig) -> Self {
        let base = if std::path::Path::new("/dev/shm").is_dir() {
            tempfile::Builder::new()
                .prefix("strata-sim")
                .tempdir_in("/dev/shm")
        } else {
            tempfile::tempdir()
        }
        .expect("temp dir");
        let mut rng = SimRng::new(seed);
        let controller = SimController::new(config.broker_session_timeout_ms);
        let ids: Vec<BrokerId> = (0..config.brokers).map(BrokerId).collect();
        let brokers = ids
            .iter()
            .map(|id| SimBroker {
                id: *id,
                dir: base.path().join(format!("broker-{}", id.0)),
                node: None,
                restart_at_ms: 0,
                incarnation: 0,
                epoch: None,
                metadata: BrokerMetadata::new(),
                next_heartbeat_ms: 0,
                shutdown_deadline_ms: None,
                log_generation: 0,
                alter_unsent: Vec::new(),
                log_dir_repair_at_ms: None,
            })
            .collect();
        let net = Network::new(config.drop_probability, 1, 20);
        let now_ms = 1_000_000 + rng.range(0, 1000);
        let mut sim = Sim {
            config,
            rng,
            ops_rng: SimRng::new(seed.rotate_left(32) ^ 0x5EED_0F_AD_0001),
            controller_down_until_ms: 0,
            next_log_generation: 0,
            now_ms,
            net,
            controller,
            brokers,
            checker: Checker::default(),
            isolated_until: BTreeMap::new(),
            alter_inbox: Vec::new(),
            pending: Vec::new(),
            consumer_position: BTreeMap::new(),
            next_value: 0,
            trace: Vec::new(),
            stats: SimStats::default(),
            _dir: base,
        };
        for i in 0..sim.brokers.len() {
            sim.start_broker(i);
        }
        // Every broker catches up with its registration and is unfenced by its first
        // heartbeat; then the topic is created over the live brokers.
        for i in 0..sim.brokers.len() {
            sim.publish_metadata(i).expect("publish");
            sim.heartbeat(i);
        }
        let topic_id = sim.rng.next_u64().to_be_bytes().repeat(2);
        let mut id = [0u8; 16];
        id.copy_from_slice(&topic_id);
        let (partitions, rf, min_isr) = (
            sim.config.partitions,
            sim.config.replication_factor as i16,
            sim.config.min_insync_replicas,
        );
        sim.controller
            .create_topic(TOPIC, partitions, rf, min_isr, id)
            .expect("create topic");
        for i in 0..sim.brokers.len() {
            sim.publish_metadata(i).expect("publish");
        }
        sim
    }

    fn partition_config(&self) -> PartitionConfig {
        PartitionConfig {
            log: log_config(),
            min_insync_replicas: self.config.min_insync_replicas,
            ..PartitionConfig::default()
        }
    }

    fn start_broker(&mut self, i: usize) {
        let id = self.brokers[i].id;
        let logs = Arc::new(
            LogManager::open(
                vec![
                    self.brokers[i].dir.join("d0"),
                    self.brokers[i].dir.join("d1"),
                ],
                id.0,
                log_config(),
                self.now_ms,
            )
            .expect("open log manager"),
        );
        let replicas = ReplicaManager::with_config(
            logs.clone(),
            ReplicationConfig {
                local: id,
                replica_lag_time_max_ms: self.config.replica_lag_time_max_ms,
                fetcher: FetcherConfig {
                    max_bytes: 64 * 1024,
                    partition_max_bytes: 16 * 1024,
                    backoff_ms: 100,
                    idle_backoff_ms: 20,
                    request_timeout_ms: 500,
                    ..FetcherConfig::default()
                },
            },
        );
        let generation = self.new_log_generation();
        let b = &mut self.brokers[i];
        b.node = Some(Node { logs, replicas });
        b.incarnation += 1;
        b.epoch = None;
        b.shutdown_deadline_ms = None;
        b.log_dir_repair_at_ms = None;
        b.log_generation = generation;
        // A new process reads the metadata log from its start.
        b.metadata = BrokerMetadata::new();
        b.next_heartbeat_ms = self.now_ms;
        let incarnation = b.incarnation;
        trace!(self, "start broker {id} incarnation {incarnation}");
        self.heartbeat(i);
    }

    pub(super) fn new_log_generation(&mut self) -> u64 {
        self.next_log_generation += 1;
        self.next_log_generation
    }

    /// Whether the controller can be reached (no failover in progress).
    pub(super) fn controller_available(&self) -> bool {
        self.now_ms >= self.controller_down_until_ms
    }

    /// Broker `i` registers (until the controller accepts its incarnation) or heartbeats with
    /// the offset of the metadata it has read, asking to shut down once it wants to; it stops
    /// when the controller lets it.
    fn heartbeat(&mut self, i: usize) {
        let now = self.now_ms;
        let b = &mut self.brokers[i];
        if b.node.is_none() {
            return;
        }
        b.next_heartbeat_ms = now + self.config.broker_heartbeat_interval_ms;
        if now < self.controller_down_until_ms {
            // No active controller yet: the request times out and the next one follows.
            return;
        }
        let (id, offset, incarnation, epoch) = (b.id, b.metadata.offset, b.incarnation, b.epoch);
        let want_shutdown = b.shutdown_deadline_ms.is_some();
        match epoch {
            None => match self.register_with_log_dirs(i, incarnation) {
                Ok(epoch) => {
                    if let Some(node) = &self.brokers[i].node {
                        node.replicas.set_broker_epoch(epoch);
                    }
                    self.brokers[i].epoch = Some(epoch);
                    trace!(self, "broker {id} registered, epoch {epoch}");
                }
                Err(e) => {
                    self.stats.registrations_refused += 1;
                    trace!(self, "broker {id} registration refused: {e:?}");
                }
            },
            Some(epoch) => {
                let reply = self.heartbeat_with_log_dirs(i, epoch, offset, want_shutdown);
                if reply.error != crate::error::ErrorCode::NONE {
                    trace!(self, "broker {id} heartbeat refused: {:?}", reply.error);
                } else if want_shutdown && reply.should_shutdown {
                    self.stop(i, StopKind::Controlled);
                }
            }
        }
    }

    pub(super) fn push_trace(&mut self, line: String) {
        self.trace.push(format!("{:>8} {line}", self.now_ms));
    }

    /// Broker `i` reads the metadata log to its end and applies the partitions that changed
    /// (not while it is cut off from the controller).
    fn publish_metadata(&mut self, i: usize) -> Result<(), String> {
        let config = self.partition_config();
        let now = self.now_ms;
        if self.isolated_until.contains_key(&self.brokers[i].id) {
            return Ok(());
        }
        let b = &mut self.brokers[i];
        let Some(node) = &b.node else {
            return Ok(());
        };
        b.metadata.catch_up(&self.controller.log);
        let id = b.id;
        let published =
            b.metadata
                .publish(id, b.epoch, &node.replicas, &config, now, self.config.trace)?;
        if published.removed > 0 {
            self.stats.replicas_removed += published.removed;
            self.brokers[i].log_generation = self.new_log_generation();
        }
        for line in published.lines {
            trace!(self, "broker {id} applies {line}");
        }
        Ok(())
    }

    /// Ends broker `i`'s process; it comes back after a while as a new incarnation.
    pub(super) fn stop(&mut self, i: usize, kind: StopKind) {
        let id = self.brokers[i].id;
        let Some(node) = self.brokers[i].node.take() else {
            return;
        };
        match kind {
            StopKind::PowerLoss => {
                // Everything past the last fsync is gone.
                for log in node.logs.all() {
                    log.truncate_to(log.recovery_point()).expect("power loss");
                }
            }
            StopKind::Controlled => {
                for log in node.logs.all() {
                    log.flush().expect("flush at shutdown");
                }
                // As a broker's clean shutdown: the restarted replicas start from these.
                node.replicas
                    .checkpoint_high_watermarks()
                    .expect("high watermark checkpoint");
            }
            // A crash leaves the checkpoint of an earlier stop, as a periodic one would be:
            // older than the log, which the restarted replica must survive too.
            StopKind::Crash | StopKind::ShutdownTimeout => {}
        }
        drop(node);
        self.isolated_until.remove(&id);
        self.net.forget(id);
        self.pending.retain(|p| p.broker != id);
        self.alter_inbox.retain(|a| a.from != id);
        self.brokers[i].alter_unsent.clear();
        // No more heartbeats: the controller fences it when its session expires.
        self.brokers[i].epoch = None;
        self.brokers[i].shutdown_deadline_ms = None;
        let down_ms = match kind {
            StopKind::Crash | StopKind::PowerLoss => {
                if self.rng.chance(0.3) {
                    self.rng.range(20, 200)
                } else {
                    self.rng.range(200, 5_000)
                }
            }
            StopKind::Controlled | StopKind::ShutdownTimeout => self.ops_rng.range(50, 3_000),
        };
        self.brokers[i].restart_at_ms = self.now_ms + down_ms;
        match kind {
            StopKind::Crash => self.stats.crashes += 1,
            StopKind::PowerLoss => {
                self.stats.crashes += 1;
                self.stats.power_losses += 1;
            }
            StopKind::Controlled => self.stats.controlled_shutdowns += 1,
            StopKind::ShutdownTimeout => self.stats.shutdown_timeouts += 1,
        }
        trace!(self, "stop broker {id}: {kind:?}");
    }

    /// Every broker is running, registered, unfenced, heard by an available controller and
    /// not shutting down: one more may fail without making the cluster unavailable.
    pub(super) fn all_up(&self) -> bool {
        self.brokers.iter().all(|b| {
            b.node.is_some()
                && b.shutdown_deadline_ms.is_none()
                && self.controller.is_active(b.id, b.epoch)
                && b.log_dir_repair_at_ms.is_none()
        }) && self.isolated_until.is_empty()
            && self.controller_available()
    }

    /// Whether broker `i` may lose power without losing acknowledged data: every partition
    /// whose ISR it is in has another live member.
    fn power_loss_allowed(&self, i: usize) -> bool {
        let id = self.brokers[i].id;
        self.controller.partitions(TOPIC).values().all(|p| {
            !p.isr.contains(&id)
                || p.isr
                    .iter()
                    .any(|m| *m != id && self.brokers[m.0 as usize].node.is_some())
        })
    }

    fn inject_fault(&mut self) {
        let i = self.rng.range(0, self.brokers.len() as i64 - 1) as usize;
        // At most one broker down (or cut off from the controller) at a time keeps the
        // cluster available.
        let all_up = self.all_up();
        match self.rng.range(0, 6) {
            0 | 1 => {
                if all_up {
                    let power_loss = self.rng.chance(0.5) && self.power_loss_allowed(i);
                    let kind = if power_loss {
                        StopKind::PowerLoss
                    } else {
                        StopKind::Crash
                    };
                    self.stop(i, kind);
                }
            }
            5 => {
                if all_up {
                    let id = self.brokers[i].id;
                    let until = self.now_ms + self.rng.range(300, 4_000);
                    self.isolated_until.insert(id, until);
                    self.stats.isolations += 1;
                    if self.rng.chance(0.5) {
                        // Cut off from the other brokers too.
                        for b in 0..self.brokers.len() as i32 {
                            if b != id.0 {
                                self.net.block(id, BrokerId(b));
                            }
                        }
                    }
                    trace!(self, "isolate broker {id} from the controller");
                }
            }
            2 | 3 => {
                let j = self.rng.range(0, self.brokers.len() as i64 - 1) as usize;
                if i != j {
                    let (a, b) = (self.brokers[i].id, self.brokers[j].id);
                    self.net.block(a, b);
                    trace!(self, "cut link {a}-{b}");
                }
            }
            _ => {
                if all_up && self.rng.chance(0.2) {
                    self.fail_log_dir(i);
                } else {
                    self.net.heal();
                    trace!(self, "heal links");
                }
            }
        }
    }

    /// Replica fetches and their answers that arrived by now.
    fn deliver_messages(&mut self) {
        let now = self.now_ms;
        for env in self.net.deliver_due(now) {
            let Some(node) = &self.brokers[env.to.0 as usize].node else {
                continue;
            };
            match env.payload {
                Payload::FetchRequest(id, req) => {
                    let resp =
                        node.replicas
                            .serve_follower_fetch(&req, &|t| Some(t.topic.clone()), now);
                    if self.config.trace {
                        self.trace_diverging(&env.from, &env.to, id, &req, &resp);
                    }
                    let reply = Envelope {
                        from: env.to,
                        to: env.from,
                        payload: Payload::FetchResponse(id, resp),
                    };
                    self.net.send(&mut self.rng, now, reply);
                }
                Payload::FetchResponse(id, resp) => {
                    let outcome = node.replicas.on_fetch_response(env.from, id, &resp, now);
                    self.stats.truncations += outcome.truncations;
                    if outcome.truncations > 0 {
                        self.brokers[env.to.0 as usize].log_generation = self.new_log_generation();
                        if self.config.trace {
                            let diverging: Vec<String> = resp
                                .responses
                                .iter()
                                .flat_map(|t| t.partitions.iter())
                                .filter(|p| p.diverging_epoch.epoch >= 0)
                                .map(|p| {
                                    format!(
                                        "p{} diverging epoch {} ends at {} (hw {})",
                                        p.partition_index,
                                        p.diverging_epoch.epoch,
                                        p.diverging_epoch.end_offset,
                                        p.high_watermark
                                    )
                                })
                                .collect();
                            trace!(
                                self,
                                "broker {} truncated after fetching from {} (request {id}): {}",
                                env.to,
                                env.from,
                                diverging.join(", ")
                            );
                        }
                    }
                }
            }
        }
    }

    fn trace_diverging(
        &mut self,
        from: &BrokerId,
        to: &BrokerId,
        id: u64,
        req: &crate::protocol::messages::fetch_request::FetchRequest,
        resp: &crate::protocol::messages::fetch_response::FetchResponse,
    ) {
        for (t, p) in req
            .topics
            .iter()
            .flat_map(|t| t.partitions.iter().map(move |p| (t, p)))
        {
            let diverged = resp
                .responses
                .iter()
                .flat_map(|r| r.partitions.iter())
                .any(|r| r.partition_index == p.partition && r.diverging_epoch.epoch >= 0);
            if diverged {
                trace!(
                    self,
                    "broker {to} answers diverging to {from} (request {id}) for {}-{}: fetch offset {} last fetched epoch {}",
                    t.topic,
                    p.partition,
                    p.fetch_offset,
                    p.last_fetched_epoch
                );
            }
        }
    }

    /// One step: time moves, messages arrive, brokers fetch and report, the controller
    /// answers, clients produce and consume, maybe a fault or a controller-side operation;
    /// then the invariants.
    pub fn step(&mut self) -> Result<(), String> {
        self.now_ms += self.rng.range(1, 25);
        let now = self.now_ms;
        let returning: Vec<BrokerId> = self
            .isolated_until
            .iter()
            .filter(|(_, until)| **until <= now)
            .map(|(b, _)| *b)
            .collect();
        for b in returning {
            self.isolated_until.remove(&b);
            trace!(self, "broker {b} heard from again");
        }
        if self.controller_available() {
            for b in self.controller.fence_expired(now) {
                self.stats.fences += 1;
                trace!(self, "controller fenced broker {b}: session expired");
            }
        }
        self.deliver_messages();
        for i in 0..self.brokers.len() {
            let id = self.brokers[i].id;
            if self.brokers[i].node.is_none() {
                if now >= self.brokers[i].restart_at_ms {
                    self.start_broker(i);
                }
                continue;
            }
            if self.brokers[i]
                .shutdown_deadline_ms
                .is_some_and(|deadline| now >= deadline)
            {
                self.stop(i, StopKind::ShutdownTimeout);
                continue;
            }
            if !self.tick_log_dirs(i) {
                continue;
            }
            if now >= self.brokers[i].next_heartbeat_ms && !self.isolated_until.contains_key(&id) {
                self.heartbeat(i);
            }
            let mut alters = std::mem::take(&mut self.brokers[i].alter_unsent);
            let Some(node) = &self.brokers[i].node else {
                continue;
            };
            let requests = node.replicas.poll_fetch_requests(now);
            node.replicas.maybe_shrink_isr(now);
            for proposal in node.replicas.take_alter_partitions() {
                alters
                    .retain(|a| !(a.topic == proposal.topic && a.partition == proposal.partition));
                alters.push(proposal);
            }
            // The replica manager hands them out in hash order: a seed replays exactly only
            // if they draw their delays in one order.
            alters.sort_by(|a, b| (&a.topic, a.partition).cmp(&(&b.topic, b.partition)));
            if self.rng.chance(0.05) {
                // The periodic flusher.
                for log in node.logs.all() {
                    log.flush().expect("flush");
                }
            }
            for (to, request_id, req) in requests {
                let env = Envelope {
                    from: id,
                    to,
                    payload: Payload::FetchRequest(request_id, req),
                };
                self.net.send(&mut self.rng, now, env);
            }
            if self.isolated_until.contains_key(&id) || !self.controller_available() {
                // Lost on the way; the sender retries them while the leader keeps them
                // pending (and out of its high watermark's way).
                if !alters.is_empty() {
                    self.stats.alter_partitions_resent += 1;
                }
                self.brokers[i].alter_unsent = alters;
                continue;
            }
            for request in alters {
                let arrives_at_ms = now + self.rng.range(1, 30);
                self.alter_inbox.push(AlterPartitionInFlight {
                    arrives_at_ms,
                    from: id,
                    request,
                    retry_of_committed: false,
                });
            }
        }
        self.answer_alter_partitions()?;
        // Metadata reaches each broker with some delay.
        for i in 0..self.brokers.len() {
            if self.rng.chance(0.3) {
                self.publish_metadata(i)?;
            }
        }
        if self.rng.chance(0.3) {
            self.produce();
        }
        self.complete_acks();
        self.consume()?;
        if self.rng.chance(self.config.fault_probability) {
            self.inject_fault();
        }
        if self.config.admin_probability > 0.0 && self.ops_rng.chance(self.config.admin_probability)
        {
            self.admin_operation()?;
        }
        for partition in std::mem::take(&mut self.controller.completed_reassignments) {
            self.stats.reassignments_completed += 1;
            // Its acknowledged records must all be on the new replica set.
            self.checker.check_in_full(partition);
            trace!(self, "reassignment of p{partition} completed");
        }
        if let Some(v) = self.controller.violation.take() {
            return Err(v);
        }
        let step_check = self.rng.next_u64();
        let mut checker = std::mem::take(&mut self.checker);
        let result = checker.check(self, step_check);
        self.checker = checker;
        result
    }

    /// The controller answers the AlterPartition requests that arrived. The answer to a
    /// committed one is sometimes lost: the leader then sends the same request again (as
    /// `cluster::lifecycle` does after a network error) and reads the new state from
    /// metadata in its own time.
    fn answer_alter_partitions(&mut self) -> Result<(), String> {
        let now = self.now_ms;
        let (due, later): (Vec<_>, Vec<_>) = std::mem::take(&mut self.alter_inbox)
            .into_iter()
            .partition(|a| a.arrives_at_ms <= now);
        self.alter_inbox = later;
        if due.is_empty() {
            return Ok(());
        }
        let requests: Vec<_> = due.iter().map(|a| a.request.clone()).collect();
        let results = self.controller.alter_partitions(&requests);
        for (a, result) in due.into_iter().zip(results) {
            let (from, req) = (a.from, a.request);
            match result {
                Ok(c) if a.retry_of_committed => {
                    return Err(format!(
                        "alter p{} isr {:?} by {from}, committed once and retried after its \
                         answer was lost, was committed again (epoch {:?})",
                        req.partition, c.isr, req.partition_epoch
                    ));
                }
                Ok(c) => {
                    self.stats.isr_changes_accepted += 1;
                    trace!(
                        self,
                        "alter p{} isr {:?} by {from} accepted",
                        req.partition,
                        c.isr
                    );
                    let answer_lost = self.config.admin_probability > 0.0
                        && self.ops_rng.chance(ALTER_PARTITION_ANSWER_LOSS);
                    if answer_lost {
                        self.stats.alter_partition_answers_lost += 1;
                        let arrives_at_ms = now + self.ops_rng.range(20, 300);
                        trace!(
                            self,
                            "answer to alter p{} by {from} lost; sent again, arriving at {arrives_at_ms}",
                            req.partition
                        );
                        self.alter_inbox.push(AlterPartitionInFlight {
                            arrives_at_ms,
                            from,
                            request: req,
                            retry_of_committed: true,
                        });
                    } else {
                        // The response follows the commit: the leader reads the log that far.
                        self.publish_metadata(from.0 as usize)?;
                    }
                }
                Err(e) => {
                    self.stats.isr_changes_refused += 1;
                    trace!(self, "alter p{} by {from} refused: {e:?}", req.partition);
                    if let Some(node) = &self.brokers[from.0 as usize].node {
                        node.replicas.on_alter_partition_error(&req, e);
                    }
                }
            }
        }
        Ok(())
    }

    /// Runs the configured number of steps, then heals everything, lets the cluster settle and
    /// checks every acknowledged record on every ISR member.
    pub fn run(&mut self) -> Result<(), String> {
        for _ in 0..self.config.steps {
            self.step()?;
        }
        self.config.fault_probability = 0.0;
        self.config.admin_probability = 0.0;
        self.net.heal();
        self.isolated_until.clear();
        for _ in 0..400 {
            self.step()?;
        }
        let mut checker = std::mem::take(&mut self.checker);
        let result = checker.check_all(self);
        self.checker = checker;
        result
    }
}
