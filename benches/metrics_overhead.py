"""Metrics on vs off (issue 14): produce throughput and broker CPU per GB of one Strata broker
with the admin listener off (`strata.admin.listeners=`) and on scraped every BENCH_SCRAPE_S
seconds (default 1, far more often than Prometheus' usual 15-60 s), in interleaved pairs on
fresh data dirs; after each "on" run, the broker CPU of one scrape (100 back to back).

The counters and histograms are recorded on the request path whether or not the listener is
on (they are plain atomics, made once per topic and API); what the listener adds is the HTTP
server and the scrapes, which compute the state gauges (partitions, lag, log sizes) and encode
the registry. So "off" is the broker without any reader of its metrics, "on" with a busy one.

    STRATA_BIN=target/release/strata BENCH_PAIRS=5 BENCH_N=1000000 \\
        compat-tests/.cache/venv/bin/python benches/metrics_overhead.py

Each run: start the broker, produce BENCH_N x 100 B records (acks=1, Kafka's
ProducerPerformance with compare.py's producer settings) to a new 1-partition topic, stop.
Broker CPU = delta(utime+stime) of the broker over the producer run, per GB of payload.
Prints a JSON line per run and a Markdown row of medians [min-max]; writes
benches/results/metrics-overhead-<time>.json.
"""
import json
import os
import statistics
import sys
import threading
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import compare  # noqa: E402  (the broker and client helpers of benches/compare.py)

PAIRS = int(os.environ.get("BENCH_PAIRS", "5"))
N = int(os.environ.get("BENCH_N", "1000000"))
ADMIN = os.environ.get("BENCH_ADMIN", "127.0.0.1:29280")
SCRAPE_S = float(os.environ.get("BENCH_SCRAPE_S", "1"))  # scrape interval of the "on" runs


class Scraper:
    """GETs /metrics every second until stopped; counts the scrapes."""

    def __init__(self, admin):
        self.admin, self.n, self._stop = admin, 0, threading.Event()
        self._t = threading.Thread(target=self._run, daemon=True)
        self._t.start()

    def _run(self):
        while not self._stop.wait(SCRAPE_S):
            with urllib.request.urlopen(f"http://{self.admin}/metrics", timeout=10) as r:
                r.read()
            self.n += 1

    def stop(self):
        self._stop.set()
        self._t.join()
        return self.n


def one_run(metrics_on, idx):
    admin = f"http://{ADMIN}" if metrics_on else ""
    run_dir = os.path.join(compare.WORK, f"metrics-{'on' if metrics_on else 'off'}-{idx}")
    b = compare.Broker("strata", run_dir, extra_props={"strata.admin.listeners": admin})
    b.start()
    try:
        topic = f"m{idx}{'on' if metrics_on else 'off'}"
        compare.create_topic(b, topic, 1)
        scraper = Scraper(ADMIN) if metrics_on else None
        r = compare.producer_perf(b, topic, N, 100, "1")
        r["scrapes"] = scraper.stop() if scraper else 0
        if metrics_on:
            r["scrape_cpu_ms"] = scrape_cost(b)
    finally:
        b.stop()
    r.update({"metrics": "on" if metrics_on else "off", "run": idx})
    return r


def scrape_cost(broker, n=100):
    """Broker CPU per scrape (ms), over `n` back-to-back scrapes once the producer is done."""
    cpu0 = compare.proc_cpu_s(broker.pid)
    for _ in range(n):
        with urllib.request.urlopen(f"http://{ADMIN}/metrics", timeout=10) as r:
            r.read()
    return (compare.proc_cpu_s(broker.pid) - cpu0) * 1000 / n


def summary(rows, key):
    v = sorted(r[key] for r in rows)
    return statistics.median(v), v[0], v[-1]


def main():
    runs = []
    for i in range(PAIRS):
        # Alternate which goes first, so a drift in the machine's load favours neither.
        for on in ((False, True) if i % 2 == 0 else (True, False)):
            r = one_run(on, i)
            print(json.dumps(r), flush=True)
            runs.append(r)
    out = {"pairs": PAIRS, "n": N, "scrape_s": SCRAPE_S, "strata_bin": compare.STRATA_BIN, "runs": runs,
           "time": time.strftime("%Y%m%d-%H%M%S")}
    os.makedirs(os.path.join(compare.HERE, "results"), exist_ok=True)
    path = os.path.join(compare.HERE, "results", f"metrics-overhead-{out['time']}.json")
    with open(path, "w") as f:
        json.dump(out, f, indent=1)
    off = [r for r in runs if r["metrics"] == "off"]
    on = [r for r in runs if r["metrics"] == "on"]
    print(f"| Figure | metrics off median [min-max] (n={len(off)}) | metrics on, scraped every {SCRAPE_S:g} s "
          f"(n={len(on)}) | on/off |")
    print("|---|---:|---:|---:|")
    for key, name in (("records_per_s", "Produce 100 B acks=1 (records/s)"),
                      ("broker_cpu_s_per_gb", "Broker CPU-s per GB produced")):
        a, b = summary(off, key), summary(on, key)
        print(f"| {name} | {a[0]:,.2f} [{a[1]:,.2f}-{a[2]:,.2f}] | "
              f"{b[0]:,.2f} [{b[1]:,.2f}-{b[2]:,.2f}] | {b[0] / a[0]:.3f} |")
    # Paired ratios (each on-run against the off-run of its pair) show the spread honestly.
    for key in ("records_per_s", "broker_cpu_s_per_gb"):
        ratios = sorted(b[key] / a[key] for a, b in zip(off, on))
        print(f"paired on/off {key}: median {statistics.median(ratios):.3f} "
              f"[{ratios[0]:.3f}-{ratios[-1]:.3f}]")
    costs = sorted(r["scrape_cpu_ms"] for r in on)
    print(f"broker CPU per scrape: median {statistics.median(costs):.2f} ms "
          f"[{costs[0]:.2f}-{costs[-1]:.2f}]")
    print(path)


if __name__ == "__main__":
    main()
