#!/usr/bin/env python3
"""Zero-copy fetch (issue 15): the broker CPU per GB a consumer costs with fetched records sent
from the segment files by sendfile (`strata.fetch.zero.copy=true`, the default) and copied
through the encoded response (`false`), at 100 B, 1 KiB and 16 KiB records.

For each mode, alternated BENCH_ZC_ROUNDS times (fresh data dir each run): start Strata, write
each size's topic with rdkafka_performance -P (acks=1, 1 partition), then read it back
BENCH_ZC_READS times with rdkafka_performance -C from the beginning (no group; the data is in
the page cache). Broker CPU comes from /proc/<pid>/stat around each read (compare.py's
`measured`). Prints a Markdown table of medians and writes benches/results/zero_copy.json.

  compat-tests/.cache/venv/bin/python benches/zero_copy.py
Env: BENCH_ZC_ROUNDS (2), BENCH_ZC_READS (3), BENCH_ZC_MB (500: megabytes per size),
BENCH_ZC_KAFKA=1 (also Apache Kafka, from compare.py's jars, in each round).
"""
import json
import os
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import compare  # noqa: E402

ROUNDS = int(os.environ.get("BENCH_ZC_ROUNDS", "2"))
READS = int(os.environ.get("BENCH_ZC_READS", "3"))
MB = int(os.environ.get("BENCH_ZC_MB", "500"))
SIZES = [100, 1024, 16384]
# BENCH_ZC_KAFKA=1 adds Apache Kafka (compare.py's jars and settings) as a third broker.
MODES = [False, True] + (["kafka"] if os.environ.get("BENCH_ZC_KAFKA") == "1" else [])


def one_run(zero_copy, idx):
    """zero_copy: False or True (Strata with strata.fetch.zero.copy so set), or "kafka"."""
    if zero_copy == "kafka":
        b = compare.Broker("kafka", os.path.join(compare.WORK, f"zc-kafka-{idx}"))
    else:
        b = compare.Broker("strata", os.path.join(compare.WORK, f"zc-{zero_copy}-{idx}"),
                           extra_props={"strata.fetch.zero.copy": str(zero_copy).lower()})
    b.start()
    out = []
    try:
        for size in SIZES:
            n = MB * 1_000_000 // size
            topic = f"zc-{size}"
            compare.rdk_perf_produce(b, topic, n, size, "1")
            for r in range(READS):
                res = compare.rdk_perf_consume(b, topic, n, size)
                res.update({"zero_copy": zero_copy, "size": size, "run": idx, "read": r})
                compare.log(f"zero_copy={zero_copy} size={size} read={r}: "
                            f"{res['broker_cpu_s_per_gb']:.3f} CPU-s/GB, "
                            f"{res['mb_per_s']:.0f} MB/s")
                out.append(res)
    finally:
        b.stop()
        # Each run writes 3 x BENCH_ZC_MB: free it before the next.
        import shutil
        shutil.rmtree(b.dir, ignore_errors=True)
    return out


def main():
    results = []
    for idx in range(ROUNDS):
        for zc in MODES:
            results.extend(one_run(zc, idx))
    os.makedirs(os.path.join(HERE, "results"), exist_ok=True)
    with open(os.path.join(HERE, "results", "zero_copy.json"), "w") as f:
        json.dump(results, f, indent=1)
    kafka = "kafka" in MODES
    print("| Records | copy: CPU-s/GB | zero-copy: CPU-s/GB | zero-copy/copy |"
          + (" Kafka: CPU-s/GB | zero-copy/Kafka |" if kafka else "")
          + " copy: MB/s | zero-copy: MB/s |" + (" Kafka: MB/s |" if kafka else ""))
    print("|---" * (6 + 3 * kafka) + "|")
    for size in SIZES:
        def med(zc, key):
            return statistics.median(r[key] for r in results
                                     if r["size"] == size and r["zero_copy"] == zc)
        c, z = med(False, "broker_cpu_s_per_gb"), med(True, "broker_cpu_s_per_gb")
        row = f"| {size} B | {c:.3f} | {z:.3f} | {z / c:.2f} |"
        if kafka:
            k = med("kafka", "broker_cpu_s_per_gb")
            row += f" {k:.3f} | {z / k:.2f} |"
        row += f" {med(False, 'mb_per_s'):.0f} | {med(True, 'mb_per_s'):.0f} |"
        if kafka:
            row += f" {med('kafka', 'mb_per_s'):.0f} |"
        print(row)


if __name__ == "__main__":
    main()
