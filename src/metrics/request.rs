//! Kafka's `RequestMetrics` (`kafka.network:type=RequestMetrics,name=...,request=...`): requests
//! per API and version, errors per API and error code, and the phase histograms of each
//! request (total, request queue, local, remote, response queue, response send), in ms.
//!
//! As Kafka's `RequestChannel.updateRequestMetrics`, a Fetch counts under `Fetch` and also under
//! `FetchFollower` (a replica's fetch: `replica_id >= 0` or, from v15, `ReplicaState`) or
//! `FetchConsumer` (everyone else), so follower traffic can be told apart from consumers.
//!
//! The phases as Strata has them:
//! - request queue: the wait for one of the broker's `queued.max.requests` slots. Strata
//!   takes the slot after a frame's size prefix is read and before its body is, and starts the
//!   handler as soon as the body is in, so this is the only wait between a request arriving
//!   and its handler starting (zero unless the handlers are falling behind);
//! - remote: the time the request waited in purgatory (`replica::wait`: an acks=all
//!   produce waiting for the high watermark, a long-poll fetch waiting for data, a coordinator
//!   append waiting for replication), summed over its waits;
//! - local: the rest of the handler's time, from the frame fully read to its response ready;
//! - response queue: the wait behind earlier responses of the same connection, which go out in
//!   request order;
//! - response send: writing the response to the socket buffer.
use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

