#!/usr/bin/env python3
"""Durable acknowledgements (issue 15): Strata's group commit against its page-cache default
and against Apache Kafka acknowledging after an fsync of every append (`flush.messages=1`).

    compat-tests/.cache/venv/bin/python benches/durable_compare.py

Uses benches/compare.py's brokers, client tools and accounting. Four broker configurations run
in turn, BENCH_DUR_ROUNDS times, each on a fresh data dir:
  strata-page   Strata as shipped (acknowledged once written to the page cache)
  strata-durable  strata.log.durable.acks=true (acknowledged once fsynced, group commit)
  kafka-flush1  Kafka 4.1.2 with log.flush.interval.messages=1 (an fsync inside every append)
  kafka-page    Kafka as shipped
In each run: a warm-up produce (not measured), then librdkafka's rdkafka_performance producing
100 B records with acks=all and acks=1 and 1 KiB records with acks=all to partition 0 of a
new 1-partition topic (linger.ms=5, compare.py's settings), then the same 100 B acks=all on a
6-partition topic (every partition, so that one fsync round covers several logs), then 100 B
acks=all in requests of 100 records sent without linger (where an fsync per append costs
most), by one producer, by four at once (four rdkafka_performance processes, each on its own
partition of a 4-partition topic: one fsync round can answer several connections), by eight at
once all on partition 0 of a 1-partition topic (one fsync of one file answers them all), and by
Kafka's Java ProducerPerformance (batch.size=10240, linger.ms=0: five requests in flight). For Strata
durable, the group commit's rounds and answered requests are read from /metrics.

A slow-fsync disk (BENCH_DUR_WRITE_IOPS=N): both brokers run in a cgroup-v1 blkio group that
limits the write IOs their own threads issue on the data dir's disk to N per second. The writes
an fsync issues are the caller's and are throttled; the page cache's background writeback is the
kernel flusher's and is not, nor is ext4's journal thread. On this VM's virtio disk one
`dd bs=4k oflag=dsync` write takes 0.28 ms unthrottled and 1.7 ms at N=2000 (a network block
volume's figure); buffered writes keep their speed. Needs root and /sys/fs/cgroup/blkio.

Knobs: BENCH_DUR_ROUNDS=3, BENCH_DUR_WRITE_IOPS (off), BENCH_DUR_N100=300000, BENCH_DUR_N1K=100000, BENCH_DUR_NSMALL=300000,
BENCH_DUR_SCENARIOS (comma-separated names, default all),
BENCH_DUR_CONFIGS=strata-page,strata-durable,kafka-flush1,kafka-page, STRATA_BIN, BENCH_WORK,
BENCH_OUT. Writes benches/results/durable-<time>.json and .md; prints the Markdown.
"""

import json
import os
import statistics
import sys
import threading
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import compare as C  # noqa: E402

ROUNDS = int(os.environ.get("BENCH_DUR_ROUNDS", "3"))
N100 = int(os.environ.get("BENCH_DUR_N100", "300000"))
N1K = int(os.environ.get("BENCH_DUR_N1K", "100000"))
N_SMALL = int(os.environ.get("BENCH_DUR_NSMALL", "300000"))
CONFIGS = os.environ.get(
    "BENCH_DUR_CONFIGS", "strata-page,strata-durable,kafka-flush1,kafka-page").split(",")
ADMIN_PORT = int(os.environ.get("BENCH_DUR_ADMIN_PORT", "29744"))

SETTINGS = {
    "strata-page": ("strata", {}),
    "strata-durable": ("strata", {"strata.log.durable.acks": "true"}),
    "kafka-flush1": ("kafka", {"log.flush.interval.messages": "1"}),
    "kafka-page": ("kafka", {}),
}
SMALL = ["-X", "linger.ms=0", "-X", "batch.num.messages=100"]
JAVA_SMALL = ["java", "linger.ms=0", "batch.size=10240"]
ALL_SCENARIOS = [
    # (name, size, n, acks, partitions, more rdkafka_performance args)
    ("p1_100B_acksall", 100, N100, "all", 1, []),
    ("p1_100B_acks1", 100, N100, "1", 1, []),
    ("p1_1KiB_acksall", 1024, N1K, "all", 1, []),
    ("p6_100B_acksall", 100, N100, "all", 6, []),
    # Requests of 100 records (10 KB) sent at once: an fsync per append costs the most.
    ("p1_100B_acksall_small", 100, N_SMALL, "all", 1, SMALL),
    # Four producers at once, each with requests of 100 records to its own partition: one
    # fsync round can answer several connections.
    ("p4x4_100B_acksall_small", 100, N_SMALL, "all", 4, SMALL),
    # Eight producers at once, all on partition 0 of a 1-partition topic (many application
    # instances writing to one partition): Kafka's appends to one log, each with its fsync,
    # run one after another; one group commit round can answer all eight.
    ("p1x8_100B_acksall_small", 100, N_SMALL, "all", 1, SMALL),
    # Kafka's Java producer with requests of ~10 KB: it keeps up to five requests of one
    # partition in flight, where librdkafka's idempotent producer counts its five against
    # *messages* in flight and so sends a partition's next request only once the last is
    # answered. Strata reads a connection's next request while one waits for its fsync, so one
    # round can answer several requests of one producer; Kafka handles one at a time.
    ("java_p1_100B_acksall_small", 100, N_SMALL, "all", 1, JAVA_SMALL),
    # One librdkafka producer spreading requests of 100 records over 8 partitions: each
    # partition has one request in flight, so a round covers several logs, whose pages can
    # share one cache flush (BENCHMARKS.md, "One cache flush per round over several logs").
    ("p8_100B_acksall_small", 100, N_SMALL, "all", 8, SMALL),
    # The same from Kafka's Java producer, whose requests carry several partitions each.
    ("java_p8_100B_acksall_small", 100, N_SMALL, "all", 8, JAVA_SMALL),
]
# Scenarios with more than one producer process at once.
PRODUCERS = {"p4x4_100B_acksall_small": 4, "p1x8_100B_acksall_small": 8}
WRITE_IOPS = int(os.environ.get("BENCH_DUR_WRITE_IOPS", "0"))
WANTED = os.environ.get("BENCH_DUR_SCENARIOS")
SCENARIOS = [s for s in ALL_SCENARIOS if not WANTED or s[0] in WANTED.split(",")]


