//! Tests of the broker config: parsing, defaults, synonyms and the keys that refuse start-up.
use super::*;

fn load(text: &str, overrides: &[&str]) -> Result<(BrokerConfig, Vec<ConfigWarning>), ConfigError> {
    let o: Vec<String> = overrides.iter().map(|s| s.to_string()).collect();
    BrokerConfig::load(Some(text), &o)
}

#[test]
fn defaults() {
    let c = BrokerConfig::default();
    assert_eq!(c.node_id, 1);
    assert_eq!(
        c.process_roles,
        vec![ProcessRole::Broker, ProcessRole::Controller]
    );
    assert_eq!(
        c.listeners,
        vec![Listener {
            name: "PLAINTEXT".into(),
            host: "127.0.0.1".into(),
            port: 9092
        }]
    );
    assert_eq!(c.advertised_listeners, c.listeners);
    assert_eq!(c.log_dirs, vec![PathBuf::from("./strata-data")]);
    assert_eq!(c.log_retention_ms, 168 * MS_PER_HOUR);
    assert_eq!(c.log_roll_ms, 168 * MS_PER_HOUR);
    assert_eq!(c.message_max_bytes, 1_048_588);
    assert_eq!(c.socket_request_max_bytes, 104_857_600);
    assert_eq!(c.max_inflight_requests_per_connection, 16);
    assert_eq!(c.offsets_retention_ms, 10080 * MS_PER_MINUTE);
    assert_eq!(c.log_flush_interval_ms, i64::MAX);
    assert_eq!(
        c.log_cleanup_policy,
        CleanupPolicy {
            delete: true,
            compact: false
        }
    );
    assert_eq!(c.compression_type, CompressionType::Producer);
    assert!(c.log_cleaner_enable);
    assert_eq!(c.log_cleaner_backoff_ms, 15_000);
    assert_eq!(c.log_cleaner_io_max_bytes_per_second, f64::MAX);
    assert!(c.static_configs.is_empty());
    let (c, _) = load(
        "log.cleaner.io.max.bytes.per.second=1048576.5\nlog.cleaner.backoff.ms=200",
        &["log.cleaner.enable=false"],
    )
    .unwrap();
    assert_eq!(c.log_cleaner_io_max_bytes_per_second, 1_048_576.5);
    assert_eq!(c.log_cleaner_backoff_ms, 200);
    assert!(!c.log_cleaner_enable);
}

#[test]
fn retention_and_roll_precedence() {
    let (c, _) = load("log.retention.hours=1\nlog.retention.minutes=5", &[]).unwrap();
    assert_eq!(c.log_retention_ms, 5 * MS_PER_MINUTE);
    let (c, _) = load(
        "log.retention.hours=1\nlog.retention.minutes=5",
        &["log.retention.ms=42"],
    )
    .unwrap();
    assert_eq!(c.log_retention_ms, 42);
    let (c, _) = load("log.retention.ms=-5", &[]).unwrap();
    assert_eq!(c.log_retention_ms, -1);
    let (c, _) = load("log.roll.hours=2", &[]).unwrap();
    assert_eq!(c.log_roll_ms, 2 * MS_PER_HOUR);
    let (c, _) = load("log.roll.hours=2\nlog.roll.ms=10", &[]).unwrap();
    assert_eq!(c.log_roll_ms, 10);
}

#[test]
fn overrides_beat_file_and_log_dirs_beat_log_dir() {
    let (c, _) = load(
        "num.partitions=3\nlog.dir=/a\nlog.dirs=/b, /c",
        &["num.partitions=7"],
    )
    .unwrap();
    assert_eq!(c.num_partitions, 7);
    assert_eq!(c.log_dirs, vec![PathBuf::from("/b"), PathBuf::from("/c")]);
    assert_eq!(c.static_configs["num.partitions"], "7");
    let (c, _) = load("log.dir=/a", &[]).unwrap();
    assert_eq!(c.log_dirs, vec![PathBuf::from("/a")]);
    assert_eq!(
        load("", &["novalue"]).unwrap_err(),
        ConfigError::InvalidOverride("novalue".into())
    );
}

#[test]
fn unknown_keys_are_warnings() {
    let (_, w) = load(
        "retension.ms=1\nnum.io.threads=8\nlistener.name.x.y=1",
        &["foo.bar=1"],
    )
    .unwrap();
    assert!(w.contains(&ConfigWarning::UnknownKey("retension.ms".into())));
    assert!(w.contains(&ConfigWarning::UnknownKey("foo.bar".into())));
    assert!(w.contains(&ConfigWarning::IgnoredKafkaKey("num.io.threads".into())));
    assert!(w.contains(&ConfigWarning::IgnoredKafkaKey("listener.name.x.y".into())));
    assert!(w.iter().any(|w| w.to_string().contains("'foo.bar'")));
}

