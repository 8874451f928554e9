//! `strata storage format --add-scram` (Kafka's `kafka-storage format --add-scram`, KIP-900):
//! SCRAM credentials written at format time, so that a cluster whose inter-broker or
//! controller listener is SCRAM has its first user before anyone can log in to create one.
//!
//! The argument is Kafka's: `<mechanism>=[name=<user>,password=<password>]`, or with
//! `salt=<base64>,saltedpassword=<base64>` instead of the password, and `iterations=<n>`
//! (4096 by default, 4096..=16384); quoted values lose their quotes; repeatable. The
//! credentials are kept in the metadata log dir (`bootstrap.scram`), where Kafka keeps its
//! bootstrap records, and become `UserScramCredential` records when the controller first
//! leads a metadata log that has no SCRAM credential (Kafka writes them into a new log).
//!
//! Until they are committed the node also accepts them itself: Kafka cannot form a quorum
//! whose controller listener needs SCRAM (the controllers have no credentials before the
//! log does), Strata's controllers log in to each other with the formatted ones.
use std::collections::BTreeMap;

use base64::Engine;

use super::format::metadata_dir;
use crate::config::BrokerConfig;
use crate::controller::records::MetadataRecord;
use crate::controller::scram::{
    credential_record, ScramCredential, ScramCredentials, ScramMechanism, MAX_ITERATIONS,
    MIN_ITERATIONS,
};

/// The file, in the metadata log dir, with the formatted credentials (JSON).
pub const BOOTSTRAP_SCRAM_FILE: &str = "bootstrap.scram";

/// Kafka's default iteration count for `--add-scram`.
const DEFAULT_ITERATIONS: i32 = 4096;

/// One `--add-scram` argument, parsed and turned into a credential.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScramArgument {
    pub name: String,
    pub mechanism: ScramMechanism,
    pub credential: ScramCredential,
}

/// Parses one `--add-scram` argument; errors are Kafka's `FormatterException` messages.
pub fn parse_add_scram(input: &str) -> Result<ScramArgument, String> {
    let input = input.trim();
    let (mechanism_name, config) = input
        .split_once('=')
        .ok_or_else(|| format!("Failed to find equals sign in SCRAM argument '{input}'"))?;
    let mechanism = ScramMechanism::from_name(mechanism_name)
        .ok_or_else(|| format!("The add-scram mechanism {mechanism_name} is not supported."))?;
    let config = config
        .strip_prefix('[')
        .ok_or("Expected configuration string to start with [")?;
    let config = config
        .strip_suffix(']')
        .ok_or("Expected configuration string to end with ]")?;
    let mut components: BTreeMap<String, String> = BTreeMap::new();
    for component in config.split(',') {
        let (key, value) = component
            .split_once('=')
            .ok_or_else(|| format!("No equals sign found in SCRAM component: {component}"))?;
        let value = if value.len() >= 2 && value.starts_with('"') && value.ends_with('"') {
            &value[1..value.len() - 1]
        } else {
            value
        };
        components.insert(key.to_string(), value.to_string());
    }
    let b64 = base64::engine::general_purpose::STANDARD;
    let name = components
        .remove("name")
        .ok_or("You must supply 'name' to add-scram")?;
    let salt = match components.remove("salt") {
        Some(s) => Some(
            b64.decode(&s)
                .map_err(|_| format!("Failed to decode given salt: {s}"))?,
        ),
        None => None,
    };
    let iterations = match components.remove("iterations") {
        Some(s) => s
            .parse::<i32>()
            .map_err(|_| format!("Failed to parse iterations count: {s}"))?,
        None => DEFAULT_ITERATIONS,
    };
    let password = components.remove("password");
    let salted_password = components.remove("saltedpassword");
    let salted_password = match (&password, salted_password) {
        (Some(_), _) => None,
        (None, None) => {
            return Err("You must supply one of 'password' or 'saltedpassword' to add-scram".into())
        }
        (None, Some(_)) if salt.is_none() => {
            return Err("You must supply 'salt' with 'saltedpassword' to add-scram".into())
        }
        (None, Some(s)) => Some(
            b64.decode(&s)
                .map_err(|_| format!("Failed to decode given saltedPassword: {s}"))?,
        ),
    };
    if !components.is_empty() {
        let unknown: Vec<&str> = components.keys().map(|k| k.as_str()).collect();
        return Err(format!(
            "Unknown SCRAM configurations: {}",
            unknown.join(", ")
        ));
    }
    if iterations < MIN_ITERATIONS {
        return Err(format!(
            "The 'iterations' value must be >= {MIN_ITERATIONS} for add-scram using {}",
            mechanism.name().replace('-', "_")
        ));
    }
    if iterations > MAX_ITERATIONS {
        return Err(format!(
            "The 'iterations' value must be <= {MAX_ITERATIONS} for add-scram using {}",
            mechanism.name().replace('-', "_")
        ));
    }
    let credential = match (salted_password, salt, password) {
        (Some(salted), Some(salt), _) => {
            ScramCredential::from_salted_password(mechanism, &salt, &salted, iterations)
        }
        (_, Some(salt), Some(password)) => {
            let salted = mechanism.salted_password(password.as_bytes(), &salt, iterations);
            ScramCredential::from_salted_password(mechanism, &salt, &salted, iterations)
        }
        (_, None, Some(password)) => {
            ScramCredential::from_password(mechanism, &password, iterations)
        }
        // Without a password there is a salted password and its salt (checked above).
        _ => {
            return Err("You must supply one of 'password' or 'saltedpassword' to add-scram".into())
        }
    };
    Ok(ScramArgument {
        name,
        mechanism,
        credential,
    })
}

