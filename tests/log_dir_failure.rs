//! A failing disk over the wire (issue 6, "Bad input and faults"): a broker with two log dirs,
//! one of which meets an injected I/O error. Its partitions answer KAFKA_STORAGE_ERROR (56) to
//! Produce, Fetch and ListOffsets, DescribeLogDirs reports the dir offline, the other dir keeps
//! serving, the failed produce is not acknowledged, and after a restart on a healthy disk
//! everything acknowledged is read back. A broker whose only dir fails shuts down.
mod common;

use std::time::Duration;

use common::txn::produce;
use common::{api_call, batch, create_topic_with, fetch_partition, TestBroker};
use strata::protocol::records::batch::BatchIter;

const KAFKA_STORAGE_ERROR: i16 = 56;

async fn list_latest(c: &mut common::Client, topic: &str) -> (i16, i64) {
    use strata::protocol::messages::list_offsets_request::*;
    let req = ListOffsetsRequest {
        replica_id: -1,
        topics: vec![ListOffsetsTopic {
            name: topic.into(),
            partitions: vec![ListOffsetsPartition {
                partition_index: 0,
                timestamp: -1,
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    };
    let r = api_call!(
        c,
        list_offsets_request::ListOffsetsRequest,
        list_offsets_response::ListOffsetsResponse,
        7,
        req
    );
    let p = &r.topics[0].partitions[0];
    (p.error_code, p.offset)
}

fn record_count(records: &Option<bytes::Bytes>) -> usize {
    records.as_ref().map_or(0, |r| {
        BatchIter::new(r)
            .map(|(h, _)| (h.last_offset() - h.base_offset + 1) as usize)
            .sum()
    })
}

#[tokio::test]
async fn one_failed_dir_goes_offline_and_the_other_serves() {
    let root = tempfile::tempdir().expect("tempdir");
    let dirs = format!(
        "{},{}",
        root.path().join("d0").display(),
        root.path().join("d1").display()
    );
    let broker = TestBroker::start_in(root, &[("log.dirs", &dirs)]).await;
    let mut c = broker.client().await;
    assert_eq!(create_topic_with(&mut c, "a", 1, &[]).await, 0);
    assert_eq!(create_topic_with(&mut c, "b", 1, &[]).await, 0);
    let replicas = broker
        .running
        .as_ref()
        .expect("running")
        .broker
        .replicas
        .clone();
    let a_dir = replicas.get("a", 0).expect("a").log.log_dir().clone();
    let b_dir = replicas.get("b", 0).expect("b").log.log_dir().clone();
    assert_ne!(a_dir.path(), b_dir.path(), "one partition per dir");

    assert_eq!(produce(&mut c, "a", batch(&[b"acked"], None)).await, (0, 0));
    assert_eq!(produce(&mut c, "b", batch(&[b"b0"], None)).await, (0, 0));

    a_dir.inject_io_failure();
    let (code, _) = produce(&mut c, "a", batch(&[b"lost"], None)).await;
    assert_eq!(code, KAFKA_STORAGE_ERROR, "the failed append is not acked");
    let (code, _) = produce(&mut c, "a", batch(&[b"later"], None)).await;
    assert_eq!(code, KAFKA_STORAGE_ERROR);
    assert_eq!(
        fetch_partition(&mut c, "a", 0, 0, 1 << 20).await.error_code,
        KAFKA_STORAGE_ERROR
    );
    assert_eq!(list_latest(&mut c, "a").await.0, KAFKA_STORAGE_ERROR);

    // The other dir is untouched.
    assert_eq!(produce(&mut c, "b", batch(&[b"b1"], None)).await, (0, 1));
    let b = fetch_partition(&mut c, "b", 0, 0, 1 << 20).await;
    assert_eq!(b.error_code, 0);
    assert_eq!(record_count(&b.records), 2);
    assert_eq!(list_latest(&mut c, "b").await, (0, 2));

    // Stopping the dir's replicas (the background task's pass, or this one) changes nothing
    // a client sees.
    replicas.handle_log_dir_failures();
    assert_eq!(
        fetch_partition(&mut c, "a", 0, 0, 1 << 20).await.error_code,
        KAFKA_STORAGE_ERROR
    );

    let logdirs = {
        use strata::protocol::messages::describe_log_dirs_request::*;
        api_call!(
            c,
            describe_log_dirs_request::DescribeLogDirsRequest,
            describe_log_dirs_response::DescribeLogDirsResponse,
            4,
            DescribeLogDirsRequest {
                topics: None,
                ..Default::default()
            }
        )
    };
    let offline = logdirs
        .results
        .iter()
        .find(|r| r.log_dir == a_dir.path().display().to_string())
        .expect("offline dir listed");
    assert_eq!(offline.error_code, KAFKA_STORAGE_ERROR);
    assert!(offline.topics.is_empty());
    let online = logdirs
        .results
        .iter()
        .find(|r| r.log_dir == b_dir.path().display().to_string())
        .expect("online dir listed");
    assert_eq!(online.error_code, 0);
    assert!(online.topics.iter().any(|t| t.name == "b"));
    drop(c);

    // A healthy disk again: what was acknowledged is there, the refused append is not.
    let broker = broker.restart(&[("log.dirs", &dirs)]).await;
    let mut c = broker.client().await;
    let a = fetch_partition(&mut c, "a", 0, 0, 1 << 20).await;
    assert_eq!(a.error_code, 0);
    assert_eq!(a.high_watermark, 1);
    assert_eq!(record_count(&a.records), 1);
    assert_eq!(list_latest(&mut c, "b").await, (0, 2));
}

#[tokio::test]
async fn the_broker_stops_when_its_last_dir_fails() {
    let broker = TestBroker::start(&[]).await;
    let mut c = broker.client().await;
    assert_eq!(create_topic_with(&mut c, "t", 1, &[]).await, 0);
    let running = broker.running.as_ref().expect("running");
    let log = running.broker.replicas.get("t", 0).expect("t").log.clone();
    log.log_dir().inject_io_failure();
    // Any I/O meets the fault (a background flush may get there first: the broker then stops
    // before a produce could be answered).
    assert!(log.flush().is_err());
    tokio::time::timeout(Duration::from_secs(5), running.shutdown_token().cancelled())
        .await
        .expect("the broker shuts itself down");
}

async fn describe_log_dirs(
    c: &mut common::Client,
) -> strata::protocol::messages::describe_log_dirs_response::DescribeLogDirsResponse {
    use strata::protocol::messages::describe_log_dirs_request::*;
    api_call!(
        c,
        describe_log_dirs_request::DescribeLogDirsRequest,
        describe_log_dirs_response::DescribeLogDirsResponse,
        5,
        DescribeLogDirsRequest {
            topics: None,
            ..Default::default()
        }
    )
}

#[tokio::test]
async fn a_dir_that_fails_at_start_up_is_offline_and_the_broker_serves_the_other() {
    let root = tempfile::tempdir().expect("tempdir");
    let (d0, d1) = (root.path().join("d0"), root.path().join("d1"));
    let dirs = format!("{},{}", d0.display(), d1.display());
    let broker = TestBroker::start_in(root, &[("log.dirs", &dirs)]).await;
    let mut c = broker.client().await;
    assert_eq!(create_topic_with(&mut c, "a", 1, &[]).await, 0);
    assert_eq!(create_topic_with(&mut c, "b", 1, &[]).await, 0);
    let running = broker.running.as_ref().expect("running");
    let in_dir = |t: &str| {
        running
            .broker
            .replicas
            .get(t, 0)
            .expect("partition")
            .log
            .dir()
            .parent()
            .expect("log dir")
            .to_path_buf()
    };
    // Least-loaded placement; whichever dir holds "a" is the one that fails.
    let (a_dir, b_dir) = (in_dir("a"), in_dir("b"));
    assert_ne!(a_dir, b_dir);
    assert_eq!(produce(&mut c, "a", batch(&[b"a0"], None)).await, (0, 0));
    assert_eq!(produce(&mut c, "b", batch(&[b"b0"], None)).await, (0, 0));
    drop(c);
    let root = {
        let mut broker = broker;
        broker
            .running
            .take()
            .expect("running")
            .stop()
            .await
            .expect("clean stop");
        broker.dir
    };
    // The clean shutdown checkpointed the high watermarks.
    let hw = std::fs::read_to_string(b_dir.join("replication-offset-checkpoint")).expect("read");
    assert!(hw.contains("b 0 1"), "{hw}");

    // a's dir cannot be loaded: its recovery-point checkpoint is unreadable (EISDIR).
    let checkpoint = a_dir.join("recovery-point-offset-checkpoint");
    std::fs::remove_file(&checkpoint).expect("remove");
    std::fs::create_dir(&checkpoint).expect("mkdir");
    let broker = TestBroker::start_in(root, &[("log.dirs", &dirs)]).await;
    let mut c = broker.client().await;
    let logdirs = describe_log_dirs(&mut c).await;
    let listed = |dir: &std::path::Path| {
        logdirs
            .results
            .iter()
            .find(|r| r.log_dir == dir.display().to_string())
            .expect("dir listed")
            .clone()
    };
    assert_eq!(listed(&a_dir).error_code, KAFKA_STORAGE_ERROR);
    assert!(listed(&a_dir).topics.is_empty());
    assert_eq!(listed(&b_dir).error_code, 0);
    // v5 (KIP-1066): Strata never cordons a dir.
    assert!(!listed(&b_dir).is_cordoned);
    assert!(listed(&b_dir).total_bytes > 0);

    // a is not recreated empty in the other dir: it answers KAFKA_STORAGE_ERROR.
    let (code, _) = produce(&mut c, "a", batch(&[b"a1"], None)).await;
    assert_eq!(code, KAFKA_STORAGE_ERROR);
    assert_eq!(
        fetch_partition(&mut c, "a", 0, 0, 1 << 20).await.error_code,
        KAFKA_STORAGE_ERROR
    );
    // b and new topics are served by the healthy dir.
    assert_eq!(produce(&mut c, "b", batch(&[b"b1"], None)).await, (0, 1));
    assert_eq!(create_topic_with(&mut c, "c", 1, &[]).await, 0);
    assert_eq!(produce(&mut c, "c", batch(&[b"c0"], None)).await, (0, 0));
    let running = broker.running.as_ref().expect("running");
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        !running.shutdown_token().is_cancelled(),
        "a lone broker keeps serving its other dir"
    );
    drop(c);

    // Healthy again: a's acknowledged record is back.
    std::fs::remove_dir(&checkpoint).expect("rmdir");
    let broker = broker.restart(&[("log.dirs", &dirs)]).await;
    let mut c = broker.client().await;
    let a = fetch_partition(&mut c, "a", 0, 0, 1 << 20).await;
    assert_eq!(a.error_code, 0);
    assert_eq!(record_count(&a.records), 1);
}
