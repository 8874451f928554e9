#!/usr/bin/env python3
"""One Strata broker with durable acknowledgements, on the slow-fsync disk of
durable_compare.py, under its eight-producers-on-one-partition load
(`p1x8_100B_acksall_small`), optionally with a tracer attached to the broker: how the
"Eight producers on one partition" diagnosis in BENCHMARKS.md was made.

    compat-tests/.cache/venv/bin/python benches/durable_probe.py                    # figures only
    compat-tests/.cache/venv/bin/python benches/durable_probe.py strace -f -T -e trace=fdatasync,pwrite64
    compat-tests/.cache/venv/bin/python benches/durable_probe.py perf record -e sched:sched_switch -g -o sw.data

The tracer command gets `-p <broker pid>` appended; its output goes to BENCH_PROBE_TRACE
(default benches/.work/durable-probe.trace). Prints the rate, the group commit's counters and
the broker's Produce time histograms (total, local = the append, remote = the wait for the
fsync). Knobs: BENCH_DUR_WRITE_IOPS (2000 here; 0 for the unthrottled disk), STRATA_BIN,
BENCH_PROBE_SCENARIO (a scenario of durable_compare.py; default p1x8_100B_acksall_small).
With `perf` as the tracer the broker defaults to the profiling build, whose symbols and line
tables perf's call graphs need (`cargo build --profile profiling --bin strata`).
"""

import os
import subprocess
import sys
import time
import urllib.request

os.environ.setdefault("BENCH_DUR_WRITE_IOPS", "2000")
if sys.argv[1:2] == ["perf"]:
    os.environ.setdefault("STRATA_BIN", os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                     "..", "target", "profiling", "strata"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import compare as C  # noqa: E402
import durable_compare as D  # noqa: E402


def main():
    D.CGROUP = D.slow_disk_cgroup()
    extra = {"strata.log.durable.acks": "true",
             "strata.admin.listeners": f"http://127.0.0.1:{D.ADMIN_PORT}"}
    broker = C.Broker("strata", os.path.join(C.WORK, "durable-probe"), extra_props=extra,
                      cgroup=D.CGROUP)
    broker.start()
    try:
        name = os.environ.get("BENCH_PROBE_SCENARIO", "p1x8_100B_acksall_small")
        _, size, n, acks, partitions, more = next(s for s in D.ALL_SCENARIOS if s[0] == name)
        C.create_topic(broker, "probe", partitions)
        tracer = None
        if len(sys.argv) > 1:
            out = os.environ.get("BENCH_PROBE_TRACE", os.path.join(C.WORK, "durable-probe.trace"))
            tracer = subprocess.Popen(sys.argv[1:] + ["-p", str(broker.pid)],
                                      stdout=open(out, "w"), stderr=subprocess.STDOUT)
            time.sleep(1)
        before = D.group_commit_stats()
        r = D.produce(broker, "probe", size, n, acks, partitions, more, D.PRODUCERS.get(name, 1))
        after = D.group_commit_stats()
        if tracer:
            tracer.send_signal(2)
            tracer.wait()
        text = urllib.request.urlopen(f"http://127.0.0.1:{D.ADMIN_PORT}/metrics").read().decode()
        for line in text.splitlines():
            if 'request="Produce"' in line and "timems" in line and not line.startswith("#"):
                print(line)
        print(f"{r['records_per_s']:.0f} records/s",
              {k: after[k] - before.get(k, 0) for k in after})
    finally:
        broker.stop()


if __name__ == "__main__":
    main()
