//! The delegation token decisions and their replay: HMAC value, Kafka's timestamps for create,
//! renew and expire, who may renew, the expiry sweep, describe filtering, records replayed and
//! snapshotted as a restarted node reads them, and the config keys.
use super::*;
use crate::controller::image::MetadataImage;

const NOW: i64 = 1_700_000_000_000;
const HOUR: i64 = 60 * 60 * 1000;

fn settings() -> TokenSettings {
    TokenSettings {
        secret_key: Some("secret-key".into()),
        ..TokenSettings::default()
    }
}

fn create(owner: &str, requester: &str, renewers: &[&str], max_lifetime_ms: i64) -> CreateToken {
    CreateToken {
        owner: owner.into(),
        requester: requester.into(),
        renewers: renewers.iter().map(|r| r.to_string()).collect(),
        max_lifetime_ms,
    }
}

/// Creates a token in `image` and returns (token, hmac).
fn created(
    image: &mut MetadataImage,
    request: &CreateToken,
    now: i64,
) -> (TokenInformation, Vec<u8>) {
    let (records, out) = create_token(&settings(), now, request);
    assert_eq!(out.error, ErrorCode::NONE);
    assert_eq!(records.len(), 1);
    for r in &records {
        image.apply(r);
    }
    (out.token.unwrap(), out.hmac)
}

#[test]
fn the_hmac_is_hmac_sha512_of_the_token_id_under_the_secret() {
    // Computed independently: python3 hmac.new(b"secret-key", b"tok-1", hashlib.sha512).
    let expected = "4d29a8b77738ff0444e3e9e4b4002a425d76c9a5ab8207c5fcfbeb3ed0ea981d\
                    730191bbaa8f71eb0c3b2cd38e612e595f34cd36dccb6bc1e602b3f7ba83a9cf";
    let hex: String = token_hmac("secret-key", "tok-1")
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    assert_eq!(hex, expected);
    assert_eq!(settings_hmac(&TokenSettings::default(), "tok-1"), None);
    let empty = TokenSettings {
        secret_key: Some(String::new()),
        ..TokenSettings::default()
    };
    assert!(!empty.enabled());
}

#[test]
fn create_sets_owner_requester_renewers_and_kafkas_timestamps() {
    let mut image = MetadataImage::default();
    let request = create("User:owner", "User:admin", &["User:renewer"], 0);
    let (token, hmac) = created(&mut image, &request, NOW);
    assert_eq!(token.owner, "User:owner");
    assert_eq!(token.requester, "User:admin");
    assert_eq!(token.renewers, vec!["User:renewer".to_string()]);
    assert_eq!(token.issue_timestamp_ms, NOW);
    // Defaults: 7 days max lifetime, 24 h until expiry.
    assert_eq!(token.max_timestamp_ms, NOW + 7 * 24 * HOUR);
    assert_eq!(token.expiry_timestamp_ms, NOW + 24 * HOUR);
    assert_eq!(token.token_id.len(), 22, "a Kafka Uuid string");
    assert_eq!(hmac, token_hmac("secret-key", &token.token_id));
    assert_eq!(image.delegation_tokens.get(&token.token_id), Some(&token));

    // A shorter requested lifetime caps both timestamps; a longer one is cut to the max.
    let (short, _) = created(&mut image, &create("User:a", "User:a", &[], HOUR), NOW);
    assert_eq!(short.max_timestamp_ms, NOW + HOUR);
    assert_eq!(short.expiry_timestamp_ms, NOW + HOUR);
    let (long, _) = created(
        &mut image,
        &create("User:a", "User:a", &[], 30 * 24 * HOUR),
        NOW,
    );
    assert_eq!(long.max_timestamp_ms, NOW + 7 * 24 * HOUR);
    assert_ne!(short.token_id, long.token_id);
    assert_eq!(image.delegation_tokens.tokens.len(), 3);
}

