//! Feature versioning as KRaft has it (KIP-584, KIP-778, KIP-1022; Kafka's
//! `FeatureControlManager`, `QuorumFeatures` and `BrokerFeatures`): the levels this node
//! supports, the levels the cluster has finalized (`FeatureLevel` records replayed into the
//! image), the controller's UpdateFeatures decision and the levels a new cluster starts at.
//!
//! What Strata supports, and why (never a level whose behaviour is missing):
//! - `metadata.version` 17..=26 (3.7-IV2 ..= 4.1-IV0). Every behaviour Kafka gates at or below
//!   3.7-IV2 is Strata's only behaviour: SCRAM in the metadata log (3.5-IV2), no leader-epoch
//!   bump on ISR shrink (3.6-IV0), DescribeCluster answered by controllers (KIP-919, 3.7-IV0),
//!   replicas placed in log dirs (KIP-858, 3.7-IV2); a lower level would promise their absence.
//!   Above it, 4.1-IV0 is the last level whose replication RPCs Strata serves: 4.1-IV1 moves
//!   replica fetchers to Fetch v18 (KIP-1166), which Strata does not answer. Levels 23 (ELR
//!   record fields) and 26 (the ELR feature's bootstrap level) change nothing while
//!   `eligible.leader.replicas.version` stays 0, which is all Strata supports.
//! - `kraft.version` 1..=1: Strata's quorum always accepts AddRaftVoter / RemoveRaftVoter
//!   (KIP-853), which is level 1; it cannot run the static-only quorum of level 0.
//! - `group.version` 0..=1: KIP-848 consumer groups are served (`coordinator::consumer`);
//!   at 0 ConsumerGroupHeartbeat and ConsumerGroupDescribe answer UNSUPPORTED_VERSION, as Kafka.
//! - `transaction.version` 0..=2: level 1 writes flexible (v1) `__transaction_state` values;
//!   level 2 is what tells Java (4.0+) and franz-go producers to run transactions version 2
//!   (KIP-890 part 2: no AddPartitionsToTxn / AddOffsetsToTxn, Produce v12+ and TxnOffsetCommit
//!   v5 add partitions through the broker, EndTxn v5 bumps the epoch), which the coordinator
//!   serves (`coordinator::txn`). As in Kafka the coordinator follows each request's version,
//!   so producers of the classic protocol (librdkafka, kafkajs) keep working at any level.
//! - `share.version` 0..=1: KIP-932 share groups are served at 1 (`coordinator::share`, the
//!   share partitions of `replica::share_partition`); at 0 their APIs answer
//!   UNSUPPORTED_VERSION, as Kafka's `isShareGroupProtocolEnabled`. Kafka starts a cluster at
//!   1 from release 4.2-IV0, a `metadata.version` above Strata's; as share groups do not
//!   depend on it, a new Strata cluster given no release version starts at 1.
use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::image::MetadataImage;
use super::records::MetadataRecord;

pub const METADATA_VERSION: &str = "metadata.version";
pub const KRAFT_VERSION: &str = "kraft.version";
pub const TRANSACTION_VERSION: &str = "transaction.version";
pub const GROUP_VERSION: &str = "group.version";
pub const ELIGIBLE_LEADER_REPLICAS_VERSION: &str = "eligible.leader.replicas.version";
pub const SHARE_VERSION: &str = "share.version";
pub const STREAMS_VERSION: &str = "streams.version";

