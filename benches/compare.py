#!/usr/bin/env python3
"""Side-by-side comparison of Apache Kafka and Strata on one machine (issue 5).

Run through benches/compare.sh (which installs the Kafka jars and builds the broker); this
script only drives the brokers and the client tools and writes one JSON file of raw results.
benches/report.py turns that file into the Markdown table (medians and Strata/Kafka ratios).

Every broker run starts from a fresh data directory. Runs alternate: Kafka, Strata, Kafka,
Strata, ... (BENCH_PAIRS pairs). Within one run the scenarios are, in order:
  start-up (process start -> first acknowledged produce), idle RSS,
  warm-up produce (not measured), ProducerPerformance at saturation for 100 B / 1 KiB x
  acks=1 / acks=all on a 1-partition topic, ConsumerPerformance over the 100 B and 1 KiB acks=1
  topics, the same topics read by the client consumers of BENCH_CONSUMERS (confluent-kafka,
  kafka-python, kafkajs, franz-go; partition 0 from the beginning), librdkafka's C tool
  rdkafka_performance (produce 100 B / 1 KiB x acks=1 / acks=all, then consume what the acks=1
  run wrote; built by benches/build-rdkafka-perf.sh),
  EndToEndLatency (lock-step) idle and while a fixed-rate ProducerPerformance loads the
  broker at half of Kafka's saturating rate, benches/latency_probe.c at that same rate (a light
  C load generator that times ack and end-to-end latency of every record), ProducerPerformance on 100 / 1000 partitions (memory
  per idle partition measured at topic creation), and 1000 / 10000 idle connections that each
  sent one ApiVersions request.
Broker CPU comes from /proc/<pid>/stat (utime+stime) before/after each client run, peak RSS from
VmRSS sampled every 100 ms during the run and VmHWM at the end.
"""

import json
import os
import re
import shutil
import signal
import socket
import struct
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
LIBS = os.path.join(ROOT, "compat-tests", ".cache", "kafka-libs")
LOG4J_BROKER = os.path.join(ROOT, "compat-tests", "lib", "log4j2-broker.properties")
LOG4J_TOOLS = os.path.join(ROOT, "compat-tests", "lib", "log4j2-tools.properties")
WORK = os.environ.get("BENCH_WORK", os.path.join(HERE, ".work"))
STRATA_BIN = os.environ.get("STRATA_BIN", os.path.join(ROOT, "target", "release", "strata"))

PAIRS = int(os.environ.get("BENCH_PAIRS", "3"))
N100 = int(os.environ.get("BENCH_N100", "2000000"))      # 100 B records per producer run
N1K = int(os.environ.get("BENCH_N1K", "400000"))         # 1 KiB records per producer run
NSCALE = int(os.environ.get("BENCH_NSCALE", "1000000"))  # 100 B records on 100/1000 partitions
SCALES = [int(x) for x in os.environ.get("BENCH_SCALES", "100,1000").split(",") if x]
CONNS = [int(x) for x in os.environ.get("BENCH_CONNS", "1000,10000").split(",") if x]
N_RDK = int(os.environ.get("BENCH_N_RDK", "5000000"))  # 100 B records per rdkafka_performance run
E2E_N = int(os.environ.get("BENCH_E2E_N", "5000"))
# Client consumers that read the 1-partition 100 B / 1 KiB acks=1 topics (assigned partition 0
# from the beginning, timed from the first to the N-th record; issue 15). confluent =
# confluent-kafka (librdkafka, scenarios consume_rdk_*), confluent-qb10 = the same with
# fetch.queue.backoff.ms=10 (consume_rdkqb10_*), kafka-python (consume_kpy_*), kafkajs
# (consume_kjs_*, node), franz = franz-go (consume_franz_*, a Go program built on first use).
CONSUMERS = [x for x in os.environ.get(
    "BENCH_CONSUMERS", "confluent,confluent-qb10,kafka-python,kafkajs,franz").split(",") if x]
LOADED_SECONDS = int(os.environ.get("BENCH_LOADED_SECONDS", "20"))
KAFKA_HEAP = os.environ.get("BENCH_KAFKA_HEAP", "-Xmx1g -Xms1g").split()
CLIENT_HEAP = ["-Xmx1g", "-Xms256m"]
KAFKA_PORT = int(os.environ.get("BENCH_KAFKA_PORT", "29092"))
STRATA_PORT = int(os.environ.get("BENCH_STRATA_PORT", "29192"))
LINGER_MS = 5
BATCH_SIZE = 16384
CLK_TCK = os.sysconf("SC_CLK_TCK")

# Kafka settings that differ from its defaults only where a single node needs it; Strata gets
# the same keys (it warns about and ignores the ones it does not use).
COMMON_PROPS = {
    "num.partitions": "1",
    "default.replication.factor": "1",
    "offsets.topic.replication.factor": "1",
    "transaction.state.log.replication.factor": "1",
    "transaction.state.log.min.isr": "1",
    "group.initial.rebalance.delay.ms": "0",
    "auto.create.topics.enable": "true",
}


def log(*a):
    print("[compare]", *a, file=sys.stderr, flush=True)


# ---------------------------------------------------------------- /proc helpers

