//! ISR meters of a real three-node cluster over TCP: a stopped follower leaves the ISR (the
//! partition is under-replicated) and, back and caught up, is proposed for the ISR by the
//! leader, which counts the expansion in `kafka_server_replicamanager_isrexpands_total`. The
//! followers' fetches count as `FetchFollower` on the leader. (A stopped broker is taken out
//! of the ISR by the controller, so the leader's own shrink is not certain here; its counting
//! is the second test.)
mod common;

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use common::admin::{sample, scrape};
use common::cluster::Cluster;
use common::Client;

/// Scrapes `admin` until `series` reaches `at_least`; its last value.
async fn wait_for(admin: SocketAddr, series: &str, at_least: f64) -> f64 {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let v = sample(&scrape(admin).await, series).unwrap_or(-1.0);
        if v >= at_least || Instant::now() > deadline {
            return v;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_returning_follower_is_expanded_into_the_isr_by_the_leader() {
    let mut cluster = Cluster::start_with(1, &["strata.admin.listeners=http://127.0.0.1:0"]).await;
    let mut c = Client::connect(cluster.addr(0)).await;
    let mut created = -1;
    for _ in 0..100 {
        created = common::create_topic_rf(&mut c, "isr", 1, 3, &[]).await;
        if created == 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(created, 0);
    let leader = cluster.wait_leader(0, "isr", None, 3).await;
    let li = cluster.index_of(leader);
    let admin = cluster.nodes[li].running.as_ref().unwrap().admin_addrs[0];
    let rm = "kafka_server_replicamanager_";
    let m = scrape(admin).await;
    assert_eq!(
        sample(&m, &format!("{rm}isrshrinks_total")),
        Some(0.0),
        "{m}"
    );

    let follower = (li + 1) % 3;
    cluster.stop_node(follower).await;
    // A stopped broker leaves the ISR by the controller's hand (its controlled shutdown, or
    // fencing), which is no shrink of the leader's; the leader's own shrink, if it came first,
    // is accepted or refused. Either way the partition is under-replicated.
    let under = wait_for(admin, &format!("{rm}underreplicatedpartitions"), 1.0).await;
    assert_eq!(under, 1.0);
    let m = scrape(admin).await;
    let shrinks = sample(&m, &format!("{rm}isrshrinks_total")).unwrap();
    let failed = sample(&m, &format!("{rm}failedisrupdates_total")).unwrap();
    assert!(shrinks + failed <= 1.0, "{shrinks} {failed}");

    // Back and caught up: only the leader proposes it for the ISR again.
    cluster.start_node(follower).await;
    let expands = wait_for(admin, &format!("{rm}isrexpands_total"), 1.0).await;
    assert_eq!(expands, 1.0);
    let m = scrape(admin).await;
    assert_eq!(
        sample(&m, &format!("{rm}underreplicatedpartitions")),
        Some(0.0)
    );
    // The followers' fetches, whatever version the fetchers use. A fetch is counted when it
    // is answered, and a caught-up follower's fetch waits up to replica.fetch.wait.max.ms
    // (500 ms): at the moment of the expansion every fetch may still be waiting.
    let follower_fetches = |m: &str| -> f64 {
        m.lines()
            .filter(|l| {
                l.starts_with(
                    "kafka_network_requestmetrics_requests_total{request=\"FetchFollower\"",
                )
            })
            .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
            .sum()
    };
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut m = m;
    while follower_fetches(&m) == 0.0 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(100)).await;
        m = scrape(admin).await;
    }
    assert!(follower_fetches(&m) > 0.0, "{m}");
}

/// The controller's answers to a leader's ISR proposals, as the AlterPartition sender counts
/// them: accepted shrinks and expansions, and refusals as failed updates.
#[test]
fn answers_count_as_shrinks_expansions_or_failures() {
    use strata::metrics::{IsrChange, ReplicationMetrics};
    let m = ReplicationMetrics::default();
    m.isr_change_answered(IsrChange::Shrink, true);
    m.isr_change_answered(IsrChange::Expand, true);
    m.isr_change_answered(IsrChange::Expand, true);
    m.isr_change_answered(IsrChange::Shrink, false);
    assert_eq!(
        (
            m.isr_shrinks.get(),
            m.isr_expands.get(),
            m.failed_isr_updates.get()
        ),
        (1, 2, 1)
    );
}