/// Kafka's `metadata.version` levels from the oldest Kafka 4 accepts (3.3-IV3) on, as
/// (level, name, whether the metadata changed at that level): the last decides which
/// downgrades are safe (`MetadataVersion.didMetadataChange`).
const METADATA_VERSIONS: &[(i16, &str, bool)] = &[
    (7, "3.3-IV3", true),
    (8, "3.4-IV0", true),
    (9, "3.5-IV0", false),
    (10, "3.5-IV1", false),
    (11, "3.5-IV2", true),
    (12, "3.6-IV0", false),
    (13, "3.6-IV1", true),
    (14, "3.6-IV2", true),
    (15, "3.7-IV0", true),
    (16, "3.7-IV1", false),
    (17, "3.7-IV2", true),
    (18, "3.7-IV3", false),
    (19, "3.7-IV4", false),
    (20, "3.8-IV0", false),
    (21, "3.9-IV0", false),
    (22, "4.0-IV0", false),
    (23, "4.0-IV1", true),
    (24, "4.0-IV2", false),
    (25, "4.0-IV3", false),
    (26, "4.1-IV0", false),
    (27, "4.1-IV1", false),
    (28, "4.2-IV0", false),
    (29, "4.2-IV1", false),
    (30, "4.3-IV0", true),
];

/// The lowest `metadata.version` Kafka writes in the log itself (3.3-IV0): no update may go
/// below it (`MetadataVersion.MINIMUM_BOOTSTRAP_VERSION`).
const MINIMUM_BOOTSTRAP_METADATA_VERSION: i16 = 4;

/// The `metadata.version` a new Strata cluster starts at (4.1-IV0).
pub const LATEST_METADATA_VERSION: i16 = 26;

/// What this node supports: (feature, min level, max level). The same software runs on every
/// node, so this is also what each broker registers with and what the controller checks.
pub const SUPPORTED: &[(&str, i16, i16)] = &[
    (METADATA_VERSION, 17, LATEST_METADATA_VERSION),
    (KRAFT_VERSION, 1, 1),
    (GROUP_VERSION, 0, 1),
    (TRANSACTION_VERSION, 0, 2),
    (ELIGIBLE_LEADER_REPLICAS_VERSION, 0, 0),
    (SHARE_VERSION, 0, 1),
    (STREAMS_VERSION, 0, 0),
];

/// Kafka's production features besides `metadata.version` (`Feature.PRODUCTION_FEATURES`),
/// each with the `metadata.version` at which a release version starts it at each level
/// (`FeatureVersion.bootstrapMetadataVersion`), for `--release-version` defaults.
const KNOWN_FEATURES: &[(&str, &[(i16, i16)])] = &[
    (KRAFT_VERSION, &[(1, 21)]),
    (TRANSACTION_VERSION, &[(1, 24), (2, 24)]),
    (GROUP_VERSION, &[(1, 22)]),
    (ELIGIBLE_LEADER_REPLICAS_VERSION, &[(1, 26)]),
    (SHARE_VERSION, &[(1, 28)]),
    (STREAMS_VERSION, &[(1, 29)]),
];

/// UpdateFeatures' `UpgradeType` (KIP-778).
pub const UPGRADE: i8 = 1;
pub const SAFE_DOWNGRADE: i8 = 2;
pub const UNSAFE_DOWNGRADE: i8 = 3;

/// The levels this node supports for `feature`; (0, 0) for one it does not know (Kafka's
/// `QuorumFeatures.DISABLED`).
pub fn supported_range(feature: &str) -> (i16, i16) {
    SUPPORTED
        .iter()
        .find(|(name, ..)| *name == feature)
        .map_or((0, 0), |(_, min, max)| (*min, *max))
}

/// The features this node advertises (ApiVersions `SupportedFeatures`) and registers with
/// (BrokerRegistration `Features`): those it supports above level 0, as Kafka's
/// `BrokerFeatures.defaultSupportedFeatures`.
pub fn advertised() -> impl Iterator<Item = (&'static str, i16, i16)> {
    SUPPORTED.iter().copied().filter(|(_, _, max)| *max > 0)
}

/// [`advertised`] as a broker registers it: (name, min, max).
pub fn broker_features() -> Vec<(String, i16, i16)> {
    advertised()
        .map(|(name, min, max)| (name.to_string(), min, max))
        .collect()
}

/// The name of a `metadata.version` level (`3.7-IV2`), if Kafka has one.
pub fn metadata_version_name(level: i16) -> Option<&'static str> {
    METADATA_VERSIONS
        .iter()
        .find(|(l, ..)| *l == level)
        .map(|(_, n, _)| *n)
}

