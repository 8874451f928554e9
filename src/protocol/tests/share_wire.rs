//! Byte-exact checks of the share-group messages and `__share_group_state` records (KIP-932,
//! Kafka 4.3.1's versions). `kafka-protocol` 0.15 has none of them, so the differential test
//! cannot catch a field in the wrong place, and a round-trip through our own codec cannot
//! either. Here the expected bytes are written out field by field, in the order of Kafka
//! 4.3.1's schemas, with a small writer that does not use the generated codec; each value must
//! encode to them and decode back from them.

use crate::protocol::codec::*;
use crate::protocol::internal_records as records;
use crate::protocol::messages;

/// Kafka's wire primitives, written by hand (big-endian integers, compact lengths as
/// unsigned varints of length + 1, 0 for null).
#[derive(Default)]
struct Wire(Vec<u8>);

impl Wire {
    fn raw(&mut self, b: &[u8]) -> &mut Self {
        self.0.extend_from_slice(b);
        self
    }
    fn i8(&mut self, v: i8) -> &mut Self {
        self.raw(&v.to_be_bytes())
    }
    fn bool(&mut self, v: bool) -> &mut Self {
        self.raw(&[v as u8])
    }
    fn i16(&mut self, v: i16) -> &mut Self {
        self.raw(&v.to_be_bytes())
    }
    fn i32(&mut self, v: i32) -> &mut Self {
        self.raw(&v.to_be_bytes())
    }
    fn i64(&mut self, v: i64) -> &mut Self {
        self.raw(&v.to_be_bytes())
    }
    fn uvarint(&mut self, mut v: u32) -> &mut Self {
        while v >= 0x80 {
            self.0.push((v as u8) | 0x80);
            v >>= 7;
        }
        self.0.push(v as u8);
        self
    }
    /// A compact array (or compact bytes) length.
    fn len(&mut self, n: usize) -> &mut Self {
        self.uvarint(n as u32 + 1)
    }
    fn compact_str(&mut self, s: &str) -> &mut Self {
        self.len(s.len()).raw(s.as_bytes())
    }
    fn compact_null(&mut self) -> &mut Self {
        self.uvarint(0)
    }
    /// A classic (non-flexible) string: i16 length.
    fn str(&mut self, s: &str) -> &mut Self {
        self.i16(s.len() as i16).raw(s.as_bytes())
    }
    fn uuid(&mut self, fill: u8) -> &mut Self {
        self.raw(&[fill; 16])
    }
    /// An empty tagged-field section.
    fn no_tags(&mut self) -> &mut Self {
        self.uvarint(0)
    }
    fn bytes(&self) -> Vec<u8> {
        self.0.clone()
    }
}

/// `value` encodes at `version` to exactly `want` and decodes back from it, consuming it all.
fn check<T: Encode + Decode + PartialEq + std::fmt::Debug>(
    what: &str,
    value: &T,
    version: i16,
    want: &[u8],
) {
    let got = value.to_bytes(version);
    assert_eq!(&got[..], want, "{what} v{version}: encoding");
    let mut buf = Bytes::copy_from_slice(want);
    let back = T::decode(&mut buf, version).unwrap_or_else(|e| panic!("{what} v{version}: {e}"));
    assert!(
        buf.is_empty(),
        "{what} v{version}: {} bytes left",
        buf.len()
    );
    assert_eq!(&back, value, "{what} v{version}: decoding");
}

#[test]
fn share_rpcs_have_kafka_4_3_version_ranges() {
    // (API, key, min, max) as Kafka 4.3.1 defines them, for the request and the response.
    let want: [(&str, i16, i16, i16); 12] = [
        ("ShareGroupHeartbeat", 76, 1, 1),
        ("ShareGroupDescribe", 77, 1, 1),
        ("ShareFetch", 78, 1, 2),
        ("ShareAcknowledge", 79, 1, 2),
        ("InitializeShareGroupState", 83, 0, 0),
        ("ReadShareGroupState", 84, 0, 0),
        ("WriteShareGroupState", 85, 0, 1),
        ("DeleteShareGroupState", 86, 0, 0),
        ("ReadShareGroupStateSummary", 87, 0, 1),
        ("DescribeShareGroupOffsets", 90, 0, 1),
        ("AlterShareGroupOffsets", 91, 0, 0),
        ("DeleteShareGroupOffsets", 92, 0, 0),
    ];
    for (api, key, min, max) in want {
        for kind in ["request", "response"] {
            let name = format!("{api}{}{}", kind[..1].to_uppercase(), &kind[1..]);
            let spec = messages::SPECS.iter().find(|s| s.0 == name);
            let got = spec.map(|s| (s.1, s.2, s.3, s.4));
            assert_eq!(got, Some((kind, key, min, max)), "{name}");
        }
    }
    // The early-access v0 of KIP-932's client RPCs is gone: a v0 body is refused, not misread.
    for key in [76, 77, 78, 79] {
        assert!(
            matches!(
                messages::validate_request(key, 0, &mut Bytes::new()),
                Err(DecodeError::UnsupportedVersion { .. })
            ),
            "key {key} v0"
        );
    }
}

