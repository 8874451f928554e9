//! Tests of the SASL settings: JAAS parsing, per-listener mechanisms and logins, the peer
//! client's login, re-authentication limits and the OAUTHBEARER validator's keys.
use super::*;

fn props(kv: &[(&str, &str)]) -> BTreeMap<String, String> {
    kv.iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn protocols(kv: &[(&str, SecurityProtocol)]) -> BTreeMap<String, SecurityProtocol> {
    kv.iter().map(|(k, v)| (k.to_string(), *v)).collect()
}

#[test]
fn jaas_lines_parse_as_kafka_reads_them() {
    let e = parse_jaas(
        r#"org.apache.kafka.common.security.plain.PlainLoginModule required
           username="admin" password="admin-secret" user_admin="admin-secret"
           user_alice='al"ice' user_bob="b\"ob";"#,
    )
    .unwrap();
    assert_eq!(e.len(), 1);
    assert_eq!(e[0].options["username"], "admin");
    assert_eq!(e[0].options["user_alice"], "al\"ice");
    assert_eq!(e[0].options["user_bob"], "b\"ob");
    assert!(parse_jaas("Module required a=b").is_err());
    assert!(parse_jaas("Module a=b;").is_err());
    assert!(parse_jaas("").is_err());
}

#[test]
fn listener_settings_override_global_ones() {
    let p = props(&[
        ("sasl.enabled.mechanisms", "SCRAM-SHA-512"),
        (
            "listener.name.client.sasl.enabled.mechanisms",
            "PLAIN,OAUTHBEARER",
        ),
        (
            "listener.name.client.plain.sasl.jaas.config",
            "org.apache.kafka.common.security.plain.PlainLoginModule required user_alice=\"a1\";",
        ),
        ("connections.max.reauth.ms", "60000"),
        (
            "listener.name.client.oauthbearer.connections.max.reauth.ms",
            "1000",
        ),
    ]);
    let prot = protocols(&[
        ("CLIENT", SecurityProtocol::SaslPlaintext),
        ("INTERNAL", SecurityProtocol::SaslSsl),
        ("PLAINTEXT", SecurityProtocol::Plaintext),
    ]);
    let names = vec!["PLAINTEXT".to_string(), "CLIENT".into(), "INTERNAL".into()];
    let c = parse(&p, &prot, &names, &[], Some("PLAINTEXT")).unwrap();
    let client = c.listener("client").unwrap();
    assert_eq!(client.mechanisms, vec!["PLAIN", "OAUTHBEARER"]);
    assert_eq!(client.plain_password("alice"), Some("a1"));
    assert_eq!(client.plain_password("bob"), None);
    assert_eq!(client.reauth_ms("PLAIN"), 60000);
    assert_eq!(client.reauth_ms("OAUTHBEARER"), 1000);
    assert_eq!(
        c.listener("INTERNAL").unwrap().mechanisms,
        vec!["SCRAM-SHA-512"]
    );
    assert!(c.listener("PLAINTEXT").is_none());
}

#[test]
fn gssapi_plain_without_users_and_unprefixed_jaas_stop_start_up() {
    let prot = protocols(&[
        ("SASL_PLAINTEXT", SecurityProtocol::SaslPlaintext),
        ("PLAINTEXT", SecurityProtocol::Plaintext),
    ]);
    let names = vec!["PLAINTEXT".to_string(), "SASL_PLAINTEXT".into()];
    // Kafka's default mechanism is GSSAPI.
    let err = parse(&props(&[]), &prot, &names, &[], Some("PLAINTEXT")).unwrap_err();
    assert!(err.to_string().contains("GSSAPI"), "{err}");
    let err = parse(
        &props(&[("sasl.enabled.mechanisms", "PLAIN")]),
        &prot,
        &names,
        &[],
        Some("PLAINTEXT"),
    )
    .unwrap_err();
    assert!(err.to_string().contains("PlainLoginModule"), "{err}");
    let err = parse(
        &props(&[
            ("sasl.enabled.mechanisms", "SCRAM-SHA-256"),
            ("sasl.jaas.config", "x"),
        ]),
        &prot,
        &names,
        &[],
        Some("PLAINTEXT"),
    )
    .unwrap_err();
    assert!(err.to_string().contains("listener.name."), "{err}");
    // No SASL listener: the GSSAPI default asks for nothing.
    assert!(parse(&props(&[]), &BTreeMap::new(), &[], &[], None).is_ok());
    assert!(parse(
        &props(&[("sasl.enabled.mechanisms", "SCRAM-SHA-512")]),
        &prot,
        &names,
        &[],
        Some("PLAINTEXT")
    )
    .is_ok());
}

/// The peer client's logins: Kafka's GSSAPI default, an unsupported or disabled
/// mechanism and a JAAS line without credentials stop start-up naming the key; the
/// resolved inter-broker listener (not the first listener) is the one that counts.
#[test]
fn peer_logins_come_from_the_listener_jaas_line_of_the_peer_mechanism() {
    let prot = protocols(&[
        ("CLIENT", SecurityProtocol::Plaintext),
        ("INTERNAL", SecurityProtocol::SaslSsl),
        ("CONTROLLER", SecurityProtocol::SaslPlaintext),
    ]);
    let names = vec!["CLIENT".to_string(), "INTERNAL".into(), "CONTROLLER".into()];
    let controllers = vec!["CONTROLLER".to_string()];
    let scram = "org.apache.kafka.common.security.scram.ScramLoginModule required \
                 username=\"admin\" password=\"admin-secret\";";
    let plain = "org.apache.kafka.common.security.plain.PlainLoginModule required \
                 username=\"ctl\" password=\"ctl-secret\" user_ctl=\"ctl-secret\";";
    let full = [
        ("sasl.enabled.mechanisms", "SCRAM-SHA-512,PLAIN"),
        ("sasl.mechanism.inter.broker.protocol", "SCRAM-SHA-512"),
        ("sasl.mechanism.controller.protocol", "PLAIN"),
        (
            "listener.name.internal.scram-sha-512.sasl.jaas.config",
            scram,
        ),
        ("listener.name.internal.plain.sasl.jaas.config", plain),
        ("listener.name.controller.plain.sasl.jaas.config", plain),
    ];
    let c = parse(&props(&full), &prot, &names, &controllers, Some("INTERNAL")).unwrap();
    let ib = c.inter_broker_login.clone().unwrap();
    assert_eq!(
        (
            ib.listener.as_str(),
            ib.mechanism.as_str(),
            ib.username.as_str()
        ),
        ("INTERNAL", "SCRAM-SHA-512", "admin")
    );
    assert_eq!(ib.password, "admin-secret");
    assert!(
        !format!("{ib:?}").contains("admin-secret"),
        "password hidden"
    );
    let ctl = c.controller_login.clone().unwrap();
    assert_eq!(
        (ctl.mechanism.as_str(), ctl.username.as_str()),
        ("PLAIN", "ctl")
    );
    // The inter-broker listener is the resolved one: CLIENT is plaintext, no login.
    let c = parse(&props(&full), &prot, &names, &controllers, Some("CLIENT")).unwrap();
    assert!(c.inter_broker_login.is_none());
    let without = |key: &str| -> Vec<(&str, &str)> {
        full.iter().copied().filter(|(k, _)| *k != key).collect()
    };
    // Kafka's default mechanism, GSSAPI, is not implemented.
    let err = parse(
        &props(&without("sasl.mechanism.inter.broker.protocol")),
        &prot,
        &names,
        &controllers,
        Some("INTERNAL"),
    )
    .unwrap_err()
    .to_string();
    assert!(
        err.contains("sasl.mechanism.inter.broker.protocol") && err.contains("GSSAPI"),
        "{err}"
    );
    // A mechanism the listener does not enable.
    let mut disabled = full.to_vec();
    disabled[0] = ("sasl.enabled.mechanisms", "PLAIN");
    let err = parse(
        &props(&disabled),
        &prot,
        &names,
        &controllers,
        Some("INTERNAL"),
    )
    .unwrap_err()
    .to_string();
    assert!(
        err.contains("must be included in sasl.enabled.mechanisms"),
        "{err}"
    );
    // OAUTHBEARER is served but the peer client does not log in with it.
    let mut oauth = full.to_vec();
    oauth[2] = ("sasl.mechanism.controller.protocol", "OAUTHBEARER");
    let err = parse(
        &props(&oauth),
        &prot,
        &names,
        &controllers,
        Some("INTERNAL"),
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("sasl.mechanism.controller.protocol"), "{err}");
    // A JAAS line without the broker's own credentials.
    let mut no_user = full.to_vec();
    no_user[3] = (
        "listener.name.internal.scram-sha-512.sasl.jaas.config",
        "org.apache.kafka.common.security.scram.ScramLoginModule required;",
    );
    let err = parse(
        &props(&no_user),
        &prot,
        &names,
        &controllers,
        Some("INTERNAL"),
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("username and password"), "{err}");
    // A broker-only node logs in to a controller listener it does not serve.
    let broker_names = vec!["CLIENT".to_string(), "INTERNAL".into()];
    let c = parse(
        &props(&full),
        &prot,
        &broker_names,
        &controllers,
        Some("INTERNAL"),
    )
    .unwrap();
    assert_eq!(c.controller_login.unwrap().username, "ctl");
}

#[test]
fn the_validating_oauthbearer_handler_reads_the_jwt_settings() {
    let prot = protocols(&[("CLIENT", SecurityProtocol::SaslPlaintext)]);
    let names = vec!["PLAINTEXT".to_string(), "CLIENT".into()];
    let handler = "listener.name.client.oauthbearer.sasl.server.callback.handler.class";
    let base = [
        ("sasl.enabled.mechanisms", "OAUTHBEARER"),
        (
            "sasl.oauthbearer.jwks.endpoint.url",
            "file:///etc/jwks.json",
        ),
        ("sasl.oauthbearer.expected.audience", "global"),
        (
            "listener.name.client.sasl.oauthbearer.expected.audience",
            "listener",
        ),
        (
            "oauthbearer.sasl.oauthbearer.expected.issuer",
            "https://idp",
        ),
    ];
    // No handler: Kafka's unsecured validator.
    let c = parse(&props(&base), &prot, &names, &[], Some("PLAINTEXT")).unwrap();
    assert_eq!(c.listener("client").unwrap().oauth, None);
    for class in [
        crate::config::oauth::VALIDATOR_CALLBACK_HANDLER,
        crate::config::oauth::LEGACY_VALIDATOR_CALLBACK_HANDLER,
    ] {
        let mut kv = base.to_vec();
        kv.push((handler, class));
        let c = parse(&props(&kv), &prot, &names, &[], Some("PLAINTEXT")).unwrap();
        let o = c.listener("client").unwrap().oauth.clone().unwrap();
        assert_eq!(
            o.jwks_endpoint,
            crate::config::oauth::JwksEndpoint::File("/etc/jwks.json".into())
        );
        // The listener's form wins over the global one.
        assert_eq!(o.expected_audience, vec!["listener"]);
        assert_eq!(o.expected_issuer.as_deref(), Some("https://idp"));
        assert!(o.jwks_ssl.is_empty());
    }
    // The JWKS client's TLS: the ssl.* options of the OAUTHBEARER JAAS entry, nothing else.
    let mut kv = base.to_vec();
    kv.push((handler, crate::config::oauth::VALIDATOR_CALLBACK_HANDLER));
    kv.push((
        "listener.name.client.oauthbearer.sasl.jaas.config",
        "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required \
         ssl.truststore.type=\"PEM\" ssl.truststore.location=\"/etc/idp-ca.pem\" \
         unsecuredLoginStringClaim_sub=\"x\";",
    ));
    let c = parse(&props(&kv), &prot, &names, &[], Some("PLAINTEXT")).unwrap();
    let o = c.listener("client").unwrap().oauth.clone().unwrap();
    let ssl: Vec<(&str, &str)> = o
        .jwks_ssl
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    assert_eq!(
        ssl,
        vec![
            ("ssl.truststore.location", "/etc/idp-ca.pem"),
            ("ssl.truststore.type", "PEM")
        ]
    );
    let mut kv = base.to_vec();
    kv.push((handler, "com.example.Custom"));
    let err = parse(&props(&kv), &prot, &names, &[], Some("PLAINTEXT")).unwrap_err();
    assert!(err.to_string().contains(handler), "{err}");
    let kv = [
        ("sasl.enabled.mechanisms", "OAUTHBEARER"),
        (handler, crate::config::oauth::VALIDATOR_CALLBACK_HANDLER),
    ];
    let err = parse(&props(&kv), &prot, &names, &[], Some("PLAINTEXT")).unwrap_err();
    assert!(err.to_string().contains("jwks.endpoint.url"), "{err}");
}

#[test]
fn handled_keys() {
    assert!(handles("sasl.enabled.mechanisms"));
    assert!(handles("listener.name.x.sasl.enabled.mechanisms"));
    assert!(handles("listener.name.x.plain.sasl.jaas.config"));
    assert!(handles("listener.name.x.scram-sha-512.sasl.jaas.config"));
    assert!(handles(
        "listener.name.x.oauthbearer.connections.max.reauth.ms"
    ));
    assert!(!handles("listener.name.x.sasl.jaas.config"));
    assert!(!handles("sasl.kerberos.service.name"));
    assert!(!handles("listener.name.x.gssapi.sasl.jaas.config"));
    assert!(handles("sasl.oauthbearer.expected.issuer"));
    assert!(handles(
        "listener.name.x.oauthbearer.sasl.oauthbearer.jwks.endpoint.url"
    ));
    assert!(handles(
        "listener.name.x.oauthbearer.sasl.server.callback.handler.class"
    ));
    assert!(!handles(
        "listener.name.x.plain.sasl.server.callback.handler.class"
    ));
    assert!(!handles("sasl.oauthbearer.token.endpoint.url"));
}
