//! Kafka's error codes (`org.apache.kafka.common.protocol.Errors`) and the single mapping from
//! every subsystem's typed error to them.

/// A Kafka protocol error code. Values are Kafka's own and never change.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(i16)]
#[allow(non_camel_case_types)]
pub enum ErrorCode {
    UNKNOWN_SERVER_ERROR = -1,
    NONE = 0,
    OFFSET_OUT_OF_RANGE = 1,
    CORRUPT_MESSAGE = 2,
    UNKNOWN_TOPIC_OR_PARTITION = 3,
    INVALID_FETCH_SIZE = 4,
    LEADER_NOT_AVAILABLE = 5,
    NOT_LEADER_OR_FOLLOWER = 6,
    REQUEST_TIMED_OUT = 7,
    BROKER_NOT_AVAILABLE = 8,
    REPLICA_NOT_AVAILABLE = 9,
    MESSAGE_TOO_LARGE = 10,
    STALE_CONTROLLER_EPOCH = 11,
    OFFSET_METADATA_TOO_LARGE = 12,
    NETWORK_EXCEPTION = 13,
    COORDINATOR_LOAD_IN_PROGRESS = 14,
    COORDINATOR_NOT_AVAILABLE = 15,
    NOT_COORDINATOR = 16,
    INVALID_TOPIC_EXCEPTION = 17,
    RECORD_LIST_TOO_LARGE = 18,
    NOT_ENOUGH_REPLICAS = 19,
    NOT_ENOUGH_REPLICAS_AFTER_APPEND = 20,
    INVALID_REQUIRED_ACKS = 21,
    ILLEGAL_GENERATION = 22,
    INCONSISTENT_GROUP_PROTOCOL = 23,
    INVALID_GROUP_ID = 24,
    UNKNOWN_MEMBER_ID = 25,
    INVALID_SESSION_TIMEOUT = 26,
    REBALANCE_IN_PROGRESS = 27,
    INVALID_COMMIT_OFFSET_SIZE = 28,
    TOPIC_AUTHORIZATION_FAILED = 29,
    GROUP_AUTHORIZATION_FAILED = 30,
    CLUSTER_AUTHORIZATION_FAILED = 31,
    INVALID_TIMESTAMP = 32,
    UNSUPPORTED_SASL_MECHANISM = 33,
    ILLEGAL_SASL_STATE = 34,
    UNSUPPORTED_VERSION = 35,
    TOPIC_ALREADY_EXISTS = 36,
    INVALID_PARTITIONS = 37,
    INVALID_REPLICATION_FACTOR = 38,
    INVALID_REPLICA_ASSIGNMENT = 39,
    INVALID_CONFIG = 40,
    NOT_CONTROLLER = 41,
    INVALID_REQUEST = 42,
    UNSUPPORTED_FOR_MESSAGE_FORMAT = 43,
    POLICY_VIOLATION = 44,
    OUT_OF_ORDER_SEQUENCE_NUMBER = 45,
    DUPLICATE_SEQUENCE_NUMBER = 46,
    INVALID_PRODUCER_EPOCH = 47,
    INVALID_TXN_STATE = 48,
    INVALID_PRODUCER_ID_MAPPING = 49,
    INVALID_TRANSACTION_TIMEOUT = 50,
    CONCURRENT_TRANSACTIONS = 51,
    TRANSACTION_COORDINATOR_FENCED = 52,
    TRANSACTIONAL_ID_AUTHORIZATION_FAILED = 53,
    SECURITY_DISABLED = 54,
    OPERATION_NOT_ATTEMPTED = 55,
    KAFKA_STORAGE_ERROR = 56,
    LOG_DIR_NOT_FOUND = 57,
    SASL_AUTHENTICATION_FAILED = 58,
    UNKNOWN_PRODUCER_ID = 59,
    REASSIGNMENT_IN_PROGRESS = 60,
    DELEGATION_TOKEN_AUTH_DISABLED = 61,
    DELEGATION_TOKEN_NOT_FOUND = 62,
    DELEGATION_TOKEN_OWNER_MISMATCH = 63,
    DELEGATION_TOKEN_REQUEST_NOT_ALLOWED = 64,
    DELEGATION_TOKEN_AUTHORIZATION_FAILED = 65,
    DELEGATION_TOKEN_EXPIRED = 66,
    INVALID_PRINCIPAL_TYPE = 67,
    NON_EMPTY_GROUP = 68,
    GROUP_ID_NOT_FOUND = 69,
    FETCH_SESSION_ID_NOT_FOUND = 70,
    INVALID_FETCH_SESSION_EPOCH = 71,
    LISTENER_NOT_FOUND = 72,
    TOPIC_DELETION_DISABLED = 73,
    FENCED_LEADER_EPOCH = 74,
    UNKNOWN_LEADER_EPOCH = 75,
    UNSUPPORTED_COMPRESSION_TYPE = 76,
    STALE_BROKER_EPOCH = 77,
    OFFSET_NOT_AVAILABLE = 78,
    MEMBER_ID_REQUIRED = 79,
    PREFERRED_LEADER_NOT_AVAILABLE = 80,
    GROUP_MAX_SIZE_REACHED = 81,
    FENCED_INSTANCE_ID = 82,
    ELIGIBLE_LEADERS_NOT_AVAILABLE = 83,
    ELECTION_NOT_NEEDED = 84,
    NO_REASSIGNMENT_IN_PROGRESS = 85,
    GROUP_SUBSCRIBED_TO_TOPIC = 86,
    INVALID_RECORD = 87,
    UNSTABLE_OFFSET_COMMIT = 88,
    THROTTLING_QUOTA_EXCEEDED = 89,
    PRODUCER_FENCED = 90,
    RESOURCE_NOT_FOUND = 91,
    DUPLICATE_RESOURCE = 92,
    UNACCEPTABLE_CREDENTIAL = 93,
    INCONSISTENT_VOTER_SET = 94,
    INVALID_UPDATE_VERSION = 95,
    FEATURE_UPDATE_FAILED = 96,
    PRINCIPAL_DESERIALIZATION_FAILURE = 97,
    SNAPSHOT_NOT_FOUND = 98,
    POSITION_OUT_OF_RANGE = 99,
    UNKNOWN_TOPIC_ID = 100,
    DUPLICATE_BROKER_REGISTRATION = 101,
    BROKER_ID_NOT_REGISTERED = 102,
    INCONSISTENT_TOPIC_ID = 103,
    INCONSISTENT_CLUSTER_ID = 104,
    TRANSACTIONAL_ID_NOT_FOUND = 105,
    FETCH_SESSION_TOPIC_ID_ERROR = 106,
    INELIGIBLE_REPLICA = 107,
    NEW_LEADER_ELECTED = 108,
    OFFSET_MOVED_TO_TIERED_STORAGE = 109,
    FENCED_MEMBER_EPOCH = 110,
    UNRELEASED_INSTANCE_ID = 111,
    UNSUPPORTED_ASSIGNOR = 112,
    STALE_MEMBER_EPOCH = 113,
    MISMATCHED_ENDPOINT_TYPE = 114,
    UNSUPPORTED_ENDPOINT_TYPE = 115,
    UNKNOWN_CONTROLLER_ID = 116,
    UNKNOWN_SUBSCRIPTION_ID = 117,
    TELEMETRY_TOO_LARGE = 118,
    INVALID_REGISTRATION = 119,
    TRANSACTION_ABORTABLE = 120,
    INVALID_RECORD_STATE = 121,
    SHARE_SESSION_NOT_FOUND = 122,
    INVALID_SHARE_SESSION_EPOCH = 123,
    FENCED_STATE_EPOCH = 124,
    INVALID_VOTER_KEY = 125,
    DUPLICATE_VOTER = 126,
    VOTER_NOT_FOUND = 127,
    INVALID_REGULAR_EXPRESSION = 128,
    REBOOTSTRAP_REQUIRED = 129,
    STREAMS_INVALID_TOPOLOGY = 130,
    STREAMS_INVALID_TOPOLOGY_EPOCH = 131,
    STREAMS_TOPOLOGY_FENCED = 132,
    SHARE_SESSION_LIMIT_REACHED = 133,
}

