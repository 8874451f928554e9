//! Kafka's ACL vocabulary as it goes on the wire (`AclOperation`, `ResourceType`,
//! `PatternType`, `AclPermissionType`: one `i8` each in DescribeAcls, CreateAcls, DeleteAcls,
//! the `authorizedOperations` bit sets and the metadata log's ACL records) and the names with a
//! fixed meaning (the cluster resource, the wildcards).
//!
//! Below both the handlers, which name an operation for every authorization check, and the
//! controller, which stores and indexes ACLs.

/// Kafka's `ResourceType` ids.
pub mod resource_type {
    pub const UNKNOWN: i8 = 0;
    pub const ANY: i8 = 1;
    pub const TOPIC: i8 = 2;
    pub const GROUP: i8 = 3;
    pub const CLUSTER: i8 = 4;
    pub const TRANSACTIONAL_ID: i8 = 5;
    pub const DELEGATION_TOKEN: i8 = 6;
    pub const USER: i8 = 7;
}

/// Kafka's `PatternType` ids.
pub mod pattern_type {
    pub const UNKNOWN: i8 = 0;
    pub const ANY: i8 = 1;
    pub const MATCH: i8 = 2;
    pub const LITERAL: i8 = 3;
    pub const PREFIXED: i8 = 4;
}

/// Kafka's `AclOperation` ids.
pub mod operation {
    pub const UNKNOWN: i8 = 0;
    pub const ANY: i8 = 1;
    pub const ALL: i8 = 2;
    pub const READ: i8 = 3;
    pub const WRITE: i8 = 4;
    pub const CREATE: i8 = 5;
    pub const DELETE: i8 = 6;
    pub const ALTER: i8 = 7;
    pub const DESCRIBE: i8 = 8;
    pub const CLUSTER_ACTION: i8 = 9;
    pub const DESCRIBE_CONFIGS: i8 = 10;
    pub const ALTER_CONFIGS: i8 = 11;
    pub const IDEMPOTENT_WRITE: i8 = 12;
    pub const CREATE_TOKENS: i8 = 13;
    pub const DESCRIBE_TOKENS: i8 = 14;
}

/// Kafka's `AclPermissionType` ids.
pub mod permission_type {
    pub const UNKNOWN: i8 = 0;
    pub const ANY: i8 = 1;
    pub const DENY: i8 = 2;
    pub const ALLOW: i8 = 3;
}

/// The name of the one cluster resource (Kafka's `Resource.CLUSTER_NAME`).
pub const CLUSTER_NAME: &str = "kafka-cluster";
/// The resource name (LITERAL) and host matching every resource / host.
pub const WILDCARD: &str = "*";
/// The principal matching every principal.
pub const WILDCARD_PRINCIPAL: &str = "User:*";
