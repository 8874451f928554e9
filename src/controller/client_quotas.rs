//! Client quotas in the metadata log (Kafka's `ClientQuotaRecord`, `ClientQuotaControlManager`
//! and `ClientQuotasImage`, KIP-546): quota values per entity (user, client-id, both, or ip;
//! each a name or the default), altered by AlterClientQuotas on the active controller and read
//! by DescribeClientQuotas and the brokers' quota managers from every node's image.
//!
//! The decisions are sans-io: [`alter_client_quotas`] turns a request into records and a result
//! per entity; [`ClientQuotas::describe`] filters the image as Kafka's `ClientQuotasImage.describe`.
use std::collections::BTreeMap;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::image::MetadataImage;
use super::records::MetadataRecord;
use crate::error::ErrorCode;

pub const ENTITY_USER: &str = "user";
pub const ENTITY_CLIENT_ID: &str = "client-id";
pub const ENTITY_IP: &str = "ip";

pub const PRODUCER_BYTE_RATE: &str = "producer_byte_rate";
pub const CONSUMER_BYTE_RATE: &str = "consumer_byte_rate";
pub const REQUEST_PERCENTAGE: &str = "request_percentage";
pub const CONTROLLER_MUTATION_RATE: &str = "controller_mutation_rate";
pub const CONNECTION_CREATION_RATE: &str = "connection_creation_rate";

/// DescribeClientQuotas match types.
pub const MATCH_TYPE_EXACT: i8 = 0;
pub const MATCH_TYPE_DEFAULT: i8 = 1;
pub const MATCH_TYPE_SPECIFIED: i8 = 2;

/// Whether a quota key holds a whole number (Kafka's LONG/INT quota configs) or a fraction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum KeyType {
    Long,
    Double,
}

/// The keys Kafka's `QuotaConfig` defines for user and client-id entities.
const CLIENT_KEYS: &[(&str, KeyType)] = &[
    (PRODUCER_BYTE_RATE, KeyType::Long),
    (CONSUMER_BYTE_RATE, KeyType::Long),
    (REQUEST_PERCENTAGE, KeyType::Double),
    (CONTROLLER_MUTATION_RATE, KeyType::Double),
];

/// The key Kafka defines for ip entities.
const IP_KEYS: &[(&str, KeyType)] = &[(CONNECTION_CREATION_RATE, KeyType::Long)];

/// A quota entity: entity type to name, `None` being the type's default entity
/// (Kafka's `ClientQuotaEntity`).
#[derive(Debug, Clone, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct QuotaEntity(pub BTreeMap<String, Option<String>>);

impl QuotaEntity {
    pub fn new<'a>(parts: impl IntoIterator<Item = (&'a str, Option<&'a str>)>) -> QuotaEntity {
        QuotaEntity(
            parts
                .into_iter()
                .map(|(t, n)| (t.to_string(), n.map(str::to_string)))
                .collect(),
        )
    }

    /// The user (Some(None): the default user), if the entity has one.
    pub fn get(&self, entity_type: &str) -> Option<Option<&str>> {
        self.0.get(entity_type).map(|n| n.as_deref())
    }
}

/// An entity DescribeClientQuotas found, with its values.
pub type DescribedEntity<'a> = (&'a QuotaEntity, &'a BTreeMap<String, f64>);

/// Every entity's quota values. Values are finite (see [`alter_client_quotas`]), so equality
/// is an equivalence and the image can stay `Eq`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ClientQuotas {
    pub entities: BTreeMap<QuotaEntity, BTreeMap<String, f64>>,
}

impl Eq for ClientQuotas {}

impl Serialize for ClientQuotas {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        // JSON map keys must be strings: the entities go as a list of pairs.
        s.collect_seq(self.entities.iter())
    }
}

impl<'de> Deserialize<'de> for ClientQuotas {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let pairs: Vec<(QuotaEntity, BTreeMap<String, f64>)> = Vec::deserialize(d)?;
        Ok(ClientQuotas {
            entities: pairs.into_iter().collect(),
        })
    }
}

