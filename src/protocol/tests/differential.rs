//! Differential checks against the `kafka-protocol` crate (Kafka 4.0 schemas) as an oracle:
//! for every message both sides define and every version inside both ranges, our random
//! sample's bytes must decode with `kafka-protocol`, consume every byte, and re-encode to
//! the very same bytes; and both sides' default values must encode identically (which checks
//! our defaults, tagged-field defaults especially, against Kafka's).
//!
//! Our baseline is Kafka trunk of 2024-10-25; `kafka-protocol` 0.15 follows 4.0, which
//! removed some old versions (only the overlap is compared) and added versions we do not
//! advertise (likewise).

use std::collections::BTreeMap;
use std::fmt::Debug;

use bytes::BytesMut;
use kafka_protocol::protocol::{Decodable, Encodable, Message};

use kafka_protocol::protocol::HeaderVersion;

use super::support::{ApiVisitor, PairVisitor, TestMessage, TestRng};
use crate::protocol::header::{request_header_version, response_header_version, RequestHeader};
use crate::protocol::messages;

const SEEDS: u64 = 8;

/// Known, explained disagreements: (message, version). Empty today; an entry must name the
/// field and why the two sides legitimately differ.
const ALLOWED: &[(&str, i16)] = &[];

#[derive(Default)]
struct Differential {
    pairs: usize,
    versions: usize,
    /// Our versions `kafka-protocol` does not have (Kafka 4.0 removed them), for the log.
    only_ours: Vec<String>,
    /// (message, version) -> first failure seen.
    failures: BTreeMap<(&'static str, i16), String>,
}

impl Differential {
    fn fail(&mut self, name: &'static str, version: i16, why: String) {
        if !ALLOWED.contains(&(name, version)) {
            self.failures.entry((name, version)).or_insert(why);
        }
    }
}

fn theirs_encode<K: Encodable>(k: &K, version: i16) -> Result<BytesMut, String> {
    let mut out = BytesMut::new();
    k.encode(&mut out, version)
        .map_err(|e| format!("kafka-protocol encode: {e}"))?;
    Ok(out)
}

impl PairVisitor for Differential {
    fn visit<T, K>(&mut self, name: &'static str, _kind: &'static str, min: i16, max: i16)
    where
        T: TestMessage,
        K: Encodable + Decodable + Message + Default + Debug,
    {
        self.pairs += 1;
        let lo = min.max(K::VERSIONS.min);
        let hi = max.min(K::VERSIONS.max);
        if lo > min || hi < max {
            let compared = if lo <= hi {
                format!("{lo}-{hi}")
            } else {
                "none".into()
            };
            self.only_ours
                .push(format!("{name} {min}-{max} (compared {compared})"));
        }
        for version in lo..=hi {
            self.versions += 1;
            // Defaults must agree byte for byte.
            match theirs_encode(&K::default(), version) {
                Err(e) => self.fail(name, version, format!("default: {e}")),
                Ok(theirs) => {
                    let ours = T::default().to_bytes(version);
                    if ours[..] != theirs[..] {
                        self.fail(
                            name,
                            version,
                            format!("defaults differ:\n  ours   {ours:?}\n  theirs {theirs:?}"),
                        );
                    }
                }
            }
            for seed in 0..SEEDS {
                let mut rng = TestRng::new(seed.wrapping_add(0xD1FF) ^ ((version as u64) << 40));
                let value = T::sample(&mut rng, version);
                let ours = value.to_bytes(version);
                let mut buf = ours.clone();
                let k = match K::decode(&mut buf, version) {
                    Ok(k) => k,
                    Err(e) => {
                        self.fail(
                            name,
                            version,
                            format!("seed {seed}: kafka-protocol decode: {e}\n  {value:?}"),
                        );
                        continue;
                    }
                };
                if !buf.is_empty() {
                    self.fail(
                        name,
                        version,
                        format!("seed {seed}: kafka-protocol left {} bytes", buf.len()),
                    );
                    continue;
                }
                // A tag number we got wrong would round-trip through their unknown-field map
                // unnoticed; our samples only invent tags >= 1000, so any lower one they did
                // not recognise is a disagreement.
                if let Some(tag) = low_unknown_tag(&format!("{k:?}")) {
                    self.fail(
                        name,
                        version,
                        format!("seed {seed}: kafka-protocol does not know tag {tag}\n  {k:?}"),
                    );
                    continue;
                }
                match theirs_encode(&k, version) {
                    Err(e) => self.fail(name, version, format!("seed {seed}: {e}\n  {k:?}")),
                    Ok(theirs) if theirs[..] != ours[..] => self.fail(
                        name,
                        version,
                        format!("seed {seed}: re-encoding differs\n  ours   {ours:?}\n  theirs {theirs:?}\n  {value:?}"),
                    ),
                    Ok(theirs) => {
                        // And back: their bytes decode with us to the value we started from.
                        let mut b = theirs.freeze();
                        match T::decode(&mut b, version) {
                            Ok(back) if back == value && b.is_empty() => {}
                            other => self.fail(name, version, format!("seed {seed}: our decode of theirs: {other:?}")),
                        }
                    }
                }
            }
        }
    }
}

/// The first tag below 1000 in a non-empty `unknown_tagged_fields: {tag: ..}` of a
/// `kafka-protocol` value's debug form.
fn low_unknown_tag(debug: &str) -> Option<u32> {
    const KEY: &str = "unknown_tagged_fields: {";
    debug.match_indices(KEY).find_map(|(i, _)| {
        let rest = &debug[i + KEY.len()..];
        let digits: String = rest.chars().take_while(|c| c.is_ascii_digit()).collect();
        digits.parse::<u32>().ok().filter(|t| *t < 1000)
    })
}

#[test]
fn low_unknown_tag_parses_debug_output() {
    assert_eq!(low_unknown_tag("X { unknown_tagged_fields: {} }"), None);
    assert_eq!(
        low_unknown_tag("X { unknown_tagged_fields: {1024: b\"\"} }"),
        None
    );
    assert_eq!(
        low_unknown_tag(
            "X { a: Y { unknown_tagged_fields: {} }, unknown_tagged_fields: {3: b\"\"} }"
        ),
        Some(3)
    );
}

#[test]
fn agrees_with_kafka_protocol() {
    let mut d = Differential::default();
    messages::visit_kafka_protocol_pairs(&mut d);
    assert!(d.pairs > 150, "only {} pairs", d.pairs);
    assert!(d.versions > 500, "only {} versions compared", d.versions);
    let report: Vec<String> = d
        .failures
        .iter()
        .map(|((n, v), why)| format!("{n} v{v}: {why}"))
        .collect();
    eprintln!("{} pairs, {} versions compared", d.pairs, d.versions);
    eprintln!(
        "not in kafka-protocol 0.15, so not compared: {}",
        d.only_ours.join(", ")
    );
    assert!(
        report.is_empty(),
        "{} disagreements:\n{}",
        report.len(),
        report.join("\n\n")
    );
}

/// Our header versions against `kafka-protocol`'s per-message `header_version`, and our
/// request headers decoded by its `RequestHeader` (and back) at that header version.
#[derive(Default)]
struct Headers {
    apis: usize,
    failures: Vec<String>,
}

impl ApiVisitor for Headers {
    fn visit<Req, Resp>(&mut self, api_key: i16, min: i16, max: i16)
    where
        Req: HeaderVersion + Message,
        Resp: HeaderVersion,
    {
        self.apis += 1;
        for version in min.max(Req::VERSIONS.min)..=max.min(Req::VERSIONS.max) {
            let (ours_req, theirs_req) = (
                request_header_version(api_key, version),
                Req::header_version(version),
            );
            let (ours_resp, theirs_resp) = (
                response_header_version(api_key, version),
                Resp::header_version(version),
            );
            if (ours_req, ours_resp) != (theirs_req, theirs_resp) {
                self.failures.push(format!(
                    "api {api_key} v{version}: header versions ours ({ours_req}, {ours_resp}) theirs ({theirs_req}, {theirs_resp})"
                ));
                continue;
            }
            let header = RequestHeader {
                api_key,
                api_version: version,
                correlation_id: 0x0102_0304,
                client_id: if version % 2 == 0 {
                    Some(format!("client-é-{version}"))
                } else {
                    None
                },
                unknown_tagged_fields: Vec::new(),
            };
            let mut ours = BytesMut::new();
            header.encode(&mut ours, ours_req);
            let mut buf = ours.clone().freeze();
            match kafka_protocol::messages::RequestHeader::decode(&mut buf, ours_req) {
                Ok(k) if buf.is_empty() => match theirs_encode(&k, ours_req) {
                    Ok(theirs) if theirs == ours => {}
                    other => self.failures.push(format!(
                        "api {api_key} v{version}: their header encoding {other:?}"
                    )),
                },
                other => self.failures.push(format!(
                    "api {api_key} v{version}: their header decode {other:?}"
                )),
            }
        }
    }
}

#[test]
fn header_versions_agree_with_kafka_protocol() {
    let mut h = Headers::default();
    messages::visit_kafka_protocol_apis(&mut h);
    assert!(h.apis > 70, "only {} APIs", h.apis);
    assert!(h.failures.is_empty(), "{}", h.failures.join("\n"));
}
