#!/usr/bin/env python3
"""Tail latency under a fixed load (issue 15): p50 / p99 / p99.9 of the producer's ack latency
and of end-to-end latency, Apache Kafka and Strata alternating, with a light load generator.

The load generator is benches/latency_probe.c (built by benches/build-rdkafka-perf.sh against
the same librdkafka as rdkafka_performance): one C producer sends 100 B records (acks=1 unless
BENCH_TL_ACKS says otherwise, linger.ms=0, no idempotence unless acks=all) to a new topic of
BENCH_TL_PARTITIONS partitions (1; round robin over them) at a fixed rate, paced in 1 ms ticks and sleeping between them, and a consumer in the same
process reads the partitions from their end; both latencies are measured on one monotonic clock
from a send time carried in each record. `rdkafka_performance -r` was not used: above 1,000
records/s it spins a core between messages, which on two cores takes one from the broker.

Per round (BENCH_TL_ROUNDS), Kafka then Strata, each on a fresh data dir: start, warm up
(rdkafka_performance -P, 1,000,000 x 100 B, not measured; JIT for Kafka), then one probe run per
rate of BENCH_TL_RATES, each BENCH_TL_SECONDS long with the first BENCH_TL_WARMUP seconds
dropped. Broker CPU is counted around each probe run. Writes benches/results/tail-latency.json
and prints a Markdown table of medians over the rounds.

  compat-tests/.cache/venv/bin/python benches/tail_latency.py
Env: BENCH_TL_ROUNDS (3), BENCH_TL_RATES (10000,50000,200000), BENCH_TL_SECONDS (20),
BENCH_TL_WARMUP (3), BENCH_TL_PARTITIONS (1), BENCH_TL_ACKS (1), BENCH_TL_LINGER_MS (0), BENCH_TL_KINDS (kafka,strata:
the brokers of each round, in order; `label=/path/to/strata` runs that Strata binary under that
label, for a before/after of one change, e.g. BENCH_TL_KINDS=before=/tmp/strata-base,strata).
"""
import json
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import compare  # noqa: E402

ROUNDS = int(os.environ.get("BENCH_TL_ROUNDS", "3"))
RATES = [int(x) for x in os.environ.get("BENCH_TL_RATES", "10000,50000,200000").split(",") if x]
SECONDS = float(os.environ.get("BENCH_TL_SECONDS", "20"))
WARMUP = float(os.environ.get("BENCH_TL_WARMUP", "3"))
ACKS = os.environ.get("BENCH_TL_ACKS", "1")
LINGER_MS = os.environ.get("BENCH_TL_LINGER_MS", "0")
KINDS = os.environ.get("BENCH_TL_KINDS", "kafka,strata").split(",")
PARTITIONS = int(os.environ.get("BENCH_TL_PARTITIONS", "1"))
STRATA_BIN = compare.STRATA_BIN
FIGURES = [("ack", "p50"), ("ack", "p99"), ("ack", "p999"), ("e2e", "p50"), ("e2e", "p99"),
           ("e2e", "p999")]


def one_run(kind, rnd):
    label, _, binary = kind.partition("=")
    kind = label
    if binary:
        compare.STRATA_BIN = binary
    elif kind == "strata":
        compare.STRATA_BIN = STRATA_BIN
    b = compare.Broker("kafka" if kind == "kafka" else "strata",
                       os.path.join(compare.WORK, f"tl-{kind}-{rnd}"))
    b.start()
    out = []
    try:
        compare.rdk_perf_produce(b, "tl-warmup", 1_000_000, 100, "1")
        for rate in RATES:
            topic = f"tl-{rate}"
            compare.create_topic(b, topic, PARTITIONS)
            r = compare.latency_probe(b, topic, rate, SECONDS, WARMUP, ACKS, LINGER_MS,
                                      PARTITIONS)
            r.update({"kind": kind, "round": rnd})
            compare.log(f"{kind} round {rnd} rate {rate}: achieved {r['achieved_per_s']:.0f}/s, "
                        f"ack p99 {r['ack_p99_us']} us p99.9 {r['ack_p999_us']} us, "
                        f"e2e p99 {r['e2e_p99_us']} us p99.9 {r['e2e_p999_us']} us, "
                        f"{r['machine_busy_cores']:.2f} cores busy")
            out.append(r)
    finally:
        b.stop()
    return out


def markdown(runs):
    first, second = (k.partition("=")[0] for k in KINDS[:2])
    rows = [f"| Rate (records/s) | Figure | {first} median [min–max] | {second} median [min–max] "
            f"| {second}/{first} |", "|---:|---|---:|---:|---:|"]
    for rate in RATES:
        for side, q in FIGURES + [("broker", "cpu")]:
            key = "broker_cpu_s_per_gb" if side == "broker" else f"{side}_{q}_us"
            cells, meds = [], []
            for kind in (first, second):
                vals = [r[key] for r in runs if r["kind"] == kind and r["rate"] == rate]
                if not vals:
                    cells.append("–")
                    meds.append(None)
                    continue
                m = statistics.median(vals)
                meds.append(m)
                fmt = (lambda v: f"{v:.2f}") if side == "broker" else (lambda v: f"{v / 1000:.2f}")
                cells.append(f"{fmt(m)} [{fmt(min(vals))}–{fmt(max(vals))}] ({len(vals)})")
            label = ("broker CPU-s/GB" if side == "broker"
                     else f"{'ack' if side == 'ack' else 'end-to-end'} {q.replace('p999', 'p99.9')} (ms)")
            ratio = f"{meds[1] / meds[0]:.2f}" if None not in meds and meds[0] else "–"
            rows.append(f"| {rate:,} | {label} | {cells[0]} | {cells[1]} | {ratio} |")
    return "\n".join(rows)


def main():
    subprocess.run([os.path.join(HERE, "build-rdkafka-perf.sh")], check=True,
                   stdout=subprocess.DEVNULL)
    runs = []
    for rnd in range(ROUNDS):
        for kind in KINDS:
            runs += one_run(kind, rnd)
    meta = {"rounds": ROUNDS, "partitions": PARTITIONS, "rates": RATES, "seconds": SECONDS,
            "warmup": WARMUP, "acks": ACKS, "linger_ms": LINGER_MS, "machine": compare.machine_info()}
    os.makedirs(os.path.join(HERE, "results"), exist_ok=True)
    with open(os.environ.get("BENCH_OUT", os.path.join(HERE, "results", "tail-latency.json")),
              "w") as f:
        json.dump({"meta": meta, "runs": runs}, f, indent=1)
    print(markdown(runs))


if __name__ == "__main__":
    main()