def proc_cpu_s(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    # fields[0] is state (field 3); utime is field 14, stime field 15
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def proc_status_kb(pid, key):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    return 0


def machine_busy_s():
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    idle = v[3] + v[4]
    return (sum(v[:8]) - idle) / CLK_TCK


class RssSampler:
    """Max VmRSS of a process, sampled every 100 ms while active."""

    def __init__(self, pid):
        self.pid, self.peak, self._stop = pid, 0, threading.Event()
        self._t = threading.Thread(target=self._run, daemon=True)
        self._t.start()

    def _run(self):
        while not self._stop.is_set():
            try:
                self.peak = max(self.peak, proc_status_kb(self.pid, "VmRSS"))
            except OSError:
                return
            self._stop.wait(0.1)

    def stop(self):
        self._stop.set()
        self._t.join()
        return self.peak


# ---------------------------------------------------------------- brokers

class Broker:
    """One broker. `port` (default BENCH_KAFKA_PORT / BENCH_STRATA_PORT) is its PLAINTEXT
    listener; `listeners` adds more as [(SECURITY_PROTOCOL, port)], each listener named after
    its protocol; `extra_props` are added to (or replace) its configuration; `cgroup` is a
    cgroup directory the broker process starts in (durable_compare.py's slow-fsync disk)."""

    def __init__(self, kind, run_dir, port=None, listeners=(), extra_props=None, cgroup=None):
        self.kind, self.dir, self.cgroup = kind, run_dir, cgroup
        self.port = port or (KAFKA_PORT if kind == "kafka" else STRATA_PORT)
        self.addr = f"127.0.0.1:{self.port}"
        self.listeners, self.extra_props = list(listeners), dict(extra_props or {})
        self.proc = None

    def start(self):
        shutil.rmtree(self.dir, ignore_errors=True)
        os.makedirs(os.path.join(self.dir, "data"))
        os.makedirs(os.path.join(self.dir, "logs"))
        out = open(os.path.join(self.dir, "logs", "stdout.log"), "w")
        if self.kind == "kafka":
            props = dict(COMMON_PROPS)
            cport = self.port + 1
            more = "".join(f",{n}://127.0.0.1:{p}" for n, p in self.listeners)
            props.update({
                "process.roles": "broker,controller", "node.id": "1",
                "controller.quorum.voters": f"1@127.0.0.1:{cport}",
                "listeners": f"PLAINTEXT://{self.addr}{more},CONTROLLER://127.0.0.1:{cport}",
                "advertised.listeners": f"PLAINTEXT://{self.addr}{more}",
                "controller.listener.names": "CONTROLLER",
                "inter.broker.listener.name": "PLAINTEXT",
                "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT"
                + "".join(f",{n}:{n}" for n, _ in self.listeners),
                "log.dirs": os.path.join(self.dir, "data"),
                "share.coordinator.state.topic.replication.factor": "1",
                "share.coordinator.state.topic.min.isr": "1",
            })
            props.update(self.extra_props)
            pf = os.path.join(self.dir, "server.properties")
            with open(pf, "w") as f:
                f.writelines(f"{k}={v}\n" for k, v in props.items())
            jopts = ["-cp", LIBS + "/*", f"-Dkafka.logs.dir={self.dir}/logs",
                     f"-Dlog4j2.configurationFile={LOG4J_BROKER}"]
            # Formatting the KRaft log dir is a separate JVM, not counted in start-up time.
            subprocess.run(["java", *jopts, "kafka.tools.StorageTool", "format", "-t",
                            "bench-cluster-id-00000A", "-c", pf, "--ignore-formatted"],
                           check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            cmd = ["java", *KAFKA_HEAP, "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20",
                   "-Djava.awt.headless=true", *jopts, "kafka.Kafka", pf]
        else:
            props = dict(COMMON_PROPS)
            more = "".join(f",{n}://127.0.0.1:{p}" for n, p in self.listeners)
            props.update({"listeners": f"PLAINTEXT://{self.addr}{more}",
                          "log.dirs": os.path.join(self.dir, "data"),
                          "max.connections": "2147483647",  # Kafka's default
                          # Off unless asked (BENCH_STRATA_ADMIN=http://host:port): benches run
                          # beside the test suites and must not take their admin port.
                          "strata.admin.listeners": os.environ.get("BENCH_STRATA_ADMIN", "")})
            props.update(self.extra_props)
            # BENCH_STRATA_PROPS="k=v,k2=v2": Strata-only overrides for an A/B of one setting.
            for kv in filter(None, os.environ.get("BENCH_STRATA_PROPS", "").split(",")):
                k, v = kv.split("=", 1)
                props[k.strip()] = v.strip()
            cmd = [STRATA_BIN]
            for k, v in props.items():
                cmd += ["--override", f"{k}={v}"]
        self.t0 = time.monotonic()
        def join_cgroup():
            with open(os.path.join(self.cgroup, "cgroup.procs"), "w") as f:
                f.write(str(os.getpid()))

        self.proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL,
                                     preexec_fn=join_cgroup if self.cgroup else None)
        self.pid = self.proc.pid
        return self.first_produce()

    def first_produce(self):
        """Seconds from process start to the first acknowledged produce (librdkafka)."""
        from confluent_kafka import Producer
        p = Producer({"bootstrap.servers": self.addr, "acks": "1", "linger.ms": 0,
                      "reconnect.backoff.ms": 5, "reconnect.backoff.max.ms": 10,
                      "retry.backoff.ms": 5, "retry.backoff.max.ms": 10,
                      "topic.metadata.refresh.interval.ms": 10,
                      "message.timeout.ms": 120000, "log_level": 0})
        done = {}

        def cb(err, msg):
            done["err"] = err
            done["t"] = time.monotonic()

        deadline = self.t0 + 120
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"{self.kind} exited during start-up")
            done.clear()
            p.produce("bench-ready", b"x", on_delivery=cb)
            while "t" not in done and time.monotonic() < deadline:
                p.poll(0.002)
            if done.get("err") is None and "t" in done:
                return done["t"] - self.t0
        raise RuntimeError(f"{self.kind}: no successful produce within 120 s")

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def create_topic(broker, name, partitions):
    from confluent_kafka.admin import AdminClient, NewTopic
    from confluent_kafka.admin import NewPartitions
    a = AdminClient({"bootstrap.servers": broker.addr})
    # Kafka's controller refuses one operation of more than 10,000 records
    # (max.records.per.user.op), i.e. a topic of 10,000 partitions in one CreateTopics: create
    # at most 5,000 at once and add the rest with CreatePartitions, for both brokers alike.
    step = 5000
    fs = a.create_topics([NewTopic(name, min(partitions, step), 1)], operation_timeout=120,
                         request_timeout=120)
    fs[name].result()
    for total in range(2 * step, partitions + step, step):
        fs = a.create_partitions([NewPartitions(name, min(total, partitions))],
                                 operation_timeout=120, request_timeout=120)
        fs[name].result()
    # wait until every partition has a leader in metadata
    for _ in range(600):
        md = a.list_topics(name, timeout=30).topics.get(name)
        if md and md.error is None and len(md.partitions) == partitions and all(
                p.leader >= 0 for p in md.partitions.values()):
            return
        time.sleep(0.1)
    raise RuntimeError(f"topic {name} not ready")


