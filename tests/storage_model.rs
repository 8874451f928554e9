//! Model test of the partition log (DESIGN §7): seeded random sequences of appends, rolls
//! (small segment and index sizes), truncations, clean reopens and crashes (drop without close,
//! then cut a segment file at a random byte and/or append garbage) checked against a plain
//! in-memory list of the batches that must survive. `STRATA_MODEL_SEEDS=n` runs more seeds.

use std::path::{Path, PathBuf};

use bytes::BytesMut;
use strata::protocol::records::batch::{
    parse_header, set_base_offset, set_partition_leader_epoch, BatchIter,
};
use strata::protocol::records::testutil::{build_test_batch, TestBatch};
use strata::storage::{LogConfig, PartitionLog};

/// xorshift64*: deterministic, no dependency.
#[path = "common/rng.rs"]
mod rng;
use rng::Rng;

struct Model {
    /// Stored batches (with their assigned offsets and epoch), in order.
    batches: Vec<Vec<u8>>,
    log_end_offset: i64,
}

impl Model {
    fn last_offset(b: &[u8]) -> i64 {
        parse_header(b).map(|h| h.last_offset()).unwrap_or(-1)
    }
    fn base_offset(b: &[u8]) -> i64 {
        parse_header(b).map(|h| h.base_offset).unwrap_or(-1)
    }
    /// The log end offset a reopened log derives from its files.
    fn derived_leo(&self, last_segment_base: i64) -> i64 {
        match self.batches.last() {
            Some(b) if Self::base_offset(b) >= last_segment_base => Self::last_offset(b) + 1,
            _ => last_segment_base,
        }
    }
}

fn config(rng: &mut Rng) -> LogConfig {
    LogConfig {
        segment_bytes: 300 + rng.below(1500),
        index_interval_bytes: 50 + rng.below(300) as u32,
        // Small index files so that "index full" rolls happen too.
        segment_index_bytes: 48 + rng.below(400) as u32,
        ..LogConfig::default()
    }
}

fn read_all(log: &PartitionLog, rng: &mut Rng) -> Vec<u8> {
    let mut out = Vec::new();
    let mut next = log.log_start_offset();
    let end = log.log_end_offset();
    while next < end {
        let max_bytes = 1 + rng.below(600) as usize;
        let r = log.read(next, max_bytes, i64::MAX, true).expect("read");
        if r.records.is_empty() {
            break;
        }
        let mut last = next;
        for (h, _) in BatchIter::new(&r.records) {
            last = h.last_offset();
        }
        out.extend_from_slice(&r.records);
        next = last + 1;
    }
    out
}

fn segment_path(dir: &Path, base: i64) -> PathBuf {
    dir.join(format!("{base:020}.log"))
}

