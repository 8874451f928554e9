//! The controller quorum on openraft 0.9 (pinned): KRaft's metadata quorum (KIP-595) with
//! the consensus left to openraft and only the storage, the RPCs ([`network`]) and the public
//! [`Quorum`] face written here. The bytes travel through the [`RaftTransport`] the caller
//! starts the quorum with (TCP in `net::raft_transport`, in memory in the tests).
//!
//! On a pristine log every voter of `controller.quorum.voters` initializes with the full set,
//! which openraft documents as safe when the set is the same everywhere. From then on the membership stored in the log is the voter set, and
//! AddRaftVoter / RemoveRaftVoter change it ([`voters`], KIP-853); where a voter is reached
//! is the configured address in a static quorum, and kept current by the voter itself in a
//! dynamic one ([`addresses`]).
mod addresses;
pub mod log_store;
pub mod network;
pub mod observer;
pub mod state_machine;
pub mod types;
pub mod voters;

#[cfg(test)]
mod tests;

use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use openraft::error::{CheckIsLeaderError, ClientWriteError, Fatal, InitializeError, RaftError};
use openraft::{BasicNode, Raft, RaftMetrics, ServerState, SnapshotPolicy};
use tokio::sync::watch;

pub use network::{
    encode_raft_response, MemNetwork, MemTransport, RaftEnvelope, RaftRpc, RaftRpcHandler,
    RaftRpcReply, RaftTransport, MAX_RAFT_FRAME_BYTES, RAFT_API_KEY, RAFT_API_VERSION,
};

use self::log_store::LogStore;
use self::network::{encode, NetFactory};
use self::state_machine::StateMachineStore;
use self::types::TypeConfig;
use crate::controller::quorum::{
    NodeId, Quorum, QuorumConfig, QuorumError, QuorumStatus, ReplicaStatus, ReplicatedState,
};

struct Inner<S: ReplicatedState> {
    node_id: NodeId,
    cluster_id: String,
    raft: Raft<TypeConfig<S>>,
    sm: StateMachineStore<S>,
    observers: observer::ObserverTracker,
    voter_contacts: Arc<network::VoterContacts>,
    addresses: Arc<addresses::PeerAddresses>,
    metrics: watch::Receiver<RaftMetrics<NodeId, BasicNode>>,
    state: watch::Receiver<(u64, Arc<S>)>,
    /// Held by the one voter change under way.
    voter_change: tokio::sync::Mutex<()>,
    /// Stops the task that asks to join as a learner.
    stop: tokio_util::sync::CancellationToken,
}

/// One controller's raft node. Cheap to clone; all clones drive the same node.
pub struct RaftQuorum<S: ReplicatedState> {
    inner: Arc<Inner<S>>,
}

impl<S: ReplicatedState> Clone for RaftQuorum<S> {
    fn clone(&self) -> Self {
        RaftQuorum {
            inner: self.inner.clone(),
        }
    }
}

fn fatal_to_error(f: &Fatal<NodeId>) -> QuorumError {
    match f {
        Fatal::Stopped => QuorumError::Shutdown,
        Fatal::StorageError(e) => QuorumError::Io(e.to_string()),
        other => QuorumError::Other(other.to_string()),
    }
}

