//! Durability of the real `strata` binary (issue 2, section 6): acknowledged records survive a
//! `kill -9` mid-stream, a torn or corrupt segment tail is cut back to its valid prefix with the
//! indexes rebuilt, and an idempotent retry after a crash is still deduplicated.
//!
//! Each test spawns `target/<profile>/strata` on an ephemeral port with a temporary data dir and
//! small segments (64 KiB), so every scenario crosses several segment rolls. What `kill -9`
//! proves here: Strata acknowledges a produce once its `write()` reached the page cache (the
//! default, as Kafka with `flush.messages` unset). SIGKILL ends the process but not the OS, so
//! the page cache survives and nothing acknowledged may be missing; what is tested is that
//! recovery keeps all of it, drops nothing valid, duplicates nothing and leaves every segment
//! readable. Losing power is a different test (it needs the fsync-before-ack mode).
//!
//! No assertion depends on timing: the producer runs until it has a number of acks, the kill
//! lands wherever the stream is, and the checks hold for any kill point.
mod common;
use common::process::*;
use common::txn::*;
use common::*;

use std::collections::{HashMap, HashSet};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::{Buf, BufMut, Bytes, BytesMut};
use strata::protocol::codec::{Decode, Encode};
use strata::protocol::header::RequestHeader;
use strata::protocol::messages::*;
use strata::protocol::records::batch::{check_batch, parse_header};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// The clean-shutdown marker Strata writes in each log dir (Kafka's name).
const CLEAN_SHUTDOWN_MARKER: &str = ".kafka_cleanshutdown";

/// One uncompressed batch of `values` stamped with the current time (producer expiration,
/// retention and segment.ms all measure record timestamps against the broker's clock, so
/// old timestamps would make the broker expire producers or roll and delete segments).
fn fresh_batch(values: &[&[u8]], producer: Option<(i64, i16, i32)>) -> Bytes {
    let (pid, epoch, seq) = producer.unwrap_or((-1, -1, -1));
    let now_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock after 1970")
        .as_millis() as i64;
    let mut b = strata::protocol::records::RecordBatchBuilder::new(0)
        .producer(pid, epoch, seq)
        .base_timestamp_ms(now_ms);
    for (i, v) in values.iter().enumerate() {
        b.push_record(strata::protocol::records::Record {
            offset_delta: i as i32,
            timestamp_delta: 0,
            key: None,
            value: Some(Bytes::copy_from_slice(v)),
            headers: vec![],
        });
    }
    b.build().freeze()
}

async fn init_producer_id(c: &mut Client) -> (i64, i16) {
    use init_producer_id_request::*;
    let r = api_call!(
        c,
        init_producer_id_request::InitProducerIdRequest,
        init_producer_id_response::InitProducerIdResponse,
        4,
        InitProducerIdRequest {
            transactional_id: None,
            transaction_timeout_ms: -1,
            producer_id: -1,
            producer_epoch: -1,
            ..Default::default()
        }
    );
    assert_eq!(r.error_code, 0, "InitProducerId");
    (r.producer_id, r.producer_epoch)
}

/// One Fetch (v12) at `offset`: (error code, high watermark, record bytes).
async fn fetch_once(c: &mut Client, topic: &str, offset: i64) -> (i16, i64, Bytes) {
    let p = fetch_partition(c, topic, offset, 0, 256 << 10).await;
    (
        p.error_code,
        p.high_watermark,
        p.records.unwrap_or_default(),
    )
}

/// A fetched batch: base offset, last offset, records as (offset, value).
type FetchedBatch = (i64, i64, Vec<(i64, Vec<u8>)>);

/// Splits fetched bytes into batches, checking each batch's framing and CRC-32C, and returns
/// (base offset, last offset, records as (offset, value)) per batch. A partial batch at the end
/// (cut by the fetch size) is ignored, as clients do.
fn batches_of(bytes: &[u8]) -> Vec<FetchedBatch> {
    let mut out = vec![];
    let mut pos = 0;
    while pos + 61 <= bytes.len() {
        let h = parse_header(&bytes[pos..]).expect("header");
        let end = pos + h.total_size();
        if end > bytes.len() {
            break;
        }
        if let Err(e) = check_batch(&bytes[pos..end]) {
            panic!(
                "fetched batch at offset {} is invalid: {e:?}",
                h.base_offset
            );
        }
        let records = strata::protocol::records::decode_records(&bytes[pos..end], 1 << 30)
            .expect("records decode")
            .into_iter()
            .map(|r| {
                (
                    h.base_offset + r.offset_delta as i64,
                    r.value.map(|v| v.to_vec()).unwrap_or_default(),
                )
            })
            .collect();
        out.push((h.base_offset, h.last_offset(), records));
        pos = end;
    }
    out
}