/// Parses a release version as Kafka's `MetadataVersion.fromVersionString`: `3.7-IV2` names
/// one level, `3.7` (or `3.7.1`) the last level of that release.
pub fn parse_release_version(s: &str) -> Option<i16> {
    if let Some((_, level)) = METADATA_VERSIONS
        .iter()
        .map(|(l, n, _)| (n, *l))
        .find(|(n, _)| **n == s)
    {
        return Some(level);
    }
    let release: Vec<&str> = s.splitn(3, '.').take(2).collect();
    let release = release.join(".");
    METADATA_VERSIONS
        .iter()
        .filter(|(_, n, _)| n.split('-').next() == Some(release.as_str()))
        .map(|(l, ..)| *l)
        .max()
}

/// Whether going from `from` to `to` crosses a level at which the metadata changed
/// (`MetadataVersion.checkIfMetadataChanged`): such a downgrade might lose information.
fn metadata_changed_between(from: i16, to: i16) -> bool {
    let (low, high) = (from.min(to), from.max(to));
    METADATA_VERSIONS
        .iter()
        .any(|(l, _, changed)| *changed && *l > low && *l <= high)
}

/// The finalized features of the cluster, as replayed from `FeatureLevel` records (Kafka's
/// `FeaturesImage`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FinalizedFeatures {
    /// `metadata.version` and every feature finalized above 0 (level 0 means disabled, and a
    /// record setting it removes the entry, as Kafka's replay does).
    pub levels: BTreeMap<String, i16>,
    /// The metadata offset of the last `FeatureLevel` record (ApiVersions'
    /// `FinalizedFeaturesEpoch`, what Kafka's controllers answer); -1 before any.
    pub epoch: i64,
}

impl Default for FinalizedFeatures {
    fn default() -> Self {
        FinalizedFeatures {
            levels: BTreeMap::new(),
            epoch: -1,
        }
    }
}

impl FinalizedFeatures {
    /// The finalized level of `feature`; 0 when not finalized.
    pub fn level(&self, feature: &str) -> i16 {
        self.levels.get(feature).copied().unwrap_or(0)
    }

    /// None until the first `metadata.version` record (a log bootstrapped before features).
    pub fn metadata_version(&self) -> Option<i16> {
        self.levels.get(METADATA_VERSION).copied()
    }

    /// Applies one `FeatureLevel` record. Total: a level this node does not support is
    /// applied all the same (every node must build the same image), with an error logged;
    /// Kafka's controller would stop on it instead.
    pub fn apply(&mut self, name: &str, level: i16) {
        let (min, max) = supported_range(name);
        if level < min || level > max {
            tracing::error!(
                feature = name,
                level,
                "metadata: a finalized feature level this node does not support"
            );
        }
        if name == METADATA_VERSION {
            if level < 1 {
                tracing::warn!(level, "metadata: metadata.version below 1 skipped");
                return;
            }
            self.levels.insert(name.to_string(), level);
        } else if level == 0 {
            self.levels.remove(name);
        } else {
            self.levels.insert(name.to_string(), level);
        }
    }
}

impl FinalizedFeatures {
    /// Whether KIP-848 consumer groups are served: `group.version` 1 or more. A log not yet
    /// given its feature levels (a new cluster's first instants) is served as Strata always
    /// has been.
    pub fn consumer_protocol_enabled(&self) -> bool {
        self.metadata_version().is_none() || self.level(GROUP_VERSION) >= 1
    }

    /// Whether KIP-932 share groups are served: `share.version` 1 or more (a log not yet
    /// given its feature levels is served as a new cluster would be).
    pub fn share_groups_enabled(&self) -> bool {
        self.metadata_version().is_none() || self.level(SHARE_VERSION) >= 1
    }
}

/// One entry of an UpdateFeatures request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FeatureUpdate {
    pub feature: String,
    pub max_version_level: i16,
    /// [`UPGRADE`], [`SAFE_DOWNGRADE`] or [`UNSAFE_DOWNGRADE`]; anything else is refused.
    pub upgrade_type: i8,
}

