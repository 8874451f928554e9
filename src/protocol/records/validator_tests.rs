use bytes::{Bytes, BytesMut};

use super::*;
use crate::protocol::records::batch::{
    compute_crc, ATTRIBUTES_OFFSET, BATCH_LENGTH_OFFSET, CRC_OFFSET, LAST_OFFSET_DELTA_OFFSET,
    LOG_OVERHEAD, RECORDS_COUNT_OFFSET,
};
use crate::protocol::records::compression::compress;
use crate::protocol::records::{Record, RecordBatchBuilder, RecordHeader};

const NOW: i64 = 1_700_000_000_000;
const CODECS: [Compression; 5] = [
    Compression::None,
    Compression::Gzip,
    Compression::Snappy,
    Compression::Lz4,
    Compression::Zstd,
];

/// `n` records at NOW with keys except at the `keyless` indices.
fn batch_with(codec: Compression, n: usize, keyless: &[usize]) -> BytesMut {
    let mut b = RecordBatchBuilder::new(0).compression(codec);
    for i in 0..n {
        let key = (!keyless.contains(&i)).then(|| Bytes::from(format!("k{i}")));
        b.append(
            NOW,
            key,
            Some(Bytes::from(format!("value-{i}-{}", "v".repeat(i % 50)))),
            vec![RecordHeader {
                key: "h".into(),
                value: Some(Bytes::from_static(b"x")),
            }],
        );
    }
    b.build()
}

fn fix_crc(b: &mut [u8]) {
    let crc = compute_crc(b);
    b[CRC_OFFSET..CRC_OFFSET + 4].copy_from_slice(&crc.to_be_bytes());
}

/// `batch` with its records section replaced by `section` under `codec`, lengths and CRC
/// consistent, so only the section is wrong.
fn with_section(batch: &[u8], codec: Compression, section: &[u8]) -> Vec<u8> {
    let mut b = batch[..RECORD_BATCH_OVERHEAD].to_vec();
    b.extend_from_slice(section);
    let len = (b.len() - LOG_OVERHEAD) as i32;
    b[BATCH_LENGTH_OFFSET..BATCH_LENGTH_OFFSET + 4].copy_from_slice(&len.to_be_bytes());
    let attrs = (i16::from_be_bytes([b[ATTRIBUTES_OFFSET], b[ATTRIBUTES_OFFSET + 1]]) & !0x07)
        | codec.id() as i16;
    b[ATTRIBUTES_OFFSET..ATTRIBUTES_OFFSET + 2].copy_from_slice(&attrs.to_be_bytes());
    fix_crc(&mut b);
    b
}

/// `batch` claiming `count` records (last offset delta consistent, CRC recomputed).
fn with_count(batch: &[u8], count: i32) -> Vec<u8> {
    let mut b = batch.to_vec();
    b[RECORDS_COUNT_OFFSET..RECORDS_COUNT_OFFSET + 4].copy_from_slice(&count.to_be_bytes());
    b[LAST_OFFSET_DELTA_OFFSET..LAST_OFFSET_DELTA_OFFSET + 4]
        .copy_from_slice(&(count - 1).to_be_bytes());
    fix_crc(&mut b);
    b
}

fn config() -> ValidationConfig {
    ValidationConfig {
        now_ms: NOW,
        topic_partition: "t-0".into(),
        ..ValidationConfig::default()
    }
}

fn code(r: Result<Vec<ValidatedBatch>, BatchError>) -> ErrorCode {
    r.expect_err("refused").code()
}