impl ClientQuotas {
    /// Applies one `ClientQuota` record (Kafka's `ClientQuotaControlManager.replay`).
    pub fn apply(&mut self, entity: &QuotaEntity, key: &str, value: Option<f64>) {
        match value {
            Some(v) => {
                self.entities
                    .entry(entity.clone())
                    .or_default()
                    .insert(key.to_string(), v);
            }
            None => {
                if let Some(values) = self.entities.get_mut(entity) {
                    values.remove(key);
                    if values.is_empty() {
                        self.entities.remove(entity);
                    }
                }
            }
        }
    }

    /// The value of `key` set on exactly `entity`.
    pub fn value(&self, entity: &QuotaEntity, key: &str) -> Option<f64> {
        self.entities.get(entity).and_then(|v| v.get(key)).copied()
    }

    pub fn is_empty(&self) -> bool {
        self.entities.is_empty()
    }

    /// Whether any entity sets `key` (a client quota of that type can apply to someone).
    pub fn sets(&self, key: &str) -> bool {
        self.entities.values().any(|v| v.contains_key(key))
    }

    /// DescribeClientQuotas over this image: each filter component is (entity type, match
    /// type, match); entities matching all components, and with `strict` no other type.
    pub fn describe(
        &self,
        components: &[(String, i8, Option<String>)],
        strict: bool,
    ) -> Result<Vec<DescribedEntity<'_>>, (ErrorCode, String)> {
        let invalid = |m: String| (ErrorCode::INVALID_REQUEST, m);
        let mut exact: BTreeMap<&str, Option<&str>> = BTreeMap::new();
        let mut specified: Vec<&str> = Vec::new();
        for (entity_type, match_type, name) in components {
            if entity_type.is_empty() {
                return Err(invalid("Invalid empty entity type.".into()));
            }
            if exact.contains_key(entity_type.as_str()) || specified.contains(&entity_type.as_str())
            {
                return Err(invalid(format!(
                    "Entity type {entity_type} cannot appear more than once in the filter."
                )));
            }
            if ![ENTITY_USER, ENTITY_CLIENT_ID, ENTITY_IP].contains(&entity_type.as_str()) {
                return Err((
                    ErrorCode::UNSUPPORTED_VERSION,
                    format!("Unsupported entity type {entity_type}"),
                ));
            }
            match (*match_type, name) {
                (MATCH_TYPE_EXACT, Some(n)) => {
                    exact.insert(entity_type, Some(n));
                }
                (MATCH_TYPE_EXACT, None) => {
                    return Err(invalid(
                        "Request specified MATCH_TYPE_EXACT, but set match string to null.".into(),
                    ))
                }
                (MATCH_TYPE_DEFAULT, None) => {
                    exact.insert(entity_type, None);
                }
                (MATCH_TYPE_DEFAULT, Some(_)) => {
                    return Err(invalid(
                        "Request specified MATCH_TYPE_DEFAULT, but also specified a match string."
                            .into(),
                    ))
                }
                (MATCH_TYPE_SPECIFIED, None) => specified.push(entity_type),
                (MATCH_TYPE_SPECIFIED, Some(_)) => return Err(invalid(
                    "Request specified MATCH_TYPE_SPECIFIED, but also specified a match string."
                        .into(),
                )),
                (other, _) => {
                    return Err((
                        ErrorCode::UNSUPPORTED_VERSION,
                        format!("Unknown match type {other}"),
                    ))
                }
            }
        }
        let uses = |t: &str| exact.contains_key(t) || specified.contains(&t);
        if uses(ENTITY_IP) && (uses(ENTITY_USER) || uses(ENTITY_CLIENT_ID)) {
            return Err(invalid(
                "Invalid entity filter component combination. IP filter component should not be \
                 used with user or clientId filter component."
                    .into(),
            ));
        }
        Ok(self
            .entities
            .iter()
            .filter(|(entity, _)| {
                (!strict || entity.0.len() == exact.len() + specified.len())
                    && exact
                        .iter()
                        .all(|(t, n)| entity.0.get(*t).is_some_and(|have| have.as_deref() == *n))
                    && specified.iter().all(|t| entity.0.contains_key(*t))
            })
            .collect())
    }
}

