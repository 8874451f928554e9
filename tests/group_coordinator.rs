//! The group coordinator as the broker uses it: one shared `GroupCoordinator`, consumers as
//! concurrent tasks awaiting delayed JoinGroup/SyncGroup responses, and a ticker driving a
//! manual clock.
use std::sync::Arc;

use bytes::Bytes;
use strata::clock::ManualClock;
use strata::coordinator::service::RequestContext;
use strata::coordinator::{GroupConfig, GroupCoordinator, InMemoryCoordinatorLog};
use strata::error::ErrorCode;
use strata::protocol::messages::heartbeat_request::HeartbeatRequest;
use strata::protocol::messages::join_group_request::{JoinGroupRequest, JoinGroupRequestProtocol};
use strata::protocol::messages::sync_group_request::{
    SyncGroupRequest, SyncGroupRequestAssignment,
};

fn assert_send_sync<T: Send + Sync>() {}
fn assert_send<T: Send>() {}

/// One consumer: the KIP-394 two-step join, then SyncGroup; returns (member id, assignment).
async fn consume(gc: Arc<GroupCoordinator>, name: &'static str) -> (String, i32, Bytes) {
    let ctx = RequestContext::new(9, name, "/127.0.0.1");
    let mut join = JoinGroupRequest {
        group_id: "orders".into(),
        session_timeout_ms: 10_000,
        rebalance_timeout_ms: 30_000,
        protocol_type: "consumer".into(),
        protocols: vec![JoinGroupRequestProtocol {
            name: "range".into(),
            metadata: Bytes::from_static(b"sub"),
            ..Default::default()
        }],
        ..Default::default()
    };
    let r = gc.join_group(&ctx, &join).await;
    assert_eq!(r.error_code, ErrorCode::MEMBER_ID_REQUIRED.code());
    join.member_id = r.member_id;
    let r = gc.join_group(&ctx, &join).await;
    assert_eq!(r.error_code, 0);
    let assignments = r
        .members
        .iter()
        .map(|m| SyncGroupRequestAssignment {
            member_id: m.member_id.clone(),
            assignment: Bytes::from(m.member_id.clone().into_bytes()),
            ..Default::default()
        })
        .collect();
    let sync = SyncGroupRequest {
        group_id: "orders".into(),
        generation_id: r.generation_id,
        member_id: r.member_id.clone(),
        protocol_type: Some("consumer".into()),
        protocol_name: Some("range".into()),
        assignments,
        ..Default::default()
    };
    let s = gc.sync_group(&ctx, &sync).await;
    assert_eq!(s.error_code, 0);
    (r.member_id, r.generation_id, s.assignment)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn consumers_join_concurrently_and_get_their_assignments() {
    assert_send_sync::<GroupCoordinator>();
    assert_send::<
        strata::coordinator::PendingResponse<
            strata::protocol::messages::join_group_response::JoinGroupResponse,
        >,
    >();
    let clock = ManualClock::new(0);
    let log = Arc::new(InMemoryCoordinatorLog::new());
    let gc = Arc::new(GroupCoordinator::new(
        GroupConfig::default(),
        clock.clone(),
        log.clone(),
    ));
    for p in 0..gc.config().offsets_topic_num_partitions {
        gc.load(p, Vec::new());
    }
    let tasks: Vec<_> = ["a", "b", "c"]
        .into_iter()
        .map(|name| tokio::spawn(consume(gc.clone(), name)))
        .collect();
    // The broker's ticker: 100 ms steps of a manual clock until everyone is through.
    let ticker = {
        let gc = gc.clone();
        let clock = clock.clone();
        tokio::spawn(async move {
            for _ in 0..1_000 {
                clock.advance(100);
                gc.tick();
                tokio::task::yield_now().await;
                tokio::time::sleep(std::time::Duration::from_millis(1)).await;
            }
        })
    };
    let mut results = Vec::new();
    for t in tasks {
        results.push(t.await.expect("consumer task"));
    }
    ticker.abort();
    let generation = results[0].1;
    for (member_id, gen, assignment) in &results {
        assert_eq!(*gen, generation, "one generation for all");
        assert_eq!(
            assignment.as_ref(),
            member_id.as_bytes(),
            "bytes as the leader sent them"
        );
        let hb = HeartbeatRequest {
            group_id: "orders".into(),
            generation_id: *gen,
            member_id: member_id.clone(),
            ..Default::default()
        };
        assert_eq!(
            gc.heartbeat(&RequestContext::new(4, "x", "y"), &hb)
                .error_code,
            0
        );
    }
    // The group's partition holds Kafka-format records (GroupMetadataKey type 2).
    let partition = gc.partition_for("orders");
    assert!(log.records(partition).iter().any(|r| r.key[..2] == [0, 2]));
}
