//! Wire primitives shared by the generated messages: fixed-width integers, varints, classic
//! and compact strings/bytes/arrays, UUIDs and tagged-field sections (KIP-482).
//!
//! Every length read off the wire is checked against the bytes that remain before anything is
//! allocated, so a small frame can never reserve a large buffer; every failure is a typed
//! [`DecodeError`], never a panic.

pub use bytes::{Buf, BufMut, Bytes, BytesMut};

/// Why a request or record could not be decoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DecodeError {
    /// The input ended before the value did.
    UnexpectedEof,
    /// A length below -1 (or below 0 where null is not allowed).
    InvalidLength(i64),
    /// A length larger than the bytes that remain.
    LengthOverrun { length: u64, remaining: usize },
    /// A varint longer than its type allows.
    VarintTooLong,
    /// A string that is not UTF-8.
    InvalidUtf8,
    /// A null where the version does not allow one.
    UnexpectedNull,
    /// An API key Strata does not know.
    UnknownApiKey(i16),
    /// A version outside what the message supports.
    UnsupportedVersion { api_key: i16, version: i16 },
    /// Bytes left over after a complete message.
    TrailingBytes(usize),
}

impl std::fmt::Display for DecodeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{self:?}")
    }
}

impl std::error::Error for DecodeError {}

/// A Kafka UUID (topic ids, directory ids). All zeroes is Kafka's `Uuid.ZERO_UUID`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, PartialOrd, Ord)]
pub struct Uuid(pub [u8; 16]);

impl Uuid {
    pub const ZERO: Uuid = Uuid([0; 16]);

    pub fn as_bytes(&self) -> &[u8; 16] {
        &self.0
    }

    pub fn is_zero(&self) -> bool {
        self.0 == [0; 16]
    }

    /// A random id whose base64 form does not start with '-' (Kafka avoids those too, since
    /// they read as command-line flags).
    pub fn random() -> Uuid {
        loop {
            let u = Uuid(*uuid::Uuid::new_v4().as_bytes());
            if !u.is_zero() && !u.to_string().starts_with('-') {
                return u;
            }
        }
    }

    /// Parses Kafka's URL-safe, unpadded base64 form.
    pub fn parse(s: &str) -> Option<Uuid> {
        let mut out = [0u8; 16];
        let mut acc: u32 = 0;
        let mut bits = 0;
        let mut n = 0;
        if s.len() != 22 {
            return None;
        }
        for c in s.bytes() {
            let v = match c {
                b'A'..=b'Z' => c - b'A',
                b'a'..=b'z' => c - b'a' + 26,
                b'0'..=b'9' => c - b'0' + 52,
                b'-' => 62,
                b'_' => 63,
                _ => return None,
            } as u32;
            acc = (acc << 6) | v;
            bits += 6;
            if bits >= 8 {
                bits -= 8;
                if n < 16 {
                    out[n] = (acc >> bits) as u8;
                }
                n += 1;
            }
        }
        Some(Uuid(out))
    }
}

impl std::fmt::Display for Uuid {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        const ALPHABET: &[u8; 64] =
            b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
        let mut s = String::with_capacity(22);
        let mut acc: u32 = 0;
        let mut bits = 0;
        for b in self.0 {
            acc = (acc << 8) | b as u32;
            bits += 8;
            while bits >= 6 {
                bits -= 6;
                s.push(ALPHABET[((acc >> bits) & 63) as usize] as char);
            }
        }
        if bits > 0 {
            s.push(ALPHABET[((acc << (6 - bits)) & 63) as usize] as char);
        }
        f.write_str(&s)
    }
}

/// A tagged field whose tag this version of the schema does not define.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawTaggedField {
    pub tag: u32,
    pub data: Bytes,
}

pub trait Decode: Sized {
    fn decode(buf: &mut Bytes, version: i16) -> Result<Self, DecodeError>;
}

pub trait Encode {
    fn encode(&self, buf: &mut BytesMut, version: i16);

