//! TLS listeners (issue 13): produce and fetch over TLS next to a plaintext listener, mutual
//! TLS with `ssl.client.auth=required`, principals from client certificates, certificate
//! reload, start-up errors naming the key and the file, and bad input on both kinds of port
//! (plaintext on a TLS port, TLS on a plaintext port, a client that stalls) closed without
//! leaking the connection's slot. Certificates are made with rcgen; the client is
//! tokio-rustls with Strata's own codec.
mod common;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use rustls::pki_types::ServerName;
use strata::protocol::messages::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use common::certs::{server_leaf, write_stores, Ca};
use common::tls::{
    api_versions_ok, api_versions_v0_frame, client_config, start_up_error, tls_broker, tls_connect,
};

macro_rules! call {
    ($c:expr, $req_mod:ident :: $req:ident, $resp_mod:ident :: $resp:ident, $v:expr, $value:expr) => {{
        let v: i16 = $v;
        let r: $resp_mod::$resp = $c
            .send(
                $req_mod::$req::API_KEY,
                v,
                &$value,
                $req_mod::$req::is_flexible(v),
                $resp_mod::$resp::is_flexible(v),
            )
            .await;
        r
    }};
}

type TlsConn = common::tls::KafkaConn<tokio_rustls::client::TlsStream<TcpStream>>;

/// Produces `values` as one batch to partition 0 of `topic`; returns (error code, base offset).
async fn produce(c: &mut TlsConn, topic: &str, values: &[Vec<u8>], acks: i16) -> (i16, i64) {
    let refs: Vec<&[u8]> = values.iter().map(|v| v.as_slice()).collect();
    let produced = call!(
        c,
        produce_request::ProduceRequest,
        produce_response::ProduceResponse,
        9,
        produce_request::ProduceRequest {
            acks,
            timeout_ms: 5000,
            topic_data: vec![produce_request::TopicProduceData {
                name: topic.into(),
                partition_data: vec![produce_request::PartitionProduceData {
                    index: 0,
                    records: Some(common::batch(&refs, None)),
                    ..Default::default()
                }],
                ..Default::default()
            }],
            ..Default::default()
        }
    );
    let p = &produced.responses[0].partition_responses[0];
    (p.error_code, p.base_offset)
}

/// Fetches partition 0 of `topic` from offset 0, up to 1 MiB.
async fn fetch_from_start(c: &mut TlsConn, topic: &str) -> fetch_response::PartitionData {
    let fetched = call!(
        c,
        fetch_request::FetchRequest,
        fetch_response::FetchResponse,
        12,
        common::fetch_request(topic, 0, 0, 1 << 20)
    );
    fetched.responses[0].partitions[0].clone()
}

