//! Requests sent to a cluster in its first seconds, while the controller quorum elects a
//! leader and the brokers register (issue 12, item 3): every request gets an answer within
//! its own timeout (plus the forwarding's retries), never silence. Kafka answers a
//! CreateTopics that cannot be placed yet with INVALID_REPLICATION_FACTOR, and one that the
//! controller cannot finish in time with REQUEST_TIMED_OUT.
mod common;

use std::time::{Duration, Instant};

use common::cluster::Cluster;
use common::Client;
use strata::error::ErrorCode;
use strata::protocol::messages::*;

/// How long past a request's own `timeout_ms` an answer may take (the broker's retries of a
/// controller that is not elected yet, and a loaded test machine).
const SLACK_MS: u64 = 8_000;

async fn create_topics_answer(
    addr: std::net::SocketAddr,
    name: String,
    timeout_ms: i32,
) -> (String, Option<i16>, Duration) {
    use create_topics_request::*;
    let started = Instant::now();
    let request = CreateTopicsRequest {
        topics: vec![CreatableTopic {
            name: name.clone(),
            num_partitions: 1,
            replication_factor: 3,
            ..Default::default()
        }],
        timeout_ms,
        ..Default::default()
    };
    let call = async {
        let mut c = Client::connect(addr).await;
        common::api_call!(
            c,
            create_topics_request::CreateTopicsRequest,
            create_topics_response::CreateTopicsResponse,
            7,
            request
        )
    };
    let limit = Duration::from_millis(timeout_ms as u64 + SLACK_MS);
    let code = tokio::time::timeout(limit, call)
        .await
        .ok()
        .map(|r| r.topics[0].error_code);
    (name, code, started.elapsed())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn create_topics_in_the_first_seconds_is_always_answered() {
    let mut cluster = Cluster::start().await;
    // Requests to every node, from the moment the listeners accept until well after the
    // brokers registered.
    let mut waves = Vec::new();
    for wave in 0..12 {
        for i in 0..3 {
            let addr = cluster.addr(i);
            waves.push(tokio::spawn(create_topics_answer(
                addr,
                format!("early-{wave}-{i}"),
                3_000,
            )));
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    let allowed = [
        0,
        ErrorCode::INVALID_REPLICATION_FACTOR.code(),
        ErrorCode::REQUEST_TIMED_OUT.code(),
        ErrorCode::NOT_CONTROLLER.code(),
    ];
    let mut created = 0;
    for w in waves {
        let (name, code, took) = w.await.unwrap();
        let code = code.unwrap_or_else(|| panic!("CreateTopics {name} unanswered after {took:?}"));
        eprintln!("{name}: {code} after {took:?}");
        assert!(
            allowed.contains(&code),
            "CreateTopics {name}: error {code} after {took:?}"
        );
        created += usize::from(code == 0);
    }
    assert!(created > 0, "the later requests succeed");
    for i in 0..3 {
        cluster.stop_node(i).await;
    }
}
