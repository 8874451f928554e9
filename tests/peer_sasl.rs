//! Secured inter-broker and controller traffic with SASL (issue 13, peersasl slice): three
//! broker+controller nodes whose inter-broker listener (INTERNAL) and controller listener are
//! SASL_SSL with SCRAM-SHA-512, the admin user coming from `storage format --add-scram`;
//! replication, the Raft quorum, forwarding and heartbeats all log in. A broker with a wrong
//! peer password does not join, says so once per peer, and the cluster keeps serving. The
//! peer client's truststore is reloaded when its file changes.
mod common;

use std::time::Duration;

use common::cluster::{produce_retrying, values, Cluster};
use common::logs::Captured;

const JAAS: &str = "org.apache.kafka.common.security.scram.ScramLoginModule required \
                    username=\"admin\" password=\"admin-secret\";";

/// The cluster's security keys (every node), with the CA's stores in `dir`.
fn secured_overrides(dir: &std::path::Path) -> Vec<String> {
    let ca = common::certs::Ca::new("peer-sasl-ca");
    let (ks, ts) = common::certs::write_stores(dir, &common::certs::server_leaf(&ca), &[&ca]);
    vec![
        "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,INTERNAL:SASL_SSL,CONTROLLER:SASL_SSL"
            .into(),
        "sasl.enabled.mechanisms=SCRAM-SHA-512".into(),
        "sasl.mechanism.inter.broker.protocol=SCRAM-SHA-512".into(),
        "sasl.mechanism.controller.protocol=SCRAM-SHA-512".into(),
        format!("listener.name.internal.scram-sha-512.sasl.jaas.config={JAAS}"),
        format!("listener.name.controller.scram-sha-512.sasl.jaas.config={JAAS}"),
        "ssl.keystore.type=PEM".into(),
        format!("ssl.keystore.location={}", ks.display()),
        "ssl.truststore.type=PEM".into(),
        format!("ssl.truststore.location={}", ts.display()),
    ]
}

#[tokio::test]
async fn a_sasl_ssl_scram_cluster_fails_over_and_a_broker_with_a_wrong_password_stays_out() {
    let captured = Captured::default();
    let writer = captured.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_writer(move || writer.clone())
        .with_ansi(false)
        .with_max_level(tracing::Level::INFO)
        .finish();
    // A current-thread runtime: every node's tasks log through this subscriber.
    let _guard = tracing::subscriber::set_default(subscriber);

    let stores = tempfile::tempdir().unwrap();
    let overrides = secured_overrides(stores.path());
    let overrides: Vec<&str> = overrides.iter().map(|s| s.as_str()).collect();
    // Nodes 1-3 are the cluster; node 4, a broker, comes later with a wrong password.
    let roles = [
        "broker,controller",
        "broker,controller",
        "broker,controller",
        "broker",
    ];
    let mut c = Cluster::new(&roles, 1, &overrides, true);
    let cluster_id = strata::cluster::format::random_uuid();
    for i in 0..4 {
        let lines = strata::cluster::format::format(
            &c.config(i),
            &strata::cluster::format::FormatOptions {
                cluster_id: cluster_id.clone(),
                add_scram: vec!["SCRAM-SHA-512=[name=admin,password=admin-secret]".into()],
                ..Default::default()
            },
        )
        .expect("format");
        assert!(lines[0].contains(&cluster_id), "{lines:?}");
    }
    for i in 0..3 {
        c.start_node(i).await;
    }
    c.wait_brokers(0, 3).await;

    // Created on a node that may not be the active controller: forwarded over SASL_SSL.
    let mut client = common::Client::connect(c.addr(1)).await;
    assert_eq!(
        common::create_topic_rf(
            &mut client,
            "replicated",
            1,
            3,
            &[("min.insync.replicas", "2")]
        )
        .await,
        0
    );
    let leader = c.wait_leader(0, "replicated", None, 3).await;
    let li = c.index_of(leader);
    // acks=all with three in the ISR: acknowledged once both followers fetched it over the
    // SASL_SSL inter-broker listener.
    let mut lc = common::Client::connect(c.addr(li)).await;
    assert_eq!(
        produce_retrying(&mut lc, "replicated", &[b"a", b"b"]).await,
        (0, 0)
    );
    // The bootstrap credential is in the metadata log now, on every node.
    for i in 0..3 {
        let image = c.nodes[i].running.as_ref().unwrap().broker.cluster.image();
        assert!(
            image
                .scram
                .credential("admin", strata::controller::scram::ScramMechanism::Sha512)
                .is_some(),
            "node index {i} has the formatted credential in its image"
        );
    }

    // The leader stops; the quorum (over SASL_SSL) elects another, which takes writes.
    c.stop_node(li).await;
    let other = (li + 1) % 3;
    let new_leader = c.wait_leader(other, "replicated", Some(leader), 1).await;
    let ni = c.index_of(new_leader);
    let mut nc = common::Client::connect(c.addr(ni)).await;
    assert_eq!(
        produce_retrying(&mut nc, "replicated", &[b"c"]).await,
        (0, 2),
        "acks=all produce to the new leader"
    );
    let p = common::fetch_partition(&mut nc, "replicated", 0, 0, 1 << 20).await;
    assert_eq!(
        values(&p),
        vec!["a", "b", "c"],
        "no acknowledged record lost"
    );

    // A broker whose peer password is wrong: its logins to the controllers are refused.
    let mut bad = c.config(3);
    for login in [
        &mut bad.sasl.controller_login,
        &mut bad.sasl.inter_broker_login,
    ] {
        login.as_mut().expect("a SASL login").password = "not-the-secret".into();
    }
    let started = tokio::time::timeout(
        Duration::from_secs(10),
        strata::server::startup::start(bad, strata::clock::system()),
    )
    .await
    .expect("a broker's start does not wait for the controllers")
    .expect("the broker process starts");
    c.nodes[3].running = Some(started);
    tokio::time::sleep(Duration::from_secs(4)).await;
    let m = c.metadata(ni, "replicated").await;
    let ids: Vec<i32> = m.brokers.iter().map(|b| b.node_id).collect();
    assert!(
        !ids.contains(&4),
        "the broker with a wrong password joined: {ids:?}"
    );
    // The cluster keeps serving.
    assert_eq!(
        produce_retrying(&mut nc, "replicated", &[b"d"]).await,
        (0, 3)
    );
    // Each refused peer is reported once, however often the login was retried.
    let failures = captured.lines_with("SASL authentication to a peer failed");
    assert!(!failures.is_empty(), "the refused login was logged");
    let mut peers: Vec<String> = failures
        .iter()
        .map(|l| {
            l.split_whitespace()
                .find(|w| w.starts_with("peer="))
                .unwrap_or("")
                .to_string()
        })
        .collect();
    let reported = peers.len();
    peers.sort();
    peers.dedup();
    assert_eq!(reported, peers.len(), "one report per peer: {failures:#?}");
    // It keeps retrying with backoff (the unit tests of `net::sasl_client` time it), and a
    // peer already reported is not reported again.
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(
        captured
            .lines_with("SASL authentication to a peer failed")
            .len(),
        reported,
        "no new report for a peer already reported"
    );
    for i in 0..4 {
        c.stop_node(i).await;
    }
}

