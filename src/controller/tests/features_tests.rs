//! The controller's UpdateFeatures decisions and the replay of `FeatureLevel` records. The
//! expected messages are the ones Kafka 4.1's `FeatureControlManager` returns for the same
//! updates (run against the kafka-metadata 4.1.2 jar with Strata's supported ranges).
use std::collections::BTreeMap;

use super::*;
use crate::controller::records::BrokerEndpoint;

/// An image bootstrapped at Strata's defaults, with broker 1 registered supporting `ranges`.
fn image_with_broker(ranges: Vec<(String, i16, i16)>) -> MetadataImage {
    let mut image = MetadataImage::default();
    for (offset, r) in bootstrap_records(&bootstrap_levels(None, &[]).unwrap())
        .iter()
        .enumerate()
    {
        image.apply_at(offset as u64 + 1, r);
    }
    image.apply(&MetadataRecord::RegisterBroker {
        broker_id: 1,
        broker_epoch: 1,
        incarnation_id: "i".into(),
        endpoints: vec![BrokerEndpoint {
            name: "PLAINTEXT".into(),
            host: "h".into(),
            port: 9092,
            security_protocol: 0,
        }],
        rack: None,
        fenced: false,
        log_dirs: vec![],
        features: ranges,
    });
    image
}

fn image() -> MetadataImage {
    image_with_broker(broker_features())
}

fn update(
    image: &MetadataImage,
    feature: &str,
    level: i16,
    ty: i8,
) -> Result<Vec<MetadataRecord>, String> {
    update_features(
        image,
        1,
        &[FeatureUpdate {
            feature: feature.into(),
            max_version_level: level,
            upgrade_type: ty,
        }],
        false,
    )
}

fn refusal(feature: &str, level: i16, ty: i8) -> String {
    update(&image(), feature, level, ty).expect_err("refused")
}

#[test]
fn a_new_cluster_starts_at_the_levels_strata_implements() {
    let image = image();
    let levels: Vec<(&str, i16)> = image
        .features
        .levels
        .iter()
        .map(|(n, l)| (n.as_str(), *l))
        .collect();
    // Features at 0 are not listed: 0 means disabled.
    assert_eq!(
        levels,
        vec![
            ("group.version", 1),
            ("kraft.version", 1),
            ("metadata.version", 26),
            ("share.version", 1),
            ("transaction.version", 2)
        ]
    );
    // The epoch is the offset of the last feature record (five bootstrap records at 1..=5).
    assert_eq!(image.features.epoch, 5);
    assert!(image.features.consumer_protocol_enabled());
    assert!(image.features.share_groups_enabled());
}

#[test]
fn upgrades_and_safe_downgrades_write_one_record_each_and_replay() {
    let mut image = image();
    let records = update(&image, GROUP_VERSION, 0, SAFE_DOWNGRADE).unwrap();
    assert_eq!(
        records,
        vec![MetadataRecord::FeatureLevel {
            name: GROUP_VERSION.into(),
            level: 0
        }]
    );
    image.apply_at(10, &records[0]);
    assert_eq!(image.features.level(GROUP_VERSION), 0);
    assert!(!image.features.levels.contains_key(GROUP_VERSION));
    assert_eq!(image.features.epoch, 10);
    assert!(!image.features.consumer_protocol_enabled());
    // And back up; an unsafe downgrade of a feature other than metadata.version is allowed.
    let records = update(&image, GROUP_VERSION, 1, UPGRADE).unwrap();
    image.apply_at(11, &records[0]);
    assert_eq!(
        (image.features.level(GROUP_VERSION), image.features.epoch),
        (1, 11)
    );
    assert!(update(&image, GROUP_VERSION, 0, UNSAFE_DOWNGRADE).is_ok());
    // The same level again is accepted and written, as Kafka does.
    assert_eq!(update(&image, GROUP_VERSION, 1, UPGRADE).unwrap().len(), 1);
    assert_eq!(
        update(&image, TRANSACTION_VERSION, 2, UPGRADE)
            .unwrap()
            .len(),
        1
    );
}

#[test]
fn validate_only_checks_and_writes_nothing() {
    let image = image();
    let ok = FeatureUpdate {
        feature: GROUP_VERSION.into(),
        max_version_level: 0,
        upgrade_type: SAFE_DOWNGRADE,
    };
    assert_eq!(
        update_features(&image, 1, std::slice::from_ref(&ok), true),
        Ok(vec![])
    );
    let bad = FeatureUpdate {
        feature: TRANSACTION_VERSION.into(),
        max_version_level: 3,
        upgrade_type: UPGRADE,
    };
    // One refused update fails them all, validate-only or not.
    assert!(update_features(&image, 1, &[ok.clone(), bad.clone()], true).is_err());
    assert_eq!(
        update_features(&image, 1, &[ok, bad], false),
        Err(
            "Invalid update version 3 for feature transaction.version. Local controller 1 \
             only supports versions 0-2"
                .into()
        )
    );
}