def log(*a):
    print("[durable]", *a, file=sys.stderr, flush=True)


def slow_disk_cgroup():
    """The blkio cgroup throttling write IOs on the disk of C.WORK to WRITE_IOPS a second, or
    None when off."""
    if not WRITE_IOPS:
        return None
    os.makedirs(C.WORK, exist_ok=True)
    dev = os.stat(C.WORK).st_dev
    node = os.path.realpath(f"/sys/dev/block/{os.major(dev)}:{os.minor(dev)}")
    # A partition's limit is set on its disk (the throttle takes whole devices only).
    if os.path.exists(os.path.join(node, "partition")):
        node = os.path.dirname(node)
    with open(os.path.join(node, "dev")) as f:
        disk = f.read().strip()
    group = "/sys/fs/cgroup/blkio/strata-bench-slow-fsync"
    os.makedirs(group, exist_ok=True)
    with open(os.path.join(group, "blkio.throttle.write_iops_device"), "w") as f:
        f.write(f"{disk} {WRITE_IOPS}")
    log(f"slow-fsync disk: write IOs on {disk} limited to {WRITE_IOPS}/s in {group}")
    return group


CGROUP = None


def group_commit_stats():
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{ADMIN_PORT}/metrics", timeout=5) as r:
            text = r.read().decode()
    except OSError:
        return {}
    stats = {}
    for line in text.splitlines():
        for name in ("rounds", "requests", "log_syncs", "shared_flushes"):
            prefix = f"strata_group_commit_{name}_total "
            if line.startswith(prefix):
                stats[name] = float(line[len(prefix):])
    return stats


