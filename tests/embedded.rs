//! The single-node default as a quorum of one: data written by earlier versions, whose
//! metadata lived in `__strata_metadata.log`, is imported into the quorum once (topics with
//! their ids, partition counts and configs, and the producer-id high mark), and served.
mod common;

use std::collections::BTreeMap;

use common::{batch, fetch_partition, TestBroker};

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
