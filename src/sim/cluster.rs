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
//! power (KIP-966 territory); and restarts.
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use bytes::Bytes;

use super::controller::{BrokerMetadata, SimController};
use super::invariants::{AckedBatch, Checker};
use super::network::{Envelope, Network, Payload};
use super::rng::SimRng;
use crate::protocol::records::batch::parse_header;
use crate::protocol::records::RecordBatchBuilder;
use crate::replica::fetcher::FetcherConfig;
use crate::replica::manager::ReplicationConfig;
use crate::replica::{BrokerEpoch, BrokerId, PartitionConfig, ReplicaManager};
use crate::storage::{LogConfig, LogManager};

/// The shape of a run.
#[derive(Debug, Clone)]
pub struct SimConfig {
    pub brokers: i32,
    pub partitions: i32,
    pub replication_factor: usize,
    pub min_insync_replicas: i32,
    pub steps: usize,
    pub replica_lag_time_max_ms: i64,
    /// Probability per step of a fault (crash, power loss, link cut, heal).
    pub fault_probability: f64,
    pub drop_probability: f64,
    /// The controller fences a broker it has not heard from for this long.
    pub broker_session_timeout_ms: i64,
    pub broker_heartbeat_interval_ms: i64,
}

impl Default for SimConfig {
    fn default() -> Self {
        SimConfig {
            brokers: 3,
            partitions: 2,
            replication_factor: 3,
            min_insync_replicas: 2,
            steps: 400,
            replica_lag_time_max_ms: 1_000,
            fault_probability: 0.02,
            drop_probability: 0.02,
            broker_session_timeout_ms: 500,
            broker_heartbeat_interval_ms: 50,
        }
    }
}

pub const TOPIC: &str = "sim";

/// What happened in a run, to see that the faults and code paths are exercised.
#[derive(Debug, Clone, Default)]
pub struct SimStats {
    pub crashes: usize,
    pub power_losses: usize,
    pub isolations: usize,
    pub truncations: usize,
    pub isr_changes_accepted: usize,
    pub isr_changes_refused: usize,
    pub acks: usize,
    pub acks_failed: usize,
    /// Brokers the controller fenced for an expired session.
    pub fences: usize,
    /// Registrations refused while the previous incarnation's session lasted.
    pub registrations_refused: usize,
}

impl SimStats {
    pub fn add(&mut self, o: &SimStats) {
        self.crashes += o.crashes;
        self.power_losses += o.power_losses;
        self.isolations += o.isolations;
        self.truncations += o.truncations;
        self.isr_changes_accepted += o.isr_changes_accepted;
        self.isr_changes_refused += o.isr_changes_refused;
        self.acks += o.acks;
        self.acks_failed += o.acks_failed;
        self.fences += o.fences;
        self.registrations_refused += o.registrations_refused;
    }
}

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
}

/// An acks=all produce waiting for the high watermark.
struct PendingAck {
    partition: i32,
    broker: BrokerId,
    leader_epoch: i32,
    batch: AckedBatch,
    deadline_ms: i64,
}

