//! The broker's counters and histograms that the request path updates, in one
//! `prometheus-client` registry, named as the Prometheus JMX exporter renders Kafka's MBeans
//! with Strimzi's usual rules (`kafka.server<type=BrokerTopicMetrics, name=MessagesInPerSec,
//! topic=t><>Count` becomes `kafka_server_brokertopicmetrics_messagesin_total{topic="t"}`;
//! the series without a `topic` label is the all-topics MBean).
//!
//! This part is a leaf: it knows neither the broker nor the network, so the handlers and the
//! network front update it through handles made once (per topic, per API, per listener) and
//! the request path does no formatting and no allocation per record: a produce or fetch
//! looks its topic's handle up once per topic and request (a map read that does
//! not allocate once the topic has been seen). Gauges that describe state (partitions, ISR,
//! lag, log sizes) are not kept here: `admin::scrape` computes them when `/metrics` is read.
//!
//! - this file: the registry, per-topic `BrokerTopicMetrics`, connections per listener, log
//!   flush time;
//! - [`request`]: `RequestMetrics` (requests, errors, phase histograms);
//! - [`replica`]: ISR changes and unclean leader elections;
//! - [`coordinator`]: the group and transaction coordinators' counters.
//!
//! Series of a deleted topic are removed ([`BrokerMetrics::remove_topic`], called by the
//! metadata publisher), so `/metrics` does not keep them until a restart.
use std::sync::Arc;

pub mod coordinator;
pub mod replica;
pub mod request;

pub use coordinator::{GroupCoordinatorMetrics, ShareGroupMetrics, TxnCoordinatorMetrics};
pub use replica::{IsrChange, ReplicationMetrics};
pub use request::{RequestTimes, RequestTiming};

use dashmap::DashMap;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

/// A `topic` label, or no label at all for the all-topics series (as the JMX exporter renders
/// the MBean without a `topic` key).
type TopicLabel = Vec<(&'static str, String)>;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ListenerLabel {
    listener: String,
}

/// One topic's `BrokerTopicMetrics` counters (Kafka's `BrokerTopicStats.topicStats`).
#[derive(Clone, Default)]
pub struct TopicCounters {
    pub messages_in: Counter,
    pub bytes_in: Counter,
    pub bytes_out: Counter,
    pub total_produce_requests: Counter,
    pub failed_produce_requests: Counter,
    pub total_fetch_requests: Counter,
    pub failed_fetch_requests: Counter,
}

/// The families behind [`TopicCounters`]: one per Kafka meter.
#[derive(Default)]
struct TopicFamilies {
    messages_in: Family<TopicLabel, Counter>,
    bytes_in: Family<TopicLabel, Counter>,
    bytes_out: Family<TopicLabel, Counter>,
    total_produce_requests: Family<TopicLabel, Counter>,
    failed_produce_requests: Family<TopicLabel, Counter>,
    total_fetch_requests: Family<TopicLabel, Counter>,
    failed_fetch_requests: Family<TopicLabel, Counter>,
}

impl TopicFamilies {
    fn counters(&self, label: &TopicLabel) -> TopicCounters {
        TopicCounters {
            messages_in: self.messages_in.get_or_create_owned(label),
            bytes_in: self.bytes_in.get_or_create_owned(label),
            bytes_out: self.bytes_out.get_or_create_owned(label),
            total_produce_requests: self.total_produce_requests.get_or_create_owned(label),
            failed_produce_requests: self.failed_produce_requests.get_or_create_owned(label),
            total_fetch_requests: self.total_fetch_requests.get_or_create_owned(label),
            failed_fetch_requests: self.failed_fetch_requests.get_or_create_owned(label),
        }
    }
}

/// A produce or fetch outcome for one partition, to count on a topic and on all topics.
#[derive(Clone, Copy, Debug)]
pub enum PartitionOutcome {
    /// Appended: records and bytes in.
    Produced {
        records: u64,
        bytes: u64,
    },
    /// Read for a consumer: bytes out.
    Fetched {
        bytes: u64,
    },
    /// Refused; `counts_as_failed` is Kafka's choice of which errors mark the failed meter.
    ProduceFailed {
        counts_as_failed: bool,
    },
    FetchFailed {
        counts_as_failed: bool,
    },
}

