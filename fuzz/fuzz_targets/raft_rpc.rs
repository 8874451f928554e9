//! Fuzz target: the controllers' raft RPCs as they arrive from the network. A request payload
//! goes through `decode_envelope` (what `RaftQuorum::handle_rpc` does first with the bytes of a
//! raft frame on the controller listener); the same bytes read as each reply a caller decodes
//! (`RaftRpcReply`, and an observer's `ObserverFetchReply` with a metadata image or records).
//! Every decode must return `Ok` or `Err` without panicking or allocating without bound.
#![no_main]

use libfuzzer_sys::fuzz_target;
use strata::controller::image::MetadataImage;
use strata::controller::raft::network::{decode_envelope, RaftRpcReply};
use strata::controller::raft::observer::ObserverFetchReply;

fuzz_target!(|data: &[u8]| {
    let _ = decode_envelope::<MetadataImage>(data);
    let _ = serde_json::from_slice::<RaftRpcReply>(data);
    if let Ok(reply) = serde_json::from_slice::<ObserverFetchReply<MetadataImage>>(data) {
        // An observer applies what it is sent (`observer.rs`): records to its image.
        if let strata::controller::raft::observer::FetchBody::Entries(entries) = reply.body {
            let mut image = MetadataImage::default();
            for (_, records) in &entries {
                for r in records {
                    image.apply(r);
                }
            }
        }
    }
});