#[tokio::test]
async fn produce_and_fetch_over_tls_next_to_a_plaintext_listener() {
    let dir = tempfile::tempdir().unwrap();
    let ca = Ca::new("test-ca");
    let (ks, ts) = write_stores(dir.path(), &server_leaf(&ca), &[&ca]);
    let b = tls_broker(&ks, &ts, &[]).await;
    let mut c = tls_connect(b.tls, client_config(&ca, None)).await.unwrap();

    let versions = call!(
        c,
        api_versions_request::ApiVersionsRequest,
        api_versions_response::ApiVersionsResponse,
        3,
        api_versions_request::ApiVersionsRequest {
            client_software_name: "tls-test".into(),
            client_software_version: "1".into(),
            ..Default::default()
        }
    );
    assert_eq!(versions.error_code, 0);
    assert!(versions.api_keys.iter().any(|k| k.api_key == 0));

    let created = call!(
        c,
        create_topics_request::CreateTopicsRequest,
        create_topics_response::CreateTopicsResponse,
        7,
        create_topics_request::CreateTopicsRequest {
            topics: vec![create_topics_request::CreatableTopic {
                name: "secured".into(),
                num_partitions: 1,
                replication_factor: 1,
                ..Default::default()
            }],
            timeout_ms: 5000,
            ..Default::default()
        }
    );
    assert_eq!(created.topics[0].error_code, 0, "{created:?}");

    // Metadata over TLS names both listeners' broker under the SSL listener's port.
    let md = call!(
        c,
        metadata_request::MetadataRequest,
        metadata_response::MetadataResponse,
        12,
        metadata_request::MetadataRequest {
            topics: Some(vec![metadata_request::MetadataRequestTopic {
                name: Some("secured".into()),
                ..Default::default()
            }]),
            ..Default::default()
        }
    );
    assert_eq!(md.topics[0].error_code, 0);

    let values: Vec<Vec<u8>> = (0..50).map(|i| format!("value-{i}").into_bytes()).collect();
    assert_eq!(produce(&mut c, "secured", &values, -1).await, (0, 0));
    let part = fetch_from_start(&mut c, "secured").await;
    assert_eq!((part.error_code, part.high_watermark), (0, 50));
    let records = part.records.clone().expect("records");
    // The batch read over TLS is the batch written: its values are in it, in order.
    let text = String::from_utf8_lossy(&records);
    assert!(text.contains("value-0") && text.contains("value-49"));

    // The plaintext listener still serves plaintext.
    let mut plain = common::Client::connect(b.plaintext).await;
    let pd = common::fetch_partition(&mut plain, "secured", 0, 0, 1 << 20).await;
    assert_eq!(pd.high_watermark, 50);

    // A fetch larger than the TLS path's 64 KiB read chunk, ending in a partial chunk: the
    // bytes over TLS are those the plaintext listener sends (from the file, zero-copy).
    let big: Vec<Vec<u8>> = (0..100)
        .map(|i| format!("big-{i:03}-").into_bytes().repeat(250))
        .collect();
    assert_eq!(produce(&mut c, "secured", &big, 1).await, (0, 50));
    let over_tls = fetch_from_start(&mut c, "secured")
        .await
        .records
        .expect("records");
    assert!(over_tls.len() > 2 * 64 * 1024, "{} bytes", over_tls.len());
    let pd = common::fetch_partition(&mut plain, "secured", 0, 0, 1 << 20).await;
    assert_eq!(pd.high_watermark, 150);
    assert_eq!(pd.records.as_deref(), Some(&over_tls[..]));
    drop(b);
}

#[tokio::test]
async fn mutual_tls_required_refuses_clients_without_or_with_a_wrong_certificate() {
    let dir = tempfile::tempdir().unwrap();
    let ca = Ca::new("test-ca");
    let rogue_ca = Ca::new("rogue-ca");
    let (ks, ts) = write_stores(dir.path(), &server_leaf(&ca), &[&ca]);
    let b = tls_broker(&ks, &ts, &[("ssl.client.auth", "required")]).await;
    let alice = ca.issue(&[(rcgen::DnType::CommonName, "alice")], &[]);
    let mallory = rogue_ca.issue(&[(rcgen::DnType::CommonName, "alice")], &[]);
    assert!(api_versions_ok(b.tls, client_config(&ca, Some(&alice))).await);
    assert!(!api_versions_ok(b.tls, client_config(&ca, None)).await);
    assert!(!api_versions_ok(b.tls, client_config(&ca, Some(&mallory))).await);
    // A client that does not trust the broker's CA refuses the broker.
    assert!(!api_versions_ok(b.tls, client_config(&rogue_ca, Some(&alice))).await);
    // And the refused ones left the broker serving.
    assert!(api_versions_ok(b.tls, client_config(&ca, Some(&alice))).await);
}

/// The principal a connection gets, from ServerTls itself (the handlers that read it are the
/// authorizer's and quotas').
async fn principal_for(
    config: &strata::config::BrokerConfig,
    client: Arc<rustls::ClientConfig>,
) -> Option<String> {
    let tls = strata::security::tls::ServerTls::new(config, "SSL", Duration::from_secs(2)).unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let server = tokio::spawn(async move {
        let (tcp, _) = listener.accept().await.unwrap();
        tls.accept(tcp, true)
            .await
            .ok()
            .map(|(s, p)| (s, p.unwrap().to_string()))
    });
    let client = tokio::spawn(async move {
        let c = tls_connect(addr, client).await;
        tokio::time::sleep(Duration::from_millis(200)).await;
        drop(c);
    });
    let r = server.await.unwrap().map(|(_, p)| p);
    client.await.unwrap();
    r
}