    /// Encodes into a fresh buffer.
    fn to_bytes(&self, version: i16) -> Bytes {
        let mut b = BytesMut::with_capacity(64);
        self.encode(&mut b, version);
        b.freeze()
    }
}

#[inline]
fn need(buf: &Bytes, n: usize) -> Result<(), DecodeError> {
    if buf.remaining() < n {
        Err(DecodeError::UnexpectedEof)
    } else {
        Ok(())
    }
}

macro_rules! fixed {
    ($name:ident, $t:ty, $get:ident, $n:expr) => {
        #[inline]
        pub fn $name(buf: &mut Bytes) -> Result<$t, DecodeError> {
            need(buf, $n)?;
            Ok(buf.$get())
        }
    };
}
fixed!(read_i8, i8, get_i8, 1);
fixed!(read_i16, i16, get_i16, 2);
fixed!(read_u16, u16, get_u16, 2);
fixed!(read_i32, i32, get_i32, 4);
fixed!(read_u32, u32, get_u32, 4);
fixed!(read_i64, i64, get_i64, 8);
fixed!(read_f64, f64, get_f64, 8);

pub fn read_bool(buf: &mut Bytes) -> Result<bool, DecodeError> {
    Ok(read_i8(buf)? != 0)
}

pub fn write_bool(buf: &mut BytesMut, v: bool) {
    buf.put_i8(v as i8);
}

pub fn read_uuid(buf: &mut Bytes) -> Result<Uuid, DecodeError> {
    need(buf, 16)?;
    let mut u = [0u8; 16];
    buf.copy_to_slice(&mut u);
    Ok(Uuid(u))
}

pub fn read_uvarint(buf: &mut Bytes) -> Result<u32, DecodeError> {
    let mut value: u32 = 0;
    for i in 0..5 {
        let b = read_i8(buf)? as u8;
        if i == 4 && b > 0x0f {
            return Err(DecodeError::VarintTooLong);
        }
        value |= ((b & 0x7f) as u32) << (7 * i);
        if b & 0x80 == 0 {
            return Ok(value);
        }
    }
    Err(DecodeError::VarintTooLong)
}

pub fn read_uvarlong(buf: &mut Bytes) -> Result<u64, DecodeError> {
    let mut value: u64 = 0;
    for i in 0..10 {
        let b = read_i8(buf)? as u8;
        if i == 9 && b > 0x01 {
            return Err(DecodeError::VarintTooLong);
        }
        value |= ((b & 0x7f) as u64) << (7 * i);
        if b & 0x80 == 0 {
            return Ok(value);
        }
    }
    Err(DecodeError::VarintTooLong)
}

/// Zig-zag signed varint (record fields).
pub fn read_varint(buf: &mut Bytes) -> Result<i32, DecodeError> {
    let v = read_uvarint(buf)?;
    Ok(((v >> 1) as i32) ^ -((v & 1) as i32))
}

pub fn read_varlong(buf: &mut Bytes) -> Result<i64, DecodeError> {
    let v = read_uvarlong(buf)?;
    Ok(((v >> 1) as i64) ^ -((v & 1) as i64))
}

pub fn write_uvarint(buf: &mut BytesMut, mut v: u32) {
    while v >= 0x80 {
        buf.put_u8((v as u8) | 0x80);
        v >>= 7;
    }
    buf.put_u8(v as u8);
}

pub fn write_uvarlong(buf: &mut BytesMut, mut v: u64) {
    while v >= 0x80 {
        buf.put_u8((v as u8) | 0x80);
        v >>= 7;
    }
    buf.put_u8(v as u8);
}

pub fn write_varint(buf: &mut BytesMut, v: i32) {
    write_uvarint(buf, ((v << 1) ^ (v >> 31)) as u32);
}

pub fn write_varlong(buf: &mut BytesMut, v: i64) {
    write_uvarlong(buf, ((v << 1) ^ (v >> 63)) as u64);
}

pub fn uvarint_size(mut v: u32) -> usize {
    let mut n = 1;
    while v >= 0x80 {
        v >>= 7;
        n += 1;
    }
    n
}