/// Whether a partition error marks Kafka's failed-produce or failed-fetch meter: Kafka's
/// `ReplicaManager` leaves out the errors a client routinely recovers from (stale metadata,
/// unknown partitions) and those of bad input or a failed disk, and marks the rest.
pub fn counts_as_failed(error: crate::error::ErrorCode) -> bool {
    use crate::error::ErrorCode::*;
    !matches!(
        error,
        UNKNOWN_TOPIC_OR_PARTITION
            | NOT_LEADER_OR_FOLLOWER
            | MESSAGE_TOO_LARGE
            | RECORD_LIST_TOO_LARGE
            | CORRUPT_MESSAGE
            | KAFKA_STORAGE_ERROR
            | FENCED_LEADER_EPOCH
            | UNKNOWN_LEADER_EPOCH
            | OFFSET_OUT_OF_RANGE
            | UNKNOWN_TOPIC_ID
            | INCONSISTENT_TOPIC_ID
    )
}

/// Connections of one listener (Kafka's `socket-server-metrics` with a `listener` tag).
#[derive(Clone)]
pub struct ListenerCounters {
    pub connection_count: Gauge,
    pub creation_total: Counter,
    pub close_total: Counter,
}

/// Buckets in milliseconds for request phases: 0.1 ms to ~52 s.
pub(crate) fn latency_buckets_ms() -> Histogram {
    Histogram::new(prometheus_client::metrics::histogram::exponential_buckets(
        0.1, 2.0, 20,
    ))
}

/// The broker's registry and the handles the request path updates.
pub struct BrokerMetrics {
    registry: Registry,
    topics: TopicFamilies,
    all_topics: TopicCounters,
    per_topic: DashMap<String, TopicCounters>,
    pub requests: request::RequestMetrics,
    pub replication: ReplicationMetrics,
    pub group_coordinator: GroupCoordinatorMetrics,
    pub txn_coordinator: TxnCoordinatorMetrics,
    pub share_groups: ShareGroupMetrics,
    listeners: Family<ListenerLabel, Gauge>,
    listener_creations: Family<ListenerLabel, Counter>,
    listener_closes: Family<ListenerLabel, Counter>,
    /// Kafka's `LogFlushStats.LogFlushRateAndTimeMs`.
    pub log_flush_time_ms: Histogram,
}