/// Every argument parsed (the first bad one fails the format, before anything is written).
pub fn parse_all(arguments: &[String]) -> Result<ScramCredentials, String> {
    let mut out = ScramCredentials::default();
    for a in arguments {
        let parsed = parse_add_scram(a)?;
        out.users
            .entry(parsed.name)
            .or_default()
            .insert(parsed.mechanism.id(), parsed.credential);
    }
    Ok(out)
}

/// The formatted text of `credentials` for [`BOOTSTRAP_SCRAM_FILE`].
pub fn to_file_text(credentials: &ScramCredentials) -> String {
    serde_json::to_string(credentials).expect("SCRAM credentials serialize")
}

/// The credentials this node was formatted with (empty when none were given).
pub fn formatted(config: &BrokerConfig) -> Result<ScramCredentials, String> {
    if config.log_dirs.is_empty() {
        return Ok(ScramCredentials::default());
    }
    let path = metadata_dir(config).join(BOOTSTRAP_SCRAM_FILE);
    match std::fs::read_to_string(&path) {
        Ok(text) => {
            serde_json::from_str(&text).map_err(|e| format!("cannot read {}: {e}", path.display()))
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(ScramCredentials::default()),
        Err(e) => Err(format!("cannot read {}: {e}", path.display())),
    }
}

/// The records that store `credentials`.
pub fn records(credentials: &ScramCredentials) -> Vec<MetadataRecord> {
    credentials
        .users
        .iter()
        .flat_map(|(name, by_mechanism)| {
            by_mechanism.iter().filter_map(move |(id, credential)| {
                ScramMechanism::from_id(*id).map(|m| credential_record(name, m, credential))
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_password_argument_makes_a_credential_that_verifies() {
        let a = parse_add_scram("SCRAM-SHA-512=[name=admin,password=admin-secret]").unwrap();
        assert_eq!(
            (a.name.as_str(), a.mechanism, a.credential.iterations),
            ("admin", ScramMechanism::Sha512, 4096)
        );
        let m = a.mechanism;
        let salted = m.salted_password(b"admin-secret", &a.credential.salt, 4096);
        assert_eq!(
            ScramCredential::from_salted_password(m, &a.credential.salt, &salted, 4096),
            a.credential
        );
        // Quotes are stripped, the iterations honoured, surrounding blanks ignored.
        let b = parse_add_scram(
            "  SCRAM-SHA-256=[name=\"alice\",password=\"alice-secret\",iterations=8192]  ",
        )
        .unwrap();
        assert_eq!(
            (b.name.as_str(), b.mechanism, b.credential.iterations),
            ("alice", ScramMechanism::Sha256, 8192)
        );
    }

    /// Kafka's own example: salt and salted password given, so the stored key and server
    /// key follow from them alone.
    #[test]
    fn a_salted_password_argument_uses_the_given_salt() {
        let b64 = base64::engine::general_purpose::STANDARD;
        let salt = b64.encode(b"1lv4pdnw4fwq7notcxm0yy1k7q");
        let salted = b64.encode([7u8; 64]);
        let a = parse_add_scram(&format!(
            "SCRAM-SHA-512=[name=alice,salt=\"{salt}\",saltedpassword=\"{salted}\",iterations=8192]"
        ))
        .unwrap();
        let m = ScramMechanism::Sha512;
        assert_eq!(a.credential.salt, b"1lv4pdnw4fwq7notcxm0yy1k7q");
        assert_eq!(
            a.credential,
            ScramCredential::from_salted_password(
                m,
                b"1lv4pdnw4fwq7notcxm0yy1k7q",
                &[7u8; 64],
                8192
            )
        );
        // salt with a password: the salt is used, not a random one.
        let a =
            parse_add_scram(&format!("SCRAM-SHA-256=[name=bob,salt={salt},password=pw]")).unwrap();
        assert_eq!(a.credential.salt, b"1lv4pdnw4fwq7notcxm0yy1k7q");
    }

    #[test]
    fn bad_arguments_get_kafkas_messages() {
        let cases = [
            (
                "SCRAM-SHA-512",
                "Failed to find equals sign in SCRAM argument 'SCRAM-SHA-512'",
            ),
            (
                "SCRAM-SHA-1=[name=a,password=b]",
                "The add-scram mechanism SCRAM-SHA-1 is not supported.",
            ),
            (
                "SCRAM-SHA-512=name=a,password=b]",
                "Expected configuration string to start with [",
            ),
            (
                "SCRAM-SHA-512=[name=a,password=b",
                "Expected configuration string to end with ]",
            ),
            (
                "SCRAM-SHA-512=[name=a,password]",
                "No equals sign found in SCRAM component: password",
            ),
            (
                "SCRAM-SHA-512=[password=b]",
                "You must supply 'name' to add-scram",
            ),
            (
                "SCRAM-SHA-512=[name=a]",
                "You must supply one of 'password' or 'saltedpassword' to add-scram",
            ),
            (
                "SCRAM-SHA-512=[name=a,saltedpassword=YWJj]",
                "You must supply 'salt' with 'saltedpassword' to add-scram",
            ),
            (
                "SCRAM-SHA-512=[name=a,password=b,salt=%%%]",
                "Failed to decode given salt: %%%",
            ),
            (
                "SCRAM-SHA-512=[name=a,salt=YWJj,saltedpassword=!!]",
                "Failed to decode given saltedPassword: !!",
            ),
            (
                "SCRAM-SHA-512=[name=a,password=b,iterations=many]",
                "Failed to parse iterations count: many",
            ),
            (
                "SCRAM-SHA-512=[name=a,password=b,colour=blue,size=9]",
                "Unknown SCRAM configurations: colour, size",
            ),
            (
                "SCRAM-SHA-256=[name=a,password=b,iterations=4095]",
                "The 'iterations' value must be >= 4096 for add-scram using SCRAM_SHA_256",
            ),
            (
                "SCRAM-SHA-512=[name=a,password=b,iterations=16385]",
                "The 'iterations' value must be <= 16384 for add-scram using SCRAM_SHA_512",
            ),
        ];
        for (input, want) in cases {
            assert_eq!(parse_add_scram(input).unwrap_err(), want, "{input}");
        }
    }

    #[test]
    fn repeated_arguments_become_one_record_per_user_and_mechanism() {
        let creds = parse_all(&[
            "SCRAM-SHA-512=[name=admin,password=a]".to_string(),
            "SCRAM-SHA-256=[name=admin,password=a]".into(),
            "SCRAM-SHA-512=[name=bob,password=b]".into(),
        ])
        .unwrap();
        let text = to_file_text(&creds);
        let back: ScramCredentials = serde_json::from_str(&text).unwrap();
        assert_eq!(back, creds);
        let recs = records(&creds);
        assert_eq!(recs.len(), 3);
        let mut image = ScramCredentials::default();
        for r in &recs {
            assert!(image.apply(r));
        }
        assert_eq!(image, creds);
        assert!(parse_all(&["SCRAM-SHA-512=[name=x]".into()]).is_err());
    }
}
