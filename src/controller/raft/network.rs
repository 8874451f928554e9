//! The raft RPCs between controllers. openraft's requests travel in our own serde_json
//! envelope ([`RaftRpc`]) over a [`RaftTransport`] that only moves bytes, given to the quorum
//! at start: `net::raft_transport` sends each call as a Kafka-framed request (api key
//! [`RAFT_API_KEY`]) on the peer's controller listener, the way KRaft's
//! Vote/BeginQuorumEpoch/Fetch ride the controller listener (KIP-595); [`MemNetwork`] is the
//! in-process network of the tests, able to cut links. The frame's constants and the response
//! the controller listener writes are defined here, where the RPC is.
use std::collections::{BTreeMap, BTreeSet};
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use bytes::{BufMut, Bytes, BytesMut};
use openraft::error::{
    InstallSnapshotError, NetworkError, RPCError, RaftError, RemoteError, Unreachable,
};
use openraft::network::{RPCOption, RaftNetwork, RaftNetworkFactory};
use openraft::raft::{
    AppendEntriesRequest, AppendEntriesResponse, InstallSnapshotRequest, InstallSnapshotResponse,
    VoteRequest, VoteResponse,
};
use openraft::BasicNode;
use parking_lot::Mutex;

use super::types::TypeConfig;
use crate::controller::quorum::{NodeId, ReplicatedState};

/// The api key of a raft RPC on the controller listener; outside Kafka's range so a Kafka
/// client can never send one by accident.
pub const RAFT_API_KEY: i16 = 32000;
pub const RAFT_API_VERSION: i16 = 0;
/// A raft frame larger than this is a corrupt length, not a request.
pub const MAX_RAFT_FRAME_BYTES: usize = 128 * 1024 * 1024;

/// Moves one opaque raft RPC to `target` (at `addr`, its controller listener) and returns the
/// reply bytes.
pub trait RaftTransport: Send + Sync + 'static {
    fn call(
        &self,
        target: NodeId,
        addr: &str,
        payload: Bytes,
    ) -> Pin<Box<dyn Future<Output = std::io::Result<Bytes>> + Send + '_>>;
}

/// What travels on the wire: the RPC with the cluster and the node it is meant for. An address
/// can outlive its node (a stopped voter's port taken by another process, a voter list that is
/// wrong), and openraft must never see another quorum's votes or entries: it would take a
/// foreign leader of the same term for itself.
#[derive(serde::Serialize, serde::Deserialize)]
#[serde(bound = "")]
pub struct RaftEnvelope<S: ReplicatedState> {
    pub cluster_id: String,
    pub destination_id: NodeId,
    pub rpc: RaftRpc<S>,
}

#[derive(serde::Serialize, serde::Deserialize)]
#[serde(bound = "")]
pub enum RaftRpc<S: ReplicatedState> {
    AppendEntries(AppendEntriesRequest<TypeConfig<S>>),
    Vote(VoteRequest<NodeId>),
    InstallSnapshot(InstallSnapshotRequest<TypeConfig<S>>),
    /// Answered with an [`ObserverFetchReply`](super::observer::ObserverFetchReply).
    ObserverFetch(super::observer::ObserverFetch),
    /// A process outside the membership looking for the quorum (KIP-853 bootstrap servers);
    /// answered with [`RaftRpcReply::Join`]. The only RPC taken without a known cluster id
    /// or destination: the asker learns both from the answer.
    Join(super::voters::JoinRequest),
}

#[derive(serde::Serialize, serde::Deserialize)]
pub enum RaftRpcReply {
    AppendEntries(Result<AppendEntriesResponse<NodeId>, RaftError<NodeId>>),
    Vote(Result<VoteResponse<NodeId>, RaftError<NodeId>>),
    InstallSnapshot(
        Result<InstallSnapshotResponse<NodeId>, RaftError<NodeId, InstallSnapshotError>>,
    ),
    Join(super::voters::JoinReply),
    /// The request could not be decoded or the node is gone.
    Error(String),
}

/// Decodes a raft RPC as it arrives on the controller listener; the first thing
/// [`super::RaftQuorum::handle_rpc`] does with bytes from the network (fuzz target `raft_rpc`).
pub fn decode_envelope<S: ReplicatedState>(
    payload: &[u8],
) -> Result<RaftEnvelope<S>, serde_json::Error> {
    serde_json::from_slice(payload)
}

pub fn encode<T: serde::Serialize>(value: &T) -> Bytes {
    match serde_json::to_vec(value) {
        Ok(v) => Bytes::from(v),
        // Our own types always serialize; if one ever does not, the peer sees a decode error.
        Err(_) => Bytes::new(),
    }
}

