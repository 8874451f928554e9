//! Kafka's on-disk log: segments, offset, time and transaction indexes, the partition log, recovery,
//! retention, the log cleaner (compaction), checkpoints and the log manager. Plain std with synchronous I/O; no tokio and no
//! knowledge of the network or handlers.
pub mod checkpoint;
pub mod cleaner;
pub mod config;
pub mod durable;
pub mod epoch;
pub mod error;
mod flush;
mod index;
mod load;
pub mod log;
pub mod log_dir;
mod log_lock;
mod log_txn;
pub mod manager;
pub mod offset_index;
pub mod producer_snapshot;
mod recovery;
mod retention;
pub mod segment;
mod shared_flush;
pub mod time_index;
mod truncation;
pub mod txn_index;

pub use cleaner::{CleanStats, CleanableInfo, CleanerConfig, Throttler};
pub use config::{FetchDataInfo, FileRegion, LogAppendInfo, LogConfig, RegionDataInfo};
pub use error::StorageError;
pub use log::PartitionLog;
pub use log_dir::LogDirState;
pub use log_txn::PendingAbort;
pub use manager::LogManager;
pub use producer_snapshot::ProducerSnapshotEntry;
pub use txn_index::AbortedTxn;

#[cfg(test)]
mod log_dir_tests;
#[cfg(test)]
mod manager_tests;
#[cfg(test)]
mod preallocate_tests;
#[cfg(test)]
mod tests;
