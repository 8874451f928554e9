//! Observers of the controller quorum. A process with only the broker role follows the
//! metadata log without voting, as KRaft brokers are observers that fetch from the quorum
//! leader instead of members of the voter set (KIP-595). The observer long-polls the leader
//! with the last index it has applied and gets the entries that follow, or the whole image
//! when it is further behind than the leader keeps entries (as a KRaft broker fetches a
//! snapshot, KIP-630). Only committed, applied entries are ever sent, so an observer never
//! has to truncate. The leader remembers each observer's progress for DescribeQuorum and
//! forgets one that has not fetched for five minutes, as Kafka's quorum leader does.
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use parking_lot::Mutex;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use super::network::{encode, RaftEnvelope, RaftRpc, RaftTransport};
use super::state_machine::Catchup;
use crate::controller::quorum::{
    NodeId, Quorum, QuorumConfig, QuorumError, QuorumStatus, ReplicaStatus, ReplicatedState,
};

/// An observer's request: everything after `after_index`, waiting up to `max_wait_ms` when
/// there is nothing yet.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct ObserverFetch {
    pub observer_id: NodeId,
    pub after_index: u64,
    pub max_wait_ms: u64,
}

#[derive(serde::Serialize, serde::Deserialize)]
#[serde(bound = "")]
pub struct ObserverFetchReply<S: ReplicatedState> {
    /// The leader as the answering voter knows it, so a misdirected observer moves on.
    pub leader_id: Option<NodeId>,
    pub leader_epoch: u64,
    pub body: FetchBody<S>,
    /// The current voters and their controller listeners, so that observers follow voter
    /// changes (KIP-853) and reach a leader that was not among their configured voters.
    /// Absent in answers of earlier versions.
    #[serde(default)]
    pub voters: BTreeMap<NodeId, String>,
}

#[derive(serde::Serialize, serde::Deserialize)]
#[serde(bound = "")]
pub enum FetchBody<S: ReplicatedState> {
    NotLeader,
    UpToDate,
    Entries(Vec<(u64, Vec<S::Record>)>),
    State { index: u64, state: S },
}

/// The longest a leader holds an observer's fetch; also what observers ask for.
pub const OBSERVER_FETCH_MAX_WAIT_MS: u64 = 500;
/// Entries in one answer; a longer tail comes in several fetches.
const OBSERVER_FETCH_MAX_ENTRIES: usize = 1024;
/// Kafka's quorum leader forgets an observer after this long without a fetch.
const OBSERVER_SESSION_TIMEOUT_MS: u64 = 300_000;
/// Pause before trying another voter after a failed fetch.
const OBSERVER_RETRY_BACKOFF_MS: u64 = 50;

pub(crate) fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

/// What the leader knows of one observer, for DescribeQuorum.
#[derive(Debug, Clone, Copy)]
struct ObserverProgress {
    applied_index: u64,
    last_fetch_ms: i64,
    last_caught_up_ms: i64,
}

/// The leader's record of its observers.
#[derive(Default)]
pub(crate) struct ObserverTracker {
    observers: Mutex<BTreeMap<NodeId, ObserverProgress>>,
}

impl ObserverTracker {
    pub(crate) fn record(&self, observer_id: NodeId, applied_index: u64, caught_up: bool) {
        let now = now_ms();
        let mut observers = self.observers.lock();
        let entry = observers.entry(observer_id).or_insert(ObserverProgress {
            applied_index,
            last_fetch_ms: now,
            last_caught_up_ms: -1,
        });
        entry.applied_index = applied_index;
        entry.last_fetch_ms = now;
        if caught_up {
            entry.last_caught_up_ms = now;
        }
    }

    pub(crate) fn status(&self) -> Vec<ReplicaStatus> {
        let now = now_ms();
        let mut observers = self.observers.lock();
        observers.retain(|_, p| now - p.last_fetch_ms < OBSERVER_SESSION_TIMEOUT_MS as i64);
        observers
            .iter()
            .map(|(id, p)| ReplicaStatus {
                node_id: *id,
                log_end_offset: p.applied_index as i64,
                last_fetch_timestamp_ms: p.last_fetch_ms,
                last_caught_up_timestamp_ms: p.last_caught_up_ms,
            })
            .collect()
    }
}

