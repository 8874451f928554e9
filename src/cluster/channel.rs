//! The broker's channel to the active controller (Kafka's `NodeToControllerChannelManager`):
//! requests go to the quorum leader's controller listener over one kept connection; a failed
//! connection is dropped and the next call reconnects to whoever leads then.
use std::collections::BTreeMap;
use std::sync::Arc;

use crate::controller::Quorum;
use crate::net::connections::PeerConnections;
use crate::net::peer::{PeerError, PeerSecurity};
use crate::protocol::codec::{Decode, Encode};

use super::MetadataQuorum;

#[derive(Debug)]
pub enum ChannelError {
    /// No controller is known to lead right now.
    NoController,
    Network(String),
    Decode(String),
    /// The request was sent and no answer came in time: the controller may have applied it,
    /// so it must not be sent again blindly.
    TimedOut,
}

impl std::fmt::Display for ChannelError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{self:?}")
    }
}

pub struct ControllerChannel {
    node_id: i32,
    voters: BTreeMap<i32, String>,
    quorum: Arc<MetadataQuorum>,
    timeout_ms: u64,
    /// Connections by controller id, with the controller listener's TLS and SASL login. A
    /// call takes an idle one (or connects) and returns it after a clean exchange, so a call
    /// stuck on an unresponsive controller never holds up the others (heartbeats above all: a
    /// blocked heartbeat gets a healthy broker fenced).
    connections: PeerConnections<i32>,
}

/// Idle connections kept per channel.
const MAX_IDLE_CONNECTIONS: usize = 4;

fn connections(node_id: i32, security: PeerSecurity) -> PeerConnections<i32> {
    PeerConnections::new(format!("strata-broker-{node_id}-to-controller"), security)
        .with_max_idle_per_peer(MAX_IDLE_CONNECTIONS)
}

impl ControllerChannel {
    pub fn new(
        node_id: i32,
        voters: BTreeMap<i32, String>,
        quorum: Arc<MetadataQuorum>,
        timeout_ms: u64,
    ) -> Self {
        ControllerChannel {
            node_id,
            voters,
            quorum,
            timeout_ms,
            connections: connections(node_id, PeerSecurity::default()),
        }
    }

    /// How long a call waits for its answer unless told otherwise.
    pub fn timeout_ms(&self) -> u64 {
        self.timeout_ms
    }

    /// Connects to the controllers with the controller listener's TLS and SASL login.
    pub fn with_security(mut self, security: PeerSecurity) -> Self {
        self.connections = connections(self.node_id, security);
        self
    }

    /// Sends one request to the active controller and decodes its response.
    pub async fn call<Req: Encode, Resp: Decode>(
        &self,
        api_key: i16,
        api_version: i16,
        request: &Req,
    ) -> Result<Resp, ChannelError> {
        self.call_with_timeout(api_key, api_version, request, self.timeout_ms)
            .await
    }

    /// As [`Self::call`] with its own timeout (heartbeats must fail well within a session).
    pub async fn call_with_timeout<Req: Encode, Resp: Decode>(
        &self,
        api_key: i16,
        api_version: i16,
        request: &Req,
        timeout_ms: u64,
    ) -> Result<Resp, ChannelError> {
        let leader = self
            .quorum
            .leader()
            .map(|l| l as i32)
            .ok_or(ChannelError::NoController)?;
        // The leader may be a voter added after start: its address comes from the quorum,
        // which names this process's own listener as bound now (a lone voter's ephemeral port
        // differs from the one its stored membership recorded at an earlier start) and, in a
        // static quorum, the configured listeners of the others.
        let addr = self
            .quorum
            .voter_addresses()
            .remove(&(leader as u64))
            .or_else(|| self.voters.get(&leader).cloned())
            .ok_or(ChannelError::NoController)?;
        // Connections to a former leader are of no more use.
        self.connections.retain_peers(|id| *id == leader);
        let mut body = self
            .connections
            .call(leader, &addr, timeout_ms, api_key, api_version, request)
            .await
            .map_err(|e| match e {
                PeerError::Timeout => ChannelError::TimedOut,
                e => ChannelError::Network(format!("{e:?}")),
            })?;
        Resp::decode(&mut body, api_version).map_err(|e| ChannelError::Decode(e.to_string()))
    }
}
