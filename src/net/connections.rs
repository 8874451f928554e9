//! The connection cache of the outbound client: idle [`PeerClient`] connections kept by peer,
//! so a call costs a round trip rather than a connection, a TLS handshake and a SASL login
//! (Kafka's `NetworkClient` likewise keeps one connection per node).
//!
//! A call takes an idle connection to the peer, or opens one, and gives it back only after a
//! clean exchange: a connection that failed or timed out may hold a late answer and is
//! dropped. A connection opened to an address the peer no longer has is dropped too. A call
//! made while the peer's connections are all busy opens another, so a call stuck on an
//! unresponsive peer never holds up the others; at most `max_idle_per_peer` are kept after.
use std::collections::HashMap;
use std::hash::Hash;

use bytes::Bytes;
use parking_lot::Mutex;

use super::peer::{decode_body, PeerClient, PeerError, PeerSecurity};
use crate::protocol::codec::{Decode, Encode};

/// Connections to the peers of one purpose (the Raft transport, the channel to the
/// controller, the share persister...), all with the same client id and security.
pub struct PeerConnections<K> {
    client_id: String,
    security: PeerSecurity,
    max_idle_per_peer: usize,
    idle: Mutex<HashMap<K, Vec<PeerClient>>>,
}

impl<K: Eq + Hash> PeerConnections<K> {
    /// Keeps one idle connection per peer.
    pub fn new(client_id: impl Into<String>, security: PeerSecurity) -> Self {
        PeerConnections {
            client_id: client_id.into(),
            security,
            max_idle_per_peer: 1,
            idle: Mutex::new(HashMap::new()),
        }
    }

    pub fn with_max_idle_per_peer(mut self, max_idle: usize) -> Self {
        self.max_idle_per_peer = max_idle;
        self
    }

    pub fn security(&self) -> &PeerSecurity {
        &self.security
    }

    /// An idle connection to `peer` opened to `addr`, or a new one (within `timeout_ms`);
    /// its calls time out after `timeout_ms`.
    pub async fn take(&self, peer: &K, addr: &str, timeout_ms: u64) -> std::io::Result<PeerClient> {
        let idle = {
            let mut idle = self.idle.lock();
            let kept = idle.get_mut(peer);
            // Connections to where the peer listened before are of no more use.
            let reusable = kept.and_then(|kept| {
                kept.retain(|c| c.addr() == addr);
                kept.pop()
            });
            reusable
        };
        match idle {
            Some(mut client) => {
                client.set_request_timeout_ms(timeout_ms);
                Ok(client)
            }
            None => {
                PeerClient::connect_secured(addr, &self.client_id, timeout_ms, &self.security).await
            }
        }
    }

    /// Keeps `client` for the next call to `peer`: only after a clean exchange.
    pub fn give_back(&self, peer: K, client: PeerClient) {
        let mut idle = self.idle.lock();
        let kept = idle.entry(peer).or_default();
        if kept.len() < self.max_idle_per_peer {
            kept.push(client);
        }
    }

    /// Drops the idle connections of every peer but those `keep` names.
    pub fn retain_peers(&self, keep: impl Fn(&K) -> bool) {
        self.idle.lock().retain(|peer, _| keep(peer));
    }

    /// One request to `peer` at `addr` on a cached connection; the response body. A failure
    /// to connect is [`PeerError::Io`].
    pub async fn call(
        &self,
        peer: K,
        addr: &str,
        timeout_ms: u64,
        api_key: i16,
        api_version: i16,
        body: &impl Encode,
    ) -> Result<Bytes, PeerError> {
        let mut client = self.take(&peer, addr, timeout_ms).await?;
        let response = client.call(api_key, api_version, body).await?;
        self.give_back(peer, client);
        Ok(response)
    }

    /// As [`Self::call`], the whole body decoded as `Resp`.
    pub async fn call_typed<Req: Encode, Resp: Decode>(
        &self,
        peer: K,
        addr: &str,
        timeout_ms: u64,
        api_key: i16,
        api_version: i16,
        request: &Req,
    ) -> Result<Resp, PeerError> {
        let mut body = self
            .call(peer, addr, timeout_ms, api_key, api_version, request)
            .await?;
        decode_body(&mut body, api_version)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::net::test_peers::answering_peer;
    use crate::protocol::header::{RequestHeader, ResponseHeader};
    use crate::protocol::messages::api_versions_request::ApiVersionsRequest;
    use crate::protocol::messages::api_versions_response::ApiVersionsResponse;
    use std::sync::atomic::Ordering;

    /// Answers an ApiVersions v0 request frame with error 0.
    fn api_versions(mut request: Bytes) -> Vec<u8> {
        let (h, _) = RequestHeader::decode_detect(&mut request).unwrap();
        let mut body = bytes::BytesMut::new();
        ResponseHeader::new(h.correlation_id).encode(&mut body, 0);
        ApiVersionsResponse::default().encode(&mut body, 0);
        let mut out = (body.len() as i32).to_be_bytes().to_vec();
        out.extend_from_slice(&body);
        out
    }

    #[tokio::test]
    async fn calls_reuse_the_idle_connection_and_a_new_address_opens_another() {
        let (addr, accepted) = answering_peer(usize::MAX, api_versions).await;
        let connections = PeerConnections::new("t", PeerSecurity::default());
        for _ in 0..3 {
            let r: ApiVersionsResponse = connections
                .call_typed(1, &addr, 2_000, 18, 0, &ApiVersionsRequest::default())
                .await
                .unwrap();
            assert_eq!(r.error_code, 0);
        }
        assert_eq!(accepted.load(Ordering::SeqCst), 1);
        // The same peer now somewhere else: the old connection is not used there.
        let (moved, accepted_there) = answering_peer(usize::MAX, api_versions).await;
        let _: ApiVersionsResponse = connections
            .call_typed(1, &moved, 2_000, 18, 0, &ApiVersionsRequest::default())
            .await
            .unwrap();
        assert_eq!(accepted_there.load(Ordering::SeqCst), 1);
    }

    #[tokio::test]
    async fn busy_connections_do_not_block_and_only_the_kept_number_stays_idle() {
        let (addr, accepted) = answering_peer(usize::MAX, api_versions).await;
        let connections = PeerConnections::new("t", PeerSecurity::default());
        let a = connections.take(&1, &addr, 2_000).await.unwrap();
        let b = connections.take(&1, &addr, 2_000).await.unwrap();
        assert_eq!(accepted.load(Ordering::SeqCst), 2);
        connections.give_back(1, a);
        connections.give_back(1, b);
        assert_eq!(connections.idle.lock()[&1].len(), 1);
        connections.retain_peers(|p| *p != 1);
        assert!(connections.idle.lock().get(&1).is_none());
    }
}
