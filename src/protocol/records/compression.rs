//! Compression of a record batch's records section: the codec ids of the batch attributes
//! (bits 0-2) and bounded decompression/compression in the framings Kafka's clients write
//! (Kafka's `CompressionType`, `GzipCompression`, `SnappyCompression`, `Lz4Compression`,
//! `ZstdCompression`):
//! - gzip: a gzip stream (concatenated members accepted, as `GZIPInputStream` does);
//! - snappy: snappy-java's xerial framing (`\x82SNAPPY\0`, two version ints, then
//!   `[i32 length, raw block]*`), plus raw snappy blocks without that header, which some
//!   non-Java clients send and librdkafka decodes;
//! - lz4: the LZ4 frame format with a correct header checksum (Kafka >= 0.10);
//! - zstd: zstd frames.
//!
//! Every decompression is bounded by `max_output_bytes`, so a small "bomb" cannot make the
//! broker allocate more than that.

use std::io::{Read, Write};

use super::error::RecordError;

/// The compression codec of a record batch (attribute bits 0-2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[repr(u8)]
pub enum Compression {
    #[default]
    None = 0,
    Gzip = 1,
    Snappy = 2,
    Lz4 = 3,
    Zstd = 4,
}

/// The bits of the batch attributes that hold the codec id.
pub const COMPRESSION_CODEC_MASK: i16 = 0x07;

/// snappy-java's stream header magic.
const XERIAL_MAGIC: [u8; 8] = [0x82, b'S', b'N', b'A', b'P', b'P', b'Y', 0];
/// Magic (8) + version (i32) + compatible version (i32).
const XERIAL_HEADER_BYTES: usize = 16;
/// snappy-java's `SnappyOutputStream` default block size, which Kafka's producer uses.
const XERIAL_BLOCK_BYTES: usize = 32 * 1024;
/// zstd level Kafka uses by default (`compression.zstd.level`).
const ZSTD_DEFAULT_LEVEL: i32 = 3;
/// The largest zstd window (log2 bytes) any decoder accepts (zstd's own default limit).
const ZSTD_WINDOW_LOG_LIMIT: u32 = 27;
/// The smallest window limit we ever set: 8 MiB covers what zstd-jni's streaming encoder
/// (Kafka's Java producer, size not known in advance) writes at levels up to 19, so small
/// `max_output_bytes` never reject ordinary frames. Only "ultra" levels 20-22 need more.
const ZSTD_WINDOW_LOG_FLOOR: u32 = 23;

impl Compression {
    /// The codec from its id (0-4); 5-7 are not defined by any Kafka version.
    pub fn from_id(id: u8) -> Result<Compression, RecordError> {
        match id {
            0 => Ok(Compression::None),
            1 => Ok(Compression::Gzip),
            2 => Ok(Compression::Snappy),
            3 => Ok(Compression::Lz4),
            4 => Ok(Compression::Zstd),
            other => Err(RecordError::UnsupportedCompression(other)),
        }
    }

    /// The codec named by the batch attributes.
    pub fn from_attributes(attributes: i16) -> Result<Compression, RecordError> {
        Compression::from_id((attributes & COMPRESSION_CODEC_MASK) as u8)
    }

    /// The codec id as stored in the attributes.
    pub fn id(self) -> u8 {
        self as u8
    }

    /// Kafka's name for the codec (`compression.type` values).
    pub fn name(self) -> &'static str {
        match self {
            Compression::None => "none",
            Compression::Gzip => "gzip",
            Compression::Snappy => "snappy",
            Compression::Lz4 => "lz4",
            Compression::Zstd => "zstd",
        }
    }

    /// The codec from Kafka's name for it (case-sensitive, as Kafka).
    pub fn from_name(name: &str) -> Option<Compression> {
        match name {
            "none" => Some(Compression::None),
            "gzip" => Some(Compression::Gzip),
            "snappy" => Some(Compression::Snappy),
            "lz4" => Some(Compression::Lz4),
            "zstd" => Some(Compression::Zstd),
            _ => None,
        }
    }
}

/// Decompresses `input` with `codec`, failing with [`RecordError::DecompressedTooLarge`] as
/// soon as the output would exceed `max_output_bytes`.
pub fn decompress(
    codec: Compression,
    input: &[u8],
    max_output_bytes: usize,
) -> Result<Vec<u8>, RecordError> {
    match codec {
        Compression::None => {
            if input.len() > max_output_bytes {
                return Err(RecordError::DecompressedTooLarge {
                    max_bytes: max_output_bytes,
                });
            }
            Ok(input.to_vec())
        }
        Compression::Gzip => read_bounded(
            flate2::read::MultiGzDecoder::new(input),
            max_output_bytes,
            "gzip",
        ),
        Compression::Snappy => decompress_snappy(input, max_output_bytes),
        Compression::Lz4 => read_bounded(
            lz4_flex::frame::FrameDecoder::new(input),
            max_output_bytes,
            "lz4",
        ),
        Compression::Zstd => decompress_zstd(input, max_output_bytes),
    }
}

