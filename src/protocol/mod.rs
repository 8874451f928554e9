//! The sans-io wire layer: primitives, headers, framing, the generated messages, record
//! batches and the ACL wire values. Nothing here knows about sockets, storage or handlers.
pub mod acl;
pub mod codec;
mod frame;
pub mod header;
pub mod internal_records;
pub mod messages;
pub mod records;

pub use frame::frame_response;

#[cfg(test)]
pub(crate) mod tests;
