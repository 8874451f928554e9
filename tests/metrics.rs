//! The admin HTTP listener over real TCP: `/metrics` counters against known traffic (produce
//! N records, the per-topic and all-topics counters say N), request metrics, consumer lag from
//! committed offsets, OpenMetrics on request, the health probes, bounded routing (404, 405),
//! and start-up refusing a bad or busy `strata.admin.listeners`.
mod common;

use std::time::Duration;

use common::admin::{http, sample, scrape};
use common::{api_call, batch, create_topic_with, Client, TestBroker};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const ADMIN_ON: (&str, &str) = ("strata.admin.listeners", "http://127.0.0.1:0");

async fn produce(c: &mut Client, topic: &str, partition: i32, values: &[&[u8]]) -> i16 {
    let mut req = common::txn::produce_req(topic, batch(values, None));
    req.topic_data[0].partition_data[0].index = partition;
    let r = api_call!(
        c,
        produce_request::ProduceRequest,
        produce_response::ProduceResponse,
        9,
        req
    );
    r.responses[0].partition_responses[0].error_code
}

#[tokio::test]
async fn produce_and_fetch_counters_match_known_traffic() {
    let broker = TestBroker::start(&[ADMIN_ON]).await;
    let admin = broker.running.as_ref().unwrap().admin_addrs[0];
    let mut c = broker.client().await;
    assert_eq!(create_topic_with(&mut c, "orders", 1, &[]).await, 0);
    assert_eq!(create_topic_with(&mut c, "other", 1, &[]).await, 0);
    let values: Vec<Vec<u8>> = (0..7).map(|i| format!("v{i}").into_bytes()).collect();
    let refs: Vec<&[u8]> = values.iter().map(|v| v.as_slice()).collect();
    let mut bytes_in = 0;
    for _ in 0..3 {
        assert_eq!(produce(&mut c, "orders", 0, &refs).await, 0);
        bytes_in += batch(&refs, None).len();
    }
    assert_eq!(produce(&mut c, "other", 0, &refs[..2]).await, 0);
    // A partition that does not exist: a total produce request on all topics, no series for
    // the topic, and an error counted for Produce.
    assert_ne!(produce(&mut c, "orders", 5, &refs).await, 0);
    let read = common::fetch_partition(&mut c, "orders", 0, 0, 1 << 20).await;
    let bytes_out = read.records.as_ref().unwrap().len();

    let m = scrape(admin).await;
    let topic = |name: &str, t: &str| {
        sample(
            &m,
            &format!("kafka_server_brokertopicmetrics_{name}_total{{topic=\"{t}\"}}"),
        )
    };
    let all = |name: &str| sample(&m, &format!("kafka_server_brokertopicmetrics_{name}_total"));
    assert_eq!(topic("messagesin", "orders"), Some(21.0), "{m}");
    assert_eq!(topic("messagesin", "other"), Some(2.0));
    assert_eq!(all("messagesin"), Some(23.0));
    assert_eq!(topic("bytesin", "orders"), Some(bytes_in as f64));
    assert_eq!(topic("totalproducerequests", "orders"), Some(3.0));
    assert_eq!(all("totalproducerequests"), Some(5.0));
    // UNKNOWN_TOPIC_OR_PARTITION is not a failed produce in Kafka's meters.
    assert_eq!(all("failedproducerequests"), Some(0.0));
    assert_eq!(topic("bytesout", "orders"), Some(bytes_out as f64));
    assert_eq!(topic("totalfetchrequests", "orders"), Some(1.0));
    assert_eq!(
        sample(
            &m,
            "kafka_network_requestmetrics_requests_total{request=\"Produce\",version=\"9\"}"
        ),
        Some(5.0)
    );
    assert_eq!(
        sample(&m, "kafka_network_requestmetrics_errors_total{request=\"Produce\",error=\"UNKNOWN_TOPIC_OR_PARTITION\"}"),
        Some(1.0)
    );
    assert_eq!(
        sample(
            &m,
            "kafka_network_requestmetrics_totaltimems_count{request=\"Produce\"}"
        ),
        Some(5.0)
    );
    // An API no client called has no series yet (they appear with its first request).
    assert!(
        !m.contains("request=\"DeleteAcls\""),
        "series of an API never called"
    );
    assert_eq!(
        sample(
            &m,
            "kafka_server_socket_server_metrics_connection_count{listener=\"PLAINTEXT\"}"
        ),
        Some(1.0)
    );
    // State gauges of a single broker.
    assert_eq!(
        sample(&m, "kafka_server_replicamanager_underreplicatedpartitions"),
        Some(0.0)
    );
    assert_eq!(
        sample(&m, "kafka_controller_kafkacontroller_activecontrollercount"),
        Some(1.0)
    );
    assert_eq!(
        sample(
            &m,
            "kafka_controller_kafkacontroller_offlinepartitionscount"
        ),
        Some(0.0)
    );
    assert_eq!(
        sample(&m, "kafka_controller_kafkacontroller_globaltopiccount"),
        Some(2.0)
    );
    let log_size = sample(&m, "kafka_log_log_size{topic=\"orders\",partition=\"0\"}").unwrap();
    assert_eq!(log_size, bytes_in as f64);
    assert_eq!(
        sample(
            &m,
            "kafka_log_log_logendoffset{topic=\"orders\",partition=\"0\"}"
        ),
        Some(21.0)
    );
    assert!(sample(&m, "process_resident_memory_bytes").unwrap() > 1e6);
    assert!(sample(&m, "process_open_fds").unwrap() > 3.0);
    drop(c);
    tokio::time::sleep(Duration::from_millis(100)).await;
    let m = scrape(admin).await;
    assert_eq!(
        sample(
            &m,
            "kafka_server_socket_server_metrics_connection_close_total{listener=\"PLAINTEXT\"}"
        ),
        Some(1.0)
    );
}

