//! A compressed batch that inflates to 200 MB is accepted, as Kafka accepts it
//! (`max.message.bytes` applies to the compressed size), and validating it stays within a few
//! megabytes of memory: the records are walked through a streaming decompressor, never
//! materialised. This binary counts its own heap with a global allocator, so it holds only
//! this test.

use std::alloc::{GlobalAlloc, Layout, System};
use std::io::Write;
use std::sync::atomic::{AtomicUsize, Ordering};

use strata::protocol::records::batch::{
    compute_crc, BATCH_LENGTH_OFFSET, CRC_OFFSET, RECORD_BATCH_OVERHEAD,
};
use strata::protocol::records::compression::Compression;
use strata::protocol::records::validator::{validate_produce, ValidationConfig};
use strata::protocol::records::RecordBatchBuilder;

struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = System.alloc(layout);
        if !p.is_null() {
            let now = LIVE.fetch_add(layout.size(), Ordering::Relaxed) + layout.size();
            PEAK.fetch_max(now, Ordering::Relaxed);
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        System.dealloc(ptr, layout);
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

const VALUE_BYTES: usize = 200 << 20;

/// The v2 varint of `v` (zig-zag).
fn varint(out: &mut Vec<u8>, v: i64) {
    let mut z = ((v << 1) ^ (v >> 63)) as u64;
    loop {
        let b = (z & 0x7f) as u8;
        z >>= 7;
        if z == 0 {
            out.push(b);
            return;
        }
        out.push(b | 0x80);
    }
}

/// One record whose value is 200 MB of zeros, written straight into `codec`'s encoder so that
/// building it does not hold 200 MB either.
fn bomb_section(codec: Compression) -> Vec<u8> {
    let mut prefix = Vec::new();
    let mut body_head = vec![0u8]; // attributes
    varint(&mut body_head, 0); // timestamp delta
    varint(&mut body_head, 0); // offset delta
    varint(&mut body_head, 1); // key length
    body_head.push(b'k');
    varint(&mut body_head, VALUE_BYTES as i64); // value length
    let body_len = body_head.len() + VALUE_BYTES + 1; // + header count
    varint(&mut prefix, body_len as i64);
    prefix.extend_from_slice(&body_head);
    let chunk = vec![0u8; 1 << 20];
    let feed = |w: &mut dyn Write| {
        w.write_all(&prefix).unwrap();
        for _ in 0..VALUE_BYTES / chunk.len() {
            w.write_all(&chunk).unwrap();
        }
        w.write_all(&[0]).unwrap(); // no headers
    };
    match codec {
        Compression::Gzip => {
            let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
            feed(&mut e);
            e.finish().unwrap()
        }
        Compression::Zstd => {
            let mut e = zstd::stream::write::Encoder::new(Vec::new(), 19).unwrap();
            feed(&mut e);
            e.finish().unwrap()
        }
        Compression::Lz4 => {
            let mut e = lz4_flex::frame::FrameEncoder::new(Vec::new());
            feed(&mut e);
            e.finish().unwrap()
        }
        other => panic!("{other:?} not used here"),
    }
}

/// A batch holding `section` as its (compressed) records, one record, lengths and CRC right.
fn batch_of(codec: Compression, section: &[u8]) -> Vec<u8> {
    let mut b = RecordBatchBuilder::new(0);
    b.append(0, Some(bytes::Bytes::from_static(b"k")), None, vec![]);
    let mut out = b.build()[..RECORD_BATCH_OVERHEAD].to_vec();
    out[21..23].copy_from_slice(&(codec.id() as i16).to_be_bytes());
    out.extend_from_slice(section);
    let len = (out.len() - 12) as i32;
    out[BATCH_LENGTH_OFFSET..BATCH_LENGTH_OFFSET + 4].copy_from_slice(&len.to_be_bytes());
    let crc = compute_crc(&out);
    out[CRC_OFFSET..CRC_OFFSET + 4].copy_from_slice(&crc.to_be_bytes());
    out
}

#[test]
fn a_200_mb_inflation_bomb_is_validated_in_bounded_memory() {
    for codec in [Compression::Gzip, Compression::Zstd, Compression::Lz4] {
        let batch = batch_of(codec, &bomb_section(codec));
        assert!(
            batch.len() < 1_048_588,
            "{codec:?}: {} bytes compressed, under max.message.bytes",
            batch.len()
        );
        let before = LIVE.load(Ordering::Relaxed);
        PEAK.store(before, Ordering::Relaxed);
        let v = validate_produce(&batch, &ValidationConfig::default())
            .unwrap_or_else(|e| panic!("{codec:?}: accepted as Kafka accepts it: {e}"));
        assert_eq!(v[0].header.records_count, 1);
        let peak = PEAK.load(Ordering::Relaxed) - before;
        assert!(
            peak < 8 << 20,
            "{codec:?}: validation peaked at {peak} bytes of heap"
        );
    }
}
