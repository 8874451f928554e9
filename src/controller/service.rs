//! The controller as a service (Kafka's `QuorumController`): requests from brokers and admin
//! clients become controller operations over the current [`MetadataImage`]; each operation's
//! records are proposed to the quorum and its reply is sent once they are committed and
//! applied. Operations run one at a time, each against the image its predecessor left, so two
//! requests can never decide from the same stale state. Only the quorum leader serves them;
//! elsewhere they fail with NOT_CONTROLLER and the sender looks for the leader.
//!
//! The only state outside the log is the brokers' last heartbeat times (soft state, as in
//! Kafka's `BrokerHeartbeatManager`): a newly elected controller starts every session afresh.
use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::clock::SharedClock;
use crate::config::BrokerConfig;
use crate::error::ErrorCode;

use super::image::MetadataImage;
use super::records::MetadataRecord;
use super::{BrokerHeartbeats, ControllerConfig, Quorum, QuorumError, RaftQuorum};

pub type MetadataQuorum = RaftQuorum<MetadataImage>;

#[derive(Debug, Clone)]
pub enum ControllerError {
    /// This node does not lead the quorum (any more).
    NotController,
    /// The quorum could not commit the operation's records.
    Quorum(String),
    /// The operation did not get its turn, or its records were not committed, within
    /// [`OPERATION_TIMEOUT_MS`].
    TimedOut,
}

/// How long one operation may take from waiting for its turn to its records' commit. A
/// leader that lost its quorum still leads in openraft, so without this bound its first
/// proposal would wait forever, holding every later operation (broker heartbeats among them)
/// behind it. Kafka's controller events carry deadlines and fail with REQUEST_TIMED_OUT.
pub const OPERATION_TIMEOUT_MS: u64 = 10_000;

impl ControllerError {
    pub fn code(&self) -> ErrorCode {
        ErrorCode::from(self)
    }
}

impl From<&ControllerError> for ErrorCode {
    fn from(e: &ControllerError) -> ErrorCode {
        match e {
            // Both are retriable for the sender: it finds the active controller and retries.
            ControllerError::NotController | ControllerError::Quorum(_) => {
                ErrorCode::NOT_CONTROLLER
            }
            ControllerError::TimedOut => ErrorCode::REQUEST_TIMED_OUT,
        }
    }
}

impl From<QuorumError> for ControllerError {
    fn from(e: QuorumError) -> Self {
        match e {
            QuorumError::NotLeader { .. } => ControllerError::NotController,
            other => ControllerError::Quorum(format!("{other:?}")),
        }
    }
}

/// The controller's settings from the broker config.
pub fn controller_config(c: &BrokerConfig) -> ControllerConfig {
    ControllerConfig {
        broker_session_timeout_ms: c.broker_session_timeout_ms as i64,
        default_replication_factor: c.default_replication_factor as i16,
        num_partitions: c.num_partitions,
        min_insync_replicas: c.min_insync_replicas,
        unclean_leader_election_enable: c.unclean_leader_election_enable,
        delegation_tokens: c.delegation_tokens.clone(),
    }
}

pub struct ControllerService {
    quorum: Arc<MetadataQuorum>,
    config: ControllerConfig,
    broker_config: BrokerConfig,
    clock: SharedClock,
    /// One operation at a time (Kafka's controller event queue).
    ops: tokio::sync::Mutex<OpState>,
    /// Records this node was formatted with (`storage format --add-scram`) that a metadata
    /// log without SCRAM credentials gets when this node leads it (peersasl slice).
    bootstrap: parking_lot::Mutex<Vec<MetadataRecord>>,
    /// The `FeatureLevel` records a metadata log without a `metadata.version` gets when this
    /// node first leads it: the levels it was formatted with, or Strata's defaults (a log
    /// begun before feature versioning is one Strata has always served at them).
    bootstrap_features: Vec<MetadataRecord>,
}

struct OpState {
    heartbeats: BrokerHeartbeats,
    /// The quorum term this node last led in; a new term restarts broker sessions.
    led_term: Option<u64>,
}

impl ControllerService {
    pub fn new(
        quorum: Arc<MetadataQuorum>,
        config: ControllerConfig,
        broker_config: BrokerConfig,
        clock: SharedClock,
    ) -> Self {
        ControllerService {
            quorum,
            config,
            broker_config,
            clock,
            ops: tokio::sync::Mutex::new(OpState {
                heartbeats: BrokerHeartbeats::default(),
                led_term: None,
            }),
            bootstrap: parking_lot::Mutex::new(Vec::new()),
            bootstrap_features: super::features::bootstrap_records(
                &super::features::bootstrap_levels(None, &[])
                    .expect("the default feature levels are supported"),
            ),
        }
    }

    /// The feature levels a new metadata log starts at (`strata storage format
    /// --release-version / --feature`).
    pub fn set_bootstrap_features(&mut self, records: Vec<MetadataRecord>) {
        self.bootstrap_features = records;
    }

    /// The bootstrap SCRAM records, committed before the first operation this node runs as
    /// the leader of a log that has no SCRAM credential (Kafka writes its bootstrap records
    /// into a new metadata log).
    pub fn set_bootstrap_records(&self, records: Vec<MetadataRecord>) {
        *self.bootstrap.lock() = records;
    }

    pub fn is_active(&self) -> bool {
        self.quorum.is_leader()
    }

