//! Fuzz target: arbitrary bytes as the compressed records section of a batch. The first byte
//! picks the codec (gzip, snappy, lz4, zstd) and the second the declared record count; the
//! rest is wrapped in a batch with a correct header and CRC-32C, so that every input reaches
//! the streaming decompressor and the record walk instead of stopping at the CRC check. The
//! bounded one-shot `decompress` used by the log cleaner and fetch-side decoding runs on the
//! same bytes.
#![no_main]

use libfuzzer_sys::fuzz_target;
use strata::protocol::records::batch::{compute_crc, CRC_OFFSET, RECORD_BATCH_OVERHEAD};
use strata::protocol::records::compression::{decompress, Compression};
use strata::protocol::records::validator::{validate_produce, ValidationConfig};

fuzz_target!(|data: &[u8]| {
    if data.len() < 2 {
        return;
    }
    let codec = match data[0] % 4 {
        0 => Compression::Gzip,
        1 => Compression::Snappy,
        2 => Compression::Lz4,
        _ => Compression::Zstd,
    };
    let count = (data[1] as i32) + 1;
    let section = &data[2..];
    let _ = decompress(codec, section, 1 << 20);

    let mut batch = vec![0u8; RECORD_BATCH_OVERHEAD];
    let batch_length = (RECORD_BATCH_OVERHEAD - 12 + section.len()) as i32;
    batch[8..12].copy_from_slice(&batch_length.to_be_bytes());
    batch[12..16].copy_from_slice(&(-1i32).to_be_bytes()); // partition leader epoch
    batch[16] = 2; // magic
    batch[21..23].copy_from_slice(&(codec.id() as i16).to_be_bytes());
    batch[23..27].copy_from_slice(&(count - 1).to_be_bytes()); // last offset delta
    batch[43..51].copy_from_slice(&(-1i64).to_be_bytes()); // producer id
    batch[51..53].copy_from_slice(&(-1i16).to_be_bytes()); // producer epoch
    batch[53..57].copy_from_slice(&(-1i32).to_be_bytes()); // base sequence
    batch[57..61].copy_from_slice(&count.to_be_bytes());
    batch.extend_from_slice(section);
    let crc = compute_crc(&batch);
    batch[CRC_OFFSET..CRC_OFFSET + 4].copy_from_slice(&crc.to_be_bytes());
    let _ = validate_produce(&batch, &ValidationConfig::default());
});