#[test]
fn good_batches_of_every_codec_pass() {
    for codec in CODECS {
        let b = batch_with(codec, 100, &[]);
        let v = validate_produce(&b, &config()).unwrap_or_else(|e| panic!("{codec:?}: {e}"));
        assert_eq!(v.len(), 1);
        assert_eq!(v[0].header.records_count, 100);
        assert_eq!(v[0].header.compression(), codec.id());
        assert_eq!(v[0].range, 0..b.len());
        assert!(!v[0].needs_rebuild);
    }
    // Several batches in one payload (a coordinator's append) keep their own ranges.
    let mut two = batch_with(Compression::Gzip, 3, &[]);
    let first = two.len();
    two.extend_from_slice(&batch_with(Compression::None, 2, &[]));
    let coordinator = ValidationConfig {
        from_client: false,
        ..config()
    };
    let v = validate_produce(&two, &coordinator).expect("valid");
    assert_eq!(
        v.iter().map(|b| b.range.clone()).collect::<Vec<_>>(),
        vec![0..first, first..two.len()]
    );
}

#[test]
fn a_client_sends_one_batch_per_partition() {
    let mut two = batch_with(Compression::None, 3, &[]);
    two.extend_from_slice(&batch_with(Compression::None, 2, &[]));
    let err = validate_produce(&two, &config()).expect_err("refused");
    assert_eq!(err.code(), ErrorCode::INVALID_RECORD);
    assert!(
        err.to_string().contains("exactly one record batch"),
        "{err}"
    );
}

#[test]
fn the_max_timestamp_comes_from_the_records_not_the_header() {
    use crate::protocol::records::batch::MAX_TIMESTAMP_OFFSET;
    for codec in CODECS {
        let mut b = RecordBatchBuilder::new(0).compression(codec);
        for ts in [NOW - 30, NOW - 10, NOW - 20] {
            b.append(ts, Some(Bytes::from_static(b"k")), None, vec![]);
        }
        let mut lying = b.build().to_vec();
        // The producer claims a max timestamp far in the future, with a valid CRC.
        lying[MAX_TIMESTAMP_OFFSET..MAX_TIMESTAMP_OFFSET + 8]
            .copy_from_slice(&(NOW + 1_000_000).to_be_bytes());
        fix_crc(&mut lying);
        let v = validate_produce(&lying, &config()).expect("valid");
        assert_eq!(v[0].header.max_timestamp, NOW - 10, "{codec:?}");
    }
}

#[test]
fn lying_record_count_is_invalid_record() {
    for codec in CODECS {
        let b = batch_with(codec, 5, &[]);
        for count in [4, 6, 1000] {
            let lying = with_count(&b, count);
            assert_eq!(
                code(validate_produce(&lying, &config())),
                ErrorCode::INVALID_RECORD,
                "{codec:?} claiming {count}"
            );
        }
    }
}

#[test]
fn garbage_claiming_a_codec_is_corrupt_message() {
    let b = batch_with(Compression::None, 3, &[]);
    let garbage: Vec<u8> = (0..300u32).map(|i| (i * 7919 % 251) as u8).collect();
    for codec in [
        Compression::Gzip,
        Compression::Snappy,
        Compression::Lz4,
        Compression::Zstd,
    ] {
        let bad = with_section(&b, codec, &garbage);
        assert_eq!(
            validate_produce(&bad, &config()),
            Err(BatchError::Decompression(codec.name())),
            "{codec:?}"
        );
        assert_eq!(
            BatchError::Decompression("x").code(),
            ErrorCode::CORRUPT_MESSAGE
        );
    }
}

#[test]
fn truncated_compressed_payload_is_refused() {
    for codec in [
        Compression::Gzip,
        Compression::Snappy,
        Compression::Lz4,
        Compression::Zstd,
    ] {
        let b = batch_with(codec, 50, &[]);
        let section = &b[RECORD_BATCH_OVERHEAD..];
        let cut = with_section(&b, codec, &section[..section.len() / 2]);
        let c = code(validate_produce(&cut, &config()));
        assert!(
            c == ErrorCode::CORRUPT_MESSAGE || c == ErrorCode::INVALID_RECORD,
            "{codec:?}: {c:?}"
        );
    }
}