/// One entity of an AlterClientQuotas request: its (type, name) components as sent, and its
/// ops (key, `Some(value)` to set, `None` to remove).
#[derive(Debug, Clone, PartialEq)]
pub struct QuotaAlteration {
    pub entity: Vec<(String, Option<String>)>,
    pub ops: Vec<(String, Option<f64>)>,
}

/// Checks an entity's components as Kafka's controller does; the entity on success.
fn validate_entity(components: &[(String, Option<String>)]) -> Result<QuotaEntity, String> {
    if components.is_empty() {
        return Err("Invalid empty client quota entity".into());
    }
    let mut entity = QuotaEntity::default();
    for (entity_type, name) in components {
        if entity.0.contains_key(entity_type) {
            return Err(format!(
                "Invalid empty client quota entity, duplicate entity entry {entity_type}"
            ));
        }
        if ![ENTITY_USER, ENTITY_CLIENT_ID, ENTITY_IP].contains(&entity_type.as_str()) {
            return Err(format!("Unhandled client quota entity type: {entity_type}"));
        }
        if name.as_deref() == Some("") {
            return Err(format!("Empty {entity_type} not supported"));
        }
        entity.0.insert(entity_type.clone(), name.clone());
    }
    Ok(entity)
}

/// The keys an entity of this shape may hold (user and/or client-id, or ip alone).
fn keys_for(entity: &QuotaEntity) -> Result<&'static [(&'static str, KeyType)], String> {
    let has = |t: &str| entity.0.contains_key(t);
    match (has(ENTITY_USER), has(ENTITY_CLIENT_ID), has(ENTITY_IP)) {
        (true, _, false) | (false, true, false) => Ok(CLIENT_KEYS),
        (false, false, true) => {
            let ip = entity.get(ENTITY_IP).flatten();
            match ip {
                Some(ip) if ip.parse::<std::net::IpAddr>().is_err() => {
                    Err(format!("{ip} is not a valid IP or resolvable host."))
                }
                _ => Ok(IP_KEYS),
            }
        }
        _ => Err("Invalid empty client quota entity".into()),
    }
}

fn validate_value(
    keys: &[(&str, KeyType)],
    key: &str,
    value: f64,
) -> Result<(), (ErrorCode, String)> {
    let Some((_, key_type)) = keys.iter().find(|(k, _)| *k == key) else {
        return Err((
            ErrorCode::INVALID_REQUEST,
            format!("Invalid configuration key {key}"),
        ));
    };
    // Kafka stores any double; a NaN or infinite quota cannot be enforced (and would make the
    // image's equality partial), so Strata refuses it.
    if !value.is_finite() {
        return Err((
            ErrorCode::INVALID_REQUEST,
            format!("Configuration {key} must be a finite number"),
        ));
    }
    if *key_type == KeyType::Long {
        let epsilon = 1e-6;
        let whole = (value + epsilon).trunc();
        if (whole - value).abs() > epsilon {
            return Err((
                ErrorCode::INVALID_REQUEST,
                format!("Configuration {key} must be a Long value"),
            ));
        }
    }
    Ok(())
}

/// AlterClientQuotas on the controller (Kafka's `ClientQuotaControlManager.alterClientQuotas`):
/// the records to commit, and per entity (in request order) its error code and message.
/// A failing entity changes nothing; the others are applied (nothing with `validate_only`).
pub fn alter_client_quotas(
    image: &MetadataImage,
    alterations: &[QuotaAlteration],
    validate_only: bool,
) -> (Vec<MetadataRecord>, Vec<(ErrorCode, Option<String>)>) {
    let mut records = Vec::new();
    let mut results = Vec::with_capacity(alterations.len());
    let mut seen: Vec<QuotaEntity> = Vec::new();
    for a in alterations {
        match alter_one(&image.client_quotas, a, &mut seen) {
            Ok(mut r) => {
                if !validate_only {
                    records.append(&mut r);
                }
                results.push((ErrorCode::NONE, None));
            }
            Err((code, message)) => results.push((code, Some(message))),
        }
    }
    (records, results)
}