# ---------------------------------------------------------------- client tools

def java_tool(main, args, timeout=600):
    """Runs a Kafka tool; returns (stdout, client CPU seconds, wall seconds)."""
    cmd = ["java", *CLIENT_HEAP, "-cp", LIBS + "/*", f"-Dlog4j2.configurationFile={LOG4J_TOOLS}",
           main, *args]
    t = time.monotonic()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out, err = p.communicate(timeout=timeout)
    wall = time.monotonic() - t
    if p.returncode != 0:
        raise RuntimeError(f"{main} failed ({p.returncode}): {err[-2000:]}")
    return out, err, wall


def producer_props(broker, acks):
    return [f"bootstrap.servers={broker.addr}", f"acks={acks}",
            f"enable.idempotence={'true' if acks == 'all' else 'false'}",
            f"linger.ms={LINGER_MS}", f"batch.size={BATCH_SIZE}", "compression.type=none",
            "max.in.flight.requests.per.connection=5", "buffer.memory=33554432"]


PERF_RE = re.compile(
    r"(\d+) records sent, ([\d.]+) records/sec \(([\d.]+) MB/sec\), ([\d.]+) ms avg latency, "
    r"([\d.]+) ms max latency, (\d+) ms 50th, (\d+) ms 95th, (\d+) ms 99th, (\d+) ms 99.9th")


def measured(broker, fn):
    """Runs fn() while accounting the broker's CPU and RSS and the machine's busy time."""
    cpu0, busy0, t0 = proc_cpu_s(broker.pid), machine_busy_s(), time.monotonic()
    s = RssSampler(broker.pid)
    res = fn()
    peak = s.stop()
    wall = time.monotonic() - t0
    res.update({
        "broker_cpu_s": proc_cpu_s(broker.pid) - cpu0,
        "machine_busy_cores": (machine_busy_s() - busy0) / wall,
        "broker_peak_rss_mb": peak / 1024,
        "wall_s": wall,
    })
    return res


def consumed(got, n, size, t_first, t_last):
    """A consumer run's figures: throughput from its first to its last record."""
    if got < n:
        raise RuntimeError(f"consumed {got} of {n}")
    return {"records": got, "records_per_s": got / (t_last - t_first),
            "mb_per_s": got * size / (t_last - t_first) / 1e6}


def measured_per_gb(broker, fn, n, size):
    """measured(), plus the broker's CPU-s per GB of the n records of `size` bytes."""
    r = measured(broker, fn)
    r["broker_cpu_s_per_gb"] = r["broker_cpu_s"] / (n * size / 1e9)
    return r


