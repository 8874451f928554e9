//! The web console over real TCP (in-process broker, admin listener on port 0): its JSON API
//! reports what a Kafka client sees (offsets after producing N records, leader and ISR as
//! Metadata answers them, group lag = high watermark - committed offset), names that are
//! markup come back as data, unknown topics and groups are 404, lists are paged, the page is
//! served with its embedded assets and a strict Content-Security-Policy, every route is
//! read-only, and the throughput history moves while records are produced.
mod common;

use std::net::SocketAddr;
use std::time::Duration;

use common::{api_call, batch, create_topic_with, Client, TestBroker};
use serde_json::Value;
use strata::protocol::messages::*;

const ADMIN_ON: (&str, &str) = ("strata.admin.listeners", "http://127.0.0.1:0");
/// A group id is free text (Kafka allows any string): markup must stay data.
const EVIL_GROUP: &str = "<img src=x onerror=alert(1)>\"&'/g";

/// One HTTP/1.1 request: (status, head in lower case, body).
async fn http(addr: SocketAddr, method: &str, path: &str) -> (u16, String, String) {
    let (status, head, body) = common::admin::http(addr, method, path, "*/*").await;
    (status, head.to_ascii_lowercase(), body)
}

/// The entry of `list[key]` whose `field` is `name`.
fn find<'a>(list: &'a Value, key: &str, field: &str, name: &str) -> &'a Value {
    list[key]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e[field] == name)
        .unwrap_or_else(|| panic!("no {name} in {list}"))
}

async fn get_json(addr: SocketAddr, path: &str) -> Value {
    let (status, head, body) = http(addr, "GET", path).await;
    assert_eq!(status, 200, "{path}: {body}");
    assert!(head.contains("content-type: application/json"), "{head}");
    assert!(head.contains("x-content-type-options: nosniff"), "{head}");
    serde_json::from_str(&body).unwrap()
}

/// Percent-encodes every byte but unreserved ones, as the page's encodeURIComponent does.
fn encode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

async fn produce(c: &mut Client, topic: &str, partition: i32, n: usize) -> i64 {
    let values: Vec<&[u8]> = vec![b"console"; n];
    let mut req = common::txn::produce_req(topic, batch(&values, None));
    req.topic_data[0].partition_data[0].index = partition;
    let r = api_call!(
        c,
        produce_request::ProduceRequest,
        produce_response::ProduceResponse,
        9,
        req
    );
    let p = &r.responses[0].partition_responses[0];
    assert_eq!(p.error_code, 0);
    p.base_offset
}

/// (node id, cluster id) of the broker under test.
fn ids(broker: &TestBroker) -> (i32, String) {
    let b = &broker.running.as_ref().unwrap().broker;
    (b.node_id, b.cluster_id.clone())
}

async fn start() -> (TestBroker, SocketAddr, Client) {
    let broker = TestBroker::start(&[ADMIN_ON]).await;
    let admin = broker.running.as_ref().unwrap().admin_addrs[0];
    let c = broker.client().await;
    (broker, admin, c)
}

#[tokio::test]
async fn topic_offsets_leader_and_isr_match_what_clients_see() {
    let (broker, admin, mut c) = start().await;
    assert_eq!(create_topic_with(&mut c, "orders", 2, &[]).await, 0);
    assert_eq!(produce(&mut c, "orders", 0, 7).await, 0);
    assert_eq!(produce(&mut c, "orders", 0, 5).await, 7);
    assert_eq!(produce(&mut c, "orders", 1, 3).await, 0);
    let md = api_call!(
        c,
        metadata_request::MetadataRequest,
        metadata_response::MetadataResponse,
        12,
        metadata_request::MetadataRequest {
            topics: Some(vec![metadata_request::MetadataRequestTopic {
                name: Some("orders".into()),
                ..Default::default()
            }]),
            ..Default::default()
        }
    );
    let t = get_json(admin, "/api/v1/topics/orders").await;
    assert_eq!(t["name"], "orders");
    assert_eq!(t["partition_count"], 2);
    for (i, (end, size_min)) in [(12, 12 * 7), (3, 3 * 7)].into_iter().enumerate() {
        let p = &t["partitions"][i];
        let m = md.topics[0]
            .partitions
            .iter()
            .find(|m| m.partition_index == i as i32)
            .unwrap();
        assert_eq!(p["partition"], i);
        assert_eq!(p["leader"], m.leader_id);
        assert_eq!(p["leader"], ids(&broker).0);
        assert_eq!(p["leader_epoch"], m.leader_epoch);
        assert_eq!(p["replicas"], serde_json::json!(m.replica_nodes));
        assert_eq!(p["isr"], serde_json::json!(m.isr_nodes));
        assert_eq!(p["log_start_offset"], 0);
        assert_eq!(p["log_end_offset"], end);
        assert_eq!(p["high_watermark"], end);
        assert!(p["size_bytes"].as_u64().unwrap() > size_min, "{p}");
    }
    let list = get_json(admin, "/api/v1/topics").await;
    let orders = find(&list, "topics", "name", "orders");
    assert_eq!(orders["partitions"], 2);
    assert_eq!(orders["records"], 15);
    assert_eq!(orders["under_replicated"], 0);
    // Unknown topics (and names that could not be topics) are 404, as JSON.
    for path in [
        "/api/v1/topics/nope",
        "/api/v1/topics/a%2",
        "/api/v1/topics/a/b",
    ] {
        let (status, head, _) = http(admin, "GET", path).await;
        assert_eq!(status, 404, "{path}");
        assert!(head.contains("application/json"));
    }
}

