//! The admin HTTP listener and what it serves: `/metrics` (Kafka's MBean names as the
//! Prometheus JMX exporter renders them), `/health/live` and `/health/ready`.
//!
//! - [`crate::metrics`] (a leaf beside this module, so `broker`, `handlers` and `server` may
//!   use it): the registry and the handles the request path updates.
//! - [`scrape`]: gauges computed from the broker's state when `/metrics` is read.
//! - [`health`]: liveness and readiness.
//! - [`server`]: the HTTP/1.1 listener (hyper), bounded in connections, header size and time.
pub mod health;
pub mod scrape;
pub mod server;