/// Compresses `input` with `codec` in the framing Kafka's Java producer writes.
pub fn compress(codec: Compression, input: &[u8]) -> Vec<u8> {
    match codec {
        Compression::None => input.to_vec(),
        Compression::Gzip => {
            let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
            // Writing into a Vec cannot fail.
            let _ = enc.write_all(input);
            enc.finish().unwrap_or_default()
        }
        Compression::Snappy => compress_snappy_xerial(input),
        Compression::Lz4 => {
            // Kafka's producer: 64 KiB independent blocks, no block or content checksums.
            let info = lz4_flex::frame::FrameInfo::new()
                .block_size(lz4_flex::frame::BlockSize::Max64KB)
                .block_mode(lz4_flex::frame::BlockMode::Independent);
            let mut enc = lz4_flex::frame::FrameEncoder::with_frame_info(info, Vec::new());
            let _ = enc.write_all(input);
            enc.finish().unwrap_or_default()
        }
        Compression::Zstd => zstd::bulk::compress(input, ZSTD_DEFAULT_LEVEL).unwrap_or_default(),
    }
}

/// Reads a decoder to the end, but never more than `max_output_bytes` (+1 to detect excess).
fn read_bounded<R: Read>(
    decoder: R,
    max_output_bytes: usize,
    codec: &'static str,
) -> Result<Vec<u8>, RecordError> {
    let mut out = Vec::new();
    let limit = (max_output_bytes as u64).saturating_add(1);
    decoder
        .take(limit)
        .read_to_end(&mut out)
        .map_err(|_| RecordError::Decompression { codec })?;
    if out.len() > max_output_bytes {
        return Err(RecordError::DecompressedTooLarge {
            max_bytes: max_output_bytes,
        });
    }
    Ok(out)
}

fn decompress_zstd(input: &[u8], max_output_bytes: usize) -> Result<Vec<u8>, RecordError> {
    let err = || RecordError::Decompression { codec: "zstd" };
    let mut decoder = zstd::stream::read::Decoder::with_buffer(input).map_err(|_| err())?;
    // A frame may declare a window far larger than its content; the decoder allocates the
    // window up front. No window larger than the whole allowed output is ever needed.
    let needed_log = usize::BITS - max_output_bytes.max(1).leading_zeros();
    let window_log = needed_log.clamp(ZSTD_WINDOW_LOG_FLOOR, ZSTD_WINDOW_LOG_LIMIT);
    decoder.window_log_max(window_log).map_err(|_| err())?;
    read_bounded(decoder, max_output_bytes, "zstd")
}

fn decompress_snappy(input: &[u8], max_output_bytes: usize) -> Result<Vec<u8>, RecordError> {
    if input.len() >= XERIAL_MAGIC.len() && input[..XERIAL_MAGIC.len()] == XERIAL_MAGIC {
        decompress_snappy_xerial(input, max_output_bytes)
    } else {
        let mut out = Vec::new();
        snappy_block_into(input, max_output_bytes, &mut out)?;
        Ok(out)
    }
}

/// Decodes one raw snappy block, appending to `out`, checking its declared length against the
/// budget before allocating.
fn snappy_block_into(
    block: &[u8],
    max_output_bytes: usize,
    out: &mut Vec<u8>,
) -> Result<(), RecordError> {
    let err = RecordError::Decompression { codec: "snappy" };
    let len = snap::raw::decompress_len(block).map_err(|_| err.clone())?;
    if len > max_output_bytes.saturating_sub(out.len()) {
        return Err(RecordError::DecompressedTooLarge {
            max_bytes: max_output_bytes,
        });
    }
    let start = out.len();
    out.resize(start + len, 0);
    let written = snap::raw::Decoder::new()
        .decompress(block, &mut out[start..])
        .map_err(|_| err.clone())?;
    if written != len {
        return Err(err);
    }
    Ok(())
}

fn decompress_snappy_xerial(input: &[u8], max_output_bytes: usize) -> Result<Vec<u8>, RecordError> {
    let corrupt = RecordError::Decompression { codec: "snappy" };
    let mut rest = input;
    let mut out = Vec::new();
    while !rest.is_empty() {
        // snappy-java accepts concatenated streams: a header may start again between blocks.
        if rest.len() >= XERIAL_MAGIC.len() && rest[..XERIAL_MAGIC.len()] == XERIAL_MAGIC {
            if rest.len() < XERIAL_HEADER_BYTES {
                return Err(corrupt);
            }
            rest = &rest[XERIAL_HEADER_BYTES..];
            continue;
        }
        if rest.len() < 4 {
            return Err(corrupt);
        }
        let len = i32::from_be_bytes([rest[0], rest[1], rest[2], rest[3]]);
        rest = &rest[4..];
        if len < 0 || len as usize > rest.len() {
            return Err(corrupt);
        }
        let (block, tail) = rest.split_at(len as usize);
        snappy_block_into(block, max_output_bytes, &mut out)?;
        rest = tail;
    }
    Ok(out)
}