/// Reads the whole partition from offset 0 to the high watermark and asserts that the offsets
/// are exactly 0..hw, each once. Returns the values by offset.
async fn read_all(c: &mut Client, topic: &str) -> Vec<Vec<u8>> {
    let mut values: Vec<Vec<u8>> = vec![];
    loop {
        let next = values.len() as i64;
        let (err, hw, bytes) = fetch_once(c, topic, next).await;
        assert_eq!(err, 0, "fetch at {next}");
        if next >= hw {
            assert_eq!(next, hw, "read past the high watermark");
            return values;
        }
        let batches = batches_of(&bytes);
        assert!(
            !batches.is_empty(),
            "fetch at {next} < hw {hw} returned no batch"
        );
        for (_, _, records) in batches {
            for (offset, value) in records {
                if offset < values.len() as i64 {
                    continue; // the head of the batch holding `next`
                }
                assert_eq!(offset, values.len() as i64, "gap or reorder in offsets");
                values.push(value);
            }
        }
    }
}

/// One batch found on disk: (position in its file, size, base offset, last offset).
type DiskBatch = (u64, u64, i64, i64);

/// The partition dir of `topic`-0 under `data`.
fn partition_dir(data: &Path, topic: &str) -> PathBuf {
    data.join(format!("{topic}-0"))
}

fn segment_bases(pdir: &Path) -> Vec<i64> {
    let mut bases: Vec<i64> = std::fs::read_dir(pdir)
        .expect("list partition dir")
        .filter_map(|e| {
            let name = e.ok()?.file_name().to_string_lossy().into_owned();
            name.strip_suffix(".log")?.parse().ok()
        })
        .collect();
    bases.sort_unstable();
    bases
}

fn seg_path(pdir: &Path, base: i64, suffix: &str) -> PathBuf {
    pdir.join(format!("{base:020}{suffix}"))
}

/// Every batch of one `.log` file; panics unless the file is whole valid batches end to end.
fn read_segment(path: &Path) -> Vec<DiskBatch> {
    let data = std::fs::read(path).expect("read segment");
    let mut out = vec![];
    let mut pos = 0usize;
    while pos < data.len() {
        let h = check_batch(&data[pos..])
            .unwrap_or_else(|e| panic!("{}: bad batch at {pos}: {e:?}", path.display()));
        let size = h.total_size();
        out.push((pos as u64, size as u64, h.base_offset, h.last_offset()));
        pos += size;
    }
    out
}

/// Offline check of a stopped broker's partition: every segment is valid batches end to end,
/// offsets are contiguous across segments, each segment starts at its base offset, and every
/// `.index` / `.timeindex` entry is sane (an index entry names the last offset of the batch
/// that starts at its position, as Kafka's). Returns the log end offset.
fn check_partition_files(pdir: &Path) -> i64 {
    let mut next = 0i64;
    for base in segment_bases(pdir) {
        let batches = read_segment(&seg_path(pdir, base, ".log"));
        if let Some(first) = batches.first() {
            assert_eq!(first.2, base, "segment {base} starts at its base offset");
        }
        let mut by_pos: HashMap<u64, i64> = HashMap::new();
        for &(pos, _, b, last) in &batches {
            assert_eq!(b, next, "segment {base}: offsets contiguous");
            next = last + 1;
            by_pos.insert(pos, last);
        }
        let index = std::fs::read(seg_path(pdir, base, ".index")).expect("read .index");
        assert_eq!(
            index.len() % 8,
            0,
            "segment {base}: .index of whole entries"
        );
        let mut prev = -1i64;
        for e in index.chunks(8) {
            let rel = u32::from_be_bytes(e[..4].try_into().unwrap()) as i64;
            let pos = u32::from_be_bytes(e[4..].try_into().unwrap()) as u64;
            assert_eq!(
                by_pos.get(&pos),
                Some(&(base + rel)),
                "segment {base}: index entry ({rel}, {pos}) names a batch start and its last offset"
            );
            assert!(base + rel > prev, "segment {base}: index offsets grow");
            prev = base + rel;
        }
        let tindex = std::fs::read(seg_path(pdir, base, ".timeindex")).expect("read .timeindex");
        assert_eq!(
            tindex.len() % 12,
            0,
            "segment {base}: .timeindex of whole entries"
        );
        let (mut prev_ts, mut prev_off) = (-1i64, -1i64);
        for e in tindex.chunks(12) {
            let ts = i64::from_be_bytes(e[..8].try_into().unwrap());
            let off = base + u32::from_be_bytes(e[8..].try_into().unwrap()) as i64;
            assert!(
                ts > prev_ts && off >= prev_off && off >= base && off < next,
                "segment {base}: time index entry ({ts}, {off}) in range and growing"
            );
            (prev_ts, prev_off) = (ts, off);
        }
    }
    next
}

