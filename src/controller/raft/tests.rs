//! The quorum end to end: one node and its restart, three nodes over the in-memory network
//! with a leader cut off and healed, three nodes over TCP, and a torn log tail.
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::{Buf, Bytes};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use super::*;
// The TCP transport lives in `net`; the quorum over it is tested here.
use crate::net::raft_transport::TcpRaftTransport;

mod fuzz_seeds;
mod observer;
mod voters;

#[derive(Debug, Default, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
struct TestLog {
    items: Vec<String>,
}

impl ReplicatedState for TestLog {
    type Record = String;
    fn apply(&mut self, record: &String) {
        self.items.push(record.clone());
    }
}

type Node = RaftQuorum<TestLog>;

fn config(node_id: NodeId, voters: &BTreeMap<NodeId, String>, dir: &Path) -> QuorumConfig {
    QuorumConfig {
        election_timeout_min_ms: 150,
        election_timeout_max_ms: 300,
        heartbeat_interval_ms: 50,
        snapshot_every_entries: 5,
        ..QuorumConfig::new(node_id, voters.clone(), dir.to_path_buf())
    }
}

async fn wait_until(what: &str, timeout: Duration, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + timeout;
    while !cond() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

fn items(node: &Node) -> Vec<String> {
    node.state().borrow().1.items.clone()
}

fn strings(range: std::ops::Range<usize>) -> Vec<String> {
    range.map(|i| format!("r{i}")).collect()
}

async fn start_single(dir: &Path) -> Node {
    let voters = BTreeMap::from([(1, "127.0.0.1:1".to_string())]);
    let net = MemNetwork::new();
    Node::start(config(1, &voters, dir), net.transport(1))
        .await
        .expect("start")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn single_node_elects_itself_applies_and_restores() {
    let dir = tempfile::tempdir().expect("tempdir");
    let started = Instant::now();
    let node = start_single(dir.path()).await;
    wait_until("single node leader", Duration::from_secs(5), || {
        node.is_leader()
    })
    .await;
    let to_leader = started.elapsed();
    eprintln!("single-node start -> leader: {to_leader:?}");
    assert!(
        to_leader < Duration::from_millis(1000),
        "slow single-node election: {to_leader:?}"
    );

    let mut last = 0;
    for i in 0..12 {
        last = node.propose(vec![format!("r{i}")]).await.expect("propose");
    }
    let batch = node
        .propose(vec!["a".into(), "b".into()])
        .await
        .expect("batch");
    assert_eq!(batch, last + 1);
    let (index, state) = node.state().borrow().clone();
    assert_eq!(index, batch);
    let mut want = strings(0..12);
    want.extend(["a".to_string(), "b".to_string()]);
    assert_eq!(state.items, want);
    // openraft publishes its metrics just after answering the write.
    wait_until("high watermark", Duration::from_secs(5), || {
        node.status().high_watermark == batch
    })
    .await;
    let status = node.status();
    assert_eq!(status.leader_id, Some(1));
    assert_eq!(status.voters.len(), 1);
    node.shutdown().await;
    assert!(
        dir.path().join("snapshot.json").exists(),
        "a snapshot was taken"
    );

    let restarted = start_single(dir.path()).await;
    wait_until("state restored", Duration::from_secs(5), || {
        items(&restarted) == want
    })
    .await;
    wait_until("leader again", Duration::from_secs(5), || {
        restarted.is_leader()
    })
    .await;
    restarted
        .propose(vec!["c".into()])
        .await
        .expect("propose after restart");
    want.push("c".into());
    assert_eq!(items(&restarted), want);
    restarted.shutdown().await;
}

/// Two lone voters with the same node id and term, as two test clusters on one machine have:
/// an AppendEntries of the one reaching the other (a reused port) would make openraft take a
/// foreign leader of its own term for itself. The envelope's cluster id and destination keep
/// it out, and the node goes on leading.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn raft_rpcs_of_another_cluster_or_node_are_refused() {
    let dirs: Vec<_> = (0..2)
        .map(|_| tempfile::tempdir().expect("tempdir"))
        .collect();
    let voters = BTreeMap::from([(1, "127.0.0.1:1".to_string())]);
    let mut nodes = Vec::new();
    for (dir, cluster_id) in dirs.iter().zip(["alpha", "beta"]) {
        let cfg = QuorumConfig {
            cluster_id: cluster_id.to_string(),
            ..config(1, &voters, dir.path())
        };
        let node = Node::start(cfg, MemNetwork::new().transport(1))
            .await
            .expect("start");
        wait_until("leader", Duration::from_secs(5), || node.is_leader()).await;
        nodes.push(node);
    }
    let beta_vote = nodes[1].inner.metrics.borrow().vote;
    let foreign = |cluster_id: &str, destination_id: NodeId| {
        network::encode(&RaftEnvelope::<TestLog> {
            cluster_id: cluster_id.to_string(),
            destination_id,
            rpc: RaftRpc::AppendEntries(openraft::raft::AppendEntriesRequest {
                vote: beta_vote,
                prev_log_id: None,
                entries: Vec::new(),
                leader_commit: None,
            }),
        })
    };
    for (cluster_id, destination_id) in [("beta", 1), ("alpha", 2)] {
        let reply = nodes[0]
            .handle_rpc(foreign(cluster_id, destination_id))
            .await;
        let reply: RaftRpcReply = serde_json::from_slice(&reply).expect("reply");
        assert!(
            matches!(reply, RaftRpcReply::Error(_)),
            "{cluster_id}/{destination_id} was not refused"
        );
    }
    assert!(nodes[0].is_leader());
    nodes[0]
        .propose(vec!["still leading".into()])
        .await
        .expect("propose after refused rpcs");
    for node in &nodes {
        node.shutdown().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn torn_log_tail_is_truncated_at_start() {
    let dir = tempfile::tempdir().expect("tempdir");
    let node = start_single(dir.path()).await;
    wait_until("leader", Duration::from_secs(5), || node.is_leader()).await;
    for i in 0..3 {
        node.propose(vec![format!("r{i}")]).await.expect("propose");
    }
    node.shutdown().await;

    let log = dir.path().join("raft.log");
    let good_len = std::fs::metadata(&log).expect("log").len();
    // A frame header promising 100 bytes followed by only 3 of them: a crash mid-append.
    let mut torn = std::fs::read(&log).expect("read");
    torn.extend_from_slice(&100u32.to_be_bytes());
    torn.extend_from_slice(&[0, 0, 0, 0, b'{', b'"', b'x']);
    std::fs::write(&log, &torn).expect("write");

    let node = start_single(dir.path()).await;
    assert_eq!(std::fs::metadata(&log).expect("log").len(), good_len);
    wait_until("state restored", Duration::from_secs(5), || {
        items(&node) == strings(0..3)
    })
    .await;
    wait_until("leader", Duration::from_secs(5), || node.is_leader()).await;
    node.propose(vec!["r3".into()])
        .await
        .expect("propose after repair");
    assert_eq!(items(&node), strings(0..4));
    node.shutdown().await;

    // A flipped byte inside the last frame fails its CRC: that frame goes, the rest stay.
    let mut bytes = std::fs::read(&log).expect("read");
    let last = bytes.len() - 2;
    bytes[last] ^= 0xff;
    std::fs::write(&log, &bytes).expect("write");
    let store = log_store::LogStore::<TestLog>::open(dir.path()).expect("open");
    let before = std::fs::metadata(&log).expect("log").len();
    assert!(before < bytes.len() as u64, "corrupt frame truncated");
    assert!(store.entry_count() > 0);
    drop(store);

    // The committed-index hint is written without fsync: a power cut may leave it empty,
    // which must not stop the node from opening its log.
    std::fs::write(dir.path().join("committed.json"), b"").expect("write");
    let store = log_store::LogStore::<TestLog>::open(dir.path()).expect("open without the hint");
    assert!(store.entry_count() > 0);
}

async fn three_over_mem(dirs: &[tempfile::TempDir]) -> (Arc<MemNetwork>, Vec<Node>) {
    let voters: BTreeMap<NodeId, String> = (1..=3).map(|id| (id, format!("mem:{id}"))).collect();
    let net = MemNetwork::new();
    let mut nodes = Vec::new();
    for id in 1..=3u64 {
        let node = Node::start(
            config(id, &voters, dirs[id as usize - 1].path()),
            net.transport(id),
        )
        .await
        .expect("start");
        net.register(id, Arc::new(node.clone()));
        nodes.push(node);
    }
    (net, nodes)
}

fn agreed_leader(nodes: &[&Node]) -> Option<NodeId> {
    let leader = nodes.first()?.leader()?;
    let leaders = nodes.iter().filter(|n| n.is_leader()).count();
    (leaders == 1 && nodes.iter().all(|n| n.leader() == Some(leader))).then_some(leader)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_nodes_replicate_fail_over_and_catch_up() {
    let dirs: Vec<_> = (0..3)
        .map(|_| tempfile::tempdir().expect("tempdir"))
        .collect();
    let (net, nodes) = three_over_mem(&dirs).await;
    let all: Vec<&Node> = nodes.iter().collect();
    wait_until("a leader", Duration::from_secs(10), || {
        agreed_leader(&all).is_some()
    })
    .await;
    let leader_id = agreed_leader(&all).expect("leader");
    let leader = &nodes[leader_id as usize - 1];

    for i in 0..3 {
        leader
            .propose(vec![format!("r{i}")])
            .await
            .expect("propose");
    }
    wait_until("replicated to all", Duration::from_secs(5), || {
        nodes.iter().all(|n| items(n) == strings(0..3))
    })
    .await;

    let follower = nodes
        .iter()
        .find(|n| n.node_id() != leader_id)
        .expect("follower");
    match follower.propose(vec!["nope".into()]).await {
        Err(QuorumError::NotLeader { leader }) => assert_eq!(leader, Some(leader_id)),
        other => panic!("expected NotLeader, got {other:?}"),
    }

    net.isolate(leader_id);
    let rest: Vec<&Node> = nodes.iter().filter(|n| n.node_id() != leader_id).collect();
    wait_until("a new leader", Duration::from_secs(10), || {
        agreed_leader(&rest).is_some_and(|l| l != leader_id)
    })
    .await;
    let new_leader_id = agreed_leader(&rest).expect("new leader");
    let new_leader = &nodes[new_leader_id as usize - 1];
    // Far more than a snapshot interval (5) plus the kept log (5): the old leader must
    // catch up through InstallSnapshot.
    for i in 3..30 {
        new_leader
            .propose(vec![format!("r{i}")])
            .await
            .expect("propose on new leader");
    }
    wait_until("replicated to the majority", Duration::from_secs(5), || {
        rest.iter().all(|n| items(n) == strings(0..30))
    })
    .await;
    assert_eq!(
        items(leader),
        strings(0..3),
        "the cut-off leader saw nothing new"
    );

    net.heal();
    wait_until("old leader caught up", Duration::from_secs(10), || {
        items(leader) == strings(0..30)
    })
    .await;
    wait_until("one leader again", Duration::from_secs(10), || {
        agreed_leader(&all).is_some()
    })
    .await;
    let status = nodes[agreed_leader(&all).expect("leader") as usize - 1].status();
    assert_eq!(status.voters.len(), 3);
    assert!(
        status.voters.iter().all(|v| v.log_end_offset >= 0),
        "{status:?}"
    );
    for n in &nodes {
        n.shutdown().await;
    }
}

/// The lead's controller listener in miniature: Kafka-framed raft requests to `handle_rpc`.
async fn serve(listener: TcpListener, node: Arc<tokio::sync::OnceCell<Node>>) {
    while let Ok((stream, _)) = listener.accept().await {
        let node = node.clone();
        tokio::spawn(async move {
            let _ = serve_connection(stream, node).await;
        });
    }
}

async fn serve_connection(
    mut stream: TcpStream,
    node: Arc<tokio::sync::OnceCell<Node>>,
) -> std::io::Result<()> {
    loop {
        let size = stream.read_i32().await?;
        if size < 10 || size as usize > MAX_RAFT_FRAME_BYTES {
            return Ok(());
        }
        let mut frame = vec![0u8; size as usize];
        stream.read_exact(&mut frame).await?;
        let mut frame = Bytes::from(frame);
        let api_key = frame.get_i16();
        let _version = frame.get_i16();
        let correlation_id = frame.get_i32();
        let client_id_len = frame.get_i16();
        if api_key != RAFT_API_KEY || client_id_len != -1 {
            return Ok(());
        }
        let Some(node) = node.get() else {
            return Ok(());
        };
        let reply = node.handle_rpc(frame).await;
        stream
            .write_all(&encode_raft_response(correlation_id, &reply))
            .await?;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_nodes_over_tcp() {
    let dirs: Vec<_> = (0..3)
        .map(|_| tempfile::tempdir().expect("tempdir"))
        .collect();
    let mut listeners = Vec::new();
    let mut voters = BTreeMap::new();
    for id in 1..=3u64 {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        voters.insert(id, listener.local_addr().expect("addr").to_string());
        listeners.push(listener);
    }
    let cells: Vec<_> = (0..3)
        .map(|_| Arc::new(tokio::sync::OnceCell::new()))
        .collect();
    for (listener, cell) in listeners.into_iter().zip(&cells) {
        tokio::spawn(serve(listener, cell.clone()));
    }
    let mut nodes = Vec::new();
    for id in 1..=3u64 {
        let transport = Arc::new(TcpRaftTransport::new(500));
        let node = Node::start(config(id, &voters, dirs[id as usize - 1].path()), transport)
            .await
            .expect("start");
        let _ = cells[id as usize - 1].set(node.clone());
        nodes.push(node);
    }
    let all: Vec<&Node> = nodes.iter().collect();
    wait_until("a leader over tcp", Duration::from_secs(10), || {
        agreed_leader(&all).is_some()
    })
    .await;
    let leader = &nodes[agreed_leader(&all).expect("leader") as usize - 1];
    for i in 0..7 {
        leader
            .propose(vec![format!("r{i}")])
            .await
            .expect("propose");
    }
    wait_until("replicated over tcp", Duration::from_secs(5), || {
        nodes.iter().all(|n| items(n) == strings(0..7))
    })
    .await;
    // The leader knows when each voter last took its AppendEntries (DescribeQuorum).
    wait_until("voter contact times", Duration::from_secs(5), || {
        let status = leader.status();
        status.voters.len() == 3
            && status
                .voters
                .iter()
                .all(|v| v.last_fetch_timestamp_ms > 0 && v.last_caught_up_timestamp_ms > 0)
    })
    .await;
    for n in &nodes {
        n.shutdown().await;
    }
}
