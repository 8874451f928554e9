//! Property tests of the generated codec: round-trips for every message and version,
//! differential checks against the `kafka-protocol` crate (a dev-only oracle) and a seeded
//! robustness run over random and mutated bytes, and byte-exact checks of the share-group
//! messages and records, which the oracle does not know. `support` holds the deterministic sample
//! generator the generated `Sample` impls call into.
pub mod support;

mod differential;
mod robustness;
mod roundtrip;
mod share_wire;