def producer_perf(broker, topic, n, size, acks, throughput=-1, config_file=None):
    """config_file: an optional client properties file (--producer.config), e.g. security
    settings; the --producer-props above take precedence over it."""
    args = ["--topic", topic, "--num-records", str(n), "--record-size", str(size),
            "--throughput", str(throughput), "--producer-props", *producer_props(broker, acks)]
    if config_file:
        args += ["--producer.config", config_file]

    def run():
        out, _, _ = java_tool("org.apache.kafka.tools.ProducerPerformance", args)
        m = None
        for m in PERF_RE.finditer(out):
            pass
        if not m:
            raise RuntimeError("cannot parse ProducerPerformance output: " + out[-500:])
        return {"records": int(m.group(1)), "records_per_s": float(m.group(2)),
                "mb_per_s": float(m.group(2)) * size / 1e6,
                "lat_avg_ms": float(m.group(4)), "lat_p50_ms": float(m.group(6)),
                "lat_p99_ms": float(m.group(8)), "lat_p999_ms": float(m.group(9))}

    r = measured(broker, run)
    r["broker_cpu_s_per_gb"] = r["broker_cpu_s"] / (n * size / 1e9)
    return r


def consumer_perf(broker, topic, n, size, extra_config=""):
    """extra_config: more lines for the consumer's properties file, e.g. security settings."""
    cfg = os.path.join(broker.dir, "consumer.properties")
    with open(cfg, "w") as f:
        f.write("fetch.min.bytes=1\nfetch.max.wait.ms=500\nmax.partition.fetch.bytes=1048576\n"
                "fetch.max.bytes=52428800\nmax.poll.records=500\nauto.offset.reset=earliest\n"
                + extra_config)
    args = ["--bootstrap-server", broker.addr, "--topic", topic, "--messages", str(n),
            "--timeout", "60000", "--group", f"perf-{topic}", "--consumer.config", cfg]

    def run():
        out, _, _ = java_tool("org.apache.kafka.tools.ConsumerPerformance", args)
        line = [ln for ln in out.strip().splitlines() if ln and ln[0].isdigit()][-1]
        v = [x.strip() for x in line.split(",")]
        # start, end, MB, MB/s, nMsg, nMsg/s, rebalance ms, fetch ms, fetch MB/s, fetch nMsg/s
        return {"records": int(v[4]), "records_per_s": float(v[9]),
                "mb_per_s": float(v[9]) * size / 1e6, "rebalance_ms": float(v[6])}

    r = measured(broker, run)
    r["broker_cpu_s_per_gb"] = r["broker_cpu_s"] / (n * size / 1e9)
    return r


E2E_RE = re.compile(r"50th = ([\d.]+), 99th = ([\d.]+), 99.9th = ([\d.]+)")


def e2e_latency(broker, topic):
    """Kafka's EndToEndLatency: sends one 100 B record, waits until the consumer sees it, then
    the next (lock-step: it cannot pace at a given rate). acks=1."""
    out, _, _ = java_tool("org.apache.kafka.tools.EndToEndLatency",
                          [broker.addr, topic, str(E2E_N), "1", "100"])
    m = E2E_RE.search(out)
    avg = re.search(r"Avg latency: ([\d.]+) ms", out)
    if not m:
        raise RuntimeError("cannot parse EndToEndLatency output: " + out[-500:])
    return {"e2e_p50_ms": float(m.group(1)), "e2e_p99_ms": float(m.group(2)),
            "e2e_p999_ms": float(m.group(3)), "e2e_avg_ms": float(avg.group(1)) if avg else None}


def e2e_under_load(broker, rate):
    """EndToEndLatency while ProducerPerformance produces 100 B acks=1 at a fixed rate."""
    create_topic(broker, "load-fixed", 1)
    create_topic(broker, "e2e-loaded", 1)
    res = {}

    def load():
        res["load"] = producer_perf(broker, "load-fixed", rate * LOADED_SECONDS, 100, "1", rate)

    t = threading.Thread(target=load)
    t.start()
    time.sleep(3)  # let the loader reach its rate (JVM start and metadata)
    create_topic(broker, "e2e-rdk-loaded", 1)
    out = {f"loaded_rdk_{k}": v for k, v in rdk_e2e(broker, "e2e-rdk-loaded", E2E_N).items()}
    try:
        out.update({f"loaded_{k}": v for k, v in e2e_latency(broker, "e2e-loaded").items()})
    except Exception as e:  # Strata without a group coordinator: the Java tool cannot run
        out["loaded_java_error"] = str(e)[:300]
    t.join()
    ld = res["load"]
    out.update({"fixed_rate": rate, "fixed_achieved_records_per_s": ld["records_per_s"],
                "fixed_produce_p50_ms": ld["lat_p50_ms"], "fixed_produce_p99_ms": ld["lat_p99_ms"],
                "fixed_produce_p999_ms": ld["lat_p999_ms"],
                "fixed_broker_cpu_s_per_gb": ld["broker_cpu_s_per_gb"]})
    return out


def rdk_consumer(broker, extra=None):
    from confluent_kafka import Consumer
    # group.id is required by the Python wrapper; partitions are assigned explicitly and
    # nothing is committed, so no group coordinator is involved.
    return Consumer({"bootstrap.servers": broker.addr, "group.id": "bench-assign",
                     "enable.auto.commit": False, "fetch.wait.max.ms": 500,
                     "fetch.min.bytes": 1, "fetch.max.bytes": 52428800,
                     "max.partition.fetch.bytes": 1048576, "log_level": 0, **(extra or {})})


