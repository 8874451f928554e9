//! The transaction coordinator's typed errors and their one mapping to Kafka error codes,
//! including the KIP-588 rule that clients older than PRODUCER_FENCED get INVALID_PRODUCER_EPOCH.
use crate::coordinator::runtime::CoordinatorLogError;
use crate::error::ErrorCode;

/// Everything a transaction coordinator operation can fail with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TxnError {
    /// Empty transactional id, or a producer id without an epoch (or the reverse).
    InvalidRequest,
    /// `transaction.timeout.ms` not in `1..=transaction.max.timeout.ms`.
    InvalidTransactionTimeout,
    /// A transaction of this id is being completed; retry.
    ConcurrentTransactions,
    /// The request's epoch is not the current one: another producer with the same
    /// transactional id took over.
    ProducerFenced,
    /// Unknown transactional id, or a producer id that is not the id's current one.
    InvalidProducerIdMapping,
    /// The requested transition is not legal in the current state (EndTxn without a transaction).
    InvalidTxnState,
    /// The id's `__transaction_state` partition is not loaded on this broker.
    NotCoordinator,
    /// No producer id could be allocated yet.
    CoordinatorLoadInProgress,
    TransactionalIdNotFound,
    UnknownTopicOrPartition,
    /// Another partition of the same request failed; this one was not added.
    OperationNotAttempted,
    /// Verification (AddPartitionsToTxn v4+): the partition is not in the ongoing transaction.
    TransactionAbortable,
    /// The producer epoch cannot be bumped any further (should not happen: ids rotate first).
    EpochOverflow,
    /// An append to `__transaction_state` failed.
    Log(CoordinatorLogError),
}

/// The request an error answers, for the version-dependent PRODUCER_FENCED mapping.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TxnApi {
    InitProducerId,
    AddPartitionsToTxn,
    AddOffsetsToTxn,
    EndTxn,
    Other,
}

impl TxnError {
    /// The Kafka error code (the mapping below).
    pub fn code(&self) -> ErrorCode {
        ErrorCode::from(self)
    }

    /// The code for `api` at `version`: PRODUCER_FENCED (KIP-588) becomes INVALID_PRODUCER_EPOCH
    /// for InitProducerId < 4 and AddPartitionsToTxn, AddOffsetsToTxn, EndTxn < 2, as Kafka's
    /// `KafkaApis` does for clients that do not know the newer code.
    pub fn code_for(&self, api: TxnApi, version: i16) -> ErrorCode {
        let code = self.code();
        if code != ErrorCode::PRODUCER_FENCED {
            return code;
        }
        let old = match api {
            TxnApi::InitProducerId => version < 4,
            TxnApi::AddPartitionsToTxn | TxnApi::AddOffsetsToTxn | TxnApi::EndTxn => version < 2,
            TxnApi::Other => false,
        };
        if old {
            ErrorCode::INVALID_PRODUCER_EPOCH
        } else {
            code
        }
    }

    /// [`TxnError::code_for`] as it goes on the wire.
    pub fn wire_for(&self, api: TxnApi, version: i16) -> i16 {
        self.code_for(api, version).code()
    }

    /// The wire code of an outcome: 0 (NONE) for success.
    pub fn wire_result<T>(result: &Result<T, TxnError>, api: TxnApi, version: i16) -> i16 {
        match result {
            Ok(_) => ErrorCode::NONE.code(),
            Err(e) => e.wire_for(api, version),
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

impl From<CoordinatorLogError> for TxnError {
    fn from(e: CoordinatorLogError) -> Self {
        TxnError::Log(e)
    }
}

impl std::fmt::Display for TxnError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:?}", self.code())
    }
}

impl std::error::Error for TxnError {}
