#!/usr/bin/env python3
"""Turns a benches/compare.py results file into Markdown: one row per figure with the median
over runs for Kafka and Strata (n = runs that produced the figure), the Strata/Kafka ratio of
the medians, the issue-5 target where there is one, and whether it is met.

  report.py results.json [--splice BENCHMARKS.md [--marker NAME]]

Writes results.md next to the JSON; --splice also replaces the text between
`<!-- NAME:start -->` and `<!-- NAME:end -->` (NAME defaults to compare-table) in the given file.
"""

import json
import os
import statistics
import sys

# (scenario, metric, label, direction, target ratio or None)
# direction "higher": bigger is better (target: ratio >= t); "lower": smaller is better (<= t).
ROWS = [
    ("startup", "start_to_first_produce_s", "Start to first acknowledged produce (s)", "lower", 1 / 50),
    ("startup", "idle_rss_mb", "Idle RSS after start (MB)", "lower", None),
    ("produce_p1_100B_acks1", "records_per_s", "Produce 100 B acks=1, 1 partition (records/s)", "higher", 1.0),
    ("produce_p1_100B_acks1", "mb_per_s", "Produce 100 B acks=1 (MB/s, payload)", "higher", 1.0),
    ("produce_p1_100B_acks1", "lat_p50_ms", "Produce 100 B acks=1 saturated: ack p50 (ms)", "lower", None),
    ("produce_p1_100B_acks1", "lat_p99_ms", "Produce 100 B acks=1 saturated: ack p99 (ms)", "lower", None),
    ("produce_p1_100B_acks1", "broker_cpu_s_per_gb", "Produce 100 B acks=1: broker CPU-s per GB", "lower", 1 / 3),
    ("produce_p1_100B_acksall", "records_per_s", "Produce 100 B acks=all idempotent (records/s)", "higher", 1.0),
    ("produce_p1_100B_acksall", "broker_cpu_s_per_gb", "Produce 100 B acks=all: broker CPU-s per GB", "lower", 1 / 3),
    ("produce_p1_1024B_acks1", "records_per_s", "Produce 1 KiB acks=1 (records/s)", "higher", 1.0),
    ("produce_p1_1024B_acks1", "mb_per_s", "Produce 1 KiB acks=1 (MB/s, payload)", "higher", 1.0),
    ("produce_p1_1024B_acks1", "broker_cpu_s_per_gb", "Produce 1 KiB acks=1: broker CPU-s per GB", "lower", 1 / 3),
    ("produce_p1_1024B_acksall", "records_per_s", "Produce 1 KiB acks=all idempotent (records/s)", "higher", 1.0),
    ("produce_p1_1024B_acksall", "broker_cpu_s_per_gb", "Produce 1 KiB acks=all: broker CPU-s per GB", "lower", 1 / 3),
    ("consume_p1_100B", "records_per_s", "Consume 100 B, Java ConsumerPerformance (records/s)", "higher", 1.0),
    ("consume_p1_100B", "broker_cpu_s_per_gb", "Consume 100 B, Java: broker CPU-s per GB", "lower", 1 / 2),
    ("consume_p1_1024B", "records_per_s", "Consume 1 KiB, Java ConsumerPerformance (records/s)", "higher", 1.0),
    ("consume_rdk_p1_100B", "records_per_s", "Consume 100 B, librdkafka assign (records/s)", "higher", 1.0),
    ("consume_rdk_p1_100B", "broker_cpu_s_per_gb", "Consume 100 B, librdkafka: broker CPU-s per GB", "lower", 1 / 2),
    ("consume_rdk_p1_1024B", "records_per_s", "Consume 1 KiB, librdkafka assign (records/s)", "higher", 1.0),
    ("consume_rdk_p1_1024B", "mb_per_s", "Consume 1 KiB, librdkafka assign (MB/s)", "higher", 1.0),
    ("consume_rdk_p1_1024B", "broker_cpu_s_per_gb", "Consume 1 KiB, librdkafka: broker CPU-s per GB", "lower", 1 / 2),
    # Client consumers of BENCH_CONSUMERS (issue 15: no client reads slower from Strata).
    *[row for sc, name in (("consume_rdkqb10", "librdkafka fetch.queue.backoff.ms=10"),
                           ("consume_kpy", "kafka-python"), ("consume_kjs", "kafkajs"),
                           ("consume_franz", "franz-go"))
      for row in (
          (f"{sc}_p1_100B", "records_per_s", f"Consume 100 B, {name} (records/s)", "higher", 1.0),
          (f"{sc}_p1_100B", "broker_cpu_s_per_gb", f"Consume 100 B, {name}: broker CPU-s per GB", "lower", 1 / 2),
          (f"{sc}_p1_1024B", "records_per_s", f"Consume 1 KiB, {name} (records/s)", "higher", 1.0),
          (f"{sc}_p1_1024B", "broker_cpu_s_per_gb", f"Consume 1 KiB, {name}: broker CPU-s per GB", "lower", 1 / 2))],
    ("produce_rdkperf_p1_100B_acks1", "records_per_s", "Produce 100 B acks=1, rdkafka_performance (records/s)", "higher", 1.0),
    ("produce_rdkperf_p1_100B_acks1", "broker_cpu_s_per_gb", "Produce 100 B acks=1, rdkafka_performance: broker CPU-s per GB", "lower", 1 / 3),
    ("produce_rdkperf_p1_100B_acksall", "records_per_s", "Produce 100 B acks=all idempotent, rdkafka_performance (records/s)", "higher", 1.0),
    ("produce_rdkperf_p1_100B_acksall", "broker_cpu_s_per_gb", "Produce 100 B acks=all, rdkafka_performance: broker CPU-s per GB", "lower", 1 / 3),
    ("produce_rdkperf_p1_1024B_acks1", "mb_per_s", "Produce 1 KiB acks=1, rdkafka_performance (MB/s)", "higher", 1.0),
    ("produce_rdkperf_p1_1024B_acks1", "broker_cpu_s_per_gb", "Produce 1 KiB acks=1, rdkafka_performance: broker CPU-s per GB", "lower", 1 / 3),
    ("produce_rdkperf_p1_1024B_acksall", "mb_per_s", "Produce 1 KiB acks=all idempotent, rdkafka_performance (MB/s)", "higher", 1.0),
    ("produce_rdkperf_p1_1024B_acksall", "broker_cpu_s_per_gb", "Produce 1 KiB acks=all, rdkafka_performance: broker CPU-s per GB", "lower", 1 / 3),
    ("consume_rdkperf_p1_100B", "records_per_s", "Consume 100 B, rdkafka_performance (records/s)", "higher", 1.0),
    ("consume_rdkperf_p1_100B", "broker_cpu_s_per_gb", "Consume 100 B, rdkafka_performance: broker CPU-s per GB", "lower", 1 / 2),
    ("consume_rdkperf_p1_1024B", "mb_per_s", "Consume 1 KiB, rdkafka_performance (MB/s)", "higher", 1.0),
    ("consume_rdkperf_p1_1024B", "broker_cpu_s_per_gb", "Consume 1 KiB, rdkafka_performance: broker CPU-s per GB", "lower", 1 / 2),
    ("e2e_idle", "e2e_p50_ms", "E2E idle, Java EndToEndLatency lock-step: p50 (ms)", "lower", None),
    ("e2e_idle", "e2e_p99_ms", "E2E idle, Java EndToEndLatency: p99 (ms)", "lower", None),
    ("e2e_rdk_idle", "e2e_p50_ms", "E2E idle, librdkafka lock-step: p50 (ms)", "lower", None),
    ("e2e_rdk_idle", "e2e_p99_ms", "E2E idle, librdkafka lock-step: p99 (ms)", "lower", None),
    ("e2e_rdk_idle", "e2e_p999_ms", "E2E idle, librdkafka lock-step: p99.9 (ms)", "lower", None),
    ("e2e_loaded", "loaded_rdk_e2e_p50_ms", "E2E under fixed-rate load, librdkafka probe: p50 (ms)", "lower", None),
    ("e2e_loaded", "loaded_rdk_e2e_p99_ms", "E2E under fixed-rate load, librdkafka probe: p99 (ms)", "lower", 1 / 5),
    ("e2e_loaded", "loaded_rdk_e2e_p999_ms", "E2E under fixed-rate load, librdkafka probe: p99.9 (ms)", "lower", None),
    ("e2e_loaded", "loaded_e2e_p99_ms", "E2E under fixed-rate load, Java EndToEndLatency: p99 (ms)", "lower", 1 / 5),
    ("e2e_loaded", "fixed_achieved_records_per_s", "Fixed-rate load achieved (records/s)", "higher", None),
    ("e2e_loaded", "fixed_produce_p50_ms", "Fixed-rate produce: ack p50 (ms)", "lower", None),
    ("e2e_loaded", "fixed_produce_p99_ms", "Fixed-rate produce: ack p99 (ms)", "lower", 1 / 5),
    ("e2e_loaded", "fixed_produce_p999_ms", "Fixed-rate produce: ack p99.9 (ms)", "lower", None),
    ("tail_probe", "ack_p50_us", "Fixed rate, light C probe: ack p50 (µs)", "lower", None),
    ("tail_probe", "ack_p99_us", "Fixed rate, light C probe: ack p99 (µs)", "lower", 1 / 5),
    ("tail_probe", "ack_p999_us", "Fixed rate, light C probe: ack p99.9 (µs)", "lower", None),
    ("tail_probe", "e2e_p50_us", "Fixed rate, light C probe: end-to-end p50 (µs)", "lower", None),
    ("tail_probe", "e2e_p99_us", "Fixed rate, light C probe: end-to-end p99 (µs)", "lower", 1 / 5),
    ("tail_probe", "e2e_p999_us", "Fixed rate, light C probe: end-to-end p99.9 (µs)", "lower", None),
    ("e2e_loaded", "fixed_broker_cpu_s_per_gb", "Fixed-rate produce: broker CPU-s per GB", "lower", 1 / 3),
    ("produce_p1_100B_acks1", "broker_peak_rss_mb", "Peak RSS during produce, 1 partition (MB)", "lower", None),
]
for parts in (100, 1000, 10000):
    sc = f"produce_p{parts}_100B_acks1"
    ROWS += [
        (sc, "create_topic_s", f"Create topic with {parts} partitions (s)", "lower", None),
        (sc, "rss_per_idle_partition_kb", f"RSS per idle partition at {parts} (KB)", "lower", None),
        (sc, "records_per_s", f"Produce 100 B acks=1, {parts} partitions (records/s)", "higher", 1.0),
        (sc, "broker_cpu_s_per_gb", f"Produce on {parts} partitions: broker CPU-s per GB", "lower", 1 / 3),
        (sc, "broker_peak_rss_mb", f"Peak RSS under load, {parts} partitions (MB)", "lower",
         1 / 10 if parts == 1000 else None),
    ]
