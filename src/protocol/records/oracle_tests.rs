//! Differential tests of the record codecs against the `kafka-protocol` crate (a dev-only
//! oracle, written independently of Strata): batches it encodes must decode with ours, and
//! batches our builder writes must decode with it. Its snappy is raw blocks only (no xerial
//! framing), so our snappy batches are checked one way only.

use bytes::{Bytes, BytesMut};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::records as kp;

use super::builder::{RecordBatchBuilder, TimestampType};
use super::compression::Compression;
use super::record::{decode_records, RecordHeader};

const CODECS: [(Compression, kp::Compression); 5] = [
    (Compression::None, kp::Compression::None),
    (Compression::Gzip, kp::Compression::Gzip),
    (Compression::Snappy, kp::Compression::Snappy),
    (Compression::Lz4, kp::Compression::Lz4),
    (Compression::Zstd, kp::Compression::Zstd),
];

fn oracle_records(n: usize) -> Vec<kp::Record> {
    (0..n)
        .map(|i| {
            let mut headers = kafka_protocol::indexmap::IndexMap::new();
            if i % 2 == 0 {
                headers.insert(
                    StrBytes::from_static_str("trace"),
                    Some(Bytes::from(format!("t{i}"))),
                );
                headers.insert(StrBytes::from_static_str("empty"), None);
            }
            kp::Record {
                transactional: false,
                control: false,
                partition_leader_epoch: 3,
                producer_id: 77,
                producer_epoch: 1,
                timestamp_type: kp::TimestampType::Creation,
                offset: 500 + i as i64,
                sequence: 10 + i as i32,
                timestamp: 1_700_000_000_000 + (i as i64 * 7) % 5,
                key: (i % 3 != 0).then(|| Bytes::from(format!("key-{i}"))),
                value: (i % 5 != 0).then(|| Bytes::from(vec![b'x'; i * 13])),
                headers,
            }
        })
        .collect()
}

#[test]
fn batches_encoded_by_the_oracle_decode_with_ours() {
    let expected = oracle_records(40);
    for (ours, theirs) in CODECS {
        let mut buf = BytesMut::new();
        let options = kp::RecordEncodeOptions {
            version: 2,
            compression: theirs,
        };
        kp::RecordBatchEncoder::encode(&mut buf, expected.iter(), &options).unwrap();
        let decoded = decode_records(&buf, 1 << 20).unwrap();
        assert_eq!(decoded.len(), expected.len(), "{ours:?}");
        for (got, want) in decoded.iter().zip(&expected) {
            assert_eq!(500 + got.offset_delta as i64, want.offset, "{ours:?}");
            assert_eq!(1_700_000_000_000 + got.timestamp_delta, want.timestamp);
            assert_eq!(got.key, want.key);
            assert_eq!(got.value, want.value);
            let headers: Vec<(String, Option<Bytes>)> = got
                .headers
                .iter()
                .map(|h| (h.key.clone(), h.value.clone()))
                .collect();
            let want_headers: Vec<(String, Option<Bytes>)> = want
                .headers
                .iter()
                .map(|(k, v)| (k.as_str().to_string(), v.clone()))
                .collect();
            assert_eq!(headers, want_headers);
        }
    }
}

#[test]
fn batches_built_by_us_decode_with_the_oracle() {
    for (ours, theirs) in CODECS {
        if ours == Compression::Snappy {
            continue; // the oracle cannot read xerial framing
        }
        let mut builder = RecordBatchBuilder::new(1000)
            .compression(ours)
            .producer(42, 3, 99)
            .partition_leader_epoch(8)
            .transactional(true)
            .timestamp_type(TimestampType::CreateTime);
        for i in 0..25i64 {
            let headers = vec![RecordHeader {
                key: format!("h{i}"),
                value: Some(Bytes::from_static(b"v")),
            }];
            builder.append(5000 + i, Some(Bytes::from(format!("k{i}"))), None, headers);
        }
        let mut bytes = builder.build().freeze();
        let set = kp::RecordBatchDecoder::decode(&mut bytes).unwrap();
        assert_eq!(set.compression, kp::RecordCompression::RecordBatch(theirs));
        assert_eq!(set.records.len(), 25);
        for (i, r) in set.records.iter().enumerate() {
            assert_eq!(r.offset, 1000 + i as i64);
            assert_eq!(r.sequence, 99 + i as i32);
            assert_eq!(r.timestamp, 5000 + i as i64);
            assert_eq!(
                (r.producer_id, r.producer_epoch, r.partition_leader_epoch),
                (42, 3, 8)
            );
            assert!(r.transactional && !r.control);
            assert_eq!(r.key, Some(Bytes::from(format!("k{i}"))));
            assert_eq!(r.value, None);
            assert_eq!(r.headers.len(), 1);
        }
    }
}
