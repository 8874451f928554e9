//! Outbound connections to other cluster members: the peer client that follower fetches,
//! forwarding to the controller and transaction markers use. Below the cluster tasks and
//! above only the wire layer (`protocol`), so nothing in it knows handlers or the broker.
pub mod peer;
