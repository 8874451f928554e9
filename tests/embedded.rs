//! The single-node default as a quorum of one: data written by earlier versions, whose
//! metadata lived in `__strata_metadata.log`, is imported into the quorum once (topics with
//! their ids, partition counts and configs, and the producer-id high mark), and served.
mod common;

use std::collections::BTreeMap;

use common::{api_call, batch, fetch_partition, TestBroker};

#[tokio::test]
async fn legacy_single_node_metadata_is_imported_once() {
    let dir = tempfile::tempdir().unwrap();
    let (legacy_id, producer_id_limit) = {
        let store = strata::controller::MetadataStore::open(dir.path()).unwrap();
        let mut configs = BTreeMap::new();
        configs.insert("retention.ms".to_string(), "3600000".to_string());
        let meta = store.create_topic("old", 3, &configs, false).unwrap();
        let _ = store.allocate_producer_id().unwrap();
        (meta.id, store.producer_id_limit())
    };

    let broker = TestBroker::start_in(dir, &[]).await;
    let running = broker.running.as_ref().unwrap();
    let topic = running.broker.cluster.topic("old").expect("imported");
    assert_eq!(topic.id, legacy_id, "the topic keeps its id");
    assert_eq!(topic.partitions, 3);
    assert_eq!(
        topic.configs.get("retention.ms").map(String::as_str),
        Some("3600000")
    );
    assert!(!broker.dir.path().join("__strata_metadata.log").exists());
    assert!(broker
        .dir
        .path()
        .join("__strata_metadata.log.imported")
        .exists());

    let mut c = broker.client().await;
    let (code, offset) = common::txn::produce(&mut c, "old", batch(&[b"kept"], None)).await;
    assert_eq!((code, offset), (0, 0));
    let r = common::txn::init_idempotent_producer(&mut c).await;
    assert_eq!(r.error_code, 0);
    assert!(
        r.producer_id >= producer_id_limit,
        "producer id {} reuses ids the old version may have handed out (below {producer_id_limit})",
        r.producer_id
    );

    // A restart reads the quorum, not the old file, and keeps the data.
    let broker = broker.restart(&[]).await;
    let mut c = broker.client().await;
    let p = fetch_partition(&mut c, "old", 0, 0, 1 << 20).await;
    assert_eq!(p.error_code, 0);
    assert_eq!(p.high_watermark, 1);
    let topic = broker
        .running
        .as_ref()
        .unwrap()
        .broker
        .cluster
        .topic("old")
        .expect("still there");
    assert_eq!(topic.id, legacy_id);
}

/// The first Metadata a client gets from a starting single node lists that node (and names it
/// controller). Clients that connect while it starts wait in the listen backlog until it is
/// registered and unfenced; answering earlier listed no broker at all, and librdkafka's admin
/// client then waited 30 s before trying again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_first_metadata_of_a_starting_node_lists_it() {
    use strata::protocol::messages::metadata_request::MetadataRequest;
    let dir = tempfile::tempdir().unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_strata"))
        .args([
            "--override",
            &format!("listeners=PLAINTEXT://127.0.0.1:{port}"),
            "--override",
            "strata.admin.listeners=",
            "--override",
            &format!("log.dirs={}", dir.path().display()),
        ])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("spawn strata");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    let stream = loop {
        // Connects as soon as the port is bound.
        if let Ok(s) = tokio::net::TcpStream::connect(("127.0.0.1", port)).await {
            break s;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "strata never listened"
        );
        tokio::time::sleep(std::time::Duration::from_micros(200)).await;
    };
    let mut c = common::Client::from_stream(stream);
    let r = api_call!(
        c,
        metadata_request::MetadataRequest,
        metadata_response::MetadataResponse,
        13,
        MetadataRequest {
            topics: Some(vec![]),
            ..Default::default()
        }
    );
    let _ = child.kill();
    let _ = child.wait();
    assert_eq!(
        r.brokers
            .iter()
            .map(|b| (b.node_id, b.port))
            .collect::<Vec<_>>(),
        vec![(1, port as i32)]
    );
    assert_eq!(r.controller_id, 1);
}