/// Writes a request frame without waiting for the answer (pipelining).
async fn send_frame<R: Encode>(
    stream: &mut tokio::net::TcpStream,
    correlation_id: i32,
    version: i16,
    req: &R,
) -> std::io::Result<()> {
    let header = RequestHeader {
        api_key: produce_request::ProduceRequest::API_KEY,
        api_version: version,
        correlation_id,
        client_id: Some("strata-durability".into()),
        unknown_tagged_fields: vec![],
    };
    let mut body = BytesMut::new();
    header.encode(&mut body, 2);
    req.encode(&mut body, version);
    let mut frame = BytesMut::with_capacity(body.len() + 4);
    frame.put_i32(body.len() as i32);
    frame.put_slice(&body);
    stream.write_all(&frame).await
}

/// Reads one Produce v9 response; None once the connection is gone.
async fn recv_produce(
    stream: &mut tokio::net::TcpStream,
) -> Option<(i32, produce_response::ProduceResponse)> {
    let size = stream.read_i32().await.ok()?;
    let mut buf = vec![0u8; size.max(0) as usize];
    stream.read_exact(&mut buf).await.ok()?;
    let mut b = Bytes::from(buf);
    let correlation_id = b.get_i32();
    let _tagged_fields = b.get_u8();
    let r = produce_response::ProduceResponse::decode(&mut b, 9).ok()?;
    Some((correlation_id, r))
}

/// The value of record `j` of producer request `n`: unique, self-describing, ~200 bytes.
fn value_of(n: usize, j: usize) -> Vec<u8> {
    let mut v = format!("req{n:07}-rec{j}-").into_bytes();
    v.resize(200, b'.');
    v
}

/// An acknowledged record: (offset, value).
type Acked = (i64, Vec<u8>);

const RECORDS_PER_BATCH: usize = 5;
const PIPELINE_DEPTH: usize = 4;

