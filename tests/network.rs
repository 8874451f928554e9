//! The network front against slow, silent and hostile clients (issue 12 items 6, 11, 12):
//! read deadlines, idle expiry, per-IP limits, request memory and queue bounds, and the APIs
//! each listener serves.
mod common;
use common::*;

use std::net::SocketAddr;
use std::time::Duration;

use bytes::{BufMut, BytesMut};
use strata::protocol::messages::api_versions_request::ApiVersionsRequest;
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpSocket, TcpStream};

fn network(b: &TestBroker) -> &strata::server::listener::NetworkState {
    &b.running.as_ref().unwrap().network
}

async fn api_versions(
    c: &mut Client,
) -> strata::protocol::messages::api_versions_response::ApiVersionsResponse {
    api_call!(
        c,
        api_versions_request::ApiVersionsRequest,
        api_versions_response::ApiVersionsResponse,
        3,
        ApiVersionsRequest {
            client_software_name: "strata-test".into(),
            client_software_version: "1.0".into(),
            ..Default::default()
        }
    )
}

async fn still_serves(b: &TestBroker) {
    let mut c = b.client().await;
    assert_eq!(api_versions(&mut c).await.error_code, 0);
}

/// A connection from another loopback address, so the broker's own connections (127.0.0.1)
/// never share its per-IP count.
async fn connect_from(local: &str, to: SocketAddr) -> Client {
    let socket = TcpSocket::new_v4().unwrap();
    socket.bind(format!("{local}:0").parse().unwrap()).unwrap();
    let stream: TcpStream = socket.connect(to).await.unwrap();
    Client::from_stream(stream)
}

#[tokio::test]
async fn a_half_sent_frame_is_closed_after_the_read_deadline() {
    let b = TestBroker::start(&[("strata.request.read.timeout.ms", "300")]).await;
    let mut c = b.client().await;
    let mut f = BytesMut::new();
    f.put_i32(100);
    f.put_slice(&[0u8; 10]);
    c.stream.write_all(&f).await.unwrap();
    let started = std::time::Instant::now();
    assert!(c.is_closed().await, "a stalled frame holds its connection");
    assert!(started.elapsed() < Duration::from_millis(1_900));
    assert_eq!(
        network(&b).memory_pool.used_bytes(),
        0,
        "its memory is returned"
    );
    still_serves(&b).await;
}

/// When the connection's bytes stop, how long until the broker closes it (None: not within
/// `limit`).
async fn closed_within(stream: &mut TcpStream, limit: Duration) -> Option<Duration> {
    use tokio::io::AsyncReadExt;
    let started = std::time::Instant::now();
    let mut buf = [0u8; 64];
    loop {
        match tokio::time::timeout_at((started + limit).into(), stream.read(&mut buf)).await {
            Err(_) => return None,
            Ok(Ok(0)) | Ok(Err(_)) => return Some(started.elapsed()),
            Ok(Ok(_)) => {}
        }
    }
}

/// Kafka's idle expiry closes a connection that stopped mid-frame (issue 35): with
/// `connections.max.idle.ms` shorter than the read timeout, the idle timeout applies.
#[tokio::test]
async fn a_frame_stalled_mid_way_is_closed_at_the_idle_timeout_when_that_is_shorter() {
    let b = TestBroker::start(&[
        ("connections.max.idle.ms", "1000"),
        ("strata.request.read.timeout.ms", "30000"),
    ])
    .await;
    let mut c = b.client().await;
    assert_eq!(api_versions(&mut c).await.error_code, 0);
    let mut f = BytesMut::new();
    f.put_i32(100);
    f.put_slice(&[0u8; 10]);
    c.stream.write_all(&f).await.unwrap();
    let closed = closed_within(&mut c.stream, Duration::from_secs(10)).await;
    let after = closed.expect("a stalled frame held its connection past the idle timeout");
    assert!(
        after >= Duration::from_millis(900) && after < Duration::from_millis(3_000),
        "closed after {after:?}, not at the 1 s idle timeout"
    );
    assert_eq!(network(&b).memory_pool.used_bytes(), 0);
    still_serves(&b).await;
}

