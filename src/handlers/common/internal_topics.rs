//! Strata's guard for its internal topics (`__consumer_offsets`, `__transaction_state`):
//! DeleteTopics, CreatePartitions and DeleteRecords on them are refused server-side, whatever
//! the client and (once ACLs exist) whatever the principal may do. Deleting them loses every
//! group's committed offsets or every transaction's state; adding partitions to them moves
//! every group and transactional id to another partition (`hash % partition count`), which
//! loses them too; trimming them by DeleteRecords drops committed state. Kafka's own tools
//! refuse the first two client-side and Kafka refuses DeleteRecords on internal topics
//! server-side; Strata refuses all three server-side (a documented difference in README.md).
//!
//! The code is INVALID_TOPIC_EXCEPTION, the one Kafka's `ReplicaManager` answers for
//! DeleteRecords on an internal topic ("cannot delete records of internal topic"): it says
//! the topic itself cannot take the operation, is not retriable, and is told apart from an
//! ACL denial (TOPIC_AUTHORIZATION_FAILED would send an operator looking for a missing ACL
//! that no grant can fix; POLICY_VIOLATION names a configurable policy, and this is not one;
//! INVALID_REQUEST would say the request was malformed, and it is not).
use crate::error::ErrorCode;

pub use crate::controller::image::is_internal_topic as is_known_internal;

/// The code every refused operation on an internal topic answers.
pub const REFUSED: ErrorCode = ErrorCode::INVALID_TOPIC_EXCEPTION;

/// The `error_message` for a refused `operation` on internal topic `topic`.
pub fn refusal_message(operation: &str, topic: &str) -> String {
    format!("{topic} is an internal topic: Strata does not allow {operation} on it")
}
