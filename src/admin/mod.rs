//! The admin HTTP listener and what it serves: `/metrics` (Kafka's MBean names as the
//! Prometheus JMX exporter renders them), `/health/live`, `/health/ready` and the web console.
//!
//! - [`crate::metrics`] (a leaf beside this module, so `broker`, `handlers` and `server` may
//!   use it): the registry and the handles the request path updates.
//! - [`scrape`]: gauges computed from the broker's state when `/metrics` is read.
//! - [`health`]: liveness and readiness.
//! - [`server`]: the HTTP/1.1 listener (hyper), bounded in connections, header size and time.
//! - [`lag`]: consumer lag from committed offsets, shared by `/metrics` and the console.
//! - [`console`]: the console's page, embedded assets and routes; [`api`] and [`api_groups`]
//!   its JSON; [`sampler`] the per-second throughput history its plots draw; [`peers`] what
//!   the other brokers of a cluster hold (partition offsets and sizes, the groups they
//!   coordinate), read with Kafka requests while the console is in use.
pub mod api;
pub mod api_groups;
pub mod console;
pub mod health;
pub mod lag;
pub mod peers;
pub mod sampler;
pub mod scrape;
pub mod server;