/// Bytes that keep coming are traffic: a frame trickling in is not closed at the idle timeout,
/// only at the read deadline.
#[tokio::test]
async fn a_frame_that_trickles_in_is_not_idle_and_meets_the_read_deadline() {
    let b = TestBroker::start(&[
        ("connections.max.idle.ms", "600"),
        ("strata.request.read.timeout.ms", "2000"),
    ])
    .await;
    let stream = TcpStream::connect(b.addr).await.unwrap();
    let (mut rd, mut wr) = stream.into_split();
    let trickle = tokio::spawn(async move {
        let mut f = BytesMut::new();
        f.put_i32(100);
        f.put_u8(0);
        wr.write_all(&f).await?;
        for _ in 0..30 {
            tokio::time::sleep(Duration::from_millis(200)).await;
            wr.write_all(&[0u8]).await?;
        }
        Ok::<_, std::io::Error>(wr)
    });
    let started = std::time::Instant::now();
    let mut buf = [0u8; 16];
    let closed = tokio::time::timeout(Duration::from_secs(10), async {
        use tokio::io::AsyncReadExt;
        while let Ok(n) = rd.read(&mut buf).await {
            if n == 0 {
                break;
            }
        }
    })
    .await;
    assert!(
        closed.is_ok(),
        "a trickling frame outlived its read deadline"
    );
    let after = started.elapsed();
    assert!(
        after >= Duration::from_millis(1_500) && after < Duration::from_millis(4_000),
        "closed after {after:?}, not at the 2 s read deadline"
    );
    trickle.abort();
    still_serves(&b).await;
}

#[tokio::test]
async fn an_idle_connection_is_closed_after_connections_max_idle_ms() {
    let b = TestBroker::start(&[("connections.max.idle.ms", "300")]).await;
    let mut c = b.client().await;
    assert_eq!(api_versions(&mut c).await.error_code, 0);
    assert!(c.is_closed().await, "an idle connection stays open");
    // A connection that keeps talking is not idle.
    let mut busy = b.client().await;
    for _ in 0..6 {
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert_eq!(api_versions(&mut busy).await.error_code, 0);
    }
}

#[tokio::test]
async fn the_per_ip_limit_refuses_the_next_connection_and_frees_the_slot_on_close() {
    let b = TestBroker::start(&[("max.connections.per.ip.overrides", "127.0.0.2:2")]).await;
    let mut first = connect_from("127.0.0.2", b.addr).await;
    let mut second = connect_from("127.0.0.2", b.addr).await;
    assert_eq!(api_versions(&mut first).await.error_code, 0);
    assert_eq!(api_versions(&mut second).await.error_code, 0);
    let mut third = connect_from("127.0.0.2", b.addr).await;
    assert!(
        third.is_closed().await,
        "a third connection from 127.0.0.2 was kept"
    );
    // Other addresses keep the default (unlimited) quota.
    still_serves(&b).await;
    drop(first);
    // The slot frees once the broker has seen the close.
    let mut fourth = None;
    for _ in 0..50 {
        tokio::time::sleep(Duration::from_millis(20)).await;
        if network(&b)
            .connection_quotas
            .count("127.0.0.2".parse().unwrap())
            < 2
        {
            fourth = Some(connect_from("127.0.0.2", b.addr).await);
            break;
        }
    }
    let mut fourth = fourth.expect("the closed connection's slot was not freed");
    assert_eq!(api_versions(&mut fourth).await.error_code, 0);
}

