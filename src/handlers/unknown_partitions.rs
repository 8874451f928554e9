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
    add_errors(
        topics,
        unknown,
        ErrorCode::UNKNOWN_TOPIC_OR_PARTITION,
        name_of,
        new_topic,
        partitions_of,
        new_partition,
    )
}

/// Removes the partitions of the topics `allowed` refuses from `topics` (the authorizer's
/// check, made before the unknown-partition one as in Kafka) and returns them.
pub fn split_refused<T, P>(
    topics: &mut Vec<T>,
    parts: impl Fn(&mut T) -> (&str, &mut Vec<P>),
    index: impl Fn(&P) -> i32,
    allowed: impl Fn(&str) -> bool,
) -> Vec<(String, i32)> {
    let mut refused = Vec::new();
    topics.retain_mut(|t| {
        let (name, partitions) = parts(t);
        if allowed(name) {
            return true;
        }
        refused.extend(partitions.iter().map(|p| (name.to_string(), index(p))));
        false
    });
    refused
}

/// Adds answers with `code` for `partitions` to a response's topics, under the topic's
/// existing entry when there is one.
pub fn add_errors<T, P>(
    topics: &mut Vec<T>,
    partitions: Vec<(String, i32)>,
    code: ErrorCode,
    name_of: impl Fn(&T) -> &str,
    new_topic: impl Fn(String) -> T,
    partitions_of: impl Fn(&mut T) -> &mut Vec<P>,
    new_partition: impl Fn(i32, i16) -> P,
) {
    for (name, partition) in partitions {
        let at = match topics.iter().position(|t| name_of(t) == name) {
            Some(at) => at,
            None => {
                topics.push(new_topic(name));
                topics.len() - 1
            }
        };
        partitions_of(&mut topics[at]).push(new_partition(partition, code.code()));
    }
}
