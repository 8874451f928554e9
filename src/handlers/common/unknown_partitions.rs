//! The per-partition checks Kafka's `KafkaApis` makes before a partitioned request reaches the
//! replica manager or the group coordinator: the authorizer's topic check, then (for
//! OffsetCommit, TxnOffsetCommit and OffsetDelete) the metadata check. A refused or unknown
//! partition is taken out of the request, so nothing is ever read, written or committed for
//! it, and answered with its error beside the others. (OffsetFetch v1+ has no such check in
//! Kafka: an unknown partition simply has no committed offset.)
//!
//! The request and response entries are generated types; [`RequestTopic`] and
//! [`ResponseTopic`] say, once per message, where their names and partitions are, so the
//! handlers share one implementation of the split and of the error answers.
use crate::controller::image::MetadataImage;
use crate::error::ErrorCode;
use crate::protocol::messages::{
    delete_records_request, delete_records_response, list_offsets_request, list_offsets_response,
    offset_commit_request, offset_commit_response, offset_delete_request, offset_delete_response,
    offset_for_leader_epoch_request, offset_for_leader_epoch_response, txn_offset_commit_request,
    txn_offset_commit_response,
};

/// A request's topic entry: a name and the partitions asked for.
pub trait RequestTopic {
    type Partition;
    fn name_and_partitions(&mut self) -> (&str, &mut Vec<Self::Partition>);
    fn index(partition: &Self::Partition) -> i32;
}

/// A response's topic entry, and how an error answer for one of its partitions looks (the
/// fields a client reads beside the error are Kafka's "unknown" values, e.g. offset -1).
pub trait ResponseTopic {
    type Partition;
    fn name(&self) -> &str;
    fn named(name: String) -> Self;
    fn partitions_mut(&mut self) -> &mut Vec<Self::Partition>;
    fn error_partition(index: i32, code: ErrorCode) -> Self::Partition;
}

macro_rules! request_topic {
    ($module:ident :: $topic:ident . $name:ident, $partition:ident . $index:ident) => {
        impl RequestTopic for $module::$topic {
            type Partition = $module::$partition;
            fn name_and_partitions(&mut self) -> (&str, &mut Vec<Self::Partition>) {
                (self.$name.as_str(), &mut self.partitions)
            }
            fn index(partition: &Self::Partition) -> i32 {
                partition.$index
            }
        }
    };
}

macro_rules! response_topic {
    ($module:ident :: $topic:ident . $name:ident,
     $partition:ident { $index:ident, error_code $(, $field:ident : $value:expr)* }) => {
        impl ResponseTopic for $module::$topic {
            type Partition = $module::$partition;
            fn name(&self) -> &str {
                self.$name.as_str()
            }
            fn named($name: String) -> Self {
                $module::$topic { $name, ..Default::default() }
            }
            fn partitions_mut(&mut self) -> &mut Vec<Self::Partition> {
                &mut self.partitions
            }
            #[allow(clippy::needless_update)]
            fn error_partition($index: i32, code: ErrorCode) -> Self::Partition {
                $module::$partition {
                    $index,
                    error_code: code.code(),
                    $($field: $value,)*
                    ..Default::default()
                }
            }
        }
    };
}

request_topic!(
    offset_commit_request::OffsetCommitRequestTopic.name,
    OffsetCommitRequestPartition.partition_index
);
request_topic!(
    txn_offset_commit_request::TxnOffsetCommitRequestTopic.name,
    TxnOffsetCommitRequestPartition.partition_index
);
request_topic!(
    offset_delete_request::OffsetDeleteRequestTopic.name,
    OffsetDeleteRequestPartition.partition_index
);
request_topic!(
    list_offsets_request::ListOffsetsTopic.name,
    ListOffsetsPartition.partition_index
);
request_topic!(
    delete_records_request::DeleteRecordsTopic.name,
    DeleteRecordsPartition.partition_index
);
request_topic!(
    offset_for_leader_epoch_request::OffsetForLeaderTopic.topic,
    OffsetForLeaderPartition.partition
);

response_topic!(
    offset_commit_response::OffsetCommitResponseTopic.name,
    OffsetCommitResponsePartition {
        partition_index,
        error_code
    }
);
response_topic!(
    txn_offset_commit_response::TxnOffsetCommitResponseTopic.name,
    TxnOffsetCommitResponsePartition {
        partition_index,
        error_code
    }
);
response_topic!(
    offset_delete_response::OffsetDeleteResponseTopic.name,
    OffsetDeleteResponsePartition {
        partition_index,
        error_code
    }
);
response_topic!(
    list_offsets_response::ListOffsetsTopicResponse.name,
    ListOffsetsPartitionResponse {
        partition_index,
        error_code,
        timestamp: -1,
        offset: -1,
        leader_epoch: -1
    }
);
response_topic!(
    delete_records_response::DeleteRecordsTopicResult.name,
    DeleteRecordsPartitionResult {
        partition_index,
        error_code,
        low_watermark: -1
    }
);
response_topic!(
    offset_for_leader_epoch_response::OffsetForLeaderTopicResult.topic,
    EpochEndOffset {
        partition,
        error_code,
        leader_epoch: -1,
        end_offset: -1
    }
);

