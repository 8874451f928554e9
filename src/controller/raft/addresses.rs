//! Where this node reaches the other voters, and how a voter whose controller listener moved
//! gets the stored membership to name the new one.
//!
//! openraft's membership records each voter's listener as it was when the voter was added,
//! and a cluster restarted with its controller ports moved must not keep dialling those.
//! Kafka keeps two cases apart, and so do we:
//! - A static quorum (`controller.quorum.voters`; kraft.version 0 in Kafka, whose voter set
//!   is the configuration): the address configured for a voter is where it is reached,
//!   whatever the log remembers. DescribeQuorum names the configured addresses too.
//! - A dynamic quorum (`controller.quorum.bootstrap.servers`, KIP-853): the stored voters
//!   are authoritative, and a voter whose listener moved announces the new one to the
//!   leader, which stores it (Kafka's UpdateRaftVoter; here openraft's `SetNodes`, asked for
//!   with the join request a member sends). Kafka's followers pull from the leader, so a
//!   moved follower can still reach it; openraft's leader pushes, and when every voter moved
//!   none reaches another. So until the membership is current, a voter also asks the
//!   bootstrap servers in turn: each answer names the member that gave it, and that member
//!   is dialled at the address it answered on.
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use openraft::{BasicNode, ChangeMembers};
use parking_lot::Mutex;
use tokio_util::sync::CancellationToken;

use super::network::RaftTransport;
use super::voters::{ask_join, change_error, change_pending, openraft_leader, JoinRequest};
use super::RaftQuorum;
use crate::controller::quorum::{NodeId, ReplicatedState, VoterChangeError};

/// Pause between two rounds of a voter whose stored listener is not current.
const ANNOUNCE_RETRY: Duration = Duration::from_millis(300);
/// How long a leader waits for the change that stores a voter's new listener to commit.
pub(super) const UPDATE_TIMEOUT: Duration = Duration::from_secs(2);

/// The addresses that win over the stored membership's when this node dials a voter.
#[derive(Default)]
pub(crate) struct PeerAddresses {
    node_id: NodeId,
    /// This node's own controller listener now (empty when not known).
    own: String,
    /// `controller.quorum.voters` of a static quorum.
    configured: BTreeMap<NodeId, String>,
    /// Where a voter of a dynamic quorum answered, until the stored membership agrees.
    learned: Mutex<BTreeMap<NodeId, String>>,
}

impl PeerAddresses {
    /// `configured`: the static voters, or empty for a dynamic quorum.
    pub(crate) fn new(node_id: NodeId, own: &str, configured: BTreeMap<NodeId, String>) -> Self {
        PeerAddresses {
            node_id,
            own: own.to_string(),
            configured,
            learned: Mutex::default(),
        }
    }

    /// Where `id` is reached, given the address the stored membership has for it.
    pub(crate) fn resolve(&self, id: NodeId, stored: &str) -> String {
        if let Some(addr) = self.configured.get(&id) {
            return addr.clone();
        }
        if id == self.node_id && !self.own.is_empty() {
            return self.own.clone();
        }
        match self.learned.lock().get(&id) {
            Some(addr) => addr.clone(),
            None => stored.to_string(),
        }
    }

    /// `id` answered at `addr`.
    fn learn(&self, id: NodeId, addr: &str) {
        if id != self.node_id && !self.configured.contains_key(&id) {
            self.learned.lock().insert(id, addr.to_string());
        }
    }

    /// Drops what was learnt about a node once the stored membership names the same (a later
    /// move of that node then reaches everyone through the membership).
    fn forget_agreed<'a>(&self, stored: impl Iterator<Item = (&'a NodeId, &'a BasicNode)>) {
        let mut learned = self.learned.lock();
        if learned.is_empty() {
            return;
        }
        for (id, node) in stored {
            if learned.get(id) == Some(&node.addr) {
                learned.remove(id);
            }
        }
    }
}

impl<S: ReplicatedState> RaftQuorum<S> {
    /// On the leader: stores `addr` as the controller listener of member `node_id` (Kafka's
    /// UpdateRaftVoter). Nothing to do when the membership already names it.
    pub(super) async fn update_address(
        &self,
        node_id: NodeId,
        addr: String,
        timeout: Duration,
    ) -> Result<(), VoterChangeError> {
        let Ok(_only_change) = self.inner.voter_change.try_lock() else {
            return Err(VoterChangeError::ChangeInProgress);
        };
        {
            let m = self.inner.metrics.borrow();
            if !openraft_leader(&m, self.inner.node_id) {
                return Err(VoterChangeError::NotLeader {
                    leader: m.current_leader,
                });
            }
            match m.membership_config.membership().get_node(&node_id) {
                None => return Err(VoterChangeError::VoterNotFound),
                Some(node) if node.addr == addr => return Ok(()),
                Some(_) => {}
            }
            if change_pending(&m) {
                return Err(VoterChangeError::ChangeInProgress);
            }
        }
        let change = ChangeMembers::SetNodes(BTreeMap::from([(
            node_id,
            BasicNode { addr: addr.clone() },
        )]));
        tokio::time::timeout(timeout, self.inner.raft.change_membership(change, false))
            .await
            .map_err(|_| VoterChangeError::TimedOut)?
            .map_err(change_error)?;
        tracing::info!(node_id, %addr, "controller quorum voter listener updated");
        Ok(())
    }
}

