//! A Kafka-protocol client connection from this broker to another broker, to the controller
//! or to a foreign cluster (Kafka's `NetworkClient` as the replica fetcher and the
//! broker-to-controller channel use it), in the framing of [`super::frame`].
//!
//! One request at a time per connection (no pipelining): the follower fetcher sends one Fetch
//! per source broker and waits for it, as Kafka's `ReplicaFetcherThread` does. Every call has
//! a timeout; after a timeout or any error the connection must be dropped, because a late
//! response could otherwise be read as the answer to the next request (Kafka's `NetworkClient`
//! disconnects on request timeout for the same reason).
//!
//! On SSL and SASL_SSL listeners the connection starts with the TLS handshake
//! ([`PeerClient::connect_secured`]); on SASL_PLAINTEXT and SASL_SSL the SASL login
//! (`net::sasl_client`) runs right after it, before the first request, all within the connect
//! timeout. When the peer gives the session a lifetime (KIP-368, `connections.max.reauth.ms`),
//! the client logs in again on the same connection before it ends, as Kafka's clients do.
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use tokio::io::BufReader;

use super::frame::{encode_request_as, exchange};
use super::sasl_client::PeerSasl;
use crate::config::sasl::PeerLogin;
use crate::protocol::codec::{Decode, Encode};
use crate::security::tls::client::PeerTls;
use crate::security::SecuredStream;

pub use super::frame::{decode_body, encode_request, PeerError, DEFAULT_MAX_RESPONSE_BYTES};

/// How this broker connects to one listener of another cluster: TLS for SSL and SASL_SSL, a
/// SASL login for SASL_PLAINTEXT and SASL_SSL; neither for PLAINTEXT (the default). A value
/// the caller holds and passes to each connection: this cluster's own listeners take theirs
/// from the broker config ([`PeerSecurity::for_listener`]); a client of a foreign cluster
/// builds its own ([`PeerSecurity::new`]) from that cluster's settings.
#[derive(Clone, Debug, Default)]
pub struct PeerSecurity {
    pub tls: Option<PeerTls>,
    pub sasl: Option<Arc<PeerSasl>>,
}

impl PeerSecurity {
    /// TLS when `tls` is given, the SASL login `login` when given.
    pub fn new(tls: Option<PeerTls>, login: Option<PeerLogin>) -> PeerSecurity {
        PeerSecurity {
            tls,
            sasl: login.map(|l| Arc::new(PeerSasl::new(l))),
        }
    }

    /// The security of `listener` as this broker's config describes it (its TLS settings and
    /// the `login` for it when it is SASL).
    pub fn for_listener(
        config: &crate::config::BrokerConfig,
        listener: &str,
        login: Option<&PeerLogin>,
    ) -> Result<PeerSecurity, String> {
        let tls = crate::security::tls::client::for_listener(config, listener)
            .map_err(|e| e.to_string())?;
        let login = login.filter(|l| l.listener.eq_ignore_ascii_case(listener));
        Ok(PeerSecurity::new(tls, login.cloned()))
    }

    pub fn is_plaintext(&self) -> bool {
        self.tls.is_none() && self.sasl.is_none()
    }

    /// Connects to `addr` (TCP, then TLS and the SASL login when configured). Returns the
    /// stream and, when the peer limits the session, how long it lasts.
    pub async fn connect(
        &self,
        addr: &str,
        client_id: &str,
    ) -> std::io::Result<(SecuredStream, Option<Duration>)> {
        let mut stream = crate::security::tls::client::connect(addr, self.tls.as_ref()).await?;
        let lifetime = match &self.sasl {
            Some(sasl) => sasl.authenticate(addr, &mut stream, client_id).await?,
            None => None,
        };
        Ok((stream, lifetime))
    }
}

/// When to log in again within a session of `lifetime`: at 85 % of it, leaving the rest
/// for the exchange (Kafka's clients pick a point between 85 and 95 %).
fn reauthenticate_at(lifetime: Option<Duration>) -> Option<Instant> {
    lifetime.map(|l| Instant::now() + l.mul_f64(0.85))
}