#[tokio::test]
async fn group_lag_is_high_watermark_minus_committed_and_names_stay_data() {
    let (_broker, admin, mut c) = start().await;
    assert_eq!(create_topic_with(&mut c, "lagged", 2, &[]).await, 0);
    produce(&mut c, "lagged", 0, 10).await;
    produce(&mut c, "lagged", 1, 4).await;
    for (group, partition, offset) in [("g1", 0, 3), ("g1", 1, 4), (EVIL_GROUP, 0, 9)] {
        let r = common::offsets::commit(&mut c, 8, group, &[("lagged", partition)], offset).await;
        assert_eq!(r, vec![("lagged".to_string(), partition, 0)]);
    }
    let g = get_json(admin, "/api/v1/groups/g1").await;
    assert_eq!(g["group_id"], "g1");
    assert_eq!(g["state"], "Empty");
    let offsets: Vec<(i64, i64, i64, i64)> = g["offsets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| {
            let n = |k: &str| o[k].as_i64().unwrap();
            (
                n("partition"),
                n("committed_offset"),
                n("high_watermark"),
                n("lag"),
            )
        })
        .collect();
    assert_eq!(offsets, vec![(0, 3, 10, 7), (1, 4, 4, 0)]);
    let list = get_json(admin, "/api/v1/groups").await;
    assert_eq!(list["total"], 2);
    let g1 = find(&list, "groups", "group_id", "g1");
    assert_eq!(
        (g1["lag_sum"].as_i64(), g1["lag_max"].as_i64()),
        (Some(7), Some(7))
    );
    // The same lag as /metrics reports (one computation for both).
    let (_, _, metrics) = http(admin, "GET", "/metrics").await;
    assert!(
        metrics
            .contains("kafka_consumergroup_lag{group=\"g1\",topic=\"lagged\",partition=\"0\"} 7"),
        "{metrics}"
    );
    // A group id that is markup: listed and described as the same string, found by its
    // percent-encoded id, and never as raw markup outside a JSON string.
    let evil = get_json(admin, &format!("/api/v1/groups/{}", encode(EVIL_GROUP))).await;
    assert_eq!(evil["group_id"], EVIL_GROUP);
    assert_eq!(evil["offsets"][0]["lag"], 1);
    assert_eq!(
        find(&list, "groups", "group_id", EVIL_GROUP)["partitions"],
        1
    );
    let (status, _, _) = http(admin, "GET", "/api/v1/groups/unknown-group").await;
    assert_eq!(status, 404);
}