/// Removes the partitions `keep` refuses from `topics` (a topic left with none is removed
/// too) and returns them as (topic, partition) in request order.
fn split<T: RequestTopic>(
    topics: &mut Vec<T>,
    mut keep: impl FnMut(&str, i32) -> bool,
) -> Vec<(String, i32)> {
    let mut taken = Vec::new();
    topics.retain_mut(|t| {
        let (name, partitions) = t.name_and_partitions();
        partitions.retain(|p| {
            let kept = keep(name, T::index(p));
            if !kept {
                taken.push((name.to_string(), T::index(p)));
            }
            kept
        });
        !partitions.is_empty()
    });
    taken
}

/// Removes the partitions the metadata image does not know (a topic that does not exist, or a
/// partition beyond its count) and returns them.
pub fn split_unknown<T: RequestTopic>(
    image: &MetadataImage,
    topics: &mut Vec<T>,
) -> Vec<(String, i32)> {
    split(topics, |name, index| image.partition(name, index).is_some())
}

/// Removes the partitions of the topics `allowed` refuses (the authorizer's check, made before
/// the unknown-partition one as in Kafka) and returns them.
pub fn split_refused<T: RequestTopic>(
    topics: &mut Vec<T>,
    allowed: impl Fn(&str) -> bool,
) -> Vec<(String, i32)> {
    split(topics, |name, _| allowed(name))
}

/// Adds answers with `code` for `partitions` to a response's topics, under the topic's
/// existing entry when there is one.
pub fn add_errors<T: ResponseTopic>(
    topics: &mut Vec<T>,
    partitions: Vec<(String, i32)>,
    code: ErrorCode,
) {
    for (name, partition) in partitions {
        let at = match topics.iter().position(|t| t.name() == name) {
            Some(at) => at,
            None => {
                topics.push(T::named(name));
                topics.len() - 1
            }
        };
        topics[at]
            .partitions_mut()
            .push(T::error_partition(partition, code));
    }
}

/// Adds UNKNOWN_TOPIC_OR_PARTITION answers for `unknown`.
pub fn add_unknown<T: ResponseTopic>(topics: &mut Vec<T>, unknown: Vec<(String, i32)>) {
    add_errors(topics, unknown, ErrorCode::UNKNOWN_TOPIC_OR_PARTITION)
}

#[cfg(test)]
mod tests {
    use super::*;
    use offset_commit_request::{OffsetCommitRequestPartition, OffsetCommitRequestTopic};
    use offset_for_leader_epoch_response::OffsetForLeaderTopicResult;

    fn topic(name: &str, partitions: &[i32]) -> OffsetCommitRequestTopic {
        OffsetCommitRequestTopic {
            name: name.into(),
            partitions: partitions
                .iter()
                .map(|&partition_index| OffsetCommitRequestPartition {
                    partition_index,
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        }
    }

    #[test]
    fn refused_topics_leave_the_request_whole_and_in_order() {
        let mut topics = vec![
            topic("a", &[0, 1]),
            topic("secret", &[2, 0]),
            topic("b", &[3]),
        ];
        let refused = split_refused(&mut topics, |name| name != "secret");
        assert_eq!(
            refused,
            vec![("secret".to_string(), 2), ("secret".to_string(), 0)]
        );
        let left: Vec<_> = topics.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(left, ["a", "b"]);
    }

    #[test]
    fn error_answers_join_the_topic_entry_and_carry_the_unknown_values() {
        let mut response = vec![OffsetForLeaderTopicResult::named("t".into())];
        add_errors(
            &mut response,
            vec![("t".into(), 4), ("u".into(), 0)],
            ErrorCode::TOPIC_AUTHORIZATION_FAILED,
        );
        assert_eq!(response.len(), 2);
        let p = &response[0].partitions[0];
        assert_eq!((p.partition, p.leader_epoch, p.end_offset), (4, -1, -1));
        assert_eq!(p.error_code, ErrorCode::TOPIC_AUTHORIZATION_FAILED.code());
        assert_eq!(response[1].topic, "u");
        assert_eq!(response[1].partitions[0].partition, 0);
    }
}
