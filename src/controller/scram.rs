//! SCRAM credentials as the metadata log holds them (Kafka's `UserScramCredentialRecord` and
//! `RemoveUserScramCredentialRecord`, issue 13's sasl slice): per user and mechanism the salt,
//! stored key, server key and iteration count, never the password. The controller derives the
//! keys from the salted password an AlterUserScramCredentials upsertion carries (the client
//! salts, as Kafka's admin client does) and validates the request as Kafka's
//! `ScramControlManager`: known mechanism, 4096..=16384 iterations, a user named once per
//! mechanism per request, deletions only of credentials that exist.
use std::collections::BTreeMap;

use hmac::{Hmac, Mac};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256, Sha512};

use super::records::MetadataRecord;
use crate::error::ErrorCode;

/// Kafka's `ScramMechanism.MIN_ITERATIONS` (RFC 7677).
pub const MIN_ITERATIONS: i32 = 4096;
/// The most iterations Kafka's controller accepts for a credential (`ScramControlManager`).
pub const MAX_ITERATIONS: i32 = 16384;

/// A SCRAM mechanism, with Kafka's ids (`ScramMechanism.type()`, the i8 in
/// AlterUserScramCredentials and the metadata record).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ScramMechanism {
    Sha256,
    Sha512,
}

impl ScramMechanism {
    pub fn from_id(id: i8) -> Option<ScramMechanism> {
        match id {
            1 => Some(ScramMechanism::Sha256),
            2 => Some(ScramMechanism::Sha512),
            _ => None,
        }
    }

    pub fn id(self) -> i8 {
        match self {
            ScramMechanism::Sha256 => 1,
            ScramMechanism::Sha512 => 2,
        }
    }

    pub fn from_name(name: &str) -> Option<ScramMechanism> {
        match name {
            "SCRAM-SHA-256" => Some(ScramMechanism::Sha256),
            "SCRAM-SHA-512" => Some(ScramMechanism::Sha512),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            ScramMechanism::Sha256 => "SCRAM-SHA-256",
            ScramMechanism::Sha512 => "SCRAM-SHA-512",
        }
    }

    pub fn hash(self, data: &[u8]) -> Vec<u8> {
        match self {
            ScramMechanism::Sha256 => Sha256::digest(data).to_vec(),
            ScramMechanism::Sha512 => Sha512::digest(data).to_vec(),
        }
    }

    pub fn hmac(self, key: &[u8], data: &[u8]) -> Vec<u8> {
        match self {
            ScramMechanism::Sha256 => {
                let mut m = Hmac::<Sha256>::new_from_slice(key).expect("HMAC takes any key");
                m.update(data);
                m.finalize().into_bytes().to_vec()
            }
            ScramMechanism::Sha512 => {
                let mut m = Hmac::<Sha512>::new_from_slice(key).expect("HMAC takes any key");
                m.update(data);
                m.finalize().into_bytes().to_vec()
            }
        }
    }

    /// RFC 5802 `Hi(password, salt, i)`: PBKDF2 with this mechanism's HMAC.
    pub fn salted_password(self, password: &[u8], salt: &[u8], iterations: i32) -> Vec<u8> {
        let rounds = iterations.max(1) as u32;
        match self {
            ScramMechanism::Sha256 => {
                let mut out = [0u8; 32];
                pbkdf2::pbkdf2_hmac::<Sha256>(password, salt, rounds, &mut out);
                out.to_vec()
            }
            ScramMechanism::Sha512 => {
                let mut out = [0u8; 64];
                pbkdf2::pbkdf2_hmac::<Sha512>(password, salt, rounds, &mut out);
                out.to_vec()
            }
        }
    }

    pub fn client_key(self, salted_password: &[u8]) -> Vec<u8> {
        self.hmac(salted_password, b"Client Key")
    }

    pub fn server_key(self, salted_password: &[u8]) -> Vec<u8> {
        self.hmac(salted_password, b"Server Key")
    }
}

/// What the broker keeps for one user and mechanism (Kafka's `ScramCredential`).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ScramCredential {
    pub salt: Vec<u8>,
    pub stored_key: Vec<u8>,
    pub server_key: Vec<u8>,
    pub iterations: i32,
}

impl ScramCredential {
    /// The credential for a salted password, as the controller derives it from an
    /// AlterUserScramCredentials upsertion (the client salts; the password never travels).
    pub fn from_salted_password(
        mechanism: ScramMechanism,
        salt: &[u8],
        salted_password: &[u8],
        iterations: i32,
    ) -> ScramCredential {
        ScramCredential {
            salt: salt.to_vec(),
            stored_key: mechanism.hash(&mechanism.client_key(salted_password)),
            server_key: mechanism.server_key(salted_password),
            iterations,
        }
    }