#[test]
fn refusals_carry_kafkas_messages() {
    assert_eq!(
        refusal(GROUP_VERSION, 0, UPGRADE),
        "Invalid update version 0 for feature group.version. Can't downgrade the version of \
         this feature without setting the upgrade type to either safe or unsafe downgrade."
    );
    assert_eq!(
        refusal(GROUP_VERSION, 2, UPGRADE),
        "Invalid update version 2 for feature group.version. Local controller 1 only supports \
         versions 0-1"
    );
    assert_eq!(
        refusal(GROUP_VERSION, -1, SAFE_DOWNGRADE),
        "Invalid update version -1 for feature group.version. A feature version cannot be less \
         than 0."
    );
    assert_eq!(
        refusal(GROUP_VERSION, 0, 0),
        "Invalid update version 0 for feature group.version. The controller does not support \
         the given upgrade type."
    );
    assert_eq!(
        refusal(STREAMS_VERSION, 1, UPGRADE),
        "Invalid update version 1 for feature streams.version. Local controller 1 does not \
         support this feature."
    );
    assert_eq!(
        refusal("foo.bar", 1, UPGRADE),
        "Invalid update version 1 for feature foo.bar. Local controller 1 does not support this \
         feature."
    );
    assert_eq!(
        refusal("foo.bar", 0, SAFE_DOWNGRADE),
        "Invalid update version 0 for feature foo.bar. Feature foo.bar not found."
    );
    assert_eq!(
        refusal(KRAFT_VERSION, 0, SAFE_DOWNGRADE),
        "Invalid update version 0 for feature kraft.version. Local controller 1 only supports \
         versions 1-1"
    );
    assert_eq!(
        refusal(METADATA_VERSION, 27, UPGRADE),
        "Invalid update version 27 for feature metadata.version. Local controller 1 only \
         supports versions 17-26"
    );
    assert_eq!(
        refusal(METADATA_VERSION, 24, UPGRADE),
        "Invalid update version 24 for feature metadata.version. Can't downgrade the version \
         of this feature without setting the upgrade type to either safe or unsafe downgrade."
    );
}

#[test]
fn metadata_version_downgrades_stop_where_the_metadata_changed() {
    let mut image = image();
    // 26 -> 24 and 26 -> 23 cross no level that changed the metadata (23 itself did, but a
    // downgrade to it keeps what it introduced).
    assert!(update(&image, METADATA_VERSION, 24, SAFE_DOWNGRADE).is_ok());
    assert!(update(&image, METADATA_VERSION, 23, UNSAFE_DOWNGRADE).is_ok());
    assert_eq!(
        refusal(METADATA_VERSION, 22, SAFE_DOWNGRADE),
        "Invalid metadata.version 22. Refusing to perform the requested downgrade because it \
         might delete metadata information."
    );
    assert_eq!(
        refusal(METADATA_VERSION, 22, UNSAFE_DOWNGRADE),
        "Invalid metadata.version 22. Unsafe metadata downgrade is not supported in this \
         version."
    );
    // Below what Strata's records need: not supported at all.
    assert_eq!(
        refusal(METADATA_VERSION, 16, SAFE_DOWNGRADE),
        "Invalid update version 16 for feature metadata.version. Local controller 1 only \
         supports versions 17-26"
    );
    let records = update(&image, METADATA_VERSION, 24, SAFE_DOWNGRADE).unwrap();
    image.apply_at(20, &records[0]);
    assert_eq!(image.features.metadata_version(), Some(24));
    // Back up to the latest.
    assert!(update(&image, METADATA_VERSION, 26, UPGRADE).is_ok());
    assert_eq!(
        update(&image, METADATA_VERSION, 26, SAFE_DOWNGRADE).unwrap_err(),
        "Invalid update version 26 for feature metadata.version. Can't downgrade to a newer \
         version."
    );
}

#[test]
fn every_registered_broker_must_support_the_new_level() {
    // Broker 1 registered supporting group.version only up to 0.
    let mut ranges = broker_features();
    ranges.retain(|(n, ..)| n != GROUP_VERSION);
    let image = image_with_broker(ranges);
    let mut lowered = image.clone();
    lowered.apply(&MetadataRecord::FeatureLevel {
        name: GROUP_VERSION.into(),
        level: 0,
    });
    assert_eq!(
        update(&lowered, GROUP_VERSION, 1, UPGRADE).unwrap_err(),
        "Invalid update version 1 for feature group.version. Broker 1 does not support this \
         feature."
    );
}

