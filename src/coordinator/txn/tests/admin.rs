//! DescribeTransactions and ListTransactions.
use super::*;
use crate::protocol::messages::describe_transactions_request::DescribeTransactionsRequest;
use crate::protocol::messages::list_transactions_request::ListTransactionsRequest;

#[test]
fn describe_and_list_transactions() {
    let h = Harness::new();
    let (pa, ea) = h.init_ok("a");
    h.add_ok("a", pa, ea, &[("t2", 1), ("t1", 0), ("t1", 2)]);
    let (pb, _) = h.init_ok("b");
    h.clock.advance(5_000);
    let ctx = RequestContext::new(0, "admin", "h");
    let d = h.coord.describe_transactions(
        &ctx,
        &DescribeTransactionsRequest {
            transactional_ids: vec!["a".into(), "missing".into(), "".into()],
            ..Default::default()
        },
    );
    let a = &d.transaction_states[0];
    assert_eq!((a.error_code, a.transaction_state.as_str()), (0, "Ongoing"));
    assert_eq!((a.producer_id, a.producer_epoch), (pa, ea));
    assert_eq!(a.transaction_start_time_ms, 1_000_000);
    assert_eq!(a.transaction_timeout_ms, TIMEOUT);
    let topics: Vec<(String, Vec<i32>)> = a
        .topics
        .iter()
        .map(|t| (t.topic.clone(), t.partitions.clone()))
        .collect();
    assert_eq!(
        topics,
        vec![("t1".into(), vec![0, 2]), ("t2".into(), vec![1])]
    );
    assert_eq!(
        d.transaction_states[1].error_code,
        code(ErrorCode::TRANSACTIONAL_ID_NOT_FOUND)
    );
    assert_eq!(
        d.transaction_states[2].error_code,
        code(ErrorCode::INVALID_REQUEST)
    );

    let list = |version: i16, states: &[&str], pids: &[i64], duration: i64| {
        let r = h.coord.list_transactions(
            &RequestContext::new(version, "admin", "h"),
            &ListTransactionsRequest {
                state_filters: states.iter().map(|s| s.to_string()).collect(),
                producer_id_filters: pids.to_vec(),
                duration_filter: duration,
                ..Default::default()
            },
        );
        let mut ids: Vec<String> = r
            .transaction_states
            .iter()
            .map(|t| {
                format!(
                    "{}:{}:{}",
                    t.transactional_id, t.producer_id, t.transaction_state
                )
            })
            .collect();
        ids.sort();
        (ids, r.unknown_state_filters)
    };
    let all = list(0, &[], &[], -1).0;
    assert_eq!(
        all,
        vec![format!("a:{pa}:Ongoing"), format!("b:{pb}:Empty")]
    );
    assert_eq!(
        list(0, &["Ongoing"], &[], -1).0,
        vec![format!("a:{pa}:Ongoing")]
    );
    assert_eq!(list(0, &[], &[pb], -1).0, vec![format!("b:{pb}:Empty")]);
    let (none, unknown) = list(0, &["Bogus"], &[], -1);
    assert!(none.is_empty());
    assert_eq!(unknown, vec!["Bogus".to_string()]);
    // v1: only transactions running longer than the duration.
    assert_eq!(list(1, &["Ongoing"], &[], 4_999).0.len(), 1);
    assert_eq!(list(1, &["Ongoing"], &[], 5_000).0.len(), 0);
    // v0 ignores the duration filter.
    assert_eq!(list(0, &["Ongoing"], &[], 5_000).0.len(), 1);

    // v2 (KIP-1152): a pattern that must match the whole id; a bad one is an error.
    let by_pattern = |version: i16, pattern: &str| {
        let r = h.coord.list_transactions(
            &RequestContext::new(version, "admin", "h"),
            &ListTransactionsRequest {
                duration_filter: -1,
                transactional_id_pattern: Some(pattern.into()),
                ..Default::default()
            },
        );
        let ids: Vec<String> = r
            .transaction_states
            .iter()
            .map(|t| t.transactional_id.clone())
            .collect();
        (r.error_code, ids)
    };
    assert_eq!(by_pattern(2, "a"), (0, vec!["a".to_string()]));
    assert_eq!(by_pattern(2, "[ab]").1.len(), 2);
    assert_eq!(by_pattern(2, "ab?x"), (0, vec![]), "a whole-id match");
    assert_eq!(by_pattern(2, "").1.len(), 2, "empty: no filter");
    assert_eq!(
        by_pattern(2, "(unclosed").0,
        code(ErrorCode::INVALID_REGULAR_EXPRESSION)
    );
    // Before v2 there is no pattern.
    assert_eq!(by_pattern(1, "(unclosed").1.len(), 2);
}

#[test]
fn epoch_overflow_is_an_error_not_a_panic() {
    let h = Harness::new();
    let (pid, _) = h.init_ok(TID);
    let p = h.partition(TID);
    let mut m = h.coord.transaction(TID).unwrap();
    m.producer_epoch = i16::MAX;
    m.state = crate::coordinator::txn::TransactionState::Ongoing;
    m.topic_partitions.insert(("t1".into(), 0));
    let mut all = h.log.records(p);
    all.push(crate::coordinator::txn::records::metadata_record(&m, 0));
    h.coord.load(p, all);
    assert_eq!(
        h.init(4, TID, TIMEOUT).error_code,
        code(ErrorCode::UNKNOWN_SERVER_ERROR)
    );
    // A timeout still aborts it, under the same epoch.
    h.clock.advance(10 * TIMEOUT as i64);
    h.coord.tick();
    assert_eq!(h.markers()[0].producer_epoch, i16::MAX);
    assert_eq!(h.markers()[0].producer_id, pid);
}
