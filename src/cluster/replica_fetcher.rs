//! The follower fetcher over TCP (Kafka's `ReplicaFetcherManager` with one
//! `ReplicaFetcherThread` per source broker): moves the sans-io fetch sessions of the
//! [`ReplicaManager`] onto the network.
//!
//! One tokio task per source broker (the leader we fetch from) polls its session
//! ([`ReplicaManager::poll_fetch_request`]), sends the Fetch with the request id as the
//! correlation id over a [`PeerClient`], and hands the response to
//! [`ReplicaManager::on_fetch_response`] or the failure (connect refused, timeout, bad
//! response) to [`ReplicaManager::on_fetch_failure`], which backs the session off
//! (`replica.fetch.backoff.ms`). After any failure the connection is dropped, so a late answer
//! to a timed-out fetch can never be read as the answer to the next one. The leader long-polls
//! (`replica.fetch.wait.max.ms`), so an empty answer is followed by the next fetch at once.
//!
//! The [`ReplicaFetcherManager`] starts a task for every source broker the replica manager
//! has a session with and stops the tasks whose session is gone, on every change the replica
//! manager signals and at least every 100 ms.
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::clock::SharedClock;
use crate::net::peer::PeerSecurity;
use crate::net::peer::{decode_body, PeerClient, PeerError};
use crate::protocol::codec::Uuid;
use crate::protocol::messages::fetch_request::FetchRequest;
use crate::protocol::messages::fetch_response::FetchResponse;
use crate::replica::ids::BrokerId;
use crate::replica::ReplicaManager;

/// Fetch version brokers speak to each other: DivergingEpoch (v12+), topic ids (v13+) and
/// ReplicaState with the broker epoch (v15+, KIP-903).
pub const REPLICA_FETCH_VERSION: i16 = 15;

const FETCH_API_KEY: i16 = 1;

/// How often the manager re-checks the sessions, and how long an idle task sleeps at most
/// before polling its session again.
const POLL_INTERVAL: Duration = Duration::from_millis(100);
/// Durable mode: how long a follower waits for the fsync of what it fetched before it fetches
/// again regardless (the fsync still covers those records; only the wait ends).
const DURABLE_FETCH_TIMEOUT: Duration = Duration::from_secs(30);

/// Maps a broker id to the `host:port` of the listener brokers use to reach it.
pub type BrokerAddressResolver = Arc<dyn Fn(BrokerId) -> Option<String> + Send + Sync>;

/// Starts and stops one fetcher task per source broker.
pub struct ReplicaFetcherManager {
    replicas: Arc<ReplicaManager>,
    resolver: BrokerAddressResolver,
    clock: SharedClock,
    client_id: String,
    /// TLS and the SASL login for the inter-broker listener, when it is secured.
    security: PeerSecurity,
    tasks: HashMap<BrokerId, (CancellationToken, JoinHandle<()>)>,
}

impl ReplicaFetcherManager {
    pub fn new(
        replicas: Arc<ReplicaManager>,
        resolver: BrokerAddressResolver,
        clock: SharedClock,
    ) -> Self {
        let client_id = format!("broker-{}-fetcher", replicas.local());
        ReplicaFetcherManager {
            replicas,
            resolver,
            clock,
            client_id,
            security: PeerSecurity::default(),
            tasks: HashMap::new(),
        }
    }

    /// Fetches with the inter-broker listener's TLS and SASL login.
    pub fn with_security(mut self, security: PeerSecurity) -> Self {
        self.security = security;
        self
    }

    /// Runs until `shutdown`, then stops every fetcher task and waits for them.
    pub async fn run(mut self, shutdown: CancellationToken) {
        let mut changes = self.replicas.subscribe_replica_changes();
        loop {
            self.reconcile(&shutdown);
            tokio::select! {
                _ = shutdown.cancelled() => break,
                _ = changes.changed() => {}
                _ = tokio::time::sleep(POLL_INTERVAL) => {}
            }
        }
        for (_, (token, handle)) in self.tasks.drain() {
            token.cancel();
            let _ = handle.await;
        }
    }

    /// The source brokers with a running task (tests, diagnostics).
    pub fn sources(&self) -> Vec<BrokerId> {
        self.tasks.keys().copied().collect()
    }