#[test]
fn unsupported_security_stops_loading_with_an_error_naming_the_key() {
    // SASL on the inter-broker listener (here the only one): the peer client logs in with
    // `sasl.mechanism.inter.broker.protocol`, whose Kafka default (GSSAPI) Strata lacks.
    let err = load(
        "listeners=SASL_SSL://127.0.0.1:9093\nsasl.enabled.mechanisms=SCRAM-SHA-512",
        &[],
    )
    .unwrap_err();
    assert!(
        matches!(&err, ConfigError::Unsupported { key, .. } if key == "sasl.mechanism.inter.broker.protocol"),
        "{err}"
    );
    // A SASL listener with Kafka's default mechanism (GSSAPI, which Strata lacks) is refused
    // by the key that asks for it.
    let err = load(
        "listeners=PLAINTEXT://:9092,SECURE://:9093\n\
         listener.security.protocol.map=PLAINTEXT:PLAINTEXT,SECURE:SASL_SSL",
        &[],
    )
    .unwrap_err();
    assert!(
        matches!(&err, ConfigError::Unsupported { key, .. } if key == "sasl.enabled.mechanisms"),
        "{err}"
    );
    assert!(err.to_string().contains("GSSAPI"), "{err}");
    // A listener the map does not name is an error, as in Kafka.
    let err = load("listeners=INTERNAL://:9093", &[]).unwrap_err();
    assert!(matches!(&err, ConfigError::InvalidValue { key, .. } if key == "listeners"));
    let err = load("authorizer.class.name=org.example.Authorizer", &[]).unwrap_err();
    assert!(matches!(&err, ConfigError::Unsupported { key, .. } if key == "authorizer.class.name"));
    let err = load("", &["ssl.keymanager.algorithm=PKIX"]).unwrap_err();
    assert!(
        err.to_string().contains("ssl.keymanager.algorithm"),
        "{err}"
    );
    let (c, _) = load(
        "authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer\n\
         super.users=User:admin; User:CN=broker,O=x\nallow.everyone.if.no.acl.found=true",
        &[],
    )
    .unwrap();
    assert!(c.authorizer_enabled && c.allow_everyone_if_no_acl_found);
    assert_eq!(c.super_users, vec!["User:admin", "User:CN=broker,O=x"]);
    let (c, _) = load("", &[]).unwrap();
    assert!(!c.authorizer_enabled && c.super_users.is_empty());
    assert!(load("super.users=admin", &[]).is_err());
    // Kafka's KRaft default maps the controller listener to PLAINTEXT.
    let (c, _) = load(
        "listeners=PLAINTEXT://:9092,CONTROLLER://:9093\ncontroller.listener.names=CONTROLLER",
        &[],
    )
    .unwrap();
    assert_eq!(
        c.listener_security_protocol_map["CONTROLLER"],
        SecurityProtocol::Plaintext
    );
}

#[test]
fn bad_values_name_key_and_value() {
    let err = load("message.max.bytes=lots", &[]).unwrap_err();
    assert!(
        matches!(&err, ConfigError::InvalidValue { key, value, .. } if key == "message.max.bytes" && value == "lots")
    );
    assert!(err.to_string().contains("message.max.bytes") && err.to_string().contains("lots"));
    let err = load("listeners=PLAINTEXT://host", &[]).unwrap_err();
    assert!(matches!(&err, ConfigError::InvalidValue { key, .. } if key == "listeners"));
    assert!(load("auto.create.topics.enable=maybe", &[]).is_err());
    assert!(load("process.roles=broker,broker", &[]).is_err());
    assert!(load("process.roles=", &[]).is_err());
    assert!(load("node.id=2\nbroker.id=3", &[]).is_err());
    assert!(load(
        "group.min.session.timeout.ms=10\ngroup.max.session.timeout.ms=5",
        &[]
    )
    .is_err());
}

#[test]
fn listeners_and_voters() {
    let (c, _) = load(
        "listeners=plaintext://:9092, INTERNAL://[::1]:9093,EXTERNAL://0.0.0.0:0\n\
         listener.security.protocol.map=PLAINTEXT:PLAINTEXT,INTERNAL:PLAINTEXT,EXTERNAL:PLAINTEXT\n\
         advertised.listeners=PLAINTEXT://example.com:19092\n\
         controller.quorum.voters=1@localhost:9093,2@[::1]:9094\nbroker.id=4",
        &[],
    )
    .unwrap();
    assert_eq!(c.node_id, 4);
    assert_eq!(
        c.listeners[0],
        Listener {
            name: "PLAINTEXT".into(),
            host: "".into(),
            port: 9092
        }
    );
    assert_eq!(c.listeners[0].bind_host(), "0.0.0.0");
    assert_eq!(c.listeners[1].host, "::1");
    assert_eq!(c.listeners[2].port, 0);
    assert_eq!(c.advertised_listeners[0].host, "example.com");
    assert_eq!(
        c.controller_quorum_voters[1],
        QuorumVoter {
            id: 2,
            host: "::1".into(),
            port: 9094
        }
    );
    assert!(load("listeners=A://h:1,a://h:2", &[]).is_err());
    assert!(load("listeners=A://h:70000", &[]).is_err());
    assert!(load("controller.quorum.voters=x@h:1", &[]).is_err());
}

