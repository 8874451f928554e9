//! The default admin listener and Kafka's own configs (issue 35): several nodes started on one
//! host from Kafka's per-node `server.properties`, which never name `strata.admin.listeners`,
//! must not stop because the default address (127.0.0.1:9644) is taken by the first. The
//! default is skipped with a warning naming the key; a listener set explicitly still stops
//! start-up when its port is taken. The tests take an ephemeral port, not 9644 itself, which
//! other tests and brokers on the machine may hold: the default address is replaced in the
//! loaded configuration, which is what start-up binds.
mod common;

use std::time::Duration;

use common::logs::Captured;
use strata::config::BrokerConfig;

/// The properties a Kafka node's own `server.properties` would give, with `extra` lines.
fn kafka_properties(dir: &std::path::Path, extra: &str) -> String {
    format!(
        "listeners=PLAINTEXT://127.0.0.1:0\nlog.dirs={}\nnum.partitions=1\n{extra}",
        dir.display()
    )
}

#[tokio::test]
async fn a_default_admin_listener_whose_port_is_taken_is_skipped_with_a_warning() {
    let captured = Captured::default();
    let writer = captured.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_writer(move || writer.clone())
        .with_ansi(false)
        .with_max_level(tracing::Level::INFO)
        .finish();
    // The test's runtime is current-thread: start-up logs through this subscriber.
    let _guard = tracing::subscriber::set_default(subscriber);

    let dir = tempfile::tempdir().unwrap();
    let (mut config, _) = BrokerConfig::load(Some(&kafka_properties(dir.path(), "")), &[])
        .expect("a Kafka config loads");
    let default: Vec<String> = config
        .admin_listeners
        .iter()
        .map(|l| l.bind_address())
        .collect();
    assert_eq!(default, vec!["127.0.0.1:9644".to_string()]);
    // Another node on this host holds the default address.
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port();
    config.admin_listeners[0].port = port;

    let running = strata::server::startup::start(config, strata::clock::system())
        .await
        .expect("a default admin listener that cannot bind does not stop start-up");
    assert!(running.admin_addrs.is_empty(), "{:?}", running.admin_addrs);
    let warnings = captured.lines_with("strata.admin.listeners");
    assert!(
        warnings
            .iter()
            .any(|l| l.contains("WARN") && l.contains(&format!("127.0.0.1:{port}"))),
        "no warning naming the key and the address: {warnings:?}"
    );

    // The broker serves Kafka requests.
    let mut c = common::Client::connect(running.local_addrs[0]).await;
    assert_eq!(common::create_topic_with(&mut c, "served", 1, &[]).await, 0);
    let md = common::topic_metadata(&mut c, "served").await;
    assert_eq!(md.topics[0].error_code, 0);
    assert_eq!(md.topics[0].partitions.len(), 1);
    tokio::time::timeout(Duration::from_secs(30), running.stop())
        .await
        .expect("stops")
        .expect("stops cleanly");
}

#[tokio::test]
async fn an_explicit_admin_listener_whose_port_is_taken_stops_start_up() {
    let dir = tempfile::tempdir().unwrap();
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port();
    let text = kafka_properties(
        dir.path(),
        &format!("strata.admin.listeners=http://127.0.0.1:{port}\n"),
    );
    let (config, _) = BrokerConfig::load(Some(&text), &[]).expect("config loads");
    let e = match strata::server::startup::start(config, strata::clock::system()).await {
        Ok(_) => panic!("started with its explicit admin port taken"),
        Err(e) => e.to_string(),
    };
    assert!(
        e.contains("strata.admin.listeners") && e.contains(&format!("127.0.0.1:{port}")),
        "{e}"
    );
    assert!(e.to_ascii_lowercase().contains("in use"), "{e}");
}
