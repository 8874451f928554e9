//! Record batches (magic v2): header view, validation, CRC-32C, records, compression.
//!
//! - [`batch`]: the 61-byte batch header, produce validation and in-place offset assignment.
//! - [`compression`]: codec ids and bounded (de)compression in Kafka's client framings.
//! - [`record`]: the v2 record format and decoding every record of a batch.
//! - [`builder`]: [`RecordBatchBuilder`] writes valid v2 batches.
//! - [`control`]: control record keys and end-transaction markers.
//! - [`validator`]: the produce path's validation of every batch and record (Kafka's
//!   `LogValidator`), streaming through compressed batches.
//! - [`recompress`]: rebuilding batches for the topic's `compression.type`.
//! - [`error`]: [`RecordError`], shared by the record codecs.
pub mod batch;
pub mod builder;
pub mod compression;
pub mod control;
pub mod error;
pub mod recompress;
pub mod record;
pub mod testutil;
pub mod validator;

pub use batch::{BatchError, BatchHeader};
pub use builder::{RecordBatchBuilder, TimestampType};
pub use compression::{compress, decompress, Compression};
pub use control::{build_end_txn_marker_batch, ControlRecordType, EndTransactionMarker};
pub use error::RecordError;
pub use record::{decode_records, Record, RecordHeader};

#[cfg(test)]
mod oracle_tests;