def rdk_consume(broker, topic, n, size, extra=None):
    """librdkafka (confluent-kafka) consumer, partition 0 assigned from the beginning, no group:
    throughput from the first to the n-th record. extra: more librdkafka settings."""
    from confluent_kafka import TopicPartition, OFFSET_BEGINNING

    def run():
        c = rdk_consumer(broker, extra)
        c.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
        got, t_first, deadline = 0, None, time.monotonic() + 120
        while got < n and time.monotonic() < deadline:
            for m in c.consume(10000, 1.0):
                if m.error() is None:
                    if t_first is None:
                        t_first = time.monotonic()
                    got += 1
        t_last = time.monotonic()
        c.close()
        return consumed(got, n, size, t_first, t_last)

    return measured_per_gb(broker, run, n, size)


def kpy_consume(broker, topic, n, size):
    """kafka-python consumer, partition 0 assigned from the beginning, no group (group_id None,
    nothing committed), same fetch settings as rdk_consume: throughput from the first to the
    n-th record."""
    from kafka import KafkaConsumer, TopicPartition

    def run():
        c = KafkaConsumer(bootstrap_servers=broker.addr, group_id=None,
                          enable_auto_commit=False, fetch_max_wait_ms=500, fetch_min_bytes=1,
                          fetch_max_bytes=52428800, max_partition_fetch_bytes=1048576)
        tp = TopicPartition(topic, 0)
        c.assign([tp])
        c.seek_to_beginning(tp)
        got, t_first, deadline = 0, None, time.monotonic() + 120
        while got < n and time.monotonic() < deadline:
            for recs in c.poll(timeout_ms=1000, max_records=10000).values():
                if recs and t_first is None:
                    t_first = time.monotonic()
                got += len(recs)
        t_last = time.monotonic()
        c.close()
        return consumed(got, n, size, t_first, t_last)

    return measured_per_gb(broker, run, n, size)


NODE_PATH = os.path.join(ROOT, "compat-tests", ".cache", "node", "node_modules")
FRANZ_CONSUME = os.path.join(ROOT, "compat-tests", ".cache", "bin", "franz-consume")


def franz_consume_bin():
    """benches/franz_consume built once into compat-tests/.cache/bin (rebuilt when its sources
    change); go fetches franz-go from the module cache or the Go proxy."""
    src = os.path.join(HERE, "franz_consume")
    newest = max(os.path.getmtime(os.path.join(src, f)) for f in os.listdir(src))
    if not os.path.exists(FRANZ_CONSUME) or os.path.getmtime(FRANZ_CONSUME) < newest:
        log("building", FRANZ_CONSUME)
        os.makedirs(os.path.dirname(FRANZ_CONSUME), exist_ok=True)
        subprocess.run(["go", "build", "-mod=readonly", "-o", FRANZ_CONSUME, "."], cwd=src,
                       check=True)
    return FRANZ_CONSUME


def tool_consume(broker, cmd, n, size, env=None):
    """Runs a consumer program that prints {"records": n, "seconds": first -> n-th record}."""

    def run():
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=300,
                           env={**os.environ, **(env or {})})
        if p.returncode != 0:
            raise RuntimeError(f"{os.path.basename(cmd[1] if cmd[0] == 'node' else cmd[0])} "
                               f"failed ({p.returncode}): {p.stderr[-1000:]}")
        o = json.loads(p.stdout.strip().splitlines()[-1])
        if o["records"] < n:
            raise RuntimeError(f"consumed {o['records']} of {n}")
        return {"records": o["records"], "records_per_s": o["records"] / o["seconds"],
                "mb_per_s": o["records"] * size / o["seconds"] / 1e6}

    r = measured(broker, run)
    r["broker_cpu_s_per_gb"] = r["broker_cpu_s"] / (n * size / 1e9)
    return r


def kjs_consume(broker, topic, n, size):
    """kafkajs 2.2.4 consumer (benches/kafkajs_consume.js): kafkajs has no assign(), so its
    consumer.run in a fresh group, nothing committed, from the beginning; the join is not
    timed."""
    return tool_consume(broker, ["node", os.path.join(HERE, "kafkajs_consume.js"), broker.addr,
                                 topic, str(n)], n, size, env={"NODE_PATH": NODE_PATH})


def franz_consume(broker, topic, n, size):
    """franz-go (kgo) consumer (benches/franz_consume): ConsumePartitions, partition 0 from the
    start, no group."""
    return tool_consume(broker, [franz_consume_bin(), "-brokers", broker.addr, "-topic", topic,
                                 "-n", str(n)], n, size)


def rdk_consume_qb10(broker, topic, n, size):
    """rdk_consume with fetch.queue.backoff.ms=10 (librdkafka's default 1000): with the default,
    once 100,000 records (queued.min.messages) or 64 MiB wait in the client's queue librdkafka
    fetches that partition again only 1 s later, while the Python loop empties the queue in
    a fraction of that, so the default row counts those 1 s pauses more than the broker."""
    return rdk_consume(broker, topic, n, size, {"fetch.queue.backoff.ms": 10})


# BENCH_CONSUMERS name -> (scenario prefix, function)
CLIENT_CONSUMERS = {"confluent": ("consume_rdk", rdk_consume),
                    "confluent-qb10": ("consume_rdkqb10", rdk_consume_qb10),
                    "kafka-python": ("consume_kpy", kpy_consume),
                    "kafkajs": ("consume_kjs", kjs_consume),
                    "franz": ("consume_franz", franz_consume)}