impl BrokerMetrics {
    /// A registry with every family registered; `apis` is the served-API table (api key,
    /// module name, min version, max version).
    pub fn new(apis: &[(i16, &str, i16, i16)]) -> Arc<BrokerMetrics> {
        let mut registry = Registry::default();
        let topics = TopicFamilies::default();
        let server = registry.sub_registry_with_prefix("kafka_server_brokertopicmetrics");
        for (name, help, family) in [
            (
                "messagesin",
                "Records appended (MessagesInPerSec)",
                &topics.messages_in,
            ),
            (
                "bytesin",
                "Bytes produced (BytesInPerSec)",
                &topics.bytes_in,
            ),
            (
                "bytesout",
                "Bytes fetched by consumers (BytesOutPerSec)",
                &topics.bytes_out,
            ),
            (
                "totalproducerequests",
                "Partition appends attempted (TotalProduceRequestsPerSec)",
                &topics.total_produce_requests,
            ),
            (
                "failedproducerequests",
                "Partition appends failed (FailedProduceRequestsPerSec)",
                &topics.failed_produce_requests,
            ),
            (
                "totalfetchrequests",
                "Partition reads by consumers (TotalFetchRequestsPerSec)",
                &topics.total_fetch_requests,
            ),
            (
                "failedfetchrequests",
                "Partition reads failed (FailedFetchRequestsPerSec)",
                &topics.failed_fetch_requests,
            ),
        ] {
            server.register(name, help, family.clone());
        }
        let all_topics = topics.counters(&Vec::new());

        let requests = request::RequestMetrics::register(&mut registry, apis);
        let replication = ReplicationMetrics::default();
        replication.register(&mut registry);
        let group_coordinator = GroupCoordinatorMetrics::default();
        group_coordinator.register(&mut registry);
        let txn_coordinator = TxnCoordinatorMetrics::default();
        txn_coordinator.register(&mut registry);
        let share_groups = ShareGroupMetrics::default();
        share_groups.register(&mut registry);

        let listeners = Family::<ListenerLabel, Gauge>::default();
        let listener_creations = Family::<ListenerLabel, Counter>::default();
        let listener_closes = Family::<ListenerLabel, Counter>::default();
        let socket = registry.sub_registry_with_prefix("kafka_server_socket_server_metrics");
        socket.register(
            "connection_count",
            "Open connections per listener",
            listeners.clone(),
        );
        socket.register(
            "connection_creation",
            "Connections accepted per listener",
            listener_creations.clone(),
        );
        socket.register(
            "connection_close",
            "Connections closed per listener",
            listener_closes.clone(),
        );

        let log_flush_time_ms = latency_buckets_ms();
        registry.register(
            "kafka_log_logflushstats_logflushrateandtimems",
            "Time of each log flush (fsync), ms",
            log_flush_time_ms.clone(),
        );
        Arc::new(BrokerMetrics {
            registry,
            topics,
            all_topics,
            per_topic: DashMap::new(),
            requests,
            replication,
            group_coordinator,
            txn_coordinator,
            share_groups,
            listeners,
            listener_creations,
            listener_closes,
            log_flush_time_ms,
        })
    }

    /// The registry, for the `/metrics` encoder.
    pub fn registry(&self) -> &Registry {
        &self.registry
    }

    /// One topic's counters; made (with its label) the first time the topic is seen.
    pub fn topic(&self, topic: &str) -> TopicCounters {
        if let Some(c) = self.per_topic.get(topic) {
            return c.clone();
        }
        self.per_topic
            .entry(topic.to_string())
            .or_insert_with(|| self.topics.counters(&vec![("topic", topic.to_string())]))
            .clone()
    }

    /// As [`BrokerMetrics::topic`], for a topic not seen before only when `exists` says so.
    pub fn topic_if(&self, topic: &str, exists: impl FnOnce() -> bool) -> Option<TopicCounters> {
        if let Some(c) = self.per_topic.get(topic) {
            return Some(c.clone());
        }
        exists().then(|| self.topic(topic))
    }

    /// Counts one partition's produce or fetch outcome on its topic (None: a topic this
    /// broker has no replica of, counted on all topics only so that requests for made-up
    /// topic names cannot create series) and on all topics.
    pub fn record(&self, topic: Option<&TopicCounters>, outcome: PartitionOutcome) {
        for c in topic.into_iter().chain([&self.all_topics]) {
            match outcome {
                PartitionOutcome::Produced { records, bytes } => {
                    c.total_produce_requests.inc();
                    c.messages_in.inc_by(records);
                    c.bytes_in.inc_by(bytes);
                }
                PartitionOutcome::ProduceFailed { counts_as_failed } => {
                    c.total_produce_requests.inc();
                    if counts_as_failed {
                        c.failed_produce_requests.inc();
                    }
                }
                PartitionOutcome::Fetched { bytes } => {
                    c.total_fetch_requests.inc();
                    c.bytes_out.inc_by(bytes);
                }
                PartitionOutcome::FetchFailed { counts_as_failed } => {
                    c.total_fetch_requests.inc();
                    if counts_as_failed {
                        c.failed_fetch_requests.inc();
                    }
                }
            }
        }
    }

