//! ACLs in the metadata log (Kafka's `AccessControlEntryRecord` /
//! `RemoveAccessControlEntryRecord`, each ACL with its own id) and the index every node builds
//! from them (Kafka's `StandardAuthorizerData`): the ACLs that apply to one resource are found
//! by a few map lookups (the literal name, the literal wildcard `*`, and one per prefix of the
//! name for PREFIXED patterns), never by scanning every ACL.
//!
//! Also the controller's side of CreateAcls / DeleteAcls (Kafka's `AclControlManager`): the
//! validation of a new ACL and the records a creation or deletion commits. The operation,
//! resource type, pattern type and permission ids it stores are `protocol::acl`'s wire values.
use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use super::image::MetadataImage;
use super::records::MetadataRecord;
use crate::error::ErrorCode;
use crate::protocol::acl::{
    operation, pattern_type, permission_type, resource_type, CLUSTER_NAME, WILDCARD,
};

/// One ACL (Kafka's `StandardAcl`: a resource pattern and an access control entry).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct AclBinding {
    pub resource_type: i8,
    pub resource_name: String,
    pub pattern_type: i8,
    /// `Type:name`, e.g. `User:alice` or `User:*`.
    pub principal: String,
    /// `*` or one IP address.
    pub host: String,
    pub operation: i8,
    pub permission_type: i8,
}

/// Kafka's `AclBindingFilter`: `None` names and ANY enums match everything; pattern type
/// MATCH matches every pattern that applies to the named resource.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AclFilter {
    pub resource_type: i8,
    pub resource_name: Option<String>,
    pub pattern_type: i8,
    pub principal: Option<String>,
    pub host: Option<String>,
    pub operation: i8,
    pub permission_type: i8,
}

impl AclFilter {
    /// Why Kafka would refuse the filter (an UNKNOWN field: INVALID_REQUEST), if it would.
    pub fn invalid_reason(&self) -> Option<String> {
        if !(resource_type::ANY..=resource_type::USER).contains(&self.resource_type) {
            return Some(format!("Invalid resource type {}", self.resource_type));
        }
        if !(pattern_type::ANY..=pattern_type::PREFIXED).contains(&self.pattern_type) {
            return Some(format!("Invalid pattern type {}", self.pattern_type));
        }
        if !(operation::ANY..=operation::DESCRIBE_TOKENS).contains(&self.operation) {
            return Some(format!("Invalid operation {}", self.operation));
        }
        if !(permission_type::ANY..=permission_type::ALLOW).contains(&self.permission_type) {
            return Some(format!("Invalid permission type {}", self.permission_type));
        }
        None
    }

    pub fn matches(&self, acl: &AclBinding) -> bool {
        self.matches_pattern(acl)
            && self
                .principal
                .as_ref()
                .map_or(true, |p| *p == acl.principal)
            && self.host.as_ref().map_or(true, |h| *h == acl.host)
            && (self.operation == operation::ANY || self.operation == acl.operation)
            && (self.permission_type == permission_type::ANY
                || self.permission_type == acl.permission_type)
    }

    fn matches_pattern(&self, acl: &AclBinding) -> bool {
        if self.resource_type != resource_type::ANY && self.resource_type != acl.resource_type {
            return false;
        }
        match self.pattern_type {
            pattern_type::ANY => self
                .resource_name
                .as_ref()
                .map_or(true, |n| *n == acl.resource_name),
            pattern_type::MATCH => match &self.resource_name {
                None => true,
                Some(n) => match acl.pattern_type {
                    pattern_type::LITERAL => {
                        acl.resource_name == *n || acl.resource_name == WILDCARD
                    }
                    pattern_type::PREFIXED => n.starts_with(&acl.resource_name),
                    _ => false,
                },
            },
            p => {
                p == acl.pattern_type
                    && self
                        .resource_name
                        .as_ref()
                        .map_or(true, |n| *n == acl.resource_name)
            }
        }
    }
}