    pub fn broker_config(&self) -> &BrokerConfig {
        &self.broker_config
    }

    pub fn config(&self) -> &ControllerConfig {
        &self.config
    }

    /// Runs one operation: decides from the current image, commits the records, replies.
    pub async fn run<R>(
        &self,
        op: impl FnOnce(&MetadataImage, &mut BrokerHeartbeats, &OpContext) -> (Vec<MetadataRecord>, R),
    ) -> Result<R, ControllerError> {
        self.run_then(op, |_, _, _| {}).await
    }

    /// As [`Self::run`], then `after` sees the committed offset of the records (if any).
    pub async fn run_then<R>(
        &self,
        op: impl FnOnce(&MetadataImage, &mut BrokerHeartbeats, &OpContext) -> (Vec<MetadataRecord>, R),
        after: impl FnOnce(&mut BrokerHeartbeats, u64, &R),
    ) -> Result<R, ControllerError> {
        let bound = std::time::Duration::from_millis(OPERATION_TIMEOUT_MS);
        // Dropping the operation on timeout releases its turn; records already proposed may
        // still commit, as a lost answer would leave them, and the sender retries.
        tokio::time::timeout(bound, self.run_in_turn(op, after))
            .await
            .unwrap_or(Err(ControllerError::TimedOut))
    }

    async fn run_in_turn<R>(
        &self,
        op: impl FnOnce(&MetadataImage, &mut BrokerHeartbeats, &OpContext) -> (Vec<MetadataRecord>, R),
        after: impl FnOnce(&mut BrokerHeartbeats, u64, &R),
    ) -> Result<R, ControllerError> {
        let mut state = self.ops.lock().await;
        if !self.quorum.is_leader() {
            return Err(ControllerError::NotController);
        }
        // Everything committed before this term must be applied before deciding anything.
        self.quorum.barrier().await?;
        let now = self.clock.now_ms();
        let term = self.quorum.status().leader_epoch;
        if state.led_term != Some(term) {
            state.led_term = Some(term);
            state.heartbeats = BrokerHeartbeats::default();
        }
        let (mut committed_offset, mut image) = self.quorum.state().borrow().clone();
        let pending = std::mem::take(&mut *self.bootstrap.lock());
        if !pending.is_empty() && image.scram.users.is_empty() {
            let count = pending.len();
            if let Err(e) = self.quorum.propose(pending.clone()).await {
                *self.bootstrap.lock() = pending;
                return Err(e.into());
            }
            tracing::info!(
                records = count,
                "committed the SCRAM credentials this node was formatted with"
            );
            self.quorum.barrier().await?;
            (committed_offset, image) = self.quorum.state().borrow().clone();
        }
        if image.features.metadata_version().is_none() && !self.bootstrap_features.is_empty() {
            self.quorum.propose(self.bootstrap_features.clone()).await?;
            tracing::info!(
                records = ?self.bootstrap_features,
                "finalized the bootstrap feature levels"
            );
            self.quorum.barrier().await?;
            (committed_offset, image) = self.quorum.state().borrow().clone();
        }
        let ctx = OpContext {
            config: &self.config,
            now_ms: now,
            committed_offset: committed_offset as i64,
        };
        let (records, reply) = op(&image, &mut state.heartbeats, &ctx);
        if !records.is_empty() {
            let offset = self.quorum.propose(records).await?;
            after(&mut state.heartbeats, offset, &reply);
        }
        Ok(reply)
    }
}

/// What an operation may read besides the image.
pub struct OpContext<'a> {
    pub config: &'a ControllerConfig,
    pub now_ms: i64,
    /// Everything up to here is committed and applied to the image the operation sees.
    pub committed_offset: i64,
}

/// The active controller's periodic work: fencing brokers whose sessions expired, and every
/// `delegation.token.expiry.check.interval.ms` removing expired delegation tokens (Kafka's
/// `QuorumController` sweep task).
pub async fn run_periodic(controller: Arc<ControllerService>, stop: CancellationToken) {
    let every = Duration::from_millis(
        (controller.config.broker_session_timeout_ms / 8).clamp(50, 1000) as u64,
    );
    let sweep_every = Duration::from_millis(
        controller
            .config
            .delegation_tokens
            .expiry_check_interval_ms
            .max(1) as u64,
    );
    let mut last_sweep = tokio::time::Instant::now();
    loop {
        tokio::select! {
            _ = stop.cancelled() => return,
            _ = tokio::time::sleep(every) => {}
        }
        if !controller.is_active() {
            continue;
        }
        let r = controller
            .run(|image, heartbeats, ctx| {
                (
                    super::fence_expired_brokers(image, ctx.config, heartbeats, ctx.now_ms),
                    (),
                )
            })
            .await;
        if let Err(e) = r {
            tracing::debug!(error = ?e, "fencing pass failed");
        }
        if last_sweep.elapsed() >= sweep_every {
            last_sweep = tokio::time::Instant::now();
            let r = controller
                .run(|image, _, ctx| {
                    (
                        super::delegation_tokens::sweep_expired_tokens(
                            &image.delegation_tokens,
                            ctx.now_ms,
                        ),
                        (),
                    )
                })
                .await;
            if let Err(e) = r {
                tracing::debug!(error = ?e, "delegation token expiry pass failed");
            }
        }
    }
}