RDK_PERF = os.path.join(ROOT, "compat-tests", ".cache", "bin", "rdkafka_performance")


def rdk_perf_table(out):
    """The last row of rdkafka_performance's `-u` table as {column: value}."""
    header, row = None, None
    for ln in out.splitlines():
        if ln.startswith("|") and "elapsed" in ln:
            header = [c.strip() for c in ln.strip("|").split("|")]
        elif ln.startswith("|") and header:
            row = [c.strip() for c in ln.strip("|").split("|")]
    if not header or not row:
        raise RuntimeError("cannot parse rdkafka_performance output: " + out[-500:])
    return dict(zip(header, (float(x) for x in row)))


def rdk_perf(broker, args, timeout=600):
    cmd = [RDK_PERF, "-b", broker.addr, "-u", *args]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    if p.returncode != 0:
        errors = "\n".join(ln for ln in p.stderr.splitlines() if "CONFWARN" not in ln)
        raise RuntimeError(f"rdkafka_performance failed ({p.returncode}): {errors[-1500:]}\n"
                           f"stdout: {p.stdout[-1500:]}")
    return rdk_perf_table(p.stdout)


def rdk_perf_produce(broker, topic, n, size, acks):
    """librdkafka's rdkafka_performance -P: a C producer, much lighter than the Java tool, so the
    broker is a larger share of the work. linger.ms=5, librdkafka's other defaults (batch.size
    1,000,000, up to 10,000 messages per batch), no compression, partition 0."""
    args = ["-P", "-t", topic, "-p", "0", "-s", str(size), "-c", str(n),
            "-a", "-1" if acks == "all" else acks, "-X", f"linger.ms={LINGER_MS}",
            "-X", "compression.type=none",
            "-X", f"enable.idempotence={'true' if acks == 'all' else 'false'}"]

    def run():
        t = rdk_perf(broker, args)
        # tx_err counts local queue-full retries (back-pressure), not lost messages.
        if t.get("dr", 0) < n or t.get("dr_err", 0):
            raise RuntimeError(f"incomplete delivery: {t}")
        return {"records": int(t["dr"]), "records_per_s": t["dr_m/s"],
                "mb_per_s": t["dr_m/s"] * size / 1e6, "queue_full_retries": int(t.get("tx_err", 0))}

    r = measured(broker, run)
    r["broker_cpu_s_per_gb"] = r["broker_cpu_s"] / (n * size / 1e9)
    return r


def rdk_perf_consume(broker, topic, n, size):
    """librdkafka's rdkafka_performance -C: partition 0 from the beginning, no group."""
    args = ["-C", "-t", topic, "-p", "0", "-o", "beginning", "-c", str(n),
            "-X", "fetch.wait.max.ms=500", "-X", "fetch.max.bytes=52428800",
            "-X", "max.partition.fetch.bytes=1048576"]

    def run():
        t = rdk_perf(broker, args)
        if t.get("msgs", 0) < n:
            raise RuntimeError(f"consumed {t.get('msgs')} of {n}")
        return {"records": int(t["msgs"]), "records_per_s": t["m/s"],
                "mb_per_s": t["m/s"] * size / 1e6}

    r = measured(broker, run)
    r["broker_cpu_s_per_gb"] = r["broker_cpu_s"] / (n * size / 1e9)
    return r


PROBE = os.path.join(ROOT, "compat-tests", ".cache", "bin", "latency_probe")
PROBE_SECONDS = float(os.environ.get("BENCH_PROBE_SECONDS", "15"))


def latency_probe(broker, topic, rate, seconds=PROBE_SECONDS, warmup=3, acks="1", linger_ms="0",
                  partitions=1):
    """benches/latency_probe.c (built by build-rdkafka-perf.sh): a light C producer at `rate`
    100 B records/s, round robin over `partitions`, sleeping between 1 ms ticks, and a consumer
    from the end of those partitions, both timing every record on one clock (issue 15, "Tail
    latency"). Returns the probe's figures (ack_* and e2e_* percentiles in microseconds) and
    the broker's CPU."""
    cmd = [PROBE, broker.addr, topic, str(rate), str(seconds), "100", str(warmup),
           "-n", str(partitions),
           "-P", f"acks={'-1' if acks == 'all' else acks}", "-P", f"linger.ms={linger_ms}",
           "-P", f"enable.idempotence={'true' if acks == 'all' else 'false'}",
           "-P", "compression.type=none",
           "-C", "fetch.wait.max.ms=500", "-C", "fetch.min.bytes=1"]

    def run():
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=seconds + 120)
        if p.returncode != 0:
            raise RuntimeError(f"latency_probe failed ({p.returncode}): {p.stderr[-1000:]}")
        return json.loads(p.stdout)

    r = measured(broker, run)
    r["broker_cpu_s_per_gb"] = r["broker_cpu_s"] / (r["acked"] * 100 / 1e9)
    return r


