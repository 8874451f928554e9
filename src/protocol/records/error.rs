//! `RecordError`: why a record batch's records could not be decoded, decompressed or built.
//! Shared by the record codecs of this folder; maps to Kafka's CORRUPT_MESSAGE, INVALID_RECORD
//! and UNSUPPORTED_COMPRESSION_TYPE error codes (see [`RecordError::error_code`]).

use std::fmt;

use crate::error::ErrorCode;
use crate::protocol::codec::DecodeError;

/// Why records could not be decoded (Kafka's `CorruptRecordException`,
/// `InvalidRecordException`, `UnsupportedCompressionTypeException`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RecordError {
    /// The bytes are not a well-formed batch or record (truncated, bad length, bad varint).
    Corrupt(&'static str),
    /// A primitive could not be read off the record bytes.
    Decode(DecodeError),
    /// Structurally readable but not a valid record (Kafka's `InvalidRecordException`).
    InvalidRecord(&'static str),
    /// A magic byte other than 2 (Strata only reads record batches, Kafka 0.11+).
    UnsupportedMagic(i8),
    /// Compression attribute bits 5, 6 or 7, which no Kafka version defines.
    UnsupportedCompression(u8),
    /// The compressed payload could not be decompressed by its codec.
    Decompression { codec: &'static str },
    /// Decompressing would produce more than the allowed number of bytes.
    DecompressedTooLarge { max_bytes: usize },
}

impl RecordError {
    /// The Kafka error code a produce or fetch path answers with for this error.
    pub fn error_code(&self) -> ErrorCode {
        ErrorCode::from(self)
    }
}

impl From<&RecordError> for ErrorCode {
    fn from(e: &RecordError) -> ErrorCode {
        match e {
            RecordError::UnsupportedCompression(_) => ErrorCode::UNSUPPORTED_COMPRESSION_TYPE,
            RecordError::InvalidRecord(_) => ErrorCode::INVALID_RECORD,
            RecordError::UnsupportedMagic(_) => ErrorCode::UNSUPPORTED_FOR_MESSAGE_FORMAT,
            RecordError::Corrupt(_)
            | RecordError::Decode(_)
            | RecordError::Decompression { .. }
            | RecordError::DecompressedTooLarge { .. } => ErrorCode::CORRUPT_MESSAGE,
        }
    }
}

impl From<DecodeError> for RecordError {
    fn from(e: DecodeError) -> Self {
        RecordError::Decode(e)
    }
}

impl fmt::Display for RecordError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RecordError::Corrupt(why) => write!(f, "corrupt record batch: {why}"),
            RecordError::Decode(e) => write!(f, "corrupt record: {e:?}"),
            RecordError::InvalidRecord(why) => write!(f, "invalid record: {why}"),
            RecordError::UnsupportedMagic(m) => write!(f, "unsupported record batch magic {m}"),
            RecordError::UnsupportedCompression(c) => write!(f, "unsupported compression id {c}"),
            RecordError::Decompression { codec } => write!(f, "{codec} decompression failed"),
            RecordError::DecompressedTooLarge { max_bytes } => {
                write!(f, "decompressed records exceed {max_bytes} bytes")
            }
        }
    }
}

impl std::error::Error for RecordError {}
