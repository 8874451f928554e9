//! The controller mutation quota (KIP-599) in a 3-node cluster: as in Kafka's KRaft mode, the
//! active controller charges it, with the client's principal and client id carried in the
//! Envelope a broker forwards the request in (KIP-590). So a client talking to brokers that
//! are not the controller meets one bucket for the whole cluster, gets THROTTLING_QUOTA_EXCEEDED
//! from the strict versions and a throttle from the old ones, whichever broker it uses.
mod common;

use std::time::Duration;

use common::cluster::{describe_quorum, Cluster};
use common::{api_call, create_topics_at, Client};
use strata::protocol::messages::alter_client_quotas_request::{
    AlterClientQuotasRequest, EntityData, EntryData, OpData,
};

const THROTTLING_QUOTA_EXCEEDED: i16 = 89;

fn s(x: &str) -> String {
    x.to_string()
}

/// A client of the node at `i` with the client id the quota is set for.
async fn client(cluster: &Cluster, i: usize) -> Client {
    let mut c = Client::connect(cluster.addr(i)).await;
    c.set_client_id("limited");
    c
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_controller_charges_the_mutation_quota_of_clients_of_every_broker() {
    // One window of 1 s: a 10/s quota's bucket holds 10 tokens.
    let cluster = Cluster::start_with(1, &["controller.quota.window.num=1"]).await;
    cluster.wait_brokers(0, 3).await;
    let leader =
        describe_quorum(cluster.controller_addr(0), 0).await.topics[0].partitions[0].leader_id;
    assert!(leader > 0, "no controller");
    let others: Vec<usize> = (0..3).filter(|&i| cluster.nodes[i].id != leader).collect();
    let (first, second) = (others[0], others[1]);

    let mut c = client(&cluster, first).await;
    let r = api_call!(
        c,
        alter_client_quotas_request::AlterClientQuotasRequest,
        alter_client_quotas_response::AlterClientQuotasResponse,
        1,
        AlterClientQuotasRequest {
            entries: vec![EntryData {
                entity: vec![EntityData {
                    entity_type: "client-id".into(),
                    entity_name: Some("limited".into()),
                    ..Default::default()
                }],
                ops: vec![OpData {
                    key: "controller_mutation_rate".into(),
                    value: 10.0,
                    remove: false,
                    ..Default::default()
                }],
                ..Default::default()
            }],
            validate_only: false,
            ..Default::default()
        }
    );
    assert_eq!(r.entries[0].error_code, 0);
    // The quota is in the controller's image once committed; give the nodes a moment.
    tokio::time::sleep(Duration::from_millis(500)).await;

    // Through a broker that is not the controller: t1 takes the 10 tokens, t2 empties the
    // bucket to -10, t3 is refused with the 1000 ms it takes to refill.
    let (codes, throttle) =
        create_topics_at(&mut c, 7, &[("t1", 10), ("t2", 10), ("t3", 10)]).await;
    assert_eq!(
        codes,
        vec![
            (s("t1"), 0),
            (s("t2"), 0),
            (s("t3"), THROTTLING_QUOTA_EXCEEDED)
        ]
    );
    assert!((500..=1000).contains(&throttle), "throttle {throttle}");

    // Through the other non-controller broker, at once: the same bucket, still empty (a
    // per-broker bucket would be full here and accept the topic).
    let mut d = client(&cluster, second).await;
    let (codes, throttle) = create_topics_at(&mut d, 6, &[("u1", 1)]).await;
    assert_eq!(codes, vec![(s("u1"), THROTTLING_QUOTA_EXCEEDED)]);
    assert!(throttle > 0, "throttle {throttle}");

    // DeleteTopics v5 is strict as well.
    let mut e = client(&cluster, second).await;
    let r = {
        use strata::protocol::messages::delete_topics_request::*;
        api_call!(
            e,
            delete_topics_request::DeleteTopicsRequest,
            delete_topics_response::DeleteTopicsResponse,
            5,
            DeleteTopicsRequest {
                topic_names: vec!["t1".into()],
                timeout_ms: 10_000,
                ..Default::default()
            }
        )
    };
    assert_eq!(r.responses[0].error_code, THROTTLING_QUOTA_EXCEEDED);
    assert!(r.throttle_time_ms > 0);

    // CreateTopics v5 cannot say THROTTLING_QUOTA_EXCEEDED: once the bucket is past zero
    // again the topic is accepted and the client throttled for the debt it leaves (-20:
    // about 2000 ms).
    tokio::time::sleep(Duration::from_millis(1200)).await;
    let mut f = client(&cluster, second).await;
    let (codes, throttle) = create_topics_at(&mut f, 5, &[("p1", 20)]).await;
    assert_eq!(codes, vec![(s("p1"), 0)]);
    assert!((1000..=2100).contains(&throttle), "throttle {throttle}");

    // Another client id is not bounded.
    let mut free = Client::connect(cluster.addr(first)).await;
    free.set_client_id("free");
    let (codes, throttle) = create_topics_at(&mut free, 7, &[("f1", 30)]).await;
    assert_eq!((codes, throttle), (vec![(s("f1"), 0)], 0));
}