/// Kafka closes a channel at EOF, whatever its requests are still waiting for: a client that
/// sent a long-poll Fetch and closed gives its connection slot back at once, not when the
/// poll ends, and the requests it had sent still take effect.
#[tokio::test]
async fn a_client_that_closes_frees_its_slot_while_its_long_poll_still_waits() {
    use strata::protocol::messages::fetch_request::FetchRequest;
    let b = TestBroker::start(&[("max.connections.per.ip.overrides", "127.0.0.3:1")]).await;
    let mut admin = b.client().await;
    assert_eq!(create_topic_with(&mut admin, "quiet", 1, &[]).await, 0);
    assert_eq!(create_topic_with(&mut admin, "other", 1, &[]).await, 0);
    let mut c = connect_from("127.0.0.3", b.addr).await;
    let long_poll = FetchRequest {
        max_wait_ms: 30_000,
        ..fetch_request("quiet", 0, 0, 1 << 20)
    };
    c.write_request(1, 12, true, &long_poll).await;
    // A produce (to another topic: it must not end the poll) sent just before the close is
    // appended all the same.
    let records = batch(&[b"sent-then-closed"], None);
    c.write_request(0, 9, true, &common::txn::produce_req("other", records))
        .await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    drop(c);
    let freed = async {
        while network(&b)
            .connection_quotas
            .count("127.0.0.3".parse().unwrap())
            > 0
        {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    };
    tokio::time::timeout(Duration::from_secs(5), freed)
        .await
        .expect("the slot stays held until the 30 s long poll ends");
    let mut next = connect_from("127.0.0.3", b.addr).await;
    assert_eq!(api_versions(&mut next).await.error_code, 0);
    let p = fetch_partition(&mut admin, "other", 0, 0, 1 << 20).await;
    assert_eq!(p.high_watermark, 1, "the produce sent before the close");
}

#[tokio::test]
async fn a_huge_size_prefix_with_no_body_allocates_nothing_big_and_slow_clients_give_memory_back() {
    let b = TestBroker::start(&[("strata.request.read.timeout.ms", "1000")]).await;
    // 100 MB announced (socket.request.max.bytes allows it), 10 bytes sent.
    let mut huge = b.client().await;
    let mut f = BytesMut::new();
    f.put_i32(100 * 1024 * 1024);
    f.put_slice(&[0u8; 10]);
    huge.stream.write_all(&f).await.unwrap();
    // 50 slow clients, each 600 KB into a 1 MB frame.
    let mut slow = Vec::new();
    for _ in 0..50 {
        let mut c = b.client().await;
        let mut f = BytesMut::new();
        f.put_i32(1024 * 1024);
        f.put_slice(&vec![0u8; 600 * 1024]);
        c.stream.write_all(&f).await.unwrap();
        slow.push(c);
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    let used = network(&b).memory_pool.used_bytes();
    // Each frame holds what arrived, rounded up to its buffer's next doubling.
    assert!(
        used <= 64 * 1024 + 50 * 1024 * 1024,
        "{used} bytes reserved for 100 MB announced and 50 x 600 KB received"
    );
    assert!(used >= 1024 * 1024, "reads are not accounted: {used}");
    assert!(huge.is_closed().await);
    for c in &mut slow {
        assert!(c.is_closed().await);
    }
    assert_eq!(
        network(&b).memory_pool.used_bytes(),
        0,
        "memory never returned"
    );
    still_serves(&b).await;
}

#[tokio::test]
async fn queued_max_requests_bounds_the_requests_read_and_not_yet_handled() {
    let b = TestBroker::start(&[("queued.max.requests", "1")]).await;
    let mut c = b.client().await;
    // Take the only slot, as a request stuck before its handler would.
    let slot = network(&b)
        .request_queue
        .clone()
        .try_acquire_owned()
        .expect("one slot");
    let pending = tokio::spawn(async move {
        let r = api_versions(&mut c).await;
        r.error_code
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        !pending.is_finished(),
        "a request was read past queued.max.requests"
    );
    drop(slot);
    let code = tokio::time::timeout(Duration::from_secs(5), pending)
        .await
        .expect("served once the queue has room")
        .unwrap();
    assert_eq!(code, 0);
}

/// A Strata Raft RPC frame (the private key 32000) with a body of zeros.
fn raft_frame() -> BytesMut {
    let mut body = BytesMut::new();
    body.put_i16(32000);
    body.put_i16(0);
    body.put_i32(1);
    body.put_i16(-1);
    body.put_slice(&[0u8; 16]);
    let mut f = BytesMut::new();
    f.put_i32(body.len() as i32);
    f.put_slice(&body);
    f
}

/// A well-formed request frame, so that only the listener can be the reason it is refused.
fn encoded_request<Req: strata::protocol::codec::Encode>(
    api_key: i16,
    version: i16,
    request: &Req,
) -> BytesMut {
    let header = strata::protocol::header::RequestHeader {
        api_key,
        api_version: version,
        correlation_id: 1,
        client_id: Some("strata-test".into()),
        unknown_tagged_fields: vec![],
    };
    let mut body = BytesMut::new();
    header.encode(
        &mut body,
        strata::protocol::header::request_header_version(api_key, version),
    );
    request.encode(&mut body, version);
    let mut f = BytesMut::new();
    f.put_i32(body.len() as i32);
    f.put_slice(&body);
    f
}

#[tokio::test]
async fn the_raft_rpc_and_controller_apis_are_refused_on_a_broker_listener() {
    let b = TestBroker::start(&[]).await;
    let mut c = b.client().await;
    c.stream.write_all(&raft_frame()).await.unwrap();
    assert!(
        c.is_closed().await,
        "the Raft RPC was served on the client listener"
    );
    // BrokerRegistration v0 and BrokerHeartbeat v0 are scoped to controller listeners.
    use strata::protocol::messages::{broker_heartbeat_request, broker_registration_request};
    let frames = [
        (
            62,
            encoded_request(
                62,
                0,
                &broker_registration_request::BrokerRegistrationRequest {
                    broker_id: 7,
                    cluster_id: "x".into(),
                    ..Default::default()
                },
            ),
        ),
        (
            63,
            encoded_request(
                63,
                0,
                &broker_heartbeat_request::BrokerHeartbeatRequest {
                    broker_id: 7,
                    ..Default::default()
                },
            ),
        ),
    ];
    for (key, frame) in frames {
        let mut c = b.client().await;
        c.stream.write_all(&frame).await.unwrap();
        assert!(
            c.is_closed().await,
            "api {key} was served on the client listener"
        );
    }
    still_serves(&b).await;
}

#[tokio::test]
async fn api_versions_advertises_what_each_listener_serves() {
    let b = TestBroker::start(&[]).await;
    let running = b.running.as_ref().unwrap();
    let broker_keys: Vec<i16> = api_versions(&mut b.client().await)
        .await
        .api_keys
        .iter()
        .map(|k| k.api_key)
        .collect();
    for key in [0, 1, 3, 18, 19] {
        assert!(broker_keys.contains(&key), "broker listener lacks {key}");
    }
    for key in [56, 62, 63, 67, 73] {
        assert!(
            !broker_keys.contains(&key),
            "broker listener advertises {key}"
        );
    }
    // The embedded controller listener, bound after the client one.
    let controller_addr = running.local_addrs[1];
    let mut cc = Client::connect(controller_addr).await;
    let controller_keys: Vec<i16> = api_versions(&mut cc)
        .await
        .api_keys
        .iter()
        .map(|k| k.api_key)
        .collect();
    for key in [18, 19, 55, 62, 63] {
        assert!(
            controller_keys.contains(&key),
            "controller listener lacks {key}"
        );
    }
    for key in [0, 1, 3, 8] {
        assert!(
            !controller_keys.contains(&key),
            "controller listener advertises {key}"
        );
    }
    // And refuses what it does not advertise: Metadata v1 on the controller listener.
    let mut cc = Client::connect(controller_addr).await;
    let metadata = strata::protocol::messages::metadata_request::MetadataRequest::default();
    cc.stream
        .write_all(&encoded_request(3, 1, &metadata))
        .await
        .unwrap();
    assert!(cc.is_closed().await);
}

#[test]
fn listeners_that_cannot_be_secured_refuse_start_up_naming_the_key() {
    let dir = tempfile::tempdir().unwrap();
    // An SSL listener without key material: never plaintext, never a broker without TLS.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_strata"))
        .args([
            "--override",
            "listeners=SSL://127.0.0.1:20301",
            "--override",
        ])
        .arg(format!("log.dirs={}", dir.path().display()))
        .output()
        .unwrap();
    assert!(
        !out.status.success(),
        "started an SSL listener without a key"
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("ssl.keystore.location"), "{stderr}");
    // SASL on the inter-broker listener without `sasl.mechanism.inter.broker.protocol`:
    // Kafka's default, GSSAPI, is not implemented.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_strata"))
        .args([
            "--override",
            "listeners=SASL_SSL://127.0.0.1:20302",
            "--override",
            "sasl.enabled.mechanisms=SCRAM-SHA-512",
            "--override",
        ])
        .arg(format!("log.dirs={}", dir.path().display()))
        .output()
        .unwrap();
    assert!(
        !out.status.success(),
        "started SASL on the inter-broker listener"
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("sasl.mechanism.inter.broker.protocol") && stderr.contains("GSSAPI"),
        "{stderr}"
    );
}