pub(crate) struct NetFactory {
    pub transport: Arc<dyn RaftTransport>,
    pub cluster_id: String,
    pub contacts: Arc<VoterContacts>,
    pub addresses: Arc<super::addresses::PeerAddresses>,
}

pub(crate) struct NetClient {
    target: NodeId,
    /// The target's listener as the membership stores it.
    stored_addr: String,
    /// Resolved on every call: a replication stream outlives what this node learns about
    /// where its target listens now.
    addresses: Arc<super::addresses::PeerAddresses>,
    cluster_id: String,
    transport: Arc<dyn RaftTransport>,
    contacts: Arc<VoterContacts>,
}

/// When each voter last accepted this node's AppendEntries, and last did so with nothing
/// left to send: DescribeQuorum's `last_fetch_timestamp` and `last_caught_up_timestamp` for
/// voters (openraft's metrics carry no times). Wall-clock milliseconds, for display only.
#[derive(Default)]
pub(crate) struct VoterContacts {
    times: Mutex<BTreeMap<NodeId, (i64, i64)>>,
}

impl VoterContacts {
    fn record(&self, voter: NodeId, caught_up: bool) {
        let now = super::observer::now_ms();
        let mut times = self.times.lock();
        let entry = times.entry(voter).or_insert((now, -1));
        entry.0 = now;
        if caught_up {
            entry.1 = now;
        }
    }

    /// (last fetch, last caught up) of `voter`, -1 when never seen.
    pub(crate) fn get(&self, voter: NodeId) -> (i64, i64) {
        self.times.lock().get(&voter).copied().unwrap_or((-1, -1))
    }
}

impl<S: ReplicatedState> RaftNetworkFactory<TypeConfig<S>> for NetFactory {
    type Network = NetClient;

    async fn new_client(&mut self, target: NodeId, node: &BasicNode) -> NetClient {
        NetClient {
            target,
            stored_addr: node.addr.clone(),
            addresses: self.addresses.clone(),
            cluster_id: self.cluster_id.clone(),
            transport: self.transport.clone(),
            contacts: self.contacts.clone(),
        }
    }
}

type RpcResult<T, E = RaftError<NodeId>> = Result<T, RPCError<NodeId, BasicNode, E>>;

impl NetClient {
    fn envelope<S: ReplicatedState>(&self, rpc: RaftRpc<S>) -> Bytes {
        encode(&RaftEnvelope {
            cluster_id: self.cluster_id.clone(),
            destination_id: self.target,
            rpc,
        })
    }

    async fn round_trip<E: std::error::Error>(
        &self,
        payload: Bytes,
        ttl: Duration,
    ) -> RpcResult<RaftRpcReply, E> {
        let addr = self.addresses.resolve(self.target, &self.stored_addr);
        let call = self.transport.call(self.target, &addr, payload);
        let reply = match tokio::time::timeout(ttl, call).await {
            Ok(Ok(reply)) => reply,
            Ok(Err(e)) => return Err(RPCError::Unreachable(Unreachable::new(&e))),
            Err(_) => {
                let e = std::io::Error::new(std::io::ErrorKind::TimedOut, "raft rpc timed out");
                return Err(RPCError::Unreachable(Unreachable::new(&e)));
            }
        };
        serde_json::from_slice(&reply).map_err(|e| RPCError::Network(NetworkError::new(&e)))
    }

    fn unexpected<E: std::error::Error>(
        &self,
        reply: RaftRpcReply,
    ) -> RPCError<NodeId, BasicNode, E> {
        let msg = match reply {
            RaftRpcReply::Error(m) => m,
            _ => "mismatched raft rpc reply".to_string(),
        };
        let e = std::io::Error::new(std::io::ErrorKind::InvalidData, msg);
        RPCError::Network(NetworkError::new(&e))
    }
}

impl<S: ReplicatedState> RaftNetwork<TypeConfig<S>> for NetClient {
    async fn append_entries(
        &mut self,
        rpc: AppendEntriesRequest<TypeConfig<S>>,
        option: RPCOption,
    ) -> RpcResult<AppendEntriesResponse<NodeId>> {
        // An AppendEntries without entries that succeeds finds the voter holding everything
        // the leader has sent: it is caught up.
        let heartbeat = rpc.entries.is_empty();
        let payload = self.envelope(RaftRpc::<S>::AppendEntries(rpc));
        match self.round_trip(payload, option.hard_ttl()).await? {
            RaftRpcReply::AppendEntries(Ok(r)) => {
                if r.is_success() {
                    self.contacts.record(self.target, heartbeat);
                }
                Ok(r)
            }
            RaftRpcReply::AppendEntries(Err(e)) => {
                Err(RPCError::RemoteError(RemoteError::new(self.target, e)))
            }
            other => Err(self.unexpected(other)),
        }
    }

