#!/usr/bin/env python3
"""Share-group consume throughput (issue 17, KIP-932): Strata next to Apache Kafka 4.3.1.

    benches/share_consume.sh        # or: compat-tests/.cache/venv/bin/python benches/share_consume.py

Uses benches/compare.py's brokers, tools and /proc accounting, with Kafka 4.3.1's jars
(compat-tests/.cache/kafka-libs-latest, whose fresh format has share.version=1) for the Kafka
broker and for every client tool. BENCH_SHARE_ROUNDS rounds; in each, Kafka and Strata in
alternating order, each on a fresh data dir:
  - a 1-partition topic preloaded with BENCH_SHARE_N records of 100 B (ProducerPerformance,
    acks=1, linger.ms=5, batch.size=16384: the Java producer's batches of ~150 records);
  - for each consumer count in BENCH_SHARE_CONSUMERS (1,8): a new share group whose
    `share.auto.offset.reset=earliest` is set with kafka-configs (`kafka.admin.ConfigCommand
    --entity-type groups`, waited for until `--describe` shows it), then Kafka 4.3.1's
    `ShareConsumerPerformance` (kafka-share-consumer-perf-test) with `--threads <count>`
    (that many KafkaShareConsumers in one JVM, one group, implicit acknowledgement) reading
    BENCH_SHARE_N records. Every group starts from offset 0, so each count reads the whole
    topic once; the two groups' state does not interact.
Before the measured consumes a warm-up consumer of its own group reads BENCH_SHARE_WARMUP
records (not measured; a fresh Kafka's JIT). Each measured consume first waits (up to
BENCH_SHARE_QUIET_WAIT_S) while a compiler (rustc, cc1, ld, javac) runs or the machine is busier
than BENCH_SHARE_IDLE_MAX_CORES (0.3) cores.
A measurement during which a compiler started, or other processes took more than
BENCH_SHARE_OTHER_CPU_MAX CPU seconds, is marked disturbed and made again with a new group (up
to BENCH_SHARE_ATTEMPTS times; the undisturbed one is kept, else the one with the least other
CPU, and the table counts the disturbed ones kept; every attempt is in the JSON).
Reported per run: the tool's records/s and MB/s (its clock starts before the members
subscribe, so the join is included; MB = 2^20 B as the tool prints), the records it read,
the tool's wall time (JVM start included), broker CPU seconds (/proc/<pid>/stat utime+stime
before/after), the client's CPU seconds (getrusage of children) and the CPU seconds of
everything else on the machine meanwhile (busy time from /proc/stat minus the two).

Knobs: BENCH_SHARE_ROUNDS=3, BENCH_SHARE_N=2000000, BENCH_SHARE_CONSUMERS=1,8,
BENCH_SHARE_BROKERS=kafka,strata, BENCH_SHARE_WARMUP=200000, BENCH_SHARE_QUIET_WAIT_S=1200,
BENCH_SHARE_ATTEMPTS=3, BENCH_SHARE_OTHER_CPU_MAX=2.0,
BENCH_SHARE_TIMEOUT_MS=30000 (the tool's --timeout: give up after that long without a record),
BENCH_SHARE_KAFKA_PORT=9592 (and +1 for its controller), BENCH_SHARE_STRATA_PORT=9492, BENCH_SHARE_LIBS (Kafka jars), STRATA_BIN, BENCH_WORK,
BENCH_OUT. Writes benches/results/share-consume-<time>.json and .md; prints the Markdown.
"""

import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import compare as C  # noqa: E402

C.LIBS = os.environ.get("BENCH_SHARE_LIBS", os.path.join(
    C.ROOT, "compat-tests", ".cache", "kafka-libs-latest"))
