//! KIP-368 on the Raft transport: three controllers whose controller listener is
//! SASL_PLAINTEXT with sessions of `connections.max.reauth.ms=1500`. Their Raft connections
//! log in again on the same connection before each session ends, as the peer client does
//! (tests/peer_sasl.rs), so no controller ever closes one for an expired session.
mod common;

use std::time::Duration;

use common::cluster::Cluster;
use common::logs::Captured;

const JAAS: &str = "org.apache.kafka.common.security.plain.PlainLoginModule required \
                    username=\"admin\" password=\"admin-secret\" user_admin=\"admin-secret\";";

#[tokio::test]
async fn raft_connections_re_authenticate_instead_of_being_closed() {
    let captured = Captured::default();
    let writer = captured.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_writer(move || writer.clone())
        .with_ansi(false)
        .with_env_filter(tracing_subscriber::EnvFilter::new(
            "warn,strata::server::connection=debug,strata::net::raft_transport=debug",
        ))
        .finish();
    // A current-thread runtime: every node's tasks log through this subscriber.
    let _guard = tracing::subscriber::set_default(subscriber);

    let jaas = format!("listener.name.controller.plain.sasl.jaas.config={JAAS}");
    let overrides = [
        "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:SASL_PLAINTEXT",
        "sasl.enabled.mechanisms=PLAIN",
        "sasl.mechanism.controller.protocol=PLAIN",
        jaas.as_str(),
        "connections.max.reauth.ms=1500",
    ];
    let c = Cluster::start_with(1, &overrides).await;
    c.wait_brokers(0, 3).await;
    // Several session lifetimes of heartbeats and appends between the controllers.
    tokio::time::sleep(Duration::from_millis(6_000)).await;
    let relogins = captured
        .lines_with("re-authenticated the Raft connection")
        .len();
    let expired = captured.lines_with("the SASL session expired").len();
    assert!(relogins > 0, "no Raft connection re-authenticated");
    assert_eq!(expired, 0, "{expired} connections outlived their session");
    // The cluster still serves: every broker's registration is known.
    c.wait_brokers(1, 3).await;
}