for n in (1000, 10000):
    sc = f"idle_conns_{n}"
    ROWS += [
        (sc, "conn_errors", f"{n} idle connections: errors", "lower", None),
        (sc, "rss_per_conn_kb", f"RSS per idle connection at {n} (KB)", "lower", None),
        (sc, "rss_with_conns_mb", f"RSS with {n} idle connections (MB)", "lower", None),
    ]
ROWS.append(("", "vmhwm_mb", "Peak RSS over the whole run, VmHWM (MB)", "lower", None))


def values(runs, broker, scenario, metric):
    out = []
    for r in runs:
        if r["broker"] != broker:
            continue
        src = r if scenario == "" else r.get("scenarios", {}).get(scenario, {})
        v = src.get(metric)
        if isinstance(v, (int, float)):
            out.append(float(v))
    return out


def fmt(v):
    if v is None:
        return "—"
    a = abs(v)
    if a >= 1000:
        return f"{v:,.0f}"
    if a >= 100:
        return f"{v:.0f}"
    if a >= 10:
        return f"{v:.1f}"
    if a >= 1:
        return f"{v:.2f}"
    return f"{v:.3f}"


def cell(vs):
    if not vs:
        return "— (0)"
    if len(vs) == 1:
        return f"{fmt(vs[0])} (1)"
    return f"{fmt(statistics.median(vs))} [{fmt(min(vs))}–{fmt(max(vs))}] ({len(vs)})"


