//! `/metrics` over real TCP against known events on one broker: a deleted topic's and a
//! deleted group's series disappear; a long-poll Fetch spends its wait in `remotetimems` and
//! counts as `FetchConsumer`, a fetch naming a replica as `FetchFollower`, both also as
//! `Fetch`; the group coordinator counts committed offsets; the coordinators report how long
//! their partitions took to load.
mod common;

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use common::admin::{sample, scrape};
use common::{api_call, batch, create_topic_with, Client, TestBroker};

const ADMIN_ON: (&str, &str) = ("strata.admin.listeners", "http://127.0.0.1:0");

async fn produce(c: &mut Client, topic: &str) {
    let (code, _) = common::txn::produce(c, topic, batch(&[b"a", b"b"], None)).await;
    assert_eq!(code, 0);
}

/// Scrapes until `done` holds for the text, at most 10 s; the last scrape.
async fn scrape_until(admin: SocketAddr, done: impl Fn(&str) -> bool) -> String {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let m = scrape(admin).await;
        if done(&m) || Instant::now() > deadline {
            return m;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// A Fetch v12 of partition 0 of `topic` from offset 0 by `replica_id` (-1: a consumer).
async fn fetch(c: &mut Client, topic: &str, replica_id: i32, max_wait_ms: i32) -> i16 {
    let mut req = common::fetch_request(topic, 0, 0, 1 << 20);
    req.replica_id = replica_id;
    req.max_wait_ms = max_wait_ms;
    let r = api_call!(
        c,
        fetch_request::FetchRequest,
        fetch_response::FetchResponse,
        12,
        req
    );
    r.responses[0].partitions[0].error_code
}

#[tokio::test]
async fn deleted_topics_and_groups_leave_no_series() {
    let broker = TestBroker::start(&[ADMIN_ON]).await;
    let admin = broker.running.as_ref().unwrap().admin_addrs[0];
    let mut c = broker.client().await;
    for t in ["doomed", "kept"] {
        assert_eq!(create_topic_with(&mut c, t, 1, &[]).await, 0);
        produce(&mut c, t).await;
        assert_eq!(fetch(&mut c, t, -1, 0).await, 0);
    }
    let r = common::offsets::commit(&mut c, 8, "g-doomed", &[("doomed", 0)], 1).await;
    assert_eq!(r, vec![("doomed".to_string(), 0, 0)]);
    let r = common::offsets::commit(&mut c, 8, "g-gone", &[("kept", 0)], 1).await;
    assert_eq!(r, vec![("kept".to_string(), 0, 0)]);
    let m = scrape(admin).await;
    for series in [
        "kafka_server_brokertopicmetrics_messagesin_total{topic=\"doomed\"}",
        "kafka_server_brokertopicmetrics_bytesout_total{topic=\"doomed\"}",
        "kafka_log_log_size{topic=\"doomed\",partition=\"0\"}",
        "kafka_consumergroup_lag{group=\"g-doomed\",topic=\"doomed\",partition=\"0\"}",
        "kafka_consumergroup_lag_sum{group=\"g-gone\"}",
    ] {
        assert!(sample(&m, series).is_some(), "{series} missing in\n{m}");
    }

    let r = api_call!(
        c,
        delete_topics_request::DeleteTopicsRequest,
        delete_topics_response::DeleteTopicsResponse,
        5,
        delete_topics_request::DeleteTopicsRequest {
            topic_names: vec!["doomed".into()],
            timeout_ms: 5000,
            ..Default::default()
        }
    );
    assert_eq!(r.responses[0].error_code, 0);
    let r = api_call!(
        c,
        delete_groups_request::DeleteGroupsRequest,
        delete_groups_response::DeleteGroupsResponse,
        2,
        delete_groups_request::DeleteGroupsRequest {
            groups_names: vec!["g-gone".into()],
            ..Default::default()
        }
    );
    assert_eq!(r.results[0].error_code, 0);

    let m = scrape_until(admin, |m| {
        !m.contains("\"doomed\"") && !m.contains("\"g-gone\"")
    })
    .await;
    assert!(!m.contains("topic=\"doomed\""), "{m}");
    assert!(!m.contains("group=\"g-gone\""), "{m}");
    // The other topic and the all-topics totals stay.
    assert_eq!(
        sample(
            &m,
            "kafka_server_brokertopicmetrics_messagesin_total{topic=\"kept\"}"
        ),
        Some(2.0)
    );
    assert_eq!(
        sample(&m, "kafka_server_brokertopicmetrics_messagesin_total"),
        Some(4.0)
    );
}

#[tokio::test]
async fn fetch_is_split_by_consumer_and_follower_and_long_polls_count_as_remote_time() {
    let broker = TestBroker::start(&[ADMIN_ON]).await;
    let admin = broker.running.as_ref().unwrap().admin_addrs[0];
    let mut c = broker.client().await;
    assert_eq!(create_topic_with(&mut c, "quiet", 1, &[]).await, 0);
    // Nothing to read: the fetch waits out its max_wait_ms in purgatory.
    let started = Instant::now();
    assert_eq!(fetch(&mut c, "quiet", -1, 400).await, 0);
    assert!(started.elapsed() >= Duration::from_millis(400));
    // A fetch naming replica 7: a follower's fetch (refused, as 7 is no replica of it).
    assert_ne!(fetch(&mut c, "quiet", 7, 0).await, 0);

    let m = scrape(admin).await;
    let rm = |name: &str, request: &str| {
        sample(
            &m,
            &format!("kafka_network_requestmetrics_{name}{{request=\"{request}\"}}"),
        )
    };
    let requests = |request: &str| {
        sample(
            &m,
            &format!(
                "kafka_network_requestmetrics_requests_total{{request=\"{request}\",version=\"12\"}}"
            ),
        )
    };
    assert_eq!(requests("Fetch"), Some(2.0), "{m}");
    assert_eq!(requests("FetchConsumer"), Some(1.0));
    assert_eq!(requests("FetchFollower"), Some(1.0));
    // The long poll's wait is remote time, not local time.
    let remote = rm("remotetimems_sum", "FetchConsumer").unwrap();
    assert!((380.0..5000.0).contains(&remote), "remote {remote} ms");
    let local = rm("localtimems_sum", "FetchConsumer").unwrap();
    assert!(local < 300.0, "local {local} ms");
    let total = rm("totaltimems_sum", "FetchConsumer").unwrap();
    assert!(total >= remote + local, "total {total} ms");
    assert_eq!(rm("remotetimems_count", "FetchFollower"), Some(1.0));
    // Every request has a queue time (the wait for a queued.max.requests slot: none here).
    assert_eq!(rm("requestqueuetimems_count", "Fetch"), Some(2.0));
    assert!(rm("requestqueuetimems_sum", "Fetch").unwrap() < 50.0);
    assert_eq!(rm("requestqueuetimems_count", "CreateTopics"), Some(1.0));
}

#[tokio::test]
async fn coordinators_count_commits_and_report_partition_load_times() {
    let broker = TestBroker::start(&[ADMIN_ON]).await;
    let admin = broker.running.as_ref().unwrap().admin_addrs[0];
    let mut c = broker.client().await;
    assert_eq!(create_topic_with(&mut c, "t", 3, &[]).await, 0);
    let r = common::offsets::commit(&mut c, 8, "g", &[("t", 0), ("t", 1), ("t", 2)], 0).await;
    assert!(r.iter().all(|(_, _, code)| *code == 0), "{r:?}");
    let r = common::offsets::commit(&mut c, 8, "g", &[("t", 0)], 0).await;
    assert_eq!(r[0].2, 0);
    common::txn::txn_init(&mut c, "tx", 60_000).await;

    let m = scrape(admin).await;
    let gc = "kafka_server_group_coordinator_metrics_";
    assert_eq!(
        sample(&m, &format!("{gc}offset_commit_count")),
        Some(4.0),
        "{m}"
    );
    assert_eq!(
        sample(&m, &format!("{gc}offset_expiration_count")),
        Some(0.0)
    );
    assert_eq!(
        sample(&m, &format!("{gc}group_completed_rebalance_count")),
        Some(0.0)
    );
    for prefix in [gc, "kafka_server_transaction_coordinator_metrics_"] {
        let max = sample(&m, &format!("{prefix}partition_load_time_max"));
        let avg = sample(&m, &format!("{prefix}partition_load_time_avg"));
        // A partition was loaded (the internal topic was created on first use): both are set,
        // and no load took longer than the test.
        assert!(
            matches!((max, avg), (Some(x), Some(a)) if x >= a && a > 0.0 && x < 60_000.0),
            "{prefix}: {max:?} {avg:?}"
        );
    }
}