fn alter_one(
    current: &ClientQuotas,
    a: &QuotaAlteration,
    seen: &mut Vec<QuotaEntity>,
) -> Result<Vec<MetadataRecord>, (ErrorCode, String)> {
    let invalid = |m: String| (ErrorCode::INVALID_REQUEST, m);
    let entity = validate_entity(&a.entity).map_err(invalid)?;
    if seen.contains(&entity) {
        return Err(invalid(format!("Ignoring duplicate entity {:?}", entity.0)));
    }
    seen.push(entity.clone());
    let mut keys_seen = Vec::new();
    for (key, _) in &a.ops {
        if keys_seen.contains(&key) {
            return Err(invalid(format!(
                "Duplicate quota key {key} not updating quota for this entity"
            )));
        }
        keys_seen.push(key);
    }
    let keys = keys_for(&entity).map_err(invalid)?;
    let mut records = Vec::new();
    let record = |key: &str, value: Option<f64>| MetadataRecord::ClientQuota {
        entity: entity.clone(),
        key: key.to_string(),
        value,
    };
    for (key, value) in &a.ops {
        let have = current.value(&entity, key);
        match value {
            None => {
                if have.is_some() {
                    records.push(record(key, None));
                }
            }
            Some(v) => {
                validate_value(keys, key, *v)?;
                if have != Some(*v) {
                    records.push(record(key, Some(*v)));
                }
            }
        }
    }
    Ok(records)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn alteration(entity: &[(&str, Option<&str>)], ops: &[(&str, Option<f64>)]) -> QuotaAlteration {
        QuotaAlteration {
            entity: entity
                .iter()
                .map(|(t, n)| (t.to_string(), n.map(str::to_string)))
                .collect(),
            ops: ops.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
        }
    }

    fn commit(
        image: &mut MetadataImage,
        a: &[QuotaAlteration],
    ) -> Vec<(ErrorCode, Option<String>)> {
        let (records, results) = alter_client_quotas(image, a, false);
        for r in &records {
            image.apply(r);
        }
        results
    }

    #[test]
    fn set_then_remove_builds_the_image() {
        let mut image = MetadataImage::default();
        let alice_app = [
            (ENTITY_USER, Some("alice")),
            (ENTITY_CLIENT_ID, Some("app")),
        ];
        let results = commit(
            &mut image,
            &[alteration(
                &alice_app,
                &[
                    (PRODUCER_BYTE_RATE, Some(1024.0)),
                    (REQUEST_PERCENTAGE, Some(12.5)),
                ],
            )],
        );
        assert_eq!(results, vec![(ErrorCode::NONE, None)]);
        let entity = QuotaEntity::new(alice_app);
        assert_eq!(
            image.client_quotas.value(&entity, PRODUCER_BYTE_RATE),
            Some(1024.0)
        );
        assert_eq!(
            image.client_quotas.value(&entity, REQUEST_PERCENTAGE),
            Some(12.5)
        );

        commit(
            &mut image,
            &[alteration(
                &alice_app,
                &[(PRODUCER_BYTE_RATE, None), (REQUEST_PERCENTAGE, None)],
            )],
        );
        assert!(image.client_quotas.is_empty());
        // Removing what is not there writes nothing.
        let (records, results) = alter_client_quotas(
            &image,
            &[alteration(&alice_app, &[(PRODUCER_BYTE_RATE, None)])],
            false,
        );
        assert!(records.is_empty());
        assert_eq!(results[0].0, ErrorCode::NONE);
    }

    #[test]
    fn validation_follows_kafka() {
        let image = MetadataImage::default();
        let cases: Vec<(QuotaAlteration, &str)> = vec![
            (
                alteration(&[], &[(PRODUCER_BYTE_RATE, Some(1.0))]),
                "Invalid empty client quota entity",
            ),
            (
                alteration(&[("group", Some("g"))], &[(PRODUCER_BYTE_RATE, Some(1.0))]),
                "Unhandled client quota entity type: group",
            ),
            (
                alteration(
                    &[(ENTITY_USER, Some(""))],
                    &[(PRODUCER_BYTE_RATE, Some(1.0))],
                ),
                "Empty user not supported",
            ),
            (
                alteration(
                    &[(ENTITY_USER, Some("a")), (ENTITY_IP, Some("1.2.3.4"))],
                    &[(PRODUCER_BYTE_RATE, Some(1.0))],
                ),
                "Invalid empty client quota entity",
            ),
            (
                alteration(
                    &[(ENTITY_CLIENT_ID, None)],
                    &[("producer_bytes", Some(1.0))],
                ),
                "Invalid configuration key producer_bytes",
            ),
            (
                alteration(
                    &[(ENTITY_CLIENT_ID, None)],
                    &[(PRODUCER_BYTE_RATE, Some(1.5))],
                ),
                "Configuration producer_byte_rate must be a Long value",
            ),
            (
                alteration(
                    &[(ENTITY_IP, Some("1.2.3.4"))],
                    &[(PRODUCER_BYTE_RATE, Some(1.0))],
                ),
                "Invalid configuration key producer_byte_rate",
            ),
            (
                alteration(
                    &[(ENTITY_IP, Some("not an ip"))],
                    &[(CONNECTION_CREATION_RATE, Some(1.0))],
                ),
                "not an ip is not a valid IP or resolvable host.",
            ),
            (
                alteration(
                    &[(ENTITY_CLIENT_ID, Some("c"))],
                    &[(PRODUCER_BYTE_RATE, Some(1.0)), (PRODUCER_BYTE_RATE, None)],
                ),
                "Duplicate quota key producer_byte_rate not updating quota for this entity",
            ),
        ];
        for (a, message) in cases {
            let (records, results) = alter_client_quotas(&image, std::slice::from_ref(&a), false);
            assert!(records.is_empty(), "{a:?}");
            assert_eq!(
                results,
                vec![(ErrorCode::INVALID_REQUEST, Some(message.to_string()))],
                "{a:?}"
            );
        }
        // A fraction is fine for a double key; a whole number written as a double for a long.
        let ok = alteration(
            &[(ENTITY_CLIENT_ID, None)],
            &[
                (REQUEST_PERCENTAGE, Some(0.5)),
                (CONSUMER_BYTE_RATE, Some(2048.0)),
            ],
        );
        let (records, results) = alter_client_quotas(&image, &[ok], false);
        assert_eq!(records.len(), 2);
        assert_eq!(results[0].0, ErrorCode::NONE);
    }

    #[test]
    fn validate_only_and_a_failing_entity_write_nothing_for_it() {
        let image = MetadataImage::default();
        let good = alteration(
            &[(ENTITY_CLIENT_ID, Some("c"))],
            &[(PRODUCER_BYTE_RATE, Some(10.0))],
        );
        let bad = alteration(&[(ENTITY_CLIENT_ID, Some("d"))], &[("nope", Some(10.0))]);
        let (records, results) = alter_client_quotas(&image, &[good.clone(), bad.clone()], true);
        assert!(records.is_empty());
        assert_eq!(results[0].0, ErrorCode::NONE);
        assert_eq!(results[1].0, ErrorCode::INVALID_REQUEST);
        let (records, _) = alter_client_quotas(&image, &[good, bad], false);
        assert_eq!(records.len(), 1);
    }

    #[test]
    fn describe_matches_exact_default_and_specified() {
        let mut image = MetadataImage::default();
        commit(
            &mut image,
            &[
                alteration(
                    &[(ENTITY_USER, Some("alice"))],
                    &[(PRODUCER_BYTE_RATE, Some(1.0))],
                ),
                alteration(&[(ENTITY_USER, None)], &[(PRODUCER_BYTE_RATE, Some(2.0))]),
                alteration(
                    &[
                        (ENTITY_USER, Some("alice")),
                        (ENTITY_CLIENT_ID, Some("app")),
                    ],
                    &[(CONSUMER_BYTE_RATE, Some(3.0))],
                ),
                alteration(
                    &[(ENTITY_CLIENT_ID, None)],
                    &[(CONSUMER_BYTE_RATE, Some(4.0))],
                ),
            ],
        );
        let q = &image.client_quotas;
        let values = |components: &[(&str, i8, Option<&str>)], strict: bool| -> Vec<f64> {
            let c: Vec<(String, i8, Option<String>)> = components
                .iter()
                .map(|(t, m, n)| (t.to_string(), *m, n.map(str::to_string)))
                .collect();
            let mut v: Vec<f64> = q
                .describe(&c, strict)
                .unwrap()
                .iter()
                .flat_map(|(_, vals)| vals.values().copied())
                .collect();
            v.sort_by(f64::total_cmp);
            v
        };
        assert_eq!(
            values(&[(ENTITY_USER, MATCH_TYPE_EXACT, Some("alice"))], false),
            [1.0, 3.0]
        );
        assert_eq!(
            values(&[(ENTITY_USER, MATCH_TYPE_EXACT, Some("alice"))], true),
            [1.0]
        );
        assert_eq!(
            values(&[(ENTITY_USER, MATCH_TYPE_DEFAULT, None)], false),
            [2.0]
        );
        assert_eq!(
            values(&[(ENTITY_USER, MATCH_TYPE_SPECIFIED, None)], true),
            [1.0, 2.0]
        );
        assert_eq!(
            values(&[(ENTITY_CLIENT_ID, MATCH_TYPE_SPECIFIED, None)], false),
            [3.0, 4.0]
        );
        assert_eq!(values(&[], false), [1.0, 2.0, 3.0, 4.0]);
        let err = |components: &[(&str, i8, Option<&str>)]| {
            let c: Vec<(String, i8, Option<String>)> = components
                .iter()
                .map(|(t, m, n)| (t.to_string(), *m, n.map(str::to_string)))
                .collect();
            q.describe(&c, false).unwrap_err().0
        };
        assert_eq!(
            err(&[(ENTITY_USER, MATCH_TYPE_EXACT, None)]),
            ErrorCode::INVALID_REQUEST
        );
        assert_eq!(
            err(&[(ENTITY_USER, MATCH_TYPE_DEFAULT, Some("x"))]),
            ErrorCode::INVALID_REQUEST
        );
        assert_eq!(
            err(&[("group", MATCH_TYPE_SPECIFIED, None)]),
            ErrorCode::UNSUPPORTED_VERSION
        );
        assert_eq!(
            err(&[(ENTITY_USER, 7, None)]),
            ErrorCode::UNSUPPORTED_VERSION
        );
        assert_eq!(
            err(&[
                (ENTITY_USER, MATCH_TYPE_SPECIFIED, None),
                (ENTITY_IP, MATCH_TYPE_SPECIFIED, None)
            ]),
            ErrorCode::INVALID_REQUEST
        );
    }

    #[test]
    fn the_image_round_trips_through_json_with_its_quotas() {
        let mut image = MetadataImage::default();
        commit(
            &mut image,
            &[alteration(
                &[(ENTITY_USER, None), (ENTITY_CLIENT_ID, Some("c"))],
                &[(CONTROLLER_MUTATION_RATE, Some(7.5))],
            )],
        );
        let json = serde_json::to_string(&image).unwrap();
        let back: MetadataImage = serde_json::from_str(&json).unwrap();
        assert_eq!(back, image);
        assert!(!back.client_quotas.is_empty());
    }
}
