//! A partition's settings derived from its topic's configuration (Kafka's `LogConfig` from
//! the topic overrides over the broker defaults). Config is a leaf that knows no record
//! format, so its `compression.type` and `message.timestamp.type` become the record codec and
//! the LogAppendTime flag here.
use std::collections::BTreeMap;

use super::PartitionConfig;
use crate::config::{BrokerConfig, CompressionType, TimestampType, TopicConfig};
use crate::protocol::records::Compression;
use crate::storage::LogConfig;

/// The codec batches are stored with for a topic's `compression.type`; `None` keeps what the
/// producer used.
fn codec(compression_type: CompressionType) -> Option<Compression> {
    match compression_type {
        CompressionType::Producer => None,
        CompressionType::Uncompressed => Some(Compression::None),
        CompressionType::Gzip => Some(Compression::Gzip),
        CompressionType::Snappy => Some(Compression::Snappy),
        CompressionType::Lz4 => Some(Compression::Lz4),
        CompressionType::Zstd => Some(Compression::Zstd),
    }
}

impl PartitionConfig {
    /// A partition's settings from its topic's resolved configuration.
    pub fn from_topic_config(tc: &TopicConfig) -> PartitionConfig {
        // A compacted-only topic is never trimmed by time or size (Kafka's cleanup.policy=compact).
        let (retention_ms, retention_bytes) = if tc.cleanup_policy.delete {
            (tc.retention_ms, tc.retention_bytes)
        } else {
            (-1, -1)
        };
        PartitionConfig {
            log: LogConfig {
                segment_bytes: tc.segment_bytes.max(1) as u64,
                segment_ms: tc.segment_ms,
                retention_ms,
                retention_bytes,
                index_interval_bytes: tc.index_interval_bytes as u32,
                segment_index_bytes: tc.segment_index_bytes as u32,
                flush_messages: if tc.flush_messages < 0 || tc.flush_messages == i64::MAX {
                    u64::MAX
                } else {
                    tc.flush_messages as u64
                },
                flush_ms: tc.flush_ms,
                file_delete_delay_ms: tc.file_delete_delay_ms,
                compact: tc.cleanup_policy.compact,
                delete: tc.cleanup_policy.delete,
                delete_retention_ms: tc.delete_retention_ms,
                min_compaction_lag_ms: tc.min_compaction_lag_ms,
                min_cleanable_dirty_ratio: tc.min_cleanable_dirty_ratio,
                max_compaction_lag_ms: tc.max_compaction_lag_ms,
                preallocate: tc.preallocate,
            },
            max_message_bytes: tc.max_message_bytes.max(0) as usize,
            log_append_time: tc.message_timestamp_type == TimestampType::LogAppendTime,
            compacted: tc.cleanup_policy.compact,
            min_insync_replicas: tc.min_insync_replicas,
            timestamp_before_max_ms: tc.message_timestamp_before_max_ms,
            timestamp_after_max_ms: tc.message_timestamp_after_max_ms,
            compression: codec(tc.compression_type),
        }
    }

    /// A topic's partition settings from its overrides and the broker defaults; an invalid
    /// stored override falls back to the defaults (a warning), as a restart must not fail on it.
    pub fn for_topic(
        topic: &str,
        overrides: &BTreeMap<String, String>,
        broker: &BrokerConfig,
    ) -> PartitionConfig {
        let tc = match TopicConfig::resolve(overrides, broker) {
            Ok(c) => c,
            Err(e) => {
                tracing::warn!(%topic, error = %e, "invalid stored topic config, using defaults");
                TopicConfig::resolve(&BTreeMap::new(), broker).expect("defaults are valid")
            }
        };
        PartitionConfig::from_topic_config(&tc)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn topic_compression_and_timestamp_type_become_the_partitions_settings() {
        let overrides: BTreeMap<String, String> = [
            ("compression.type", "zstd"),
            ("message.timestamp.type", "LogAppendTime"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        let c = PartitionConfig::for_topic("t", &overrides, &BrokerConfig::default());
        assert_eq!(c.compression, Some(Compression::Zstd));
        assert!(c.log_append_time);
        let c = PartitionConfig::for_topic("t", &BTreeMap::new(), &BrokerConfig::default());
        assert_eq!(c.compression, None);
        assert!(!c.log_append_time);
        for (t, want) in [
            (CompressionType::Producer, None),
            (CompressionType::Uncompressed, Some(Compression::None)),
            (CompressionType::Gzip, Some(Compression::Gzip)),
            (CompressionType::Snappy, Some(Compression::Snappy)),
            (CompressionType::Lz4, Some(Compression::Lz4)),
            (CompressionType::Zstd, Some(Compression::Zstd)),
        ] {
            assert_eq!(codec(t), want, "{}", t.name());
        }
    }
}
