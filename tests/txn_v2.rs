//! Transactions version 2 (KIP-890 part 2) end to end on one broker, as a Java 4.x producer
//! drives them: no AddPartitionsToTxn or AddOffsetsToTxn; Produce v12 adds the partition
//! through the coordinator; EndTxn v5 bumps the epoch and answers the producer id and epoch to
//! continue with; the next transaction runs under the bumped epoch with sequences from 0; the
//! producer of the ended transaction is fenced; librdkafka's version 1 flow keeps working
//! beside it. What each consumer sees is checked at both isolation levels.
mod common;

use common::txn::*;
use common::*;
use strata::error::ErrorCode;
use strata::protocol::messages::*;

/// A transactional Produce v12 of `values` as (pid, epoch, first sequence): the partition's
/// (error code, base offset).
async fn produce_v12(
    c: &mut Client,
    tid: &str,
    topic: &str,
    values: &[&str],
    producer: (i64, i16, i32),
) -> (i16, i64) {
    let r = api_call!(
        c,
        produce_request::ProduceRequest,
        produce_response::ProduceResponse,
        12,
        produce_req_as(Some(tid), topic, txn_batch(values, producer))
    );
    let p = &r.responses[0].partition_responses[0];
    (p.error_code, p.base_offset)
}

/// EndTxn v5: (error code, producer id, producer epoch).
async fn end_v5(c: &mut Client, tid: &str, pid: (i64, i16), commit: bool) -> (i16, i64, i16) {
    use end_txn_request::*;
    let r = api_call!(
        c,
        end_txn_request::EndTxnRequest,
        end_txn_response::EndTxnResponse,
        5,
        EndTxnRequest {
            transactional_id: tid.into(),
            producer_id: pid.0,
            producer_epoch: pid.1,
            committed: commit,
            ..Default::default()
        }
    );
    (r.error_code, r.producer_id, r.producer_epoch)
}

#[tokio::test]
async fn a_version_2_producer_commits_aborts_and_fences_without_adding_partitions() {
    let broker = TestBroker::start(&[]).await;
    let mut c = broker.client().await;
    create_topic(&mut c, "tv2").await;
    let tid = "tv2-producer";
    let (pid, e0) = txn_init(&mut c, tid, 60_000).await;

    // Transaction 1: written without AddPartitionsToTxn, committed.
    assert_eq!(
        produce_v12(&mut c, tid, "tv2", &["a0", "a1"], (pid, e0, 0)).await,
        (0, 0)
    );
    assert_eq!(
        produce_v12(&mut c, tid, "tv2", &["a2"], (pid, e0, 2)).await,
        (0, 2)
    );
    let (code, pid1, e1) = end_v5(&mut c, tid, (pid, e0), true).await;
    assert_eq!((code, pid1, e1), (0, pid, e0 + 1), "the epoch is bumped");
    wait_for_lso(&mut c, "tv2", 4).await;
    // The answer was lost: the retry under the old epoch gets the same pair.
    assert_eq!(end_v5(&mut c, tid, (pid, e0), true).await, (0, pid, e0 + 1));

    // Transaction 2 under the new epoch, sequences from 0 again; aborted.
    assert_eq!(
        produce_v12(&mut c, tid, "tv2", &["b0"], (pid, e1, 0)).await,
        (0, 4)
    );
    // The producer of transaction 1 (a zombie still at the old epoch) is fenced.
    let (code, _) = produce_v12(&mut c, tid, "tv2", &["zombie"], (pid, e0, 3)).await;
    assert_eq!(code, ErrorCode::INVALID_PRODUCER_EPOCH.code());
    assert_eq!(
        end_v5(&mut c, tid, (pid, e1), false).await,
        (0, pid, e1 + 1)
    );
    wait_for_lso(&mut c, "tv2", 6).await;

    // An abort with nothing written still bumps; a commit of nothing is refused.
    let e2 = e1 + 1;
    assert_eq!(
        end_v5(&mut c, tid, (pid, e2), false).await,
        (0, pid, e2 + 1)
    );
    let e3 = e2 + 1;
    assert_eq!(
        end_v5(&mut c, tid, (pid, e3), true).await.0,
        ErrorCode::INVALID_TXN_STATE.code()
    );

    // Transaction 3, committed.
    assert_eq!(
        produce_v12(&mut c, tid, "tv2", &["c0"], (pid, e3, 0)).await,
        (0, 6)
    );
    assert_eq!(end_v5(&mut c, tid, (pid, e3), true).await, (0, pid, e3 + 1));
    wait_for_lso(&mut c, "tv2", 8).await;

    let (committed, lso) = visible(&mut c, "tv2", 1).await;
    assert_eq!(committed, vec!["a0", "a1", "a2", "c0"]);
    assert_eq!(lso, 8);
    let (all, _) = visible(&mut c, "tv2", 0).await;
    assert_eq!(
        all,
        vec!["a0", "a1", "a2", "b0", "c0"],
        "read_uncommitted sees b0"
    );
}