fn compress_snappy_xerial(input: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(XERIAL_HEADER_BYTES + input.len() / 2 + 16);
    out.extend_from_slice(&XERIAL_MAGIC);
    // snappy-java writes version 1 and minimum compatible version 1.
    out.extend_from_slice(&1i32.to_be_bytes());
    out.extend_from_slice(&1i32.to_be_bytes());
    let mut encoder = snap::raw::Encoder::new();
    for chunk in input.chunks(XERIAL_BLOCK_BYTES) {
        let block = encoder.compress_vec(chunk).unwrap_or_default();
        out.extend_from_slice(&(block.len() as i32).to_be_bytes());
        out.extend_from_slice(&block);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const ALL: [Compression; 5] = [
        Compression::None,
        Compression::Gzip,
        Compression::Snappy,
        Compression::Lz4,
        Compression::Zstd,
    ];

    fn sample(len: usize) -> Vec<u8> {
        (0..len)
            .map(|i| (i % 251) as u8 ^ (i / 1000) as u8)
            .collect()
    }

    #[test]
    fn every_codec_round_trips() {
        for codec in ALL {
            for len in [0usize, 1, 100, 70_000, 200_000] {
                let data = sample(len);
                let packed = compress(codec, &data);
                assert_eq!(
                    decompress(codec, &packed, len).unwrap(),
                    data,
                    "{codec:?} {len}"
                );
            }
        }
    }

    #[test]
    fn ids_names_and_attributes() {
        for codec in ALL {
            assert_eq!(Compression::from_id(codec.id()).unwrap(), codec);
            assert_eq!(Compression::from_name(codec.name()), Some(codec));
        }
        assert_eq!(
            Compression::from_attributes(0x0013).unwrap(),
            Compression::Lz4
        );
        assert_eq!(
            Compression::from_id(5),
            Err(RecordError::UnsupportedCompression(5))
        );
        assert_eq!(
            Compression::from_attributes(0x0007),
            Err(RecordError::UnsupportedCompression(7))
        );
    }

    #[test]
    fn snappy_stream_has_xerial_header_and_raw_blocks_are_accepted() {
        let data = sample(100_000);
        let packed = compress(Compression::Snappy, &data);
        assert_eq!(&packed[..8], b"\x82SNAPPY\0");
        assert_eq!(&packed[8..16], &[0, 0, 0, 1, 0, 0, 0, 1]);
        let raw = snap::raw::Encoder::new().compress_vec(&data).unwrap();
        assert_eq!(
            decompress(Compression::Snappy, &raw, data.len()).unwrap(),
            data
        );
        // Two concatenated xerial streams decode as one.
        let mut twice = packed.clone();
        twice.extend_from_slice(&packed);
        assert_eq!(
            decompress(Compression::Snappy, &twice, 2 * data.len())
                .unwrap()
                .len(),
            200_000
        );
    }

    #[test]
    fn lz4_frame_matches_kafka_descriptor() {
        let packed = compress(Compression::Lz4, b"hello");
        assert_eq!(&packed[..4], &[0x04, 0x22, 0x4d, 0x18]);
        // FLG: version 01, independent blocks, no checksums, no content size; BD: 64 KiB.
        assert_eq!(packed[4], 0x60);
        assert_eq!(packed[5], 0x40);
    }

    #[test]
    fn bombs_are_refused_not_allocated() {
        let zeros = vec![0u8; 8 << 20];
        for codec in ALL {
            let packed = compress(codec, &zeros);
            let err = decompress(codec, &packed, 1 << 20).unwrap_err();
            assert_eq!(
                err,
                RecordError::DecompressedTooLarge { max_bytes: 1 << 20 },
                "{codec:?}"
            );
        }
        // A raw snappy block whose header claims 4 GiB is refused before allocating.
        let lying = [0xff, 0xff, 0xff, 0xff, 0x0f, 0x00];
        assert!(decompress(Compression::Snappy, &lying, 1 << 20).is_err());
    }

    #[test]
    fn garbage_and_truncation_are_errors() {
        let data = sample(50_000);
        for codec in [
            Compression::Gzip,
            Compression::Snappy,
            Compression::Lz4,
            Compression::Zstd,
        ] {
            let packed = compress(codec, &data);
            let cut = &packed[..packed.len() / 2];
            assert!(
                decompress(codec, cut, 1 << 20).is_err(),
                "{codec:?} truncated"
            );
            assert!(
                decompress(codec, &[1, 2, 3, 4, 5, 6, 7, 8, 9], 1 << 20).is_err(),
                "{codec:?}"
            );
        }
        // xerial header followed by a negative block length.
        let mut bad = XERIAL_MAGIC.to_vec();
        bad.extend_from_slice(&[0, 0, 0, 1, 0, 0, 0, 1, 0xff, 0xff, 0xff, 0xff]);
        assert!(decompress(Compression::Snappy, &bad, 1 << 20).is_err());
    }
}
