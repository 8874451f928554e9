//! Kafka's on-disk log: segments, offset and time indexes, the partition log, recovery,
//! retention, checkpoints and the log manager. Plain std with synchronous I/O; no tokio and no
//! knowledge of the network or handlers.
pub mod error;
mod index;
pub mod offset_index;
pub mod segment;
pub mod time_index;

pub use error::StorageError;