#[test]
fn registration_needs_the_finalized_levels_supported() {
    let finalized = image().features;
    let ours: BTreeMap<String, (i16, i16)> = broker_features()
        .into_iter()
        .map(|(n, a, b)| (n, (a, b)))
        .collect();
    assert_eq!(registration_refusal(&finalized, &ours), None);
    // No metadata.version range: Kafka assumes level 1 only.
    let mut old = ours.clone();
    old.remove(METADATA_VERSION);
    assert_eq!(
        registration_refusal(&finalized, &old).as_deref(),
        Some(
            "Unable to register because the broker does not support finalized version 26 of \
             metadata.version. The broker wants a version between 1 and 1, inclusive."
        )
    );
    // A finalized feature the broker does not name.
    let mut no_group = ours.clone();
    no_group.remove(GROUP_VERSION);
    assert_eq!(
        registration_refusal(&finalized, &no_group).as_deref(),
        Some(
            "Unable to register because the broker does not support finalized version 1 of \
             group.version. The broker wants a version between 0 and 0, inclusive."
        )
    );
    // Nothing finalized yet (a log before its bootstrap): anyone may register.
    assert_eq!(
        registration_refusal(&FinalizedFeatures::default(), &old),
        None
    );
}

#[test]
fn format_levels_follow_the_release_version_within_what_strata_supports() {
    let levels = |r: Option<&str>, f: &[&str]| {
        let f: Vec<String> = f.iter().map(|s| s.to_string()).collect();
        bootstrap_levels(r, &f).map(|m| m.into_iter().collect::<Vec<_>>())
    };
    let at = |mv: i16, group: i16, transaction: i16, share: i16| {
        let mut v = vec![
            (ELIGIBLE_LEADER_REPLICAS_VERSION.to_string(), 0),
            (GROUP_VERSION.to_string(), group),
            (KRAFT_VERSION.to_string(), 1),
            (METADATA_VERSION.to_string(), mv),
            (SHARE_VERSION.to_string(), share),
            (STREAMS_VERSION.to_string(), 0),
            (TRANSACTION_VERSION.to_string(), transaction),
        ];
        v.sort();
        Ok(v)
    };
    assert_eq!(levels(None, &[]), at(26, 1, 2, 1));
    // `3.9` is 3.9-IV0; group.version starts at 1 from 4.0-IV0 on, transaction.version at 2
    // from 4.0-IV2.
    assert_eq!(levels(Some("3.9"), &[]), at(21, 0, 0, 0));
    assert_eq!(levels(Some("3.7"), &[]), at(19, 0, 0, 0));
    assert_eq!(levels(Some("4.0-IV3"), &[]), at(25, 1, 2, 0));
    assert_eq!(levels(Some("4.0.1"), &[]), at(25, 1, 2, 0));
    assert_eq!(levels(None, &["group.version=0"]), at(26, 0, 2, 1));
    assert_eq!(levels(None, &["metadata.version=20"]), at(20, 0, 0, 1));
    assert_eq!(levels(None, &["transaction.version=1"]), at(26, 1, 1, 1));
    assert!(levels(Some("4.1"), &[])
        .unwrap_err()
        .starts_with("metadata.version 4.1-IV1 is not supported by Strata"));
    assert!(levels(Some("3.6"), &[]).is_err());
    assert!(levels(Some("9.9"), &[])
        .unwrap_err()
        .starts_with("Unknown metadata.version '9.9'"));
    assert_eq!(
        levels(Some("3.9"), &["metadata.version=21"]).unwrap_err(),
        "Use --release-version instead of --feature metadata.version=X to avoid ambiguity."
    );
    assert!(levels(None, &["transaction.version=3"]).is_err());
    assert!(levels(None, &["kraft.version=0"]).is_err());
    assert!(levels(None, &["nope=1"])
        .unwrap_err()
        .starts_with("Unsupported feature: nope."));
    let text = levels_to_text(&bootstrap_levels(None, &[]).unwrap());
    assert_eq!(
        levels_from_text(&text).unwrap(),
        bootstrap_levels(None, &[]).unwrap()
    );
}

#[test]
fn the_finalized_levels_survive_a_snapshot() {
    let image = image();
    let json = serde_json::to_string(&image).unwrap();
    let back: MetadataImage = serde_json::from_str(&json).unwrap();
    assert_eq!(back.features, image.features);
    assert_eq!(
        back.brokers[&1].supported_features,
        image.brokers[&1].supported_features
    );
    // An image written before feature versioning reads as "not bootstrapped".
    let old: MetadataImage = serde_json::from_str(
        &serde_json::to_string(&MetadataImage::default())
            .unwrap()
            .replace(",\"features\":{\"levels\":{},\"epoch\":-1}", ""),
    )
    .unwrap();
    assert_eq!(old.features, FinalizedFeatures::default());
}
