//! Kafka's on-disk log: segments, offset and time indexes, the partition log, recovery,
//! retention, the log cleaner (compaction), checkpoints and the log manager. Plain std with synchronous I/O; no tokio and no
//! knowledge of the network or handlers.
pub mod checkpoint;
pub mod cleaner;
pub mod config;
pub mod epoch;
pub mod error;
mod index;
pub mod log;
pub mod manager;
pub mod offset_index;
mod recovery;
mod retention;
pub mod segment;
pub mod time_index;

pub use cleaner::{CleanStats, CleanableInfo, CleanerConfig, Throttler};
pub use config::{FetchDataInfo, LogAppendInfo, LogConfig};
pub use error::StorageError;
pub use log::PartitionLog;
pub use manager::LogManager;

#[cfg(test)]
mod tests;
