//! AddPartitionsToTxn (key 24), versions 0-5: partitions join the producer's transaction (0-3 from clients, 4-5 the verification form).
use std::net::SocketAddr;
use std::sync::Arc;

use super::{group_context, ready, Broker, ResponseFuture};
use crate::protocol::header::RequestHeader;
use crate::protocol::messages::add_partitions_to_txn_request::AddPartitionsToTxnRequest;

pub async fn start(
    broker: Arc<Broker>,
    header: RequestHeader,
    request: AddPartitionsToTxnRequest,
    peer: SocketAddr,
) -> ResponseFuture {
    let ctx = group_context(&header, peer);
    let response = broker
        .txns
        .add_partitions_to_txn(&ctx, &request, &|topic: &str, p: i32| {
            broker.replicas.get(topic, p).is_some()
        });
    ready(header, Some(response))
}
