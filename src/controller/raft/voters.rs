//! Voter changes of the controller quorum (KIP-853, dynamic quorum) over openraft's
//! membership changes, and how a controller outside the membership finds the quorum.
//!
//! Kafka's counterparts: `AddVoterHandler` (the new voter must answer and be caught up
//! before the VotersRecord is appended), `RemoveVoterHandler` (a leader that removes itself
//! resigns once the change is committed) and the observer phase of a controller started
//! with `controller.quorum.bootstrap.servers`; `UpdateVoterHandler` (a voter's moved
//! listener) is [`super::addresses`]. Here the new controller asks the leader,
//! through any bootstrap server, to follow the log as an openraft learner (KRaft shows it
//! as an observer); AddRaftVoter then waits until it holds the leader's log and promotes it
//! with `change_membership`. openraft's joint consensus takes the place of KRaft's
//! one-voter-at-a-time rule: at most one change is under way, and a second is refused with
//! REQUEST_TIMED_OUT as Kafka refuses one while another is pending.
use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use bytes::Bytes;
use openraft::error::{ChangeMembershipError, ClientWriteError, Fatal, RaftError};
use openraft::{BasicNode, ChangeMembers, RaftMetrics};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::network::{encode, RaftEnvelope, RaftRpc, RaftRpcReply, RaftTransport};
use super::RaftQuorum;
use crate::controller::quorum::{NodeId, QuorumError, ReplicatedState, VoterChangeError};

/// The transport slot of calls to a bootstrap address, whose node id is not known yet.
pub const BOOTSTRAP_TARGET: NodeId = NodeId::MAX;
/// Pause between two attempts of a controller outside the membership to reach the leader.
const JOIN_RETRY_MS: u64 = 300;
/// How long a leader tries to commit a joining learner before answering "not a member".
const JOIN_TIMEOUT: Duration = Duration::from_secs(5);

/// Sent by a process outside the membership to any quorum member.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct JoinRequest {
    pub node_id: NodeId,
    /// The asker's controller listener: where a process outside the membership asks to be
    /// reached as a learner, or a member's listener that the leader should store if the
    /// membership names another (Kafka's UpdateRaftVoter, see [`super::addresses`]). None
    /// when it only wants the cluster id and the voters (a broker bootstrapping).
    pub learner_addr: Option<String>,
}

#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct JoinReply {
    pub cluster_id: String,
    pub leader_id: Option<NodeId>,
    pub leader_epoch: u64,
    /// The current voters and their controller listeners.
    pub voters: BTreeMap<NodeId, String>,
    /// Whether the asker is in the membership now (learner or voter).
    pub member: bool,
    /// The member that answered (absent from the answers of earlier versions): an asker
    /// that reached it through a bootstrap server now knows where it listens.
    #[serde(default)]
    pub responder_id: Option<NodeId>,
}

impl JoinReply {
    /// The leader's controller listener, when the answer names a leader among the voters.
    pub fn leader_addr(&self) -> Option<&String> {
        self.leader_id.and_then(|l| self.voters.get(&l))
    }
}

/// Sends one [`JoinRequest`] to `addr`. `cluster_id` may be empty when not known yet.
pub async fn ask_join<S: ReplicatedState>(
    transport: &dyn RaftTransport,
    addr: &str,
    cluster_id: &str,
    request: JoinRequest,
) -> Result<JoinReply, String> {
    let payload: Bytes = encode(&RaftEnvelope::<S> {
        cluster_id: cluster_id.to_string(),
        destination_id: BOOTSTRAP_TARGET,
        rpc: RaftRpc::Join(request),
    });
    let reply = transport
        .call(BOOTSTRAP_TARGET, addr, payload)
        .await
        .map_err(|e| e.to_string())?;
    match serde_json::from_slice::<RaftRpcReply>(&reply) {
        Ok(RaftRpcReply::Join(r)) => Ok(r),
        Ok(RaftRpcReply::Error(m)) => Err(m),
        Ok(_) => Err("mismatched reply to a join".into()),
        Err(e) => Err(e.to_string()),
    }
}