    /// The credential for a password, with a fresh random salt (format's `--add-scram`).
    pub fn from_password(
        mechanism: ScramMechanism,
        password: &str,
        iterations: i32,
    ) -> ScramCredential {
        let mut salt = vec![0u8; 32];
        ring::rand::SecureRandom::fill(&ring::rand::SystemRandom::new(), &mut salt)
            .expect("the system random generator works");
        let salted = mechanism.salted_password(password.as_bytes(), &salt, iterations);
        ScramCredential::from_salted_password(mechanism, &salt, &salted, iterations)
    }
}

/// Every user's SCRAM credentials: the image's part built from the records above.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScramCredentials {
    /// By user name, then mechanism id.
    pub users: BTreeMap<String, BTreeMap<i8, ScramCredential>>,
}

impl ScramCredentials {
    pub fn credential(&self, user: &str, mechanism: ScramMechanism) -> Option<&ScramCredential> {
        self.users.get(user)?.get(&mechanism.id())
    }

    /// Applies a SCRAM record; false for any other record.
    pub fn apply(&mut self, record: &MetadataRecord) -> bool {
        match record {
            MetadataRecord::UserScramCredential {
                name,
                mechanism,
                salt,
                stored_key,
                server_key,
                iterations,
            } => {
                self.users.entry(name.clone()).or_default().insert(
                    *mechanism,
                    ScramCredential {
                        salt: salt.clone(),
                        stored_key: stored_key.clone(),
                        server_key: server_key.clone(),
                        iterations: *iterations,
                    },
                );
                true
            }
            MetadataRecord::RemoveUserScramCredential { name, mechanism } => {
                if let Some(m) = self.users.get_mut(name) {
                    m.remove(mechanism);
                    if m.is_empty() {
                        self.users.remove(name);
                    }
                }
                true
            }
            _ => false,
        }
    }
}

/// The record that stores `credential`.
pub fn credential_record(
    name: &str,
    mechanism: ScramMechanism,
    credential: &ScramCredential,
) -> MetadataRecord {
    MetadataRecord::UserScramCredential {
        name: name.to_string(),
        mechanism: mechanism.id(),
        salt: credential.salt.clone(),
        stored_key: credential.stored_key.clone(),
        server_key: credential.server_key.clone(),
        iterations: credential.iterations,
    }
}

/// One deletion or upsertion of an AlterUserScramCredentials request.
#[derive(Debug, Clone)]
pub enum ScramAlteration {
    Delete {
        name: String,
        mechanism: i8,
    },
    Upsert {
        name: String,
        mechanism: i8,
        iterations: i32,
        salt: Vec<u8>,
        salted_password: Vec<u8>,
    },
}

impl ScramAlteration {
    fn name(&self) -> &str {
        match self {
            ScramAlteration::Delete { name, .. } | ScramAlteration::Upsert { name, .. } => name,
        }
    }

    fn mechanism(&self) -> i8 {
        match self {
            ScramAlteration::Delete { mechanism, .. }
            | ScramAlteration::Upsert { mechanism, .. } => *mechanism,
        }
    }
}

