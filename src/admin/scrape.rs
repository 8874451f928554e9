//! The gauges `/metrics` computes from the broker's state when it is read, rather than on the
//! request path: partitions and leaders, under-replicated and under-min-ISR partitions
//! (Kafka's `ReplicaManager` gauges), the controller's view (`KafkaController`), offline log
//! dirs and log sizes (`LogManager`, `Log`), groups by state, consumer lag from the committed
//! offsets, share-group lag, and the process's CPU, memory and file descriptors (the Prometheus client
//! libraries' standard `process_*` names).
//!
//! Per-partition series (log size and end offset, lag, share lag) are capped at
//! `strata.metrics.max.partition.series` per scrape: past the cap the remaining partitions
//! are left out (in topic, partition order, lag after log series) and
//! `strata_metrics_partition_series_dropped` says how many series were, so a dashboard can
//! tell. The per-broker and per-group totals are always complete.
use std::collections::BTreeMap;

use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

use crate::broker::Broker;

type Labels = Vec<(&'static str, String)>;

/// Registers a gauge with one value and no labels.
fn gauge(registry: &mut Registry, name: &str, help: &str, value: i64) {
    let g = Gauge::<i64>::default();
    g.set(value);
    registry.register(name, help, g);
}

/// A labelled gauge family filled before registration.
fn family(registry: &mut Registry, name: &str, help: &str, values: Vec<(Labels, i64)>) {
    let f = Family::<Labels, Gauge<i64>>::default();
    for (labels, v) in values {
        f.get_or_create(&labels).set(v);
    }
    registry.register(name, help, f);
}

/// Counts per-partition series against the cap.
struct SeriesBudget {
    left: usize,
    dropped: i64,
}

impl SeriesBudget {
    fn take(&mut self, series: usize) -> bool {
        if self.left >= series {
            self.left -= series;
            true
        } else {
            self.dropped += series as i64;
            false
        }
    }
}

/// The scrape-time registry for `broker`.
pub fn collect(broker: &Broker) -> Registry {
    let mut r = Registry::default();
    let mut budget = SeriesBudget {
        left: broker.config.metrics_max_partition_series.max(0) as usize,
        dropped: 0,
    };
    replica_manager(&mut r, broker, &mut budget);
    controller(&mut r, broker);
    consumer_groups(&mut r, broker, &mut budget);
    share_groups(&mut r, broker, &mut budget);
    gauge(
        &mut r,
        "strata_metrics_partition_series_dropped",
        "Per-partition series left out of this scrape by strata.metrics.max.partition.series",
        budget.dropped,
    );
    group_commit(&mut r, broker);
    process(&mut r);
    r
}

/// The group commit of durable acknowledgements (`strata.log.durable.acks`), when on: how many
/// fsync rounds ran and how many requests they answered (their ratio is the batching).
fn group_commit(r: &mut Registry, broker: &Broker) {
    let Some(g) = broker.replicas.logs().group_commit() else {
        return;
    };
    let stats = g.stats();
    r.register(
        "strata_group_commit_rounds",
        "Rounds of fsyncs run by the group commit",
        ConstCounter::new(stats.rounds),
    );
    r.register(
        "strata_group_commit_log_syncs",
        "Partition logs fsynced by the group commit (one per log and round)",
        ConstCounter::new(stats.log_syncs),
    );
    r.register(
        "strata_group_commit_shared_flushes",
        "Logs made durable in a round by their pages' write and another log's fdatasync on the same disk",
        ConstCounter::new(stats.shared_flushes),
    );
    r.register(
        "strata_group_commit_requests",
        "Acknowledgements the group commit answered",
        ConstCounter::new(stats.requests),
    );
}

fn replica_manager(r: &mut Registry, broker: &Broker, budget: &mut SeriesBudget) {
    let mut partitions = broker.replicas.all();
    partitions.sort_by(|a, b| (&a.topic, a.index).cmp(&(&b.topic, b.index)));
    let (mut leaders, mut under_replicated, mut under_min_isr) = (0, 0, 0);
    let (mut sizes, mut end_offsets) = (Vec::new(), Vec::new());
    for p in &partitions {
        // Kafka counts these on the leader only, so a cluster sums to the true number.
        if p.is_leader() {
            leaders += 1;
            let isr = p.isr().len();
            if isr < p.replicas().len() {
                under_replicated += 1;
            }
            if (isr as i32) < p.config().min_insync_replicas {
                under_min_isr += 1;
            }
        }
        if budget.take(2) {
            let labels = vec![
                ("topic", p.topic.clone()),
                ("partition", p.index.to_string()),
            ];
            sizes.push((labels.clone(), p.log.size_bytes() as i64));
            end_offsets.push((labels, p.log_end_offset()));
        }
    }
    let rm = "kafka_server_replicamanager_";
    gauge(
        r,
        &format!("{rm}partitioncount"),
        "Replicas on this broker",
        partitions.len() as i64,
    );
    gauge(
        r,
        &format!("{rm}leadercount"),
        "Partitions this broker leads",
        leaders,
    );
    gauge(
        r,
        &format!("{rm}underreplicatedpartitions"),
        "Led partitions whose ISR is smaller than their replica set",
        under_replicated,
    );
    gauge(
        r,
        &format!("{rm}underminisrpartitioncount"),
        "Led partitions whose ISR is below min.insync.replicas",
        under_min_isr,
    );
    gauge(
        r,
        "kafka_log_logmanager_offlinelogdirectorycount",
        "Log dirs that failed",
        broker.replicas.logs().offline_log_dirs().len() as i64,
    );
    family(
        r,
        "kafka_log_log_size",
        "Bytes of a partition's log on this broker",
        sizes,
    );
    family(
        r,
        "kafka_log_log_logendoffset",
        "A partition's log end offset",
        end_offsets,
    );
}

/// Kafka's `KafkaController` gauges, reported by nodes with the controller role from their
/// metadata image (as KRaft controllers report them, active or not).
fn controller(r: &mut Registry, broker: &Broker) {
    let Some(controller) = broker.cluster.local_controller() else {
        return;
    };
    let image = broker.cluster.image();
    let partitions = image.topics.values().flat_map(|t| t.partitions.values());
    let (mut total, mut offline) = (0, 0);
    for p in partitions {
        total += 1;
        if !p.has_leader() {
            offline += 1;
        }
    }
    let kc = "kafka_controller_kafkacontroller_";
    gauge(
        r,
        &format!("{kc}activecontrollercount"),
        "1 on the active controller",
        controller.is_active() as i64,
    );
    gauge(
        r,
        &format!("{kc}offlinepartitionscount"),
        "Partitions without a leader",
        offline,
    );
    gauge(
        r,
        &format!("{kc}globaltopiccount"),
        "Topics in the cluster",
        image.topics.len() as i64,
    );
    gauge(
        r,
        &format!("{kc}globalpartitioncount"),
        "Partitions in the cluster",
        total,
    );
    gauge(
        r,
        &format!("{kc}fencedbrokercount"),
        "Registered brokers that are fenced",
        image.brokers.values().filter(|b| b.fenced).count() as i64,
    );
    gauge(
        r,
        &format!("{kc}activebrokercount"),
        "Registered brokers that are not fenced",
        image.brokers.values().filter(|b| !b.fenced).count() as i64,
    );
}

/// Groups by state and consumer lag: for each committed offset of a group this broker
/// coordinates, the high watermark of the local replica minus the offset. The high watermark
/// is what `kafka-consumer-groups --describe` prints as LOG-END-OFFSET (it lists offsets with
/// read_uncommitted), so LAG matches the tool. Partitions with no local replica are left out.
fn consumer_groups(r: &mut Registry, broker: &Broker, budget: &mut SeriesBudget) {
    let mut by_state: BTreeMap<String, i64> = BTreeMap::new();
    let states = broker.groups.group_states();
    for s in &states {
        *by_state
            .entry(s.replace(' ', "").to_ascii_lowercase())
            .or_default() += 1;
    }
    gauge(
        r,
        "kafka_coordinator_group_groupmetadatamanager_numgroups",
        "Groups this broker coordinates",
        states.len() as i64,
    );
    family(
        r,
        "kafka_coordinator_group_groupmetadatamanager_numgroupsbystate",
        "Groups this broker coordinates, by state",
        by_state
            .into_iter()
            .map(|(state, n)| (vec![("state", state)], n))
            .collect(),
    );
    let mut lags = Vec::new();
    let mut current = Vec::new();
    let mut per_group: BTreeMap<String, (i64, i64)> = BTreeMap::new();
    for super::lag::PartitionLag {
        group,
        topic,
        partition,
        committed_offset: offset,
        lag,
        ..
    } in super::lag::consumer_lag(broker)
    {
        let entry = per_group.entry(group.clone()).or_insert((i64::MIN, 0));
        entry.0 = entry.0.max(lag);
        entry.1 += lag;
        if budget.take(2) {
            let labels = vec![
                ("group", group),
                ("topic", topic),
                ("partition", partition.to_string()),
            ];
            current.push((labels.clone(), offset));
            lags.push((labels, lag));
        }
    }
    family(
        r,
        "kafka_consumergroup_lag",
        "High watermark minus committed offset",
        lags,
    );
    family(
        r,
        "kafka_consumergroup_current_offset",
        "Committed offset",
        current,
    );
    let (max, sum): (Vec<_>, Vec<_>) = per_group
        .into_iter()
        .map(|(g, (max, sum))| ((vec![("group", g.clone())], max), (vec![("group", g)], sum)))
        .unzip();
    family(
        r,
        "kafka_consumergroup_lag_max",
        "A group's largest partition lag",
        max,
    );
    family(r, "kafka_consumergroup_lag_sum", "A group's total lag", sum);
}

/// Share-group lag (KIP-932): for each share partition this broker leads and has loaded,
/// the records between its start offset and the high watermark not yet acknowledged or
/// archived, which `kafka-share-groups --describe` shows as LAG, and its in-flight window
/// (Kafka's `SharePartitionMetrics` `InFlightMessageCount`). A share partition is loaded at
/// its group's first share fetch after the leader took over, and one with lag is never
/// evicted, so a group whose consumers stopped keeps its series.
fn share_groups(r: &mut Registry, broker: &Broker, budget: &mut SeriesBudget) {
    let mut lags = Vec::new();
    let mut in_flight = Vec::new();
    let mut per_group: BTreeMap<String, i64> = BTreeMap::new();
    for l in broker.shares.lags() {
        *per_group.entry(l.group_id.clone()).or_default() += l.lag;
        if budget.take(2) {
            let labels = vec![
                ("group", l.group_id),
                ("topic", l.topic),
                ("partition", l.partition.to_string()),
            ];
            in_flight.push((labels.clone(), l.in_flight));
            lags.push((labels, l.lag));
        }
    }
    family(
        r,
        "kafka_sharegroup_lag",
        "Records of a share partition not yet acknowledged or archived, to the high watermark",
        lags,
    );
    family(
        r,
        "kafka_server_sharepartitionmetrics_inflightmessagecount",
        "Records in a share partition's in-flight window",
        in_flight,
    );
    family(
        r,
        "kafka_sharegroup_lag_sum",
        "A share group's total lag over the share partitions this broker leads",
        per_group
            .into_iter()
            .map(|(g, sum)| (vec![("group", g)], sum))
            .collect(),
    );
}

/// The standard process metrics, read from /proc (Linux); absent elsewhere.
fn process(r: &mut Registry) {
    let Ok(stat) = std::fs::read_to_string("/proc/self/stat") else {
        return;
    };
    // Fields after the command name, which is in parentheses and may contain spaces.
    let Some(after) = stat.rfind(')').map(|i| &stat[i + 2..]) else {
        return;
    };
    let fields: Vec<&str> = after.split_whitespace().collect();
    let field = |i: usize| {
        fields
            .get(i)
            .and_then(|f| f.parse::<u64>().ok())
            .unwrap_or(0)
    };
    // SAFETY: sysconf has no preconditions.
    let ticks = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as f64;
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) }.max(1) as i64;
    // utime and stime are fields 14 and 15 of stat: 11 and 12 after the state field.
    let cpu_seconds = (field(11) + field(12)) as f64 / ticks;
    r.register(
        "process_cpu_seconds",
        "User and system CPU time, seconds",
        ConstCounter::new(cpu_seconds),
    );
    let rss_pages = field(21) as i64;
    gauge(
        r,
        "process_resident_memory_bytes",
        "Resident memory, bytes",
        rss_pages * page,
    );
    gauge(
        r,
        "process_virtual_memory_bytes",
        "Virtual memory, bytes",
        field(20) as i64,
    );
    if let Ok(fds) = std::fs::read_dir("/proc/self/fd") {
        gauge(
            r,
            "process_open_fds",
            "Open file descriptors",
            fds.count() as i64,
        );
    }
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes into the struct we own.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } == 0 {
        gauge(
            r,
            "process_max_fds",
            "File descriptor limit",
            limit.rlim_cur as i64,
        );
    }
}
