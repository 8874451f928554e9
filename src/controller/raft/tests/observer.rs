//! Observers over the in-memory network: a new observer gets the leader's entries, a later
//! change arrives by long poll, an observer further behind than the leader's kept entries
//! (here: a leader restarted since, which keeps none from before) gets the whole state, and
//! the leader lists its observers.
use super::*;
use crate::controller::raft::observer::ObserverQuorum;

fn observed(o: &ObserverQuorum<TestLog>) -> Vec<String> {
    o.state().borrow().1.items.clone()
}

async fn start_voter(net: &Arc<MemNetwork>, dir: &Path) -> Node {
    let voters = BTreeMap::from([(1, "mem".to_string())]);
    let voter = Node::start(config(1, &voters, dir), net.transport(1))
        .await
        .expect("start");
    net.register(1, Arc::new(voter.clone()));
    wait_until("leader", Duration::from_secs(5), || voter.is_leader()).await;
    voter
}

fn start_observer(net: &Arc<MemNetwork>, node_id: NodeId, dir: &Path) -> ObserverQuorum<TestLog> {
    let voters = BTreeMap::from([(1, "mem".to_string())]);
    ObserverQuorum::start(config(node_id, &voters, dir), net.transport(node_id))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn observers_follow_by_entries_and_by_whole_state() {
    let dir = tempfile::tempdir().expect("tempdir");
    let unused = tempfile::tempdir().expect("tempdir");
    let net = MemNetwork::new();
    let voter = start_voter(&net, dir.path()).await;
    for i in 0..3 {
        voter.propose(vec![format!("r{i}")]).await.expect("propose");
    }
    let observer = start_observer(&net, 7, unused.path());
    wait_until("observer caught up", Duration::from_secs(5), || {
        observed(&observer) == strings(0..3)
    })
    .await;
    voter
        .propose(vec!["r3".into(), "r4".into()])
        .await
        .expect("propose");
    wait_until("observer got the new entry", Duration::from_secs(5), || {
        observed(&observer) == strings(0..5)
    })
    .await;
    assert_eq!(observer.leader(), Some(1));
    assert!(!observer.is_leader());
    assert_eq!(
        observer.propose(vec!["x".into()]).await,
        Err(QuorumError::NotLeader { leader: Some(1) })
    );
    wait_until(
        "the leader lists its observer",
        Duration::from_secs(5),
        || {
            voter
                .status()
                .observers
                .iter()
                .any(|o| o.node_id == 7 && o.last_fetch_timestamp_ms > 0)
        },
    )
    .await;

    // Past the leader's snapshot and restart it keeps no entry the observer lacks: a new
    // observer, and the old one, get the whole state and then entries again.
    voter.shutdown().await;
    net.unregister(1);
    assert_eq!(
        observed(&observer),
        strings(0..5),
        "kept while no leader answers"
    );
    let voter = start_voter(&net, dir.path()).await;
    for i in 5..12 {
        voter.propose(vec![format!("r{i}")]).await.expect("propose");
    }
    let late = start_observer(&net, 8, unused.path());
    wait_until("both observers caught up", Duration::from_secs(5), || {
        observed(&late) == strings(0..12) && observed(&observer) == strings(0..12)
    })
    .await;
    observer.shutdown().await;
    late.shutdown().await;
    voter.shutdown().await;
}
