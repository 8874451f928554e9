//! Producer-id blocks for brokers (Kafka's `ProducerIdControlManager`, KIP-730): each
//! AllocateProducerIds hands out the next block of 1000 ids, recorded so that no id is ever
//! handed out twice, across controller failovers included.
use super::image::MetadataImage;
use super::records::MetadataRecord;
use crate::error::ErrorCode;

/// How many ids one block holds (Kafka's `ProducerIdsBlock.PRODUCER_ID_BLOCK_SIZE`).
pub const PRODUCER_ID_BLOCK_SIZE: i64 = 1000;

/// A block of producer ids: `first_producer_id .. first_producer_id + len`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProducerIdBlock {
    pub first_producer_id: i64,
    pub len: i64,
}

/// Allocates the next block to a broker of the current broker epoch.
pub fn allocate_producer_ids(
    image: &MetadataImage,
    broker_id: i32,
    broker_epoch: i64,
) -> (Vec<MetadataRecord>, Result<ProducerIdBlock, ErrorCode>) {
    if image.broker(broker_id).map(|b| b.broker_epoch) != Some(broker_epoch) {
        return (Vec::new(), Err(ErrorCode::STALE_BROKER_EPOCH));
    }
    let first = image.next_producer_id;
    let Some(next) = first.checked_add(PRODUCER_ID_BLOCK_SIZE) else {
        return (Vec::new(), Err(ErrorCode::UNKNOWN_SERVER_ERROR));
    };
    (
        vec![MetadataRecord::ProducerIds {
            broker_id,
            broker_epoch,
            next_producer_id: next,
        }],
        Ok(ProducerIdBlock {
            first_producer_id: first,
            len: PRODUCER_ID_BLOCK_SIZE,
        }),
    )
}