/// Asks the bootstrap servers in turn for the cluster id, the voters and the leader until one
/// answers with a leader, at most `timeout_ms`. Used by a process that has no
/// `controller.quorum.voters` before it starts its quorum member.
pub async fn discover<S: ReplicatedState>(
    transport: &dyn RaftTransport,
    node_id: NodeId,
    bootstrap_servers: &[String],
    timeout_ms: u64,
) -> Result<JoinReply, String> {
    if bootstrap_servers.is_empty() {
        return Err("no controller.quorum.bootstrap.servers".into());
    }
    let deadline = Instant::now() + Duration::from_millis(timeout_ms);
    let mut last_error = String::from("no answer");
    for attempt in 0usize.. {
        let addr = &bootstrap_servers[attempt % bootstrap_servers.len()];
        let request = JoinRequest {
            node_id,
            learner_addr: None,
        };
        match ask_join::<S>(transport, addr, "", request).await {
            Ok(reply) if reply.leader_id.is_some() => return Ok(reply),
            Ok(_) => last_error = format!("{addr} knows no leader yet"),
            Err(e) => last_error = format!("{addr}: {e}"),
        }
        if Instant::now() >= deadline {
            break;
        }
        tokio::time::sleep(Duration::from_millis(JOIN_RETRY_MS)).await;
    }
    Err(format!(
        "no controller quorum reachable through {bootstrap_servers:?}: {last_error}"
    ))
}

pub(super) fn voters_of(m: &RaftMetrics<NodeId, BasicNode>) -> BTreeMap<NodeId, String> {
    let membership = m.membership_config.membership();
    membership
        .voter_ids()
        .filter_map(|id| membership.get_node(&id).map(|n| (id, n.addr.clone())))
        .collect()
}

/// A membership change that is joint or not yet applied: the next must wait (Kafka's
/// "uncommitted VotersRecord").
pub(super) fn change_pending(m: &RaftMetrics<NodeId, BasicNode>) -> bool {
    let stored = &m.membership_config;
    let joint = stored.membership().get_joint_config().len() > 1;
    let uncommitted = stored.log_id().map(|l| l.index) > m.last_applied.map(|l| l.index);
    joint || uncommitted
}

pub(super) fn change_error(
    e: RaftError<NodeId, ClientWriteError<NodeId, BasicNode>>,
) -> VoterChangeError {
    match e {
        RaftError::APIError(ClientWriteError::ForwardToLeader(f)) => VoterChangeError::NotLeader {
            leader: f.leader_id,
        },
        RaftError::APIError(ClientWriteError::ChangeMembershipError(
            ChangeMembershipError::InProgress(_),
        )) => VoterChangeError::ChangeInProgress,
        RaftError::APIError(ClientWriteError::ChangeMembershipError(
            ChangeMembershipError::EmptyMembership(_),
        )) => VoterChangeError::VoterNotFound,
        RaftError::APIError(e) => VoterChangeError::Other(e.to_string()),
        RaftError::Fatal(Fatal::Stopped) => VoterChangeError::Shutdown,
        RaftError::Fatal(f) => VoterChangeError::Other(f.to_string()),
    }
}

fn leader_error(e: QuorumError) -> VoterChangeError {
    match e {
        QuorumError::NotLeader { leader } => VoterChangeError::NotLeader { leader },
        QuorumError::Shutdown => VoterChangeError::Shutdown,
        other => VoterChangeError::Other(other.to_string()),
    }
}

impl<S: ReplicatedState> RaftQuorum<S> {
    /// The current voters (the effective membership) and their controller listeners: where
    /// this node reaches them, which in a static quorum is the configured address rather
    /// than the stored one (see [`super::addresses`]).
    pub fn voter_addresses(&self) -> BTreeMap<NodeId, String> {
        let addresses = &self.inner.addresses;
        voters_of(&self.inner.metrics.borrow())
            .into_iter()
            .map(|(id, stored)| (id, addresses.resolve(id, &stored)))
            .collect()
    }

    /// Whether this node is in the membership, as a voter or a learner.
    pub fn is_member(&self) -> bool {
        let m = self.inner.metrics.borrow();
        m.membership_config
            .membership()
            .get_node(&self.inner.node_id)
            .is_some()
    }

    /// Whether this node is a voter of the effective membership.
    pub fn is_voter(&self) -> bool {
        let m = self.inner.metrics.borrow();
        m.membership_config
            .membership()
            .voter_ids()
            .any(|id| id == self.inner.node_id)
    }

