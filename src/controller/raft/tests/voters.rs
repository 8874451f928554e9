//! Voter changes (KIP-853) over the in-memory network: a fourth controller that starts with
//! only bootstrap servers follows as a learner and is added; duplicate and unknown voters are
//! refused; a follower and then the leader itself are removed; a second change while one is
//! pending is refused; and the changed membership outlives a restart with the old
//! `controller.quorum.voters`.
use super::*;
use crate::controller::quorum::VoterChangeError;

fn bootstrap_config(node_id: NodeId, dir: &Path) -> QuorumConfig {
    QuorumConfig {
        bootstrap_servers: (1..=3).map(|id| format!("mem:{id}")).collect(),
        advertised_addr: format!("mem:{node_id}"),
        ..config(node_id, &BTreeMap::new(), dir)
    }
}

async fn leader_of(nodes: &[&Node]) -> NodeId {
    wait_until("a leader", Duration::from_secs(10), || {
        agreed_leader(nodes).is_some()
    })
    .await;
    agreed_leader(nodes).expect("leader")
}

fn voter_ids(node: &Node) -> Vec<NodeId> {
    node.voter_addresses().keys().copied().collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_learner_from_bootstrap_servers_is_added_then_voters_are_removed() {
    let dirs: Vec<_> = (0..4)
        .map(|_| tempfile::tempdir().expect("tempdir"))
        .collect();
    let (net, mut nodes) = three_over_mem(&dirs[..3]).await;
    let all: Vec<&Node> = nodes.iter().collect();
    let leader_id = leader_of(&all).await;
    let leader = nodes[leader_id as usize - 1].clone();
    for i in 0..4 {
        leader
            .propose(vec![format!("r{i}")])
            .await
            .expect("propose");
    }

    // An empty node that knows only the bootstrap servers asks to follow and catches up.
    let fourth = Node::start(bootstrap_config(4, dirs[3].path()), net.transport(4))
        .await
        .expect("start the fourth controller");
    net.register(4, Arc::new(fourth.clone()));
    wait_until("the learner caught up", Duration::from_secs(10), || {
        fourth.is_member() && items(&fourth) == strings(0..4)
    })
    .await;
    assert!(!fourth.is_voter());
    assert!(leader.status().observers.iter().any(|o| o.node_id == 4));

    // Only the leader changes the voter set.
    let follower = nodes
        .iter()
        .find(|n| n.node_id() != leader_id)
        .expect("a follower")
        .clone();
    assert!(matches!(
        follower
            .add_voter(4, "mem:4".into(), Duration::from_secs(2))
            .await,
        Err(VoterChangeError::NotLeader { .. })
    ));
    leader
        .add_voter(4, "mem:4".into(), Duration::from_secs(10))
        .await
        .expect("add the fourth voter");
    assert_eq!(voter_ids(&leader), vec![1, 2, 3, 4]);
    wait_until(
        "the fourth sees itself a voter",
        Duration::from_secs(5),
        || fourth.is_voter(),
    )
    .await;
    assert_eq!(
        leader
            .add_voter(4, "mem:4".into(), Duration::from_secs(2))
            .await,
        Err(VoterChangeError::DuplicateVoter)
    );
    leader.propose(vec!["r4".into()]).await.expect("propose");
    wait_until("the new voter applies", Duration::from_secs(5), || {
        items(&fourth) == strings(0..5)
    })
    .await;
    nodes.push(fourth);

    // A follower goes; an unknown or already removed voter is not found.
    let removed = follower.node_id();
    leader
        .remove_voter(removed, Duration::from_secs(10))
        .await
        .expect("remove a follower");
    assert!(!voter_ids(&leader).contains(&removed));
    for unknown in [removed, 99] {
        assert_eq!(
            leader.remove_voter(unknown, Duration::from_secs(2)).await,
            Err(VoterChangeError::VoterNotFound)
        );
    }
    follower.shutdown().await;
    net.unregister(removed);

    // The leader removes itself: it steps down and the other two elect a successor.
    leader
        .remove_voter(leader_id, Duration::from_secs(10))
        .await
        .expect("remove the leader");
    let rest: Vec<&Node> = nodes
        .iter()
        .filter(|n| n.node_id() != leader_id && n.node_id() != removed)
        .collect();
    assert_eq!(rest.len(), 2);
    let successor = leader_of(&rest).await;
    assert_ne!(successor, leader_id);
    assert!(!leader.is_leader());
    let successor = rest
        .iter()
        .find(|n| n.node_id() == successor)
        .expect("successor");
    successor
        .propose(vec!["r5".into()])
        .await
        .expect("propose on the new leader");
    let mut want: Vec<NodeId> = rest.iter().map(|n| n.node_id()).collect();
    want.sort();
    assert_eq!(voter_ids(successor), want);
    assert_eq!(
        successor.status().voters.len(),
        2,
        "DescribeQuorum lists the two voters left"
    );
    for n in &nodes {
        n.shutdown().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_change_while_one_is_pending_times_out() {
    let dirs: Vec<_> = (0..3)
        .map(|_| tempfile::tempdir().expect("tempdir"))
        .collect();
    let (_net, nodes) = three_over_mem(&dirs).await;
    let all: Vec<&Node> = nodes.iter().collect();
    let leader_id = leader_of(&all).await;
    let leader = nodes[leader_id as usize - 1].clone();
    // Node 9 never answers: its addition waits for a catch-up that does not come.
    let pending = {
        let leader = leader.clone();
        tokio::spawn(async move {
            leader
                .add_voter(9, "mem:9".into(), Duration::from_millis(1500))
                .await
        })
    };
    tokio::time::sleep(Duration::from_millis(300)).await;
    let other = nodes
        .iter()
        .find(|n| n.node_id() != leader_id)
        .expect("a follower")
        .node_id();
    assert_eq!(
        leader.remove_voter(other, Duration::from_secs(2)).await,
        Err(VoterChangeError::ChangeInProgress)
    );
    assert_eq!(
        pending.await.expect("join"),
        Err(VoterChangeError::TimedOut)
    );
    assert_eq!(voter_ids(&leader), vec![1, 2, 3]);
    for n in &nodes {
        n.shutdown().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_stored_membership_wins_over_the_configured_voters_at_restart() {
    let dirs: Vec<_> = (0..3)
        .map(|_| tempfile::tempdir().expect("tempdir"))
        .collect();
    let (net, nodes) = three_over_mem(&dirs).await;
    let all: Vec<&Node> = nodes.iter().collect();
    let leader_id = leader_of(&all).await;
    let leader = nodes[leader_id as usize - 1].clone();
    let removed = if leader_id == 3 { 2 } else { 3 };
    leader
        .remove_voter(removed, Duration::from_secs(10))
        .await
        .expect("remove");
    leader.propose(vec!["after".into()]).await.expect("propose");
    let kept: Vec<NodeId> = (1..=3).filter(|id| *id != removed).collect();
    for n in &nodes {
        if n.node_id() != removed {
            wait_until("applied", Duration::from_secs(5), || {
                items(n) == vec!["after".to_string()]
            })
            .await;
        }
        n.shutdown().await;
        net.unregister(n.node_id());
    }

    // Restarted with the old controller.quorum.voters {1, 2, 3}.
    let voters: BTreeMap<NodeId, String> = (1..=3).map(|id| (id, format!("mem:{id}"))).collect();
    let net = MemNetwork::new();
    let mut restarted = Vec::new();
    for id in kept.iter().copied() {
        let node = Node::start(
            config(id, &voters, dirs[id as usize - 1].path()),
            net.transport(id),
        )
        .await
        .expect("restart");
        net.register(id, Arc::new(node.clone()));
        assert_eq!(
            voter_ids(&node),
            kept,
            "the stored voters, not the configured"
        );
        restarted.push(node);
    }
    let all: Vec<&Node> = restarted.iter().collect();
    let leader_id = leader_of(&all).await;
    restarted[kept.iter().position(|id| *id == leader_id).expect("leader")]
        .propose(vec!["restarted".into()])
        .await
        .expect("the two remaining voters commit alone");
    for n in &restarted {
        n.shutdown().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_silent_learner_is_dropped_after_the_session_timeout() {
    let dirs: Vec<_> = (0..4)
        .map(|_| tempfile::tempdir().expect("tempdir"))
        .collect();
    let voters: BTreeMap<NodeId, String> = (1..=3).map(|id| (id, format!("mem:{id}"))).collect();
    let short = |cfg: QuorumConfig| QuorumConfig {
        learner_session_timeout_ms: 800,
        ..cfg
    };
    let net = MemNetwork::new();
    let mut nodes = Vec::new();
    for id in 1..=3u64 {
        let node = Node::start(
            short(config(id, &voters, dirs[id as usize - 1].path())),
            net.transport(id),
        )
        .await
        .expect("start");
        net.register(id, Arc::new(node.clone()));
        nodes.push(node);
    }
    let all: Vec<&Node> = nodes.iter().collect();
    let leader_id = leader_of(&all).await;
    let leader = nodes[leader_id as usize - 1].clone();
    let learners =
        |n: &Node| -> Vec<NodeId> { n.status().observers.iter().map(|o| o.node_id).collect() };

    // A controller-to-be follows, then goes away without being added.
    let fourth = Node::start(bootstrap_config(4, dirs[3].path()), net.transport(4))
        .await
        .expect("start the fourth controller");
    net.register(4, Arc::new(fourth.clone()));
    wait_until("the learner follows", Duration::from_secs(10), || {
        fourth.is_member() && learners(&leader).contains(&4)
    })
    .await;
    // Answering, it stays beyond the session timeout.
    tokio::time::sleep(Duration::from_millis(1600)).await;
    assert!(learners(&leader).contains(&4), "a live learner is kept");
    fourth.shutdown().await;
    net.unregister(4);
    wait_until(
        "the silent learner dropped",
        Duration::from_secs(10),
        || !learners(&leader).contains(&4),
    )
    .await;
    assert_eq!(voter_ids(&leader), vec![1, 2, 3]);
    leader.propose(vec!["y".into()]).await.expect("propose");
    for n in &nodes {
        n.shutdown().await;
    }
}