/// Why an update was refused: always INVALID_UPDATE_VERSION in Kafka, with this message.
pub type UpdateRefusal = String;

/// Decides an UpdateFeatures request (Kafka's `FeatureControlManager.updateFeatures`): every
/// update is checked in request order against this controller (`node_id`), every registered
/// broker and the current levels; the first refusal fails the whole request, and nothing is
/// written. Otherwise one `FeatureLevel` record per update (none when `validate_only`).
pub fn update_features(
    image: &MetadataImage,
    node_id: i32,
    updates: &[FeatureUpdate],
    validate_only: bool,
) -> Result<Vec<MetadataRecord>, UpdateRefusal> {
    // A feature named twice: the last one counts, as in Kafka's map of updates.
    let mut merged: Vec<&FeatureUpdate> = Vec::new();
    for u in updates {
        merged.retain(|m| m.feature != u.feature);
        merged.push(u);
    }
    let mut proposed: BTreeMap<String, i16> = image.features.levels.clone();
    for u in &merged {
        proposed.insert(u.feature.clone(), u.max_version_level);
    }
    let mut records = Vec::new();
    for u in merged {
        check_update(image, node_id, u, &proposed)?;
        records.push(MetadataRecord::FeatureLevel {
            name: u.feature.clone(),
            level: u.max_version_level,
        });
    }
    Ok(if validate_only { Vec::new() } else { records })
}

fn invalid(feature: &str, level: i16, why: &str) -> UpdateRefusal {
    format!("Invalid update version {level} for feature {feature}. {why}")
}

/// Why `who` (supporting `range`) cannot take `level` (`QuorumFeatures.reasonNotSupported`).
fn not_supported(level: i16, who: &str, (min, max): (i16, i16)) -> Option<String> {
    if level >= min && level <= max {
        return None;
    }
    Some(if max == 0 {
        format!("{who} does not support this feature.")
    } else {
        format!("{who} only supports versions {min}-{max}")
    })
}

fn check_update(
    image: &MetadataImage,
    node_id: i32,
    u: &FeatureUpdate,
    proposed: &BTreeMap<String, i16>,
) -> Result<(), UpdateRefusal> {
    let (name, level) = (u.feature.as_str(), u.max_version_level);
    if !matches!(u.upgrade_type, UPGRADE | SAFE_DOWNGRADE | UNSAFE_DOWNGRADE) {
        return Err(invalid(
            name,
            level,
            "The controller does not support the given upgrade type.",
        ));
    }
    let current = image.features.level(name);
    if level < 0 {
        return Err(invalid(
            name,
            level,
            "A feature version cannot be less than 0.",
        ));
    }
    // This controller, then every registered broker. Other controllers run the same software
    // and do not register (no KIP-919 controller registration in Strata).
    if let Some(why) = not_supported(
        level,
        &format!("Local controller {node_id}"),
        supported_range(name),
    ) {
        return Err(invalid(name, level, &why));
    }
    for b in image.brokers.values() {
        let range = b.supported_features.get(name).copied().unwrap_or((0, 0));
        if let Some(why) = not_supported(level, &format!("Broker {}", b.broker_id), range) {
            return Err(invalid(name, level, &why));
        }
    }
    if level < current && u.upgrade_type == UPGRADE {
        return Err(invalid(
            name,
            level,
            "Can't downgrade the version of this feature without setting the upgrade type to \
             either safe or unsafe downgrade.",
        ));
    }
    if level > current && u.upgrade_type != UPGRADE {
        return Err(invalid(name, level, "Can't downgrade to a newer version."));
    }
    if name == METADATA_VERSION {
        return check_metadata_version(current, level, u.upgrade_type);
    }
    if name == KRAFT_VERSION && level < current {
        return Err(invalid(
            name,
            level,
            "Can't downgrade the version of this feature.",
        ));
    }
    let Some((_, levels)) = KNOWN_FEATURES.iter().find(|(n, _)| *n == name) else {
        return Err(invalid(name, level, &format!("Feature {name} not found.")));
    };
    if level > 0 && !levels.iter().any(|(l, _)| *l == level) {
        return Err(invalid(
            name,
            level,
            &format!("No feature:{name} with feature level {level}"),
        ));
    }
    // Every level above 0 needs a metadata.version that stores feature levels (3.3-IV0);
    // none of the features Strata supports has further dependencies.
    if level >= 1 && proposed.get(METADATA_VERSION).copied().unwrap_or(0) < 4 {
        return Err(invalid(
            name,
            level,
            &format!(
                "{name} could not be set to {level} because it depends on metadata.version=4 \
                 (3.3-IV0)"
            ),
        ));
    }
    Ok(())
}

