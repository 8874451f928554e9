//! Seeded robustness run over every request API key and version: random byte strings and
//! mutated valid encodings (bit flips, truncations, huge lengths) must decode to `Ok` or
//! `Err` — never panic — quickly, and without allocating more than the input warrants.
//! The cargo-fuzz target `fuzz/fuzz_targets/decode_request.rs` explores the same surface
//! without a seed budget.

use std::time::{Duration, Instant};

use super::support::{allocated_bytes, visit_every_message, TestMessage, TestRng, Visitor};
use crate::protocol::codec::*;
use crate::protocol::header::{request_header_version, RequestHeader};
use crate::protocol::messages::validate_request;

const RANDOM_INPUTS: usize = 200;
const MUTATIONS: usize = 200;
/// Wall-clock bound for one decode; generous so a loaded CI machine does not flake, yet far
/// below what a quadratic or allocation-bound decoder would take.
const MAX_DECODE: Duration = Duration::from_millis(50);

/// Allocation allowed for decoding `n` input bytes. Zero-copy bytes cost nothing; each input
/// byte can at most start an array element or string byte, and the biggest generated struct
/// is a few hundred bytes; doubling growth adds a factor of two.
fn allocation_budget(n: usize) -> u64 {
    64 * 1024 + 2048 * n as u64
}

#[derive(Default)]
struct Robustness {
    decodes: usize,
    worst_ratio: f64,
    failures: Vec<String>,
}

impl Robustness {
    fn check(&mut self, name: &str, api_key: i16, version: i16, input: &Bytes) {
        self.decodes += 1;
        let (took, used) = decode_once(api_key, version, input);
        if used > allocation_budget(input.len()) {
            self.failures.push(format!(
                "{name} v{version}: allocated {used} bytes for {} bytes {input:?}",
                input.len()
            ));
        }
        self.worst_ratio = self
            .worst_ratio
            .max(used as f64 / (input.len() as f64 + 1.0));
        // A slow decode of a slow input is deterministic; a preempted thread on a loaded
        // machine is not, so only a decode that is slow three times in a row counts.
        if took > MAX_DECODE && (0..2).all(|_| decode_once(api_key, version, input).0 > MAX_DECODE)
        {
            self.failures.push(format!(
                "{name} v{version}: {took:?} for {} bytes {input:?}",
                input.len()
            ));
        }
    }
}

/// Decodes `input` as the body of (api_key, version), bare and behind a request header as a
/// connection would see it; returns the time taken and the bytes allocated beyond the frame.
fn decode_once(api_key: i16, version: i16, input: &Bytes) -> (Duration, u64) {
    let before = allocated_bytes();
    let start = Instant::now();
    let _ = validate_request(api_key, version, &mut input.clone());
    let mut frame = BytesMut::with_capacity(input.len() + 16);
    RequestHeader {
        api_key,
        api_version: version,
        correlation_id: 1,
        client_id: Some("r".into()),
        ..Default::default()
    }
    .encode(&mut frame, request_header_version(api_key, version));
    frame.extend_from_slice(input);
    let mut frame = frame.freeze();
    let framed_len = frame.len();
    if let Ok((h, _)) = RequestHeader::decode_detect(&mut frame) {
        let _ = validate_request(h.api_key, h.api_version, &mut frame);
    }
    let took = start.elapsed();
    let used = (allocated_bytes() - before).saturating_sub(framed_len as u64 + 64);
    (took, used)
}

fn random_bytes(rng: &mut TestRng) -> Bytes {
    let n = rng.below(64);
    Bytes::from((0..n).map(|_| rng.next_u64() as u8).collect::<Vec<u8>>())
}

/// A valid encoding with one mutation: bit flip, truncation, or a huge length/varint written
/// over some position.
fn mutate(rng: &mut TestRng, valid: &Bytes) -> Bytes {
    let mut v = valid.to_vec();
    if v.is_empty() {
        return random_bytes(rng);
    }
    match rng.below(5) {
        0 => {
            let i = rng.below(v.len());
            v[i] ^= 1 << rng.below(8);
        }
        1 => v.truncate(rng.below(v.len())),
        2 => {
            // Huge classic array/bytes length.
            let i = rng.below(v.len());
            for (k, b) in [0x7f, 0xff, 0xff, 0xff].into_iter().enumerate() {
                if i + k < v.len() {
                    v[i + k] = b;
                }
            }
        }
        3 => {
            // Huge compact length (uvarint 0xffffffff).
            let i = rng.below(v.len());
            let tail = v.split_off(i);
            v.extend_from_slice(&[0xff, 0xff, 0xff, 0xff, 0x0f]);
            v.extend_from_slice(&tail[tail.len().min(1)..]);
        }
        _ => {
            // Negative length (-2) where a length may sit.
            let i = rng.below(v.len());
            for (k, b) in [0xff, 0xfe].into_iter().enumerate() {
                if i + k < v.len() {
                    v[i + k] = b;
                }
            }
        }
    }
    Bytes::from(v)
}

impl Visitor for Robustness {
    fn visit<T: TestMessage>(
        &mut self,
        name: &'static str,
        kind: &'static str,
        api_key: i16,
        min: i16,
        max: i16,
    ) {
        if kind != "request" {
            return;
        }
        for version in min..=max {
            let mut rng =
                TestRng::new(0x5EED ^ ((api_key as u64) << 20) ^ ((version as u64) << 40));
            for _ in 0..RANDOM_INPUTS {
                let input = random_bytes(&mut rng);
                self.check(name, api_key, version, &input);
            }
            for _ in 0..MUTATIONS {
                let valid = T::sample(&mut rng, version).to_bytes(version);
                let input = mutate(&mut rng, &valid);
                self.check(name, api_key, version, &input);
            }
        }
    }
}

#[test]
fn random_and_mutated_requests_never_panic() {
    let mut r = Robustness::default();
    visit_every_message(&mut r);
    assert!(r.decodes > 10_000, "only {} decodes", r.decodes);
    assert!(
        r.failures.is_empty(),
        "{} failures:\n{}",
        r.failures.len(),
        r.failures.join("\n")
    );
    eprintln!(
        "{} decodes, worst allocation {:.0} bytes per input byte",
        r.decodes, r.worst_ratio
    );
}

#[test]
fn unknown_api_keys_and_versions_are_typed_errors() {
    assert_eq!(
        validate_request(-1, 0, &mut Bytes::new()),
        Err(DecodeError::UnknownApiKey(-1))
    );
    assert_eq!(
        validate_request(0, 99, &mut Bytes::new()),
        Err(DecodeError::UnsupportedVersion {
            api_key: 0,
            version: 99
        })
    );
    assert_eq!(
        validate_request(18, 0, &mut Bytes::from_static(&[0])),
        Err(DecodeError::TrailingBytes(1))
    );
}