/// Why Kafka refuses to create `acl` (INVALID_REQUEST), if it does (`AclControlManager`'s
/// and the broker's checks of a new ACL).
pub fn invalid_new_acl(acl: &AclBinding) -> Option<String> {
    if !(resource_type::TOPIC..=resource_type::USER).contains(&acl.resource_type) {
        return Some(format!("Invalid resource type {}", acl.resource_type));
    }
    if acl.pattern_type != pattern_type::LITERAL && acl.pattern_type != pattern_type::PREFIXED {
        return Some(format!("Invalid patternType {}", acl.pattern_type));
    }
    if !(operation::ALL..=operation::DESCRIBE_TOKENS).contains(&acl.operation) {
        return Some(format!("Invalid operation {}", acl.operation));
    }
    if acl.permission_type != permission_type::ALLOW && acl.permission_type != permission_type::DENY
    {
        return Some(format!("Invalid permissionType {}", acl.permission_type));
    }
    if acl.resource_name.is_empty() {
        return Some("Resource name should not be empty".into());
    }
    if acl.resource_type == resource_type::CLUSTER && acl.resource_name != CLUSTER_NAME {
        return Some(format!(
            "The only valid name for the CLUSTER resource is {CLUSTER_NAME}"
        ));
    }
    match acl.principal.split_once(':') {
        Some((t, _)) if !t.is_empty() => {}
        _ => return Some(format!("Could not parse principal {:?}", acl.principal)),
    }
    if acl.host.is_empty() {
        return Some("Invalid empty host".into());
    }
    None
}

/// Every ACL by id, and the index by resource pattern. Serialised as the list of (id, ACL)
/// pairs; the index is rebuilt on load.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AclIndex {
    by_id: BTreeMap<[u8; 16], AclBinding>,
    /// (resource type, pattern type, resource name) -> ids.
    by_pattern: BTreeMap<(i8, i8, String), BTreeSet<[u8; 16]>>,
}

impl Serialize for AclIndex {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.by_id.iter())
    }
}

impl<'de> Deserialize<'de> for AclIndex {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let pairs: Vec<([u8; 16], AclBinding)> = Vec::deserialize(d)?;
        let mut index = AclIndex::default();
        for (id, acl) in pairs {
            index.add(id, acl);
        }
        Ok(index)
    }
}

impl AclIndex {
    pub fn is_empty(&self) -> bool {
        self.by_id.is_empty()
    }

    pub fn len(&self) -> usize {
        self.by_id.len()
    }

    /// Applies an `AccessControlEntry` record; a reused id replaces the ACL it named.
    pub fn add(&mut self, id: [u8; 16], acl: AclBinding) {
        self.remove(&id);
        self.by_pattern
            .entry((
                acl.resource_type,
                acl.pattern_type,
                acl.resource_name.clone(),
            ))
            .or_default()
            .insert(id);
        self.by_id.insert(id, acl);
    }

    /// Applies a `RemoveAccessControlEntry` record; false for an unknown id.
    pub fn remove(&mut self, id: &[u8; 16]) -> bool {
        let Some(acl) = self.by_id.remove(id) else {
            return false;
        };
        let key = (acl.resource_type, acl.pattern_type, acl.resource_name);
        if let Some(ids) = self.by_pattern.get_mut(&key) {
            ids.remove(id);
            if ids.is_empty() {
                self.by_pattern.remove(&key);
            }
        }
        true
    }

    pub fn get(&self, id: &[u8; 16]) -> Option<&AclBinding> {
        self.by_id.get(id)
    }

    /// Every ACL, by id.
    pub fn iter(&self) -> impl Iterator<Item = (&[u8; 16], &AclBinding)> {
        self.by_id.iter()
    }

    /// The id of an ACL equal to `acl`, if there is one.
    pub fn find(&self, acl: &AclBinding) -> Option<[u8; 16]> {
        let key = (
            acl.resource_type,
            acl.pattern_type,
            acl.resource_name.clone(),
        );
        self.by_pattern
            .get(&key)?
            .iter()
            .find(|id| self.by_id.get(*id) == Some(acl))
            .copied()
    }

