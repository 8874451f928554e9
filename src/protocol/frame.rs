//! Response framing: the 4-byte big-endian size prefix Kafka puts before every response,
//! written after the body so the size is known without a second buffer.
use bytes::{BufMut, Bytes, BytesMut};

/// Frames a response: size prefix, header, body.
pub fn frame_response(body: impl FnOnce(&mut BytesMut)) -> Bytes {
    let mut buf = BytesMut::with_capacity(256);
    buf.put_i32(0);
    body(&mut buf);
    let len = (buf.len() - 4) as i32;
    buf[..4].copy_from_slice(&len.to_be_bytes());
    buf.freeze()
}
