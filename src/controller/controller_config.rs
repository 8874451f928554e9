//! The controller's own settings (Kafka's `broker.session.timeout.ms` and the topic defaults
//! that `CreateTopics` falls back on).

/// Topic config naming whether a partition may elect a leader from outside its ISR.
pub const UNCLEAN_LEADER_ELECTION_ENABLE: &str = "unclean.leader.election.enable";
/// Topic config: the ISR size below which acks=all produce is refused.
pub const MIN_INSYNC_REPLICAS: &str = "min.insync.replicas";

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ControllerConfig {
    /// A broker not heard from for this long is fenced.
    pub broker_session_timeout_ms: i64,
    /// Used when CreateTopics asks for replication factor -1.
    pub default_replication_factor: i16,
    /// Used when CreateTopics asks for -1 partitions.
    pub num_partitions: i32,
    pub min_insync_replicas: i32,
    /// The default of the topic config `unclean.leader.election.enable`.
    pub unclean_leader_election_enable: bool,
    /// Delegation tokens: the secret, lifetimes and the expiry sweep's interval.
    pub delegation_tokens: super::delegation_tokens::TokenSettings,
}

impl Default for ControllerConfig {
    fn default() -> Self {
        ControllerConfig {
            broker_session_timeout_ms: 9000,
            default_replication_factor: 1,
            num_partitions: 1,
            min_insync_replicas: 1,
            unclean_leader_election_enable: false,
            delegation_tokens: Default::default(),
        }
    }
}