impl<S: ReplicatedState> RaftQuorum<S> {
    pub async fn start(
        config: QuorumConfig,
        transport: Arc<dyn RaftTransport>,
    ) -> Result<Self, QuorumError> {
        let raft_config = openraft::Config {
            cluster_name: "strata-metadata".to_string(),
            election_timeout_min: config.election_timeout_min_ms,
            election_timeout_max: config.election_timeout_max_ms,
            heartbeat_interval: config.heartbeat_interval_ms,
            snapshot_policy: SnapshotPolicy::LogsSinceLast(config.snapshot_every_entries.max(1)),
            // Keep one snapshot interval of log so a briefly lagging voter catches up from
            // the log rather than by a snapshot transfer.
            max_in_snapshot_log_to_keep: config.snapshot_every_entries,
            ..Default::default()
        }
        .validate()
        .map_err(|e| QuorumError::Other(e.to_string()))?;

        let log = LogStore::<S>::open(&config.dir).map_err(|e| QuorumError::Io(e.to_string()))?;
        let sm = StateMachineStore::<S>::open(&config.dir)
            .map_err(|e| QuorumError::Io(e.to_string()))?;
        let state = sm.subscribe();
        let sm_reader = sm.clone();
        let voter_contacts = Arc::new(network::VoterContacts::default());
        let addresses = Arc::new(addresses::PeerAddresses::new(
            config.node_id,
            &config.advertised_addr,
            if config.static_voters {
                config.voters.clone()
            } else {
                BTreeMap::new()
            },
        ));
        let raft = Raft::new(
            config.node_id,
            Arc::new(raft_config),
            NetFactory {
                transport: transport.clone(),
                cluster_id: config.cluster_id.clone(),
                contacts: voter_contacts.clone(),
                addresses: addresses.clone(),
            },
            log,
            sm,
        )
        .await
        .map_err(|e| fatal_to_error(&e))?;

        let initialized = raft
            .is_initialized()
            .await
            .map_err(|e| fatal_to_error(&e))?;
        let mut bootstrap = config.bootstrap_servers.clone();
        if initialized {
            // The stored membership is the voter set, as Kafka's stored VotersRecord wins
            // over the static configuration.
            let stored = voters::voters_of(&raft.metrics().borrow());
            // Only the ids matter: a lone voter's listener port is ephemeral.
            let differ = !stored.keys().eq(config.voters.keys());
            if !config.voters.is_empty() && !stored.is_empty() && differ {
                tracing::warn!(
                    node_id = config.node_id,
                    ?stored,
                    configured = ?config.voters,
                    "the stored controller quorum voters differ from controller.quorum.voters; \
                     using the stored ones"
                );
            }
            let moved: BTreeMap<_, _> = stored
                .iter()
                .filter(|(id, addr)| {
                    **id != config.node_id && config.voters.get(id).is_some_and(|c| c != *addr)
                })
                .collect();
            if config.static_voters && !moved.is_empty() {
                tracing::info!(
                    node_id = config.node_id,
                    ?moved,
                    configured = ?config.voters,
                    "controller listeners moved since the membership was stored; the voters \
                     are reached at their controller.quorum.voters addresses"
                );
            }
        } else if config.voters.contains_key(&config.node_id) {
            let members: BTreeMap<NodeId, BasicNode> = config
                .voters
                .iter()
                .map(|(id, addr)| (*id, BasicNode { addr: addr.clone() }))
                .collect();
            match raft.initialize(members).await {
                Ok(()) => {}
                // Another voter's initialize reached us first: the quorum is forming.
                Err(RaftError::APIError(InitializeError::NotAllowed(_))) => {}
                Err(RaftError::APIError(e)) => return Err(QuorumError::Other(e.to_string())),
                Err(RaftError::Fatal(f)) => return Err(fatal_to_error(&f)),
            }
        } else if bootstrap.is_empty() && !config.voters.is_empty() {
            return Err(QuorumError::Other(format!(
                "node {} is not among the controller quorum voters {:?}",
                config.node_id,
                config.voters.keys().collect::<Vec<_>>()
            )));
        } else if bootstrap.is_empty() {
            return Err(QuorumError::Other(
                "neither controller.quorum.voters nor controller.quorum.bootstrap.servers".into(),
            ));
        }
        if bootstrap.is_empty() {
            bootstrap = config.voters.values().cloned().collect();
        }
        // A lone voter needs no one's vote: it stands for election at once rather than
        // after an election timeout, so a restarted single node serves in milliseconds.
        let stored_voters = voters::voters_of(&raft.metrics().borrow());
        if initialized && stored_voters.len() == 1 && stored_voters.contains_key(&config.node_id) {
            if let Err(e) = raft.trigger().elect().await {
                tracing::warn!(error = %e, "a lone voter could not stand for election at start");
            }
        }
        let metrics = raft.metrics();
        let quorum = RaftQuorum {
            inner: Arc::new(Inner {
                node_id: config.node_id,
                cluster_id: config.cluster_id,
                raft,
                sm: sm_reader,
                observers: Default::default(),
                voter_contacts,
                addresses,
                metrics,
                state,
                voter_change: tokio::sync::Mutex::new(()),
                stop: tokio_util::sync::CancellationToken::new(),
            }),
        };
        if !config.static_voters {
            // A dynamic quorum's voter keeps its stored listener current (UpdateRaftVoter).
            tokio::spawn(addresses::keep_address_current(
                quorum.clone(),
                transport.clone(),
                bootstrap.clone(),
                config.advertised_addr.clone(),
                quorum.inner.stop.clone(),
            ));
        }
        if !quorum.is_member() {
            // A controller outside the membership (KIP-853): follow the log as a learner
            // until AddRaftVoter makes it a voter.
            tokio::spawn(voters::join_as_learner(
                quorum.clone(),
                transport,
                bootstrap,
                config.advertised_addr,
                quorum.inner.stop.clone(),
            ));
        }
        tokio::spawn(voters::expire_learners(
            quorum.clone(),
            Duration::from_millis(config.learner_session_timeout_ms.max(1)),
            quorum.inner.stop.clone(),
        ));
        Ok(quorum)
    }