    /// Drops a deleted topic's series (Kafka's `BrokerTopicStats.removeMetrics`). A request
    /// still holding the topic's handles counts into them unseen.
    pub fn remove_topic(&self, topic: &str) {
        if self.per_topic.remove(topic).is_none() {
            return;
        }
        let label: TopicLabel = vec![("topic", topic.to_string())];
        let f = &self.topics;
        for family in [
            &f.messages_in,
            &f.bytes_in,
            &f.bytes_out,
            &f.total_produce_requests,
            &f.failed_produce_requests,
            &f.total_fetch_requests,
            &f.failed_fetch_requests,
        ] {
            family.remove(&label);
        }
    }

    /// The all-topics counters (tests and the console read them).
    pub fn all_topics(&self) -> &TopicCounters {
        &self.all_topics
    }

    /// The connection counters of a listener (made once per listener at start-up).
    pub fn listener(&self, name: &str) -> ListenerCounters {
        let label = ListenerLabel {
            listener: name.to_string(),
        };
        ListenerCounters {
            connection_count: self.listeners.get_or_create_owned(&label),
            creation_total: self.listener_creations.get_or_create_owned(&label),
            close_total: self.listener_closes.get_or_create_owned(&label),
        }
    }
}

impl ListenerCounters {
    /// Counts an accepted connection; the guard counts its close when dropped.
    pub fn opened(&self) -> ConnectionGuard {
        self.creation_total.inc();
        self.connection_count.inc();
        ConnectionGuard(self.clone())
    }
}

/// Held for a connection's life: its drop counts the close.
pub struct ConnectionGuard(ListenerCounters);