/// Kafka's extra checks on `metadata.version` (`updateMetadataVersion`): only downgrades that
/// cross no level at which the metadata changed are allowed, and unsafe ones never are.
fn check_metadata_version(current: i16, level: i16, upgrade_type: i8) -> Result<(), UpdateRefusal> {
    let invalid_mv = |why: &str| format!("Invalid metadata.version {level}. {why}");
    if metadata_version_name(level).is_none() {
        return Err(invalid_mv("Unknown metadata.version."));
    }
    if level < MINIMUM_BOOTSTRAP_METADATA_VERSION {
        return Err(invalid_mv(
            "Unable to set a metadata.version less than 3.3-IV0",
        ));
    }
    if level < current && metadata_changed_between(current, level) {
        return Err(invalid_mv(if upgrade_type == UNSAFE_DOWNGRADE {
            "Unsafe metadata downgrade is not supported in this version."
        } else {
            "Refusing to perform the requested downgrade because it might delete metadata \
             information."
        }));
    }
    Ok(())
}

/// Why a broker supporting `supported` may not register under `finalized` (Kafka's
/// `ClusterControlManager.processRegistrationFeature`): every feature it names must cover the
/// finalized level (a missing `metadata.version` counts as supporting only level 1), and a
/// feature finalized above 0 that it does not name is not supported.
pub fn registration_refusal(
    finalized: &FinalizedFeatures,
    supported: &BTreeMap<String, (i16, i16)>,
) -> Option<String> {
    // A log not yet given its levels (its first instants, or a test's bare image) finalizes
    // nothing to check against.
    finalized.metadata_version()?;
    let mut ranges = supported.clone();
    ranges.entry(METADATA_VERSION.to_string()).or_insert((1, 1));
    for (name, (min, max)) in &ranges {
        let default = if name == METADATA_VERSION { 1 } else { 0 };
        let level = finalized.levels.get(name).copied().unwrap_or(default);
        if level < *min || level > *max {
            return Some(refusal_text(name, level, *min, *max));
        }
    }
    finalized
        .levels
        .iter()
        .find(|(name, level)| **level != 0 && !ranges.contains_key(*name))
        .map(|(name, level)| refusal_text(name, *level, 0, 0))
}

fn refusal_text(name: &str, level: i16, min: i16, max: i16) -> String {
    format!(
        "Unable to register because the broker does not support finalized version {level} of \
         {name}. The broker wants a version between {min} and {max}, inclusive."
    )
}