#[test]
fn share_fetch_request_v1_and_v2_bytes() {
    use messages::share_fetch_request::*;
    let mut req = ShareFetchRequest {
        group_id: Some("grp".into()),
        member_id: Some("member-1".into()),
        share_session_epoch: 5,
        max_wait_ms: 500,
        min_bytes: 1,
        max_bytes: 0x10_0000,
        max_records: 200,
        batch_size: 50,
        // Distinct bytes (01 00), so the two v2 fields cannot swap places unnoticed.
        share_acquire_mode: 1,
        is_renew_ack: false,
        topics: vec![FetchTopic {
            topic_id: Uuid([0xA1; 16]),
            partitions: vec![FetchPartition {
                partition_index: 3,
                acknowledgement_batches: vec![AcknowledgementBatch {
                    first_offset: 10,
                    last_offset: 12,
                    acknowledge_types: vec![1, 4, 0],
                    ..Default::default()
                }],
                ..Default::default()
            }],
            ..Default::default()
        }],
        forgotten_topics_data: vec![ForgottenTopic {
            topic_id: Uuid([0xB2; 16]),
            partitions: vec![7, 8],
            ..Default::default()
        }],
        ..Default::default()
    };
    let wire = |v2: bool| {
        let mut w = Wire::default();
        w.compact_str("grp").compact_str("member-1").i32(5);
        w.i32(500).i32(1).i32(0x10_0000); // max_wait_ms, min_bytes, max_bytes
        w.i32(200).i32(50); // max_records, batch_size (v1+)
        if v2 {
            w.i8(1).bool(false); // share_acquire_mode, is_renew_ack
        }
        w.len(1).uuid(0xA1); // topics
        w.len(1).i32(3); // partitions; no partition_max_bytes after v0
        w.len(1).i64(10).i64(12).len(3).i8(1).i8(4).i8(0).no_tags();
        w.no_tags().no_tags();
        w.len(1).uuid(0xB2).len(2).i32(7).i32(8).no_tags(); // forgotten_topics_data
        w.no_tags().bytes()
    };
    check("ShareFetchRequest", &req, 2, &wire(true));
    // v1 has neither the acquire mode nor the renew flag.
    req.share_acquire_mode = 0;
    check("ShareFetchRequest", &req, 1, &wire(false));
    // v0's per-partition byte limit is never written.
    req.topics[0].partitions[0].partition_max_bytes = 99;
    assert_eq!(&req.to_bytes(1)[..], &wire(false)[..]);
}

#[test]
fn share_fetch_response_v1_and_v2_bytes() {
    use messages::share_fetch_response::*;
    let resp = ShareFetchResponse {
        acquisition_lock_timeout_ms: 30_000,
        responses: vec![ShareFetchableTopicResponse {
            topic_id: Uuid([0xC3; 16]),
            partitions: vec![PartitionData {
                partition_index: 0,
                acknowledge_error_code: 121,
                acknowledge_error_message: Some("bad state".into()),
                current_leader: LeaderIdAndEpoch {
                    leader_id: 2,
                    leader_epoch: 9,
                    ..Default::default()
                },
                records: Some(Bytes::from_static(&[1, 2, 3, 4])),
                acquired_records: vec![AcquiredRecords {
                    first_offset: 10,
                    last_offset: 11,
                    delivery_count: 1,
                    ..Default::default()
                }],
                ..Default::default()
            }],
            ..Default::default()
        }],
        node_endpoints: vec![NodeEndpoint {
            node_id: 2,
            host: "h".into(),
            port: 9092,
            rack: None,
            ..Default::default()
        }],
        ..Default::default()
    };
    let mut w = Wire::default();
    w.i32(0).i16(0).compact_null(); // throttle_time_ms, error_code, error_message
    w.i32(30_000); // acquisition_lock_timeout_ms (v1+)
    w.len(1).uuid(0xC3).len(1);
    w.i32(0).i16(0).compact_null(); // partition_index, error_code, error_message
    w.i16(121).compact_str("bad state"); // acknowledge_error_code, acknowledge_error_message
    w.i32(2).i32(9).no_tags(); // current_leader
    w.len(4).raw(&[1, 2, 3, 4]); // records: compact bytes, not nullable after v0
    w.len(1).i64(10).i64(11).i16(1).no_tags(); // acquired_records
    w.no_tags().no_tags();
    w.len(1)
        .i32(2)
        .compact_str("h")
        .i32(9092)
        .compact_null()
        .no_tags(); // node_endpoints
    w.no_tags();
    for version in [1, 2] {
        check("ShareFetchResponse", &resp, version, &w.bytes());
    }
}

