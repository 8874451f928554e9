//! Feature versioning over TCP (KIP-584, KIP-778): a new node starts at the levels Strata
//! implements; UpdateFeatures downgrades and upgrades `group.version` (which switches KIP-848
//! consumer groups off and on) and ApiVersions reads the new levels back, with the offset of
//! the change as the epoch; the levels survive a restart; `storage format --release-version`
//! chooses where a cluster starts.
mod common;

use common::{api_call, TestBroker};
use strata::protocol::messages::api_versions_response::ApiVersionsResponse;
use strata::protocol::messages::update_features_request::{
    FeatureUpdateKey, UpdateFeaturesRequest,
};

const UNSUPPORTED_VERSION: i16 = 35;
const INVALID_UPDATE_VERSION: i16 = 95;

async fn api_versions(c: &mut common::Client, version: i16) -> ApiVersionsResponse {
    api_call!(
        c,
        api_versions_request::ApiVersionsRequest,
        api_versions_response::ApiVersionsResponse,
        version,
        api_versions_request::ApiVersionsRequest {
            client_software_name: "strata-test".into(),
            client_software_version: "1.0".into(),
            ..Default::default()
        }
    )
}

/// (name, min, max) of SupportedFeatures and (name, level) of FinalizedFeatures, sorted.
type Features = (Vec<(String, i16, i16)>, Vec<(String, i16)>);

fn features(r: &ApiVersionsResponse) -> Features {
    let mut supported: Vec<_> = r
        .supported_features
        .iter()
        .map(|f| (f.name.clone(), f.min_version, f.max_version))
        .collect();
    supported.sort();
    let mut finalized: Vec<_> = r
        .finalized_features
        .iter()
        .map(|f| {
            assert_eq!(f.min_version_level, f.max_version_level, "{f:?}");
            (f.name.clone(), f.max_version_level)
        })
        .collect();
    finalized.sort();
    (supported, finalized)
}

fn owned(v: &[(&str, i16)]) -> Vec<(String, i16)> {
    v.iter().map(|(n, l)| (n.to_string(), *l)).collect()
}

async fn update(
    c: &mut common::Client,
    version: i16,
    feature: &str,
    level: i16,
    upgrade_type: i8,
    validate_only: bool,
) -> strata::protocol::messages::update_features_response::UpdateFeaturesResponse {
    api_call!(
        c,
        update_features_request::UpdateFeaturesRequest,
        update_features_response::UpdateFeaturesResponse,
        version,
        UpdateFeaturesRequest {
            timeout_ms: 30_000,
            feature_updates: vec![FeatureUpdateKey {
                feature: feature.into(),
                max_version_level: level,
                upgrade_type,
                ..Default::default()
            }],
            validate_only,
            ..Default::default()
        }
    )
}

async fn heartbeat_code(c: &mut common::Client) -> i16 {
    let r = api_call!(
        c,
        consumer_group_heartbeat_request::ConsumerGroupHeartbeatRequest,
        consumer_group_heartbeat_response::ConsumerGroupHeartbeatResponse,
        0,
        consumer_group_heartbeat_request::ConsumerGroupHeartbeatRequest {
            group_id: "kip848".into(),
            member_id: "member-1".into(),
            member_epoch: 0,
            rebalance_timeout_ms: 30_000,
            subscribed_topic_names: Some(vec!["events".into()]),
            topic_partitions: Some(vec![]),
            ..Default::default()
        }
    );
    r.error_code
}