/// A KIP-848 group (`group.protocol=consumer`) shows its members and their assignment, which
/// DescribeGroups does not give for such a group.
#[tokio::test]
async fn a_kip848_group_shows_its_members_and_assignment() {
    let (_broker, admin, mut c) = start().await;
    assert_eq!(create_topic_with(&mut c, "events", 2, &[]).await, 0);
    let heartbeat =
        |member_epoch: i32| consumer_group_heartbeat_request::ConsumerGroupHeartbeatRequest {
            group_id: "kip848".into(),
            member_id: "member-1".into(),
            member_epoch,
            rebalance_timeout_ms: 30_000,
            subscribed_topic_names: (member_epoch == 0).then(|| vec!["events".into()]),
            topic_partitions: (member_epoch == 0).then(Vec::new),
            ..Default::default()
        };
    // Until `__consumer_offsets` exists and its partition is loaded the coordinator answers
    // NOT_COORDINATOR or COORDINATOR_NOT_AVAILABLE/LOAD_IN_PROGRESS, and a client retries.
    let mut joined = Default::default();
    for _ in 0..100 {
        let _ = api_call!(
            c,
            find_coordinator_request::FindCoordinatorRequest,
            find_coordinator_response::FindCoordinatorResponse,
            3,
            find_coordinator_request::FindCoordinatorRequest {
                key: "kip848".into(),
                key_type: 0,
                ..Default::default()
            }
        );
        joined = api_call!(
            c,
            consumer_group_heartbeat_request::ConsumerGroupHeartbeatRequest,
            consumer_group_heartbeat_response::ConsumerGroupHeartbeatResponse,
            0,
            heartbeat(0)
        );
        if ![14, 15, 16].contains(&joined.error_code) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let joined: consumer_group_heartbeat_response::ConsumerGroupHeartbeatResponse = joined;
    assert_eq!(joined.error_code, 0, "{joined:?}");
    let g = get_json(admin, "/api/v1/groups/kip848").await;
    assert_eq!(g["type"], "consumer");
    let members = g["members"].as_array().unwrap();
    assert_eq!(members.len(), 1, "{g}");
    assert_eq!(members[0]["member_id"], "member-1");
    assert_eq!(members[0]["client_id"], "strata-test");
    assert_eq!(members[0]["member_epoch"], joined.member_epoch);
    let assigned: Vec<i64> = members[0]["assignment"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["topic"] == "events")
        .flat_map(|t| t["partitions"].as_array().unwrap().clone())
        .map(|p| p.as_i64().unwrap())
        .collect();
    assert_eq!(
        assigned.len(),
        2,
        "both partitions go to the only member: {g}"
    );
}

#[tokio::test]
async fn lists_are_paged_with_a_count_of_the_rest() {
    let (_broker, admin, mut c) = start().await;
    for i in 0..5 {
        assert_eq!(create_topic_with(&mut c, &format!("t{i}"), 1, &[]).await, 0);
    }
    let page = get_json(admin, "/api/v1/topics?offset=1&limit=2").await;
    let names: Vec<&str> = page["topics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, vec!["t1", "t2"]);
    assert_eq!(page["total"], 5);
    assert_eq!(page["more"], 2);
    let page = get_json(admin, "/api/v1/topics?limit=100000").await;
    assert_eq!(page["limit"], 500);
}

#[tokio::test]
async fn pages_are_embedded_with_a_strict_policy_and_read_only() {
    let (broker, admin, _c) = start().await;
    for (path, kind) in [
        ("/", "text/html"),
        ("/console/", "text/html"),
        ("/console/console.js", "text/javascript"),
        ("/console/console.css", "text/css"),
    ] {
        let (status, head, body) = http(admin, "GET", path).await;
        assert_eq!(status, 200, "{path}");
        assert!(head.contains(&format!("content-type: {kind}")), "{head}");
        assert!(head.contains("content-security-policy: default-src 'none'; script-src 'self'"));
        assert!(!body.is_empty());
    }
    let (_, _, html) = http(admin, "GET", "/").await;
    assert!(html.contains("<script src=\"/console/console.js\"></script>"));
    for path in ["/", "/api/v1/cluster", "/api/v1/topics"] {
        let (status, head, _) = http(admin, "POST", path).await;
        assert_eq!(status, 405, "{path}");
        assert!(head.contains("allow: get, head"));
    }
    let (status, _, _) = http(admin, "GET", "/api/v2/cluster").await;
    assert_eq!(status, 404);
    let (status, _, _) = http(admin, "GET", "/favicon.ico").await;
    assert_eq!(status, 204);
    let cluster = get_json(admin, "/api/v1/cluster").await;
    let (node_id, cluster_id) = ids(&broker);
    assert_eq!(cluster["cluster_id"], cluster_id);
    assert_eq!(cluster["controller_id"], node_id);
    assert_eq!(cluster["quorum"]["leader_id"], node_id);
    assert_eq!(cluster["quorum"]["voters"][0]["id"], node_id);
    let b = &cluster["brokers"][0];
    assert_eq!(b["id"], node_id);
    assert_eq!(b["fenced"], false);
    assert_eq!(b["endpoints"][0]["port"], broker.addr.port());
}

#[tokio::test]
async fn throughput_moves_while_records_are_produced() {
    let (_broker, admin, mut c) = start().await;
    assert_eq!(create_topic_with(&mut c, "busy", 1, &[]).await, 0);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    loop {
        produce(&mut c, "busy", 0, 50).await;
        let t = get_json(admin, "/api/v1/throughput").await;
        let samples = t["samples"].as_array().unwrap();
        let moving = samples
            .iter()
            .any(|s| s["messages_in"].as_f64().unwrap() > 0.0)
            && samples
                .iter()
                .any(|s| s["bytes_in"].as_f64().unwrap() > 0.0);
        let topics = get_json(admin, "/api/v1/topics").await;
        let busy = find(&topics, "topics", "name", "busy");
        let sparkline_moves = busy["produce_rate"]
            .as_array()
            .unwrap()
            .iter()
            .any(|v| v.as_f64().unwrap() > 0.0);
        if moving && sparkline_moves {
            break;
        }
        assert!(tokio::time::Instant::now() < deadline, "{t} {busy}");
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
}
