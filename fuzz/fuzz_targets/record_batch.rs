//! Fuzz target: a produce payload of record batches as a client sends it, through the produce
//! path's validator (header, CRC-32C, every record, compressed sections of every codec streamed
//! through their decompressors) under a plain and a compacted, time-bounded topic; then, for
//! what is accepted, the rebuild that a topic `compression.type` applies. Everything must
//! return `Ok` or `Err` without panicking and without unbounded allocation.
#![no_main]

use bytes::Bytes;
use libfuzzer_sys::fuzz_target;
use strata::protocol::records::compression::Compression;
use strata::protocol::records::recompress::apply_topic_compression;
use strata::protocol::records::validator::{validate_produce, ValidationConfig};

fuzz_target!(|data: &[u8]| {
    let plain = ValidationConfig::default();
    let strict = ValidationConfig {
        compacted: true,
        timestamp_before_max_ms: 1_000,
        timestamp_after_max_ms: 1_000,
        now_ms: 1_700_000_000_000,
        topic_partition: "fuzz-0".into(),
        ..ValidationConfig::default()
    };
    let _ = validate_produce(data, &strict);
    if let Ok(batches) = validate_produce(data, &plain) {
        // Only small inputs are rebuilt: a rebuild materialises the records by design.
        if data.len() <= 64 << 10 {
            let _ = apply_topic_compression(
                Bytes::copy_from_slice(data),
                batches,
                Some(Compression::Zstd),
                plain.max_message_bytes,
            );
        }
    }
});