#[tokio::test]
async fn consumer_lag_is_high_watermark_minus_committed_offset() {
    let broker = TestBroker::start(&[ADMIN_ON]).await;
    let admin = broker.running.as_ref().unwrap().admin_addrs[0];
    let mut c = broker.client().await;
    assert_eq!(create_topic_with(&mut c, "lagged", 2, &[]).await, 0);
    let ten: Vec<&[u8]> = vec![b"x"; 10];
    assert_eq!(produce(&mut c, "lagged", 0, &ten).await, 0);
    assert_eq!(produce(&mut c, "lagged", 1, &ten[..4]).await, 0);
    for (partition, offset) in [(0, 3), (1, 4)] {
        let r = common::offsets::commit(&mut c, 8, "g1", &[("lagged", partition)], offset).await;
        assert_eq!(r, vec![("lagged".to_string(), partition, 0)]);
    }
    let m = scrape(admin).await;
    let lag = |p: i32| {
        sample(
            &m,
            &format!("kafka_consumergroup_lag{{group=\"g1\",topic=\"lagged\",partition=\"{p}\"}}"),
        )
    };
    assert_eq!(lag(0), Some(7.0), "{m}");
    assert_eq!(lag(1), Some(0.0));
    assert_eq!(
        sample(&m, "kafka_consumergroup_lag_max{group=\"g1\"}"),
        Some(7.0)
    );
    assert_eq!(
        sample(&m, "kafka_consumergroup_lag_sum{group=\"g1\"}"),
        Some(7.0)
    );
    assert_eq!(
        sample(
            &m,
            "kafka_consumergroup_current_offset{group=\"g1\",topic=\"lagged\",partition=\"0\"}"
        ),
        Some(3.0)
    );
}

