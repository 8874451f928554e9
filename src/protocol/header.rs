//! Request and response headers (Kafka's RequestHeader v0-2, ResponseHeader v0-1).
//!
//! The client id is a classic (int16-length) nullable string in every header version, so that
//! a broker can read the header of any ApiVersions request; ApiVersions responses always use
//! response header v0 (KIP-511).
use super::codec::*;

#[derive(Debug, Clone, PartialEq, Default)]
pub struct RequestHeader {
    pub api_key: i16,
    pub api_version: i16,
    pub correlation_id: i32,
    pub client_id: Option<String>,
    pub unknown_tagged_fields: Vec<RawTaggedField>,
}

impl RequestHeader {
    /// Decodes a header of the given header version (0, 1 or 2).
    pub fn decode(buf: &mut Bytes, header_version: i16) -> Result<Self, DecodeError> {
        let mut h = RequestHeader {
            api_key: read_i16(buf)?,
            api_version: read_i16(buf)?,
            correlation_id: read_i32(buf)?,
            ..Default::default()
        };
        if header_version >= 1 {
            h.client_id = read_nullable_string(buf, false)?;
        }
        if header_version >= 2 {
            h.unknown_tagged_fields = read_tagged_fields(buf)?;
        }
        Ok(h)
    }

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

/// Writes a response header of the given version (0: correlation id; 1: plus tagged fields).
pub fn encode_response_header(buf: &mut BytesMut, correlation_id: i32, header_version: i16) {
    buf.put_i32(correlation_id);
    if header_version >= 1 {
        buf.put_u8(0);
    }
}