#[test]
fn create_refuses_without_a_secret_and_non_user_renewers() {
    let (records, out) = create_token(
        &TokenSettings::default(),
        NOW,
        &create("User:a", "User:a", &[], 0),
    );
    assert!(records.is_empty());
    assert_eq!(out.error, ErrorCode::DELEGATION_TOKEN_AUTH_DISABLED);
    let (records, out) = create_token(
        &settings(),
        NOW,
        &create("User:a", "User:a", &["Group:g"], 0),
    );
    assert!(records.is_empty());
    assert_eq!(out.error, ErrorCode::INVALID_PRINCIPAL_TYPE);
    assert!(out.token.is_none());
}

#[test]
fn renew_extends_for_owner_and_renewers_within_the_max_lifetime() {
    let mut image = MetadataImage::default();
    let (token, hmac) = created(
        &mut image,
        &create("User:owner", "User:admin", &["User:renewer"], 36 * HOUR),
        NOW,
    );
    let tokens = |image: &MetadataImage| image.delegation_tokens.clone();
    // The requester who is neither owner nor renewer may not renew.
    let (r, (code, _)) = renew_token(&tokens(&image), &settings(), NOW, "User:admin", &hmac, 0);
    assert!(r.is_empty());
    assert_eq!(code, ErrorCode::DELEGATION_TOKEN_OWNER_MISMATCH);
    let (_, (code, _)) = renew_token(&tokens(&image), &settings(), NOW, "User:owner", b"nope", 0);
    assert_eq!(code, ErrorCode::DELEGATION_TOKEN_NOT_FOUND);
    let (_, (code, _)) = renew_token(
        &tokens(&image),
        &TokenSettings::default(),
        NOW,
        "User:owner",
        &hmac,
        0,
    );
    assert_eq!(code, ErrorCode::DELEGATION_TOKEN_AUTH_DISABLED);

    // A renewer asks for 1 h: the expiry becomes now + 1 h.
    let later = NOW + 10 * HOUR;
    let (r, (code, expiry)) = renew_token(
        &tokens(&image),
        &settings(),
        later,
        "User:renewer",
        &hmac,
        HOUR,
    );
    assert_eq!((code, expiry), (ErrorCode::NONE, later + HOUR));
    image.apply(&r[0]);
    let renewed = image.delegation_tokens.get(&token.token_id).unwrap();
    assert_eq!(renewed.expiry_timestamp_ms, later + HOUR);
    assert_eq!(renewed.max_timestamp_ms, token.max_timestamp_ms);
    assert_eq!(renewed.issue_timestamp_ms, NOW);

    // The owner asks for the default (24 h); later again, capped at the max lifetime (36 h
    // after issue).
    let (r, (code, expiry)) = renew_token(
        &tokens(&image),
        &settings(),
        later + HOUR / 2,
        "User:owner",
        &hmac,
        -1,
    );
    assert_eq!(
        (code, expiry),
        (ErrorCode::NONE, later + HOUR / 2 + 24 * HOUR)
    );
    image.apply(&r[0]);
    let (r, (code, expiry)) = renew_token(
        &tokens(&image),
        &settings(),
        NOW + 20 * HOUR,
        "User:owner",
        &hmac,
        -1,
    );
    assert_eq!((code, expiry), (ErrorCode::NONE, NOW + 36 * HOUR));
    image.apply(&r[0]);

    // Past its expiry: DELEGATION_TOKEN_EXPIRED.
    let (_, (code, _)) = renew_token(
        &tokens(&image),
        &settings(),
        NOW + 36 * HOUR + 1,
        "User:owner",
        &hmac,
        0,
    );
    assert_eq!(code, ErrorCode::DELEGATION_TOKEN_EXPIRED);
}

