//! Micro benchmarks of the storage layer on a temporary directory (page cache, no fsync):
//! `PartitionLog::append_as_leader` of 16 KiB batches, `PartitionLog::read` by offset (a
//! consumer's 1 MiB fetch and a 16 KiB one), and `OffsetIndex::lookup`.
//!
//! Run: `cargo bench --bench storage -- --warm-up-time 1 --measurement-time 3`
//! (see BENCHMARKS.md for the figures and what they mean).

use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use criterion::{black_box, criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use strata::protocol::records::RecordBatchBuilder;
use strata::storage::offset_index::OffsetIndex;
use strata::storage::{LogConfig, PartitionLog};

/// 148 records of 100 B in one batch (~16 KiB: the Java producer's default batch.size).
fn batch() -> BytesMut {
    let mut b = RecordBatchBuilder::new(0).producer(1000, 0, 0);
    let value = Bytes::from(vec![b'x'; 100]);
    for i in 0..148 {
        b.append(1_700_000_000_000 + i, None, Some(value.clone()), Vec::new());
    }
    b.build()
}

fn open_log(dir: &std::path::Path) -> PartitionLog {
    let config = LogConfig {
        segment_bytes: 256 << 20,
        ..LogConfig::default()
    };
    PartitionLog::open(dir.join("bench-0"), config, 0, false, 0).unwrap()
}

fn append(c: &mut Criterion) {
    let tmp = tempfile::tempdir().unwrap();
    let log = open_log(tmp.path());
    let one = batch();
    let mut g = c.benchmark_group("log");
    g.throughput(Throughput::Bytes(one.len() as u64));
    g.bench_function("append_as_leader/16KiB", |b| {
        b.iter_custom(|iters| {
            let mut spent = Duration::ZERO;
            let mut left = iters;
            while left > 0 {
                // The payload is owned by the append (as the produce path hands it over):
                // prepare the copies outside the timed part, and keep the log under 256 MiB.
                let n = left.min(1024);
                let bufs: Vec<BytesMut> = (0..n).map(|_| one.clone()).collect();
                if log.size_bytes() > 256 << 20 {
                    log.truncate_fully_and_start_at(log.log_end_offset())
                        .unwrap();
                }
                let t = Instant::now();
                for buf in bufs {
                    black_box(log.append_as_leader(buf, 0, None, 0).unwrap());
                }
                spent += t.elapsed();
                left -= n;
            }
            spent
        })
    });
    g.finish();
}

fn read(c: &mut Criterion) {
    let tmp = tempfile::tempdir().unwrap();
    let log = open_log(tmp.path());
    let one = batch();
    // 64 MiB of batches in the page cache.
    for _ in 0..(64 << 20) / one.len() {
        log.append_as_leader(one.clone(), 0, None, 0).unwrap();
    }
    let end = log.log_end_offset();
    let mut g = c.benchmark_group("log");
    for max_bytes in [16usize << 10, 1 << 20] {
        g.throughput(Throughput::Bytes(max_bytes as u64));
        g.bench_with_input(
            BenchmarkId::new("read", max_bytes),
            &max_bytes,
            |b, &max| {
                let mut offset = 0i64;
                b.iter(|| {
                    // Walk the log at a stride so every read needs an index lookup and a scan.
                    offset = (offset + 7_919_993) % (end - 20_000);
                    black_box(log.read(offset, max, i64::MAX, true).unwrap())
                })
            },
        );
    }
    g.finish();
}

fn index(c: &mut Criterion) {
    let tmp = tempfile::tempdir().unwrap();
    let mut idx = OffsetIndex::open(&tmp.path().join("00000000000000000000.index"), 0).unwrap();
    idx.resize(10 << 20).unwrap();
    // One entry per 4 KiB of log (index.interval.bytes) for a full 1 GiB segment's worth.
    let mut n = 0i64;
    while idx.append(n * 37 + 36, (n * 4096) as u32) {
        n += 1;
    }
    let last = n * 37;
    let mut g = c.benchmark_group("index");
    g.throughput(Throughput::Elements(1));
    g.bench_function(BenchmarkId::new("offset_lookup", idx.entries()), |b| {
        let mut t = 0i64;
        b.iter(|| {
            t = (t + 1_000_003) % last;
            black_box(idx.lookup(t))
        })
    });
    g.finish();
}

criterion_group!(benches, append, read, index);
criterion_main!(benches);
