//! The web console's JSON in a three-node cluster, read on a node that neither leads the
//! topic's partition nor coordinates the group: the partition's offsets and size are its
//! leader's, and the group (coordinated elsewhere) is listed with its coordinator and a lag
//! computed against the leader's high watermark, as `kafka-consumer-groups --describe` on
//! Kafka would report it from any broker.
mod common;

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use common::admin::http;
use common::cluster::{produce_retrying, Cluster};
use common::coord::find_coordinator;
use common::offsets::commit;
use common::Client;
use serde_json::Value;

async fn get(admin: SocketAddr, path: &str) -> Value {
    let (status, _, body) = http(admin, "GET", path, "application/json").await;
    assert_eq!(status, 200, "{path}: {body}");
    serde_json::from_str(&body).unwrap()
}

/// Reads `path` until `ready` holds (the console asks peers in the background); the last read.
async fn get_until(admin: SocketAddr, path: &str, ready: impl Fn(&Value) -> bool) -> Value {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let v = get(admin, path).await;
        if ready(&v) || Instant::now() > deadline {
            return v;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_node_shows_partitions_it_does_not_hold_and_groups_it_does_not_coordinate() {
    let cluster = Cluster::start_with(1, &["strata.admin.listeners=http://127.0.0.1:0"]).await;
    let mut c = Client::connect(cluster.addr(0)).await;
    let mut created = -1;
    for _ in 0..100 {
        created = common::create_topic_rf(&mut c, "spread", 1, 1, &[]).await;
        if created == 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(created, 0);
    let leader = cluster.wait_leader(0, "spread", None, 1).await;
    let mut at_leader = Client::connect(cluster.addr(cluster.index_of(leader))).await;
    let values: Vec<&[u8]> = vec![b"a", b"b", b"c", b"d", b"e"];
    assert_eq!(
        produce_retrying(&mut at_leader, "spread", &values).await,
        (0, 0)
    );

    let group = "console-remote";
    let coordinator = find_coordinator(&cluster, group, 0).await;
    let mut at_coordinator = Client::connect(cluster.addr(cluster.index_of(coordinator))).await;
    let committed = commit(&mut at_coordinator, 8, group, &[("spread", 0)], 2).await;
    assert_eq!(committed, vec![("spread".to_string(), 0, 0)]);

    // A node that is neither: it has no replica of the partition and not the group.
    let viewer = (0..3)
        .find(|i| ![leader, coordinator].contains(&cluster.nodes[*i].id))
        .unwrap();
    let admin = cluster.nodes[viewer].running.as_ref().unwrap().admin_addrs[0];

    let topic = get_until(admin, "/api/v1/topics/spread", |t| {
        t["partitions"][0]["high_watermark"] == 5
    })
    .await;
    let p = &topic["partitions"][0];
    assert_eq!(p["local_replica"], false, "{topic}");
    assert_eq!(p["figures_from"], leader, "{topic}");
    assert_eq!(p["log_start_offset"], 0, "{topic}");
    assert_eq!(p["log_end_offset"], 5, "{topic}");
    assert_eq!(p["high_watermark"], 5, "{topic}");
    assert_eq!(p["last_stable_offset"], 5, "{topic}");
    let size = p["size_bytes"].as_i64().unwrap();
    // The leader's own replica, read directly.
    let on_leader = cluster.nodes[cluster.index_of(leader)]
        .running
        .as_ref()
        .unwrap()
        .admin_addrs[0];
    let direct = get(on_leader, "/api/v1/topics/spread").await;
    assert_eq!(direct["partitions"][0]["size_bytes"], size, "{direct}");
    assert!(size > 0);

    let topics = get(admin, "/api/v1/topics").await;
    let listed = topics["topics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "spread")
        .unwrap()
        .clone();
    assert_eq!(listed["records"], 5, "{listed}");
    assert_eq!(listed["size_bytes"], size, "{listed}");
    assert_eq!(listed["partitions_unknown"], 0, "{listed}");

    let groups = get_until(admin, "/api/v1/groups", |g| {
        g["groups"]
            .as_array()
            .is_some_and(|a| a.iter().any(|g| g["group_id"] == group))
    })
    .await;
    let g = groups["groups"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["group_id"] == group)
        .unwrap_or_else(|| panic!("{groups}"))
        .clone();
    assert_eq!(g["coordinator"], coordinator, "{g}");
    assert_eq!(g["state"], "Empty", "{g}");
    assert_eq!(g["partitions"], 1, "{g}");
    assert_eq!(g["lag_sum"], 3, "{g}");
    assert_eq!(g["lag_max"], 3, "{g}");

    let one = get(admin, &format!("/api/v1/groups/{group}")).await;
    assert_eq!(one["coordinator"], coordinator, "{one}");
    let offsets = one["offsets"].as_array().unwrap();
    assert_eq!(offsets.len(), 1, "{one}");
    assert_eq!(offsets[0]["topic"], "spread");
    assert_eq!(offsets[0]["committed_offset"], 2);
    assert_eq!(offsets[0]["high_watermark"], 5);
    assert_eq!(offsets[0]["lag"], 3);

    // Every broker answered the console's last read.
    let brokers = get(admin, "/api/v1/cluster").await;
    for b in brokers["brokers"].as_array().unwrap() {
        assert!(b["unreachable"].is_null(), "{brokers}");
    }
}
