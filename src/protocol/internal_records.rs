//! Keys and values of internal-topic records (`__consumer_offsets`, `__share_group_state`,
//! `__transaction_state`) generated from `protocol-specs/records/`, in Kafka's own formats so
//! Kafka's tools read them.
include!(concat!(env!("OUT_DIR"), "/records.rs"));
