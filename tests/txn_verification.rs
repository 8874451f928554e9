//! KIP-890 part 1 end to end on one broker: a transactional write that would open a
//! transaction the coordinator does not know of is refused before it reaches the log, so it
//! can never hold the last stable offset (a hanging transaction); writes the coordinator
//! confirms go through; `transaction.partition.verification.enable` switches it off at runtime.
//! The cluster form (coordinator and leader on different brokers) runs in `cluster_txn.rs`.
mod common;

use common::txn::*;
use common::*;
use strata::error::ErrorCode;

/// A transactional produce from `tid`: the partition's (error code, message, base offset).
async fn produce_txn(
    c: &mut Client,
    tid: Option<&str>,
    topic: &str,
    values: &[&str],
    producer: (i64, i16, i32),
) -> (i16, Option<String>, i64) {
    let r = api_call!(
        c,
        produce_request::ProduceRequest,
        produce_response::ProduceResponse,
        9,
        produce_req_as(tid, topic, txn_batch(values, producer))
    );
    let p = &r.responses[0].partition_responses[0];
    (p.error_code, p.error_message.clone(), p.base_offset)
}

/// The high watermark and last stable offset of partition 0.
async fn hw_and_lso(c: &mut Client, topic: &str) -> (i64, i64) {
    let p = fetch_partition(c, topic, 0, 0, 1 << 20).await;
    (p.high_watermark, p.last_stable_offset)
}

#[tokio::test]
async fn writes_outside_the_coordinators_transaction_never_reach_the_log() {
    let broker = TestBroker::start(&[]).await;
    let mut c = broker.client().await;
    create_topic(&mut c, "tv").await;
    let tid = "tv-producer";
    let pid = txn_init(&mut c, tid, 60_000).await;

    // No AddPartitionsToTxn: the coordinator does not know the partition.
    let (code, message, _) =
        produce_txn(&mut c, Some(tid), "tv", &["stray"], (pid.0, pid.1, 0)).await;
    assert_eq!(code, ErrorCode::INVALID_TXN_STATE.code());
    assert_eq!(
        message.as_deref(),
        Some("Partition was not added to the transaction")
    );
    assert_eq!(hw_and_lso(&mut c, "tv").await, (0, 0), "nothing written");

    // Transactional records need a transactional id, authorizer or not (Kafka's rule).
    let (code, ..) = produce_txn(&mut c, None, "tv", &["anon"], (pid.0, pid.1, 0)).await;
    assert_eq!(
        code,
        ErrorCode::TRANSACTIONAL_ID_AUTHORIZATION_FAILED.code()
    );

    // Added: the first write is verified, the next ones ride on the open transaction.
    txn_add(&mut c, tid, pid, "tv").await;
    let (code, _, base) =
        produce_txn(&mut c, Some(tid), "tv", &["a0", "a1"], (pid.0, pid.1, 0)).await;
    assert_eq!((code, base), (0, 0));
    let (code, _, base) = produce_txn(&mut c, Some(tid), "tv", &["a2"], (pid.0, pid.1, 2)).await;
    assert_eq!((code, base), (0, 2));
    assert_eq!(
        hw_and_lso(&mut c, "tv").await,
        (3, 0),
        "open transaction holds the LSO"
    );
    txn_end(&mut c, tid, pid, false).await;
    // The abort marker follows the three records.
    wait_for_lso(&mut c, "tv", 4).await;

    // A late write of the ended transaction (a zombie retry) would open a new transaction on
    // the partition that nothing ends: refused, and the LSO stays free.
    let (code, ..) = produce_txn(&mut c, Some(tid), "tv", &["late"], (pid.0, pid.1, 3)).await;
    assert_eq!(code, ErrorCode::INVALID_TXN_STATE.code());
    assert_eq!(hw_and_lso(&mut c, "tv").await, (4, 4));

    // A producer fenced by a newer InitProducerId is told its epoch is stale.
    let newer = txn_init(&mut c, tid, 60_000).await;
    assert!(newer.1 > pid.1);
    let (code, ..) = produce_txn(&mut c, Some(tid), "tv", &["old"], (pid.0, pid.1, 0)).await;
    assert_eq!(code, ErrorCode::INVALID_PRODUCER_EPOCH.code());
    assert_eq!(hw_and_lso(&mut c, "tv").await, (4, 4));
}

#[tokio::test]
async fn verification_switched_off_at_runtime_lets_unverified_writes_through() {
    let broker = TestBroker::start(&[]).await;
    let mut c = broker.client().await;
    create_topic(&mut c, "tv-off").await;
    let tid = "tv-off-producer";
    let pid = txn_init(&mut c, tid, 60_000).await;
    let (code, ..) = produce_txn(&mut c, Some(tid), "tv-off", &["x"], (pid.0, pid.1, 0)).await;
    assert_eq!(code, ErrorCode::INVALID_TXN_STATE.code());

    // The cluster-wide default (empty name): applied when the broker reads it back.
    let (code, message) = incremental_alter(
        &mut c,
        4,
        "",
        &[(
            "transaction.partition.verification.enable",
            0,
            Some("false"),
        )],
        false,
    )
    .await;
    assert_eq!(code, 0, "{message:?}");
    let mut last = None;
    for _ in 0..100 {
        let (code, _, base) =
            produce_txn(&mut c, Some(tid), "tv-off", &["x"], (pid.0, pid.1, 0)).await;
        last = Some((code, base));
        if code == 0 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert_eq!(last, Some((0, 0)), "written without the coordinator's word");
}