    pub fn node_id(&self) -> NodeId {
        self.inner.node_id
    }

    /// Server side of the raft RPCs: decode a request payload, run it on the local raft
    /// node, encode the reply. Never fails: a bad payload gets an error reply.
    pub async fn handle_rpc(&self, payload: Bytes) -> Bytes {
        let envelope: RaftEnvelope<S> = match network::decode_envelope(&payload) {
            Ok(envelope) => envelope,
            Err(e) => return encode(&RaftRpcReply::Error(format!("undecodable raft rpc: {e}"))),
        };
        // A process joining through a bootstrap address knows neither the cluster id nor
        // whom it reached; everything else must name both.
        let joining = matches!(envelope.rpc, RaftRpc::Join(_));
        if envelope.cluster_id != self.inner.cluster_id
            && !(joining && envelope.cluster_id.is_empty())
        {
            return encode(&RaftRpcReply::Error(format!(
                "inconsistent cluster id: {} is not {}",
                envelope.cluster_id, self.inner.cluster_id
            )));
        }
        if !joining && envelope.destination_id != self.inner.node_id {
            return encode(&RaftRpcReply::Error(format!(
                "raft rpc for node {} reached node {}",
                envelope.destination_id, self.inner.node_id
            )));
        }
        let rpc = envelope.rpc;
        let raft = &self.inner.raft;
        let reply = match rpc {
            RaftRpc::AppendEntries(req) => {
                RaftRpcReply::AppendEntries(raft.append_entries(req).await)
            }
            RaftRpc::Vote(req) => RaftRpcReply::Vote(raft.vote(req).await),
            RaftRpc::InstallSnapshot(req) => {
                RaftRpcReply::InstallSnapshot(raft.install_snapshot(req).await)
            }
            RaftRpc::ObserverFetch(fetch) => return encode(&self.serve_observer(fetch).await),
            RaftRpc::Join(join) => RaftRpcReply::Join(self.serve_join(join).await),
        };
        encode(&reply)
    }

    /// The leader's side of an observer's fetch; other voters name the leader they know.
    async fn serve_observer(
        &self,
        fetch: observer::ObserverFetch,
    ) -> observer::ObserverFetchReply<S> {
        let (leader_id, leader_epoch) = {
            let m = self.inner.metrics.borrow();
            (m.current_leader, m.current_term)
        };
        if !self.is_leader() {
            return observer::ObserverFetchReply {
                leader_id,
                leader_epoch,
                body: observer::FetchBody::NotLeader,
                voters: self.voter_addresses(),
            };
        }
        let sm = &self.inner.sm;
        let body = observer::answer(
            |after, max| sm.catchup(after, max),
            self.inner.state.clone(),
            &fetch,
        )
        .await;
        let applied = self.inner.state.borrow().0;
        // Kafka counts the fetch offset, not what the answer brings: the observer has
        // caught up when what it already had reached the leader's end.
        self.inner.observers.record(
            fetch.observer_id,
            fetch.after_index,
            fetch.after_index >= applied,
        );
        observer::ObserverFetchReply {
            leader_id,
            leader_epoch,
            body,
            voters: self.voter_addresses(),
        }
    }