impl ErrorCode {
    pub fn code(self) -> i16 {
        self as i16
    }

    pub fn is_ok(self) -> bool {
        self == ErrorCode::NONE
    }

    /// The code of a response read off the wire (a peer broker's or the controller's);
    /// a code this build does not know is UNKNOWN_SERVER_ERROR.
    pub fn from_code(code: i16) -> ErrorCode {
        usize::try_from(code as i32 + 1)
            .ok()
            .and_then(|i| ALL_CODES.get(i).copied())
            .filter(|e| e.code() == code)
            .unwrap_or(ErrorCode::UNKNOWN_SERVER_ERROR)
    }

    /// The code's Kafka name (as Kafka's `Errors.name()`), for `error_message` fields where
    /// nothing more specific is known.
    pub fn message(self) -> String {
        format!("{self:?}")
    }
}

/// Every code in order of value (-1 first), for [`ErrorCode::from_code`].
#[rustfmt::skip]
const ALL_CODES: &[ErrorCode] = {
    use ErrorCode::*;
    &[
         UNKNOWN_SERVER_ERROR, NONE, OFFSET_OUT_OF_RANGE, CORRUPT_MESSAGE,
         UNKNOWN_TOPIC_OR_PARTITION, INVALID_FETCH_SIZE, LEADER_NOT_AVAILABLE,
         NOT_LEADER_OR_FOLLOWER, REQUEST_TIMED_OUT, BROKER_NOT_AVAILABLE, REPLICA_NOT_AVAILABLE,
         MESSAGE_TOO_LARGE, STALE_CONTROLLER_EPOCH, OFFSET_METADATA_TOO_LARGE, NETWORK_EXCEPTION,
         COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR,
         INVALID_TOPIC_EXCEPTION, RECORD_LIST_TOO_LARGE, NOT_ENOUGH_REPLICAS,
         NOT_ENOUGH_REPLICAS_AFTER_APPEND, INVALID_REQUIRED_ACKS, ILLEGAL_GENERATION,
         INCONSISTENT_GROUP_PROTOCOL, INVALID_GROUP_ID, UNKNOWN_MEMBER_ID, INVALID_SESSION_TIMEOUT,
         REBALANCE_IN_PROGRESS, INVALID_COMMIT_OFFSET_SIZE, TOPIC_AUTHORIZATION_FAILED,
         GROUP_AUTHORIZATION_FAILED, CLUSTER_AUTHORIZATION_FAILED, INVALID_TIMESTAMP,
         UNSUPPORTED_SASL_MECHANISM, ILLEGAL_SASL_STATE, UNSUPPORTED_VERSION, TOPIC_ALREADY_EXISTS,
         INVALID_PARTITIONS, INVALID_REPLICATION_FACTOR, INVALID_REPLICA_ASSIGNMENT, INVALID_CONFIG,
         NOT_CONTROLLER, INVALID_REQUEST, UNSUPPORTED_FOR_MESSAGE_FORMAT, POLICY_VIOLATION,
         OUT_OF_ORDER_SEQUENCE_NUMBER, DUPLICATE_SEQUENCE_NUMBER, INVALID_PRODUCER_EPOCH,
         INVALID_TXN_STATE, INVALID_PRODUCER_ID_MAPPING, INVALID_TRANSACTION_TIMEOUT,
         CONCURRENT_TRANSACTIONS, TRANSACTION_COORDINATOR_FENCED,
         TRANSACTIONAL_ID_AUTHORIZATION_FAILED, SECURITY_DISABLED, OPERATION_NOT_ATTEMPTED,
         KAFKA_STORAGE_ERROR, LOG_DIR_NOT_FOUND, SASL_AUTHENTICATION_FAILED, UNKNOWN_PRODUCER_ID,
         REASSIGNMENT_IN_PROGRESS, DELEGATION_TOKEN_AUTH_DISABLED, DELEGATION_TOKEN_NOT_FOUND,
         DELEGATION_TOKEN_OWNER_MISMATCH, DELEGATION_TOKEN_REQUEST_NOT_ALLOWED,
         DELEGATION_TOKEN_AUTHORIZATION_FAILED, DELEGATION_TOKEN_EXPIRED, INVALID_PRINCIPAL_TYPE,
         NON_EMPTY_GROUP, GROUP_ID_NOT_FOUND, FETCH_SESSION_ID_NOT_FOUND,
         INVALID_FETCH_SESSION_EPOCH, LISTENER_NOT_FOUND, TOPIC_DELETION_DISABLED,
         FENCED_LEADER_EPOCH, UNKNOWN_LEADER_EPOCH, UNSUPPORTED_COMPRESSION_TYPE, STALE_BROKER_EPOCH,
         OFFSET_NOT_AVAILABLE, MEMBER_ID_REQUIRED, PREFERRED_LEADER_NOT_AVAILABLE,
         GROUP_MAX_SIZE_REACHED, FENCED_INSTANCE_ID, ELIGIBLE_LEADERS_NOT_AVAILABLE,
         ELECTION_NOT_NEEDED, NO_REASSIGNMENT_IN_PROGRESS, GROUP_SUBSCRIBED_TO_TOPIC, INVALID_RECORD,
         UNSTABLE_OFFSET_COMMIT, THROTTLING_QUOTA_EXCEEDED, PRODUCER_FENCED, RESOURCE_NOT_FOUND,
         DUPLICATE_RESOURCE, UNACCEPTABLE_CREDENTIAL, INCONSISTENT_VOTER_SET, INVALID_UPDATE_VERSION,
         FEATURE_UPDATE_FAILED, PRINCIPAL_DESERIALIZATION_FAILURE, SNAPSHOT_NOT_FOUND,
         POSITION_OUT_OF_RANGE, UNKNOWN_TOPIC_ID, DUPLICATE_BROKER_REGISTRATION,
         BROKER_ID_NOT_REGISTERED, INCONSISTENT_TOPIC_ID, INCONSISTENT_CLUSTER_ID,
         TRANSACTIONAL_ID_NOT_FOUND, FETCH_SESSION_TOPIC_ID_ERROR, INELIGIBLE_REPLICA,
         NEW_LEADER_ELECTED, OFFSET_MOVED_TO_TIERED_STORAGE, FENCED_MEMBER_EPOCH,
         UNRELEASED_INSTANCE_ID, UNSUPPORTED_ASSIGNOR, STALE_MEMBER_EPOCH, MISMATCHED_ENDPOINT_TYPE,
         UNSUPPORTED_ENDPOINT_TYPE, UNKNOWN_CONTROLLER_ID, UNKNOWN_SUBSCRIPTION_ID,
         TELEMETRY_TOO_LARGE, INVALID_REGISTRATION, TRANSACTION_ABORTABLE, INVALID_RECORD_STATE,
         SHARE_SESSION_NOT_FOUND, INVALID_SHARE_SESSION_EPOCH, FENCED_STATE_EPOCH, INVALID_VOTER_KEY,
         DUPLICATE_VOTER, VOTER_NOT_FOUND, INVALID_REGULAR_EXPRESSION, REBOOTSTRAP_REQUIRED,
         STREAMS_INVALID_TOPOLOGY, STREAMS_INVALID_TOPOLOGY_EPOCH, STREAMS_TOPOLOGY_FENCED,
         SHARE_SESSION_LIMIT_REACHED,
    ]
};