/// One connection to a peer broker.
pub struct PeerClient {
    stream: BufReader<SecuredStream>,
    /// The address it was opened to (`host:port`).
    addr: String,
    /// The login to repeat before the session ends.
    sasl: Option<Arc<PeerSasl>>,
    reauthenticate_at: Option<Instant>,
    /// Names this broker in the SASL login and, unless `anonymous_requests`, in every request.
    client_id: String,
    anonymous_requests: bool,
    next_correlation_id: i32,
    request_timeout_ms: u64,
    max_response_bytes: usize,
}

impl PeerClient {
    /// Connects to `addr` (`host:port`) within `timeout_ms`; calls then time out after the
    /// same `timeout_ms` unless changed with [`PeerClient::set_request_timeout_ms`].
    pub async fn connect(addr: &str, client_id: &str, timeout_ms: u64) -> std::io::Result<Self> {
        Self::connect_secured(addr, client_id, timeout_ms, &PeerSecurity::default()).await
    }

    /// As [`PeerClient::connect`], with the listener's TLS and SASL login when it has them
    /// (the handshake and the login count towards the connect timeout).
    pub async fn connect_secured(
        addr: &str,
        client_id: &str,
        timeout_ms: u64,
        security: &PeerSecurity,
    ) -> std::io::Result<Self> {
        // Fetches are small requests whose latency matters more than batching (the connect
        // sets TCP_NODELAY).
        let connect = security.connect(addr, client_id);
        let (stream, lifetime) =
            match tokio::time::timeout(Duration::from_millis(timeout_ms), connect).await {
                Ok(s) => s?,
                Err(_) => {
                    return Err(std::io::Error::new(
                        std::io::ErrorKind::TimedOut,
                        format!("connect to {addr} timed out after {timeout_ms} ms"),
                    ))
                }
            };
        Ok(PeerClient {
            stream: BufReader::with_capacity(64 * 1024, stream),
            addr: addr.to_string(),
            sasl: security.sasl.clone(),
            reauthenticate_at: reauthenticate_at(lifetime),
            client_id: client_id.to_string(),
            anonymous_requests: false,
            next_correlation_id: 0,
            request_timeout_ms: timeout_ms,
            max_response_bytes: DEFAULT_MAX_RESPONSE_BYTES,
        })
    }

    /// The address the connection was opened to.
    pub fn addr(&self) -> &str {
        &self.addr
    }

    pub fn set_request_timeout_ms(&mut self, timeout_ms: u64) {
        self.request_timeout_ms = timeout_ms;
    }

    pub fn set_max_response_bytes(&mut self, max_bytes: usize) {
        self.max_response_bytes = max_bytes;
    }

    /// Sends requests with a null client id (the SASL login keeps naming the client): the
    /// Raft frames' header has always carried none.
    pub fn set_anonymous_requests(&mut self) {
        self.anonymous_requests = true;
    }

    /// Sends one request with the next correlation id and returns the response body (header
    /// stripped).
    pub async fn call(
        &mut self,
        api_key: i16,
        api_version: i16,
        body: &impl Encode,
    ) -> Result<Bytes, PeerError> {
        let correlation_id = self.next_correlation_id;
        self.next_correlation_id = self.next_correlation_id.wrapping_add(1);
        self.call_with_correlation_id(api_key, api_version, correlation_id, body)
            .await
    }

    /// As [`PeerClient::call`] with a caller-chosen correlation id (the fetcher uses its
    /// request ids, so the wire shows which fetch a response answers).
    pub async fn call_with_correlation_id(
        &mut self,
        api_key: i16,
        api_version: i16,
        correlation_id: i32,
        body: &impl Encode,
    ) -> Result<Bytes, PeerError> {
        self.reauthenticate_if_due().await?;
        let client_id = (!self.anonymous_requests).then_some(self.client_id.as_str());
        let frame = encode_request_as(api_key, api_version, correlation_id, client_id, body);
        let timeout = self.request_timeout();
        let exchange = exchange(
            &mut self.stream,
            &frame,
            api_key,
            api_version,
            correlation_id,
            self.max_response_bytes,
        );
        match tokio::time::timeout(timeout, exchange).await {
            Ok(r) => r,
            Err(_) => Err(PeerError::Timeout),
        }
    }

