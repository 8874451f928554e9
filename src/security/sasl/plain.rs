//! SASL/PLAIN (RFC 4616) as Kafka's `PlainSaslServer` with its default callback handler
//! checks it: `authzid NUL authcid NUL password`, the password compared with the listener's
//! `user_<name>` JAAS option, and Kafka's messages for each refusal.
use super::AuthError;

/// Checks one PLAIN message; the user name on success.
pub fn authenticate(
    message: &[u8],
    password_of: &dyn Fn(&str) -> Option<String>,
    claimed_user: &mut Option<String>,
) -> Result<String, AuthError> {
    let text = String::from_utf8_lossy(message);
    let tokens: Vec<&str> = text.split('\u{0}').collect();
    if tokens.len() != 3 {
        return Err(AuthError::Generic(format!(
            "Invalid SASL/PLAIN response: expected 3 tokens, got {}",
            tokens.len()
        )));
    }
    let (authzid, user, password) = (tokens[0], tokens[1], tokens[2]);
    if user.is_empty() {
        return Err(AuthError::Explicit(
            "Authentication failed: username not specified".into(),
        ));
    }
    *claimed_user = Some(user.to_string());
    if password.is_empty() {
        return Err(AuthError::Explicit(
            "Authentication failed: password not specified".into(),
        ));
    }
    let ok = password_of(user)
        .is_some_and(|expected| super::constant_time_eq(expected.as_bytes(), password.as_bytes()));
    if !ok {
        return Err(AuthError::Explicit(
            "Authentication failed: Invalid username or password".into(),
        ));
    }
    if !authzid.is_empty() && authzid != user {
        return Err(AuthError::Explicit(
            "Authentication failed: Client requested an authorization id that is different \
             from username"
                .into(),
        ));
    }
    Ok(user.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn users(u: &str) -> Option<String> {
        (u == "alice").then(|| "alice-secret".to_string())
    }

    #[test]
    fn plain_checks_as_kafka_does() {
        let mut c = None;
        assert_eq!(
            authenticate(b"\0alice\0alice-secret", &users, &mut c).unwrap(),
            "alice"
        );
        assert_eq!(
            authenticate(b"alice\0alice\0alice-secret", &users, &mut c).unwrap(),
            "alice"
        );
        let msg = |m: &[u8]| authenticate(m, &users, &mut None).unwrap_err().to_string();
        assert_eq!(
            msg(b"\0alice\0wrong"),
            "Authentication failed: Invalid username or password"
        );
        assert_eq!(
            msg(b"\0bob\0alice-secret"),
            "Authentication failed: Invalid username or password"
        );
        assert_eq!(
            msg(b"\0\0x"),
            "Authentication failed: username not specified"
        );
        assert_eq!(
            msg(b"\0alice\0"),
            "Authentication failed: password not specified"
        );
        assert!(msg(b"bob\0alice\0alice-secret").contains("authorization id"));
        assert_eq!(
            msg(b"alice"),
            "Invalid SASL/PLAIN response: expected 3 tokens, got 1"
        );
    }
}