#[tokio::test]
async fn principals_come_from_the_certificate_subject_through_the_mapping_rules() {
    let dir = tempfile::tempdir().unwrap();
    let ca = Ca::new("test-ca");
    let (ks, ts) = write_stores(dir.path(), &server_leaf(&ca), &[&ca]);
    let duke = ca.issue(
        &[
            (rcgen::DnType::CountryName, "US"),
            (rcgen::DnType::OrganizationName, "Org"),
            (rcgen::DnType::OrganizationalUnitName, "ServiceUsers"),
            (rcgen::DnType::CommonName, "Duke"),
        ],
        &[],
    );
    let other = ca.issue(
        &[
            (rcgen::DnType::OrganizationName, "Sun, Inc"),
            (rcgen::DnType::CommonName, "bob"),
        ],
        &[],
    );
    let base = |extra: &[(&str, &str)]| {
        let mut keys: Vec<(&str, String)> = vec![
            ("listeners", "SSL://127.0.0.1:0".into()),
            ("ssl.keystore.type", "PEM".into()),
            ("ssl.keystore.location", ks.display().to_string()),
            ("ssl.truststore.type", "PEM".into()),
            ("ssl.truststore.location", ts.display().to_string()),
            ("ssl.client.auth", "requested".into()),
        ];
        keys.extend(extra.iter().map(|(k, v)| (*k, v.to_string())));
        let keys: Vec<(&str, &str)> = keys.iter().map(|(k, v)| (*k, v.as_str())).collect();
        common::config_for(dir.path(), &keys)
    };
    // DEFAULT: the RFC 2253 subject, last name first, commas in values escaped.
    let config = base(&[]);
    assert_eq!(
        principal_for(&config, client_config(&ca, Some(&duke)))
            .await
            .as_deref(),
        Some("User:CN=Duke,OU=ServiceUsers,O=Org,C=US")
    );
    assert_eq!(
        principal_for(&config, client_config(&ca, Some(&other)))
            .await
            .as_deref(),
        Some(r"User:CN=bob,O=Sun\, Inc")
    );
    // Requested, not sent: ANONYMOUS.
    assert_eq!(
        principal_for(&config, client_config(&ca, None))
            .await
            .as_deref(),
        Some("User:ANONYMOUS")
    );
    // Rules, the listener form winning over the global one.
    let config = base(&[
        ("ssl.principal.mapping.rules", "RULE:^CN=(.*)$/$1/"),
        (
            "listener.name.ssl.ssl.principal.mapping.rules",
            "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L, DEFAULT",
        ),
    ]);
    assert_eq!(
        principal_for(&config, client_config(&ca, Some(&duke)))
            .await
            .as_deref(),
        Some("User:duke")
    );
    assert_eq!(
        principal_for(&config, client_config(&ca, Some(&other)))
            .await
            .as_deref(),
        Some(r"User:CN=bob,O=Sun\, Inc")
    );
    // No rule applies: the connection is refused, as Kafka fails its authentication.
    let config = base(&[(
        "ssl.principal.mapping.rules",
        "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/",
    )]);
    assert_eq!(
        principal_for(&config, client_config(&ca, Some(&other))).await,
        None
    );
}