def produce(broker, topic, size, n, acks, partitions, more=(), producers=1):
    """`producers` > 1: that many rdkafka_performance processes at once, producer i writing
    n / producers records to partition i % partitions; the rate is all records over the wall
    time."""
    def args(partition, count):
        return ["-P", "-t", topic, "-p", str(partition), "-s", str(size),
                "-c", str(count), "-a", "-1" if acks == "all" else acks,
                "-X", f"linger.ms={C.LINGER_MS}", "-X", "compression.type=none",
                "-X", f"enable.idempotence={'true' if acks == 'all' else 'false'}", *more]

    def check(t, count):
        if t.get("dr", 0) < count or t.get("dr_err", 0):
            raise RuntimeError(f"incomplete delivery: {t}")

    def java():
        props = [p for p in C.producer_props(broker, acks)
                 if not p.startswith(("linger.ms=", "batch.size="))] + list(more[1:])
        out, _, _ = C.java_tool("org.apache.kafka.tools.ProducerPerformance",
                                ["--topic", topic, "--num-records", str(n), "--record-size",
                                 str(size), "--throughput", "-1", "--producer-props", *props])
        m = None
        for m in C.PERF_RE.finditer(out):
            pass
        if not m or int(m.group(1)) < n:
            raise RuntimeError("ProducerPerformance did not send every record: " + out[-500:])
        return {"records_per_s": float(m.group(2)), "mb_per_s": float(m.group(2)) * size / 1e6}

    def run():
        if more[:1] == ["java"]:
            return java()
        if producers == 1:
            t = C.rdk_perf(broker, args(0 if partitions == 1 else -1, n))
            check(t, n)
            return {"records_per_s": t["dr_m/s"], "mb_per_s": t["dr_m/s"] * size / 1e6}
        each = n // producers
        tables, errors = [None] * producers, []

        def one(i):
            try:
                tables[i] = C.rdk_perf(broker, args(i % partitions, each))
            except Exception as e:  # noqa: BLE001 - reported below
                errors.append(e)

        t0 = time.monotonic()
        threads = [threading.Thread(target=one, args=(i,)) for i in range(producers)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        wall = time.monotonic() - t0
        if errors:
            raise errors[0]
        for t in tables:
            check(t, each)
        rate = each * producers / wall
        return {"records_per_s": rate, "mb_per_s": rate * size / 1e6}

    r = C.measured(broker, run)
    r["broker_cpu_s_per_gb"] = r["broker_cpu_s"] / (n * size / 1e9)
    return r


def one_run(config, run_index):
    kind, extra = SETTINGS[config]
    extra = dict(extra)
    if kind == "strata":
        extra["strata.admin.listeners"] = f"http://127.0.0.1:{ADMIN_PORT}"
    broker = C.Broker(kind, os.path.join(C.WORK, f"durable-{config}"), extra_props=extra,
                      cgroup=CGROUP)
    log(f"run {run_index}: {config}")
    broker.start()
    results = {}
    try:
        C.create_topic(broker, "warmup", 1)
        produce(broker, "warmup", 100, N100 // 3, "1", 1)
        for name, size, n, acks, partitions, more in SCENARIOS:
            topic = f"dur-{name}"
            C.create_topic(broker, topic, partitions)
            before = group_commit_stats()
            producers = PRODUCERS.get(name, 1)
            r = produce(broker, topic, size, n, acks, partitions, more, producers)
            after = group_commit_stats()
            if before and after:
                r["group_commit_rounds"] = after["rounds"] - before["rounds"]
                r["group_commit_requests"] = after["requests"] - before["requests"]
            results[name] = r
            log(f"  {name}: {r['records_per_s']:.0f} rec/s, "
                f"{r['broker_cpu_s_per_gb']:.1f} CPU-s/GB", r.get("group_commit_rounds", ""))
    finally:
        broker.stop()
    return results


def median(values):
    return statistics.median(values) if values else float("nan")


def markdown(runs, meta):
    lines = [f"Generated by `benches/durable_compare.py` ({meta}). "
             "Cells: median [min–max] records/s over the runs; broker CPU-s per GB beside it.",
             "",
             "| Scenario | " + " | ".join(CONFIGS) + " |",
             "|---|" + "---:|" * len(CONFIGS)]
    for name, *_ in SCENARIOS:
        cells = []
        for config in CONFIGS:
            rs = [r[name] for r in runs.get(config, []) if name in r]
            if not rs:
                cells.append("–")
                continue
            rate = [r["records_per_s"] for r in rs]
            cpu = [r["broker_cpu_s_per_gb"] for r in rs]
            cells.append(f"{median(rate):,.0f} [{min(rate):,.0f}–{max(rate):,.0f}], "
                         f"{median(cpu):.1f} s/GB")
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    lines.append("")
    ratios = []
    for name, *_ in SCENARIOS:
        def med(config):
            return median([r[name]["records_per_s"] for r in runs.get(config, []) if name in r])
        row = [name]
        for a, b in (("strata-durable", "strata-page"), ("strata-durable", "kafka-flush1"),
                     ("strata-durable", "kafka-page")):
            row.append(f"{med(a) / med(b):.2f}x" if a in runs and b in runs else "–")
        rounds = [r[name].get("group_commit_rounds") for r in runs.get("strata-durable", [])]
        reqs = [r[name].get("group_commit_requests") for r in runs.get("strata-durable", [])]
        per_round = [q / k for q, k in zip(reqs, rounds) if q and k]
        row.append(f"{median(per_round):.1f}" if per_round else "–")
        ratios.append(row)
    lines += ["| Scenario | durable / page cache | durable / Kafka flush.messages=1 | "
              "durable / Kafka page cache | acknowledgements per fsync round |",
              "|---|---:|---:|---:|---:|"]
    lines += ["| " + " | ".join(r) + " |" for r in ratios]
    return "\n".join(lines) + "\n"


def main():
    global CGROUP
    CGROUP = slow_disk_cgroup()
    runs = {c: [] for c in CONFIGS}
    for i in range(ROUNDS):
        order = CONFIGS if i % 2 == 0 else list(reversed(CONFIGS))
        for config in order:
            runs[config].append(one_run(config, i))
    stamp = time.strftime("%Y%m%d-%H%M%S")
    out = os.environ.get("BENCH_OUT", os.path.join(C.HERE, "results", f"durable-{stamp}.json"))
    os.makedirs(os.path.dirname(out), exist_ok=True)
    meta = (f"{ROUNDS} rounds, configurations in alternating order, fresh data dir each; "
            f"{N100:,} × 100 B / {N1K:,} × 1 KiB records per measured run; "
            + (f"slow-fsync disk: {WRITE_IOPS} write IOs/s per broker; " if WRITE_IOPS else "")
            + f"`durable-{stamp}.json`")
    with open(out, "w") as f:
        json.dump({"meta": meta, "runs": runs}, f, indent=1)
    md = markdown(runs, meta)
    with open(out[:-5] + ".md", "w") as f:
        f.write(md)
    print(md)


if __name__ == "__main__":
    main()