/// Runs on every member of a dynamic quorum. While the stored membership names another
/// listener for this node, no leader is known, or a membership change waits to commit, each
/// round asks the leader (when it is known and this node's listener is stale) or the next
/// bootstrap server to store `own_addr`, and learns where the member that answered listens.
/// A leader stores its own listener itself.
pub(super) async fn keep_address_current<S: ReplicatedState>(
    quorum: RaftQuorum<S>,
    transport: Arc<dyn RaftTransport>,
    bootstrap_servers: Vec<String>,
    own_addr: String,
    stop: CancellationToken,
) {
    if own_addr.is_empty() {
        return;
    }
    let node_id = quorum.inner.node_id;
    let addresses = quorum.inner.addresses.clone();
    let mut next = 0usize;
    let mut leader_addr: Option<String> = None;
    let mut logged = false;
    loop {
        tokio::select! {
            _ = stop.cancelled() => return,
            _ = tokio::time::sleep(ANNOUNCE_RETRY) => {}
        }
        let (stale, leader, pending) = {
            let m = quorum.inner.metrics.borrow();
            let membership = m.membership_config.membership();
            // Outside the membership, joining is `join_as_learner`'s part.
            let Some(own) = membership.get_node(&node_id) else {
                continue;
            };
            addresses.forget_agreed(membership.nodes());
            (own.addr != own_addr, m.current_leader, change_pending(&m))
        };
        if !stale && leader.is_some() && !pending {
            leader_addr = None;
            continue;
        }
        if stale && quorum.is_leader_now() {
            if let Err(error) = quorum
                .update_address(node_id, own_addr.clone(), UPDATE_TIMEOUT)
                .await
            {
                tracing::debug!(%error, "storing this controller's new listener failed");
            }
        }
        let addr = match leader_addr.take() {
            Some(addr) => addr,
            None if !bootstrap_servers.is_empty() => {
                next += 1;
                bootstrap_servers[next % bootstrap_servers.len()].clone()
            }
            None => continue,
        };
        let request = JoinRequest {
            node_id,
            learner_addr: Some(own_addr.clone()),
        };
        let asked = tokio::select! {
            _ = stop.cancelled() => return,
            r = ask_join::<S>(&*transport, &addr, &quorum.inner.cluster_id, request) => r,
        };
        match asked {
            Ok(reply) => {
                if let Some(responder) = reply.responder_id {
                    addresses.learn(responder, &addr);
                }
                // A member that does not lead names the leader: ask it next.
                let leader = reply
                    .leader_id
                    .filter(|l| *l != node_id && Some(*l) != reply.responder_id);
                if let (true, Some(leader)) = (stale, leader) {
                    leader_addr = reply.voters.get(&leader).cloned();
                }
            }
            Err(error) => {
                if !logged {
                    tracing::info!(%addr, %error, "controller quorum member not reachable yet");
                    logged = true;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn configured_addresses_win_then_this_nodes_own_then_learnt_ones() {
        let configured = BTreeMap::from([(2, "h2:new".to_string())]);
        let a = PeerAddresses::new(1, "h1:new", configured);
        assert_eq!(
            a.resolve(2, "h2:old"),
            "h2:new",
            "static voters: the config"
        );
        assert_eq!(a.resolve(1, "h1:old"), "h1:new", "this node's own listener");
        assert_eq!(a.resolve(3, "h3:old"), "h3:old", "nothing better known");
        a.learn(3, "h3:new");
        a.learn(2, "h2:other");
        assert_eq!(a.resolve(3, "h3:old"), "h3:new");
        assert_eq!(
            a.resolve(2, "h2:old"),
            "h2:new",
            "learning never beats the config"
        );
        let stored = BTreeMap::from([(3, BasicNode::new("h3:new"))]);
        a.forget_agreed(stored.iter());
        assert!(a.learned.lock().is_empty(), "the membership agrees now");
        assert_eq!(a.resolve(3, "h3:newer"), "h3:newer");
    }
}
