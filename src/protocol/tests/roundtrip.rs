//! Round-trip and size properties for every generated message and version: a random sample
//! encodes, decodes back to itself consuming every byte, and re-encodes to the same bytes.
//! Plus unknown tagged fields surviving decode→encode, including tags a newer version defines.

use super::support::{visit_every_message, Sample, TestMessage, TestRng, Visitor};
use crate::protocol::codec::*;
use crate::protocol::messages;

/// Seeds per message version; every struct level draws its own random choices, so a handful
/// covers nulls, empty and non-empty arrays, tagged fields set and unset.
const SEEDS: u64 = 12;

#[derive(Default)]
struct RoundTrip {
    checked: usize,
    failures: Vec<String>,
}

impl Visitor for RoundTrip {
    fn visit<T: TestMessage>(
        &mut self,
        name: &'static str,
        _kind: &'static str,
        _key: i16,
        min: i16,
        max: i16,
    ) {
        for version in min..=max {
            for seed in 0..SEEDS {
                let mut rng = TestRng::new(seed ^ ((version as u64) << 32));
                let value = T::sample(&mut rng, version);
                let bytes = value.to_bytes(version);
                let mut buf = bytes.clone();
                self.checked += 1;
                match T::decode(&mut buf, version) {
                    Err(e) => self
                        .failures
                        .push(format!("{name} v{version} seed {seed}: decode {e:?}")),
                    Ok(back) => {
                        if !buf.is_empty() {
                            self.failures.push(format!(
                                "{name} v{version} seed {seed}: {} bytes left",
                                buf.len()
                            ));
                        }
                        if back != value {
                            self.failures.push(format!(
                                "{name} v{version} seed {seed}: {value:?}\n  decoded as {back:?}"
                            ));
                        }
                        if back.to_bytes(version) != bytes {
                            self.failures.push(format!(
                                "{name} v{version} seed {seed}: re-encoding differs"
                            ));
                        }
                    }
                }
            }
        }
    }
}

#[test]
fn every_message_and_version_round_trips() {
    let mut rt = RoundTrip::default();
    visit_every_message(&mut rt);
    assert!(rt.checked > 1000, "only {} cases", rt.checked);
    assert!(
        rt.failures.is_empty(),
        "{} failures:\n{}",
        rt.failures.len(),
        rt.failures.join("\n")
    );
}

#[test]
fn samples_are_deterministic() {
    use messages::fetch_request::FetchRequest;
    let a = FetchRequest::sample(&mut TestRng::new(7), 17);
    let b = FetchRequest::sample(&mut TestRng::new(7), 17);
    assert_eq!(a, b);
}

#[test]
fn unknown_tagged_fields_survive_decode_encode() {
    use messages::metadata_request::{MetadataRequest, MetadataRequestTopic};
    let tag = |tag, data: &'static [u8]| RawTaggedField {
        tag,
        data: Bytes::from_static(data),
    };
    let req = MetadataRequest {
        topics: Some(vec![MetadataRequestTopic {
            name: Some("t".into()),
            unknown_tagged_fields: vec![tag(3, b"abc"), tag(90, b"")],
            ..Default::default()
        }]),
        unknown_tagged_fields: vec![tag(0, b"\x01"), tag(1_000_000, b"zz")],
        ..Default::default()
    };
    let bytes = req.to_bytes(12);
    let mut buf = bytes.clone();
    let back = MetadataRequest::decode(&mut buf, 12).unwrap();
    assert!(buf.is_empty());
    assert_eq!(back, req);
    assert_eq!(back.to_bytes(12), bytes);
}

#[test]
fn tags_of_a_newer_version_are_kept_as_unknown() {
    // Fetch v17 added the tagged `replica_directory_id` (tag 0) to each partition; read as v16
    // it must be kept as an unknown tag and written back unchanged.
    use messages::fetch_request::{FetchPartition, FetchRequest, FetchTopic};
    let req = FetchRequest {
        topics: vec![FetchTopic {
            topic_id: Uuid([9; 16]),
            partitions: vec![FetchPartition {
                replica_directory_id: Uuid([7; 16]),
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    };
    let bytes = req.to_bytes(17);
    let mut buf = bytes.clone();
    let old = FetchRequest::decode(&mut buf, 16).unwrap();
    assert!(buf.is_empty());
    let p = &old.topics[0].partitions[0];
    assert_eq!(p.replica_directory_id, Uuid::ZERO);
    assert_eq!(p.unknown_tagged_fields.len(), 1);
    assert_eq!(p.unknown_tagged_fields[0].tag, 0);
    assert_eq!(old.to_bytes(16), bytes);
}

#[test]
fn null_default_tagged_struct_is_omitted() {
    // `classic_member_metadata` defaults to null (spelled `=None` in its spec): a consumer-
    // protocol member has none, and Kafka writes no tag for it.
    use crate::protocol::internal_records::consumer_group_member_metadata_value::ConsumerGroupMemberMetadataValue as V;
    let v = V::default();
    assert_eq!(v.classic_member_metadata, None);
    let bytes = v.to_bytes(0);
    assert_eq!(bytes.last(), Some(&0), "no tagged fields: {bytes:?}");
    assert_eq!(
        V::decode(&mut bytes.clone(), 0)
            .unwrap()
            .classic_member_metadata,
        None
    );
}

/// Produce assigns offsets in the received bytes when it holds the only reference to them:
/// decoding must slice the frame, not keep other references alive (see `handlers::dispatch`).
#[test]
fn decoded_produce_records_own_the_frame_once_the_body_is_dropped() {
    use crate::protocol::codec::{Decode, Encode};
    use crate::protocol::messages::produce_request::*;
    use crate::protocol::records::testutil::{build_test_batch, TestBatch};
    let batch = bytes::Bytes::from(build_test_batch(&TestBatch {
        records: 3,
        ..TestBatch::default()
    }));
    let request = ProduceRequest {
        acks: -1,
        timeout_ms: 1000,
        topic_data: vec![TopicProduceData {
            name: "t".into(),
            partition_data: vec![PartitionProduceData {
                index: 0,
                records: Some(batch.clone()),
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    };
    for version in [3i16, 9, 11] {
        // A frame as the connection reads it: a fresh buffer, frozen.
        let mut frame = bytes::BytesMut::new();
        request.encode(&mut frame, version);
        let mut body = frame.freeze();
        let decoded = ProduceRequest::decode(&mut body, version).expect("decode");
        drop(body);
        let records = decoded
            .topic_data
            .into_iter()
            .next()
            .and_then(|t| t.partition_data.into_iter().next())
            .and_then(|p| p.records)
            .expect("records");
        let owned = records.try_into_mut().expect("unique: no copy needed");
        assert_eq!(&owned[..], &batch[..], "v{version}");
    }
}
