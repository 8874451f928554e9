//! Record batches (magic v2): header view, validation, CRC-32C, records, compression.
pub mod batch;
pub mod testutil;