#[tokio::test]
async fn a_version_2_producer_commits_offsets_without_add_offsets_to_txn() {
    let broker = TestBroker::start(&[]).await;
    let mut c = broker.client().await;
    create_topic(&mut c, "tv2-in").await;
    create_topic(&mut c, "tv2-out").await;
    let tid = "tv2-ctp";
    // As the client does first: find the group's coordinator (this creates the offsets topic).
    let r = api_call!(
        c,
        find_coordinator_request::FindCoordinatorRequest,
        find_coordinator_response::FindCoordinatorResponse,
        4,
        find_coordinator_request::FindCoordinatorRequest {
            key_type: 0,
            coordinator_keys: vec!["tv2-group".into()],
            ..Default::default()
        }
    );
    assert_eq!(r.coordinators[0].error_code, 0);
    let (pid, e0) = txn_init(&mut c, tid, 60_000).await;
    assert_eq!(
        produce_v12(&mut c, tid, "tv2-out", &["x"], (pid, e0, 0)).await,
        (0, 0)
    );
    let r = api_call!(
        c,
        txn_offset_commit_request::TxnOffsetCommitRequest,
        txn_offset_commit_response::TxnOffsetCommitResponse,
        5,
        txn_offset_commit_request::TxnOffsetCommitRequest {
            transactional_id: tid.into(),
            group_id: "tv2-group".into(),
            producer_id: pid,
            producer_epoch: e0,
            topics: vec![txn_offset_commit_request::TxnOffsetCommitRequestTopic {
                name: "tv2-in".into(),
                partitions: vec![txn_offset_commit_request::TxnOffsetCommitRequestPartition {
                    partition_index: 0,
                    committed_offset: 42,
                    ..Default::default()
                }],
                ..Default::default()
            }],
            ..Default::default()
        }
    );
    assert_eq!(r.topics[0].partitions[0].error_code, 0, "{r:?}");
    // The same at v4 (version 1) would have needed AddOffsetsToTxn: the partition is in the
    // transaction now, so it is accepted too.
    assert_eq!(end_v5(&mut c, tid, (pid, e0), true).await, (0, pid, e0 + 1));
    let mut committed = -1;
    for _ in 0..100 {
        committed = match offset_fetch_stable(&mut c, "tv2-group", "tv2-in").await {
            (0, offset) => offset,
            _ => -1,
        };
        if committed == 42 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert_eq!(
        committed, 42,
        "offsets visible once the transaction commits"
    );
}

#[tokio::test]
async fn version_1_and_version_2_producers_share_a_partition() {
    let broker = TestBroker::start(&[]).await;
    let mut c = broker.client().await;
    create_topic(&mut c, "tv-mixed").await;
    // librdkafka's flow: AddPartitionsToTxn, Produce v11, EndTxn v3 (no epoch bump).
    let old = txn_init(&mut c, "tv1", 60_000).await;
    let new = txn_init(&mut c, "tv2", 60_000).await;
    txn_add(&mut c, "tv1", old, "tv-mixed").await;
    let r = api_call!(
        c,
        produce_request::ProduceRequest,
        produce_response::ProduceResponse,
        11,
        produce_req_as(
            Some("tv1"),
            "tv-mixed",
            txn_batch(&["v1"], (old.0, old.1, 0))
        )
    );
    assert_eq!(r.responses[0].partition_responses[0].error_code, 0);
    assert_eq!(
        produce_v12(&mut c, "tv2", "tv-mixed", &["v2"], (new.0, new.1, 0))
            .await
            .0,
        0
    );
    txn_end(&mut c, "tv1", old, true).await;
    assert_eq!(
        end_v5(&mut c, "tv2", new, false).await,
        (0, new.0, new.1 + 1)
    );
    wait_for_lso(&mut c, "tv-mixed", 4).await;
    assert_eq!(visible(&mut c, "tv-mixed", 1).await.0, vec!["v1"]);
    // Version 1 keeps its epoch across transactions.
    txn_add(&mut c, "tv1", old, "tv-mixed").await;
    txn_end(&mut c, "tv1", old, false).await;
}