#[tokio::test]
async fn features_are_upgraded_downgraded_and_read_back() {
    let broker = TestBroker::start(&[]).await;
    let mut c = broker.client().await;

    let r = api_versions(&mut c, 4).await;
    let (supported, finalized) = features(&r);
    assert_eq!(
        supported,
        vec![
            ("group.version".to_string(), 0, 1),
            ("kraft.version".to_string(), 1, 1),
            ("metadata.version".to_string(), 17, 26),
            ("share.version".to_string(), 0, 1),
            ("transaction.version".to_string(), 0, 2),
        ]
    );
    assert_eq!(
        finalized,
        owned(&[
            ("group.version", 1),
            ("kraft.version", 1),
            ("metadata.version", 26),
            ("share.version", 1),
            ("transaction.version", 2)
        ])
    );
    let first_epoch = r.finalized_features_epoch;
    assert!(first_epoch > 0, "epoch {first_epoch}");
    assert!(!r.zk_migration_ready);
    // v3 leaves out features whose lowest level is 0 (KAFKA-17492).
    let (supported_v3, finalized_v3) = features(&api_versions(&mut c, 3).await);
    assert_eq!(
        supported_v3,
        vec![
            ("kraft.version".to_string(), 1, 1),
            ("metadata.version".to_string(), 17, 26)
        ]
    );
    assert_eq!(finalized_v3, finalized);

    // validate_only changes nothing.
    let r = update(&mut c, 1, "group.version", 0, 2, true).await;
    assert_eq!(r.error_code, 0, "{r:?}");
    assert_eq!(features(&api_versions(&mut c, 4).await).1, finalized);

    // A safe downgrade of group.version turns KIP-848 off.
    let r = update(&mut c, 1, "group.version", 0, 2, false).await;
    assert_eq!((r.error_code, r.error_message.as_deref()), (0, None));
    assert_eq!(r.results.len(), 1);
    assert_eq!(
        (r.results[0].feature.as_str(), r.results[0].error_code),
        ("group.version", 0)
    );
    let r = api_versions(&mut c, 4).await;
    assert_eq!(
        features(&r).1,
        owned(&[
            ("kraft.version", 1),
            ("metadata.version", 26),
            ("share.version", 1),
            ("transaction.version", 2)
        ])
    );
    let downgraded_epoch = r.finalized_features_epoch;
    assert!(downgraded_epoch > first_epoch);
    assert_eq!(heartbeat_code(&mut c).await, UNSUPPORTED_VERSION);

    // Levels that Strata does not implement, or a downgrade sent as an upgrade, are refused
    // whole, with Kafka's message.
    let r = update(&mut c, 1, "transaction.version", 3, 1, false).await;
    assert_eq!(r.error_code, INVALID_UPDATE_VERSION);
    assert_eq!(
        r.error_message.as_deref(),
        Some(
            "The update failed for all features since the following feature had an error: \
             Invalid update version 3 for feature transaction.version. Local controller 1 only \
             supports versions 0-2"
        )
    );
    assert!(r.results.is_empty());
    let r = update(&mut c, 2, "metadata.version", 21, 2, false).await;
    assert_eq!(r.error_code, INVALID_UPDATE_VERSION);
    assert!(r.error_message.as_deref().unwrap().ends_with(
        "Refusing to perform the requested downgrade because it might delete metadata information."
    ));
    let r = api_versions(&mut c, 4).await;
    assert_eq!(
        r.finalized_features_epoch, downgraded_epoch,
        "nothing written"
    );

    // The levels and the epoch come back from the log after a restart.
    let broker = broker.restart(&[]).await;
    let mut c = broker.client().await;
    let r = api_versions(&mut c, 4).await;
    assert_eq!(
        features(&r).1,
        owned(&[
            ("kraft.version", 1),
            ("metadata.version", 26),
            ("share.version", 1),
            ("transaction.version", 2)
        ])
    );
    assert_eq!(r.finalized_features_epoch, downgraded_epoch);

    // Upgrading (v2: no per-feature results) turns it back on.
    let r = update(&mut c, 2, "group.version", 1, 1, false).await;
    assert_eq!(r.error_code, 0, "{r:?}");
    assert!(r.results.is_empty());
    let r = api_versions(&mut c, 4).await;
    assert_eq!(features(&r).1, finalized);
    assert!(r.finalized_features_epoch > downgraded_epoch);
    assert_ne!(heartbeat_code(&mut c).await, UNSUPPORTED_VERSION);
}

