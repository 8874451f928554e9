//! The topic operations several handlers share: Kafka's topic-name rule and the error a
//! failed topic operation maps to (CreateTopics and Metadata auto-creation).
use crate::config::ConfigError;
use crate::controller::MetadataError;
use crate::error::ErrorCode;

/// Why a topic operation failed, with the Kafka error it maps to.
#[derive(Debug, Clone)]
pub struct TopicError {
    pub code: ErrorCode,
    pub message: String,
}

impl TopicError {
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        TopicError {
            code,
            message: message.into(),
        }
    }
}

impl From<MetadataError> for TopicError {
    fn from(e: MetadataError) -> Self {
        match e {
            MetadataError::TopicExists(t) => TopicError::new(
                ErrorCode::TOPIC_ALREADY_EXISTS,
                format!("Topic '{t}' already exists."),
            ),
            MetadataError::UnknownTopic(t) => TopicError::new(
                ErrorCode::UNKNOWN_TOPIC_OR_PARTITION,
                format!("Topic '{t}' does not exist."),
            ),
            other => TopicError::new(ErrorCode::KAFKA_STORAGE_ERROR, other.to_string()),
        }
    }
}

impl From<ConfigError> for TopicError {
    fn from(e: ConfigError) -> Self {
        TopicError::new(ErrorCode::INVALID_CONFIG, e.to_string())
    }
}

/// Kafka's topic name rule: 1-249 characters of `[a-zA-Z0-9._-]`, not `.` or `..`.
pub fn validate_topic_name(name: &str) -> Result<(), TopicError> {
    let bad = |m: String| Err(TopicError::new(ErrorCode::INVALID_TOPIC_EXCEPTION, m));
    if name.is_empty() {
        return bad("Topic name is illegal, it can't be empty".into());
    }
    if name == "." || name == ".." {
        return bad("Topic name cannot be \".\" or \"..\"".into());
    }
    if name.len() > 249 {
        return bad(format!(
            "Topic name is illegal, it can't be longer than 249 characters, topic name: {name}"
        ));
    }
    if !name
        .bytes()
        .all(|c| c.is_ascii_alphanumeric() || c == b'.' || c == b'_' || c == b'-')
    {
        return bad(format!(
            "Topic name {name} is illegal, it contains a character other than ASCII alphanumerics, '.', '_' and '-'"
        ));
    }
    Ok(())
}