def rdk_e2e(broker, topic, n):
    """Lock-step end-to-end latency with librdkafka, as Kafka's EndToEndLatency does it: send one
    100 B record (acks=1, linger.ms=0), wait for the ack, then poll the assigned consumer until
    the record arrives; latency = send -> received."""
    from confluent_kafka import Producer, TopicPartition, OFFSET_END
    p = Producer({"bootstrap.servers": broker.addr, "acks": "1", "linger.ms": 0,
                  "enable.idempotence": False, "log_level": 0})
    c = rdk_consumer(broker)
    c.assign([TopicPartition(topic, 0, OFFSET_END)])
    payload = b"x" * 100
    lat = []
    for i in range(n + 50):  # the first 50 are warm-up (connection, assignment)
        t = time.perf_counter()
        p.produce(topic, payload)
        p.flush(30)
        while True:
            m = c.poll(1 if i < 50 else 30)
            if m is None:
                if i < 50:
                    break  # assignment at OFFSET_END may have skipped a warm-up record
                raise RuntimeError("record not received within 30 s")
            if m.error() is None:
                break
        if i >= 50 and m is not None:
            lat.append((time.perf_counter() - t) * 1000)
    c.close()
    lat.sort()

    def pct(q):
        return lat[min(len(lat) - 1, int(q * len(lat)))]

    return {"e2e_p50_ms": pct(0.5), "e2e_p99_ms": pct(0.99), "e2e_p999_ms": pct(0.999),
            "e2e_avg_ms": sum(lat) / len(lat)}


def api_versions_frame(corr):
    client = b"bench"
    body = struct.pack(">hhih", 18, 0, corr, len(client)) + client
    return struct.pack(">i", len(body)) + body


def idle_connections(broker, n):
    """Opens n sockets, each sends ApiVersions v0 and reads the answer; the sockets stay open
    while RSS is measured. Returns memory per connection and errors."""
    time.sleep(1)
    rss0 = proc_status_kb(broker.pid, "VmRSS")
    socks, errors = [], 0
    t = time.monotonic()
    for i in range(n):
        try:
            s = socket.create_connection(("127.0.0.1", broker.port), timeout=10)
            s.sendall(api_versions_frame(i))
            socks.append(s)
        except OSError:
            errors += 1
    for s in socks:
        try:
            hdr = b""
            while len(hdr) < 4:
                c = s.recv(4 - len(hdr))
                if not c:
                    raise OSError("closed")
                hdr += c
            size = struct.unpack(">i", hdr)[0]
            got = 0
            while got < size:
                c = s.recv(size - got)
                if not c:
                    raise OSError("closed")
                got += len(c)
        except OSError:
            errors += 1
    open_s = time.monotonic() - t
    time.sleep(2)
    rss1 = proc_status_kb(broker.pid, "VmRSS")
    for s in socks:
        s.close()
    return {"conns": n, "conn_errors": errors, "conn_open_s": open_s,
            "rss_per_conn_kb": (rss1 - rss0) / n, "rss_with_conns_mb": rss1 / 1024}


# ---------------------------------------------------------------- one run

