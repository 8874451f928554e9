#!/usr/bin/env python3
"""Consumer parity (issue 15): every client consumer of compare.py's BENCH_CONSUMERS reading the
same 1-partition topics from Apache Kafka and from Strata, run by run alternately.

compare.py measures the same rows, but a whole broker run (minutes) lies between a Kafka figure
and its Strata counterpart, so a build starting on this shared machine lands on one broker
only. Here both brokers run side by side (compare.py's Broker class and settings, fresh data
dirs, Kafka on BENCH_KAFKA_PORT, Strata on BENCH_STRATA_PORT), each topic is written once per
broker, then every (client, size) pair is read BENCH_PARITY_REPS times on each broker,
alternating Kafka and Strata (which one goes first alternates too). Each read is compare.py's
consumer function for that client: partition 0 from the beginning, no group (kafkajs: a fresh
group, its join untimed), records/s from the first to the N-th record, broker CPU from
/proc/<pid>/stat around the read (`measured`).

  compat-tests/.cache/venv/bin/python benches/consumer_parity.py
Env: BENCH_PARITY_REPS (3), BENCH_N100 (1000000), BENCH_N1K (200000), BENCH_CONSUMERS (as
compare.py), BENCH_PARITY_PRODUCER (rdkperf: rdkafka_performance -P, linger.ms=5, batches up
to 1 MB; java: ProducerPerformance as compare.py, batch.size=16384), STRATA_BIN.
Writes benches/results/consumer-parity-<time>.{json,md}; prints the Markdown table (medians;
Strata/Kafka ratio of the median records/s, target >= 1.0; broker CPU-s per GB).
"""
import json
import os
import shutil
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import compare  # noqa: E402

REPS = int(os.environ.get("BENCH_PARITY_REPS", "3"))
N100 = int(os.environ.get("BENCH_N100", "1000000"))
N1K = int(os.environ.get("BENCH_N1K", "200000"))
PRODUCER = os.environ.get("BENCH_PARITY_PRODUCER", "rdkperf")
SIZES = ((100, N100), (1024, N1K))
NAMES = {"confluent": "confluent-kafka (librdkafka defaults)",
         "confluent-qb10": "confluent-kafka, fetch.queue.backoff.ms=10",
         "kafka-python": "kafka-python", "kafkajs": "kafkajs", "franz": "franz-go"}


def write_topics(b):
    for size, n in SIZES:
        topic = f"parity-s{size}"
        compare.create_topic(b, topic, 1)
        if PRODUCER == "java":
            compare.producer_perf(b, topic, n, size, "1")
        else:
            compare.rdk_perf_produce(b, topic, n, size, "1")


def compare_fmt(v):
    a = abs(v)
    return f"{v:,.0f}" if a >= 1000 else f"{v:.0f}" if a >= 100 else f"{v:.2f}" if a >= 1 else f"{v:.3f}"


def table(res):
    lines = ["| Client | Records | Kafka records/s, median [min–max] | Strata records/s, median [min–max] "
             "| Strata/Kafka | Kafka broker CPU-s/GB | Strata broker CPU-s/GB |",
             "|---|---|---:|---:|---:|---:|---:|"]
    for client in res["params"]["consumers"]:
        for size, n in SIZES:
            row = {}
            for kind in ("kafka", "strata"):
                rs = [r for r in res["reads"] if r["client"] == client and r["size"] == size
                      and r["broker"] == kind and "records_per_s" in r]
                row[kind] = rs
            if not row["kafka"] and not row["strata"]:
                continue

            def cell(rs, key):
                vs = [r[key] for r in rs]
                if not vs:
                    return "—", None
                m = statistics.median(vs)
                return (f"{compare_fmt(m)} [{compare_fmt(min(vs))}–{compare_fmt(max(vs))}]"
                        if len(vs) > 1 else compare_fmt(m)), m
            k, km = cell(row["kafka"], "records_per_s")
            s, sm = cell(row["strata"], "records_per_s")
            kc, _ = cell(row["kafka"], "broker_cpu_s_per_gb")
            sc, _ = cell(row["strata"], "broker_cpu_s_per_gb")
            ratio = f"{sm / km:.2f}" if km and sm else "—"
            label = "100 B" if size == 100 else "1 KiB"
            lines.append(f"| {NAMES.get(client, client)} | {n:,} × {label} | {k} | {s} | {ratio} "
                         f"| {kc} | {sc} |")
    errs = [r for r in res["reads"] if "error" in r]
    out = "\n".join(lines) + "\n"
    if errs:
        out += "\nFailed reads:\n\n" + "\n".join(
            f"- {r['broker']} {r['client']} {r['size']} B rep {r['rep']}: {r['error'][:160]}"
            for r in errs) + "\n"
    return out


def main():
    unknown = [c for c in compare.CONSUMERS if c not in compare.CLIENT_CONSUMERS]
    if unknown:
        sys.exit(f"BENCH_CONSUMERS: unknown {unknown}")
    os.makedirs(os.path.join(HERE, "results"), exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    path = os.path.join(HERE, "results", f"consumer-parity-{stamp}.json")
    res = {"machine": compare.machine_info(),
           "params": {"reps": REPS, "n100": N100, "n1k": N1K, "producer": PRODUCER,
                      "consumers": compare.CONSUMERS,
                      "strata_bin": compare.STRATA_BIN,
                      "kafka_heap": " ".join(compare.KAFKA_HEAP)},
           "reads": []}
    brokers = {k: compare.Broker(k, os.path.join(compare.WORK, f"parity-{k}"))
               for k in ("kafka", "strata")}
    try:
        for kind, b in brokers.items():
            compare.log(f"parity: start {kind}")
            b.start()
            compare.create_topic(b, "warmup", 1)
            compare.producer_perf(b, "warmup", 500000, 100, "1")  # JIT, page cache, allocator
            write_topics(b)
        for rep in range(REPS):
            order = ("kafka", "strata") if rep % 2 == 0 else ("strata", "kafka")
            for client in compare.CONSUMERS:
                fn = compare.CLIENT_CONSUMERS[client][1]
                for size, n in SIZES:
                    for kind in order:
                        b = brokers[kind]
                        r = {"broker": kind, "client": client, "size": size, "rep": rep,
                             "load1": os.getloadavg()[0]}
                        try:
                            r.update(fn(b, f"parity-s{size}", n, size))
                            compare.log(f"parity rep {rep} {client} {size} B {kind}: "
                                        f"{r['records_per_s']:,.0f} records/s, "
                                        f"{r['broker_cpu_s_per_gb']:.2f} CPU-s/GB")
                        except Exception as e:  # recorded, not fatal
                            r["error"] = str(e)[:500]
                            compare.log(f"parity rep {rep} {client} {size} B {kind} FAILED: {e}")
                        res["reads"].append(r)
                        with open(path, "w") as f:
                            json.dump(res, f, indent=1)
    finally:
        for b in brokers.values():
            b.stop()
            # ~0.35 GB per broker and run: free it (the disk is shared).
            shutil.rmtree(os.path.join(b.dir, "data"), ignore_errors=True)
    md = (f"`benches/consumer_parity.py`: {REPS} reads per broker, client and size, Kafka and "
          f"Strata alternating; topics written by {PRODUCER}; Kafka "
          f"{res['machine'].get('kafka')}, Strata binary `{compare.STRATA_BIN}` (tree at "
          f"{res['machine'].get('strata_commit')}).\n\n" + table(res))
    with open(os.path.splitext(path)[0] + ".md", "w") as f:
        f.write(md)
    compare.log("results in", path)
    print(md)


if __name__ == "__main__":
    main()