use super::latency_buckets_ms;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RequestVersionLabels {
    request: String,
    version: i16,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RequestLabel {
    request: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RequestErrorLabels {
    request: String,
    error: String,
}

/// Fetch's api key, whose requests are also counted as `FetchConsumer` or `FetchFollower`.
const FETCH: i16 = 1;

/// The phases of one request (see the module comment for what each measures).
#[derive(Clone, Copy, Debug, Default)]
pub struct RequestTimes {
    pub request_queue: Duration,
    pub local: Duration,
    pub remote: Duration,
    pub response_queue: Duration,
    pub response_send: Duration,
}

impl RequestTimes {
    pub fn total(&self) -> Duration {
        self.request_queue + self.local + self.remote + self.response_queue + self.response_send
    }
}

/// What a request's handler tells the connection about itself while it runs: its time in
/// purgatory and whether it is a follower's fetch. Shared by the handler's start (run in the
/// reader) and its spawned remainder through a task-local, so the wait helpers need no
/// parameter threaded through every handler.
#[derive(Debug, Default)]
pub struct RequestTiming {
    remote_nanos: AtomicU64,
    follower_fetch: AtomicBool,
}

tokio::task_local! {
    static REQUEST: Arc<RequestTiming>;
}

impl RequestTiming {
    pub fn new() -> Arc<RequestTiming> {
        Arc::new(RequestTiming::default())
    }

    /// Runs `f` with this request's timing as the current one.
    pub fn scope<F: Future>(
        self: &Arc<Self>,
        f: F,
    ) -> tokio::task::futures::TaskLocalFuture<Arc<RequestTiming>, F> {
        REQUEST.scope(self.clone(), f)
    }

    /// Runs `f` (a first poll of the request's future, made inline) with this request's
    /// timing as the current one.
    pub fn sync_scope<R>(self: &Arc<Self>, f: impl FnOnce() -> R) -> R {
        REQUEST.sync_scope(self.clone(), f)
    }

    /// The time spent in purgatory so far.
    pub fn remote(&self) -> Duration {
        Duration::from_nanos(self.remote_nanos.load(Ordering::Relaxed))
    }

    pub fn is_follower_fetch(&self) -> bool {
        self.follower_fetch.load(Ordering::Relaxed)
    }
}

/// Adds a purgatory wait to the current request's remote time (no request: ignored, e.g. a
/// background task's wait).
pub fn add_remote_time(waited: Duration) {
    let _ = REQUEST.try_with(|t| {
        t.remote_nanos
            .fetch_add(waited.as_nanos() as u64, Ordering::Relaxed)
    });
}

/// Marks the current request as a replica's fetch (`FetchFollower`).
pub fn mark_follower_fetch() {
    let _ = REQUEST.try_with(|t| t.follower_fetch.store(true, Ordering::Relaxed));
}

/// One `request` label's counters and histograms.
#[derive(Clone)]
struct ApiMetrics {
    min_version: i16,
    /// `requests_total` per version from `min_version`.
    by_version: Vec<Counter>,
    total_time_ms: Histogram,
    request_queue_time_ms: Histogram,
    local_time_ms: Histogram,
    remote_time_ms: Histogram,
    response_queue_time_ms: Histogram,
    response_send_time_ms: Histogram,
}

impl ApiMetrics {
    fn record(&self, api_version: i16, times: &RequestTimes) {
        if let Some(c) = usize::try_from(api_version as i32 - self.min_version as i32)
            .ok()
            .and_then(|i| self.by_version.get(i))
        {
            c.inc();
        }
        let ms = |d: Duration| d.as_secs_f64() * 1000.0;
        self.request_queue_time_ms.observe(ms(times.request_queue));
        self.local_time_ms.observe(ms(times.local));
        self.remote_time_ms.observe(ms(times.remote));
        self.response_queue_time_ms
            .observe(ms(times.response_queue));
        self.response_send_time_ms.observe(ms(times.response_send));
        self.total_time_ms.observe(ms(times.total()));
    }
}

/// Kafka's request name for an API module name (`offset_commit` -> `OffsetCommit`).
fn request_name(module: &str) -> String {
    module
        .split('_')
        .map(|w| {
            let mut c = w.chars();
            c.next()
                .map(|f| f.to_ascii_uppercase().to_string() + c.as_str())
                .unwrap_or_default()
        })
        .collect()
}

/// A phase histogram per `request` label, each made with the latency buckets.
type PhaseFamily = Family<RequestLabel, Histogram, fn() -> Histogram>;

/// The families of [`ApiMetrics`], to make one per `request` label.
struct Families {
    requests: Family<RequestVersionLabels, Counter>,
    histograms: [PhaseFamily; 6],
}

impl Families {
    fn api(&self, name: &str, min: i16, max: i16) -> ApiMetrics {
        let label = RequestLabel {
            request: name.to_string(),
        };
        let h = |i: usize| self.histograms[i].get_or_create_owned(&label);
        ApiMetrics {
            min_version: min,
            by_version: (min..=max)
                .map(|version| {
                    self.requests.get_or_create_owned(&RequestVersionLabels {
                        request: name.to_string(),
                        version,
                    })
                })
                .collect(),
            total_time_ms: h(0),
            request_queue_time_ms: h(1),
            local_time_ms: h(2),
            remote_time_ms: h(3),
            response_queue_time_ms: h(4),
            response_send_time_ms: h(5),
        }
    }
}

/// One served API's `request` label and versions; its series are made on its first request.
struct LazyApi {
    name: String,
    min_version: i16,
    max_version: i16,
    metrics: OnceLock<ApiMetrics>,
}

impl LazyApi {
    fn new(name: String, min_version: i16, max_version: i16) -> LazyApi {
        LazyApi {
            name,
            min_version,
            max_version,
            metrics: OnceLock::new(),
        }
    }

    fn get(&self, families: &Families) -> &ApiMetrics {
        self.metrics
            .get_or_init(|| families.api(&self.name, self.min_version, self.max_version))
    }
}

/// The request metrics of every served API.
///
/// An API's series appear with its first request, not at start-up as Kafka's MBeans do: six
/// histograms of every served API (and of FetchConsumer and FetchFollower) made a broker's idle
/// scrape 794 KB, most of it zero buckets of APIs no client calls, and a scrape every second
/// then cost about 11 % of the broker's CPU per GB produced (BENCHMARKS.md, "Metrics on vs
/// off"). A dashboard panel shows no data, rather than 0, for an API never called.
pub struct RequestMetrics {
    families: Families,
    /// Indexed by api key.
    apis: Vec<Option<LazyApi>>,
    fetch_consumer: Option<LazyApi>,
    fetch_follower: Option<LazyApi>,
    errors: Family<RequestErrorLabels, Counter>,
}

impl RequestMetrics {
    /// Registers the families; `apis` is the served-API table (api key, module name, min
    /// version, max version).
    pub(super) fn register(
        registry: &mut Registry,
        apis: &[(i16, &str, i16, i16)],
    ) -> RequestMetrics {
        let families = Families {
            requests: Family::default(),
            histograms: std::array::from_fn(|_| {
                Family::new_with_constructor(latency_buckets_ms as fn() -> Histogram)
            }),
        };
        let errors = Family::<RequestErrorLabels, Counter>::default();
        let network = registry.sub_registry_with_prefix("kafka_network_requestmetrics");
        network.register(
            "requests",
            "Requests received per API and version (RequestsPerSec)",
            families.requests.clone(),
        );
        network.register(
            "errors",
            "Errors per API and error code, counted per partition for Produce and Fetch (ErrorsPerSec)",
            errors.clone(),
        );
        let helps = [
            ("totaltimems", "Request time from its arrival to its response written, ms"),
            ("requestqueuetimems", "Time a request waited for a queued.max.requests slot before its handler started, ms"),
            ("localtimems", "Time in the handler, leaving out purgatory waits, ms"),
            ("remotetimems", "Time waiting in purgatory: acks=all replication, long-poll fetch, coordinator appends, ms"),
            ("responsequeuetimems", "Time a ready response waited behind earlier responses of its connection, ms"),
            ("responsesendtimems", "Time writing the response, ms"),
        ];
        for ((name, help), family) in helps.into_iter().zip(&families.histograms) {
            network.register(name, help, family.clone());
        }
        let max_key = apis.iter().map(|a| a.0).max().unwrap_or(0).max(0) as usize;
        let mut table: Vec<Option<LazyApi>> = (0..=max_key).map(|_| None).collect();
        let (mut fetch_consumer, mut fetch_follower) = (None, None);
        for &(key, module, min, max) in apis {
            let name = request_name(module);
            if key == FETCH {
                fetch_consumer = Some(LazyApi::new("FetchConsumer".into(), min, max));
                fetch_follower = Some(LazyApi::new("FetchFollower".into(), min, max));
            }
            if let Ok(i) = usize::try_from(key) {
                table[i] = Some(LazyApi::new(name, min, max));
            }
        }
        RequestMetrics {
            families,
            apis: table,
            fetch_consumer,
            fetch_follower,
            errors,
        }
    }

    fn api(&self, api_key: i16) -> Option<&LazyApi> {
        usize::try_from(api_key)
            .ok()
            .and_then(|i| self.apis.get(i))?
            .as_ref()
    }

    /// Counts a request of a served API and version, with its phases.
    pub fn record(
        &self,
        api_key: i16,
        api_version: i16,
        follower_fetch: bool,
        times: RequestTimes,
    ) {
        let Some(api) = self.api(api_key) else {
            return;
        };
        api.get(&self.families).record(api_version, &times);
        if api_key == FETCH {
            let split = match follower_fetch {
                true => &self.fetch_follower,
                false => &self.fetch_consumer,
            };
            if let Some(m) = split {
                m.get(&self.families).record(api_version, &times);
            }
        }
    }

    /// Counts an error answered for an API (per partition for Produce and Fetch, as Kafka's
    /// response error counts). NONE is not counted.
    pub fn record_error(&self, api_key: i16, error: crate::error::ErrorCode) {
        if error.is_ok() {
            return;
        }
        let Some(api) = self.api(api_key) else {
            return;
        };
        self.errors
            .get_or_create(&RequestErrorLabels {
                request: api.name.clone(),
                error: format!("{error:?}"),
            })
            .inc();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn remote_time_and_follower_flag_reach_the_request_through_its_scope() {
        let t = RequestTiming::new();
        t.scope(async {
            add_remote_time(Duration::from_millis(3));
            mark_follower_fetch();
        })
        .await;
        // A spawned remainder in the same scope adds to the same request.
        let t2 = t.clone();
        tokio::spawn(t2.scope(async { add_remote_time(Duration::from_millis(2)) }))
            .await
            .unwrap();
        // Outside any request: ignored.
        add_remote_time(Duration::from_secs(1));
        assert_eq!(t.remote(), Duration::from_millis(5));
        assert!(t.is_follower_fetch());
    }
}