def target_text(direction, t):
    if t is None:
        return ""
    frac = {1 / 3: "⅓", 1 / 2: "½", 1 / 5: "⅕", 1 / 10: "1/10", 1 / 50: "1/50", 1.0: "1.0"}
    s = frac.get(t, f"{t:.3g}")
    return ("≥ " if direction == "higher" else "≤ ") + s + ("×" if s != "1.0" else "×")


def table(res):
    runs = res["runs"]
    lines = ["| Figure | Kafka median [min–max] (n) | Strata median [min–max] (n) | Strata/Kafka | Target | Met |",
             "|---|---:|---:|---:|---|---|"]
    for sc, metric, label, direction, t in ROWS:
        k, s = values(runs, "kafka", sc, metric), values(runs, "strata", sc, metric)
        if not k and not s:
            continue
        km = statistics.median(k) if k else None
        sm = statistics.median(s) if s else None
        ratio = sm / km if (km and sm is not None) else None
        met = ""
        if t is not None:
            if ratio is None:
                met = "no data"
            elif direction == "higher":
                met = "yes" if ratio >= t else "no"
            else:
                met = "yes" if ratio <= t else "no"
        rs = "—" if ratio is None else (f"{ratio:.3f}" if ratio < 0.1 else f"{ratio:.2f}")
        lines.append(f"| {label} | {cell(k)} | {cell(s)} | {rs} | "
                     f"{target_text(direction, t)} | {met} |")
    failed = {}  # (broker, scenario) -> (runs, first line of the first error)
    for r in runs:
        items = [("whole run", {"error": r["error"]})] if r.get("error") else []
        items += list(r.get("scenarios", {}).items())
        for name, sc in items:
            e = sc.get("error") or sc.get("loaded_java_error")
            if e:
                first = (e.strip().splitlines() or [""])[0][:160]
                failed.setdefault((r["broker"], name), ([], first))[0].append(str(r["run"]))
    errs = [f"- {b} `{name}` (runs {', '.join(rs)}): {first}"
            for (b, name), (rs, first) in failed.items()]
    p = res["params"]
    head = (f"Generated by `benches/report.py` from `{os.path.basename(res.get('_path', ''))}`: "
            f"{p['pairs']} pairs (Kafka, Strata alternating, fresh data dir each), "
            f"Kafka {res['machine'].get('kafka')} heap `{p['kafka_heap']}`, Strata "
            f"{res['machine'].get('strata_commit')}; producer linger.ms={p['linger_ms']} "
            f"batch.size={p['batch_size']}; fixed rate {p.get('fixed_rate')} records/s.\n")
    out = head + "\n" + "\n".join(lines) + "\n"
    if errs:
        out += "\nScenarios that failed:\n\n" + "\n".join(errs) + "\n"
    return out


def main():
    path = sys.argv[1]
    res = json.load(open(path))
    res["_path"] = path
    md = table(res)
    mdp = os.path.splitext(path)[0] + ".md"
    open(mdp, "w").write(md)
    if "--splice" in sys.argv:
        target = sys.argv[sys.argv.index("--splice") + 1]
        marker = "compare-table"
        if "--marker" in sys.argv:
            marker = sys.argv[sys.argv.index("--marker") + 1]
        start, end = f"<!-- {marker}:start -->", f"<!-- {marker}:end -->"
        if os.path.exists(target):
            text = open(target).read()
            if start in text and end in text:
                a, b = text.index(start) + len(start), text.index(end)
                open(target, "w").write(text[:a] + "\n" + md + text[b:])
    print(md)


if __name__ == "__main__":
    main()