#[test]
fn share_acknowledge_request_v1_and_v2_bytes() {
    use messages::share_acknowledge_request::*;
    let mut req = ShareAcknowledgeRequest {
        group_id: None,
        member_id: Some("m".into()),
        share_session_epoch: 2,
        is_renew_ack: true,
        topics: vec![AcknowledgeTopic {
            topic_id: Uuid([0xD4; 16]),
            partitions: vec![AcknowledgePartition {
                partition_index: 1,
                acknowledgement_batches: vec![AcknowledgementBatch {
                    first_offset: 100,
                    last_offset: 100,
                    acknowledge_types: vec![4],
                    ..Default::default()
                }],
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    };
    let wire = |v2: bool| {
        let mut w = Wire::default();
        w.compact_null().compact_str("m").i32(2);
        if v2 {
            w.bool(true); // is_renew_ack
        }
        w.len(1).uuid(0xD4).len(1).i32(1);
        w.len(1).i64(100).i64(100).len(1).i8(4).no_tags();
        w.no_tags().no_tags().no_tags().bytes()
    };
    check("ShareAcknowledgeRequest", &req, 2, &wire(true));
    req.is_renew_ack = false;
    check("ShareAcknowledgeRequest", &req, 1, &wire(false));
}

#[test]
fn share_acknowledge_response_v1_and_v2_bytes() {
    use messages::share_acknowledge_response::*;
    let mut resp = ShareAcknowledgeResponse {
        throttle_time_ms: 7,
        error_code: 0,
        error_message: None,
        acquisition_lock_timeout_ms: 15_000,
        responses: vec![ShareAcknowledgeTopicResponse {
            topic_id: Uuid([0xE5; 16]),
            partitions: vec![PartitionData {
                partition_index: 4,
                error_code: 6,
                error_message: Some("x".into()),
                current_leader: LeaderIdAndEpoch {
                    leader_id: 1,
                    leader_epoch: 3,
                    ..Default::default()
                },
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    };
    let wire = |v2: bool| {
        let mut w = Wire::default();
        w.i32(7).i16(0).compact_null();
        if v2 {
            w.i32(15_000); // acquisition_lock_timeout_ms
        }
        w.len(1).uuid(0xE5).len(1);
        w.i32(4).i16(6).compact_str("x").i32(1).i32(3).no_tags();
        w.no_tags().no_tags();
        w.len(0); // node_endpoints
        w.no_tags().bytes()
    };
    check("ShareAcknowledgeResponse", &resp, 2, &wire(true));
    resp.acquisition_lock_timeout_ms = 0;
    check("ShareAcknowledgeResponse", &resp, 1, &wire(false));
}

#[test]
fn share_group_state_rpcs_place_the_kip_1226_fields() {
    use messages::describe_share_group_offsets_response as describe;
    use messages::read_share_group_state_summary_response as summary;
    use messages::write_share_group_state_request as write;

    let req = write::WriteShareGroupStateRequest {
        group_id: "g".into(),
        topics: vec![write::WriteStateData {
            topic_id: Uuid([1; 16]),
            partitions: vec![write::PartitionData {
                partition: 0,
                state_epoch: 1,
                leader_epoch: 2,
                start_offset: 30,
                delivery_complete_count: 4,
                state_batches: vec![write::StateBatch {
                    first_offset: 30,
                    last_offset: 31,
                    delivery_state: 2,
                    delivery_count: 1,
                    ..Default::default()
                }],
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    };
    let mut w = Wire::default();
    w.compact_str("g").len(1).uuid(1).len(1);
    w.i32(0).i32(1).i32(2).i64(30).i32(4); // ..start_offset, delivery_complete_count
    w.len(1).i64(30).i64(31).i8(2).i16(1).no_tags();
    w.no_tags().no_tags().no_tags();
    check("WriteShareGroupStateRequest", &req, 1, &w.bytes());

    // The summary carries the leader epoch from v0 on, between state epoch and start offset.
    let mut resp = summary::ReadShareGroupStateSummaryResponse {
        results: vec![summary::ReadStateSummaryResult {
            topic_id: Uuid([2; 16]),
            partitions: vec![summary::PartitionResult {
                partition: 5,
                state_epoch: 6,
                leader_epoch: 7,
                start_offset: 80,
                delivery_complete_count: 9,
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    };
    let wire = |v1: bool| {
        let mut w = Wire::default();
        w.len(1).uuid(2).len(1).i32(5).i16(0).compact_null();
        w.i32(6).i32(7).i64(80);
        if v1 {
            w.i32(9);
        }
        w.no_tags().no_tags().no_tags().bytes()
    };
    check("ReadShareGroupStateSummaryResponse", &resp, 1, &wire(true));
    resp.results[0].partitions[0].delivery_complete_count = -1;
    check("ReadShareGroupStateSummaryResponse", &resp, 0, &wire(false));

    let offsets = describe::DescribeShareGroupOffsetsResponse {
        groups: vec![describe::DescribeShareGroupOffsetsResponseGroup {
            group_id: "g".into(),
            topics: vec![describe::DescribeShareGroupOffsetsResponseTopic {
                topic_name: "t".into(),
                topic_id: Uuid([3; 16]),
                partitions: vec![describe::DescribeShareGroupOffsetsResponsePartition {
                    partition_index: 0,
                    start_offset: 10,
                    leader_epoch: 1,
                    lag: 42,
                    ..Default::default()
                }],
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    };
    let mut w = Wire::default();
    w.i32(0)
        .len(1)
        .compact_str("g")
        .len(1)
        .compact_str("t")
        .uuid(3)
        .len(1);
    w.i32(0)
        .i64(10)
        .i32(1)
        .i64(42)
        .i16(0)
        .compact_null()
        .no_tags(); // lag before error_code
    w.no_tags(); // topic
    w.i16(0).compact_null().no_tags(); // group error after its topics
    w.no_tags();
    check("DescribeShareGroupOffsetsResponse", &offsets, 1, &w.bytes());
}

#[test]
fn share_snapshot_and_update_records_bytes() {
    use records::share_snapshot_key::ShareSnapshotKey;
    use records::share_snapshot_value::{ShareSnapshotValue, StateBatch};
    use records::share_update_key::ShareUpdateKey;
    use records::share_update_value as update;

    // Keys: classic strings, and their version is the record type (0 snapshot, 1 update).
    let mut w = Wire::default();
    w.str("grp").uuid(0x11).i32(4);
    let key = ShareSnapshotKey {
        group_id: "grp".into(),
        topic_id: Uuid([0x11; 16]),
        partition: 4,
    };
    check("ShareSnapshotKey", &key, 0, &w.bytes());
    let key = ShareUpdateKey {
        group_id: "grp".into(),
        topic_id: Uuid([0x11; 16]),
        partition: 4,
    };
    check("ShareUpdateKey", &key, 1, &w.bytes());

    let mut value = ShareSnapshotValue {
        snapshot_epoch: 1,
        state_epoch: 2,
        leader_epoch: 3,
        start_offset: 100,
        delivery_complete_count: 5,
        create_timestamp: 1_700_000_000_000,
        write_timestamp: 1_700_000_000_500,
        state_batches: vec![StateBatch {
            first_offset: 100,
            last_offset: 104,
            delivery_state: 4,
            delivery_count: 3,
            ..Default::default()
        }],
        ..Default::default()
    };
    let wire = |count: Option<i32>| {
        let mut w = Wire::default();
        w.i32(1).i32(2).i32(3).i64(100);
        w.i64(1_700_000_000_000).i64(1_700_000_000_500);
        w.len(1).i64(100).i64(104).i8(4).i16(3).no_tags();
        match count {
            // delivery_complete_count is tag 0, written only when not -1.
            Some(c) => w.uvarint(1).uvarint(0).uvarint(4).i32(c),
            None => w.no_tags(),
        };
        w.bytes()
    };
    check("ShareSnapshotValue", &value, 0, &wire(Some(5)));
    value.delivery_complete_count = -1;
    check("ShareSnapshotValue", &value, 0, &wire(None));
    assert_eq!(ShareSnapshotValue::default().delivery_complete_count, -1);

    let value = update::ShareUpdateValue {
        snapshot_epoch: 1,
        leader_epoch: 3,
        start_offset: -1,
        delivery_complete_count: 0,
        state_batches: vec![],
        ..Default::default()
    };
    let mut w = Wire::default();
    w.i32(1).i32(3).i64(-1).len(0);
    w.uvarint(1).uvarint(0).uvarint(4).i32(0);
    check("ShareUpdateValue", &value, 0, &w.bytes());
}