    /// The ACLs that apply to the resource `resource_type:name`: its literal ACLs, the
    /// literal wildcard ones, and the PREFIXED ones whose prefix starts `name`.
    pub fn for_resource<'a>(
        &'a self,
        resource_type: i8,
        name: &'a str,
    ) -> impl Iterator<Item = &'a AclBinding> + 'a {
        let literal = self.ids(resource_type, pattern_type::LITERAL, name);
        let wildcard = if name == WILDCARD {
            None
        } else {
            self.ids(resource_type, pattern_type::LITERAL, WILDCARD)
        };
        let prefixes = name
            .char_indices()
            .map(|(i, c)| &name[..i + c.len_utf8()])
            .filter_map(move |p| self.ids(resource_type, pattern_type::PREFIXED, p));
        literal
            .into_iter()
            .chain(wildcard)
            .chain(prefixes)
            .flatten()
            .filter_map(|id| self.by_id.get(id))
    }

    /// Every ACL of one resource type (for authorizing "some resource of this type").
    pub fn for_resource_type(&self, resource_type: i8) -> impl Iterator<Item = &AclBinding> {
        self.by_pattern
            .range((resource_type, i8::MIN, String::new())..)
            .take_while(move |((t, _, _), _)| *t == resource_type)
            .flat_map(|(_, ids)| ids.iter())
            .filter_map(|id| self.by_id.get(id))
    }

    fn ids(&self, resource_type: i8, pattern: i8, name: &str) -> Option<&BTreeSet<[u8; 16]>> {
        self.by_pattern
            .get(&(resource_type, pattern, name.to_string()))
    }
}

/// The result of one creation: NONE or INVALID_REQUEST with its message.
pub type AclResult = (ErrorCode, Option<String>);

/// The controller's side of CreateAcls: validates each ACL, skips one that exists already
/// (Kafka answers success), and gives each new one a fresh id.
pub fn create_acls(
    image: &MetadataImage,
    acls: &[AclBinding],
    new_id: &mut dyn FnMut() -> [u8; 16],
) -> (Vec<MetadataRecord>, Vec<AclResult>) {
    let mut records = Vec::new();
    let mut results = Vec::with_capacity(acls.len());
    let mut created: BTreeSet<&AclBinding> = BTreeSet::new();
    for acl in acls {
        if let Some(reason) = invalid_new_acl(acl) {
            results.push((ErrorCode::INVALID_REQUEST, Some(reason)));
            continue;
        }
        if image.acls.find(acl).is_some() || !created.insert(acl) {
            results.push((ErrorCode::NONE, None));
            continue;
        }
        let mut id = [0u8; 16];
        for _ in 0..16 {
            let candidate = new_id();
            if candidate != [0; 16] && image.acls.get(&candidate).is_none() {
                id = candidate;
                break;
            }
        }
        if id == [0; 16] {
            results.push((
                ErrorCode::UNKNOWN_SERVER_ERROR,
                Some("no fresh ACL id".into()),
            ));
            continue;
        }
        records.push(MetadataRecord::AccessControlEntry {
            id,
            acl: acl.clone(),
        });
        results.push((ErrorCode::NONE, None));
    }
    (records, results)
}

/// The controller's side of DeleteAcls: per filter, INVALID_REQUEST for a bad one, otherwise
/// the ACLs it matches (each removed once even when several filters match it).
pub fn delete_acls(
    image: &MetadataImage,
    filters: &[AclFilter],
) -> (Vec<MetadataRecord>, Vec<Result<Vec<AclBinding>, String>>) {
    let mut removed: BTreeSet<[u8; 16]> = BTreeSet::new();
    let mut records = Vec::new();
    let results = filters
        .iter()
        .map(|f| {
            if let Some(reason) = f.invalid_reason() {
                return Err(reason);
            }
            let mut matched = Vec::new();
            for (id, acl) in image.acls.iter().filter(|(_, acl)| f.matches(acl)) {
                if removed.insert(*id) {
                    records.push(MetadataRecord::RemoveAccessControlEntry { id: *id });
                }
                matched.push(acl.clone());
            }
            Ok(matched)
        })
        .collect();
    (records, results)
}