impl Drop for ConnectionGuard {
    fn drop(&mut self) {
        self.0.connection_count.dec();
        self.0.close_total.inc();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn text(m: &BrokerMetrics) -> String {
        let mut s = String::new();
        prometheus_client::encoding::text::encode(&mut s, m.registry()).unwrap();
        s
    }

    #[test]
    fn topic_counters_render_per_topic_and_all_topics() {
        let m = BrokerMetrics::new(&[(0, "produce", 3, 12), (1, "fetch", 4, 17)]);
        let t = m.topic("orders");
        m.record(
            Some(&t),
            PartitionOutcome::Produced {
                records: 5,
                bytes: 100,
            },
        );
        m.record(
            Some(&m.topic("orders")),
            PartitionOutcome::Fetched { bytes: 40 },
        );
        m.record(
            None,
            PartitionOutcome::FetchFailed {
                counts_as_failed: false,
            },
        );
        m.record(
            Some(&m.topic("other")),
            PartitionOutcome::ProduceFailed {
                counts_as_failed: true,
            },
        );
        let s = text(&m);
        for line in [
            "kafka_server_brokertopicmetrics_messagesin_total{topic=\"orders\"} 5",
            "kafka_server_brokertopicmetrics_messagesin_total 5",
            "kafka_server_brokertopicmetrics_bytesin_total 100",
            "kafka_server_brokertopicmetrics_bytesout_total{topic=\"orders\"} 40",
            "kafka_server_brokertopicmetrics_failedproducerequests_total{topic=\"other\"} 1",
            "kafka_server_brokertopicmetrics_totalproducerequests_total 2",
            "kafka_server_brokertopicmetrics_totalfetchrequests_total 2",
            "kafka_server_brokertopicmetrics_failedfetchrequests_total 0",
        ] {
            assert!(s.lines().any(|l| l == line), "missing {line:?} in\n{s}");
        }
    }

    #[test]
    fn requests_count_per_version_and_errors_by_name() {
        let m = BrokerMetrics::new(&[(0, "produce", 3, 12), (8, "offset_commit", 0, 9)]);
        let t = RequestTimes {
            local: Duration::from_millis(2),
            response_send: Duration::from_micros(50),
            ..Default::default()
        };
        m.requests.record(0, 9, false, t);
        m.requests.record(0, 9, false, t);
        m.requests.record(8, 2, false, t);
        m.requests.record(99, 0, false, t); // not served: ignored
        m.requests
            .record_error(0, crate::error::ErrorCode::NOT_LEADER_OR_FOLLOWER);
        m.requests.record_error(0, crate::error::ErrorCode::NONE);
        let s = text(&m);
        assert!(
            s.contains(
                "kafka_network_requestmetrics_requests_total{request=\"Produce\",version=\"9\"} 2"
            ),
            "{s}"
        );
        assert!(s.contains(
            "kafka_network_requestmetrics_requests_total{request=\"OffsetCommit\",version=\"2\"} 1"
        ));
        assert!(s.contains("kafka_network_requestmetrics_totaltimems_count{request=\"Produce\"} 2"));
        assert!(s.contains(
            "kafka_network_requestmetrics_errors_total{request=\"Produce\",error=\"NOT_LEADER_OR_FOLLOWER\"} 1"
        ));
        assert!(!s.contains("error=\"NONE\""));
    }

    #[test]
    fn fetch_counts_as_fetch_and_as_consumer_or_follower_with_its_phases() {
        let m = BrokerMetrics::new(&[(1, "fetch", 4, 17)]);
        let t = RequestTimes {
            request_queue: Duration::from_millis(1),
            local: Duration::from_millis(2),
            remote: Duration::from_millis(500),
            ..Default::default()
        };
        m.requests.record(1, 17, true, t);
        m.requests.record(1, 17, false, t);
        m.requests.record(1, 16, false, t);
        let s = text(&m);
        for line in [
            "kafka_network_requestmetrics_requests_total{request=\"Fetch\",version=\"17\"} 2",
            "kafka_network_requestmetrics_requests_total{request=\"FetchFollower\",version=\"17\"} 1",
            "kafka_network_requestmetrics_requests_total{request=\"FetchConsumer\",version=\"17\"} 1",
            "kafka_network_requestmetrics_requests_total{request=\"FetchConsumer\",version=\"16\"} 1",
            "kafka_network_requestmetrics_remotetimems_sum{request=\"FetchConsumer\"} 1000.0",
            "kafka_network_requestmetrics_requestqueuetimems_sum{request=\"Fetch\"} 3.0",
            "kafka_network_requestmetrics_totaltimems_sum{request=\"FetchFollower\"} 503.0",
        ] {
            assert!(s.lines().any(|l| l == line), "missing {line:?} in\n{s}");
        }
    }

    #[test]
    fn a_removed_topic_leaves_no_series_and_starts_afresh() {
        let m = BrokerMetrics::new(&[]);
        let produced = PartitionOutcome::Produced {
            records: 2,
            bytes: 10,
        };
        m.record(Some(&m.topic("gone")), produced);
        m.record(Some(&m.topic("kept")), produced);
        m.remove_topic("gone");
        let s = text(&m);
        assert!(!s.contains("topic=\"gone\""), "{s}");
        assert!(s.contains("kafka_server_brokertopicmetrics_messagesin_total{topic=\"kept\"} 2"));
        // The all-topics totals keep what was counted.
        assert!(s.contains("kafka_server_brokertopicmetrics_messagesin_total 4"));
        // A topic of the same name created again counts from zero.
        m.record(Some(&m.topic("gone")), produced);
        assert!(
            text(&m).contains("kafka_server_brokertopicmetrics_messagesin_total{topic=\"gone\"} 2")
        );
    }

    #[test]
    fn connections_count_open_and_closed_per_listener() {
        let m = BrokerMetrics::new(&[]);
        let l = m.listener("PLAINTEXT");
        let a = l.opened();
        let _b = l.opened();
        drop(a);
        let s = text(&m);
        assert!(
            s.contains(
                "kafka_server_socket_server_metrics_connection_count{listener=\"PLAINTEXT\"} 1"
            ),
            "{s}"
        );
        assert!(s.contains("kafka_server_socket_server_metrics_connection_creation_total{listener=\"PLAINTEXT\"} 2"));
        assert!(s.contains(
            "kafka_server_socket_server_metrics_connection_close_total{listener=\"PLAINTEXT\"} 1"
        ));
    }
}
