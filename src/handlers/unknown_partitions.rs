//! The partition check Kafka's `KafkaApis` makes before the group coordinator sees an
//! OffsetCommit, TxnOffsetCommit or OffsetDelete: a partition of a topic that does not exist
//! (or beyond its partition count) is answered UNKNOWN_TOPIC_OR_PARTITION and left out of
//! what the coordinator stores, so no offset is ever committed for it. (OffsetFetch v1+ has
//! no such check in Kafka: an unknown partition simply has no committed offset.)
use crate::controller::image::MetadataImage;
use crate::error::ErrorCode;

/// Removes the partitions the metadata image does not know from `topics` (a topic left with
/// none is removed too) and returns them as (topic, partition) in request order.
pub fn split_unknown<T, P>(
    image: &MetadataImage,
    topics: &mut Vec<T>,
    parts: impl Fn(&mut T) -> (&str, &mut Vec<P>),
    index: impl Fn(&P) -> i32,
) -> Vec<(String, i32)> {
    let mut unknown = Vec::new();
    topics.retain_mut(|t| {
        let (name, partitions) = parts(t);
        partitions.retain(|p| {
            let known = image.partition(name, index(p)).is_some();
            if !known {
                unknown.push((name.to_string(), index(p)));
            }
            known
        });
        !partitions.is_empty()
    });
    unknown
}

/// Adds UNKNOWN_TOPIC_OR_PARTITION answers for `unknown` to a response's topics, under the
/// topic's existing entry when there is one.
pub fn add_unknown<T, P>(
    topics: &mut Vec<T>,
    unknown: Vec<(String, i32)>,
    name_of: impl Fn(&T) -> &str,
    new_topic: impl Fn(String) -> T,
    partitions_of: impl Fn(&mut T) -> &mut Vec<P>,
    new_partition: impl Fn(i32, i16) -> P,
) {
    for (name, partition) in unknown {
        let at = match topics.iter().position(|t| name_of(t) == name) {
            Some(at) => at,
            None => {
                topics.push(new_topic(name));
                topics.len() - 1
            }
        };
        partitions_of(&mut topics[at]).push(new_partition(
            partition,
            ErrorCode::UNKNOWN_TOPIC_OR_PARTITION.code(),
        ));
    }
}