def one_run(kind, idx, fixed_rate):
    b = Broker(kind, os.path.join(WORK, f"{kind}-{idx}"))
    out = {"broker": kind, "run": idx, "scenarios": {}}
    sc = out["scenarios"]

    only = [x for x in os.environ.get("BENCH_ONLY", "").split(",") if x]

    def step(name, fn):
        if only and not any(name.startswith(o) for o in only):
            return None
        log(f"{kind}#{idx} {name}")
        try:
            sc[name] = fn()
        except Exception as e:  # a failed scenario is recorded, not fatal
            log(f"{kind}#{idx} {name} FAILED: {e}")
            sc[name] = {"error": str(e)[:500]}
        return sc[name]

    try:
        st = b.start()
        time.sleep(2)
        sc["startup"] = {"start_to_first_produce_s": st,
                         "idle_rss_mb": proc_status_kb(b.pid, "VmRSS") / 1024,
                         "startup_cpu_s": proc_cpu_s(b.pid)}
        log(f"{kind}#{idx} first produce after {st:.3f}s")
        # Warm-up (JIT for Kafka, page cache/allocator for both); not reported.
        create_topic(b, "warmup", 1)
        producer_perf(b, "warmup", 500000, 100, "1")
        for size, n in ((100, N100), (1024, N1K)):
            for acks in ("1", "all"):
                t = f"p1-s{size}-a{acks}"
                create_topic(b, t, 1)
                step(f"produce_p1_{size}B_acks{acks}",
                     lambda t=t, n=n, size=size, acks=acks: producer_perf(b, t, n, size, acks))
        for size, n in ((100, N100), (1024, N1K)):
            step(f"consume_p1_{size}B", lambda size=size, n=n: consumer_perf(
                b, f"p1-s{size}-a1", n, size))
        for client in CONSUMERS:
            prefix, fn = CLIENT_CONSUMERS[client]
            for size, n in ((100, N100), (1024, N1K)):
                step(f"{prefix}_p1_{size}B", lambda size=size, n=n, fn=fn: fn(
                    b, f"p1-s{size}-a1", n, size))
        if os.path.exists(RDK_PERF):
            for size, n in ((100, N_RDK), (1024, N_RDK // 5)):
                for acks in ("1", "all"):
                    t = f"rdk-s{size}-a{acks}"
                    create_topic(b, t, 1)
                    step(f"produce_rdkperf_p1_{size}B_acks{acks}",
                         lambda t=t, n=n, size=size, acks=acks: rdk_perf_produce(b, t, n, size, acks))
                step(f"consume_rdkperf_p1_{size}B",
                     lambda size=size, n=n: rdk_perf_consume(b, f"rdk-s{size}-a1", n, size))
        create_topic(b, "e2e-idle", 1)
        step("e2e_idle", lambda: e2e_latency(b, "e2e-idle"))
        create_topic(b, "e2e-rdk-idle", 1)
        step("e2e_rdk_idle", lambda: rdk_e2e(b, "e2e-rdk-idle", E2E_N))
        rate = fixed_rate
        if rate is None:
            r = sc.get(f"produce_p1_100B_acks1", {}).get("records_per_s")
            rate = int(r / 2) if r else 100000
        step("e2e_loaded", lambda: e2e_under_load(b, rate))
        if os.path.exists(PROBE):
            create_topic(b, "tail-probe", 1)
            step("tail_probe", lambda: latency_probe(b, "tail-probe", rate))
        def scale(parts):
            time.sleep(1)
            rss0 = proc_status_kb(b.pid, "VmRSS")
            t = time.monotonic()
            create_topic(b, f"scale-{parts}", parts)
            create_s = time.monotonic() - t
            time.sleep(3)
            rss1 = proc_status_kb(b.pid, "VmRSS")
            r = producer_perf(b, f"scale-{parts}", NSCALE, 100, "1")
            r.update({"create_topic_s": create_s, "rss_per_idle_partition_kb":
                      (rss1 - rss0) / parts, "vmhwm_mb": proc_status_kb(b.pid, "VmHWM") / 1024})
            return r

        # Up to 1,000 partitions before the connection tests; 10,000 (which needs more file
        # descriptors than this machine's hard limit may give Kafka) after them, so that a broker
        # that falls over there does not take the other figures with it.
        for parts in [p for p in SCALES if p < 10000]:
            step(f"produce_p{parts}_100B_acks1", lambda parts=parts: scale(parts))
        for n in CONNS:
            step(f"idle_conns_{n}", lambda n=n: idle_connections(b, n))
        for parts in [p for p in SCALES if p >= 10000]:
            step(f"produce_p{parts}_100B_acks1", lambda parts=parts: scale(parts))
        out["vmhwm_mb"] = proc_status_kb(b.pid, "VmHWM") / 1024
        out["total_cpu_s"] = proc_cpu_s(b.pid)
    except Exception as e:
        log(f"{kind}#{idx} run FAILED: {e}")
        out["error"] = str(e)[:500]
    finally:
        b.stop()
        shutil.rmtree(os.path.join(b.dir, "data"), ignore_errors=True)
    return out, rate if fixed_rate is None else fixed_rate


def machine_info():
    def sh(c):
        try:
            return subprocess.run(c, shell=True, capture_output=True, text=True).stdout.strip()
        except Exception:
            return ""
    return {"nproc": sh("nproc"), "cpu": sh("grep -m1 'model name' /proc/cpuinfo | cut -d: -f2"),
            "mem": sh("free -g | awk '/Mem:/{print $2\" GiB\"}'"), "kernel": sh("uname -r"),
            "disk": sh(f"df -hT {WORK} | tail -1"), "java": sh("java -version 2>&1 | head -1"),
            "kafka": sh(f"ls {LIBS} | sed -n 's/^kafka_2.13-\\(.*\\)\\.jar$/\\1/p'"),
            "strata_commit": sh(f"git -C {ROOT} rev-parse --short HEAD"),
            "rustc": sh("rustc --version")}


def main():
    unknown = [c for c in CONSUMERS if c not in CLIENT_CONSUMERS]
    if unknown:
        sys.exit(f"BENCH_CONSUMERS: unknown {unknown}; known: {','.join(CLIENT_CONSUMERS)}")
    os.makedirs(WORK, exist_ok=True)
    os.makedirs(os.path.join(HERE, "results"), exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    path = os.environ.get("BENCH_OUT", os.path.join(HERE, "results", f"compare-{stamp}.json"))
    res = {"machine": machine_info(), "params": {
        "pairs": PAIRS, "n100": N100, "n1k": N1K, "nscale": NSCALE, "scales": SCALES,
        "conns": CONNS, "consumers": CONSUMERS, "e2e_n": E2E_N, "n_rdk": N_RDK, "loaded_seconds": LOADED_SECONDS,
        "kafka_heap": " ".join(KAFKA_HEAP), "linger_ms": LINGER_MS, "batch_size": BATCH_SIZE},
        "runs": []}
    fixed_rate = None
    for i in range(PAIRS):
        for kind in os.environ.get("BENCH_BROKERS", "kafka,strata").split(","):
            r, rate = one_run(kind, i, fixed_rate)
            if fixed_rate is None and kind == "kafka":
                fixed_rate = rate  # half of Kafka's first saturating rate, for every run
            res["runs"].append(r)
            res["params"]["fixed_rate"] = fixed_rate
            with open(path, "w") as f:
                json.dump(res, f, indent=1)
    log("results in", path)
    print(path)


if __name__ == "__main__":
    main()
