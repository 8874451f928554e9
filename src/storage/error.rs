//! Typed storage errors and their mapping to Kafka error codes; nothing in storage panics on
//! bad input or I/O failure.

use std::path::{Path, PathBuf};

use crate::error::ErrorCode;
use crate::protocol::records::batch::BatchError;

/// Why a storage operation failed.
#[derive(Debug)]
pub enum StorageError {
    /// An I/O call failed (`op` names it, `path` is the file or directory).
    Io {
        op: &'static str,
        path: PathBuf,
        source: std::io::Error,
    },
    /// A fetch or DeleteRecords offset outside `[log_start_offset, log_end_offset]`.
    OffsetOutOfRange {
        offset: i64,
        log_start_offset: i64,
        log_end_offset: i64,
    },
    /// A follower append whose offsets are below the log end offset or not increasing.
    OffsetOutOfOrder { offset: i64, log_end_offset: i64 },
    /// A batch that failed validation.
    InvalidRecord(BatchError),
    /// A single batch larger than a whole segment (Kafka's RecordBatchTooLargeException).
    RecordBatchTooLarge { size: usize, segment_bytes: u64 },
    /// A checkpoint, properties or metadata file that cannot be parsed.
    CorruptFile { path: PathBuf, reason: String },
    /// A directory name that is not `<topic>-<partition>`.
    InvalidPartitionDir(PathBuf),
    /// A caller bug the API refuses instead of panicking on.
    InvalidArgument(&'static str),
    /// meta.properties of a log dir disagrees with the others (cluster.id or node.id).
    InconsistentMetaProperties(String),
    /// The log dir went offline after an I/O error (Kafka's KafkaStorageException).
    LogDirOffline { log_dir: PathBuf },
    /// Every log dir is offline: nowhere to create a log.
    NoOnlineLogDir,
}

impl std::fmt::Display for StorageError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StorageError::Io { op, path, source } => write!(f, "{op} {}: {source}", path.display()),
            StorageError::OffsetOutOfRange {
                offset,
                log_start_offset,
                log_end_offset,
            } => write!(
                f,
                "offset {offset} is outside the log's range [{log_start_offset}, {log_end_offset}]"
            ),
            StorageError::OffsetOutOfOrder {
                offset,
                log_end_offset,
            } => write!(
                f,
                "append at offset {offset} does not continue the log end offset {log_end_offset}"
            ),
            StorageError::InvalidRecord(e) => write!(f, "{e}"),
            StorageError::RecordBatchTooLarge {
                size,
                segment_bytes,
            } => write!(
                f,
                "record batch of {size} bytes is larger than segment.bytes ({segment_bytes})"
            ),
            StorageError::CorruptFile { path, reason } => {
                write!(f, "corrupt file {}: {reason}", path.display())
            }
            StorageError::InvalidPartitionDir(path) => {
                write!(
                    f,
                    "{} is not a <topic>-<partition> directory",
                    path.display()
                )
            }
            StorageError::InvalidArgument(why) => write!(f, "invalid argument: {why}"),
            StorageError::InconsistentMetaProperties(why) => {
                write!(f, "inconsistent meta.properties: {why}")
            }
            StorageError::LogDirOffline { log_dir } => {
                write!(f, "log directory {} is offline", log_dir.display())
            }
            StorageError::NoOnlineLogDir => write!(f, "no log directory is online"),
        }
    }
}

impl std::error::Error for StorageError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            StorageError::Io { source, .. } => Some(source),
            StorageError::InvalidRecord(e) => Some(e),
            _ => None,
        }
    }
}

impl From<BatchError> for StorageError {
    fn from(e: BatchError) -> Self {
        StorageError::InvalidRecord(e)
    }
}

impl StorageError {
    /// The Kafka error code a client sees for this failure (the mapping below).
    pub fn code(&self) -> ErrorCode {
        ErrorCode::from(self)
    }
}

impl From<&StorageError> for ErrorCode {
    fn from(e: &StorageError) -> ErrorCode {
        match e {
            StorageError::Io { .. }
            | StorageError::CorruptFile { .. }
            | StorageError::InvalidPartitionDir(_)
            | StorageError::InconsistentMetaProperties(_)
            | StorageError::LogDirOffline { .. }
            | StorageError::NoOnlineLogDir => ErrorCode::KAFKA_STORAGE_ERROR,
            StorageError::OffsetOutOfRange { .. } => ErrorCode::OFFSET_OUT_OF_RANGE,
            // A follower append that does not continue the log: a replication bug, not the
            // client's (Kafka's UnexpectedAppendOffsetException is not an API error either).
            StorageError::OffsetOutOfOrder { .. } => ErrorCode::UNKNOWN_SERVER_ERROR,
            StorageError::InvalidRecord(e) => ErrorCode::from(e),
            // Kafka's RecordBatchTooLargeException: one batch larger than `segment.bytes`.
            StorageError::RecordBatchTooLarge { .. } => ErrorCode::RECORD_LIST_TOO_LARGE,
            StorageError::InvalidArgument(_) => ErrorCode::INVALID_REQUEST,
        }
    }
}

pub type Result<T> = std::result::Result<T, StorageError>;

/// Attaches the operation and path to an `io::Error`.
pub(crate) trait IoContext<T> {
    fn ctx(self, op: &'static str, path: &Path) -> Result<T>;
}

impl<T> IoContext<T> for std::io::Result<T> {
    fn ctx(self, op: &'static str, path: &Path) -> Result<T> {
        self.map_err(|source| StorageError::Io {
            op,
            path: path.to_path_buf(),
            source,
        })
    }
}
