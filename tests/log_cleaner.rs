//! The broker's log cleaner task over real TCP: `log.cleaner.backoff.ms` sets how soon a
//! compacted topic is cleaned, `log.cleaner.enable=false` turns the task off, and
//! `log.cleaner.io.max.bytes.per.second` is accepted (its enforcement is tested on simulated
//! time in `src/storage/cleaner/tests.rs`).
mod common;
use common::*;

use std::time::{Duration, Instant};

use bytes::Bytes;
use strata::protocol::records::{Record, RecordBatchBuilder};

const TOPIC: &str = "compacted";
const KEYS: usize = 10;
const BATCHES: usize = 10;

/// One batch holding a record for each of the `KEYS` keys.
fn keyed_batch(round: usize) -> Bytes {
    let mut b = RecordBatchBuilder::new(0).base_timestamp_ms(now_ms());
    for k in 0..KEYS {
        b.push_record(Record {
            offset_delta: k as i32,
            timestamp_delta: 0,
            key: Some(Bytes::from(format!("key-{k}"))),
            value: Some(Bytes::from(format!("value-{round}-{k}-{}", "x".repeat(64)))),
            headers: vec![],
        });
    }
    b.build().freeze()
}

/// Creates a compacted topic whose segments roll at every batch, writes `BATCHES` rounds of
/// the same keys, and returns a client.
async fn write_compacted(broker: &TestBroker) -> Client {
    let mut c = broker.client().await;
    let configs = [
        ("cleanup.policy", "compact"),
        ("segment.bytes", "1024"),
        ("min.cleanable.dirty.ratio", "0.01"),
    ];
    assert_eq!(create_topic_with(&mut c, TOPIC, 1, &configs).await, 0);
    for round in 0..BATCHES {
        let (code, _) = common::txn::produce(&mut c, TOPIC, keyed_batch(round)).await;
        assert_eq!(code, 0);
    }
    c
}

/// How many records the log holds: fetches from offset 0 up to the high watermark (a fetch
/// returns data from one segment at a time).
async fn records_in_log(c: &mut Client) -> usize {
    let (mut n, mut offset) = (0, 0i64);
    loop {
        let p = &fetch_partition(c, TOPIC, offset, 0, 1 << 20).await;
        assert_eq!(p.error_code, 0);
        let records = p.records.clone().unwrap_or_default();
        let mut pos = 0;
        while pos + 61 <= records.len() {
            let h = strata::protocol::records::batch::parse_header(&records[pos..]).unwrap();
            let end = pos + h.total_size();
            n += strata::protocol::records::decode_records(&records[pos..end], 1 << 30)
                .unwrap()
                .len();
            offset = h.last_offset() + 1;
            pos = end;
        }
        if offset >= p.high_watermark || records.is_empty() {
            return n;
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cleaner_runs_every_backoff_within_its_io_budget() {
    let broker = TestBroker::start(&[
        ("log.cleaner.backoff.ms", "100"),
        ("log.cleaner.io.max.bytes.per.second", "10000000"),
    ])
    .await;
    let mut c = write_compacted(&broker).await;
    // The active segment (the last round) is never cleaned; every older duplicate goes.
    // The first pass ran at start-up, before the writes: the next one comes after the 100 ms
    // backoff, well before the 15 s default would allow.
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let n = records_in_log(&mut c).await;
        if n <= 2 * KEYS {
            break;
        }
        assert!(Instant::now() < deadline, "still {n} records after 10 s");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cleaner_disabled_leaves_the_log_alone() {
    let broker = TestBroker::start(&[
        ("log.cleaner.enable", "false"),
        ("log.cleaner.backoff.ms", "50"),
    ])
    .await;
    let mut c = write_compacted(&broker).await;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(records_in_log(&mut c).await, KEYS * BATCHES);
}
