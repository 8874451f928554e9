//! Typed broker and topic configuration (placeholder, filled by the config work).
