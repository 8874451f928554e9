//! Consumer lag as the broker computes it, shared by `/metrics` (`kafka_consumergroup_lag`)
//! and the web console so both report the same number.
//!
//! For each committed offset of a group this broker coordinates: the high watermark of the
//! local replica minus the offset. The high watermark is what `kafka-consumer-groups
//! --describe` prints as LOG-END-OFFSET (it lists offsets with read_uncommitted), so LAG
//! matches the tool. Partitions with no local replica are left out: this broker does not
//! know their high watermark.
use crate::broker::Broker;

/// One committed offset of a group and its lag.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct PartitionLag {
    pub group: String,
    pub topic: String,
    pub partition: i32,
    pub committed_offset: i64,
    pub high_watermark: i64,
    pub lag: i64,
}

/// Every committed offset of the loaded groups with a local replica, in (group, topic,
/// partition) order.
pub fn consumer_lag(broker: &Broker) -> Vec<PartitionLag> {
    let mut offsets = broker.groups.committed_offsets();
    offsets.sort();
    offsets
        .into_iter()
        .filter_map(|(group, topic, partition, committed_offset)| {
            let high_watermark = broker.replicas.get(&topic, partition)?.high_watermark();
            Some(PartitionLag {
                group,
                topic,
                partition,
                committed_offset,
                high_watermark,
                lag: high_watermark - committed_offset,
            })
        })
        .collect()
}
