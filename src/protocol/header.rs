//! Request and response headers (Kafka's `RequestHeader` / `ResponseHeader`), hand-written
//! because their version is not sent on the wire: it follows from the API key and the API
//! version of the body (`request_header_version`, `response_header_version`), as in Kafka's
//! `ApiKeys.requestHeaderVersion` / `responseHeaderVersion`.
//!
//! Depends only on the codec primitives and the generated flexibility lookups.

use crate::protocol::codec::*;
use crate::protocol::messages::{is_flexible_request, is_flexible_response};

/// API key of ControlledShutdown, whose v0 predates the client id (request header v0).
const CONTROLLED_SHUTDOWN: i16 = 7;
/// API key of ApiVersions, whose responses always use header v0 so that a client that sent a
/// version the broker does not know can still read the error and the supported ranges.
const API_VERSIONS: i16 = 18;

/// Header version of a request: 2 for flexible API versions, 1 otherwise, 0 only for
/// ControlledShutdown v0. Unknown API keys get 1, the classic header every client writes.
pub fn request_header_version(api_key: i16, api_version: i16) -> i16 {
    if api_key == CONTROLLED_SHUTDOWN && api_version == 0 {
        return 0;
    }
    match is_flexible_request(api_key, api_version) {
        Some(true) => 2,
        _ => 1,
    }
}

/// Header version of a response: 1 for flexible API versions, 0 otherwise, and always 0 for
/// ApiVersions (KIP-511).
pub fn response_header_version(api_key: i16, api_version: i16) -> i16 {
    if api_key == API_VERSIONS {
        return 0;
    }
    match is_flexible_response(api_key, api_version) {
        Some(true) => 1,
        _ => 0,
    }
}

/// The header in front of every request body.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RequestHeader {
    pub api_key: i16,
    pub api_version: i16,
    pub correlation_id: i32,
    /// Absent in header v0; null is allowed.
    pub client_id: Option<String>,
    /// Header v2 tagged fields, none of which Strata interprets; kept for round-trips.
    pub unknown_tagged_fields: Vec<RawTaggedField>,
}

impl RequestHeader {
    /// Decodes a header of the given header version (see [`request_header_version`]).
    pub fn decode(buf: &mut Bytes, header_version: i16) -> Result<Self, DecodeError> {
        let mut h = RequestHeader {
            api_key: read_i16(buf)?,
            api_version: read_i16(buf)?,
            correlation_id: read_i32(buf)?,
            ..Default::default()
        };
        if header_version >= 1 {
            // Always the classic int16-length form, even in flexible header v2: brokers must be
            // able to read the client id before they know whether the API version is flexible.
            h.client_id = read_nullable_string(buf, false)?;
        }
        if header_version >= 2 {
            h.unknown_tagged_fields = read_tagged_fields(buf)?;
        }
        Ok(h)
    }

    /// Reads the API key and version at the front of `buf` without consuming them, derives the
    /// header version and decodes the header. Returns the header and the header version.
    pub fn decode_detect(buf: &mut Bytes) -> Result<(Self, i16), DecodeError> {
        if buf.len() < 4 {
            return Err(DecodeError::UnexpectedEof);
        }
        let api_key = i16::from_be_bytes([buf[0], buf[1]]);
        let api_version = i16::from_be_bytes([buf[2], buf[3]]);
        let header_version = request_header_version(api_key, api_version);
        Ok((Self::decode(buf, header_version)?, header_version))
    }

    /// Encodes the header (clients, follower fetchers and tests).
    pub fn encode(&self, buf: &mut BytesMut, header_version: i16) {
        buf.put_i16(self.api_key);
        buf.put_i16(self.api_version);
        buf.put_i32(self.correlation_id);
        if header_version >= 1 {
            write_nullable_string(buf, self.client_id.as_deref(), false);
        }
        if header_version >= 2 {
            write_tagged_fields(buf, Vec::new(), &self.unknown_tagged_fields);
        }
    }
}