#[test]
fn expire_shortens_or_removes_and_the_sweep_removes_expired_tokens() {
    let mut image = MetadataImage::default();
    let (token, hmac) = created(&mut image, &create("User:owner", "User:owner", &[], 0), NOW);
    let (other, other_hmac) = created(&mut image, &create("User:other", "User:other", &[], 0), NOW);
    let s = settings();
    let (_, (code, _)) = expire_token(&image.delegation_tokens, &s, NOW, "User:x", &hmac, 0);
    assert_eq!(code, ErrorCode::DELEGATION_TOKEN_OWNER_MISMATCH);
    // A period of 0 expires it now (still present until the sweep).
    let (r, (code, expiry)) = expire_token(
        &image.delegation_tokens,
        &s,
        NOW + 5,
        "User:owner",
        &hmac,
        0,
    );
    assert_eq!((code, expiry), (ErrorCode::NONE, NOW + 5));
    image.apply(&r[0]);
    assert_eq!(
        image
            .delegation_tokens
            .get(&token.token_id)
            .unwrap()
            .expiry_timestamp_ms,
        NOW + 5
    );
    let (_, (code, _)) = expire_token(
        &image.delegation_tokens,
        &s,
        NOW + 6,
        "User:owner",
        &hmac,
        10,
    );
    assert_eq!(code, ErrorCode::DELEGATION_TOKEN_EXPIRED);
    let (_, (code, _)) = renew_token(
        &image.delegation_tokens,
        &s,
        NOW + 6,
        "User:owner",
        &hmac,
        10,
    );
    assert_eq!(code, ErrorCode::DELEGATION_TOKEN_EXPIRED);

    // The sweep removes exactly the expired one.
    let swept = sweep_expired_tokens(&image.delegation_tokens, NOW + 6);
    assert_eq!(
        swept,
        vec![MetadataRecord::RemoveDelegationToken {
            token_id: token.token_id.clone()
        }]
    );
    for r in &swept {
        image.apply(r);
    }
    assert!(image.delegation_tokens.get(&token.token_id).is_none());
    assert!(sweep_expired_tokens(&image.delegation_tokens, NOW + 6).is_empty());

    // A negative period removes at once.
    let (r, (code, expiry)) = expire_token(
        &image.delegation_tokens,
        &s,
        NOW + 7,
        "User:other",
        &other_hmac,
        -1,
    );
    assert_eq!((code, expiry), (ErrorCode::NONE, NOW + 7));
    image.apply(&r[0]);
    assert!(image.delegation_tokens.get(&other.token_id).is_none());
    let (_, (code, _)) = expire_token(
        &image.delegation_tokens,
        &s,
        NOW + 8,
        "User:other",
        &other_hmac,
        -1,
    );
    assert_eq!(code, ErrorCode::DELEGATION_TOKEN_NOT_FOUND);
}

#[test]
fn describe_filters_by_owner_and_permission() {
    let mut image = MetadataImage::default();
    let (a, _) = created(
        &mut image,
        &create("User:alice", "User:alice", &["User:carol"], 0),
        NOW,
    );
    let (b, _) = created(&mut image, &create("User:bob", "User:admin", &[], 0), NOW);
    let tokens = &image.delegation_tokens;
    let ids = |v: Vec<&TokenInformation>| {
        let mut ids: Vec<String> = v.iter().map(|t| t.token_id.clone()).collect();
        ids.sort();
        ids
    };
    let none = |_: &str, _: &str| false;
    assert_eq!(
        ids(describe_tokens(tokens, "User:alice", None, &none)),
        vec![a.token_id.clone()]
    );
    // A renewer and a requester see the token too.
    assert_eq!(
        ids(describe_tokens(tokens, "User:carol", None, &none)),
        vec![a.token_id.clone()]
    );
    assert_eq!(
        ids(describe_tokens(tokens, "User:admin", None, &none)),
        vec![b.token_id.clone()]
    );
    assert!(describe_tokens(tokens, "User:eve", None, &none).is_empty());
    // DESCRIBE_TOKENS on bob shows bob's tokens.
    let on_bob = |_: &str, owner: &str| owner == "User:bob";
    assert_eq!(
        ids(describe_tokens(tokens, "User:eve", None, &on_bob)),
        vec![b.token_id.clone()]
    );
    // An owner filter keeps only tokens that principal owns, requested or renews.
    let all = |_: &str, _: &str| true;
    let owners = vec!["User:carol".to_string()];
    assert_eq!(
        ids(describe_tokens(tokens, "User:eve", Some(&owners), &all)),
        vec![a.token_id.clone()]
    );
}

