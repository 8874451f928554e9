//! WriteTxnMarkers (key 27) as an inbound API, as a transaction coordinator on another broker
//! sends it: COMMIT and ABORT markers land through the partition path the local coordinator
//! uses (read_committed then sees the committed data and the aborted range), and the per
//! partition errors follow Kafka's `handleWriteTxnMarkersRequest`.
mod common;
use common::txn::*;
use common::*;

use strata::protocol::messages::write_txn_markers_request::*;
use strata::protocol::messages::write_txn_markers_response::WriteTxnMarkersResponse;

async fn write_marker(
    c: &mut Client,
    version: i16,
    pid: (i64, i16),
    commit: bool,
    coordinator_epoch: i32,
    topic: &str,
    partition: i32,
) -> i16 {
    let req = WriteTxnMarkersRequest {
        markers: vec![WritableTxnMarker {
            producer_id: pid.0,
            producer_epoch: pid.1,
            transaction_result: commit,
            topics: vec![WritableTxnMarkerTopic {
                name: topic.into(),
                partition_indexes: vec![partition],
                ..Default::default()
            }],
            coordinator_epoch,
            ..Default::default()
        }],
        ..Default::default()
    };
    let r: WriteTxnMarkersResponse = c
        .send(
            27,
            version,
            &req,
            WriteTxnMarkersRequest::is_flexible(version),
            WriteTxnMarkersResponse::is_flexible(version),
        )
        .await;
    assert_eq!(r.markers.len(), 1);
    assert_eq!(r.markers[0].producer_id, pid.0);
    let t = &r.markers[0].topics[0];
    assert_eq!(t.name, topic);
    assert_eq!(t.partitions[0].partition_index, partition);
    t.partitions[0].error_code
}

#[tokio::test]
async fn remote_coordinator_markers_commit_abort_and_are_fenced() {
    // The markers here play a coordinator the broker does not know, so the broker must not
    // ask its own coordinator before transactional writes (KIP-890 verification off).
    let broker = TestBroker::start(&[("transaction.partition.verification.enable", "false")]).await;
    let mut c = broker.client().await;
    create_topic(&mut c, "wm").await;

    // A transaction whose coordinator is "elsewhere": this broker only sees data and markers.
    let pid = txn_init(&mut c, "remote-1", 60_000).await;
    txn_add(&mut c, "remote-1", pid, "wm").await;
    assert_eq!(
        produce_as(
            &mut c,
            Some("remote-1"),
            "wm",
            txn_batch(&["c0", "c1"], (pid.0, pid.1, 0))
        )
        .await
        .0,
        0
    );
    let (_, lso) = visible(&mut c, "wm", 1).await;
    assert_eq!(lso, 0, "open transaction holds the LSO");
    assert_eq!(write_marker(&mut c, 1, pid, true, 5, "wm", 0).await, 0);
    let (committed, lso) = visible(&mut c, "wm", 1).await;
    assert_eq!(committed, vec!["c0", "c1"]);
    assert_eq!(lso, 3);

    // Second transaction of the same producer, aborted by a v0 request.
    assert_eq!(
        produce_as(
            &mut c,
            Some("remote-1"),
            "wm",
            txn_batch(&["a0"], (pid.0, pid.1, 2))
        )
        .await
        .0,
        0
    );
    assert_eq!(write_marker(&mut c, 0, pid, false, 5, "wm", 0).await, 0);
    let (committed, lso) = visible(&mut c, "wm", 1).await;
    assert_eq!(
        committed,
        vec!["c0", "c1"],
        "aborted data dropped via the txn index"
    );
    assert_eq!(lso, 5);

    // A coordinator with an older epoch than the last marker's is fenced.
    assert_eq!(
        write_marker(&mut c, 1, pid, true, 4, "wm", 0).await,
        52,
        "TRANSACTION_COORDINATOR_FENCED"
    );
    // A marker for an older producer epoch is refused.
    let older = (pid.0, pid.1 - 1);
    if older.1 >= 0 {
        assert_eq!(write_marker(&mut c, 1, older, true, 5, "wm", 0).await, 47);
    } else {
        // Bump the epoch with a newer data batch, then send the old one.
        assert_eq!(
            produce_as(
                &mut c,
                Some("remote-1"),
                "wm",
                txn_batch(&["n0"], (pid.0, pid.1 + 1, 0))
            )
            .await
            .0,
            0
        );
        assert_eq!(
            write_marker(&mut c, 1, pid, true, 5, "wm", 0).await,
            47,
            "INVALID_PRODUCER_EPOCH"
        );
    }
    // Unknown topic or partition.
    assert_eq!(write_marker(&mut c, 1, pid, true, 5, "nope", 0).await, 3);
    assert_eq!(write_marker(&mut c, 1, pid, true, 5, "wm", 7).await, 3);
}