#[test]
fn bytes_after_the_records_are_invalid_record() {
    // A compressed section holding the declared records plus trailing bytes.
    let plain = batch_with(Compression::None, 3, &[]);
    let mut records = plain[RECORD_BATCH_OVERHEAD..].to_vec();
    records.extend_from_slice(&[0, 0, 0]);
    for codec in [Compression::Gzip, Compression::Zstd] {
        let b = with_section(&plain, codec, &compress(codec, &records));
        assert_eq!(
            validate_produce(&b, &config()),
            Err(BatchError::InvalidRecord(
                "incorrect declared batch size, records still remaining"
            ))
        );
    }
}

#[test]
fn keyless_records_on_a_compacted_topic_are_listed() {
    let keyless: Vec<usize> = (0..100).filter(|i| i % 10 == 3).collect();
    let compacted = ValidationConfig {
        compacted: true,
        ..config()
    };
    for codec in CODECS {
        let b = batch_with(codec, 100, &keyless);
        let err = validate_produce(&b, &compacted).expect_err("refused");
        assert_eq!(err.code(), ErrorCode::INVALID_RECORD);
        let BatchError::RecordErrors {
            message, records, ..
        } = err
        else {
            panic!("{codec:?}: not record errors");
        };
        assert_eq!(
            records
                .iter()
                .map(|r| r.batch_index as usize)
                .collect::<Vec<_>>(),
            keyless
        );
        assert_eq!(
            records[0].message,
            "Compacted topic cannot accept message without key in topic partition t-0"
        );
        assert!(
            message.starts_with("One or more records have been rejected due to 10 record errors"),
            "{message}"
        );
        // Keyed records alone pass, and an uncompacted topic takes keyless ones.
        validate_produce(&batch_with(codec, 100, &[]), &compacted).expect("keyed");
        validate_produce(&b, &config()).expect("not compacted");
    }
}

#[test]
fn timestamps_out_of_range_are_invalid_timestamp() {
    let bounded = ValidationConfig {
        timestamp_before_max_ms: 1_000,
        timestamp_after_max_ms: 500,
        ..config()
    };
    for codec in CODECS {
        let mut b = RecordBatchBuilder::new(0).compression(codec);
        for (i, ts) in [NOW, NOW - 1_001, NOW + 400, NOW + 501, NOW - 1_000]
            .into_iter()
            .enumerate()
        {
            b.append(ts, Some(Bytes::from(format!("k{i}"))), None, vec![]);
        }
        let err = validate_produce(&b.build(), &bounded).expect_err("refused");
        assert_eq!(err.code(), ErrorCode::INVALID_TIMESTAMP);
        let BatchError::RecordErrors {
            message, records, ..
        } = err
        else {
            panic!("not record errors");
        };
        assert_eq!(
            message,
            "One or more records have been rejected due to invalid timestamp"
        );
        assert_eq!(
            records.iter().map(|r| r.batch_index).collect::<Vec<_>>(),
            vec![1, 3]
        );
        assert!(
            records[0].message.contains("is out of range"),
            "{}",
            records[0].message
        );
        // A LogAppendTime topic does not check record timestamps.
        let lat = ValidationConfig {
            log_append_time: true,
            ..bounded.clone()
        };
        let mut ok = RecordBatchBuilder::new(0).compression(codec);
        ok.append(
            NOW - 1_000_000,
            Some(Bytes::from_static(b"k")),
            None,
            vec![],
        );
        validate_produce(&ok.build(), &lat).expect("LogAppendTime topic");
    }
}

#[test]
fn producer_set_log_append_time_is_invalid_timestamp_on_a_log_append_time_topic() {
    let mut b = RecordBatchBuilder::new(0)
        .timestamp_type(crate::protocol::records::TimestampType::LogAppendTime);
    b.append(NOW, None, None, vec![]);
    let lat = ValidationConfig {
        log_append_time: true,
        ..config()
    };
    let err = validate_produce(&b.build(), &lat).expect_err("refused");
    assert_eq!(err.code(), ErrorCode::INVALID_TIMESTAMP);
    // On a CreateTime topic Kafka checks the record timestamp (the batch's max timestamp for
    // a LogAppendTime batch) against the bounds instead, which it passes here.
    validate_produce(&b.build(), &config()).expect("CreateTime topic");
}

