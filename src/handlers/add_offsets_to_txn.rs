//! AddOffsetsToTxn (key 25), versions 0-4: the group's `__consumer_offsets` partition joins the transaction (consume-transform-produce).
use std::net::SocketAddr;
use std::sync::Arc;

use super::{group_context, ready, Broker, ResponseFuture};
use crate::protocol::header::RequestHeader;
use crate::protocol::messages::add_offsets_to_txn_request::AddOffsetsToTxnRequest;

pub async fn start(
    broker: Arc<Broker>,
    header: RequestHeader,
    request: AddOffsetsToTxnRequest,
    peer: SocketAddr,
) -> ResponseFuture {
    let ctx = group_context(&header, peer);
    let response = {
        broker
            .txns
            .add_offsets_to_txn(&ctx, &request, &|group: &str| {
                broker.groups.partition_for(group)
            })
    };
    ready(header, Some(response))
}
