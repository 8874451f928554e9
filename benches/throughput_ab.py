#!/usr/bin/env python3
"""Before/after of two Strata binaries on full-speed throughput with librdkafka's
rdkafka_performance (built by benches/build-rdkafka-perf.sh): per round and binary, on a fresh
data dir, 3,000,000 x 100 B produced with acks=1, 500,000 x 1 KiB with acks=all (idempotent),
then the 100 B records consumed from the beginning; broker CPU per GB of each. The binaries
alternate; the file system is synced before each start and the data dir removed after each
run, so the writeback of one run does not land in the next.

  BENCH_AB_BEFORE=/tmp/strata-old BENCH_AB_AFTER=target/release/strata \\
    compat-tests/.cache/venv/bin/python benches/throughput_ab.py
Env: BENCH_AB_ROUNDS (3). Writes benches/results/throughput-ab.json and prints one line per run.
"""
import json
import os
import shutil
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import compare  # noqa: E402

ROUNDS = int(os.environ.get("BENCH_AB_ROUNDS", "3"))
KINDS = [("before", os.environ["BENCH_AB_BEFORE"]), ("after", os.environ["BENCH_AB_AFTER"])]


def one_run(label, binary, rnd):
    compare.STRATA_BIN = binary
    run_dir = os.path.join(compare.WORK, f"ab-{label}-{rnd}")
    os.sync()
    b = compare.Broker("strata", run_dir)
    b.start()
    try:
        compare.create_topic(b, "a", 1)
        produce = compare.rdk_perf_produce(b, "a", 3_000_000, 100, "1")
        produce_all = compare.rdk_perf_produce(b, "b", 500_000, 1024, "all")
        consume = compare.rdk_perf_consume(b, "a", 3_000_000, 100)
    finally:
        b.stop()
        shutil.rmtree(run_dir, ignore_errors=True)
        os.sync()
        time.sleep(3)
    return {"kind": label, "round": rnd, "produce_100B_acks1": produce,
            "produce_1KiB_acksall": produce_all, "consume_100B": consume}


def main():
    runs = []
    for rnd in range(ROUNDS):
        for label, binary in KINDS:
            r = one_run(label, binary, rnd)
            runs.append(r)
            print(json.dumps({"kind": label, "round": rnd, **{
                k: [round(v["records_per_s"]), round(v["broker_cpu_s_per_gb"], 2)]
                for k, v in r.items() if isinstance(v, dict)}}), flush=True)
    out = os.path.join(HERE, "results", "throughput-ab.json")
    with open(out, "w") as f:
        json.dump(runs, f, indent=1)
    print(f"[throughput_ab] wrote {out}")


if __name__ == "__main__":
    main()
