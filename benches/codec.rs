//! Micro benchmarks of the CPU-only produce and fetch paths: the generated codec (Produce and
//! Fetch requests and responses), record-batch validation (`validate_batches`: header checks,
//! CRC-32C and the record walk, per codec), in-place offset assignment, and raw CRC-32C.
//!
//! Run: `cargo bench --bench codec -- --warm-up-time 1 --measurement-time 3`
//! (see BENCHMARKS.md for the figures and what they mean).

use bytes::{Bytes, BytesMut};
use criterion::{black_box, criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use strata::protocol::codec::{Decode, Encode};
use strata::protocol::messages::{
    fetch_request, fetch_response, produce_request, produce_response,
};
use strata::protocol::records::batch::{
    set_base_offset, set_partition_leader_epoch, validate_batches,
};
use strata::protocol::records::compression::Compression;
use strata::protocol::records::RecordBatchBuilder;

const PRODUCE_VERSION: i16 = 9;
const FETCH_VERSION: i16 = 12;

/// One batch of `n` records with `size`-byte values, as a Java producer sends it.
fn batch(n: usize, size: usize) -> BytesMut {
    let mut b = RecordBatchBuilder::new(0).producer(1000, 0, 0);
    let value = Bytes::from(vec![b'x'; size]);
    for i in 0..n {
        b.append(
            1_700_000_000_000 + i as i64,
            None,
            Some(value.clone()),
            Vec::new(),
        );
    }
    b.build()
}

/// `count` consecutive 16 KiB-ish batches (148 records of 100 B), as in one produce request
/// partition or one fetch response partition.
fn batches(count: usize) -> Bytes {
    let one = batch(148, 100);
    let mut all = BytesMut::with_capacity(one.len() * count);
    for _ in 0..count {
        all.extend_from_slice(&one);
    }
    all.freeze()
}

fn produce_request(records: Bytes) -> produce_request::ProduceRequest {
    produce_request::ProduceRequest {
        acks: 1,
        timeout_ms: 30_000,
        topic_data: vec![produce_request::TopicProduceData {
            name: "bench".into(),
            partition_data: vec![produce_request::PartitionProduceData {
                index: 0,
                records: Some(records),
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    }
}

fn fetch_request(partitions: i32) -> fetch_request::FetchRequest {
    fetch_request::FetchRequest {
        replica_id: -1,
        max_wait_ms: 500,
        min_bytes: 1,
        max_bytes: 52_428_800,
        session_id: 0,
        session_epoch: -1,
        topics: vec![fetch_request::FetchTopic {
            topic: "bench".into(),
            partitions: (0..partitions)
                .map(|p| fetch_request::FetchPartition {
                    partition: p,
                    current_leader_epoch: 0,
                    fetch_offset: 123_456,
                    last_fetched_epoch: -1,
                    log_start_offset: -1,
                    partition_max_bytes: 1_048_576,
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        }],
        ..Default::default()
    }
}

fn codec(c: &mut Criterion) {
    let mut g = c.benchmark_group("codec");
    for count in [1usize, 64] {
        let records = batches(count);
        let req = produce_request(records.clone());
        let wire = req.to_bytes(PRODUCE_VERSION);
        g.throughput(Throughput::Bytes(wire.len() as u64));
        g.bench_with_input(
            BenchmarkId::new("produce_request_decode", count),
            &wire,
            |b, w| {
                b.iter(|| {
                    produce_request::ProduceRequest::decode(&mut w.clone(), PRODUCE_VERSION)
                        .unwrap()
                })
            },
        );
        g.bench_with_input(
            BenchmarkId::new("produce_request_encode", count),
            &req,
            |b, r| b.iter(|| r.to_bytes(PRODUCE_VERSION)),
        );
    }
    let resp = produce_response::ProduceResponse {
        responses: vec![produce_response::TopicProduceResponse {
            name: "bench".into(),
            partition_responses: vec![produce_response::PartitionProduceResponse {
                index: 0,
                base_offset: 123_456,
                log_append_time_ms: -1,
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    };
    g.throughput(Throughput::Elements(1));
    g.bench_function("produce_response_encode", |b| {
        b.iter(|| resp.to_bytes(PRODUCE_VERSION))
    });
    for parts in [1, 100] {
        let req = fetch_request(parts);
        let wire = req.to_bytes(FETCH_VERSION);
        g.throughput(Throughput::Elements(parts as u64));
        g.bench_with_input(
            BenchmarkId::new("fetch_request_decode", parts),
            &wire,
            |b, w| {
                b.iter(|| {
                    fetch_request::FetchRequest::decode(&mut w.clone(), FETCH_VERSION).unwrap()
                })
            },
        );
        g.bench_with_input(
            BenchmarkId::new("fetch_request_encode", parts),
            &req,
            |b, r| b.iter(|| r.to_bytes(FETCH_VERSION)),
        );
    }
    // A fetch response carrying 1 MiB of records (max.partition.fetch.bytes): encoding copies
    // the records into the response buffer.
    let records = batches(64);
    let resp = fetch_response::FetchResponse {
        responses: vec![fetch_response::FetchableTopicResponse {
            topic: "bench".into(),
            partitions: vec![fetch_response::PartitionData {
                partition_index: 0,
                high_watermark: 1_000_000,
                last_stable_offset: 1_000_000,
                log_start_offset: 0,
                preferred_read_replica: -1,
                records: Some(records.clone()),
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    };
    g.throughput(Throughput::Bytes(records.len() as u64));
    g.bench_function("fetch_response_encode/64", |b| {
        b.iter(|| resp.to_bytes(FETCH_VERSION))
    });
    g.finish();
}

fn records(c: &mut Criterion) {
    let mut g = c.benchmark_group("records");
    for count in [1usize, 64] {
        let buf = batches(count);
        g.throughput(Throughput::Bytes(buf.len() as u64));
        g.bench_with_input(
            BenchmarkId::new("validate_batches", count),
            &buf,
            |b, buf| b.iter(|| validate_batches(black_box(buf), 1 << 20).unwrap()),
        );
        // Offset assignment in place, as append_as_leader does it per batch (no CRC recompute:
        // the CRC does not cover base offset and partition leader epoch).
        let headers = validate_batches(&buf, 1 << 20).unwrap();
        let mut owned = BytesMut::from(&buf[..]);
        g.bench_function(BenchmarkId::new("assign_offsets", count), |b| {
            let mut next = 0i64;
            b.iter(|| {
                let mut pos = 0;
                for h in &headers {
                    let end = pos + h.total_size();
                    let slice = &mut owned[pos..end];
                    set_base_offset(slice, next);
                    set_partition_leader_epoch(slice, 7);
                    next = next.wrapping_add(h.last_offset_delta as i64 + 1);
                    pos = end;
                }
            })
        });
    }
    g.finish();
}

/// One batch of 148 records of ~100 B of text-like values (about 4:1 under gzip) with `codec`,
/// as a producer with `compression.type=<codec>` sends it.
fn text_batch(codec: Compression) -> (BytesMut, usize) {
    let mut b = RecordBatchBuilder::new(0)
        .producer(1000, 0, 0)
        .compression(codec);
    let mut seed = 0x2545_f491_u32;
    let mut raw = 0;
    for i in 0..148 {
        let value: Vec<u8> = (0..100)
            .map(|_| {
                seed = seed.wrapping_mul(1_103_515_245).wrapping_add(12_345);
                b"abcdefghijklmnop"[(seed >> 28) as usize]
            })
            .collect();
        raw += value.len() + 8;
        b.append(
            1_700_000_000_000 + i as i64,
            Some(Bytes::from(format!("key-{i:04}"))),
            Some(Bytes::from(value)),
            Vec::new(),
        );
    }
    (b.build(), raw)
}

/// The produce path's validation of one ~16 KiB batch per codec, through the entry point both
/// before and after the streaming validator (`validate_batches`; before, compressed batches
/// got only header and CRC-32C checks). Throughput is in uncompressed record bytes.
fn validate(c: &mut Criterion) {
    let mut g = c.benchmark_group("validate");
    for codec in [
        Compression::None,
        Compression::Gzip,
        Compression::Snappy,
        Compression::Lz4,
        Compression::Zstd,
    ] {
        let (buf, raw) = text_batch(codec);
        g.throughput(Throughput::Bytes(raw as u64));
        g.bench_with_input(BenchmarkId::from_parameter(codec.name()), &buf, |b, buf| {
            b.iter(|| validate_batches(black_box(buf), 1 << 20).unwrap())
        });
    }
    g.finish();
}

fn crc(c: &mut Criterion) {
    let mut g = c.benchmark_group("crc32c");
    for size in [100usize, 16 * 1024, 1 << 20] {
        let data = vec![0xa5u8; size];
        g.throughput(Throughput::Bytes(size as u64));
        g.bench_with_input(BenchmarkId::from_parameter(size), &data, |b, d| {
            b.iter(|| crc32c::crc32c(black_box(d)))
        });
    }
    g.finish();
}

criterion_group!(benches, codec, records, validate, crc);
criterion_main!(benches);
