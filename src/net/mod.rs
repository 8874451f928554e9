//! Outbound connections to other cluster members: the peer client that follower fetches,
//! forwarding to the controller, transaction markers and the Raft transport use, with the
//! listener's TLS and SASL login. Below the cluster tasks and above the wire layer
//! (`protocol`) and `security`, so nothing in it knows handlers or the broker.
pub mod peer;
pub mod sasl_client;