pub struct Sim {
    pub config: SimConfig,
    pub rng: SimRng,
    pub now_ms: i64,
    pub net: Network,
    pub controller: SimController,
    pub brokers: Vec<SimBroker>,
    pub checker: Checker,
    /// Live brokers the controller cannot hear from, until when.
    isolated_until: BTreeMap<BrokerId, i64>,
    /// Controller inbox: AlterPartition requests and when they arrive.
    alter_inbox: Vec<(i64, BrokerId, crate::replica::AlterPartition)>,
    pending: Vec<PendingAck>,
    /// Next offset the consumer reads, per partition.
    consumer_position: BTreeMap<i32, i64>,
    next_value: u64,
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
            })
            .collect();
        let net = Network::new(config.drop_probability, 1, 20);
        let now_ms = 1_000_000 + rng.range(0, 1000);
        let mut sim = Sim {
            config,
            rng,
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
                vec![self.brokers[i].dir.clone()],
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
        let b = &mut self.brokers[i];
        b.node = Some(Node { logs, replicas });
        b.incarnation += 1;
        b.epoch = None;
        // A new process reads the metadata log from its start.
        b.metadata = BrokerMetadata::new();
        b.next_heartbeat_ms = self.now_ms;
        let incarnation = b.incarnation;
        self.trace(format!("start broker {id} incarnation {incarnation}"));
        self.heartbeat(i);
    }

    /// Broker `i` registers (until the controller accepts its incarnation) or heartbeats with
    /// the offset of the metadata it has read.
    fn heartbeat(&mut self, i: usize) {
        let now = self.now_ms;
        let b = &mut self.brokers[i];
        let Some(node) = &b.node else { return };
        b.next_heartbeat_ms = now + self.config.broker_heartbeat_interval_ms;
        let (id, offset) = (b.id, b.metadata.offset);
        let line = match b.epoch {
            None => match self.controller.register(id, b.incarnation, now) {
                Ok(epoch) => {
                    node.replicas.set_broker_epoch(epoch);
                    b.epoch = Some(epoch);
                    Some(format!("broker {id} registered, epoch {epoch}"))
                }
                Err(e) => {
                    self.stats.registrations_refused += 1;
                    Some(format!("broker {id} registration refused: {e:?}"))
                }
            },
            Some(epoch) => {
                let reply = self.controller.heartbeat(id, epoch, offset, now);
                (reply.error != crate::error::ErrorCode::NONE)
                    .then(|| format!("broker {id} heartbeat refused: {:?}", reply.error))
            }
        };
        if let Some(line) = line {
            self.trace(line);
        }
    }

    fn trace(&mut self, line: String) {
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
        let applied = b
            .metadata
            .publish(id, b.epoch, &node.replicas, &config, now)?;
        for line in applied {
            self.trace(format!("broker {id} applies {line}"));
        }
        Ok(())
    }

    fn crash(&mut self, i: usize, power_loss: bool) {
        let id = self.brokers[i].id;
        let Some(node) = self.brokers[i].node.take() else {
            return;
        };
        if power_loss {
            // Everything past the last fsync is gone.
            for log in node.logs.all() {
                log.truncate_to(log.recovery_point()).expect("power loss");
            }
        }
        drop(node);
        self.isolated_until.remove(&id);
        self.net.forget(id);
        self.pending.retain(|p| p.broker != id);
        self.alter_inbox.retain(|(_, b, _)| *b != id);
        // No more heartbeats: the controller fences it when its session expires.
        self.brokers[i].epoch = None;
        self.brokers[i].restart_at_ms = self.now_ms
            + if self.rng.chance(0.3) {
                self.rng.range(20, 200)
            } else {
                self.rng.range(200, 5_000)
            };
        self.stats.crashes += 1;
        self.stats.power_losses += power_loss as usize;
        self.trace(format!(
            "crash broker {id}{}",
            if power_loss { " (power loss)" } else { "" }
        ));
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
        let all_up = self
            .brokers
            .iter()
            .all(|b| b.node.is_some() && self.controller.is_active(b.id, b.epoch))
            && self.isolated_until.is_empty();
        match self.rng.range(0, 6) {
            0 | 1 => {
                if all_up {
                    let power_loss = self.rng.chance(0.5) && self.power_loss_allowed(i);
                    self.crash(i, power_loss);
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
                    self.trace(format!("isolate broker {id} from the controller"));
                }
            }
            2 | 3 => {
                let j = self.rng.range(0, self.brokers.len() as i64 - 1) as usize;
                if i != j {
                    let (a, b) = (self.brokers[i].id, self.brokers[j].id);
                    self.net.block(a, b);
                    self.trace(format!("cut link {a}-{b}"));
                }
            }
            _ => {
                self.net.heal();
                self.trace("heal links".into());
            }
        }
    }

    fn produce(&mut self) {
        let partition = self.rng.range(0, self.config.partitions as i64 - 1) as i32;
        let Some(leader) = self.client_leader(partition) else {
            return;
        };
        let Some(node) = &self.brokers[leader.0 as usize].node else {
            return;
        };
        let Some(p) = node.replicas.get(TOPIC, partition) else {
            return;
        };
        let count = self.rng.range(1, 4) as usize;
        let mut builder = RecordBatchBuilder::new(0);
        for _ in 0..count {
            self.next_value += 1;
            builder.append(
                self.now_ms,
                None,
                Some(Bytes::from(format!("value-{}", self.next_value))),
                vec![],
            );
        }
        let batch = builder.build().freeze();
        let crc = parse_header(&batch).expect("own batch").crc;
        match p.append_records_with_acks(batch, -1, self.now_ms) {
            Ok(out) => {
                self.pending.push(PendingAck {
                    partition,
                    broker: leader,
                    leader_epoch: out.leader_epoch,
                    batch: AckedBatch {
                        base_offset: out.base_offset,
                        last_offset: out.last_offset,
                        crc,
                    },
                    deadline_ms: self.now_ms + 5_000,
                });
            }
            Err(e) => {
                let line = format!("produce p{partition} to {leader} refused: {:?}", e.code());
                self.trace(line);
            }
        }
    }

    /// The broker a client sends to: the controller's leader, or (stale metadata) any live
    /// broker that believes it leads.
    fn client_leader(&mut self, partition: i32) -> Option<BrokerId> {
        if self.rng.chance(0.8) {
            return self
                .controller
                .partition(TOPIC, partition)
                .and_then(|c| c.leader);
        }
        let claimants: Vec<BrokerId> = self
            .brokers
            .iter()
            .filter(|b| {
                b.node
                    .as_ref()
                    .and_then(|n| n.replicas.get(TOPIC, partition))
                    .is_some_and(|p| p.is_leader())
            })
            .map(|b| b.id)
            .collect();
        if claimants.is_empty() {
            return None;
        }
        Some(claimants[self.rng.range(0, claimants.len() as i64 - 1) as usize])
    }

    fn complete_acks(&mut self) {
        let now = self.now_ms;
        let mut still = Vec::new();
        for ack in std::mem::take(&mut self.pending) {
            let outcome = self.brokers[ack.broker.0 as usize]
                .node
                .as_ref()
                .and_then(|n| n.replicas.get(TOPIC, ack.partition))
                .map(|p| p.acks_all_outcome(ack.batch.last_offset + 1, ack.leader_epoch));
            match outcome {
                Some(None) if now < ack.deadline_ms => still.push(ack),
                Some(Some(Ok(()))) => {
                    self.trace.push(format!(
                        "{now:>8} acked p{} {}..={} by {}",
                        ack.partition, ack.batch.base_offset, ack.batch.last_offset, ack.broker
                    ));
                    self.checker.acked(ack.partition, ack.batch);
                    self.stats.acks += 1;
                }
                _ => self.stats.acks_failed += 1,
            }
        }
        self.pending = still;
    }

    /// A consumer reads from each partition's leader: never past the high watermark, and what
    /// it reads must never be lost.
    fn consume(&mut self) -> Result<(), String> {
        for partition in 0..self.config.partitions {
            let Some(leader) = self.client_leader(partition) else {
                continue;
            };
            let Some(p) = self.brokers[leader.0 as usize]
                .node
                .as_ref()
                .and_then(|n| n.replicas.get(TOPIC, partition))
            else {
                continue;
            };
            if !p.is_leader() {
                continue;
            }
            let position = self.consumer_position.get(&partition).copied().unwrap_or(0);
            let hw = p.high_watermark();
            let data = match p.read(
                position,
                4096,
                crate::replica::partition::Isolation::ReadUncommitted,
                true,
            ) {
                Ok(d) => d,
                // A new leader whose high watermark is still behind what we consumed.
                Err(_) => continue,
            };
            for (h, _) in crate::protocol::records::batch::BatchIter::new(&data.records) {
                if h.last_offset() >= hw {
                    return Err(format!(
                        "consumer read p{partition} batch {}..={} past the high watermark {hw}",
                        h.base_offset,
                        h.last_offset()
                    ));
                }
                self.checker.acked(
                    partition,
                    AckedBatch {
                        base_offset: h.base_offset,
                        last_offset: h.last_offset(),
                        crc: h.crc,
                    },
                );
                self.consumer_position
                    .insert(partition, h.last_offset() + 1);
            }
        }
        Ok(())
    }

    /// One step: time moves, messages arrive, brokers fetch and report, the controller
    /// answers, clients produce and consume, maybe a fault; then the invariants.
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
            self.trace(format!("broker {b} heard from again"));
        }
        for b in self.controller.fence_expired(now) {
            self.stats.fences += 1;
            self.trace(format!("controller fenced broker {b}: session expired"));
        }
        for env in self.net.deliver_due(now) {
            let Some(node) = &self.brokers[env.to.0 as usize].node else {
                continue;
            };
            match env.payload {
                Payload::FetchRequest(id, req) => {
                    let resp =
                        node.replicas
                            .serve_follower_fetch(&req, &|t| Some(t.topic.clone()), now);
                    for (t, p) in req
                        .topics
                        .iter()
                        .flat_map(|t| t.partitions.iter().map(move |p| (t, p)))
                    {
                        let diverged =
                            resp.responses
                                .iter()
                                .flat_map(|r| r.partitions.iter())
                                .any(|r| {
                                    r.partition_index == p.partition && r.diverging_epoch.epoch >= 0
                                });
                        if diverged {
                            let line = format!(
                                "broker {} answers diverging to {} (request {id}) for {}-{}: fetch offset {} last fetched epoch {}",
                                env.to, env.from, t.topic, p.partition, p.fetch_offset, p.last_fetched_epoch
                            );
                            self.trace.push(format!("{now:>8} {line}"));
                        }
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
                        let line = format!(
                            "broker {} truncated after fetching from {} (request {id}): {}",
                            env.to,
                            env.from,
                            diverging.join(", ")
                        );
                        self.trace(line);
                    }
                }
            }
        }
        for i in 0..self.brokers.len() {
            let id = self.brokers[i].id;
            if self.brokers[i].node.is_none() {
                if now >= self.brokers[i].restart_at_ms {
                    self.start_broker(i);
                }
                continue;
            }
            if now >= self.brokers[i].next_heartbeat_ms && !self.isolated_until.contains_key(&id) {
                self.heartbeat(i);
            }
            let Some(node) = &self.brokers[i].node else {
                continue;
            };
            let requests = node.replicas.poll_fetch_requests(now);
            node.replicas.maybe_shrink_isr(now);
            let alters = node.replicas.take_alter_partitions();
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
            if self.isolated_until.contains_key(&id) {
                // Lost on the way; the broker's request times out.
                for a in alters {
                    if let Some(node) = &self.brokers[i].node {
                        node.replicas.on_alter_partition_error(
                            &a,
                            crate::replica::AlterPartitionError::NotLeaderOrFollower,
                        );
                    }
                }
                continue;
            }
            for a in alters {
                let at = now + self.rng.range(1, 30);
                self.alter_inbox.push((at, id, a));
            }
        }
        // The controller answers AlterPartition requests that arrived.
        let (due, later): (Vec<_>, Vec<_>) = std::mem::take(&mut self.alter_inbox)
            .into_iter()
            .partition(|(at, _, _)| *at <= now);
        self.alter_inbox = later;
        let requests: Vec<_> = due.iter().map(|(_, _, r)| r.clone()).collect();
        let results = self.controller.alter_partitions(&requests);
        for ((_, from, req), result) in due.into_iter().zip(results) {
            match result {
                Ok(c) => {
                    self.stats.isr_changes_accepted += 1;
                    let line = format!(
                        "alter p{} isr {:?} by {from} accepted",
                        req.partition, c.isr
                    );
                    self.trace(line);
                    // The response follows the commit: the leader reads the log that far.
                    self.publish_metadata(from.0 as usize)?;
                }
                Err(e) => {
                    self.stats.isr_changes_refused += 1;
                    let line = format!("alter p{} by {from} refused: {e:?}", req.partition);
                    self.trace(line);
                    if let Some(node) = &self.brokers[from.0 as usize].node {
                        node.replicas.on_alter_partition_error(&req, e);
                    }
                }
            }
        }
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
        let step_check = self.rng.next_u64();
        let mut checker = std::mem::take(&mut self.checker);
        let result = checker.check(self, step_check);
        self.checker = checker;
        result
    }

    /// Runs the configured number of steps, then heals everything, lets the cluster settle and
    /// checks every acknowledged record on every ISR member.
    pub fn run(&mut self) -> Result<(), String> {
        for _ in 0..self.config.steps {
            self.step()?;
        }
        self.config.fault_probability = 0.0;
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
