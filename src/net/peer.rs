//! A Kafka-protocol client connection from this broker to another broker or to the controller
//! (Kafka's `NetworkClient` as the replica fetcher and the broker-to-controller channel use it):
//! size-prefixed frames, the request header version that the API version calls for, the
//! response header stripped and its correlation id checked.
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
//!
//! Response frames larger than the configured maximum are refused before anything is
//! allocated, like the broker's own `socket.request.max.bytes` check on requests.
use std::time::Duration;

use crate::protocol::codec::{Decode, DecodeError, Encode};
use crate::protocol::header::{
    request_header_version, response_header_version, RequestHeader, ResponseHeader,
};
use std::sync::Arc;
use std::time::Instant;

use super::sasl_client::PeerSasl;
use crate::security::tls::client::PeerTls;
use crate::security::SecuredStream;
use bytes::{BufMut, Bytes, BytesMut};
use tokio::io::{AsyncReadExt, AsyncWriteExt, BufReader};

/// How this broker connects to one listener of its peers: TLS for SSL and SASL_SSL, a SASL
/// login for SASL_PLAINTEXT and SASL_SSL; neither for PLAINTEXT (the default).
#[derive(Clone, Debug, Default)]
pub struct PeerSecurity {
    pub tls: Option<PeerTls>,
    pub sasl: Option<Arc<PeerSasl>>,
}

impl PeerSecurity {
    /// The security of `listener` as this broker's config describes it (its TLS settings and
    /// the `login` for it when it is SASL).
    pub fn for_listener(
        config: &crate::config::BrokerConfig,
        listener: &str,
        login: Option<&crate::config::sasl::PeerLogin>,
    ) -> Result<PeerSecurity, String> {
        let tls = crate::security::tls::client::for_listener(config, listener)
            .map_err(|e| e.to_string())?;
        let sasl = login
            .filter(|l| l.listener.eq_ignore_ascii_case(listener))
            .map(|l| Arc::new(PeerSasl::new(l.clone())));
        Ok(PeerSecurity { tls, sasl })
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

/// Default cap on a response frame: Fetch responses are bounded by
/// `replica.fetch.response.max.bytes` (10 MiB) plus one oversized first batch, so 100 MiB
/// (Kafka's `socket.request.max.bytes` default) leaves room.
pub const DEFAULT_MAX_RESPONSE_BYTES: usize = 100 * 1024 * 1024;

/// Why a call to a peer failed. After any error but `Decode` of a well-framed body the
/// connection is unusable and must be dropped.
#[derive(Debug)]
pub enum PeerError {
    Io(std::io::Error),
    /// The connect or the call took longer than its timeout.
    Timeout,
    /// The response header or body did not decode.
    Decode(DecodeError),
    /// The response answered another request (the stream is out of step).
    CorrelationMismatch {
        expected: i32,
        got: i32,
    },
    /// The response frame is larger than allowed (or has a negative size).
    TooLarge {
        size: i64,
        max_bytes: usize,
    },
}

impl std::fmt::Display for PeerError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PeerError::Io(e) => write!(f, "i/o: {e}"),
            PeerError::Timeout => write!(f, "timed out"),
            PeerError::Decode(e) => write!(f, "cannot decode the response: {e}"),
            PeerError::CorrelationMismatch { expected, got } => {
                write!(f, "correlation id {got}, expected {expected}")
            }
            PeerError::TooLarge { size, max_bytes } => {
                write!(
                    f,
                    "response frame of {size} bytes, at most {max_bytes} allowed"
                )
            }
        }
    }
}

impl std::error::Error for PeerError {}

impl From<std::io::Error> for PeerError {
    fn from(e: std::io::Error) -> Self {
        PeerError::Io(e)
    }
}

impl From<DecodeError> for PeerError {
    fn from(e: DecodeError) -> Self {
        PeerError::Decode(e)
    }
}