#[tokio::test]
async fn partition_series_are_capped_and_the_rest_counted() {
    let broker = TestBroker::start(&[ADMIN_ON, ("strata.metrics.max.partition.series", "4")]).await;
    let admin = broker.running.as_ref().unwrap().admin_addrs[0];
    let mut c = broker.client().await;
    assert_eq!(create_topic_with(&mut c, "wide", 3, &[]).await, 0);
    let m = scrape(admin).await;
    // Two series (size, end offset) per partition: two partitions fit, one is dropped.
    let sizes = m
        .lines()
        .filter(|l| l.starts_with("kafka_log_log_size{"))
        .count();
    assert_eq!(sizes, 2, "{m}");
    assert_eq!(
        sample(&m, "strata_metrics_partition_series_dropped"),
        Some(2.0)
    );
    assert_eq!(
        sample(&m, "kafka_server_replicamanager_partitioncount"),
        Some(3.0)
    );
}

#[tokio::test]
async fn openmetrics_health_and_routes() {
    let broker = TestBroker::start(&[ADMIN_ON]).await;
    let admin = broker.running.as_ref().unwrap().admin_addrs[0];
    let (status, head, body) = http(
        admin,
        "GET",
        "/metrics",
        "application/openmetrics-text;version=1.0.0",
    )
    .await;
    assert_eq!(status, 200);
    assert!(
        head.to_ascii_lowercase()
            .contains("content-type: application/openmetrics-text"),
        "{head}"
    );
    assert!(body.ends_with("# EOF\n"), "{body}");
    assert_eq!(body.matches("# EOF").count(), 1);
    let (_, head, body) = http(admin, "GET", "/metrics", "*/*").await;
    assert!(head.contains("text/plain; version=0.0.4"), "{head}");
    assert!(!body.contains("# EOF"));

    let (status, _, body) = http(admin, "GET", "/health/live", "*/*").await;
    assert_eq!((status, body.as_str()), (200, "{\"status\":\"live\"}\n"));
    let (status, _, body) = http(admin, "GET", "/health/ready", "*/*").await;
    assert_eq!((status, body.as_str()), (200, "{\"status\":\"ready\"}\n"));
    assert_eq!(http(admin, "GET", "/nope", "*/*").await.0, 404);
    let (status, head, _) = http(admin, "POST", "/metrics", "*/*").await;
    assert_eq!(status, 405);
    assert!(
        head.contains("allow: GET, HEAD") || head.contains("Allow: GET, HEAD"),
        "{head}"
    );

    // A request head past the limit is refused, not buffered.
    let mut s = tokio::net::TcpStream::connect(admin).await.unwrap();
    let huge = format!(
        "GET /metrics HTTP/1.1\r\nX-Big: {}\r\n\r\n",
        "a".repeat(64 * 1024)
    );
    let _ = s.write_all(huge.as_bytes()).await;
    let mut buf = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(10), s.read_to_end(&mut buf)).await;
    let text = String::from_utf8_lossy(&buf);
    assert!(
        text.is_empty() || text.starts_with("HTTP/1.1 431"),
        "{text}"
    );
}

#[tokio::test]
async fn bad_or_busy_admin_listener_stops_start_up() {
    let dir = tempfile::tempdir().unwrap();
    let e = strata::config::BrokerConfig::load(
        None,
        &["strata.admin.listeners=127.0.0.1:9644".to_string()],
    )
    .map(|_| ())
    .expect_err("a listener without http:// is refused")
    .to_string();
    assert!(e.contains("strata.admin.listeners"), "{e}");

    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port();
    let url = format!("http://127.0.0.1:{port}");
    let config = common::config_for(dir.path(), &[("strata.admin.listeners", &url)]);
    let e = match strata::server::startup::start(config, strata::clock::system()).await {
        Ok(_) => panic!("started with its admin port taken"),
        Err(e) => e.to_string(),
    };
    assert!(
        e.contains("strata.admin.listeners") && e.contains(&port.to_string()),
        "{e}"
    );

    // Empty: no admin listener at all.
    let broker = TestBroker::start(&[("strata.admin.listeners", "")]).await;
    assert!(broker.running.as_ref().unwrap().admin_addrs.is_empty());
}