    async fn install_snapshot(
        &mut self,
        rpc: InstallSnapshotRequest<TypeConfig<S>>,
        option: RPCOption,
    ) -> RpcResult<InstallSnapshotResponse<NodeId>, RaftError<NodeId, InstallSnapshotError>> {
        let payload = self.envelope(RaftRpc::<S>::InstallSnapshot(rpc));
        match self.round_trip(payload, option.hard_ttl()).await? {
            RaftRpcReply::InstallSnapshot(Ok(r)) => Ok(r),
            RaftRpcReply::InstallSnapshot(Err(e)) => {
                Err(RPCError::RemoteError(RemoteError::new(self.target, e)))
            }
            other => Err(self.unexpected(other)),
        }
    }

    async fn vote(
        &mut self,
        rpc: VoteRequest<NodeId>,
        option: RPCOption,
    ) -> RpcResult<VoteResponse<NodeId>> {
        let payload = self.envelope(RaftRpc::<S>::Vote(rpc));
        match self.round_trip(payload, option.hard_ttl()).await? {
            RaftRpcReply::Vote(Ok(r)) => Ok(r),
            RaftRpcReply::Vote(Err(e)) => {
                Err(RPCError::RemoteError(RemoteError::new(self.target, e)))
            }
            other => Err(self.unexpected(other)),
        }
    }
}

/// Encodes the response frame for a raft request read off the controller listener.
pub fn encode_raft_response(correlation_id: i32, payload: &[u8]) -> Bytes {
    let mut out = BytesMut::with_capacity(8 + payload.len());
    out.put_i32((4 + payload.len()) as i32);
    out.put_i32(correlation_id);
    out.put_slice(payload);
    out.freeze()
}

/// Serves raft RPCs that arrive as bytes; implemented by [`super::RaftQuorum`].
pub trait RaftRpcHandler: Send + Sync + 'static {
    fn handle(&self, payload: Bytes) -> Pin<Box<dyn Future<Output = Bytes> + Send + '_>>;
}

/// The in-process network of the tests: a node registry and a set of cut links.
#[derive(Default)]
pub struct MemNetwork {
    nodes: Mutex<BTreeMap<NodeId, Arc<dyn RaftRpcHandler>>>,
    /// Unordered pairs (low, high) that cannot talk.
    cut_links: Mutex<BTreeSet<(NodeId, NodeId)>>,
}

impl MemNetwork {
    pub fn new() -> Arc<Self> {
        Arc::new(MemNetwork::default())
    }

    /// The transport used by node `from`.
    pub fn transport(self: &Arc<Self>, from: NodeId) -> Arc<MemTransport> {
        Arc::new(MemTransport {
            from,
            net: self.clone(),
        })
    }

    pub fn register(&self, node: NodeId, handler: Arc<dyn RaftRpcHandler>) {
        self.nodes.lock().insert(node, handler);
    }

    pub fn unregister(&self, node: NodeId) {
        self.nodes.lock().remove(&node);
    }

    pub fn cut(&self, a: NodeId, b: NodeId) {
        self.cut_links.lock().insert((a.min(b), a.max(b)));
    }

    /// Cuts every link of `node`.
    pub fn isolate(&self, node: NodeId) {
        let others: Vec<NodeId> = self
            .nodes
            .lock()
            .keys()
            .copied()
            .filter(|n| *n != node)
            .collect();
        for other in others {
            self.cut(node, other);
        }
    }

    pub fn heal(&self) {
        self.cut_links.lock().clear();
    }

    fn is_cut(&self, a: NodeId, b: NodeId) -> bool {
        self.cut_links.lock().contains(&(a.min(b), a.max(b)))
    }
}

pub struct MemTransport {
    from: NodeId,
    net: Arc<MemNetwork>,
}

impl RaftTransport for MemTransport {
    fn call(
        &self,
        target: NodeId,
        addr: &str,
        payload: Bytes,
    ) -> Pin<Box<dyn Future<Output = std::io::Result<Bytes>> + Send + '_>> {
        // A bootstrap address names no node id: in memory it is written `mem:<id>`.
        let target = if target == super::voters::BOOTSTRAP_TARGET {
            addr.strip_prefix("mem:")
                .and_then(|id| id.parse().ok())
                .unwrap_or(target)
        } else {
            target
        };
        Box::pin(async move {
            let unreachable =
                || std::io::Error::new(std::io::ErrorKind::ConnectionRefused, "link cut");
            if self.net.is_cut(self.from, target) {
                return Err(unreachable());
            }
            let handler = self
                .net
                .nodes
                .lock()
                .get(&target)
                .cloned()
                .ok_or_else(unreachable)?;
            let reply = handler.handle(payload).await;
            // A link cut while the call was in flight loses the reply too.
            if self.net.is_cut(self.from, target) {
                return Err(unreachable());
            }
            Ok(reply)
        })
    }
}
