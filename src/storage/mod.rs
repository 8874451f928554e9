//! On-disk log storage (placeholder, filled by the storage work).
