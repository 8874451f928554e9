//! Kafka's `KafkaPrincipal`: a type and a name, written `Type:name` (`User:alice`). Every
//! connection has one: `User:ANONYMOUS` until it authenticates (and for ever on a PLAINTEXT
//! listener, as Kafka's `DefaultKafkaPrincipalBuilder` gives), then the SASL identity or the
//! name mapped from the TLS certificate's subject.
use std::fmt;

/// The principal type of every principal Kafka's default builder makes.
pub const USER_TYPE: &str = "User";

#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct KafkaPrincipal {
    pub principal_type: String,
    pub name: String,
}

impl KafkaPrincipal {
    pub fn user(name: impl Into<String>) -> KafkaPrincipal {
        KafkaPrincipal {
            principal_type: USER_TYPE.to_string(),
            name: name.into(),
        }
    }

    /// `User:ANONYMOUS`: an unauthenticated connection.
    pub fn anonymous() -> KafkaPrincipal {
        KafkaPrincipal::user("ANONYMOUS")
    }

    pub fn is_anonymous(&self) -> bool {
        self.principal_type == USER_TYPE && self.name == "ANONYMOUS"
    }

    /// Parses `Type:name` as Kafka's `SecurityUtils.parseKafkaPrincipal` does: split at the
    /// first colon; the name may itself contain colons. None without a colon or with an empty
    /// type.
    pub fn parse(text: &str) -> Option<KafkaPrincipal> {
        let (principal_type, name) = text.split_once(':')?;
        if principal_type.is_empty() {
            return None;
        }
        Some(KafkaPrincipal {
            principal_type: principal_type.to_string(),
            name: name.to_string(),
        })
    }
}

impl fmt::Display for KafkaPrincipal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.principal_type, self.name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_splits_at_the_first_colon() {
        let p = KafkaPrincipal::parse("User:CN=a:b").unwrap();
        assert_eq!(
            (p.principal_type.as_str(), p.name.as_str()),
            ("User", "CN=a:b")
        );
        assert_eq!(p.to_string(), "User:CN=a:b");
        assert!(KafkaPrincipal::parse("alice").is_none());
        assert!(KafkaPrincipal::parse(":alice").is_none());
        assert!(KafkaPrincipal::anonymous().is_anonymous());
        assert!(!KafkaPrincipal::user("alice").is_anonymous());
    }
}