impl From<ErrorCode> for i16 {
    fn from(e: ErrorCode) -> i16 {
        e as i16
    }
}

// The one mapping from every subsystem's typed error to Kafka's codes: one `From` per error
// type, here and nowhere else (each type's `code()` only calls it). A nested error maps
// through its own type's mapping, so a variant wrapping another never answers differently.

use crate::config::ConfigError;
use crate::controller::quorum::VoterChangeError;
use crate::controller::service::ControllerError;
use crate::coordinator::runtime::CoordinatorLogError;
use crate::coordinator::txn::TxnError;
use crate::coordinator::CoordinatorError;
use crate::protocol::records::batch::BatchError;
use crate::protocol::records::RecordError;
use crate::replica::producer_state::ProducerStateError;
use crate::replica::{AlterPartitionError, PartitionError};
use crate::security::quotas::QuotaExceeded;
use crate::storage::StorageError;

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

impl From<&BatchError> for ErrorCode {
    fn from(e: &BatchError) -> ErrorCode {
        match e {
            BatchError::InvalidMagic(_) => ErrorCode::UNSUPPORTED_FOR_MESSAGE_FORMAT,
            BatchError::MessageTooLarge { .. } => ErrorCode::MESSAGE_TOO_LARGE,
            BatchError::InvalidRecord(_) => ErrorCode::INVALID_RECORD,
            BatchError::RecordErrors { code, .. } => *code,
            BatchError::Truncated { .. }
            | BatchError::CorruptMessage(_)
            | BatchError::Decompression(_)
            | BatchError::Empty => ErrorCode::CORRUPT_MESSAGE,
        }
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

impl From<&ProducerStateError> for ErrorCode {
    fn from(e: &ProducerStateError) -> ErrorCode {
        match e {
            ProducerStateError::InvalidProducerEpoch { .. } => ErrorCode::INVALID_PRODUCER_EPOCH,
            ProducerStateError::OutOfOrderSequence { .. } => {
                ErrorCode::OUT_OF_ORDER_SEQUENCE_NUMBER
            }
            ProducerStateError::CoordinatorFenced { .. } => {
                ErrorCode::TRANSACTION_COORDINATOR_FENCED
            }
            ProducerStateError::TransactionNotVerified => ErrorCode::INVALID_TXN_STATE,
        }
    }
}

impl From<&PartitionError> for ErrorCode {
    fn from(e: &PartitionError) -> ErrorCode {
        match e {
            PartitionError::Record(e) => ErrorCode::from(e),
            PartitionError::MessageTooLarge { .. } => ErrorCode::MESSAGE_TOO_LARGE,
            PartitionError::Producer(e) => ErrorCode::from(e),
            // Each storage error keeps its own code: only an I/O-class failure is
            // KAFKA_STORAGE_ERROR (a batch over `segment.bytes` is RECORD_LIST_TOO_LARGE).
            PartitionError::Storage(e) => ErrorCode::from(e),
            PartitionError::OffsetOutOfRange { .. } => ErrorCode::OFFSET_OUT_OF_RANGE,
            PartitionError::FencedLeaderEpoch { .. } => ErrorCode::FENCED_LEADER_EPOCH,
            PartitionError::UnknownLeaderEpoch { .. } => ErrorCode::UNKNOWN_LEADER_EPOCH,
            PartitionError::NotLeaderOrFollower => ErrorCode::NOT_LEADER_OR_FOLLOWER,
            PartitionError::NotEnoughReplicas { .. } => ErrorCode::NOT_ENOUGH_REPLICAS,
            PartitionError::NotEnoughReplicasAfterAppend { .. } => {
                ErrorCode::NOT_ENOUGH_REPLICAS_AFTER_APPEND
            }
        }
    }
}

impl From<&CoordinatorLogError> for ErrorCode {
    /// A failed append to a coordinator's internal partition, as both of Kafka's coordinators
    /// answer it (`appendGroupMetadataErrorToResponseError`, `appendTransactionToLog`).
    fn from(e: &CoordinatorLogError) -> ErrorCode {
        match e {
            CoordinatorLogError::NotAvailable => ErrorCode::COORDINATOR_NOT_AVAILABLE,
            CoordinatorLogError::NotLeader | CoordinatorLogError::Storage(_) => {
                ErrorCode::NOT_COORDINATOR
            }
            CoordinatorLogError::RecordTooLarge => ErrorCode::UNKNOWN_SERVER_ERROR,
        }
    }
}

impl From<&CoordinatorError> for ErrorCode {
    fn from(e: &CoordinatorError) -> ErrorCode {
        use CoordinatorError::*;
        match e {
            InvalidGroupId => ErrorCode::INVALID_GROUP_ID,
            UnknownMemberId => ErrorCode::UNKNOWN_MEMBER_ID,
            IllegalGeneration => ErrorCode::ILLEGAL_GENERATION,
            RebalanceInProgress => ErrorCode::REBALANCE_IN_PROGRESS,
            InconsistentGroupProtocol => ErrorCode::INCONSISTENT_GROUP_PROTOCOL,
            InvalidSessionTimeout => ErrorCode::INVALID_SESSION_TIMEOUT,
            MemberIdRequired => ErrorCode::MEMBER_ID_REQUIRED,
            GroupMaxSizeReached => ErrorCode::GROUP_MAX_SIZE_REACHED,
            FencedInstanceId => ErrorCode::FENCED_INSTANCE_ID,
            CoordinatorNotAvailable => ErrorCode::COORDINATOR_NOT_AVAILABLE,
            NotCoordinator => ErrorCode::NOT_COORDINATOR,
            GroupIdNotFound | GroupNotFound(_) => ErrorCode::GROUP_ID_NOT_FOUND,
            NonEmptyGroup => ErrorCode::NON_EMPTY_GROUP,
            GroupSubscribedToTopic => ErrorCode::GROUP_SUBSCRIBED_TO_TOPIC,
            OffsetMetadataTooLarge => ErrorCode::OFFSET_METADATA_TOO_LARGE,
            FencedMemberEpoch => ErrorCode::FENCED_MEMBER_EPOCH,
            StaleMemberEpoch => ErrorCode::STALE_MEMBER_EPOCH,
            UnreleasedInstanceId => ErrorCode::UNRELEASED_INSTANCE_ID,
            UnsupportedAssignor => ErrorCode::UNSUPPORTED_ASSIGNOR,
            InvalidRegularExpression => ErrorCode::INVALID_REGULAR_EXPRESSION,
            InvalidRequest(_) => ErrorCode::INVALID_REQUEST,
            UnsupportedVersion => ErrorCode::UNSUPPORTED_VERSION,
            Log(e) => ErrorCode::from(e),
        }
    }
}

impl From<&TxnError> for ErrorCode {
    fn from(e: &TxnError) -> ErrorCode {
        use TxnError::*;
        match e {
            InvalidRequest => ErrorCode::INVALID_REQUEST,
            InvalidTransactionTimeout => ErrorCode::INVALID_TRANSACTION_TIMEOUT,
            ConcurrentTransactions => ErrorCode::CONCURRENT_TRANSACTIONS,
            ProducerFenced => ErrorCode::PRODUCER_FENCED,
            InvalidProducerIdMapping => ErrorCode::INVALID_PRODUCER_ID_MAPPING,
            InvalidTxnState => ErrorCode::INVALID_TXN_STATE,
            NotCoordinator => ErrorCode::NOT_COORDINATOR,
            CoordinatorLoadInProgress => ErrorCode::COORDINATOR_LOAD_IN_PROGRESS,
            TransactionalIdNotFound => ErrorCode::TRANSACTIONAL_ID_NOT_FOUND,
            UnknownTopicOrPartition => ErrorCode::UNKNOWN_TOPIC_OR_PARTITION,
            OperationNotAttempted => ErrorCode::OPERATION_NOT_ATTEMPTED,
            TransactionAbortable => ErrorCode::TRANSACTION_ABORTABLE,
            EpochOverflow => ErrorCode::UNKNOWN_SERVER_ERROR,
            Log(e) => ErrorCode::from(e),
        }
    }
}

impl From<AlterPartitionError> for ErrorCode {
    fn from(e: AlterPartitionError) -> ErrorCode {
        match e {
            AlterPartitionError::FencedLeaderEpoch => ErrorCode::FENCED_LEADER_EPOCH,
            AlterPartitionError::InvalidUpdateVersion => ErrorCode::INVALID_UPDATE_VERSION,
            AlterPartitionError::IneligibleReplica => ErrorCode::INELIGIBLE_REPLICA,
            AlterPartitionError::UnknownTopicOrPartition => ErrorCode::UNKNOWN_TOPIC_OR_PARTITION,
            AlterPartitionError::NotLeaderOrFollower => ErrorCode::NOT_LEADER_OR_FOLLOWER,
            AlterPartitionError::InvalidRequest => ErrorCode::INVALID_REQUEST,
        }
    }
}

impl From<&ControllerError> for ErrorCode {
    fn from(e: &ControllerError) -> ErrorCode {
        match e {
            // Both are retriable for the sender: it finds the active controller and retries.
            ControllerError::NotController | ControllerError::Quorum(_) => {
                ErrorCode::NOT_CONTROLLER
            }
            ControllerError::TimedOut => ErrorCode::REQUEST_TIMED_OUT,
        }
    }
}

impl From<&VoterChangeError> for ErrorCode {
    /// AddRaftVoter / RemoveRaftVoter, as Kafka's `AddVoterHandler` / `RemoveVoterHandler`.
    fn from(e: &VoterChangeError) -> ErrorCode {
        match e {
            VoterChangeError::NotLeader { .. } | VoterChangeError::Shutdown => {
                ErrorCode::NOT_LEADER_OR_FOLLOWER
            }
            VoterChangeError::DuplicateVoter => ErrorCode::DUPLICATE_VOTER,
            VoterChangeError::VoterNotFound => ErrorCode::VOTER_NOT_FOUND,
            VoterChangeError::ChangeInProgress | VoterChangeError::TimedOut => {
                ErrorCode::REQUEST_TIMED_OUT
            }
            VoterChangeError::Other(_) => ErrorCode::UNKNOWN_SERVER_ERROR,
        }
    }
}

impl From<&ConfigError> for ErrorCode {
    /// What AlterConfigs / CreateTopics answer for a config Strata refuses.
    fn from(_: &ConfigError) -> ErrorCode {
        ErrorCode::INVALID_CONFIG
    }
}

impl From<&QuotaExceeded> for ErrorCode {
    /// A strict controller mutation quota refused a topic (KIP-599).
    fn from(_: &QuotaExceeded) -> ErrorCode {
        ErrorCode::THROTTLING_QUOTA_EXCEEDED
    }
}

#[cfg(test)]
mod code_tests {
    use super::ErrorCode;

    #[test]
    fn error_codes_are_contiguous() {
        for code in -1..=128 {
            assert_eq!(ErrorCode::from_code(code).code(), code);
        }
        assert_eq!(ErrorCode::from_code(500), ErrorCode::UNKNOWN_SERVER_ERROR);
        assert_eq!(ErrorCode::from_code(-2), ErrorCode::UNKNOWN_SERVER_ERROR);
    }

    /// Every variant of every subsystem error, with the code a client reads for it.
    #[test]
    fn one_table_for_every_subsystem_error() {
        use super::*;
        use std::path::PathBuf;
        use ErrorCode as E;
        let io = || StorageError::Io {
            op: "write",
            path: PathBuf::from("/x"),
            source: std::io::Error::other("disk"),
        };
        let batch = [
            (
                BatchError::Truncated {
                    needed: 61,
                    available: 3,
                },
                E::CORRUPT_MESSAGE,
            ),
            (
                BatchError::InvalidMagic(1),
                E::UNSUPPORTED_FOR_MESSAGE_FORMAT,
            ),
            (BatchError::CorruptMessage("crc"), E::CORRUPT_MESSAGE),
            (
                BatchError::MessageTooLarge { size: 2, max: 1 },
                E::MESSAGE_TOO_LARGE,
            ),
            (BatchError::InvalidRecord("key"), E::INVALID_RECORD),
            (BatchError::Empty, E::CORRUPT_MESSAGE),
        ];
        for (e, want) in &batch {
            assert_eq!(E::from(e), *want, "{e}");
            // Wrapped, a batch error answers the same.
            assert_eq!(E::from(&StorageError::InvalidRecord(e.clone())), *want);
            assert_eq!(E::from(&PartitionError::Record(e.clone())), *want);
        }
        let record = [
            (RecordError::Corrupt("len"), E::CORRUPT_MESSAGE),
            (RecordError::InvalidRecord("key"), E::INVALID_RECORD),
            (
                RecordError::UnsupportedMagic(0),
                E::UNSUPPORTED_FOR_MESSAGE_FORMAT,
            ),
            (
                RecordError::UnsupportedCompression(6),
                E::UNSUPPORTED_COMPRESSION_TYPE,
            ),
            (
                RecordError::Decompression { codec: "gzip" },
                E::CORRUPT_MESSAGE,
            ),
            (
                RecordError::DecompressedTooLarge { max_bytes: 1 },
                E::CORRUPT_MESSAGE,
            ),
        ];
        for (e, want) in &record {
            assert_eq!(E::from(e), *want, "{e}");
        }
        let storage = [
            (io(), E::KAFKA_STORAGE_ERROR),
            (
                StorageError::OffsetOutOfRange {
                    offset: 9,
                    log_start_offset: 0,
                    log_end_offset: 1,
                },
                E::OFFSET_OUT_OF_RANGE,
            ),
            (
                StorageError::OffsetOutOfOrder {
                    offset: 0,
                    log_end_offset: 1,
                },
                E::UNKNOWN_SERVER_ERROR,
            ),
            (
                StorageError::RecordBatchTooLarge {
                    size: 2,
                    segment_bytes: 1,
                },
                E::RECORD_LIST_TOO_LARGE,
            ),
            (
                StorageError::CorruptFile {
                    path: PathBuf::from("/x"),
                    reason: "r".into(),
                },
                E::KAFKA_STORAGE_ERROR,
            ),
            (
                StorageError::InvalidPartitionDir(PathBuf::from("/x")),
                E::KAFKA_STORAGE_ERROR,
            ),
            (
                StorageError::InvalidArgument("negative"),
                E::INVALID_REQUEST,
            ),
            (
                StorageError::InconsistentMetaProperties("id".into()),
                E::KAFKA_STORAGE_ERROR,
            ),
            (
                StorageError::LogDirOffline {
                    log_dir: PathBuf::from("/x"),
                },
                E::KAFKA_STORAGE_ERROR,
            ),
            (StorageError::NoOnlineLogDir, E::KAFKA_STORAGE_ERROR),
        ];
        for (e, want) in storage {
            assert_eq!(E::from(&e), want, "{e}");
            // The partition layer keeps the storage error's own code (issue 12, item 4).
            assert_eq!(E::from(&PartitionError::Storage(e)), want);
        }
        let partition = [
            (
                PartitionError::MessageTooLarge { size: 2, max: 1 },
                E::MESSAGE_TOO_LARGE,
            ),
            (
                PartitionError::Producer(ProducerStateError::InvalidProducerEpoch {
                    current: 1,
                    got: 0,
                }),
                E::INVALID_PRODUCER_EPOCH,
            ),
            (
                PartitionError::Producer(ProducerStateError::OutOfOrderSequence {
                    expected: 1,
                    got: 5,
                }),
                E::OUT_OF_ORDER_SEQUENCE_NUMBER,
            ),
            (
                PartitionError::Producer(ProducerStateError::CoordinatorFenced {
                    current: 2,
                    got: 1,
                }),
                E::TRANSACTION_COORDINATOR_FENCED,
            ),
            (
                PartitionError::OffsetOutOfRange {
                    offset: 9,
                    log_start_offset: 0,
                    log_end_offset: 1,
                },
                E::OFFSET_OUT_OF_RANGE,
            ),
            (
                PartitionError::FencedLeaderEpoch { current: 2, got: 1 },
                E::FENCED_LEADER_EPOCH,
            ),
            (
                PartitionError::UnknownLeaderEpoch { current: 1, got: 2 },
                E::UNKNOWN_LEADER_EPOCH,
            ),
            (
                PartitionError::NotLeaderOrFollower,
                E::NOT_LEADER_OR_FOLLOWER,
            ),
            (
                PartitionError::NotEnoughReplicas {
                    isr: 1,
                    min_insync_replicas: 2,
                },
                E::NOT_ENOUGH_REPLICAS,
            ),
            (
                PartitionError::NotEnoughReplicasAfterAppend {
                    isr: 1,
                    min_insync_replicas: 2,
                },
                E::NOT_ENOUGH_REPLICAS_AFTER_APPEND,
            ),
        ];
        for (e, want) in &partition {
            assert_eq!(e.code(), *want, "{e:?}");
            assert!(
                !e.message().contains('{'),
                "no Rust debug text: {}",
                e.message()
            );
        }
        let log = [
            (CoordinatorLogError::NotLeader, E::NOT_COORDINATOR),
            (
                CoordinatorLogError::NotAvailable,
                E::COORDINATOR_NOT_AVAILABLE,
            ),
            (CoordinatorLogError::RecordTooLarge, E::UNKNOWN_SERVER_ERROR),
            (
                CoordinatorLogError::Storage("disk".into()),
                E::NOT_COORDINATOR,
            ),
        ];
        for (e, want) in &log {
            assert_eq!(E::from(e), *want);
            assert_eq!(E::from(&CoordinatorError::Log(e.clone())), *want);
            assert_eq!(E::from(&TxnError::Log(e.clone())), *want);
        }
        use CoordinatorError as C;
        let group = [
            (C::InvalidGroupId, E::INVALID_GROUP_ID),
            (C::UnknownMemberId, E::UNKNOWN_MEMBER_ID),
            (C::IllegalGeneration, E::ILLEGAL_GENERATION),
            (C::RebalanceInProgress, E::REBALANCE_IN_PROGRESS),
            (C::InconsistentGroupProtocol, E::INCONSISTENT_GROUP_PROTOCOL),
            (C::InvalidSessionTimeout, E::INVALID_SESSION_TIMEOUT),
            (C::MemberIdRequired, E::MEMBER_ID_REQUIRED),
            (C::GroupMaxSizeReached, E::GROUP_MAX_SIZE_REACHED),
            (C::FencedInstanceId, E::FENCED_INSTANCE_ID),
            (C::CoordinatorNotAvailable, E::COORDINATOR_NOT_AVAILABLE),
            (C::NotCoordinator, E::NOT_COORDINATOR),
            (C::GroupIdNotFound, E::GROUP_ID_NOT_FOUND),
            (C::NonEmptyGroup, E::NON_EMPTY_GROUP),
            (C::GroupSubscribedToTopic, E::GROUP_SUBSCRIBED_TO_TOPIC),
            (C::OffsetMetadataTooLarge, E::OFFSET_METADATA_TOO_LARGE),
            (C::FencedMemberEpoch, E::FENCED_MEMBER_EPOCH),
            (C::StaleMemberEpoch, E::STALE_MEMBER_EPOCH),
            (C::UnreleasedInstanceId, E::UNRELEASED_INSTANCE_ID),
            (C::UnsupportedAssignor, E::UNSUPPORTED_ASSIGNOR),
            (C::InvalidRegularExpression, E::INVALID_REGULAR_EXPRESSION),
            (C::InvalidRequest("m".into()), E::INVALID_REQUEST),
            (C::UnsupportedVersion, E::UNSUPPORTED_VERSION),
        ];
        for (e, want) in &group {
            assert_eq!(e.code(), *want, "{e:?}");
        }
        // OffsetCommit alone answers a too-large batch as the client's fault.
        assert_eq!(
            C::Log(CoordinatorLogError::RecordTooLarge).offset_commit_code(),
            E::INVALID_COMMIT_OFFSET_SIZE
        );
        use TxnError as T;
        let txn = [
            (T::InvalidRequest, E::INVALID_REQUEST),
            (T::InvalidTransactionTimeout, E::INVALID_TRANSACTION_TIMEOUT),
            (T::ConcurrentTransactions, E::CONCURRENT_TRANSACTIONS),
            (T::ProducerFenced, E::PRODUCER_FENCED),
            (T::InvalidProducerIdMapping, E::INVALID_PRODUCER_ID_MAPPING),
            (T::InvalidTxnState, E::INVALID_TXN_STATE),
            (T::NotCoordinator, E::NOT_COORDINATOR),
            (
                T::CoordinatorLoadInProgress,
                E::COORDINATOR_LOAD_IN_PROGRESS,
            ),
            (T::TransactionalIdNotFound, E::TRANSACTIONAL_ID_NOT_FOUND),
            (T::UnknownTopicOrPartition, E::UNKNOWN_TOPIC_OR_PARTITION),
            (T::OperationNotAttempted, E::OPERATION_NOT_ATTEMPTED),
            (T::TransactionAbortable, E::TRANSACTION_ABORTABLE),
            (T::EpochOverflow, E::UNKNOWN_SERVER_ERROR),
        ];
        for (e, want) in &txn {
            assert_eq!(e.code(), *want, "{e:?}");
        }
        use AlterPartitionError as A;
        for (e, want) in [
            (A::FencedLeaderEpoch, E::FENCED_LEADER_EPOCH),
            (A::InvalidUpdateVersion, E::INVALID_UPDATE_VERSION),
            (A::IneligibleReplica, E::INELIGIBLE_REPLICA),
            (A::UnknownTopicOrPartition, E::UNKNOWN_TOPIC_OR_PARTITION),
            (A::NotLeaderOrFollower, E::NOT_LEADER_OR_FOLLOWER),
            (A::InvalidRequest, E::INVALID_REQUEST),
        ] {
            assert_eq!(e.code(), want, "{e:?}");
        }
        assert_eq!(ControllerError::NotController.code(), E::NOT_CONTROLLER);
        assert_eq!(
            ControllerError::Quorum("q".into()).code(),
            E::NOT_CONTROLLER
        );
        assert_eq!(ControllerError::TimedOut.code(), E::REQUEST_TIMED_OUT);
        use VoterChangeError as V;
        for (e, want) in [
            (V::NotLeader { leader: Some(1) }, E::NOT_LEADER_OR_FOLLOWER),
            (V::NotLeader { leader: None }, E::NOT_LEADER_OR_FOLLOWER),
            (V::DuplicateVoter, E::DUPLICATE_VOTER),
            (V::VoterNotFound, E::VOTER_NOT_FOUND),
            (V::ChangeInProgress, E::REQUEST_TIMED_OUT),
            (V::TimedOut, E::REQUEST_TIMED_OUT),
            (V::Shutdown, E::NOT_LEADER_OR_FOLLOWER),
            (V::Other("x".into()), E::UNKNOWN_SERVER_ERROR),
        ] {
            assert_eq!(E::from(&e), want, "{e}");
            assert!(!e.to_string().contains("Some("), "no Rust debug text: {e}");
        }
        let config = ConfigError::UnknownConfig { key: "k".into() };
        assert_eq!(config.error_code(), E::INVALID_CONFIG);
        let quota = QuotaExceeded {
            throttle_time_ms: 1,
        };
        assert_eq!(E::from(&quota), E::THROTTLING_QUOTA_EXCEEDED);
    }
}