#[test]
fn control_batches_and_sequence_less_idempotent_batches_are_refused() {
    let mut b = RecordBatchBuilder::new(0).control(true);
    b.append(NOW, None, None, vec![]);
    assert_eq!(
        code(validate_produce(&b.build(), &config())),
        ErrorCode::INVALID_RECORD
    );
    let mut b = RecordBatchBuilder::new(0).producer(7, 0, -1);
    b.append(NOW, None, None, vec![]);
    assert_eq!(
        code(validate_produce(&b.build(), &config())),
        ErrorCode::INVALID_RECORD
    );
}

#[test]
fn compressed_batch_with_odd_offset_deltas_needs_a_rebuild() {
    let mut b = RecordBatchBuilder::new(0)
        .compression(Compression::Lz4)
        .base_timestamp_ms(NOW);
    for (i, delta) in [0, 2, 4].into_iter().enumerate() {
        b.push_record(Record {
            offset_delta: delta,
            key: Some(Bytes::from(format!("k{i}"))),
            ..Record::default()
        });
    }
    // The builder takes the last delta as last_offset_delta; make the header consistent.
    let bytes = with_count(&b.build(), 3);
    let v = validate_produce(&bytes, &config()).expect("valid");
    assert!(v[0].needs_rebuild);
}

#[test]
fn record_fields_must_fill_the_record_length() {
    // A record whose length claims one byte more than its fields, inside an uncompressed
    // batch whose sizes are otherwise consistent.
    let plain = batch_with(Compression::None, 1, &[]);
    let mut section = plain[RECORD_BATCH_OVERHEAD..].to_vec();
    section[0] += 2; // zig-zag: +1 in length
    section.push(0);
    let b = with_section(&plain, Compression::None, &section);
    assert_eq!(
        code(validate_produce(&b, &config())),
        ErrorCode::INVALID_RECORD
    );
}

/// The fuzz seed corpus (`fuzz/corpus/record_batch`, `fuzz/corpus/compressed_records`): valid
/// batches of every codec, written by `cargo test --lib write_fuzz_seed_corpus -- --ignored`.
fn corpus_dir(target: &str) -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fuzz/corpus")
        .join(target)
}

fn seed_batches() -> Vec<(String, BytesMut)> {
    let mut out = Vec::new();
    for codec in CODECS {
        out.push((format!("{}-3", codec.name()), batch_with(codec, 3, &[])));
        out.push((format!("{}-40", codec.name()), batch_with(codec, 40, &[1])));
    }
    out
}

#[test]
#[ignore]
fn write_fuzz_seed_corpus() {
    for (name, b) in seed_batches() {
        let dir = corpus_dir("record_batch");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join(&name), &b).unwrap();
        let h = crate::protocol::records::batch::parse_header(&b).unwrap();
        if h.compression() != 0 {
            let codec_byte = h.compression() - 1;
            let mut seed = vec![codec_byte, (h.records_count - 1) as u8];
            seed.extend_from_slice(&b[RECORD_BATCH_OVERHEAD..]);
            let dir = corpus_dir("compressed_records");
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(dir.join(&name), seed).unwrap();
        }
    }
}

#[test]
fn fuzz_seed_corpus_is_valid() {
    let dir = corpus_dir("record_batch");
    let mut n = 0;
    for entry in std::fs::read_dir(&dir).expect("record_batch corpus") {
        let bytes = std::fs::read(entry.unwrap().path()).unwrap();
        validate_produce(&bytes, &config()).expect("seed batch validates");
        n += 1;
    }
    assert!(n >= 10, "{n} seeds");
}
