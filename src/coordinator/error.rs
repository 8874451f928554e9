//! The coordinator's typed errors and their one mapping to Kafka error codes.
use crate::coordinator::runtime::CoordinatorLogError;
use crate::error::ErrorCode;

/// Everything a group or offset operation can fail with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CoordinatorError {
    InvalidGroupId,
    UnknownMemberId,
    IllegalGeneration,
    RebalanceInProgress,
    InconsistentGroupProtocol,
    InvalidSessionTimeout,
    MemberIdRequired,
    GroupMaxSizeReached,
    FencedInstanceId,
    CoordinatorNotAvailable,
    NotCoordinator,
    GroupIdNotFound,
    /// GROUP_ID_NOT_FOUND with Kafka's message (e.g. "Group g is not a share group.").
    GroupNotFound(String),
    NonEmptyGroup,
    GroupSubscribedToTopic,
    OffsetMetadataTooLarge,
    /// KIP-848: the member epoch is not the one the coordinator knows.
    FencedMemberEpoch,
    /// KIP-848: an offset commit or fetch carries an outdated member epoch.
    StaleMemberEpoch,
    /// KIP-848: a static member rejoins while its previous instance has not left.
    UnreleasedInstanceId,
    /// KIP-848: the requested server assignor is not configured.
    UnsupportedAssignor,
    /// KIP-848: the subscription regular expression does not compile.
    InvalidRegularExpression,
    /// The request is malformed for its API (with Kafka's message).
    InvalidRequest(String),
    /// The request version cannot be used for this group (e.g. OffsetCommit < 9 by a
    /// KIP-848 member).
    UnsupportedVersion,
    /// An append to `__consumer_offsets` failed.
    Log(CoordinatorLogError),
}

impl CoordinatorError {
    /// The Kafka error code for group operations (the mapping below).
    pub fn code(&self) -> ErrorCode {
        ErrorCode::from(self)
    }

    /// The error message Kafka sends with the code, where it sends one.
    pub fn message(&self) -> Option<String> {
        match self {
            CoordinatorError::InvalidRequest(m) | CoordinatorError::GroupNotFound(m) => {
                Some(m.clone())
            }
            _ => None,
        }
    }

    /// The code as it goes on the wire.
    pub fn wire(&self) -> i16 {
        self.code().code()
    }

    /// The wire code of an outcome: 0 (NONE) for success.
    pub fn wire_result<T>(result: &Result<T, CoordinatorError>) -> i16 {
        match result {
            Ok(_) => ErrorCode::NONE.code(),
            Err(e) => e.wire(),
        }
    }

    /// The Kafka error code for OffsetCommit, where a batch too large is the client's fault
    /// (`OffsetMetadataManager`: INVALID_COMMIT_OFFSET_SIZE).
    pub fn offset_commit_code(&self) -> ErrorCode {
        match self {
            CoordinatorError::Log(CoordinatorLogError::RecordTooLarge) => {
                ErrorCode::INVALID_COMMIT_OFFSET_SIZE
            }
            other => other.code(),
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

impl From<CoordinatorLogError> for CoordinatorError {
    fn from(e: CoordinatorLogError) -> Self {
        CoordinatorError::Log(e)
    }
}

impl std::fmt::Display for CoordinatorError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:?}", self.code())
    }
}

impl std::error::Error for CoordinatorError {}