pub fn varint_size(v: i32) -> usize {
    uvarint_size(((v << 1) ^ (v >> 31)) as u32)
}

pub fn varlong_size(v: i64) -> usize {
    let mut u = ((v << 1) ^ (v >> 63)) as u64;
    let mut n = 1;
    while u >= 0x80 {
        u >>= 7;
        n += 1;
    }
    n
}

/// Splits off `n` bytes after checking that they are there.
pub fn take_bytes(buf: &mut Bytes, n: usize) -> Result<Bytes, DecodeError> {
    if n > buf.remaining() {
        return Err(DecodeError::LengthOverrun {
            length: n as u64,
            remaining: buf.remaining(),
        });
    }
    Ok(buf.split_to(n))
}

/// Reads a length prefix: -1 is null (`None`), anything below is an error.
fn read_len(
    buf: &mut Bytes,
    flexible: bool,
    classic_i32: bool,
) -> Result<Option<usize>, DecodeError> {
    let len: i64 = if flexible {
        read_uvarint(buf)? as i64 - 1
    } else if classic_i32 {
        read_i32(buf)? as i64
    } else {
        read_i16(buf)? as i64
    };
    if len < -1 {
        return Err(DecodeError::InvalidLength(len));
    }
    if len == -1 {
        return Ok(None);
    }
    if len as u64 > buf.remaining() as u64 {
        return Err(DecodeError::LengthOverrun {
            length: len as u64,
            remaining: buf.remaining(),
        });
    }
    Ok(Some(len as usize))
}

pub fn read_nullable_string(
    buf: &mut Bytes,
    flexible: bool,
) -> Result<Option<String>, DecodeError> {
    match read_len(buf, flexible, false)? {
        None => Ok(None),
        Some(n) => {
            let b = buf.split_to(n);
            String::from_utf8(b.to_vec())
                .map(Some)
                .map_err(|_| DecodeError::InvalidUtf8)
        }
    }
}

pub fn read_string(buf: &mut Bytes, flexible: bool) -> Result<String, DecodeError> {
    read_nullable_string(buf, flexible)?.ok_or(DecodeError::UnexpectedNull)
}

pub fn read_nullable_bytes(buf: &mut Bytes, flexible: bool) -> Result<Option<Bytes>, DecodeError> {
    Ok(read_len(buf, flexible, true)?.map(|n| buf.split_to(n)))
}

pub fn read_bytes(buf: &mut Bytes, flexible: bool) -> Result<Bytes, DecodeError> {
    read_nullable_bytes(buf, flexible)?.ok_or(DecodeError::UnexpectedNull)
}

pub fn read_nullable_array<T>(
    buf: &mut Bytes,
    flexible: bool,
    mut elem: impl FnMut(&mut Bytes) -> Result<T, DecodeError>,
) -> Result<Option<Vec<T>>, DecodeError> {
    let Some(n) = read_len(buf, flexible, true)? else {
        return Ok(None);
    };
    // `read_len` bounded n by the remaining bytes; every element takes at least one byte except
    // in degenerate schemas, so this reservation is at most the frame size.
    let mut v = Vec::with_capacity(n.min(1024));
    for _ in 0..n {
        v.push(elem(buf)?);
    }
    Ok(Some(v))
}

pub fn read_array<T>(
    buf: &mut Bytes,
    flexible: bool,
    elem: impl FnMut(&mut Bytes) -> Result<T, DecodeError>,
) -> Result<Vec<T>, DecodeError> {
    read_nullable_array(buf, flexible, elem)?.ok_or(DecodeError::UnexpectedNull)
}

pub fn read_nullable_struct<T: Decode>(
    buf: &mut Bytes,
    version: i16,
) -> Result<Option<T>, DecodeError> {
    if read_i8(buf)? < 0 {
        Ok(None)
    } else {
        Ok(Some(T::decode(buf, version)?))
    }
}

fn write_len(buf: &mut BytesMut, len: i64, flexible: bool, classic_i32: bool) {
    if flexible {
        write_uvarint(buf, (len + 1) as u32);
    } else if classic_i32 {
        buf.put_i32(len as i32);
    } else {
        buf.put_i16(len as i16);
    }
}