/// The leader's answer body for `after_index`, waiting up to `max_wait_ms` for news.
pub(crate) async fn answer<S: ReplicatedState>(
    catchup: impl Fn(u64, usize) -> Catchup<S>,
    mut applied: watch::Receiver<(u64, Arc<S>)>,
    fetch: &ObserverFetch,
) -> FetchBody<S> {
    let mut found = catchup(fetch.after_index, OBSERVER_FETCH_MAX_ENTRIES);
    if matches!(found, Catchup::UpToDate) {
        let wait = Duration::from_millis(fetch.max_wait_ms.min(OBSERVER_FETCH_MAX_WAIT_MS));
        let after = fetch.after_index;
        let _ = tokio::time::timeout(wait, applied.wait_for(|(index, _)| *index > after)).await;
        found = catchup(fetch.after_index, OBSERVER_FETCH_MAX_ENTRIES);
    }
    match found {
        Catchup::UpToDate => FetchBody::UpToDate,
        Catchup::Entries(entries) => FetchBody::Entries(entries),
        Catchup::State { index, state } => FetchBody::State {
            index,
            state: (*state).clone(),
        },
    }
}

struct Inner<S: ReplicatedState> {
    node_id: NodeId,
    cluster_id: String,
    /// The voters as the last answer named them (the configured ones at first).
    voters: Mutex<BTreeMap<NodeId, String>>,
    transport: Arc<dyn RaftTransport>,
    state: watch::Sender<(u64, Arc<S>)>,
    /// The leader and epoch of the last answer that named one.
    leader: Mutex<(Option<NodeId>, u64)>,
    stop: CancellationToken,
    task: Mutex<Option<tokio::task::JoinHandle<()>>>,
}

/// A broker-only process's view of the quorum: the applied state, fetched from the leader.
pub struct ObserverQuorum<S: ReplicatedState> {
    inner: Arc<Inner<S>>,
}

impl<S: ReplicatedState> Clone for ObserverQuorum<S> {
    fn clone(&self) -> Self {
        ObserverQuorum {
            inner: self.inner.clone(),
        }
    }
}

impl<S: ReplicatedState> ObserverQuorum<S> {
    /// Starts following the voters of `config`; the state starts empty at index 0 and the
    /// first answer brings the whole image.
    pub fn start(config: QuorumConfig, transport: Arc<dyn RaftTransport>) -> Self {
        let inner = Arc::new(Inner {
            node_id: config.node_id,
            cluster_id: config.cluster_id,
            voters: Mutex::new(config.voters),
            transport,
            state: watch::channel((0, Arc::new(S::default()))).0,
            leader: Mutex::new((None, 0)),
            stop: CancellationToken::new(),
            task: Mutex::new(None),
        });
        let task = tokio::spawn(follow(inner.clone()));
        *inner.task.lock() = Some(task);
        ObserverQuorum { inner }
    }

    /// The voters as the quorum last named them.
    pub fn voter_addresses(&self) -> BTreeMap<NodeId, String> {
        self.inner.voters.lock().clone()
    }

    pub async fn shutdown(&self) {
        self.inner.stop.cancel();
        let task = self.inner.task.lock().take();
        if let Some(task) = task {
            let _ = task.await;
        }
    }
}