#[test]
fn tokens_replay_from_the_log_and_survive_a_snapshot() {
    let mut image = MetadataImage::default();
    let (a, hmac) = created(&mut image, &create("User:alice", "User:alice", &[], 0), NOW);
    let (b, _) = created(&mut image, &create("User:bob", "User:bob", &[], 0), NOW);
    let (renewal, _) = renew_token(
        &image.delegation_tokens,
        &settings(),
        NOW + 1,
        "User:alice",
        &hmac,
        HOUR,
    );
    let log = vec![
        MetadataRecord::DelegationToken { token: a.clone() },
        MetadataRecord::DelegationToken { token: b.clone() },
        renewal[0].clone(),
        MetadataRecord::RemoveDelegationToken {
            token_id: b.token_id.clone(),
        },
    ];
    // Replaying the records (as a restarted node does) gives one token with the renewal.
    let mut replayed = MetadataImage::default();
    for r in &log {
        let json = serde_json::to_vec(r).unwrap();
        replayed.apply(&serde_json::from_slice(&json).unwrap());
    }
    assert_eq!(replayed.delegation_tokens.tokens.len(), 1);
    let t = replayed.delegation_tokens.get(&a.token_id).unwrap();
    assert_eq!(t.expiry_timestamp_ms, NOW + 1 + HOUR);
    assert_eq!(t.owner, "User:alice");
    // The HMAC is not stored: it is derived again from the secret.
    assert!(!serde_json::to_string(&replayed).unwrap().contains("hmac"));
    assert_eq!(
        replayed
            .delegation_tokens
            .by_hmac(&settings(), &hmac)
            .map(|t| &t.token_id),
        Some(&a.token_id)
    );
    // A snapshot keeps them; a snapshot from before tokens reads as none.
    let snapshot: MetadataImage =
        serde_json::from_slice(&serde_json::to_vec(&replayed).unwrap()).unwrap();
    assert_eq!(snapshot.delegation_tokens, replayed.delegation_tokens);
    let mut old = serde_json::to_value(MetadataImage::default()).unwrap();
    old.as_object_mut().unwrap().remove("delegation_tokens");
    let old: MetadataImage = serde_json::from_value(old).unwrap();
    assert!(old.delegation_tokens.tokens.is_empty());
}

#[test]
fn the_token_scram_credential_takes_the_base64_hmac_as_password() {
    let hmac = token_hmac("secret-key", "tok-1");
    let c = token_scram_credential(ScramMechanism::Sha256, &hmac);
    assert_eq!(c.iterations, MIN_ITERATIONS);
    let password = B64.encode(&hmac);
    let salted = ScramMechanism::Sha256.salted_password(password.as_bytes(), &c.salt, c.iterations);
    assert_eq!(
        c,
        ScramCredential::from_salted_password(
            ScramMechanism::Sha256,
            &c.salt,
            &salted,
            c.iterations
        )
    );
}

#[test]
fn config_reads_the_secret_or_the_deprecated_master_key() {
    use crate::config::BrokerConfig;
    let props = |kv: &[(&str, &str)]| {
        kv.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect::<std::collections::BTreeMap<_, _>>()
    };
    let (c, _) = BrokerConfig::from_props(&props(&[])).unwrap();
    assert_eq!(c.delegation_tokens, TokenSettings::default());
    assert!(!c.delegation_tokens.enabled());
    let (c, _) = BrokerConfig::from_props(&props(&[
        ("delegation.token.master.key", "old"),
        ("delegation.token.max.lifetime.ms", "1000"),
        ("delegation.token.expiry.time.ms", "500"),
        ("delegation.token.expiry.check.interval.ms", "100"),
    ]))
    .unwrap();
    assert_eq!(c.delegation_tokens.secret(), Some("old"));
    assert_eq!(c.delegation_tokens.max_lifetime_ms, 1000);
    assert_eq!(c.delegation_tokens.expiry_time_ms, 500);
    assert_eq!(c.delegation_tokens.expiry_check_interval_ms, 100);
    assert!(!format!("{:?}", c.delegation_tokens).contains("old"));
    let (c, _) = BrokerConfig::from_props(&props(&[
        ("delegation.token.master.key", "old"),
        ("delegation.token.secret.key", "new"),
    ]))
    .unwrap();
    assert_eq!(c.delegation_tokens.secret(), Some("new"));
    assert!(
        BrokerConfig::from_props(&props(&[("delegation.token.max.lifetime.ms", "0")])).is_err()
    );
}
