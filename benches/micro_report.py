#!/usr/bin/env python3
"""Markdown table of the latest criterion results (target/criterion/**/new/*.json): median time
per iteration with its 95% confidence interval, and the throughput it implies.

  python3 benches/micro_report.py [--splice BENCHMARKS.md]   (marker: micro-table)
"""

import glob
import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def fmt_time(ns):
    for unit, div in (("s", 1e9), ("ms", 1e6), ("µs", 1e3)):
        if ns >= div:
            return f"{ns / div:.3g} {unit}"
    return f"{ns:.3g} ns"


def main():
    rows = []
    for bj in sorted(glob.glob(os.path.join(ROOT, "target", "criterion", "**", "new",
                                            "benchmark.json"), recursive=True)):
        b = json.load(open(bj))
        e = json.load(open(os.path.join(os.path.dirname(bj), "estimates.json")))["median"]
        ns = e["point_estimate"]
        ci = e["confidence_interval"]
        tp = b.get("throughput") or {}
        if "Bytes" in tp:
            thr = f"{tp['Bytes'] / ns:.3g} GB/s"  # bytes per ns = GB/s
        elif "Elements" in tp:
            thr = f"{tp['Elements'] / ns * 1e3:.3g} M/s"
        else:
            thr = ""
        rows.append(f"| `{b['full_id']}` | {fmt_time(ns)} | {fmt_time(ci['lower_bound'])} – "
                    f"{fmt_time(ci['upper_bound'])} | {thr} |")
    md = ("| Benchmark | Median | 95% CI | Throughput |\n|---|---:|---:|---:|\n"
          + "\n".join(rows) + "\n")
    if "--splice" in sys.argv:
        target = sys.argv[sys.argv.index("--splice") + 1]
        text = open(target).read()
        start, end = "<!-- micro-table:start -->", "<!-- micro-table:end -->"
        a, z = text.index(start) + len(start), text.index(end)
        open(target, "w").write(text[:a] + "\n" + md + text[z:])
    print(md)


if __name__ == "__main__":
    main()
