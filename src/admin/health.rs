//! `/health/live` and `/health/ready`, for load balancers and Kubernetes probes.
//!
//! Live: the process answers HTTP. Ready: the node can serve clients, i.e. its log dirs are
//! loaded (at least one online), and, for a broker, it is registered with the controller,
//! its metadata has caught up, the controller acknowledged a heartbeat within
//! `broker.session.timeout.ms`, and its metadata image does not show it fenced. A broker whose heartbeats go
//! unanswered for a session is fenced by the controller (Kafka's rule), so it reports not
//! ready before it hears so. A controller-only node is ready when its quorum has a leader.
use std::sync::atomic::Ordering;

use crate::broker::Broker;

/// Why a node is not ready (None: ready).
pub fn not_ready_reason(broker: &Broker) -> Option<String> {
    let logs = broker.replicas.logs();
    if !logs.log_dirs().is_empty() && logs.offline_log_dirs().len() >= logs.log_dirs().len() {
        return Some("every log dir is offline".into());
    }
    let cluster = &broker.cluster;
    if !cluster.is_broker {
        return match cluster.active_controller_id() {
            Some(_) => None,
            None => Some("the controller quorum has no leader".into()),
        };
    }
    if !*cluster.ready.borrow() {
        return Some("not yet registered and unfenced by the controller".into());
    }
    if !*cluster.caught_up.borrow() {
        return Some("metadata not caught up with the controller".into());
    }
    // The metadata image is the authority on fencing (the controller's FenceBroker and
    // UnfenceBroker records), as for every other broker's view of this one.
    let fenced = cluster
        .published
        .borrow()
        .brokers
        .get(&broker.node_id)
        .map_or(true, |b| b.fenced);
    if fenced {
        return Some("fenced by the controller".into());
    }
    let last = cluster.last_heartbeat_ok_ms.load(Ordering::Relaxed);
    let silent_ms = broker.now_ms() - last;
    if silent_ms > broker.config.broker_session_timeout_ms as i64 {
        return Some(format!(
            "no heartbeat acknowledged by the controller for {silent_ms} ms \
             (broker.session.timeout.ms {})",
            broker.config.broker_session_timeout_ms
        ));
    }
    None
}

/// The readiness answer: status code and a short JSON body.
pub fn ready(broker: &Broker) -> (u16, String) {
    match not_ready_reason(broker) {
        None => (200, "{\"status\":\"ready\"}\n".into()),
        Some(reason) => (
            503,
            serde_json::json!({ "status": "not ready", "reason": reason }).to_string() + "\n",
        ),
    }
}
