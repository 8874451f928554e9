//! Golden request frames captured from real clients (Java 4.1.2, librdkafka 2.16.0 and 2.0.2,
//! kafka-python, kafkajs, franz-go; see compat-tests/golden/PROVENANCE.md and each file's
//! `.provenance`): every frame decodes completely with Strata's codec, the common ones
//! re-encode to the exact captured bytes, and every produced record batch passes validation.
use bytes::{Bytes, BytesMut};
use strata::protocol::codec::{Decode, Encode};
use strata::protocol::header::RequestHeader;
use strata::protocol::messages::*;

fn frames() -> Vec<(String, Bytes)> {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/compat-tests/golden");
    let mut out: Vec<(String, Bytes)> = std::fs::read_dir(dir)
        .expect("golden dir")
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "bin"))
        .map(|p| {
            (
                p.file_name().unwrap().to_string_lossy().into_owned(),
                Bytes::from(std::fs::read(&p).unwrap()),
            )
        })
        .collect();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

/// Decodes the body as `T` and checks that encoding gives back the captured bytes.
fn round_trip<T: Decode + Encode>(name: &str, body: &Bytes, version: i16) {
    let mut b = body.clone();
    let value = T::decode(&mut b, version).unwrap_or_else(|e| panic!("{name}: {e}"));
    assert!(b.is_empty(), "{name}: {} bytes left over", b.len());
    let mut again = BytesMut::new();
    value.encode(&mut again, version);
    assert_eq!(&again[..], &body[..], "{name}: re-encoding differs");
}

#[test]
fn every_captured_request_decodes_and_round_trips() {
    let frames = frames();
    assert!(frames.len() >= 50, "golden frames present");
    let mut clients = std::collections::BTreeSet::new();
    let (mut decoded, mut newer) = (0, 0);
    for (name, frame) in &frames {
        clients.insert(name.split('-').next().unwrap().to_string());
        let mut buf = frame.clone();
        let (header, _) =
            RequestHeader::decode_detect(&mut buf).unwrap_or_else(|e| panic!("{name}: header {e}"));
        let v = header.api_version;
        let mut check = buf.clone();
        match validate_request(header.api_key, v, &mut check) {
            Ok(()) => decoded += 1,
            // Captured against Kafka 4.1, which has versions past our baseline (Metadata 13,
            // Produce 12, ...); against Strata these clients negotiate down.
            Err(strata::protocol::codec::DecodeError::UnsupportedVersion { .. }) => {
                newer += 1;
                continue;
            }
            Err(e) => panic!("{name}: body {e}"),
        }
        match header.api_key {
            0 => {
                round_trip::<produce_request::ProduceRequest>(name, &buf, v);
                let req = produce_request::ProduceRequest::decode(&mut buf.clone(), v).unwrap();
                for t in req.topic_data {
                    for p in t.partition_data {
                        let records = p.records.unwrap_or_default();
                        strata::protocol::records::batch::validate_batches(&records, usize::MAX)
                            .unwrap_or_else(|e| panic!("{name}: batch {e:?}"));
                    }
                }
            }
            1 => round_trip::<fetch_request::FetchRequest>(name, &buf, v),
            2 => round_trip::<list_offsets_request::ListOffsetsRequest>(name, &buf, v),
            3 => round_trip::<metadata_request::MetadataRequest>(name, &buf, v),
            8 => round_trip::<offset_commit_request::OffsetCommitRequest>(name, &buf, v),
            10 => round_trip::<find_coordinator_request::FindCoordinatorRequest>(name, &buf, v),
            11 => round_trip::<join_group_request::JoinGroupRequest>(name, &buf, v),
            18 => round_trip::<api_versions_request::ApiVersionsRequest>(name, &buf, v),
            19 => round_trip::<create_topics_request::CreateTopicsRequest>(name, &buf, v),
            22 => round_trip::<init_producer_id_request::InitProducerIdRequest>(name, &buf, v),
            _ => {}
        }
    }
    assert!(
        decoded > 3 * newer,
        "{decoded} decoded, {newer} newer than our baseline"
    );
    for c in ["java", "confluent", "kafka-python"] {
        assert!(
            clients
                .iter()
                .any(|x| x.starts_with(c.split('-').next().unwrap())),
            "frames from {c}: {clients:?}"
        );
    }
}