#[cfg(test)]
mod tests {
    use super::*;

    pub fn acl(rt: i8, name: &str, pt: i8, principal: &str, op: i8, perm: i8) -> AclBinding {
        AclBinding {
            resource_type: rt,
            resource_name: name.into(),
            pattern_type: pt,
            principal: principal.into(),
            host: "*".into(),
            operation: op,
            permission_type: perm,
        }
    }

    fn ids() -> impl FnMut() -> [u8; 16] {
        let mut n = 0u8;
        move || {
            n += 1;
            [n; 16]
        }
    }

    #[test]
    fn the_index_finds_literal_wildcard_and_prefixed_acls_only() {
        let mut index = AclIndex::default();
        let t = resource_type::TOPIC;
        let a = |name: &str, pt| {
            acl(
                t,
                name,
                pt,
                "User:a",
                operation::READ,
                permission_type::ALLOW,
            )
        };
        index.add([1; 16], a("foobar", pattern_type::LITERAL));
        index.add([2; 16], a("foo", pattern_type::PREFIXED));
        index.add([3; 16], a("foo", pattern_type::LITERAL));
        index.add([4; 16], a("*", pattern_type::LITERAL));
        index.add([5; 16], a("fooba", pattern_type::PREFIXED));
        index.add([6; 16], a("g", pattern_type::PREFIXED));
        index.add(
            [7; 16],
            acl(
                resource_type::GROUP,
                "foobar",
                pattern_type::LITERAL,
                "User:a",
                operation::READ,
                permission_type::ALLOW,
            ),
        );
        let mut found: Vec<(String, i8)> = index
            .for_resource(t, "foobar")
            .map(|a| (a.resource_name.clone(), a.pattern_type))
            .collect();
        found.sort();
        assert_eq!(
            found,
            vec![
                ("*".to_string(), pattern_type::LITERAL),
                ("foo".to_string(), pattern_type::PREFIXED),
                ("fooba".to_string(), pattern_type::PREFIXED),
                ("foobar".to_string(), pattern_type::LITERAL),
            ]
        );
        assert!(index.remove(&[4; 16]));
        assert!(!index.remove(&[4; 16]));
        assert_eq!(index.for_resource(t, "x").count(), 0);
        assert_eq!(index.for_resource_type(t).count(), 5);
        // Serialised as pairs, the index is rebuilt on load.
        let json = serde_json::to_string(&index).unwrap();
        let back: AclIndex = serde_json::from_str(&json).unwrap();
        assert_eq!(back, index);
    }

    #[test]
    fn filters_match_as_kafka_acl_binding_filters() {
        let lit = acl(
            resource_type::TOPIC,
            "foo",
            pattern_type::LITERAL,
            "User:a",
            operation::READ,
            permission_type::ALLOW,
        );
        let pre = acl(
            resource_type::TOPIC,
            "fo",
            pattern_type::PREFIXED,
            "User:a",
            operation::READ,
            permission_type::ALLOW,
        );
        let wild = acl(
            resource_type::TOPIC,
            "*",
            pattern_type::LITERAL,
            "User:b",
            operation::WRITE,
            permission_type::DENY,
        );
        let any = AclFilter {
            resource_type: resource_type::ANY,
            resource_name: None,
            pattern_type: pattern_type::ANY,
            principal: None,
            host: None,
            operation: operation::ANY,
            permission_type: permission_type::ANY,
        };
        assert!([&lit, &pre, &wild].iter().all(|a| any.matches(a)));
        let matching = AclFilter {
            resource_type: resource_type::TOPIC,
            resource_name: Some("foo".into()),
            pattern_type: pattern_type::MATCH,
            ..any.clone()
        };
        assert!([&lit, &pre, &wild].iter().all(|a| matching.matches(a)));
        let literal = AclFilter {
            pattern_type: pattern_type::LITERAL,
            ..matching.clone()
        };
        assert!(literal.matches(&lit) && !literal.matches(&pre) && !literal.matches(&wild));
        let by_principal = AclFilter {
            principal: Some("User:b".into()),
            ..any.clone()
        };
        assert!(!by_principal.matches(&lit) && by_principal.matches(&wild));
        let unknown = AclFilter {
            operation: operation::UNKNOWN,
            ..any.clone()
        };
        assert!(unknown.invalid_reason().is_some());
        assert!(any.invalid_reason().is_none());
    }