    /// AddRaftVoter on the leader: `voter_id` (reached at `addr`, its controller listener)
    /// follows the log as a learner if it does not yet, and becomes a voter once it holds
    /// everything the leader had when asked. Fails with TimedOut when that takes longer than
    /// `timeout`; the learner then stays and a retry continues from where it is.
    pub async fn add_voter(
        &self,
        voter_id: NodeId,
        addr: String,
        timeout: Duration,
    ) -> Result<(), VoterChangeError> {
        let deadline = Instant::now() + timeout;
        // Like Kafka's leader, refuse until this term's first entry is committed.
        self.barrier().await.map_err(leader_error)?;
        let Ok(_only_change) = self.inner.voter_change.try_lock() else {
            return Err(VoterChangeError::ChangeInProgress);
        };
        let (is_voter, is_member) = {
            let m = self.inner.metrics.borrow();
            if change_pending(&m) {
                return Err(VoterChangeError::ChangeInProgress);
            }
            let membership = m.membership_config.membership();
            (
                membership.voter_ids().any(|id| id == voter_id),
                membership.get_node(&voter_id).is_some(),
            )
        };
        if is_voter {
            return Err(VoterChangeError::DuplicateVoter);
        }
        let raft = &self.inner.raft;
        if !is_member {
            let added = tokio::time::timeout_at(
                deadline,
                raft.add_learner(voter_id, BasicNode { addr }, false),
            )
            .await
            .map_err(|_| VoterChangeError::TimedOut)?;
            added.map_err(change_error)?;
        }
        // Caught up: the learner holds the leader's log as it was now, so promoting it does
        // not stall the high watermark (Kafka's `isReplicaCaughtUp`).
        let target = self.inner.metrics.borrow().last_log_index;
        let node_id = self.inner.node_id;
        let mut metrics = self.inner.metrics.clone();
        let caught_up = tokio::time::timeout_at(deadline, async move {
            let _ = metrics
                .wait_for(|m| {
                    let matched = m
                        .replication
                        .as_ref()
                        .and_then(|r| r.get(&voter_id).cloned().flatten())
                        .map(|l| l.index);
                    matched >= target || m.current_leader != Some(node_id)
                })
                .await;
        })
        .await;
        if caught_up.is_err() {
            return Err(VoterChangeError::TimedOut);
        }
        if !openraft_leader(&self.inner.metrics.borrow(), node_id) {
            return Err(VoterChangeError::NotLeader {
                leader: self.inner.metrics.borrow().current_leader,
            });
        }
        let change = ChangeMembers::AddVoterIds(BTreeSet::from([voter_id]));
        tokio::time::timeout_at(deadline, raft.change_membership(change, false))
            .await
            .map_err(|_| VoterChangeError::TimedOut)?
            .map_err(change_error)?;
        tracing::info!(voter_id, "controller quorum voter added");
        Ok(())
    }

    /// RemoveRaftVoter on the leader. The removed node leaves the membership entirely; a
    /// leader that removes itself steps down once the change is committed and the remaining
    /// voters elect a successor.
    pub async fn remove_voter(
        &self,
        voter_id: NodeId,
        timeout: Duration,
    ) -> Result<(), VoterChangeError> {
        let deadline = Instant::now() + timeout;
        self.barrier().await.map_err(leader_error)?;
        let Ok(_only_change) = self.inner.voter_change.try_lock() else {
            return Err(VoterChangeError::ChangeInProgress);
        };
        {
            let m = self.inner.metrics.borrow();
            if change_pending(&m) {
                return Err(VoterChangeError::ChangeInProgress);
            }
            let voters = voters_of(&m);
            // Kafka's VoterSet refuses to remove the last voter with the same error.
            if !voters.contains_key(&voter_id) || voters.len() == 1 {
                return Err(VoterChangeError::VoterNotFound);
            }
        }
        let change = ChangeMembers::RemoveVoters(BTreeSet::from([voter_id]));
        tokio::time::timeout_at(deadline, self.inner.raft.change_membership(change, false))
            .await
            .map_err(|_| VoterChangeError::TimedOut)?
            .map_err(change_error)?;
        tracing::info!(voter_id, "controller quorum voter removed");
        Ok(())
    }

    /// A [`JoinRequest`] reaching this member: the leader takes an asker with a listener as
    /// a learner, or stores a member's new listener; every member names the leader and the
    /// voters.
    pub(super) async fn serve_join(&self, request: JoinRequest) -> JoinReply {
        let mut member = {
            let m = self.inner.metrics.borrow();
            m.membership_config
                .membership()
                .get_node(&request.node_id)
                .is_some()
        };
        let addr = request.learner_addr.filter(|_| self.is_leader_now());
        if let (false, Some(addr)) = (member, addr.clone()) {
            // Bounded: a leader that lost its quorum still leads in openraft, and the
            // membership entry would never commit; the asker has given up by then anyway.
            let added = tokio::time::timeout(
                JOIN_TIMEOUT,
                self.inner
                    .raft
                    .add_learner(request.node_id, BasicNode { addr }, false),
            )
            .await;
            match added {
                Err(_) => tracing::debug!(
                    node_id = request.node_id,
                    "join not committed in time: the asker tries again"
                ),
                Ok(Ok(_)) => {
                    tracing::info!(
                        node_id = request.node_id,
                        "a controller follows the quorum as a learner"
                    );
                    member = true;
                }
                // Another change is under way: the asker tries again.
                Ok(Err(e)) => {
                    tracing::debug!(node_id = request.node_id, error = %e, "join refused")
                }
            }
        } else if let (true, Some(addr)) = (member, addr) {
            // A member whose listener moved since the membership recorded it.
            let updated = self
                .update_address(request.node_id, addr, super::addresses::UPDATE_TIMEOUT)
                .await;
            if let Err(e) = updated {
                tracing::debug!(node_id = request.node_id, error = %e, "listener not stored yet");
            }
        }
        let voters = self.voter_addresses();
        let m = self.inner.metrics.borrow();
        JoinReply {
            cluster_id: self.inner.cluster_id.clone(),
            leader_id: m.current_leader,
            leader_epoch: m.current_term,
            voters,
            member,
            responder_id: Some(self.inner.node_id),
        }
    }