/// The peer client reads its truststore again when the file changes: a broker whose
/// certificate it does not trust is refused, then, once the truststore holds the right CA,
/// accepted without a restart.
#[tokio::test]
async fn the_peer_clients_truststore_is_reloaded_when_its_file_changes() {
    use common::certs::{server_leaf, write_stores, Ca};
    let dir = tempfile::tempdir().unwrap();
    let right = Ca::new("right-ca");
    let wrong = Ca::new("wrong-ca");
    let (ks, ts) = write_stores(dir.path(), &server_leaf(&right), &[&right]);
    let broker = common::TestBroker::start(&[
        ("listeners", "PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0"),
        ("ssl.keystore.type", "PEM"),
        ("ssl.keystore.location", &ks.display().to_string()),
        ("ssl.truststore.type", "PEM"),
        ("ssl.truststore.location", &ts.display().to_string()),
    ])
    .await;
    let tls_addr = broker.running.as_ref().unwrap().local_addrs[1];
    let peer_trust = dir.path().join("peer-truststore.pem");
    std::fs::write(&peer_trust, wrong.pem()).unwrap();
    let config = strata::config::BrokerConfig::load(
        None,
        &[
            "listeners=SSL://127.0.0.1:9093".to_string(),
            "strata.admin.listeners=".into(),
            "ssl.keystore.type=PEM".into(),
            format!("ssl.keystore.location={}", ks.display()),
            "ssl.truststore.type=PEM".into(),
            format!("ssl.truststore.location={}", peer_trust.display()),
        ],
    )
    .expect("config")
    .0;
    let security = strata::net::peer::PeerSecurity::for_listener(&config, "SSL", None).unwrap();
    let addr = tls_addr.to_string();
    let call = |security: strata::net::peer::PeerSecurity| {
        let addr = addr.clone();
        async move {
            let mut c =
                strata::net::peer::PeerClient::connect_secured(&addr, "t", 2_000, &security)
                    .await?;
            c.call(
                18,
                0,
                &strata::protocol::messages::api_versions_request::ApiVersionsRequest::default(),
            )
            .await
            .map_err(|e| std::io::Error::other(e.to_string()))?;
            Ok::<(), std::io::Error>(())
        }
    };
    assert!(
        call(security.clone()).await.is_err(),
        "a server certificate from an untrusted CA is refused"
    );
    // The files are checked at most once a second; wait so the change is seen as one.
    tokio::time::sleep(Duration::from_millis(1100)).await;
    std::fs::copy(&ts, &peer_trust).unwrap();
    assert!(
        call(security.clone()).await.is_ok(),
        "the reloaded truststore trusts the broker"
    );
    drop(broker);
}