/// Produces with acks=-1, keeping PIPELINE_DEPTH requests in flight on one connection, until
/// the connection breaks. Every acknowledged (offset, value) goes into `acked`; every value
/// ever sent into `sent`.
async fn produce_until_killed(
    addr: SocketAddr,
    topic: String,
    acked: Arc<Mutex<Vec<Acked>>>,
    sent: Arc<Mutex<HashSet<Vec<u8>>>>,
    acks: Arc<AtomicUsize>,
) {
    let Ok(mut stream) = tokio::net::TcpStream::connect(addr).await else {
        return;
    };
    let mut in_flight = std::collections::VecDeque::new();
    for n in 0.. {
        let values: Vec<Vec<u8>> = (0..RECORDS_PER_BATCH).map(|j| value_of(n, j)).collect();
        let refs: Vec<&[u8]> = values.iter().map(|v| v.as_slice()).collect();
        sent.lock().unwrap().extend(values.iter().cloned());
        let corr = n as i32;
        if send_frame(
            &mut stream,
            corr,
            9,
            &produce_req(&topic, fresh_batch(&refs, None)),
        )
        .await
        .is_err()
        {
            return;
        }
        in_flight.push_back((corr, values));
        while in_flight.len() >= PIPELINE_DEPTH {
            let Some((corr, resp)) = recv_produce(&mut stream).await else {
                return;
            };
            let (want, values) = in_flight.pop_front().expect("in flight");
            assert_eq!(corr, want, "responses in request order");
            let p = &resp.responses[0].partition_responses[0];
            assert_eq!(p.error_code, 0, "produce error");
            let mut a = acked.lock().unwrap();
            for (j, v) in values.into_iter().enumerate() {
                a.push((p.base_offset + j as i64, v));
            }
            acks.fetch_add(1, Ordering::SeqCst);
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acknowledged_records_survive_kill_9_mid_stream() {
    let data = tempfile::tempdir().expect("tempdir");
    let topic = "durable";
    let broker = Strata::spawn(data.path());
    create_topic(&mut Client::connect(broker.addr).await, topic).await;

    let acked = Arc::new(Mutex::new(Vec::new()));
    let sent = Arc::new(Mutex::new(HashSet::new()));
    let acks = Arc::new(AtomicUsize::new(0));
    let producer = tokio::spawn(produce_until_killed(
        broker.addr,
        topic.to_string(),
        acked.clone(),
        sent.clone(),
        acks.clone(),
    ));
    // ~1 KiB per request: 600 acks are ~10 segments of 64 KiB. Poll the counter; the kill
    // lands mid-stream with requests in flight, wherever that is.
    while acks.load(Ordering::SeqCst) < 600 {
        assert!(!producer.is_finished(), "producer stopped early");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    broker.kill9();
    producer.await.expect("producer task");
    let acked = std::mem::take(&mut *acked.lock().unwrap());
    let sent = std::mem::take(&mut *sent.lock().unwrap());

    let broker = Strata::spawn(data.path());
    let values = read_all(&mut Client::connect(broker.addr).await, topic).await;
    // Every acknowledged record once, at its acknowledged offset, in order.
    assert!(acked.len() >= 600 * RECORDS_PER_BATCH);
    for (offset, value) in &acked {
        assert_eq!(
            values.get(*offset as usize),
            Some(value),
            "acknowledged record at offset {offset}"
        );
    }
    // Anything beyond the acks was really sent (an unacknowledged request that made it to the
    // page cache) and nothing is there twice.
    let distinct: HashSet<&Vec<u8>> = values.iter().collect();
    assert_eq!(distinct.len(), values.len(), "no record stored twice");
    assert!(values.iter().all(|v| sent.contains(v)), "only sent records");

    // The log keeps going at the recovered end, and every segment is valid end to end.
    let mut c = Client::connect(broker.addr).await;
    let (err, base) = produce(&mut c, topic, fresh_batch(&[b"after-restart"], None)).await;
    assert_eq!((err, base), (0, values.len() as i64));
    broker.stop();
    let pdir = partition_dir(data.path(), topic);
    assert!(segment_bases(&pdir).len() >= 5, "several segments rolled");
    assert_eq!(check_partition_files(&pdir), values.len() as i64 + 1);
}

/// The deterministic value stored at `offset` by `fill` (one producer, acks=-1, in order).
fn value_at(offset: i64) -> Vec<u8> {
    let mut v = format!("offset-{offset:08}-").into_bytes();
    v.resize(150, b'#');
    v
}

/// Produces `batches` batches of 5 records in order, so record `o` has value `value_at(o)`.
async fn fill(c: &mut Client, topic: &str, batches: usize) {
    for n in 0..batches {
        let values: Vec<Vec<u8>> = (0..5).map(|j| value_at((n * 5 + j) as i64)).collect();
        let refs: Vec<&[u8]> = values.iter().map(|v| v.as_slice()).collect();
        assert_eq!(
            produce(c, topic, fresh_batch(&refs, None)).await,
            (0, n as i64 * 5)
        );
    }
}

/// Fetches at `offset` and asserts that the first batch returned contains it.
async fn assert_fetch_finds(c: &mut Client, topic: &str, offset: i64) {
    let (err, _, bytes) = fetch_once(c, topic, offset).await;
    assert_eq!(err, 0, "fetch at {offset}");
    let batches = batches_of(&bytes);
    let (base, last, records) = batches.first().expect("a batch");
    assert!(
        *base <= offset && offset <= *last,
        "batch {base}..={last} holds {offset}"
    );
    for (o, v) in records {
        assert_eq!(v, &value_at(*o));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn torn_or_corrupt_segment_tail_is_cut_to_the_valid_prefix() {
    let data = tempfile::tempdir().expect("tempdir");
    let topic = "torn";
    let pdir = partition_dir(data.path(), topic);
    let broker = Strata::spawn(data.path());
    let mut c = Client::connect(broker.addr).await;
    create_topic(&mut c, topic).await;
    // 400 batches of ~800 bytes: ~5 segments of 64 KiB.
    fill(&mut c, topic, 400).await;
    drop(c);
    broker.stop();
    assert_eq!(check_partition_files(&pdir), 2000);

    // Round 1, after a clean stop: cut the last segment in the middle of a batch and append
    // garbage, as a torn write would leave it.
    let bases = segment_bases(&pdir);
    assert!(bases.len() >= 4, "several segments rolled: {bases:?}");
    let last_base = *bases.last().unwrap();
    let last_log = seg_path(&pdir, last_base, ".log");
    let batches = read_segment(&last_log);
    assert!(batches.len() >= 10, "last segment has batches to cut");
    let k = batches.len() / 2;
    let (pos, size, cut_base, _) = batches[k];
    {
        let f = std::fs::OpenOptions::new()
            .write(true)
            .open(&last_log)
            .expect("open");
        f.set_len(pos + size / 2).expect("truncate");
        use std::io::Write;
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(&last_log)
            .expect("open");
        f.write_all(&[0xA5; 333]).expect("garbage");
    }
    let broker = Strata::spawn(data.path());
    let mut c = Client::connect(broker.addr).await;
    let values = read_all(&mut c, topic).await;
    assert_eq!(
        values.len() as i64,
        cut_base,
        "valid prefix kept, torn tail gone"
    );
    for (o, v) in values.iter().enumerate() {
        assert_eq!(v, &value_at(o as i64), "record {o}");
    }
    // The rebuilt offset index serves fetches inside the recovered range of that segment and
    // of an earlier one.
    for o in [
        last_base,
        last_base + 3,
        batches[k / 2].2 + 2,
        cut_base - 1,
        bases[1] + 7,
    ] {
        assert_fetch_finds(&mut c, topic, o).await;
    }
    // New produces continue at the recovered end.
    let values5: Vec<Vec<u8>> = (cut_base..cut_base + 5).map(value_at).collect();
    let refs: Vec<&[u8]> = values5.iter().map(|v| v.as_slice()).collect();
    assert_eq!(
        produce(&mut c, topic, fresh_batch(&refs, None)).await,
        (0, cut_base)
    );
    assert_fetch_finds(&mut c, topic, cut_base + 4).await;
    drop(c);
    broker.stop();
    let leo = cut_base + 5;
    assert_eq!(check_partition_files(&pdir), leo);

    // Round 2, shaped like a crash: flip one byte inside the last batch (its CRC no longer
    // matches) and remove the clean-shutdown marker, so start-up runs full recovery.
    let last_log = seg_path(&pdir, *segment_bases(&pdir).last().unwrap(), ".log");
    let batches = read_segment(&last_log);
    let (pos, size, bad_base, _) = *batches.last().unwrap();
    {
        use std::os::unix::fs::FileExt;
        let f = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(&last_log)
            .expect("open");
        let at = pos + size - 10;
        let mut b = [0u8; 1];
        f.read_exact_at(&mut b, at).expect("read");
        f.write_all_at(&[b[0] ^ 0xFF], at).expect("flip");
    }
    std::fs::remove_file(data.path().join(CLEAN_SHUTDOWN_MARKER)).expect("marker exists");
    let broker = Strata::spawn(data.path());
    let mut c = Client::connect(broker.addr).await;
    let values = read_all(&mut c, topic).await;
    assert_eq!(values.len() as i64, bad_base, "corrupt batch dropped");
    assert_eq!(bad_base, leo - 5);
    assert!(broker.logged("truncated a segment's tail"));
    assert_fetch_finds(&mut c, topic, bad_base - 1).await;
    assert_eq!(
        produce(&mut c, topic, fresh_batch(&refs, None)).await,
        (0, bad_base)
    );
    drop(c);
    broker.stop();
    assert_eq!(check_partition_files(&pdir), bad_base + 5);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idempotent_retry_after_kill_9_is_deduplicated() {
    let data = tempfile::tempdir().expect("tempdir");
    let topic = "idem";
    let broker = Strata::spawn(data.path());
    let mut c = Client::connect(broker.addr).await;
    create_topic(&mut c, topic).await;
    let (pid, epoch) = init_producer_id(&mut c).await;
    let b0 = fresh_batch(&[b"a0", b"a1", b"a2"], Some((pid, epoch, 0)));
    let b1 = fresh_batch(&[b"b0", b"b1"], Some((pid, epoch, 3)));
    assert_eq!(produce(&mut c, topic, b0.clone()).await, (0, 0));
    // This ack is "lost": the producer only sees the connection die, so it will retry.
    assert_eq!(produce(&mut c, topic, b1.clone()).await, (0, 3));
    drop(c);
    broker.kill9();

    let broker = Strata::spawn(data.path());
    let mut c = Client::connect(broker.addr).await;
    // The retry of the last batch, and of an older one, get their original offsets.
    assert_eq!(produce(&mut c, topic, b1.clone()).await, (0, 3));
    assert_eq!(produce(&mut c, topic, b0.clone()).await, (0, 0));
    // The sequence continues where the log says it is.
    let b2 = fresh_batch(&[b"c0"], Some((pid, epoch, 5)));
    assert_eq!(produce(&mut c, topic, b2).await, (0, 5));
    let gap = fresh_batch(&[b"d0"], Some((pid, epoch, 9)));
    assert_eq!(
        produce(&mut c, topic, gap).await.0,
        strata::error::ErrorCode::OUT_OF_ORDER_SEQUENCE_NUMBER.code()
    );
    let values = read_all(&mut c, topic).await;
    let want: Vec<&[u8]> = vec![b"a0", b"a1", b"a2", b"b0", b"b1", b"c0"];
    assert_eq!(values, want.iter().map(|v| v.to_vec()).collect::<Vec<_>>());
}

/// kill -9 with one transaction committed, one aborted and one still open: after restart the
/// committed data is visible to read_committed, the aborted and the open ones never are, and the
/// open one is aborted by the restarted coordinator when its timeout passes, unblocking the LSO.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn open_transactions_are_aborted_after_kill_9_and_never_visible() {
    let dir = tempfile::tempdir().unwrap();
    let broker = Strata::spawn(dir.path());
    let mut c = Client::connect(broker.addr).await;
    create_topic(&mut c, "txk").await;
    let p1 = txn_init(&mut c, "tx-one", 2_000).await;
    txn_add(&mut c, "tx-one", p1, "txk").await;
    assert_eq!(
        produce_as(
            &mut c,
            Some("tx-one"),
            "txk",
            txn_batch(&["a0", "a1"], (p1.0, p1.1, 0))
        )
        .await
        .0,
        0
    );
    txn_end(&mut c, "tx-one", p1, true).await;
    txn_add(&mut c, "tx-one", p1, "txk").await;
    assert_eq!(
        produce_as(
            &mut c,
            Some("tx-one"),
            "txk",
            txn_batch(&["b0", "b1"], (p1.0, p1.1, 2))
        )
        .await
        .0,
        0
    );
    txn_end(&mut c, "tx-one", p1, false).await;
    let p2 = txn_init(&mut c, "tx-two", 2_000).await;
    txn_add(&mut c, "tx-two", p2, "txk").await;
    assert_eq!(
        produce_as(
            &mut c,
            Some("tx-two"),
            "txk",
            txn_batch(&["open0", "open1"], (p2.0, p2.1, 0))
        )
        .await
        .0,
        0
    );
    txn_add(&mut c, "tx-one", p1, "txk").await;
    assert_eq!(
        produce_as(
            &mut c,
            Some("tx-one"),
            "txk",
            txn_batch(&["c0"], (p1.0, p1.1, 4))
        )
        .await
        .0,
        0
    );
    txn_end(&mut c, "tx-one", p1, true).await;
    drop(c);
    broker.kill9();

    let broker = Strata::spawn(dir.path());
    let mut c = Client::connect(broker.addr).await;
    let (committed, lso) = visible(&mut c, "txk", 1).await;
    assert_eq!(
        committed,
        vec!["a0", "a1"],
        "only what precedes the open transaction is stable"
    );
    assert_eq!(
        lso, 6,
        "LSO held at the first offset of the open transaction"
    );
    // The restarted coordinator aborts the open transaction once its 2 s timeout passes.
    let mut settled = Vec::new();
    for _ in 0..100 {
        tokio::time::sleep(Duration::from_millis(100)).await;
        let (v, lso) = visible(&mut c, "txk", 1).await;
        if lso >= 9 {
            settled = v;
            break;
        }
    }
    assert_eq!(
        settled,
        vec!["a0", "a1", "c0"],
        "committed data visible, aborted and timed-out data never"
    );
    let (all, _) = visible(&mut c, "txk", 0).await;
    for v in ["a0", "b0", "open0", "c0"] {
        assert!(
            all.iter().any(|x| x == v),
            "read_uncommitted sees {v}: {all:?}"
        );
    }
    broker.stop();
}
