//! Replication between two in-process brokers over real TCP: a scripted controller applies the
//! same `PartitionChange` to both replica managers, the follower's fetcher tasks
//! (`cluster::replica_fetcher`) fetch from the leader through `net::peer`, acks=all waits
//! for the follower, roles swap without losing records, and a stopped follower is proposed out
//! of the ISR after `replica.lag.time.max.ms`.
mod common;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use common::{api_call, batch, TestBroker};
use strata::cluster::replica_fetcher::BrokerAddressResolver;
use strata::protocol::codec::Uuid;
use strata::protocol::messages::produce_request::ProduceRequest;
use strata::replica::change::PartitionChange;
use strata::replica::ids::{BrokerEpoch, BrokerId, LeaderEpoch, PartitionEpoch};
use strata::replica::partition::{Partition, PartitionConfig};
use strata::replica::ReplicaManager;

const TOPIC: &str = "replicated";
/// Long enough that the follower, started 500 ms late, is not proposed out early.
const LAG_MS: &str = "2000";

fn produce_req(acks: i16, records: Bytes) -> ProduceRequest {
    use strata::protocol::messages::produce_request::*;
    ProduceRequest {
        acks,
        timeout_ms: 10_000,
        topic_data: vec![TopicProduceData {
            name: TOPIC.into(),
            partition_data: vec![PartitionProduceData {
                index: 0,
                records: Some(records),
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    }
}

/// Produce v9 of one batch; (error code, base offset).
async fn produce(b: &TestBroker, acks: i16, values: &[&[u8]]) -> (i16, i64) {
    let mut c = b.client().await;
    let r = api_call!(
        c,
        produce_request::ProduceRequest,
        produce_response::ProduceResponse,
        9,
        produce_req(acks, batch(values, None))
    );
    let p = &r.responses[0].partition_responses[0];
    (p.error_code, p.base_offset)
}

fn change(topic_id: Uuid, leader: i32, epoch: i32, isr: &[i32]) -> PartitionChange {
    PartitionChange {
        topic: TOPIC.into(),
        partition: 0,
        topic_id,
        leader: Some(BrokerId(leader)),
        leader_epoch: LeaderEpoch(epoch),
        partition_epoch: PartitionEpoch(epoch),
        replicas: vec![BrokerId(1), BrokerId(2)],
        isr: isr.iter().map(|b| BrokerId(*b)).collect(),
    }
}

fn replicas(b: &TestBroker) -> Arc<ReplicaManager> {
    b.running.as_ref().expect("running").broker.replicas.clone()
}

fn partition(b: &TestBroker) -> Arc<Partition> {
    replicas(b).get(TOPIC, 0).expect("partition exists")
}

/// Every byte of the log from offset 0 to its end (read directly: a follower refuses client
/// fetches).
fn log_bytes(p: &Partition) -> Bytes {
    let end = p.log_end_offset();
    p.log
        .read(0, 64 << 20, end, true)
        .expect("log reads")
        .records
}

/// Applies the scripted controller's decision to both brokers.
fn apply(brokers: &[&TestBroker], c: &PartitionChange) {
    for b in brokers {
        replicas(b)
            .apply_partition_change(c, PartitionConfig::default(), common::now_ms())
            .expect("change applies");
    }
}

async fn wait_until(what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while !cond() {
        assert!(tokio::time::Instant::now() < deadline, "timed out: {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Brokers 1 and 2 with `extra` config, broker epochs `epoch_base` + 1 and + 2, and the
/// resolver their fetchers use to reach each other.
async fn two_brokers(
    extra: &[(&'static str, &'static str)],
    epoch_base: i64,
) -> (TestBroker, TestBroker, BrokerAddressResolver) {
    let config = |id: &'static str| {
        let mut c = vec![("node.id", id), ("replica.lag.time.max.ms", LAG_MS)];
        c.extend_from_slice(extra);
        c
    };
    let b1 = TestBroker::start(&config("1")).await;
    let b2 = TestBroker::start(&config("2")).await;
    replicas(&b1).set_broker_epoch(BrokerEpoch(epoch_base + 1));
    replicas(&b2).set_broker_epoch(BrokerEpoch(epoch_base + 2));
    let addrs: HashMap<BrokerId, String> = [
        (BrokerId(1), b1.addr.to_string()),
        (BrokerId(2), b2.addr.to_string()),
    ]
    .into_iter()
    .collect();
    let resolver: BrokerAddressResolver = Arc::new(move |id| addrs.get(&id).cloned());
    (b1, b2, resolver)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn follower_replicates_over_tcp_roles_swap_and_a_dead_follower_leaves_the_isr() {
    let (mut b1, mut b2, resolver) = two_brokers(&[], 100).await;

    let topic_id = Uuid::random();
    apply(&[&b1, &b2], &change(topic_id, 1, 0, &[1, 2]));
    assert!(partition(&b1).is_leader());
    assert!(!partition(&b2).is_leader());
    b1.running
        .as_mut()
        .expect("running")
        .start_replica_fetchers(resolver.clone());

    // acks=all is not acknowledged while the follower in the ISR has not fetched.
    let (b1_addr, records) = (b1.addr, batch(&[b"a", b"b"], None));
    let pending = tokio::spawn(async move {
        let mut c = common::Client::connect(b1_addr).await;
        api_call!(
            c,
            produce_request::ProduceRequest,
            produce_response::ProduceResponse,
            9,
            produce_req(-1, records)
        )
    });
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(
        !pending.is_finished(),
        "acks=all answered before the follower fetched"
    );
    assert_eq!(partition(&b1).log_end_offset(), 2);
    assert_eq!(partition(&b1).high_watermark(), 0);

    // The follower starts fetching: the high watermark moves and the produce is acknowledged.
    b2.running
        .as_mut()
        .expect("running")
        .start_replica_fetchers(resolver.clone());
    let r = tokio::time::timeout(Duration::from_secs(10), pending)
        .await
        .expect("acks=all answered")
        .expect("task");
    let p = &r.responses[0].partition_responses[0];
    assert_eq!((p.error_code, p.base_offset), (0, 0));
    assert_eq!(partition(&b1).high_watermark(), 2);
    assert_eq!(partition(&b2).log_end_offset(), 2);
    assert_eq!(log_bytes(&partition(&b2)), log_bytes(&partition(&b1)));
    wait_until("follower learns the high watermark", || {
        partition(&b2).high_watermark() == 2
    })
    .await;

    // A second acks=all produce goes through the long-polling fetcher at once.
    assert_eq!(produce(&b1, -1, &[b"c"]).await, (0, 2));
    let before_swap = log_bytes(&partition(&b1));

    // Roles swap: broker 2 leads epoch 1, broker 1 follows and truncates nothing.
    apply(&[&b1, &b2], &change(topic_id, 2, 1, &[1, 2]));
    assert!(partition(&b2).is_leader());
    assert_eq!(produce(&b2, -1, &[b"d", b"e"]).await, (0, 3));
    wait_until("old leader catches up", || {
        partition(&b1).log_end_offset() == 5
    })
    .await;
    assert_eq!(log_bytes(&partition(&b1)), log_bytes(&partition(&b2)));
    assert!(log_bytes(&partition(&b1)).starts_with(&before_swap));
    assert_eq!(partition(&b2).high_watermark(), 5);

    // Back to broker 1 (epoch 2); then broker 2 dies and acks=1 produces continue.
    apply(&[&b1, &b2], &change(topic_id, 1, 2, &[1, 2]));
    assert_eq!(produce(&b1, -1, &[b"f"]).await, (0, 5));
    assert!(replicas(&b1).take_alter_partitions().is_empty());
    b2.running
        .take()
        .expect("running")
        .stop()
        .await
        .expect("clean stop");
    assert_eq!(produce(&b1, 1, &[b"g"]).await, (0, 6));
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    // Every broker now sends its proposals to its own controller, which knows nothing of
    // this hand-made partition and refuses them; the leader proposes again while the
    // follower lags, so the proposal in flight is what is checked.
    let proposal = loop {
        if let Some(p) = replicas(&b1)
            .get(TOPIC, 0)
            .and_then(|p| p.pending_alter_partition())
        {
            break p;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "no ISR shrink proposed"
        );
        tokio::time::sleep(Duration::from_millis(2)).await;
    };
    assert_eq!(proposal.topic, TOPIC);
    assert_eq!(proposal.leader, BrokerId(1));
    assert_eq!(proposal.leader_epoch, LeaderEpoch(2));
    assert_eq!(proposal.partition_epoch, PartitionEpoch(2));
    assert_eq!(proposal.isr_ids(), vec![BrokerId(1)]);
    assert_eq!(proposal.new_isr[0].broker_epoch, BrokerEpoch(101));

    b1.running
        .take()
        .expect("running")
        .stop()
        .await
        .expect("clean stop");
}

/// Durable acknowledgements in a cluster (`strata.log.durable.acks` on both brokers): the
/// follower fsyncs what it fetched before it fetches again, so when acks=all is answered the
/// batch is on disk on the leader and on the follower.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn durable_acks_all_is_fsynced_on_every_in_sync_replica() {
    let (mut b1, mut b2, resolver) = two_brokers(&[("strata.log.durable.acks", "true")], 200).await;
    apply(&[&b1, &b2], &change(Uuid::random(), 1, 0, &[1, 2]));
    for b in [&mut b1, &mut b2] {
        b.running
            .as_mut()
            .expect("running")
            .start_replica_fetchers(resolver.clone());
    }
    let mut end = 0;
    for values in [&[&b"a"[..], b"b"][..], &[b"c"], &[b"d", b"e", b"f"]] {
        assert_eq!(produce(&b1, -1, values).await, (0, end));
        end += values.len() as i64;
        assert!(partition(&b1).log.durable_offset() >= end, "leader fsynced");
        assert!(
            partition(&b2).log.durable_offset() >= end,
            "follower fsynced"
        );
    }
    assert_eq!(log_bytes(&partition(&b2)), log_bytes(&partition(&b1)));
    let synced = |b: &TestBroker| {
        replicas(b)
            .logs()
            .group_commit()
            .expect("durable acks are on")
            .stats()
            .requests
    };
    assert!(synced(&b1) >= 3 && synced(&b2) >= 1);
    for b in [&mut b1, &mut b2] {
        b.running
            .take()
            .expect("running")
            .stop()
            .await
            .expect("clean stop");
    }
}