#[test]
fn quorum_bootstrap_servers() {
    let (c, _) = load(
        "controller.quorum.bootstrap.servers=localhost:9093, [::1]:9094",
        &[],
    )
    .unwrap();
    assert_eq!(
        c.controller_quorum_bootstrap_servers,
        vec!["localhost:9093".to_string(), "[::1]:9094".to_string()]
    );
    assert!(c.controller_quorum_voters.is_empty());
    assert!(load("controller.quorum.bootstrap.servers=localhost", &[]).is_err());
    assert!(load("controller.quorum.bootstrap.servers=h:99999", &[]).is_err());
}

#[test]
fn ssl_listeners_load_with_their_listener_overrides_and_inter_broker_listener() {
    let (c, _) = load(
        "listeners=PLAINTEXT://:9092,INTERNAL://:9093\n\
         listener.security.protocol.map=PLAINTEXT:PLAINTEXT,INTERNAL:SSL\n\
         inter.broker.listener.name=internal\n\
         ssl.keystore.type=PEM\n\
         ssl.keystore.location=/global.pem\n\
         listener.name.internal.ssl.keystore.location=/internal.pem\n\
         listener.name.internal.ssl.client.auth=required",
        &[],
    )
    .unwrap();
    assert_eq!(
        c.listener_security_protocol_map["INTERNAL"],
        SecurityProtocol::Ssl
    );
    assert_eq!(c.inter_broker_listener_name.as_deref(), Some("INTERNAL"));
    assert_eq!(c.static_configs["ssl.keystore.location"], "/global.pem");
    let internal = &c.listener_ssl_configs["INTERNAL"];
    assert_eq!(internal["ssl.keystore.location"], "/internal.pem");
    assert_eq!(internal["ssl.client.auth"], "required");
    // security.inter.broker.protocol names the listener after the protocol.
    let (c, _) = load(
        "listeners=PLAINTEXT://:9092,SSL://:9093\nsecurity.inter.broker.protocol=SSL",
        &[],
    )
    .unwrap();
    assert_eq!(c.inter_broker_listener_name.as_deref(), Some("SSL"));
    // Both set, or a listener the broker lacks: Kafka's errors.
    let err = load(
        "listeners=SSL://:9093\nsecurity.inter.broker.protocol=SSL\n\
         inter.broker.listener.name=SSL",
        &[],
    )
    .unwrap_err();
    assert!(err.to_string().contains("Only one of"), "{err}");
    let err = load("inter.broker.listener.name=INTERNAL", &[]).unwrap_err();
    assert!(err.to_string().contains("INTERNAL"), "{err}");
}

#[test]
fn group_share_settings_are_read_and_checked_as_kafka_does() {
    let (c, _) = load(
        "group.share.record.lock.duration.ms=20000\ngroup.share.delivery.count.limit=3\n\
         group.share.max.share.sessions=10\ngroup.share.enable=true\n",
        &[],
    )
    .unwrap();
    assert_eq!(c.group_share.record_lock_duration_ms, 20_000);
    assert_eq!(c.group_share.delivery_count_limit, 3);
    assert_eq!(c.group_share.max_share_sessions, 10);
    assert!(c.group_share.enable);
    let g = crate::broker::group_config(&c);
    assert_eq!(
        (
            g.share_group_record_lock_duration_ms,
            g.share_group_delivery_count_limit
        ),
        (20_000, 3)
    );
    assert!(!BrokerConfig::default().group_share.enable);
    // Below the minimum lock duration, out of Kafka's range, a heartbeat past the session.
    let e = load("group.share.record.lock.duration.ms=10000\n", &[]).unwrap_err();
    assert!(
        e.to_string()
            .contains("group.share.min.record.lock.duration.ms"),
        "{e}"
    );
    let e = load("group.share.delivery.count.limit=11\n", &[]).unwrap_err();
    assert!(e.to_string().contains("no more than 10"), "{e}");
    let e = load(
        "group.share.heartbeat.interval.ms=15000\ngroup.share.session.timeout.ms=45000\n\
         group.share.max.heartbeat.interval.ms=50000\ngroup.share.min.session.timeout.ms=10000\n",
        &[],
    );
    assert!(e.is_ok(), "{e:?}");
    let e = load(
        "group.share.heartbeat.interval.ms=46000\ngroup.share.max.heartbeat.interval.ms=50000\n",
        &[],
    )
    .unwrap_err();
    assert!(
        e.to_string()
            .contains("less than group.share.session.timeout.ms"),
        "{e}"
    );
}