#[tokio::test]
async fn a_formatted_release_version_is_where_the_cluster_starts() {
    let dir = tempfile::tempdir().unwrap();
    let config = common::config_for(dir.path(), &[]);
    strata::cluster::format::format(
        &config,
        &strata::cluster::format::FormatOptions {
            cluster_id: strata::cluster::format::random_uuid(),
            release_version: Some("3.9".into()),
            ..Default::default()
        },
    )
    .expect("format");
    let broker = TestBroker::start_in(dir, &[]).await;
    let mut c = broker.client().await;
    let r = api_versions(&mut c, 4).await;
    // 3.9-IV0 is 21; Kafka starts group.version at 1 only from 4.0-IV0.
    assert_eq!(
        features(&r).1,
        owned(&[("kraft.version", 1), ("metadata.version", 21)])
    );
    assert_eq!(heartbeat_code(&mut c).await, UNSUPPORTED_VERSION);
    // An upgrade to the latest level Strata implements, then to transactions version 2, as
    // `kafka-features upgrade` after a rolling upgrade.
    let r = update(&mut c, 1, "metadata.version", 26, 1, false).await;
    assert_eq!(r.error_code, 0, "{r:?}");
    let r = api_versions(&mut c, 4).await;
    assert_eq!(
        features(&r).1,
        owned(&[("kraft.version", 1), ("metadata.version", 26)])
    );
    let r = update(&mut c, 1, "transaction.version", 2, 1, false).await;
    assert_eq!(r.error_code, 0, "{r:?}");
    let r = api_versions(&mut c, 4).await;
    assert_eq!(
        features(&r).1,
        owned(&[
            ("kraft.version", 1),
            ("metadata.version", 26),
            ("transaction.version", 2)
        ])
    );

    // A release Strata does not implement is refused before anything is written.
    let dir = tempfile::tempdir().unwrap();
    let err = strata::cluster::format::format(
        &common::config_for(dir.path(), &[]),
        &strata::cluster::format::FormatOptions {
            cluster_id: strata::cluster::format::random_uuid(),
            release_version: Some("4.2".into()),
            ..Default::default()
        },
    )
    .unwrap_err();
    assert!(err.contains("4.2-IV1 is not supported"), "{err}");
    assert!(!dir.path().join("meta.properties").exists());
}

#[tokio::test]
async fn update_features_needs_alter_on_the_cluster() {
    use common::authz::*;
    use strata::protocol::acl::{operation as op, pattern_type, resource_type as rt};
    use strata::protocol::messages::update_features_response::UpdateFeaturesResponse;
    let tb = secured_broker().await;
    let b = tb.running.as_ref().unwrap().broker.clone();
    let downgrade = UpdateFeaturesRequest {
        timeout_ms: 30_000,
        feature_updates: vec![FeatureUpdateKey {
            feature: "group.version".into(),
            max_version_level: 0,
            upgrade_type: 2,
            ..Default::default()
        }],
        ..Default::default()
    };
    let r: UpdateFeaturesResponse = call(&b, ALICE, 57, 1, &downgrade).await;
    assert_eq!(r.error_code, CLUSTER_DENIED);
    assert!(r.results.is_empty());
    assert_eq!(
        b.cluster.image().features.level("group.version"),
        1,
        "nothing written"
    );
    grant(
        &b,
        vec![acl(
            rt::CLUSTER,
            "kafka-cluster",
            pattern_type::LITERAL,
            ALICE,
            op::ALTER,
        )],
    )
    .await;
    let r: UpdateFeaturesResponse = call(&b, ALICE, 57, 1, &downgrade).await;
    assert_eq!(r.error_code, 0, "{r:?}");
    assert_eq!(b.cluster.image().features.level("group.version"), 0);
}