/// The levels a new cluster starts at (`strata storage format`, or a log first led without
/// any): `metadata.version` from `release_version` (default [`LATEST_METADATA_VERSION`]), and
/// each other feature at the level Kafka starts that release at, kept within what Strata
/// supports, unless `overrides` (`--feature name=level`) names it. Errors are the format
/// tool's.
pub fn bootstrap_levels(
    release_version: Option<&str>,
    overrides: &[String],
) -> Result<BTreeMap<String, i16>, String> {
    let mut given: BTreeMap<String, i16> = BTreeMap::new();
    for arg in overrides {
        let (name, level) = arg.split_once('=').ok_or_else(|| {
            format!("Can't parse feature=level string {arg}: equals sign not found.")
        })?;
        let (name, level) = (name.trim(), level.trim());
        let level: i16 = level.parse().map_err(|_| {
            format!("Can't parse feature=level string {arg}: unable to parse {level} as a short.")
        })?;
        if name != METADATA_VERSION && !KNOWN_FEATURES.iter().any(|(n, _)| *n == name) {
            let known: Vec<&str> = KNOWN_FEATURES.iter().map(|(n, _)| *n).collect();
            return Err(format!(
                "Unsupported feature: {name}. Supported features are: {}",
                known.join(", ")
            ));
        }
        given.insert(name.to_string(), level);
    }
    let metadata_version = match (given.get(METADATA_VERSION), release_version) {
        (Some(_), Some(_)) => {
            return Err(format!(
                "Use --release-version instead of --feature {METADATA_VERSION}=X to avoid \
                 ambiguity."
            ))
        }
        (Some(level), None) => *level,
        (None, Some(r)) => parse_release_version(r).ok_or_else(|| {
            format!(
                "Unknown metadata.version '{r}'. Supported metadata.version are: {}",
                supported_metadata_versions()
            )
        })?,
        (None, None) => LATEST_METADATA_VERSION,
    };
    let (min, max) = supported_range(METADATA_VERSION);
    if metadata_version < min || metadata_version > max {
        return Err(format!(
            "{METADATA_VERSION} {} is not supported by Strata. Supported metadata.version are: {}",
            metadata_version_name(metadata_version)
                .map_or_else(|| metadata_version.to_string(), str::to_string),
            supported_metadata_versions()
        ));
    }
    let mut levels = BTreeMap::new();
    levels.insert(METADATA_VERSION.to_string(), metadata_version);
    for (name, bootstrap) in KNOWN_FEATURES {
        let (min, max) = supported_range(name);
        let level = match given.get(*name) {
            Some(level) => {
                if *level < min || *level > max {
                    return Err(format!(
                        "{name} level {level} is not supported by Strata (it supports {min} to \
                         {max})"
                    ));
                }
                *level
            }
            None if *name == SHARE_VERSION && release_version.is_none() => max,
            None => bootstrap
                .iter()
                .filter(|(_, mv)| *mv <= metadata_version)
                .map(|(l, _)| *l)
                .max()
                .unwrap_or(0)
                .clamp(min, max),
        };
        levels.insert(name.to_string(), level);
    }
    Ok(levels)
}

/// `3.7-IV2, 3.7-IV3, ...`: the levels Strata supports by name.
fn supported_metadata_versions() -> String {
    let (min, max) = supported_range(METADATA_VERSION);
    METADATA_VERSIONS
        .iter()
        .filter(|(l, ..)| *l >= min && *l <= max)
        .map(|(_, n, _)| *n)
        .collect::<Vec<_>>()
        .join(", ")
}

/// The records that start a metadata log at `levels` (features at 0 need none).
pub fn bootstrap_records(levels: &BTreeMap<String, i16>) -> Vec<MetadataRecord> {
    let mut records: Vec<MetadataRecord> = Vec::new();
    // metadata.version first, as Kafka's bootstrap metadata.
    for (name, level) in levels {
        if name == METADATA_VERSION || *level > 0 {
            records.push(MetadataRecord::FeatureLevel {
                name: name.clone(),
                level: *level,
            });
        }
    }
    records.sort_by_key(
        |r| !matches!(r, MetadataRecord::FeatureLevel { name, .. } if name == METADATA_VERSION),
    );
    records
}

/// The text of the `bootstrap.features` file `strata storage format` writes (`name=level`
/// per line) and its parse.
pub fn levels_to_text(levels: &BTreeMap<String, i16>) -> String {
    levels.iter().map(|(n, l)| format!("{n}={l}\n")).collect()
}

pub fn levels_from_text(text: &str) -> Result<BTreeMap<String, i16>, String> {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(|l| {
            let (n, v) = l.split_once('=').ok_or_else(|| format!("bad line {l:?}"))?;
            let v: i16 = v.parse().map_err(|_| format!("bad level in {l:?}"))?;
            Ok((n.to_string(), v))
        })
        .collect()
}

#[cfg(test)]
#[path = "tests/features_tests.rs"]
mod tests;