/// The records and per-user results (in first-appearance order) of an
/// AlterUserScramCredentials request, as Kafka's `ScramControlManager` judges it: a user with
/// any bad alteration gets that error and none of its alterations apply.
pub fn alter_user_scram_credentials(
    current: &ScramCredentials,
    alterations: &[ScramAlteration],
) -> (
    Vec<MetadataRecord>,
    Vec<(String, ErrorCode, Option<String>)>,
) {
    let mut order: Vec<String> = Vec::new();
    let mut errors: BTreeMap<String, (ErrorCode, String)> = BTreeMap::new();
    let mut seen: BTreeMap<(String, i8), usize> = BTreeMap::new();
    for a in alterations {
        if !order.iter().any(|n| n == a.name()) {
            order.push(a.name().to_string());
        }
        *seen
            .entry((a.name().to_string(), a.mechanism()))
            .or_default() += 1;
    }
    let mut fail = |name: &str, code: ErrorCode, message: &str| {
        errors
            .entry(name.to_string())
            .or_insert_with(|| (code, message.to_string()));
    };
    for a in alterations {
        let name = a.name();
        if name.is_empty() {
            fail(
                name,
                ErrorCode::UNACCEPTABLE_CREDENTIAL,
                "Username must not be empty",
            );
            continue;
        }
        if seen[&(name.to_string(), a.mechanism())] > 1 {
            fail(
                name,
                ErrorCode::DUPLICATE_RESOURCE,
                "A user credential cannot be altered twice in the same request",
            );
            continue;
        }
        let Some(mechanism) = ScramMechanism::from_id(a.mechanism()) else {
            fail(
                name,
                ErrorCode::UNSUPPORTED_SASL_MECHANISM,
                "Unknown SCRAM mechanism",
            );
            continue;
        };
        match a {
            ScramAlteration::Delete { .. } => {
                if current.credential(name, mechanism).is_none() {
                    fail(
                        name,
                        ErrorCode::RESOURCE_NOT_FOUND,
                        "Attempt to delete a user credential that does not exist",
                    );
                }
            }
            ScramAlteration::Upsert {
                iterations,
                salt,
                salted_password,
                ..
            } => {
                if *iterations < MIN_ITERATIONS {
                    fail(
                        name,
                        ErrorCode::UNACCEPTABLE_CREDENTIAL,
                        "Too few iterations",
                    );
                } else if *iterations > MAX_ITERATIONS {
                    fail(
                        name,
                        ErrorCode::UNACCEPTABLE_CREDENTIAL,
                        "Too many iterations",
                    );
                } else if salt.is_empty() || salted_password.is_empty() {
                    fail(
                        name,
                        ErrorCode::UNACCEPTABLE_CREDENTIAL,
                        "Salt and salted password must not be empty",
                    );
                }
            }
        }
    }
    let mut records = Vec::new();
    for a in alterations {
        if errors.contains_key(a.name()) {
            continue;
        }
        let mechanism = ScramMechanism::from_id(a.mechanism()).expect("validated above");
        match a {
            ScramAlteration::Delete { name, .. } => {
                records.push(MetadataRecord::RemoveUserScramCredential {
                    name: name.clone(),
                    mechanism: mechanism.id(),
                })
            }
            ScramAlteration::Upsert {
                name,
                iterations,
                salt,
                salted_password,
                ..
            } => {
                let c = ScramCredential::from_salted_password(
                    mechanism,
                    salt,
                    salted_password,
                    *iterations,
                );
                records.push(credential_record(name, mechanism, &c));
            }
        }
    }
    let results = order
        .into_iter()
        .map(|name| match errors.get(&name) {
            Some((code, m)) => (name, *code, Some(m.clone())),
            None => (name, ErrorCode::NONE, None),
        })
        .collect();
    (records, results)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn upsert(name: &str, mechanism: i8, iterations: i32) -> ScramAlteration {
        ScramAlteration::Upsert {
            name: name.into(),
            mechanism,
            iterations,
            salt: b"salt".to_vec(),
            salted_password: vec![1; 64],
        }
    }

    #[test]
    fn alterations_are_judged_per_user_as_kafka_does() {
        let mut state = ScramCredentials::default();
        let (records, results) = alter_user_scram_credentials(
            &state,
            &[
                upsert("alice", 2, 8192),
                upsert("alice", 1, 4096),
                upsert("bob", 2, 1000),
                upsert("carol", 2, 20000),
                upsert("dave", 3, 4096),
                upsert("erin", 2, 4096),
                upsert("erin", 2, 4096),
                ScramAlteration::Delete {
                    name: "frank".into(),
                    mechanism: 1,
                },
                upsert("", 1, 4096),
            ],
        );
        let codes: Vec<(String, i16)> = results
            .iter()
            .map(|(n, c, _)| (n.clone(), c.code()))
            .collect();
        assert_eq!(
            codes,
            vec![
                ("alice".into(), 0),
                ("bob".into(), ErrorCode::UNACCEPTABLE_CREDENTIAL.code()),
                ("carol".into(), ErrorCode::UNACCEPTABLE_CREDENTIAL.code()),
                ("dave".into(), ErrorCode::UNSUPPORTED_SASL_MECHANISM.code()),
                ("erin".into(), ErrorCode::DUPLICATE_RESOURCE.code()),
                ("frank".into(), ErrorCode::RESOURCE_NOT_FOUND.code()),
                ("".into(), ErrorCode::UNACCEPTABLE_CREDENTIAL.code()),
            ]
        );
        assert_eq!(results[1].2.as_deref(), Some("Too few iterations"));
        assert_eq!(records.len(), 2);
        for r in &records {
            assert!(state.apply(r));
        }
        let c = state.credential("alice", ScramMechanism::Sha512).unwrap();
        assert_eq!(c.iterations, 8192);
        assert_eq!(c.salt, b"salt".to_vec());
        // The stored key is derived from the salted password as sent.
        let expected =
            ScramCredential::from_salted_password(ScramMechanism::Sha512, b"salt", &[1; 64], 8192);
        assert_eq!(c, &expected);
        let (records, results) = alter_user_scram_credentials(
            &state,
            &[ScramAlteration::Delete {
                name: "alice".into(),
                mechanism: 2,
            }],
        );
        assert_eq!(results[0].1, ErrorCode::NONE);
        state.apply(&records[0]);
        assert!(state.credential("alice", ScramMechanism::Sha512).is_none());
        assert!(state.credential("alice", ScramMechanism::Sha256).is_some());
    }
}
