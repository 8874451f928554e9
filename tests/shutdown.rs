//! Shutdown with requests still waiting: a JoinGroup parked in the coordinator (its rebalance
//! is driven by the broker's timers, which stop at shutdown) must not keep the broker from
//! stopping. Found with franz-go's kgo suite: a SIGTERM during its group tests left the
//! broker waiting forever on such responses, its sockets in CLOSE-WAIT.
mod common;

use std::time::{Duration, Instant};

use common::TestBroker;
use strata::protocol::messages::find_coordinator_request::FindCoordinatorRequest;
use strata::protocol::messages::find_coordinator_response::FindCoordinatorResponse;
use strata::protocol::messages::join_group_request::{JoinGroupRequest, JoinGroupRequestProtocol};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_does_not_wait_for_parked_join_group() {
    // A long initial rebalance delay parks the first JoinGroup for a minute.
    let mut broker = TestBroker::start(&[("group.initial.rebalance.delay.ms", "60000")]).await;
    let mut c = broker.client().await;
    let find = FindCoordinatorRequest {
        key: "parked".into(),
        ..Default::default()
    };
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let r: FindCoordinatorResponse = c.send(10, 0, &find, false, false).await;
        if r.error_code == 0 {
            break;
        }
        assert!(Instant::now() < deadline, "coordinator never ready");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let join = JoinGroupRequest {
        group_id: "parked".into(),
        session_timeout_ms: 30_000,
        rebalance_timeout_ms: 60_000,
        protocol_type: "consumer".into(),
        protocols: vec![JoinGroupRequestProtocol {
            name: "range".into(),
            metadata: bytes::Bytes::from_static(b"m"),
            ..Default::default()
        }],
        ..Default::default()
    };
    // JoinGroup v3 (no KIP-394 member-id round trip): the response waits for the delay.
    let joiner = tokio::spawn(async move {
        let _ = c.send_raw(11, 3, false, false, &join).await;
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!joiner.is_finished(), "JoinGroup is parked");

    let started = Instant::now();
    let running = broker.running.take().expect("running");
    tokio::time::timeout(Duration::from_secs(20), running.stop())
        .await
        .expect("shutdown finishes with a parked request")
        .expect("clean shutdown");
    // The 3 s drain, not the 60 s delay nor the 60 s rebalance timeout.
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
    joiner.abort();
}