/// The single-node default formatted with `--add-scram`: the user logs in over SCRAM at once,
/// a wrong password is refused, and the credential is committed to the metadata log, where
/// it stays after a restart.
#[tokio::test]
async fn a_single_node_formatted_with_add_scram_has_its_first_user() {
    use strata::config::sasl::PeerLogin;
    let dir = tempfile::tempdir().unwrap();
    let keys = [
        (
            "listeners",
            "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
        ),
        ("sasl.enabled.mechanisms", "SCRAM-SHA-256"),
    ];
    strata::cluster::format::format(
        &common::config_for(dir.path(), &keys),
        &strata::cluster::format::FormatOptions {
            cluster_id: strata::cluster::format::random_uuid(),
            add_scram: vec![
                "SCRAM-SHA-256=[name=alice,password=alice-secret,iterations=8192]".into(),
            ],
            ..Default::default()
        },
    )
    .expect("format");
    let mut broker = common::TestBroker::start_in(dir, &keys).await;
    let login = |password: &str| PeerLogin {
        listener: "SASL_PLAINTEXT".into(),
        mechanism: "SCRAM-SHA-256".into(),
        username: "alice".into(),
        password: password.into(),
    };
    for round in 0..2 {
        let sasl_addr = broker.running.as_ref().unwrap().local_addrs[1];
        let mut s = tokio::net::TcpStream::connect(sasl_addr).await.unwrap();
        strata::net::sasl_client::authenticate(&mut s, &login("alice-secret"), "t", 0)
            .await
            .unwrap_or_else(|e| panic!("round {round}: alice logs in: {e}"));
        let mut s = tokio::net::TcpStream::connect(sasl_addr).await.unwrap();
        let e = strata::net::sasl_client::authenticate(&mut s, &login("wrong"), "t", 0)
            .await
            .unwrap_err();
        assert!(
            matches!(
                e,
                strata::net::sasl_client::SaslClientError::Refused { error_code: 58, .. }
            ),
            "round {round}: {e:?}"
        );
        // Committed: the image holds the credential with the given iterations.
        let running = broker.running.as_ref().unwrap();
        let mut found = None;
        for _ in 0..100 {
            found = running
                .broker
                .cluster
                .image()
                .scram
                .credential("alice", strata::controller::scram::ScramMechanism::Sha256)
                .map(|c| c.iterations);
            if found.is_some() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert_eq!(found, Some(8192), "round {round}");
        broker = broker.restart(&keys).await;
    }
}

/// KIP-368: when the broker limits SASL sessions (`connections.max.reauth.ms`), the peer
/// client logs in again on the same connection before its session ends, so a long-lived
/// connection (a replica fetcher's) keeps working past the lifetime.
#[tokio::test]
async fn the_peer_client_re_authenticates_before_its_session_expires() {
    use strata::config::sasl::PeerLogin;
    use strata::net::peer::{PeerClient, PeerSecurity};
    use strata::protocol::messages::api_versions_request::ApiVersionsRequest;
    let broker = common::TestBroker::start(&[
        (
            "listeners",
            "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
        ),
        ("sasl.enabled.mechanisms", "PLAIN"),
        (
            "listener.name.sasl_plaintext.plain.sasl.jaas.config",
            "org.apache.kafka.common.security.plain.PlainLoginModule required \
             user_alice=\"alice-secret\";",
        ),
        ("connections.max.reauth.ms", "1000"),
    ])
    .await;
    let addr = broker.running.as_ref().unwrap().local_addrs[1].to_string();
    let security = PeerSecurity {
        tls: None,
        sasl: Some(std::sync::Arc::new(
            strata::net::sasl_client::PeerSasl::new(PeerLogin {
                listener: "SASL_PLAINTEXT".into(),
                mechanism: "PLAIN".into(),
                username: "alice".into(),
                password: "alice-secret".into(),
            }),
        )),
    };
    let mut c = PeerClient::connect_secured(&addr, "t", 2_000, &security)
        .await
        .expect("logs in");
    // Past the session's lifetime three times over, on the one connection.
    for i in 0..8 {
        c.call(18, 0, &ApiVersionsRequest::default())
            .await
            .unwrap_or_else(|e| panic!("call {i} at {} ms: {e}", i * 400));
        tokio::time::sleep(Duration::from_millis(400)).await;
    }
}
