//! A framed response ready for the socket. Most are one buffer; a consumer's Fetch response
//! may also name regions of segment files that the connection sends from the file itself
//! (sendfile on a plaintext socket), as Kafka's `FileRecords` go to the socket with
//! `transferTo`, so fetched record bytes are not copied through user space.
//!
//! The generated encoder knows only in-memory record fields, so a zero-copy response is
//! encoded with a unique 16-byte placeholder in each records field ([`RecordsPlaceholders`]);
//! the placeholders and their length prefixes are then cut out of the encoded bytes and the
//! regions put in their place, with the frame size covering them.
use std::sync::atomic::{AtomicU64, Ordering};

use bytes::{BufMut, Bytes, BytesMut};

use crate::storage::FileRegion;

/// A framed response: `head`, with each region's bytes inserted at its position in `head`
/// (positions ascending). The size prefix at the start of `head` counts the regions.
#[derive(Debug, Clone, Default)]
pub struct Response {
    head: Bytes,
    regions: Vec<(usize, FileRegion)>,
}

impl From<Bytes> for Response {
    fn from(head: Bytes) -> Self {
        Response {
            head,
            regions: Vec::new(),
        }
    }
}

impl Response {
    /// The in-memory bytes and where each region goes in them.
    pub fn into_parts(self) -> (Bytes, Vec<(usize, FileRegion)>) {
        (self.head, self.regions)
    }

    /// Replaces the in-memory bytes by `f`'s, which must keep their length and layout (a
    /// field patched in place, such as the throttle time).
    pub fn map_head(self, f: impl FnOnce(Bytes) -> Bytes) -> Self {
        if self.regions.is_empty() {
            return Response::from(f(self.head));
        }
        let len = self.head.len();
        let head = f(self.head);
        debug_assert_eq!(head.len(), len, "a response with regions changed length");
        Response {
            head,
            regions: self.regions,
        }
    }

    /// The whole response in memory (regions read from their files): what a test decodes.
    pub fn into_bytes(self) -> std::io::Result<Bytes> {
        if self.regions.is_empty() {
            return Ok(self.head);
        }
        let total = self.head.len() + self.regions.iter().map(|(_, r)| r.len).sum::<usize>();
        let mut out = BytesMut::with_capacity(total);
        let mut at = 0;
        for (pos, region) in &self.regions {
            out.put_slice(&self.head[at..*pos]);
            out.put_slice(&region.read()?);
            at = *pos;
        }
        out.put_slice(&self.head[at..]);
        Ok(out.freeze())
    }
}

/// Per-process random bytes that start every placeholder, so none can be mistaken for
/// encoded response bytes.
fn placeholder_nonce() -> [u8; 12] {
    static NONCE: std::sync::OnceLock<[u8; 12]> = std::sync::OnceLock::new();
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let base = *NONCE.get_or_init(|| {
        use std::hash::{BuildHasher, Hasher};
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_u128(
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos()),
        );
        let a = h.finish();
        h.write_u32(std::process::id());
        let b = h.finish();
        let mut n = [0u8; 12];
        n[..8].copy_from_slice(&a.to_le_bytes());
        n[8..].copy_from_slice(&b.to_le_bytes()[..4]);
        n
    });
    // A different nonce per response, so a region's placeholder cannot match another's.
    let mut n = base;
    let c = COUNTER.fetch_add(1, Ordering::Relaxed);
    for (b, x) in n[4..].iter_mut().zip(c.to_le_bytes()) {
        *b ^= x;
    }
    n
}

const PLACEHOLDER_LEN: usize = 16;

/// The records fields of one response to be sent from files.
pub struct RecordsPlaceholders {
    nonce: [u8; 12],
    regions: Vec<FileRegion>,
}

impl Default for RecordsPlaceholders {
    fn default() -> Self {
        RecordsPlaceholders {
            nonce: placeholder_nonce(),
            regions: Vec::new(),
        }
    }
}

impl RecordsPlaceholders {
    /// The bytes to put in a records field in place of `region`'s. Fields must be encoded in
    /// the order they were added.
    pub fn add(&mut self, region: FileRegion) -> Bytes {
        let mut b = BytesMut::with_capacity(PLACEHOLDER_LEN);
        b.put_slice(&self.nonce);
        b.put_u32(self.regions.len() as u32);
        self.regions.push(region);
        b.freeze()
    }

    pub fn is_empty(&self) -> bool {
        self.regions.is_empty()
    }