pub fn write_nullable_string(buf: &mut BytesMut, s: Option<&str>, flexible: bool) {
    match s {
        None => write_len(buf, -1, flexible, false),
        Some(s) => {
            write_len(buf, s.len() as i64, flexible, false);
            buf.put_slice(s.as_bytes());
        }
    }
}

pub fn write_string(buf: &mut BytesMut, s: &str, flexible: bool) {
    write_nullable_string(buf, Some(s), flexible)
}

pub fn write_nullable_bytes(buf: &mut BytesMut, b: Option<&[u8]>, flexible: bool) {
    match b {
        None => write_len(buf, -1, flexible, true),
        Some(b) => {
            write_len(buf, b.len() as i64, flexible, true);
            buf.put_slice(b);
        }
    }
}

pub fn write_bytes(buf: &mut BytesMut, b: &[u8], flexible: bool) {
    write_nullable_bytes(buf, Some(b), flexible)
}

pub fn write_array_len(buf: &mut BytesMut, len: i32, flexible: bool) {
    write_len(buf, len as i64, flexible, true)
}

/// Writes a tagged-field section: known fields and preserved unknown ones, in tag order.
pub fn write_tagged_fields(
    buf: &mut BytesMut,
    mut known: Vec<(u32, BytesMut)>,
    unknown: &[RawTaggedField],
) {
    if known.is_empty() && unknown.is_empty() {
        buf.put_u8(0);
        return;
    }
    let mut all: Vec<(u32, &[u8])> = Vec::with_capacity(known.len() + unknown.len());
    known.sort_by_key(|(t, _)| *t);
    for (t, b) in &known {
        all.push((*t, &b[..]));
    }
    for u in unknown {
        all.push((u.tag, &u.data[..]));
    }
    all.sort_by_key(|(t, _)| *t);
    write_uvarint(buf, all.len() as u32);
    for (t, d) in all {
        write_uvarint(buf, t);
        write_uvarint(buf, d.len() as u32);
        buf.put_slice(d);
    }
}

/// Skips a tagged-field section (used by the hand-written headers).
pub fn read_tagged_fields(buf: &mut Bytes) -> Result<Vec<RawTaggedField>, DecodeError> {
    let n = read_uvarint(buf)?;
    let mut out = Vec::new();
    for _ in 0..n {
        let tag = read_uvarint(buf)?;
        let size = read_uvarint(buf)? as usize;
        let data = take_bytes(buf, size)?;
        out.push(RawTaggedField { tag, data });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uuid_base64_round_trip() {
        for _ in 0..100 {
            let u = Uuid::random();
            assert_eq!(Uuid::parse(&u.to_string()), Some(u));
        }
        assert_eq!(Uuid::ZERO.to_string(), "AAAAAAAAAAAAAAAAAAAAAA");
    }

    #[test]
    fn varints_round_trip() {
        for v in [
            0i64,
            1,
            -1,
            63,
            -64,
            64,
            i32::MAX as i64,
            i32::MIN as i64,
            i64::MAX,
            i64::MIN,
        ] {
            let mut b = BytesMut::new();
            write_varlong(&mut b, v);
            assert_eq!(b.len(), varlong_size(v));
            assert_eq!(read_varlong(&mut b.freeze()).unwrap(), v);
        }
    }

    #[test]
    fn huge_array_length_in_small_buffer_is_refused() {
        let mut b = Bytes::from_static(&[0x7f, 0xff, 0xff, 0xff, 0, 0]);
        let r = read_array(&mut b, false, |b| read_i8(b));
        assert!(matches!(r, Err(DecodeError::LengthOverrun { .. })));
    }

    #[test]
    fn overlong_varint_is_refused() {
        let mut b = Bytes::from_static(&[0xff, 0xff, 0xff, 0xff, 0xff, 0x01]);
        assert_eq!(read_uvarint(&mut b), Err(DecodeError::VarintTooLong));
    }
}