ROUNDS = int(os.environ.get("BENCH_SHARE_ROUNDS", "3"))
N = int(os.environ.get("BENCH_SHARE_N", "2000000"))
SIZE = 100
CONSUMERS = [int(x) for x in os.environ.get("BENCH_SHARE_CONSUMERS", "1,8").split(",")]
BROKERS = os.environ.get("BENCH_SHARE_BROKERS", "kafka,strata").split(",")
TIMEOUT_MS = int(os.environ.get("BENCH_SHARE_TIMEOUT_MS", "30000"))
WARMUP = int(os.environ.get("BENCH_SHARE_WARMUP", "200000"))
QUIET_WAIT_S = int(os.environ.get("BENCH_SHARE_QUIET_WAIT_S", "1200"))
ATTEMPTS = int(os.environ.get("BENCH_SHARE_ATTEMPTS", "3"))
OTHER_CPU_MAX = float(os.environ.get("BENCH_SHARE_OTHER_CPU_MAX", "2.0"))
BUSY_NAMES = ("rustc", "cc1", "cc1plus", "ld", "ld.lld", "rust-lld", "mold", "javac")
IDLE_MAX_CORES = float(os.environ.get("BENCH_SHARE_IDLE_MAX_CORES", "0.3"))
PORTS = {"kafka": int(os.environ.get("BENCH_SHARE_KAFKA_PORT", "9592")),
         "strata": int(os.environ.get("BENCH_SHARE_STRATA_PORT", "9492"))}


def log(*a):
    print("[share]", *a, file=sys.stderr, flush=True)


def busy_processes():
    """Names of compilers and the like running now (another job on this shared machine)."""
    found = []
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                with open(f"/proc/{pid}/comm") as f:
                    name = f.read().strip()
            except OSError:
                continue
            if name in BUSY_NAMES:
                found.append(name)
    return sorted(found)


def wait_quiet():
    """Waits (up to BENCH_SHARE_QUIET_WAIT_S) while a compiler runs or the machine is busier
    than BENCH_SHARE_IDLE_MAX_CORES over 3 s (our idle broker included); returns what still
    runs."""
    deadline, said = time.monotonic() + QUIET_WAIT_S, False
    while time.monotonic() < deadline:
        busy = busy_processes()
        if not busy:
            b0 = C.machine_busy_s()
            time.sleep(3)
            cores = (C.machine_busy_s() - b0) / 3
            if cores <= IDLE_MAX_CORES:
                return []
            busy = [f"{cores:.2f} cores busy"]
        if not said:
            log(f"  waiting for a quiet machine ({', '.join(busy)})")
            said = True
        time.sleep(5)
    return busy_processes()


def set_group_config(broker, group):
    """kafka-configs --alter, then --describe until the broker shows it (Kafka applies a group
    config from its metadata log a moment after answering the alter)."""
    base = ["--bootstrap-server", broker.addr, "--entity-type", "groups", "--entity-name", group]
    C.java_tool("kafka.admin.ConfigCommand",
                base + ["--alter", "--add-config", "share.auto.offset.reset=earliest"])
    for _ in range(40):
        out, _, _ = C.java_tool("kafka.admin.ConfigCommand", base + ["--describe"])
        if "share.auto.offset.reset=earliest" in out:
            return
        time.sleep(0.5)
    raise RuntimeError(f"group config of {group} not shown: {out[-500:]}")


