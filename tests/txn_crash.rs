//! A crash of the real `strata` binary between a transaction's PrepareCommit/PrepareAbort
//! record and its markers (issue 4). The test-only knob `STRATA_FAULT_AFTER_TXN_PREPARE=exit`
//! makes the coordinator abort the process right after the Prepare record is appended; the
//! broker restarted without it must complete the transaction from `__transaction_state`
//! (write the markers, then the Complete record), so read_committed sees a committed
//! transaction's data exactly once and an aborted one's never.
mod common;
use common::process::*;
use common::txn::*;
use common::*;

use std::time::Duration;

const FAULT_ENV: (&str, &str) = ("STRATA_FAULT_AFTER_TXN_PREPARE", "exit");

/// Runs one transaction up to EndTxn on a broker with the fault knob, which dies after the
/// Prepare record; restarts without the knob and returns what read_committed and
/// read_uncommitted then see on `topic`, and the last stable offset.
async fn crash_after_prepare(commit: bool, topic: &str) -> (Vec<String>, Vec<String>, i64) {
    let dir = tempfile::tempdir().unwrap();
    let mut broker = Strata::spawn_with_env(dir.path(), &[FAULT_ENV]);
    let mut c = Client::connect(broker.addr).await;
    create_topic(&mut c, topic).await;
    let pid = txn_init(&mut c, "tx-crash", 60_000).await;
    txn_add(&mut c, "tx-crash", pid, topic).await;
    let (code, _) = produce_as(
        &mut c,
        Some("tx-crash"),
        topic,
        txn_batch(&["t0", "t1", "t2"], (pid.0, pid.1, 0)),
    )
    .await;
    assert_eq!(code, 0);
    // EndTxn never gets an answer: the coordinator aborts the process after the Prepare record.
    let end = tokio::time::timeout(
        Duration::from_secs(5),
        txn_end_raw(&mut c, "tx-crash", pid, commit),
    )
    .await;
    assert!(
        !matches!(end, Ok(Some(_))),
        "EndTxn must not be answered: {end:?}"
    );
    assert!(
        broker.wait_exit(Duration::from_secs(30)),
        "the fault knob ends the process"
    );
    assert!(
        broker.logged("fault injection"),
        "died at the injected fault"
    );
    drop(c);
    drop(broker);

    let broker = Strata::spawn(dir.path());
    let mut c = Client::connect(broker.addr).await;
    // The markers are written while the coordinator loads, before clients are served; allow
    // for the first fetch racing nothing but the loop is cheap.
    let mut result = (Vec::new(), Vec::new(), -1);
    for _ in 0..100 {
        let (committed, lso) = visible(&mut c, topic, 1).await;
        let (all, _) = visible(&mut c, topic, 0).await;
        result = (committed, all, lso);
        if result.2 >= 4 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // The transaction is complete: a new one for the same id starts at once.
    let again = txn_init(&mut c, "tx-crash", 60_000).await;
    assert_eq!(again.0, pid.0);
    assert!(again.1 > pid.1, "epoch bumped by InitProducerId");
    broker.stop();
    result
}

/// EndTxn v3 that returns None when the connection ends without an answer.
async fn txn_end_raw(c: &mut Client, id: &str, pid: (i64, i16), commit: bool) -> Option<i16> {
    use strata::protocol::codec::Encode;
    use strata::protocol::messages::end_txn_request::EndTxnRequest;
    let req = EndTxnRequest {
        transactional_id: id.into(),
        producer_id: pid.0,
        producer_epoch: pid.1,
        committed: commit,
        ..Default::default()
    };
    let mut body = bytes::BytesMut::new();
    strata::protocol::header::RequestHeader {
        api_key: 26,
        api_version: 3,
        correlation_id: 99,
        client_id: Some("strata-test".into()),
        unknown_tagged_fields: vec![],
    }
    .encode(&mut body, 2);
    req.encode(&mut body, 3);
    use tokio::io::AsyncWriteExt;
    let mut frame = (body.len() as i32).to_be_bytes().to_vec();
    frame.extend_from_slice(&body);
    c.stream.write_all(&frame).await.ok()?;
    let resp = c.read_frame().await?;
    // correlation id (4) + tagged fields (1) + throttle (4) + error code (2)
    resp.get(9..11).map(|b| i16::from_be_bytes([b[0], b[1]]))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn commit_prepared_before_a_crash_is_completed_after_restart_exactly_once() {
    let (committed, all, lso) = crash_after_prepare(true, "txc").await;
    assert_eq!(
        committed,
        vec!["t0", "t1", "t2"],
        "read_committed sees the data once"
    );
    assert_eq!(
        all,
        vec!["t0", "t1", "t2"],
        "one COMMIT marker, no duplicate data"
    );
    assert_eq!(lso, 4, "3 records + 1 marker, nothing left open");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn abort_prepared_before_a_crash_is_completed_after_restart_and_never_visible() {
    let (committed, all, lso) = crash_after_prepare(false, "txa").await;
    assert!(
        committed.is_empty(),
        "aborted data is never visible: {committed:?}"
    );
    assert_eq!(
        all,
        vec!["t0", "t1", "t2"],
        "read_uncommitted still has the records"
    );
    assert_eq!(lso, 4, "the ABORT marker closed the transaction");
}