    /// Starts tasks for new sources and stops those of sources without a session.
    pub fn reconcile(&mut self, shutdown: &CancellationToken) {
        let sources = self.replicas.fetch_sources();
        self.tasks.retain(|source, (token, handle)| {
            let keep = sources.contains(source) && !handle.is_finished();
            if !keep {
                token.cancel();
            }
            keep
        });
        for source in sources {
            if self.tasks.contains_key(&source) {
                continue;
            }
            let token = shutdown.child_token();
            let task = FetcherTask {
                source,
                replicas: self.replicas.clone(),
                resolver: self.resolver.clone(),
                clock: self.clock.clone(),
                client_id: self.client_id.clone(),
                security: self.security.clone(),
                connection: None,
            };
            tracing::debug!(%source, "starting replica fetcher");
            let handle = tokio::spawn(task.run(token.clone()));
            self.tasks.insert(source, (token, handle));
        }
    }
}

/// Fetching from one source broker.
struct FetcherTask {
    source: BrokerId,
    replicas: Arc<ReplicaManager>,
    resolver: BrokerAddressResolver,
    clock: SharedClock,
    client_id: String,
    security: PeerSecurity,
    connection: Option<PeerClient>,
}

/// Why one fetch round failed (for the debug log).
#[derive(Debug)]
#[allow(dead_code)]
enum FetchFailure {
    UnknownAddress,
    Connect(std::io::Error),
    Call(PeerError),
}

impl FetcherTask {
    async fn run(mut self, stop: CancellationToken) {
        let mut changes = self.replicas.subscribe_replica_changes();
        loop {
            if stop.is_cancelled() {
                return;
            }
            changes.borrow_and_update();
            if self.connection.is_none() && (self.resolver)(self.source).is_none() {
                // No address for the leader yet (its registration is not in our metadata):
                // wait for one without claiming the session's request, so no back-off is
                // charged to the partitions for it (nor to another transport fetching them).
                tokio::select! {
                    _ = stop.cancelled() => return,
                    _ = changes.changed() => {}
                    _ = tokio::time::sleep(POLL_INTERVAL) => {}
                }
                continue;
            }
            let now_ms = self.clock.now_ms();
            let Some((request_id, request)) = self.replicas.poll_fetch_request(self.source, now_ms)
            else {
                // Nothing to send (backing off, or no partition to fetch yet): wait for a
                // change to our replicas or the next poll.
                tokio::select! {
                    _ = stop.cancelled() => return,
                    _ = changes.changed() => {}
                    _ = tokio::time::sleep(POLL_INTERVAL) => {}
                }
                continue;
            };
            let outcome = tokio::select! {
                _ = stop.cancelled() => return,
                r = self.fetch(request_id, &request) => r,
            };
            let now_ms = self.clock.now_ms();
            match outcome {
                Ok(response) => {
                    let outcome =
                        self.replicas
                            .on_fetch_response(self.source, request_id, &response, now_ms);
                    if !outcome.appended.is_empty() {
                        let deadline = tokio::time::Instant::now() + DURABLE_FETCH_TIMEOUT;
                        tokio::select! {
                            _ = stop.cancelled() => return,
                            _ = self.replicas.sync_fetched(&outcome.appended, deadline) => {}
                        }
                    }
                }
                Err(e) => {
                    tracing::debug!(source = %self.source, error = ?e, "replica fetch failed");
                    // The stream may hold a late answer: never reuse it.
                    self.connection = None;
                    self.replicas
                        .on_fetch_failure(self.source, request_id, now_ms);
                }
            }
        }
    }