/// The header in front of every response body.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ResponseHeader {
    pub correlation_id: i32,
    /// Header v1 tagged fields; Strata writes none of its own.
    pub unknown_tagged_fields: Vec<RawTaggedField>,
}

impl ResponseHeader {
    pub fn new(correlation_id: i32) -> Self {
        ResponseHeader {
            correlation_id,
            unknown_tagged_fields: Vec::new(),
        }
    }

    /// Encodes the header of the given header version (see [`response_header_version`]).
    pub fn encode(&self, buf: &mut BytesMut, header_version: i16) {
        buf.put_i32(self.correlation_id);
        if header_version >= 1 {
            write_tagged_fields(buf, Vec::new(), &self.unknown_tagged_fields);
        }
    }

    /// Decodes a header (follower fetchers and controller RPCs read responses too).
    pub fn decode(buf: &mut Bytes, header_version: i16) -> Result<Self, DecodeError> {
        let mut h = ResponseHeader::new(read_i32(buf)?);
        if header_version >= 1 {
            h.unknown_tagged_fields = read_tagged_fields(buf)?;
        }
        Ok(h)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_versions_follow_flexibility() {
        assert_eq!(request_header_version(0, 8), 1); // Produce v8 classic
        assert_eq!(request_header_version(0, 9), 2); // Produce v9 flexible
        assert_eq!(request_header_version(7, 0), 0); // ControlledShutdown v0
        assert_eq!(request_header_version(7, 1), 1);
        assert_eq!(request_header_version(18, 3), 2); // ApiVersions v3 request is flexible
        assert_eq!(response_header_version(18, 3), 0); // ... but its response header is not
        assert_eq!(response_header_version(3, 9), 1); // Metadata v9
        assert_eq!(response_header_version(3, 8), 0);
        assert_eq!(request_header_version(i16::MAX, 0), 1); // unknown API: classic header
    }

    #[test]
    fn request_header_v2_keeps_classic_client_id_and_unknown_tags() {
        let h = RequestHeader {
            api_key: 3,
            api_version: 12,
            correlation_id: 42,
            client_id: Some("rdkafka".into()),
            unknown_tagged_fields: vec![RawTaggedField {
                tag: 7,
                data: Bytes::from_static(b"x"),
            }],
        };
        let mut b = BytesMut::new();
        h.encode(&mut b, 2);
        // int16 length 7, not a compact varint.
        assert_eq!(&b[8..10], &[0, 7]);
        let mut bytes = b.freeze();
        let (d, v) = RequestHeader::decode_detect(&mut bytes).unwrap();
        assert_eq!((d, v), (h, 2));
        assert!(bytes.is_empty());
    }

    #[test]
    fn null_client_id_and_v0() {
        for hv in 0..=2 {
            let h = RequestHeader {
                api_key: 7,
                api_version: 0,
                correlation_id: -1,
                ..Default::default()
            };
            let mut b = BytesMut::new();
            h.encode(&mut b, hv);
            let mut bytes = b.freeze();
            assert_eq!(RequestHeader::decode(&mut bytes, hv).unwrap(), h);
            assert!(bytes.is_empty());
        }
    }

    #[test]
    fn response_headers() {
        let mut b = BytesMut::new();
        ResponseHeader::new(5).encode(&mut b, 0);
        assert_eq!(&b[..], &[0, 0, 0, 5]);
        b.clear();
        ResponseHeader::new(5).encode(&mut b, 1);
        assert_eq!(&b[..], &[0, 0, 0, 5, 0]);
        assert_eq!(
            ResponseHeader::decode(&mut b.freeze(), 1).unwrap(),
            ResponseHeader::new(5)
        );
    }

    #[test]
    fn truncated_headers_are_errors() {
        let full = {
            let mut b = BytesMut::new();
            RequestHeader {
                api_key: 1,
                api_version: 12,
                client_id: Some("c".into()),
                ..Default::default()
            }
            .encode(&mut b, 2);
            b.freeze()
        };
        for n in 0..full.len() {
            assert!(
                RequestHeader::decode_detect(&mut full.slice(..n)).is_err(),
                "prefix {n}"
            );
        }
    }
}