    fn request_timeout(&self) -> Duration {
        Duration::from_millis(self.request_timeout_ms)
    }

    /// KIP-368: when the session the peer gave is near its end, a new SaslHandshake and
    /// SaslAuthenticate on this connection (no request is in flight: one at a time), within
    /// the request timeout. Returns whether it logged in again; every call does this first,
    /// so a caller need not, unless it wants to know. A failure drops the connection.
    pub async fn reauthenticate_if_due(&mut self) -> Result<bool, PeerError> {
        let due = self
            .reauthenticate_at
            .is_some_and(|at| Instant::now() >= at);
        if !due {
            return Ok(false);
        }
        let Some(sasl) = self.sasl.clone() else {
            self.reauthenticate_at = None;
            return Ok(false);
        };
        let first_id = self.next_correlation_id;
        self.next_correlation_id = self.next_correlation_id.wrapping_add(3);
        let timeout = self.request_timeout();
        let exchange = super::sasl_client::authenticate(
            &mut self.stream,
            sasl.login(),
            &self.client_id,
            first_id,
        );
        match tokio::time::timeout(timeout, exchange).await {
            Ok(Ok(lifetime)) => {
                self.reauthenticate_at = reauthenticate_at(lifetime);
                Ok(true)
            }
            Ok(Err(e)) => Err(PeerError::Io(e.into())),
            Err(_) => Err(PeerError::Timeout),
        }
    }

    /// Sends `request` and decodes the whole body as `Resp` (generated messages carry their
    /// API key as an inherent `API_KEY` constant, so the caller passes it).
    pub async fn call_typed<Req: Encode, Resp: Decode>(
        &mut self,
        api_key: i16,
        api_version: i16,
        request: &Req,
    ) -> Result<Resp, PeerError> {
        let mut body = self.call(api_key, api_version, request).await?;
        decode_body(&mut body, api_version)
    }
}