    /// The region `records` stands for, if it is one of these placeholders.
    pub fn region_of(&self, records: &[u8]) -> Option<&FileRegion> {
        if records.len() != PLACEHOLDER_LEN || records[..12] != self.nonce {
            return None;
        }
        let i = u32::from_be_bytes(records[12..].try_into().ok()?) as usize;
        self.regions.get(i)
    }

    /// The response `framed` (encoded with the placeholders, records fields in the compact
    /// form when `flexible`) with the regions in place of the placeholders. None if a
    /// placeholder is missing from `framed`, which would be a bug in the caller.
    pub fn splice(&self, framed: Bytes, flexible: bool) -> Option<Response> {
        if self.regions.is_empty() {
            return Some(Response::from(framed));
        }
        let prefix_len = if flexible { 1 } else { 4 };
        let mut head = BytesMut::with_capacity(framed.len() + self.regions.len() * 4);
        let mut regions = Vec::with_capacity(self.regions.len());
        let mut from = 0;
        for (i, region) in self.regions.iter().enumerate() {
            let mut placeholder = [0u8; PLACEHOLDER_LEN];
            placeholder[..12].copy_from_slice(&self.nonce);
            placeholder[12..].copy_from_slice(&(i as u32).to_be_bytes());
            let at = from
                + framed[from..]
                    .windows(PLACEHOLDER_LEN)
                    .position(|w| w == placeholder)?;
            let prefix_at = at.checked_sub(prefix_len).filter(|p| *p >= from)?;
            let expected: &[u8] = if flexible {
                &[PLACEHOLDER_LEN as u8 + 1]
            } else {
                &(PLACEHOLDER_LEN as i32).to_be_bytes()
            };
            if &framed[prefix_at..at] != expected {
                return None;
            }
            head.put_slice(&framed[from..prefix_at]);
            if flexible {
                put_unsigned_varint(&mut head, region.len as u64 + 1);
            } else {
                head.put_i32(region.len as i32);
            }
            regions.push((head.len(), region.clone()));
            from = at + PLACEHOLDER_LEN;
        }
        head.put_slice(&framed[from..]);
        let size = head.len() - 4 + regions.iter().map(|(_, r)| r.len).sum::<usize>();
        head[..4].copy_from_slice(&(size as i32).to_be_bytes());
        Some(Response {
            head: head.freeze(),
            regions,
        })
    }
}

fn put_unsigned_varint(buf: &mut BytesMut, mut v: u64) {
    while v >= 0x80 {
        buf.put_u8((v as u8) | 0x80);
        v >>= 7;
    }
    buf.put_u8(v as u8);
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::sync::Arc;

    fn region(content: &[u8]) -> FileRegion {
        let mut f = tempfile::tempfile().unwrap();
        f.write_all(b"xx").unwrap();
        f.write_all(content).unwrap();
        FileRegion {
            file: Arc::new(f),
            position: 2,
            len: content.len(),
            next_offset: 0,
        }
    }

    /// A frame holding two records fields around other bytes, as the encoder writes them.
    fn framed(fields: &[Bytes], flexible: bool) -> Bytes {
        crate::protocol::frame_response(|buf| {
            buf.put_slice(b"head");
            for f in fields {
                if flexible {
                    put_unsigned_varint(buf, f.len() as u64 + 1);
                } else {
                    buf.put_i32(f.len() as i32);
                }
                buf.put_slice(f);
                buf.put_slice(b"mid");
            }
        })
    }

    #[test]
    fn spliced_response_reads_as_the_copied_one() {
        let big = vec![7u8; 300];
        for flexible in [false, true] {
            let contents = [Bytes::from_static(b"records-one"), Bytes::from(big.clone())];
            let mut p = RecordsPlaceholders::default();
            let fields: Vec<Bytes> = contents.iter().map(|c| p.add(region(c))).collect();
            let spliced = p.splice(framed(&fields, flexible), flexible).unwrap();
            // A 300-byte field needs a two-byte varint: the prefix grows and the size follows.
            assert_eq!(
                spliced.into_bytes().unwrap(),
                framed(&contents, flexible),
                "flexible {flexible}"
            );
        }
    }

    #[test]
    fn a_missing_placeholder_is_refused() {
        let mut p = RecordsPlaceholders::default();
        let _ = p.add(region(b"abc"));
        assert!(p
            .splice(framed(&[Bytes::from_static(b"other")], true), true)
            .is_none());
    }
}