    /// Returns once this node, as leader, has applied everything committed before now (a
    /// new leader may not have applied its predecessor's last entries yet); NotLeader
    /// elsewhere. The controller calls it before deciding anything from its image.
    pub async fn barrier(&self) -> Result<(), QuorumError> {
        match self.inner.raft.ensure_linearizable().await {
            Ok(_) => Ok(()),
            Err(RaftError::APIError(CheckIsLeaderError::ForwardToLeader(f))) => {
                Err(QuorumError::NotLeader {
                    leader: f.leader_id,
                })
            }
            // Lost the quorum while checking: not a leader one can rely on.
            Err(RaftError::APIError(CheckIsLeaderError::QuorumNotEnough(_))) => {
                Err(QuorumError::NotLeader { leader: None })
            }
            Err(RaftError::Fatal(f)) => Err(fatal_to_error(&f)),
        }
    }

    pub async fn shutdown(&self) {
        self.inner.stop.cancel();
        if let Err(e) = self.inner.raft.shutdown().await {
            tracing::warn!(node_id = self.inner.node_id, error = %e, "controller quorum shutdown");
        }
    }
}

impl<S: ReplicatedState> RaftRpcHandler for RaftQuorum<S> {
    fn handle(&self, payload: Bytes) -> Pin<Box<dyn Future<Output = Bytes> + Send + '_>> {
        Box::pin(self.handle_rpc(payload))
    }
}

impl<S: ReplicatedState> Quorum<S> for RaftQuorum<S> {
    async fn propose(&self, records: Vec<S::Record>) -> Result<u64, QuorumError> {
        match self.inner.raft.client_write(records).await {
            Ok(resp) => Ok(resp.log_id.index),
            Err(RaftError::APIError(ClientWriteError::ForwardToLeader(f))) => {
                Err(QuorumError::NotLeader {
                    leader: f.leader_id,
                })
            }
            Err(RaftError::APIError(e)) => Err(QuorumError::Other(e.to_string())),
            Err(RaftError::Fatal(f)) => Err(fatal_to_error(&f)),
        }
    }

    fn state(&self) -> watch::Receiver<(u64, Arc<S>)> {
        self.inner.state.clone()
    }

    fn leader(&self) -> Option<NodeId> {
        self.inner.metrics.borrow().current_leader
    }

    fn is_leader(&self) -> bool {
        let m = self.inner.metrics.borrow();
        m.state == ServerState::Leader && m.current_leader == Some(self.inner.node_id)
    }

    /// Offsets are raft log indexes: `high_watermark` is the last committed (and locally
    /// applied) index, a replica's `log_end_offset` the last index it is known to hold. Only
    /// the leader knows the others' progress and times; elsewhere they are -1.
    fn status(&self) -> QuorumStatus {
        let m = self.inner.metrics.borrow();
        let is_leader = m.state == ServerState::Leader;
        let own_end = m.last_log_index.map_or(-1, |i| i as i64);
        let replica = |node_id: NodeId| {
            let log_end_offset = if node_id == self.inner.node_id {
                own_end
            } else if is_leader {
                m.replication
                    .as_ref()
                    .and_then(|r| r.get(&node_id).copied().flatten())
                    .map_or(-1, |l| l.index as i64)
            } else {
                -1
            };
            // The leader's own row is current by definition, as in Kafka's.
            let (last_fetch_timestamp_ms, last_caught_up_timestamp_ms) = if !is_leader {
                (-1, -1)
            } else if node_id == self.inner.node_id {
                let now = observer::now_ms();
                (now, now)
            } else {
                self.inner.voter_contacts.get(node_id)
            };
            ReplicaStatus {
                node_id,
                log_end_offset,
                last_fetch_timestamp_ms,
                last_caught_up_timestamp_ms,
            }
        };
        let membership = m.membership_config.membership();
        let mut observers: Vec<ReplicaStatus> = membership.learner_ids().map(replica).collect();
        if is_leader {
            observers.extend(self.inner.observers.status());
        }
        QuorumStatus {
            leader_id: m.current_leader,
            leader_epoch: m.current_term,
            high_watermark: m.last_applied.map_or(0, |l| l.index),
            voters: membership.voter_ids().map(replica).collect(),
            observers,
        }
    }
}