fn run_seed(seed: u64, ops: usize) {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("model-topic-0");
    let mut rng = Rng::seeded(seed);
    let cfg = config(&mut rng);
    let mut log = Some(PartitionLog::open(dir.clone(), cfg.clone(), 0, true, 0).expect("open"));
    let mut model = Model {
        batches: Vec::new(),
        log_end_offset: 0,
    };
    let mut epoch = 0;
    for step in 0..ops {
        let l = log.as_ref().expect("open log");
        let ctx = format!("seed {seed} step {step}");
        match rng.below(100) {
            0..=59 => {
                let n = 1 + rng.below(3);
                let mut payload = BytesMut::new();
                let mut expected = Vec::new();
                let mut next = model.log_end_offset;
                if rng.below(10) == 0 {
                    epoch += 1;
                }
                for _ in 0..n {
                    let records = 1 + rng.below(5) as usize;
                    let b = build_test_batch(&TestBatch {
                        records,
                        base_timestamp: 1000 + step as i64,
                        value_len: rng.below(40) as usize,
                        seed: rng.next(),
                        ..TestBatch::default()
                    });
                    payload.extend_from_slice(&b);
                    let mut stored = b;
                    set_base_offset(&mut stored, next);
                    set_partition_leader_epoch(&mut stored, epoch);
                    next += records as i64;
                    expected.push(stored);
                }
                let info = l
                    .append_as_leader(payload, epoch, None, step as i64)
                    .expect("append");
                assert_eq!(info.first_offset, model.log_end_offset, "{ctx}");
                assert_eq!(info.last_offset, next - 1, "{ctx}");
                model.batches.extend(expected);
                model.log_end_offset = next;
            }
            60..=69 => {
                // Truncate to a random offset at or after the log start (Kafka semantics: the
                // batch holding it goes whole, the log end offset becomes the target).
                let start = l.log_start_offset();
                if model.log_end_offset > start {
                    let t = start + rng.below((model.log_end_offset - start) as u64) as i64;
                    l.truncate_to(t).expect("truncate");
                    model.batches.retain(|b| Model::last_offset(b) < t);
                    model.log_end_offset = t;
                }
            }
            70..=79 => {
                let bases = l.segment_base_offsets();
                l.close().expect("close");
                drop(log.take());
                let reopened = PartitionLog::open(dir.clone(), cfg.clone(), 0, true, step as i64)
                    .expect("reopen");
                model.log_end_offset = model.derived_leo(*bases.last().expect("a segment"));
                log = Some(reopened);
            }
            _ => {
                // Crash: drop without close, then damage a segment.
                let bases = l.segment_base_offsets();
                let recovery_point = l.recovery_point();
                drop(log.take());
                let which = if rng.below(3) == 0 {
                    rng.below(bases.len() as u64) as usize
                } else {
                    bases.len() - 1
                };
                let base = bases[which];
                let next_base = bases.get(which + 1).copied().unwrap_or(i64::MAX);
                let in_seg: Vec<usize> = (0..model.batches.len())
                    .filter(|&i| {
                        let o = Model::base_offset(&model.batches[i]);
                        o >= base && o < next_base
                    })
                    .collect();
                let seg_len: usize = in_seg.iter().map(|&i| model.batches[i].len()).sum();
                let path = segment_path(&dir, base);
                let last = which == bases.len() - 1;
                let cut = if last {
                    rng.below(seg_len as u64 + 1) as usize
                } else if seg_len > 0 {
                    // Inside a batch, so recovery sees a torn batch and drops later segments.
                    let k = in_seg[rng.below(in_seg.len() as u64) as usize];
                    let start: usize = in_seg
                        .iter()
                        .take_while(|&&i| i < k)
                        .map(|&i| model.batches[i].len())
                        .sum();
                    start + 1 + rng.below(model.batches[k].len() as u64 - 1) as usize
                } else {
                    0
                };
                let f = std::fs::OpenOptions::new()
                    .write(true)
                    .open(&path)
                    .expect("open segment");
                f.set_len(cut as u64).expect("cut");
                if last && rng.below(2) == 0 {
                    let garbage: Vec<u8> =
                        (0..1 + rng.below(100)).map(|_| rng.next() as u8).collect();
                    use std::os::unix::fs::FileExt;
                    f.write_all_at(&garbage, cut as u64).expect("garbage");
                }
                drop(f);
                // Survivors: everything before this segment, and its batches wholly before the cut.
                let mut pos = 0usize;
                let mut keep = Vec::new();
                for (i, b) in model.batches.iter().enumerate() {
                    let o = Model::base_offset(b);
                    if o < base {
                        keep.push(b.clone());
                    } else if o < next_base && in_seg.contains(&i) {
                        if pos + b.len() <= cut {
                            keep.push(b.clone());
                        }
                        pos += b.len();
                    }
                }
                let damaged_mid = !last && seg_len > 0;
                model.batches = keep;
                let rp = if last { recovery_point } else { 0 };
                let reopened = PartitionLog::open(dir.clone(), cfg.clone(), rp, false, step as i64)
                    .expect("recover");
                let last_base = if damaged_mid {
                    base
                } else {
                    *bases.last().expect("a segment")
                };
                model.log_end_offset = model.derived_leo(last_base);
                log = Some(reopened);
            }
        }
        let l = log.as_ref().expect("open log");
        assert_eq!(
            l.log_end_offset(),
            model.log_end_offset,
            "{ctx}: log end offset"
        );
        if step % 5 == 0 || step + 1 == ops {
            let got = read_all(l, &mut rng);
            let want: Vec<u8> = model.batches.concat();
            if got != want {
                let g: Vec<i64> = BatchIter::new(&got).map(|(h, _)| h.base_offset).collect();
                let w: Vec<i64> = BatchIter::new(&want).map(|(h, _)| h.base_offset).collect();
                panic!("{ctx}: contents differ\n got bases {g:?}\nwant bases {w:?}");
            }
        }
    }
}

#[test]
fn random_operations_match_the_model() {
    let seeds: u64 = std::env::var("STRATA_MODEL_SEEDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(12);
    for seed in 0..seeds {
        run_seed(seed, 80);
    }
}