    pub(super) fn is_leader_now(&self) -> bool {
        openraft_leader(&self.inner.metrics.borrow(), self.inner.node_id)
    }
}

pub(super) fn openraft_leader(m: &RaftMetrics<NodeId, BasicNode>, node_id: NodeId) -> bool {
    m.state == openraft::ServerState::Leader && m.current_leader == Some(node_id)
}

/// Runs on a controller outside the membership: asks the leader (found through the
/// bootstrap servers) to take it as a learner, until it is in the membership.
pub(super) async fn join_as_learner<S: ReplicatedState>(
    quorum: RaftQuorum<S>,
    transport: std::sync::Arc<dyn RaftTransport>,
    bootstrap_servers: Vec<String>,
    advertised_addr: String,
    stop: CancellationToken,
) {
    if bootstrap_servers.is_empty() || advertised_addr.is_empty() {
        return;
    }
    let mut next = 0usize;
    let mut leader_addr: Option<String> = None;
    let mut logged = false;
    while !quorum.is_member() {
        let addr = leader_addr.take().unwrap_or_else(|| {
            next += 1;
            bootstrap_servers[next % bootstrap_servers.len()].clone()
        });
        let request = JoinRequest {
            node_id: quorum.inner.node_id,
            learner_addr: Some(advertised_addr.clone()),
        };
        let asked = tokio::select! {
            _ = stop.cancelled() => return,
            r = ask_join::<S>(&*transport, &addr, &quorum.inner.cluster_id, request) => r,
        };
        match asked {
            Ok(reply) if !reply.member => leader_addr = reply.leader_addr().cloned(),
            Ok(_) => {}
            Err(error) => {
                if !logged {
                    tracing::info!(%addr, %error, "controller quorum not reachable yet");
                    logged = true;
                }
            }
        }
        tokio::select! {
            _ = stop.cancelled() => return,
            _ = tokio::time::sleep(Duration::from_millis(JOIN_RETRY_MS)) => {}
        }
    }
}

/// On the leader: drops the learners that have not answered AppendEntries for
/// `session_timeout` (an abandoned controller-to-be, or a removed voter that was stopped), so
/// the leader stops replicating to them and DescribeQuorum stops listing them.
pub(super) async fn expire_learners<S: ReplicatedState>(
    quorum: RaftQuorum<S>,
    session_timeout: Duration,
    stop: CancellationToken,
) {
    let period = (session_timeout / 4).clamp(Duration::from_millis(50), Duration::from_secs(30));
    // When this leader first saw each learner: one it has not reached yet is given a whole
    // session from then, so a new leader does not drop learners it has not contacted.
    let mut first_seen: BTreeMap<NodeId, Instant> = BTreeMap::new();
    loop {
        tokio::select! {
            _ = stop.cancelled() => return,
            _ = tokio::time::sleep(period) => {}
        }
        if !quorum.is_leader_now() {
            first_seen.clear();
            continue;
        }
        let learners: Vec<NodeId> = quorum
            .inner
            .metrics
            .borrow()
            .membership_config
            .membership()
            .learner_ids()
            .collect();
        first_seen.retain(|id, _| learners.contains(id));
        let now_ms = super::observer::now_ms();
        let timeout_ms = session_timeout.as_millis() as i64;
        let mut expired = BTreeSet::new();
        for id in learners {
            let seen = *first_seen.entry(id).or_insert_with(Instant::now);
            let (last_fetch_ms, _) = quorum.inner.voter_contacts.get(id);
            let silent = last_fetch_ms < 0 || now_ms - last_fetch_ms >= timeout_ms;
            if silent && seen.elapsed() >= session_timeout {
                expired.insert(id);
            }
        }
        if expired.is_empty() {
            continue;
        }
        let Ok(_only_change) = quorum.inner.voter_change.try_lock() else {
            continue;
        };
        let change = ChangeMembers::RemoveNodes(expired.clone());
        match quorum.inner.raft.change_membership(change, true).await {
            Ok(_) => tracing::info!(?expired, "silent controller quorum learners dropped"),
            Err(e) => tracing::debug!(?expired, error = %e, "dropping silent learners failed"),
        }
    }
}
