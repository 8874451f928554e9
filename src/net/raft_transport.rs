//! The controller quorum's transport over TCP: [`TcpRaftTransport`] moves the opaque Raft
//! RPCs of `controller::raft::network` as Kafka-framed requests (api key
//! [`RAFT_API_KEY`]) to the peers' controller listeners, the way KRaft's
//! Vote/BeginQuorumEpoch/Fetch ride the controller listener (KIP-595), on the outbound client
//! every other peer connection uses: its framing, its connection cache, its TLS and SASL
//! login, and its re-login before a session ends (KIP-368).
//!
//! On the wire a request is `[i32 size][i16 api_key=32000][i16 api_version=0]
//! [i32 correlation_id][i16 client_id length=-1][payload]` (request header v1, null client
//! id) and its response `[i32 size][i32 correlation_id][payload]` (response header v0).
//! One connection per peer is kept, opened lazily and dropped on any error or timeout; calls
//! to different peers never wait on each other.
use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use bytes::Bytes;

use super::connections::PeerConnections;
use super::frame::{PeerError, RawBody};
use super::peer::PeerSecurity;
use crate::controller::quorum::NodeId;
use crate::controller::raft::network::{
    RaftTransport, MAX_RAFT_FRAME_BYTES, RAFT_API_KEY, RAFT_API_VERSION,
};

/// Raft RPCs as Kafka-framed requests on the peers' controller listeners, each call (connect,
/// re-login and exchange) bounded by one timeout.
pub struct TcpRaftTransport {
    call_timeout_ms: u64,
    connections: PeerConnections<NodeId>,
}

impl TcpRaftTransport {
    /// Plain TCP, for PLAINTEXT controller listeners.
    pub fn new(call_timeout_ms: u64) -> Self {
        TcpRaftTransport {
            call_timeout_ms,
            connections: PeerConnections::new("strata-raft", PeerSecurity::default()),
        }
    }

    /// Connects with the controller listener's TLS and SASL login; `client_id` names this
    /// node in the login (the Raft frames themselves carry no client id).
    pub fn with_security(mut self, client_id: impl Into<String>, security: PeerSecurity) -> Self {
        self.connections = PeerConnections::new(client_id, security);
        self
    }

    async fn call_inner(
        &self,
        target: NodeId,
        addr: &str,
        payload: &[u8],
    ) -> Result<Bytes, PeerError> {
        let mut client = self
            .connections
            .take(&target, addr, self.call_timeout_ms)
            .await?;
        client.set_anonymous_requests();
        client.set_max_response_bytes(MAX_RAFT_FRAME_BYTES);
        // The call would log in again by itself; doing it first says so in the log.
        match client.reauthenticate_if_due().await {
            Ok(true) => tracing::debug!(target, "re-authenticated the Raft connection (KIP-368)"),
            Ok(false) => {}
            Err(e) => {
                tracing::warn!(target, error = %e, "re-authenticating the Raft connection failed");
                return Err(e);
            }
        }
        let reply = client
            .call(RAFT_API_KEY, RAFT_API_VERSION, &RawBody(payload))
            .await?;
        self.connections.give_back(target, client);
        Ok(reply)
    }
}

impl RaftTransport for TcpRaftTransport {
    fn call(
        &self,
        target: NodeId,
        addr: &str,
        payload: Bytes,
    ) -> Pin<Box<dyn Future<Output = std::io::Result<Bytes>> + Send + '_>> {
        let addr = addr.to_string();
        Box::pin(async move {
            let timeout = Duration::from_millis(self.call_timeout_ms);
            // A call that times out drops its connection with it: the stream may hold a
            // half-read reply.
            match tokio::time::timeout(timeout, self.call_inner(target, &addr, &payload)).await {
                Ok(r) => r.map_err(std::io::Error::from),
                Err(_) => Err(std::io::Error::new(
                    std::io::ErrorKind::TimedOut,
                    "raft rpc timed out",
                )),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::controller::raft::network::encode_raft_response;
    use crate::net::test_peers::{answering_peer, silent_peer};
    use bytes::Buf;
    use std::sync::atomic::Ordering;

    /// A controller listener's answer: the Raft frame's payload reversed.
    fn reversed(mut frame: Bytes) -> Vec<u8> {
        // Request header v1 with a null client id, as the Raft frames have always been.
        assert_eq!(frame.get_i16(), RAFT_API_KEY);
        assert_eq!(frame.get_i16(), RAFT_API_VERSION);
        let correlation_id = frame.get_i32();
        assert_eq!(frame.get_i16(), -1);
        let reply: Vec<u8> = frame.iter().rev().copied().collect();
        encode_raft_response(correlation_id, &reply).to_vec()
    }

    #[tokio::test]
    async fn calls_share_one_connection_and_a_lost_one_is_opened_again() {
        let (addr, accepted) = answering_peer(2, reversed).await;
        let transport = TcpRaftTransport::new(2_000);
        for _ in 0..2 {
            let reply = transport
                .call(7, &addr, Bytes::from_static(b"abc"))
                .await
                .unwrap();
            assert_eq!(&reply[..], b"cba");
        }
        assert_eq!(accepted.load(Ordering::SeqCst), 1);
        // The peer closed the connection after two answers: this call fails, the next one
        // connects again.
        assert!(transport.call(7, &addr, Bytes::new()).await.is_err());
        let reply = transport
            .call(7, &addr, Bytes::from_static(b"xy"))
            .await
            .unwrap();
        assert_eq!(&reply[..], b"yx");
        assert_eq!(accepted.load(Ordering::SeqCst), 2);
    }

    #[tokio::test]
    async fn a_silent_peer_times_out_as_an_io_timeout() {
        let addr = silent_peer().await;
        let transport = TcpRaftTransport::new(100);
        let e = transport
            .call(1, &addr, Bytes::from_static(b"x"))
            .await
            .unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::TimedOut);
    }
}
