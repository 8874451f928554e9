//! Every subsystem's typed error and the Kafka error code a client reads for it, as one table.
//! The mappings live beside their types (`impl From<&E> for ErrorCode` in storage, protocol,
//! replica, coordinator, controller, config and security), so `error` stays a leaf; this test
//! reads them together, so a wrapping error can never answer differently from the error it
//! wraps.
use std::path::PathBuf;

use strata::config::ConfigError;
use strata::controller::quorum::VoterChangeError;
use strata::controller::service::ControllerError;
use strata::coordinator::runtime::CoordinatorLogError;
use strata::coordinator::share_state::ShareStateError;
use strata::coordinator::txn::TxnError;
use strata::coordinator::CoordinatorError;
use strata::error::ErrorCode;
use strata::protocol::records::batch::BatchError;
use strata::protocol::records::RecordError;
use strata::replica::producer_state::ProducerStateError;
use strata::replica::{AlterPartitionError, PartitionError};
use strata::security::quotas::QuotaExceeded;
use strata::storage::StorageError;

/// Every variant of every subsystem error, with the code a client reads for it.
#[test]
fn one_table_for_every_subsystem_error() {
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
            PartitionError::Producer(ProducerStateError::CoordinatorFenced { current: 2, got: 1 }),
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
        // The share coordinator answers a failed append as the other two (issue 35).
        assert_eq!(E::from(&ShareStateError::Log(e.clone())), *want);
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