def share_consume(broker, topic, group, threads):
    args = ["--bootstrap-server", broker.addr, "--topic", topic, "--group", group,
            "--num-records", str(N), "--threads", str(threads), "--timeout", str(TIMEOUT_MS),
            "--show-consumer-stats"]

    def run():
        ru0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        out, err, wall = C.java_tool("org.apache.kafka.tools.ShareConsumerPerformance", args,
                                     timeout=600)
        ru1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        lines = [ln for ln in out.strip().splitlines() if ln and ln[0].isdigit()]
        if not lines:
            raise RuntimeError("cannot parse ShareConsumerPerformance output: "
                               + out[-1000:] + err[-1000:])
        # start, end, MB, MB/s, nMsg/s, nMsg, fetch.time.ms
        v = [x.strip() for x in lines[-1].split(",")]
        per_consumer = [int(ln.split(",")[-2]) for ln in out.splitlines()
                        if ln.startswith("Share consumer ")]
        r = {"records": int(v[5]), "records_per_s": float(v[4]),
             "mb_per_s": float(v[3]), "tool_ms": int(v[6]), "tool_wall_s": wall,
             "client_cpu_s": (ru1.ru_utime + ru1.ru_stime) - (ru0.ru_utime + ru0.ru_stime),
             "per_consumer": per_consumer, "timed_out": "WARNING: Exiting before" in out}
        if r["timed_out"] or r["records"] < N:
            log("  tool output:", out[-1500:], err[-1500:])
        return r

    r = {"busy_processes_before": wait_quiet(), "load_before": os.getloadavg()[0]}
    r.update(C.measured(broker, run))
    r["busy_processes_after"] = busy_processes()
    # CPU of everything else on the machine meanwhile (another job, the kernel's threads)
    r["other_cpu_s"] = (r["machine_busy_cores"] * r["wall_s"] - r["broker_cpu_s"]
                        - r["client_cpu_s"])
    r["broker_cpu_s_per_gb"] = r["broker_cpu_s"] / (r["records"] * SIZE / 1e9 or 1)
    return r


def one_run(kind, rnd):
    b = C.Broker(kind, os.path.join(C.WORK, f"share-{kind}"), port=PORTS[kind])
    res = {"broker": kind, "round": rnd, "load_before": os.getloadavg(), "consume": {}}
    log(f"round {rnd}: {kind} (load {res['load_before'][0]:.2f})")
    wait_quiet()
    b.start()
    try:
        topic = "share-perf"
        C.create_topic(b, topic, 1)
        p = C.producer_perf(b, topic, N, SIZE, "1")
        res["preload"] = p
        log(f"  preload {N:,} x {SIZE} B: {p['records_per_s']:,.0f} rec/s")
        if WARMUP:
            # Not measured: the share-fetch path of a fresh broker (Kafka's JIT) warmed by
            # one consumer of its own group reading WARMUP records of the same topic.
            set_group_config(b, "share-warmup")
            C.java_tool("org.apache.kafka.tools.ShareConsumerPerformance", [
                "--bootstrap-server", b.addr, "--topic", topic, "--group", "share-warmup",
                "--num-records", str(WARMUP), "--timeout", str(TIMEOUT_MS)])
        for threads in CONSUMERS:
            for attempt in range(ATTEMPTS):
                # A new group per attempt: each reads the topic from offset 0.
                group = f"share-perf-{threads}-{attempt}"
                set_group_config(b, group)
                try:
                    r = share_consume(b, topic, group, threads)
                except Exception as e:  # noqa: BLE001 - recorded, the other counts still run
                    log(f"  {threads} consumer(s) FAILED: {e}")
                    res["consume"][str(threads)] = {"error": str(e)[:2000]}
                    break
                r["attempt"] = attempt
                r["disturbed"] = bool(r["busy_processes_after"]) or r["other_cpu_s"] > OTHER_CPU_MAX
                tried = res.setdefault("attempts", {}).setdefault(str(threads), [])
                tried.append(r)
                # kept: the undisturbed one, else the one with the least other CPU
                res["consume"][str(threads)] = min(
                    tried, key=lambda x: (x["disturbed"], x["other_cpu_s"]))
                log(f"  {threads} consumer(s): {r['records']:,} records, "
                    f"{r['records_per_s']:,.0f} rec/s, {r['mb_per_s']:.1f} MB/s, "
                    f"broker {r['broker_cpu_s']:.1f} CPU-s, client {r['client_cpu_s']:.1f} CPU-s, "
                    f"busy {r['machine_busy_cores']:.2f} cores, other {r['other_cpu_s']:.1f} CPU-s, "
                    f"per consumer {r['per_consumer']}"
                    + (" TIMED OUT" if r["timed_out"] else "")
                    + (f" DISTURBED ({', '.join(r['busy_processes_after'])})"
                       if r["disturbed"] else ""))
                if not r["disturbed"]:
                    break
        res["rss_mb"] = C.proc_status_kb(b.pid, "VmHWM") / 1024
    finally:
        b.stop()
        shutil.rmtree(os.path.join(b.dir, "data"), ignore_errors=True)
    return res


