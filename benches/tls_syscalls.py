#!/usr/bin/env python3
"""System calls and context switches of a Strata broker per GB produced over PLAINTEXT and over
SSL (issue 13's TLS produce cost), for one or more broker binaries side by side.

    STRATA_BINS=/path/a:/path/b compat-tests/.cache/venv/bin/python benches/tls_syscalls.py

For each round and each binary (the order alternates by round): a broker with a PLAINTEXT and
an SSL listener (secure_compare.py's certificates and settings), a warm-up over both, then per
listener one ProducerPerformance run of BENCH_SYS_N 1 KiB records (acks=1, compare.py's
producer settings) with `perf stat -p <broker>` counting the system calls' tracepoints and the
context switches (counting costs the broker little, unlike strace, whose stops change how much
each read finds waiting), printed per GB of payload with the broker's CPU per GB of the run.

Knobs: STRATA_BINS (colon-separated; default target/release/strata), BENCH_SYS_ROUNDS=2,
BENCH_SYS_LO_MTU (e.g. 1500: for the runs, loopback gets that MTU and segmentation offload off,
so that a request crosses it in MSS-sized segments as on a network without receive offload;
its MTU restored afterwards and offload turned back on; needs root, ethtool and tc), BENCH_SYS_LO_RATE (e.g. 1gbit, with
BENCH_SYS_LO_MTU: loopback is also paced to that rate by a token bucket, `tc qdisc ... tbf`, so
that a request's segments arrive spread over time as from a link of that speed),
BENCH_SYS_N=200000, BENCH_SYS_RATE=-1 (ProducerPerformance --throughput, records/s: a fixed
rate below every run's maximum makes the runs comparable when the machine is busy; -1 is as
fast as the client goes), BENCH_SYS_PORT=22600 (PLAINTEXT; SSL is +2), BENCH_WORK.
Prints a JSON document.
"""

import json
import os
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import compare as C  # noqa: E402
import secure_compare as S  # noqa: E402

BINS = os.environ.get("STRATA_BINS", C.STRATA_BIN).split(":")
ROUNDS = int(os.environ.get("BENCH_SYS_ROUNDS", "2"))
N = int(os.environ.get("BENCH_SYS_N", "200000"))
PORT = int(os.environ.get("BENCH_SYS_PORT", "22600"))
RATE = int(os.environ.get("BENCH_SYS_RATE", "-1"))
LO_MTU = os.environ.get("BENCH_SYS_LO_MTU")
LO_RATE = os.environ.get("BENCH_SYS_LO_RATE")
SIZE = 1024
PROTOCOLS = ("PLAINTEXT", "SSL")
SYSCALLS = ("recvfrom", "sendto", "writev", "write", "epoll_wait", "futex", "sched_yield",
            "setsockopt", "madvise", "brk", "mprotect", "munmap")
EVENTS = ["context-switches", "page-faults"] + [f"syscalls:sys_enter_{c}" for c in SYSCALLS]


def log(*a):
    print("[syscalls]", *a, file=sys.stderr, flush=True)


def perf_counts(path):
    """perf stat -x, output: {event: count}, event names without the tracepoint prefix."""
    counts = {}
    for line in open(path):
        parts = line.strip().split(",")
        if len(parts) > 2 and parts[0].isdigit():
            counts[parts[2].replace("syscalls:sys_enter_", "")] = int(parts[0])
    return counts


def one(binary, rnd, certs):
    C.STRATA_BIN = binary
    b = C.Broker("strata", os.path.join(C.WORK, f"syscalls-{rnd}"), port=PORT,
                 listeners=[("SSL", PORT + 2)], extra_props=S.broker_props("strata", certs))
    out = {"bin": binary, "round": rnd}
    try:
        b.start()
        cfgs = {}
        for proto in PROTOCOLS:
            cfgs[proto] = os.path.join(b.dir, f"client-{proto}.properties")
            with open(cfgs[proto], "w") as f:
                f.write(S.client_config(proto, certs))
            C.create_topic(b, f"warmup-{proto.lower()}", 1)
            C.producer_perf(S.via(b, proto), f"warmup-{proto.lower()}", N // 2, SIZE, "1",
                            config_file=cfgs[proto])
        order = PROTOCOLS if rnd % 2 == 0 else tuple(reversed(PROTOCOLS))
        for proto in order:
            t = f"sys-{proto.lower()}"
            C.create_topic(b, t, 1)
            stat = os.path.join(b.dir, f"perf-{proto}.txt")
            pf = subprocess.Popen(["perf", "stat", "-x,", "-o", stat, "-e", ",".join(EVENTS),
                                   "-p", str(b.pid)],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            time.sleep(0.5)
            r = C.producer_perf(S.via(b, proto), t, N, SIZE, "1", throughput=RATE,
                                config_file=cfgs[proto])
            pf.send_signal(signal.SIGINT)
            pf.wait(60)
            gb = N * SIZE / 1e9
            per_gb = {k: round(v / gb) for k, v in perf_counts(stat).items()}
            out[proto] = {"cpu_s_per_gb": r["broker_cpu_s_per_gb"], "mb_per_s": r["mb_per_s"],
                          "per_gb": per_gb}
            log(os.path.basename(binary), rnd, proto, per_gb,
                f"cpu {r['broker_cpu_s_per_gb']:.2f} s/GB, {r['mb_per_s']:.1f} MB/s")
    finally:
        b.stop()
    return out


def loopback(mtu, offload, rate=None):
    subprocess.run(["ip", "link", "set", "lo", "mtu", str(mtu)], check=True)
    subprocess.run(["ethtool", "-K", "lo", "tso", offload, "gso", offload], check=True)
    if rate:
        # A bucket of two segments: segments leave at the link's rate, not in bursts.
        subprocess.run(["tc", "qdisc", "replace", "dev", "lo", "root", "tbf", "rate", rate,
                        "burst", str(2 * int(mtu)), "latency", "50ms"], check=True)
    else:
        subprocess.run(["tc", "qdisc", "del", "dev", "lo", "root"], stderr=subprocess.DEVNULL)


def main():
    certs = S.make_certs(os.path.join(C.WORK, "secure-certs"))
    runs = []
    if LO_MTU:
        mtu_before = open("/sys/class/net/lo/mtu").read().strip()
        loopback(LO_MTU, "off", LO_RATE)
    try:
        for rnd in range(ROUNDS):
            order = BINS if rnd % 2 == 0 else list(reversed(BINS))
            for binary in order:
                runs.append(one(binary, rnd, certs))
    finally:
        if LO_MTU:
            loopback(mtu_before, "on")
    print(json.dumps({"n": N, "record_size": SIZE, "rate": RATE, "lo_mtu": LO_MTU,
                      "lo_rate": LO_RATE, "runs": runs}, indent=1))


if __name__ == "__main__":
    main()