#[tokio::test]
async fn changed_key_material_is_used_by_new_connections_and_a_broken_file_keeps_the_old() {
    let dir = tempfile::tempdir().unwrap();
    let ca1 = Ca::new("ca-one");
    let ca2 = Ca::new("ca-two");
    let (ks, ts) = write_stores(dir.path(), &server_leaf(&ca1), &[&ca1]);
    let b = tls_broker(&ks, &ts, &[]).await;
    assert!(api_versions_ok(b.tls, client_config(&ca1, None)).await);
    assert!(!api_versions_ok(b.tls, client_config(&ca2, None)).await);

    // The same subject and names, issued by another CA: after the reload a client trusting
    // only the new CA gets in, one trusting only the old does not.
    tokio::time::sleep(Duration::from_millis(20)).await;
    write_stores(dir.path(), &server_leaf(&ca2), &[&ca1, &ca2]);
    let mut reloaded = false;
    for _ in 0..50 {
        if api_versions_ok(b.tls, client_config(&ca2, None)).await {
            reloaded = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(reloaded, "the new certificate was not picked up");
    assert!(!api_versions_ok(b.tls, client_config(&ca1, None)).await);

    // A broken keystore keeps the certificate in use.
    std::fs::write(&ks, "not a PEM file").unwrap();
    tokio::time::sleep(strata::security::tls::RELOAD_POLL * 3).await;
    assert!(api_versions_ok(b.tls, client_config(&ca2, None)).await);
    // So does a certificate for another subject (Kafka's ssl.allow.dn.changes=false).
    let other = ca2.issue(
        &[(rcgen::DnType::CommonName, "someone-else")],
        &["localhost"],
    );
    write_stores(dir.path(), &other, &[&ca1, &ca2]);
    tokio::time::sleep(strata::security::tls::RELOAD_POLL * 3).await;
    let mut c = tls_connect(b.tls, client_config(&ca2, None)).await.unwrap();
    let (_, conn) = c.stream.get_ref();
    let served = conn.peer_certificates().unwrap()[0].clone();
    let subject = strata::security::tls::dn::subject_rfc2253(&served).unwrap();
    assert_eq!(subject, "CN=broker");
    c.stream.shutdown().await.ok();
}

#[tokio::test]
async fn bad_key_material_stops_start_up_naming_the_key_and_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let ca = Ca::new("test-ca");
    let (ks, ts) = write_stores(dir.path(), &server_leaf(&ca), &[&ca]);
    let missing = dir.path().join("missing.pem").display().to_string();
    let ks = ks.display().to_string();
    let ts = ts.display().to_string();
    type Case<'a> = (Vec<(&'a str, &'a str)>, &'a [&'a str]);
    let cases: Vec<Case> = vec![
        (
            vec![
                ("ssl.keystore.type", "PEM"),
                ("ssl.keystore.location", &missing),
            ],
            &["ssl.keystore.location", "missing.pem"],
        ),
        (
            // Kafka's default type: a PKCS12 (or JKS) store, which needs its password.
            vec![("ssl.keystore.location", &ks)],
            &["ssl.keystore.type=JKS", "ssl.keystore.password is not"],
        ),
        (
            vec![
                ("ssl.keystore.type", "PKCS12"),
                ("ssl.keystore.location", &ks),
            ],
            &["ssl.keystore.type=PKCS12", "ssl.keystore.password is not"],
        ),
        (
            vec![
                ("ssl.keystore.type", "PEM"),
                ("ssl.keystore.location", &ks),
                ("ssl.key.password", "secret"),
            ],
            &["ssl.key.password", "encrypted"],
        ),
        (
            vec![
                ("ssl.keystore.type", "PEM"),
                ("listener.name.ssl.ssl.keystore.location", &missing),
                ("ssl.keystore.location", &ks),
            ],
            &["listener.name.ssl.ssl.keystore.location", "missing.pem"],
        ),
        (
            vec![
                ("ssl.keystore.type", "PEM"),
                ("ssl.keystore.location", &ks),
                ("ssl.client.auth", "required"),
            ],
            &["ssl.client.auth", "truststore"],
        ),
        (
            vec![
                ("ssl.keystore.type", "PEM"),
                ("ssl.keystore.location", &ks),
                ("ssl.enabled.protocols", "TLSv1.1,TLSv1.2"),
            ],
            &["ssl.enabled.protocols", "TLSv1.1"],
        ),
        (
            vec![
                ("ssl.keystore.type", "PEM"),
                ("ssl.keystore.location", &ks),
                ("ssl.cipher.suites", "TLS_RSA_WITH_AES_128_CBC_SHA"),
            ],
            &["ssl.cipher.suites", "TLS_RSA_WITH_AES_128_CBC_SHA"],
        ),
        (
            vec![
                ("ssl.truststore.type", "PEM"),
                ("ssl.truststore.location", &ts),
            ],
            &["no key and certificate"],
        ),
    ];
    for (keys, expected) in cases {
        let e = start_up_error(dir.path(), &keys).await;
        for part in expected {
            assert!(e.contains(part), "{keys:?}: {e}");
        }
    }
}

#[tokio::test]
async fn suites_and_versions_chosen_by_their_kafka_names_are_what_the_broker_offers() {
    let dir = tempfile::tempdir().unwrap();
    let ca = Ca::new("test-ca");
    let (ks, ts) = write_stores(dir.path(), &server_leaf(&ca), &[&ca]);
    let b = tls_broker(
        &ks,
        &ts,
        &[
            ("ssl.enabled.protocols", "TLSv1.2"),
            (
                "ssl.cipher.suites",
                "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384",
            ),
        ],
    )
    .await;
    let c = tls_connect(b.tls, client_config(&ca, None)).await.unwrap();
    let (_, conn) = c.stream.get_ref();
    assert_eq!(
        conn.protocol_version(),
        Some(rustls::ProtocolVersion::TLSv1_2)
    );
    assert_eq!(
        conn.negotiated_cipher_suite().unwrap().suite(),
        rustls::CipherSuite::TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384
    );
}

/// Whether the broker closes the connection within two seconds, after at most a TLS alert
/// record (content type 21) and never a Kafka response.
async fn closed_after_an_alert(stream: &mut TcpStream) -> bool {
    let mut received = Vec::new();
    let mut buf = [0u8; 256];
    let deadline = tokio::time::Instant::now() + Duration::from_secs(2);
    loop {
        match tokio::time::timeout_at(deadline, stream.read(&mut buf)).await {
            Err(_) => return false,
            Ok(Ok(0)) | Ok(Err(_)) => return received.first().map_or(true, |b| *b == 21),
            Ok(Ok(n)) => received.extend_from_slice(&buf[..n]),
        }
    }
}

#[tokio::test]
async fn plaintext_on_a_tls_port_tls_on_a_plaintext_port_and_stalls_are_closed_without_leaks() {
    let dir = tempfile::tempdir().unwrap();
    let ca = Ca::new("test-ca");
    let (ks, ts) = write_stores(dir.path(), &server_leaf(&ca), &[&ca]);
    // Two connection slots in all: a leaked one would lock the next client out.
    let b = tls_broker(
        &ks,
        &ts,
        &[
            ("max.connections", "2"),
            ("strata.request.read.timeout.ms", "500"),
        ],
    )
    .await;
    for round in 0..3 {
        // A Kafka request in plaintext on the TLS port.
        let mut plain = common::Client::connect(b.tls).await;
        let frame = api_versions_v0_frame();
        plain.stream.write_all(&frame).await.unwrap();
        assert!(
            closed_after_an_alert(&mut plain.stream).await,
            "round {round}: plaintext on TLS"
        );

        // A TLS handshake on the plaintext port.
        let tcp = TcpStream::connect(b.plaintext).await.unwrap();
        let handshake = tokio::time::timeout(
            Duration::from_secs(3),
            tokio_rustls::TlsConnector::from(client_config(&ca, None))
                .connect(ServerName::try_from("localhost").unwrap(), tcp),
        )
        .await
        .expect("the plaintext listener answers a handshake by closing");
        assert!(handshake.is_err(), "round {round}: TLS on plaintext");

        // A client that connects to the TLS port and says nothing is closed at the deadline.
        let mut stalled = common::Client::connect(b.tls).await;
        assert!(
            stalled.is_closed().await,
            "round {round}: stalled handshake"
        );
    }
    assert!(api_versions_ok(b.tls, client_config(&ca, None)).await);
    assert!(api_versions_ok(b.tls, client_config(&ca, None)).await);
}

/// Three broker+controller nodes whose inter-broker listener (INTERNAL) and controller
/// listener are SSL with mutual TLS; clients use a PLAINTEXT listener. Replication (acks=all
/// needs the followers' fetches), the Raft quorum, forwarding and heartbeats all go over TLS.
#[tokio::test]
async fn a_cluster_replicates_and_fails_over_on_ssl_inter_broker_and_controller_listeners() {
    use common::cluster::{free_port, produce_retrying, values};
    let dir = tempfile::tempdir().unwrap();
    let ca = Ca::new("cluster-ca");
    let (ks, ts) = write_stores(dir.path(), &server_leaf(&ca), &[&ca]);
    let ports: Vec<(u16, u16, u16)> = (0..3)
        .map(|_| (free_port(), free_port(), free_port()))
        .collect();
    let voters: Vec<String> = ports
        .iter()
        .enumerate()
        .map(|(i, p)| format!("{}@127.0.0.1:{}", i + 1, p.2))
        .collect();
    let config = |i: usize| {
        let (plain, internal, controller) = ports[i];
        let overrides = vec![
            format!("node.id={}", i + 1),
            "process.roles=broker,controller".into(),
            format!(
                "listeners=PLAINTEXT://127.0.0.1:{plain},INTERNAL://127.0.0.1:{internal},\
                 CONTROLLER://127.0.0.1:{controller}"
            ),
            "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,INTERNAL:SSL,CONTROLLER:SSL".into(),
            "inter.broker.listener.name=INTERNAL".into(),
            "controller.listener.names=CONTROLLER".into(),
            format!("controller.quorum.voters={}", voters.join(",")),
            format!("log.dirs={}", dir.path().join(format!("n{i}")).display()),
            "ssl.keystore.type=PEM".into(),
            format!("ssl.keystore.location={}", ks.display()),
            "ssl.truststore.type=PEM".into(),
            format!("ssl.truststore.location={}", ts.display()),
            "ssl.client.auth=required".into(),
            "broker.heartbeat.interval.ms=200".into(),
            "broker.session.timeout.ms=2000".into(),
            "strata.admin.listeners=".into(),
            "replica.lag.time.max.ms=2000".into(),
            "offsets.topic.replication.factor=3".into(),
            "offsets.topic.num.partitions=3".into(),
            "transaction.state.log.replication.factor=3".into(),
            "transaction.state.log.num.partitions=3".into(),
        ];
        strata::config::BrokerConfig::load(None, &overrides)
            .expect("config")
            .0
    };
    let mut nodes = Vec::new();
    for i in 0..3 {
        nodes.push(Some(
            strata::server::startup::start(config(i), strata::clock::system())
                .await
                .expect("node starts"),
        ));
    }
    let addr = |i: usize| -> SocketAddr { format!("127.0.0.1:{}", ports[i].0).parse().unwrap() };
    let metadata = |i: usize| async move {
        let mut c = common::Client::connect(addr(i)).await;
        common::api_call!(
            c,
            metadata_request::MetadataRequest,
            metadata_response::MetadataResponse,
            12,
            metadata_request::MetadataRequest {
                topics: Some(vec![metadata_request::MetadataRequestTopic {
                    name: Some("replicated".into()),
                    ..Default::default()
                }]),
                allow_auto_topic_creation: false,
                ..Default::default()
            }
        )
    };
    let wait_leader = |i: usize, not: Option<i32>, isr: usize| async move {
        for _ in 0..300 {
            let m = metadata(i).await;
            if let Some(p) = m
                .topics
                .first()
                .filter(|t| t.error_code == 0)
                .and_then(|t| t.partitions.first())
            {
                if p.leader_id >= 0 && Some(p.leader_id) != not && p.isr_nodes.len() >= isr {
                    return p.leader_id;
                }
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("no leader seen from node index {i}");
    };
    for _ in 0..300 {
        if metadata(0).await.brokers.len() == 3 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(
        metadata(0).await.brokers.len(),
        3,
        "three brokers registered"
    );
    // Clients are told about the PLAINTEXT listener, never the internal one.
    assert!(metadata(0)
        .await
        .brokers
        .iter()
        .all(|b| ports.iter().any(|p| p.0 as i32 == b.port)));

    // Created on a node that may not be the active controller: forwarded over TLS.
    let mut c = common::Client::connect(addr(1)).await;
    assert_eq!(
        common::create_topic_rf(&mut c, "replicated", 1, 3, &[("min.insync.replicas", "2")]).await,
        0
    );
    let leader = wait_leader(0, None, 3).await;
    let li = leader as usize - 1;
    let mut lc = common::Client::connect(addr(li)).await;
    // acks=all with all three in the ISR: acknowledged only once both followers fetched it
    // over the SSL inter-broker listener.
    let (code, base) = produce_retrying(&mut lc, "replicated", &[b"a", b"b"]).await;
    assert_eq!((code, base), (0, 0));

    // The leader stops; the quorum (over TLS) elects another and it takes writes.
    nodes[li].take().unwrap().stop().await.unwrap();
    let other = (li + 1) % 3;
    let new_leader = wait_leader(other, Some(leader), 1).await;
    let ni = new_leader as usize - 1;
    let mut nc = common::Client::connect(addr(ni)).await;
    let (code, base) = produce_retrying(&mut nc, "replicated", &[b"c"]).await;
    assert_eq!((code, base), (0, 2), "acks=all produce to the new leader");
    let p = common::fetch_partition(&mut nc, "replicated", 0, 0, 1 << 20).await;
    assert_eq!(values(&p), vec!["a", "b", "c"]);
    for n in nodes.iter_mut() {
        if let Some(n) = n.take() {
            n.stop().await.unwrap();
        }
    }
}
