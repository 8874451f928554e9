//! The client side of Kafka's framing, the one copy every outbound connection uses (the peer
//! client, its SASL login and the Raft transport): a request is a 4-byte big-endian size, the
//! request header of the version its API version calls for, then the body; a response is a
//! size, the response header (whose correlation id must answer the request), then the body.
//!
//! A response frame's size is checked against a maximum before anything is allocated, like the
//! broker's own `socket.request.max.bytes` check on requests; a negative size is refused too.
use bytes::{BufMut, Bytes, BytesMut};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

use crate::protocol::codec::{Decode, DecodeError, Encode};
use crate::protocol::header::{
    request_header_version, response_header_version, RequestHeader, ResponseHeader,
};

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

/// For callers whose errors are i/o errors (the Raft transport): a timeout stays `TimedOut`,
/// a stream out of step is `InvalidData`.
impl From<PeerError> for std::io::Error {
    fn from(e: PeerError) -> Self {
        match e {
            PeerError::Io(e) => e,
            PeerError::Timeout => std::io::Error::new(std::io::ErrorKind::TimedOut, "timed out"),
            other => std::io::Error::new(std::io::ErrorKind::InvalidData, other.to_string()),
        }
    }
}

/// A body that is already encoded (the Raft transport's opaque payload).
pub struct RawBody<'a>(pub &'a [u8]);

impl Encode for RawBody<'_> {
    fn encode(&self, buf: &mut BytesMut, _version: i16) {
        buf.put_slice(self.0);
    }
}

/// A size-prefixed request frame: header of the version the API version calls for, then body.
pub fn encode_request(
    api_key: i16,
    api_version: i16,
    correlation_id: i32,
    client_id: &str,
    body: &impl Encode,
) -> Bytes {
    encode_request_as(api_key, api_version, correlation_id, Some(client_id), body)
}

/// As [`encode_request`] with a client id that may be null (Raft frames carry none).
pub fn encode_request_as(
    api_key: i16,
    api_version: i16,
    correlation_id: i32,
    client_id: Option<&str>,
    body: &impl Encode,
) -> Bytes {
    let mut buf = BytesMut::with_capacity(256);
    buf.put_i32(0);
    RequestHeader {
        api_key,
        api_version,
        correlation_id,
        client_id: client_id.map(str::to_string),
        unknown_tagged_fields: Vec::new(),
    }
    .encode(&mut buf, request_header_version(api_key, api_version));
    body.encode(&mut buf, api_version);
    let len = (buf.len() - 4) as i32;
    buf[..4].copy_from_slice(&len.to_be_bytes());
    buf.freeze()
}

/// Writes one request `frame` (from [`encode_request`]) and reads its response: the body with
/// the response header stripped, once the header's correlation id is `correlation_id`. No
/// timeout here: the caller bounds the whole exchange.
pub async fn exchange<S: AsyncRead + AsyncWrite + Unpin>(
    stream: &mut S,
    frame: &[u8],
    api_key: i16,
    api_version: i16,
    correlation_id: i32,
    max_response_bytes: usize,
) -> Result<Bytes, PeerError> {
    stream.write_all(frame).await?;
    // A TLS stream holds written bytes until flushed.
    stream.flush().await?;
    let mut response = read_frame(stream, max_response_bytes).await?;
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

/// Reads one frame, checking its size before allocating.
async fn read_frame<S: AsyncRead + Unpin>(
    stream: &mut S,
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

/// Decodes a response body that must be consumed entirely.
pub fn decode_body<Resp: Decode>(body: &mut Bytes, api_version: i16) -> Result<Resp, PeerError> {
    let resp = Resp::decode(body, api_version)?;
    if !body.is_empty() {
        return Err(PeerError::Decode(DecodeError::TrailingBytes(body.len())));
    }
    Ok(resp)
}