def median(values):
    return statistics.median(values) if values else float("nan")


def markdown(runs, meta):
    lines = [f"Generated by `benches/share_consume.py` ({meta}). Cells: median [min–max] over "
             "the runs.", "",
             "| Consumers | Broker | records/s | MB/s | broker CPU-s | broker CPU-s/GB | "
             "client CPU-s | other CPU-s | runs ok (disturbed) |",
             "|---:|---|---:|---:|---:|---:|---:|---:|---:|"]
    for threads in CONSUMERS:
        for kind in BROKERS:
            rs = [r["consume"].get(str(threads), {}) for r in runs if r["broker"] == kind]
            ok = [r for r in rs if "records_per_s" in r and not r["timed_out"]
                  and r["records"] >= N]

            def cell(key, fmt):
                v = [r[key] for r in ok]
                return (f"{median(v):{fmt}} [{min(v):{fmt}}–{max(v):{fmt}}]" if v else "–")
            lines.append(f"| {threads} | {kind} | {cell('records_per_s', ',.0f')} | "
                         f"{cell('mb_per_s', '.1f')} | {cell('broker_cpu_s', '.1f')} | "
                         f"{cell('broker_cpu_s_per_gb', '.1f')} | {cell('client_cpu_s', '.1f')} | "
                         f"{cell('other_cpu_s', '.1f')} | {len(ok)}/{len(rs)} "
                         f"({sum(1 for r in ok if r.get('disturbed'))}) |")
    lines.append("")
    for threads in CONSUMERS:
        def med(kind):
            return median([r["consume"][str(threads)]["records_per_s"] for r in runs
                           if r["broker"] == kind and "records_per_s"
                           in r["consume"].get(str(threads), {})])
        if "kafka" in BROKERS and "strata" in BROKERS:
            lines.append(f"- {threads} consumer(s): Strata/Kafka records/s "
                         f"{med('strata') / med('kafka'):.2f}x")
    return "\n".join(lines) + "\n"


def main():
    os.makedirs(C.WORK, exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    out = os.environ.get("BENCH_OUT",
                         os.path.join(C.HERE, "results", f"share-consume-{stamp}.json"))
    os.makedirs(os.path.dirname(out), exist_ok=True)
    commit = subprocess.run(["git", "-C", C.ROOT, "rev-parse", "--short", "HEAD"],
                            capture_output=True, text=True).stdout.strip()
    built = time.strftime("%Y-%m-%d %H:%M", time.gmtime(os.path.getmtime(C.STRATA_BIN)))
    kafka = subprocess.run(f"ls {C.LIBS} | sed -n 's/^kafka_2.13-\\(.*\\)\\.jar$/\\1/p'",
                           shell=True, capture_output=True, text=True).stdout.strip()
    runs = []
    for rnd in range(ROUNDS):
        for kind in BROKERS if rnd % 2 == 0 else list(reversed(BROKERS)):
            runs.append(one_run(kind, rnd))
            with open(out, "w") as f:
                json.dump({"runs": runs}, f, indent=1)
    meta = (f"{ROUNDS} rounds, brokers in alternating order, fresh data dir each; "
            f"{N:,} × {SIZE} B records on 1 partition; Kafka {kafka}; Strata binary built "
            f"{built} UTC, main at {commit} at the start; "
            f"`{os.path.basename(out)}`")
    with open(out, "w") as f:
        json.dump({"meta": meta, "runs": runs}, f, indent=1)
    md = markdown(runs, meta)
    with open(out[:-5] + ".md", "w") as f:
        f.write(md)
    print(md)


if __name__ == "__main__":
    main()
