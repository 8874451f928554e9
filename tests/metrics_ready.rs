//! `/health/ready` of a cluster member over real TCP: 503 (with its reason) while the node
//! cannot reach a controller quorum, 200 once registered, unfenced and caught up, 503 again
//! when the controller stops acknowledging its heartbeats for a session (the controller
//! fences a broker for that), and 200 when the quorum is back.
mod common;

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use common::cluster::Cluster;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

async fn ready(addr: SocketAddr) -> (u16, String) {
    let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
    s.write_all(b"GET /health/ready HTTP/1.1\r\nHost: strata\r\nConnection: close\r\n\r\n")
        .await
        .unwrap();
    let mut buf = Vec::new();
    s.read_to_end(&mut buf).await.unwrap();
    let text = String::from_utf8(buf).unwrap();
    let status = text.split(' ').nth(1).unwrap().parse().unwrap();
    let body = text
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_string())
        .unwrap_or_default();
    (status, body)
}

/// Polls until the probe answers `want`; the last answer otherwise.
async fn wait_for(addr: SocketAddr, want: u16, within: Duration) -> (u16, String) {
    let deadline = Instant::now() + within;
    loop {
        let got = ready(addr).await;
        if got.0 == want || Instant::now() > deadline {
            return got;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn readiness_follows_registration_fencing_and_recovery() {
    let mut cluster = Cluster::new(
        &["broker,controller"; 3],
        1,
        &["strata.admin.listeners=http://127.0.0.1:0"],
        false,
    );
    // Alone, the first node has no quorum: not registered, so not ready.
    cluster.start_node(0).await;
    let admin = cluster.nodes[0].running.as_ref().unwrap().admin_addrs[0];
    let (status, body) = ready(admin).await;
    assert_eq!(status, 503, "{body}");
    assert!(body.contains("not yet registered"), "{body}");

    cluster.start_node(1).await;
    cluster.start_node(2).await;
    let (status, body) = wait_for(admin, 200, Duration::from_secs(30)).await;
    assert_eq!(status, 200, "{body}");

    // The other two stop: no quorum acknowledges the heartbeats, so after a session
    // (broker.session.timeout.ms = 2000 in the harness) the node reports itself not ready.
    cluster.stop_node(1).await;
    cluster.stop_node(2).await;
    let (status, body) = wait_for(admin, 503, Duration::from_secs(30)).await;
    assert_eq!(status, 503, "{body}");
    assert!(
        body.contains("no heartbeat acknowledged") || body.contains("fenced"),
        "{body}"
    );

    cluster.start_node(1).await;
    cluster.start_node(2).await;
    let (status, body) = wait_for(admin, 200, Duration::from_secs(30)).await;
    assert_eq!(status, 200, "{body}");
}

/// The probe follows the metadata image's fencing record: a broker whose published image shows
/// it fenced (as after the controller's FenceBroker record) is not ready though its
/// heartbeats are answered, and ready again once the image shows it unfenced. The image is set
/// here as the publisher sets it; the fencing after lost heartbeats is the test above.
#[tokio::test]
async fn a_broker_its_image_shows_fenced_is_not_ready() {
    let broker =
        common::TestBroker::start(&[("strata.admin.listeners", "http://127.0.0.1:0")]).await;
    let running = broker.running.as_ref().unwrap();
    let admin = running.admin_addrs[0];
    let (status, body) = wait_for(admin, 200, Duration::from_secs(30)).await;
    assert_eq!(status, 200, "{body}");

    let cluster = &running.broker.cluster;
    let node_id = running.broker.node_id;
    let unfenced = cluster.published.borrow().clone();
    let mut fenced = (*unfenced).clone();
    fenced.brokers.get_mut(&node_id).unwrap().fenced = true;
    let fenced = std::sync::Arc::new(fenced);
    // The publisher may apply a newer image meanwhile; set the fenced one until it is seen.
    let mut answer = (0, String::new());
    for _ in 0..20 {
        cluster.published.send_replace(fenced.clone());
        answer = ready(admin).await;
        if answer.0 == 503 {
            break;
        }
    }
    assert_eq!(answer.0, 503, "{}", answer.1);
    assert!(
        answer.1.contains("fenced by the controller"),
        "{}",
        answer.1
    );

    cluster.published.send_replace(unfenced);
    let (status, body) = wait_for(admin, 200, Duration::from_secs(10)).await;
    assert_eq!(status, 200, "{body}");
}
