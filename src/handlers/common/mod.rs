//! What several API handlers share, kept out of the folder above so that its listing is the
//! API table: the connection a request came on, the framed response, authorization, quota
//! throttling, the per-partition checks before a partitioned request goes further, the config
//! changes of AlterConfigs and IncrementalAlterConfigs, the internal-topic guard and the
//! transaction coordinator's word before a Produce appends.
//!
//! Same layer as the handlers: may use the broker and everything below it, and the API
//! modules of `handlers/` where one API's logic is another's (DescribeAcls' message when no
//! authorizer is configured, IncrementalAlterConfigs' controller side).
pub mod authz;
pub mod config_changes;
pub mod connection_context;
pub mod internal_topics;
pub mod produce_verification;
pub mod response;
pub mod throttle;
pub mod unknown_partitions;