/// The fetch loop: the known leader first, otherwise the voters in turn.
async fn follow<S: ReplicatedState>(inner: Arc<Inner<S>>) {
    // Observers start at different voters so that they do not all knock on the same door.
    let mut next_voter = inner.node_id as usize;
    let mut failed_once = false;
    loop {
        let voter_ids: Vec<NodeId> = inner.voters.lock().keys().copied().collect();
        if voter_ids.is_empty() {
            return;
        }
        next_voter %= voter_ids.len();
        let known_leader = inner.leader.lock().0;
        let target = known_leader
            .filter(|l| voter_ids.contains(l))
            .unwrap_or(voter_ids[next_voter]);
        let (after_index, mut current) = inner.state.borrow().clone();
        let reply = tokio::select! {
            _ = inner.stop.cancelled() => return,
            r = fetch_from(&inner, target, after_index) => r,
        };
        let advanced = match reply {
            Ok(reply) => {
                let named = reply.leader_id;
                if !reply.voters.is_empty() {
                    *inner.voters.lock() = reply.voters;
                }
                match reply.body {
                    FetchBody::NotLeader => {
                        *inner.leader.lock() = (named.filter(|l| *l != target), reply.leader_epoch);
                        named.is_some_and(|l| l != target)
                    }
                    FetchBody::UpToDate => {
                        *inner.leader.lock() = (Some(target), reply.leader_epoch);
                        true
                    }
                    FetchBody::Entries(entries) => {
                        *inner.leader.lock() = (Some(target), reply.leader_epoch);
                        // Only a contiguous tail is applied; anything else is fetched again.
                        if entries.first().is_some_and(|(i, _)| *i == after_index + 1) {
                            let mut index = after_index;
                            let state = Arc::make_mut(&mut current);
                            for (entry_index, records) in &entries {
                                if *entry_index != index + 1 {
                                    break;
                                }
                                for record in records {
                                    state.apply_at(*entry_index, record);
                                }
                                index = *entry_index;
                            }
                            inner.state.send_replace((index, current));
                        }
                        true
                    }
                    FetchBody::State { index, state } => {
                        *inner.leader.lock() = (Some(target), reply.leader_epoch);
                        if index > after_index {
                            inner.state.send_replace((index, Arc::new(state)));
                        }
                        true
                    }
                }
            }
            Err(error) => {
                if !failed_once {
                    tracing::debug!(voter = target, %error, "metadata fetch failed");
                }
                failed_once = true;
                inner.leader.lock().0 = None;
                false
            }
        };
        if !advanced {
            next_voter += 1;
            tokio::select! {
                _ = inner.stop.cancelled() => return,
                _ = tokio::time::sleep(Duration::from_millis(OBSERVER_RETRY_BACKOFF_MS)) => {}
            }
        } else {
            failed_once = false;
        }
    }
}

async fn fetch_from<S: ReplicatedState>(
    inner: &Inner<S>,
    target: NodeId,
    after_index: u64,
) -> Result<ObserverFetchReply<S>, String> {
    let addr = inner
        .voters
        .lock()
        .get(&target)
        .cloned()
        .ok_or_else(|| format!("no address for voter {target}"))?;
    let payload: Bytes = encode(&RaftEnvelope::<S> {
        cluster_id: inner.cluster_id.clone(),
        destination_id: target,
        rpc: RaftRpc::ObserverFetch(ObserverFetch {
            observer_id: inner.node_id,
            after_index,
            max_wait_ms: OBSERVER_FETCH_MAX_WAIT_MS,
        }),
    });
    let reply = inner
        .transport
        .call(target, &addr, payload)
        .await
        .map_err(|e| e.to_string())?;
    serde_json::from_slice(&reply).map_err(|e| {
        // A voter that refuses (another cluster, not a voter) answers a RaftRpcReply error.
        match serde_json::from_slice::<super::RaftRpcReply>(&reply) {
            Ok(super::RaftRpcReply::Error(m)) => m,
            _ => e.to_string(),
        }
    })
}

impl<S: ReplicatedState> Quorum<S> for ObserverQuorum<S> {
    async fn propose(&self, _records: Vec<S::Record>) -> Result<u64, QuorumError> {
        Err(QuorumError::NotLeader {
            leader: self.leader(),
        })
    }

    fn state(&self) -> watch::Receiver<(u64, Arc<S>)> {
        self.inner.state.subscribe()
    }

    fn leader(&self) -> Option<NodeId> {
        self.inner.leader.lock().0
    }

    fn is_leader(&self) -> bool {
        false
    }

    /// An observer knows only its own progress; the voters' is the leader's to tell.
    fn status(&self) -> QuorumStatus {
        let (leader_id, leader_epoch) = *self.inner.leader.lock();
        let applied = self.inner.state.borrow().0;
        let unknown = |node_id: NodeId| ReplicaStatus {
            node_id,
            log_end_offset: -1,
            last_fetch_timestamp_ms: -1,
            last_caught_up_timestamp_ms: -1,
        };
        QuorumStatus {
            leader_id,
            leader_epoch,
            high_watermark: applied,
            voters: self
                .inner
                .voters
                .lock()
                .keys()
                .copied()
                .map(unknown)
                .collect(),
            observers: vec![ReplicaStatus {
                log_end_offset: applied as i64,
                ..unknown(self.inner.node_id)
            }],
        }
    }
}
