//! Requests sent to a cluster in its first seconds, while the controller quorum elects a
//! leader and the brokers register (issue 12, item 3): every request gets an answer within
//! its own timeout (plus the forwarding's retries), never silence. Kafka answers a
//! CreateTopics that cannot be placed yet with INVALID_REPLICATION_FACTOR, and one that the
//! controller cannot finish in time with REQUEST_TIMED_OUT.
mod common;

use std::time::{Duration, Instant};

use common::cluster::{describe_quorum, Cluster};
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

/// A DeleteTopics the controller cannot finish (the quorum is lost: two of three nodes are
/// down) is answered at its own timeout plus the broker's margin, with one result per topic
/// asked for, under its name (v0-5) or its name or id (v6+): a result with neither leaves the
/// Java admin client with "missing result", which it does not retry.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn delete_topics_without_a_quorum_answers_every_topic_asked_for() {
    use delete_topics_request::*;
    let mut cluster = Cluster::start().await;
    cluster.wait_brokers(0, 3).await;
    let mut created = false;
    for _ in 0..40 {
        let (_, code, _) = create_topics_answer(cluster.addr(0), "doomed".into(), 5_000).await;
        if code == Some(0) {
            created = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    assert!(created, "the topic is created while the quorum stands");
    cluster.stop_node(1).await;
    cluster.stop_node(2).await;
    let unanswerable = [
        ErrorCode::REQUEST_TIMED_OUT.code(),
        ErrorCode::NOT_CONTROLLER.code(),
    ];
    let id = strata::protocol::codec::Uuid([7; 16]);
    for version in [5i16, 6] {
        let request = if version < 6 {
            DeleteTopicsRequest {
                topic_names: vec!["doomed".into(), "other".into()],
                timeout_ms: 1_000,
                ..Default::default()
            }
        } else {
            DeleteTopicsRequest {
                topics: vec![
                    DeleteTopicState {
                        name: Some("doomed".into()),
                        ..Default::default()
                    },
                    DeleteTopicState {
                        name: None,
                        topic_id: id,
                        ..Default::default()
                    },
                ],
                timeout_ms: 1_000,
                ..Default::default()
            }
        };
        let started = Instant::now();
        let call = async {
            let mut c = Client::connect(cluster.addr(0)).await;
            common::api_call!(
                c,
                delete_topics_request::DeleteTopicsRequest,
                delete_topics_response::DeleteTopicsResponse,
                version,
                request
            )
        };
        let r = tokio::time::timeout(Duration::from_millis(1_000 + SLACK_MS), call)
            .await
            .unwrap_or_else(|_| panic!("DeleteTopics v{version} unanswered"));
        eprintln!(
            "v{version}: {:?} after {:?}",
            r.responses,
            started.elapsed()
        );
        let mut got: Vec<(Option<String>, [u8; 16])> = r
            .responses
            .iter()
            .map(|t| (t.name.clone(), *t.topic_id.as_bytes()))
            .collect();
        got.sort();
        let mut want = if version < 6 {
            vec![
                (Some("doomed".to_string()), [0; 16]),
                (Some("other".into()), [0; 16]),
            ]
        } else {
            vec![(Some("doomed".to_string()), [0; 16]), (None, [7; 16])]
        };
        want.sort();
        assert_eq!(got, want, "v{version}: one result per topic asked for");
        for t in &r.responses {
            assert!(
                unanswerable.contains(&t.error_code),
                "v{version} {:?}: error {}",
                t.name,
                t.error_code
            );
        }
    }
    cluster.stop_node(0).await;
}

/// The brokers' own RPCs to an active controller that has lost its quorum (its two peers are
/// down; openraft keeps an isolated leader leading) are answered at the controller's
/// operation bound with REQUEST_TIMED_OUT, one after another: the first one no longer holds
/// every later one (the sender's heartbeats above all) behind it forever.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn controller_rpcs_without_a_quorum_are_answered_in_time() {
    use broker_heartbeat_request::*;
    let mut cluster = Cluster::start().await;
    cluster.wait_brokers(0, 3).await;
    let leader = describe_quorum(cluster.addr(0), 1).await.topics[0].partitions[0].leader_id;
    let li = cluster.index_of(leader);
    for i in 0..3 {
        if i != li {
            cluster.stop_node(i).await;
        }
    }
    let bound = Duration::from_millis(strata::controller::service::OPERATION_TIMEOUT_MS + 5_000);
    let mut c = Client::connect(cluster.controller_addr(li)).await;
    for round in 0..2 {
        let started = Instant::now();
        let call = async {
            common::api_call!(
                c,
                broker_heartbeat_request::BrokerHeartbeatRequest,
                broker_heartbeat_response::BrokerHeartbeatResponse,
                1,
                BrokerHeartbeatRequest {
                    broker_id: leader,
                    broker_epoch: -1,
                    current_metadata_offset: 0,
                    ..Default::default()
                }
            )
        };
        let r = tokio::time::timeout(bound, call)
            .await
            .unwrap_or_else(|_| panic!("heartbeat {round} unanswered after {bound:?}"));
        eprintln!(
            "heartbeat {round}: error {} after {:?}",
            r.error_code,
            started.elapsed()
        );
        assert!(
            [
                ErrorCode::REQUEST_TIMED_OUT.code(),
                ErrorCode::NOT_CONTROLLER.code()
            ]
            .contains(&r.error_code),
            "heartbeat {round}: error {}",
            r.error_code
        );
    }
    cluster.stop_node(li).await;
}