    async fn fetch(
        &mut self,
        request_id: u64,
        request: &FetchRequest,
    ) -> Result<FetchResponse, FetchFailure> {
        let config = self.replicas.fetcher_config();
        // The leader may hold the fetch for max_wait_ms before answering.
        let timeout_ms = (config.request_timeout_ms.max(0) as u64)
            .saturating_add(config.max_wait_ms.max(0) as u64);
        if self.connection.is_none() {
            let addr = (self.resolver)(self.source).ok_or(FetchFailure::UnknownAddress)?;
            let mut client =
                PeerClient::connect_secured(&addr, &self.client_id, timeout_ms, &self.security)
                    .await
                    .map_err(FetchFailure::Connect)?;
            client.set_request_timeout_ms(timeout_ms);
            self.connection = Some(client);
        }
        let Some(client) = self.connection.as_mut() else {
            return Err(FetchFailure::UnknownAddress);
        };
        // Correlation ids are i32 on the wire; request ids only need to differ from the
        // previous one on this connection, which wrapping keeps.
        let mut body = client
            .call_with_correlation_id(
                FETCH_API_KEY,
                REPLICA_FETCH_VERSION,
                request_id as i32,
                request,
            )
            .await
            .map_err(FetchFailure::Call)?;
        let mut response: FetchResponse =
            decode_body(&mut body, REPLICA_FETCH_VERSION).map_err(FetchFailure::Call)?;
        name_topics(&mut response, request);
        Ok(response)
    }
}

/// From Fetch v13 responses name topics by id only; the replica manager matches partitions by
/// name, so take the names from the request.
fn name_topics(response: &mut FetchResponse, request: &FetchRequest) {
    let by_id: HashMap<Uuid, &str> = request
        .topics
        .iter()
        .map(|t| (t.topic_id, t.topic.as_str()))
        .collect();
    for t in &mut response.responses {
        if t.topic.is_empty() {
            if let Some(name) = by_id.get(&t.topic_id) {
                t.topic = name.to_string();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::messages::fetch_request::FetchTopic;
    use crate::protocol::messages::fetch_response::FetchableTopicResponse;
    use crate::replica::manager::ReplicationConfig;
    use crate::replica::{LeaderEpoch, PartitionChange, PartitionConfig, PartitionEpoch};
    use crate::storage::{LogConfig, LogManager};

    fn change(leader: i32, epoch: i32) -> PartitionChange {
        PartitionChange {
            topic: "t".into(),
            partition: 0,
            topic_id: Uuid([7; 16]),
            leader: Some(BrokerId(leader)),
            leader_epoch: LeaderEpoch(epoch),
            partition_epoch: PartitionEpoch(epoch),
            replicas: vec![BrokerId(1), BrokerId(2)],
            isr: vec![BrokerId(1), BrokerId(2)],
        }
    }

    #[tokio::test]
    async fn tasks_follow_the_sessions() {
        let dir = tempfile::tempdir().unwrap();
        let logs =
            LogManager::open(vec![dir.path().to_path_buf()], 2, LogConfig::default(), 0).unwrap();
        let replicas = Arc::new(ReplicaManager::with_config(
            Arc::new(logs),
            ReplicationConfig {
                local: BrokerId(2),
                ..ReplicationConfig::default()
            },
        ));
        // Nobody listens at the resolved address: the task keeps failing and backing off.
        let resolver: BrokerAddressResolver = Arc::new(|_| None);
        let mut manager =
            ReplicaFetcherManager::new(replicas.clone(), resolver, crate::clock::system());
        let shutdown = CancellationToken::new();
        manager.reconcile(&shutdown);
        assert!(manager.sources().is_empty());

        replicas
            .apply_partition_change(&change(1, 0), PartitionConfig::default(), 0)
            .unwrap();
        manager.reconcile(&shutdown);
        assert_eq!(manager.sources(), vec![BrokerId(1)]);

        // We become leader: the session with broker 1 ends (once its failed request is
        // answered) and so does its task.
        replicas
            .apply_partition_change(&change(2, 1), PartitionConfig::default(), 0)
            .unwrap();
        let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
        loop {
            manager.reconcile(&shutdown);
            if manager.sources().is_empty() {
                break;
            }
            assert!(tokio::time::Instant::now() < deadline, "task not stopped");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        shutdown.cancel();
    }

    #[test]
    fn responses_by_topic_id_get_their_names_back() {
        let id = Uuid([3; 16]);
        let request = FetchRequest {
            topics: vec![FetchTopic {
                topic: "orders".into(),
                topic_id: id,
                ..Default::default()
            }],
            ..Default::default()
        };
        let mut response = FetchResponse {
            responses: vec![FetchableTopicResponse {
                topic_id: id,
                ..Default::default()
            }],
            ..Default::default()
        };
        name_topics(&mut response, &request);
        assert_eq!(response.responses[0].topic, "orders");
    }
}