    #[test]
    fn create_and_delete_commit_records_with_ids() {
        let mut image = MetadataImage::default();
        let good = acl(
            resource_type::TOPIC,
            "t",
            pattern_type::LITERAL,
            "User:a",
            operation::READ,
            permission_type::ALLOW,
        );
        let bad_cluster = acl(
            resource_type::CLUSTER,
            "c",
            pattern_type::LITERAL,
            "User:a",
            operation::ALTER,
            permission_type::ALLOW,
        );
        let bad_pattern = acl(
            resource_type::TOPIC,
            "t",
            pattern_type::MATCH,
            "User:a",
            operation::READ,
            permission_type::ALLOW,
        );
        let bad_principal = acl(
            resource_type::TOPIC,
            "t",
            pattern_type::LITERAL,
            "alice",
            operation::READ,
            permission_type::ALLOW,
        );
        let (records, results) = create_acls(
            &image,
            &[
                good.clone(),
                good.clone(),
                bad_cluster,
                bad_pattern,
                bad_principal,
            ],
            &mut ids(),
        );
        assert_eq!(records.len(), 1, "the duplicate is created once");
        let codes: Vec<ErrorCode> = results.iter().map(|r| r.0).collect();
        assert_eq!(
            codes,
            vec![
                ErrorCode::NONE,
                ErrorCode::NONE,
                ErrorCode::INVALID_REQUEST,
                ErrorCode::INVALID_REQUEST,
                ErrorCode::INVALID_REQUEST
            ]
        );
        for r in &records {
            image.apply(r);
        }
        assert_eq!(image.acls.len(), 1);
        // Creating it again is a success that writes nothing.
        let (again, results) = create_acls(&image, std::slice::from_ref(&good), &mut ids());
        assert!(again.is_empty() && results[0].0 == ErrorCode::NONE);
        let filter = AclFilter {
            resource_type: resource_type::TOPIC,
            resource_name: Some("t".into()),
            pattern_type: pattern_type::LITERAL,
            principal: None,
            host: None,
            operation: operation::ANY,
            permission_type: permission_type::ANY,
        };
        let (records, results) = delete_acls(&image, &[filter.clone(), filter]);
        assert_eq!(records.len(), 1, "an ACL two filters match is removed once");
        assert_eq!(results[0].as_ref().unwrap(), &vec![good.clone()]);
        assert_eq!(results[1].as_ref().unwrap(), &vec![good]);
        for r in &records {
            image.apply(r);
        }
        assert!(image.acls.is_empty());
        // The image carries the ACLs through a snapshot.
        let (records, _) = create_acls(
            &image,
            &[acl(
                resource_type::GROUP,
                "g",
                pattern_type::PREFIXED,
                "User:*",
                operation::ALL,
                permission_type::DENY,
            )],
            &mut ids(),
        );
        image.apply(&records[0]);
        let json = serde_json::to_string(&image).unwrap();
        let back: MetadataImage = serde_json::from_str(&json).unwrap();
        assert_eq!(back, image);
        assert_eq!(back.acls.len(), 1);
    }
}