/// One ListOffsets (v7) for every partition in `partitions` (topic name to partition
/// indexes): the offset of each partition answered without an error, by (topic, partition).
pub async fn list_offsets(
    c: &mut PeerClient,
    partitions: &std::collections::BTreeMap<String, Vec<i32>>,
    replica_id: i32,
    isolation_level: i8,
    timestamp: i64,
    timeout_ms: u64,
) -> Result<std::collections::HashMap<(String, i32), i64>, PeerError> {
    use crate::protocol::messages::list_offsets_request::{
        ListOffsetsPartition, ListOffsetsRequest, ListOffsetsTopic,
    };
    use crate::protocol::messages::list_offsets_response::ListOffsetsResponse;
    let request = ListOffsetsRequest {
        replica_id,
        isolation_level,
        topics: partitions
            .iter()
            .map(|(name, indexes)| ListOffsetsTopic {
                name: name.clone(),
                partitions: indexes
                    .iter()
                    .map(|p| ListOffsetsPartition {
                        partition_index: *p,
                        timestamp,
                        ..Default::default()
                    })
                    .collect(),
                ..Default::default()
            })
            .collect(),
        timeout_ms: timeout_ms.min(i32::MAX as u64) as i32,
        ..Default::default()
    };
    let response: ListOffsetsResponse = c
        .call_typed(ListOffsetsRequest::API_KEY, 7, &request)
        .await?;
    let mut out = std::collections::HashMap::new();
    for t in response.topics {
        for p in t.partitions {
            if p.error_code == 0 && p.offset >= 0 {
                out.insert((t.name.clone(), p.partition_index), p.offset);
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::header::{RequestHeader, ResponseHeader};
    use crate::protocol::messages::api_versions_request::ApiVersionsRequest;
    use crate::protocol::messages::api_versions_response::ApiVersionsResponse;
    use bytes::BytesMut;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::TcpListener;

    /// A scripted peer: reads one request frame and answers with `answer(request frame)`.
    async fn one_shot_server(
        answer: impl FnOnce(Bytes) -> Vec<u8> + Send + 'static,
    ) -> (String, tokio::task::JoinHandle<()>) {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        let task = tokio::spawn(async move {
            let (mut s, _) = listener.accept().await.unwrap();
            let size = s.read_i32().await.unwrap();
            let mut req = vec![0u8; size as usize];
            s.read_exact(&mut req).await.unwrap();
            let out = answer(Bytes::from(req));
            s.write_all(&out).await.unwrap();
            // Keep the socket open until the client is done reading.
            let mut rest = Vec::new();
            let _ = s.read_to_end(&mut rest).await;
        });
        (addr, task)
    }

    fn framed(body: &[u8]) -> Vec<u8> {
        let mut v = (body.len() as i32).to_be_bytes().to_vec();
        v.extend_from_slice(body);
        v
    }

    #[tokio::test]
    async fn api_versions_uses_header_v2_out_and_v0_back() {
        let (addr, _task) = one_shot_server(|mut req| {
            let (h, hv) = RequestHeader::decode_detect(&mut req).unwrap();
            assert_eq!((h.api_key, h.api_version, hv), (18, 3, 2));
            assert_eq!(h.client_id.as_deref(), Some("peer-test"));
            let mut body = BytesMut::new();
            // Response header v0 even though v3 is flexible (KIP-511).
            ResponseHeader::new(h.correlation_id).encode(&mut body, 0);
            ApiVersionsResponse {
                error_code: 0,
                ..Default::default()
            }
            .encode(&mut body, 3);
            framed(&body)
        })
        .await;
        let mut c = PeerClient::connect(&addr, "peer-test", 2_000)
            .await
            .unwrap();
        let r: ApiVersionsResponse = c
            .call_typed(18, 3, &ApiVersionsRequest::default())
            .await
            .unwrap();
        assert_eq!(r.error_code, 0);
    }

    #[tokio::test]
    async fn wrong_correlation_id_is_an_error() {
        let (addr, _task) = one_shot_server(|_| framed(&[0, 0, 0, 99])).await;
        let mut c = PeerClient::connect(&addr, "t", 2_000).await.unwrap();
        let e = c
            .call_with_correlation_id(18, 0, 7, &ApiVersionsRequest::default())
            .await
            .unwrap_err();
        assert!(matches!(
            e,
            PeerError::CorrelationMismatch {
                expected: 7,
                got: 99
            }
        ));
    }

    #[tokio::test]
    async fn oversized_and_negative_frames_are_refused_before_allocating() {
        for size in [i32::MAX, -5] {
            let (addr, _task) = one_shot_server(move |_| size.to_be_bytes().to_vec()).await;
            let mut c = PeerClient::connect(&addr, "t", 2_000).await.unwrap();
            c.set_max_response_bytes(1024);
            let e = c
                .call(18, 0, &ApiVersionsRequest::default())
                .await
                .unwrap_err();
            assert!(matches!(e, PeerError::TooLarge { .. }), "{e:?}");
        }
    }

    #[tokio::test]
    async fn a_silent_peer_times_out() {
        let addr = crate::net::test_peers::silent_peer().await;
        let mut c = PeerClient::connect(&addr, "t", 2_000).await.unwrap();
        c.set_request_timeout_ms(100);
        let e = c
            .call(18, 0, &ApiVersionsRequest::default())
            .await
            .unwrap_err();
        assert!(matches!(e, PeerError::Timeout), "{e:?}");
    }

    #[tokio::test]
    async fn connection_refused_is_io() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        drop(listener);
        assert!(PeerClient::connect(&addr, "t", 1_000).await.is_err());
    }
}