/// One connection to a peer broker.
pub struct PeerClient {
    stream: BufReader<SecuredStream>,
    /// The login to repeat before the session ends.
    sasl: Option<Arc<PeerSasl>>,
    reauthenticate_at: Option<Instant>,
    client_id: String,
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
            sasl: security.sasl.clone(),
            reauthenticate_at: reauthenticate_at(lifetime),
            client_id: client_id.to_string(),
            next_correlation_id: 0,
            request_timeout_ms: timeout_ms,
            max_response_bytes: DEFAULT_MAX_RESPONSE_BYTES,
        })
    }

    pub fn set_request_timeout_ms(&mut self, timeout_ms: u64) {
        self.request_timeout_ms = timeout_ms;
    }

    pub fn set_max_response_bytes(&mut self, max_bytes: usize) {
        self.max_response_bytes = max_bytes;
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
        let timeout = Duration::from_millis(self.request_timeout_ms);
        if self
            .reauthenticate_at
            .is_some_and(|at| Instant::now() >= at)
        {
            self.reauthenticate(timeout).await?;
        }
        let frame = encode_request(api_key, api_version, correlation_id, &self.client_id, body);
        let max_bytes = self.max_response_bytes;
        let stream = &mut self.stream;
        let exchange = async move {
            let raw = stream.get_mut();
            raw.write_all(&frame).await?;
            // A TLS stream holds written bytes until flushed.
            raw.flush().await?;
            read_frame(stream, max_bytes).await
        };
        let mut response = match tokio::time::timeout(timeout, exchange).await {
            Ok(r) => r?,
            Err(_) => return Err(PeerError::Timeout),
        };
        let header =
            ResponseHeader::decode(&mut response, response_header_version(api_key, api_version))?;
        if header.correlation_id != correlation_id {
            return Err(PeerError::CorrelationMismatch {
                expected: correlation_id,
                got: header.correlation_id,
            });
        }
        Ok(response)
    }

    /// KIP-368: a new SaslHandshake and SaslAuthenticate on this connection before the
    /// session ends (no request is in flight: one at a time). A failure drops the connection.
    async fn reauthenticate(&mut self, timeout: Duration) -> Result<(), PeerError> {
        let Some(sasl) = self.sasl.clone() else {
            self.reauthenticate_at = None;
            return Ok(());
        };
        let first_id = self.next_correlation_id;
        self.next_correlation_id = self.next_correlation_id.wrapping_add(3);
        let exchange = super::sasl_client::authenticate(
            &mut self.stream,
            sasl.login(),
            &self.client_id,
            first_id,
        );
        match tokio::time::timeout(timeout, exchange).await {
            Ok(Ok(lifetime)) => {
                self.reauthenticate_at = reauthenticate_at(lifetime);
                Ok(())
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

/// Decodes a response body that must be consumed entirely.
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

pub fn decode_body<Resp: Decode>(body: &mut Bytes, api_version: i16) -> Result<Resp, PeerError> {
    let resp = Resp::decode(body, api_version)?;
    if !body.is_empty() {
        return Err(PeerError::Decode(DecodeError::TrailingBytes(body.len())));
    }
    Ok(resp)
}

/// A size-prefixed request frame: header of the version the API version calls for, then body.
pub fn encode_request(
    api_key: i16,
    api_version: i16,
    correlation_id: i32,
    client_id: &str,
    body: &impl Encode,
) -> Bytes {
    let mut buf = BytesMut::with_capacity(256);
    buf.put_i32(0);
    RequestHeader {
        api_key,
        api_version,
        correlation_id,
        client_id: Some(client_id.to_string()),
        unknown_tagged_fields: Vec::new(),
    }
    .encode(&mut buf, request_header_version(api_key, api_version));
    body.encode(&mut buf, api_version);
    let len = (buf.len() - 4) as i32;
    buf[..4].copy_from_slice(&len.to_be_bytes());
    buf.freeze()
}

/// Reads one frame, checking its size before allocating.
async fn read_frame(
    stream: &mut BufReader<SecuredStream>,
    max_bytes: usize,
) -> Result<Bytes, PeerError> {
    let size = stream.read_i32().await?;
    if size < 0 || size as usize > max_bytes {
        return Err(PeerError::TooLarge {
            size: size as i64,
            max_bytes,
        });
    }
    let mut frame = BytesMut::zeroed(size as usize);
    stream.read_exact(&mut frame).await?;
    Ok(frame.freeze())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::messages::api_versions_request::ApiVersionsRequest;
    use crate::protocol::messages::api_versions_response::ApiVersionsResponse;
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
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        let _held = tokio::spawn(async move {
            let (s, _) = listener.accept().await.unwrap();
            tokio::time::sleep(Duration::from_secs(5)).await;
            drop(s);
        });
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
