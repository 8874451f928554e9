#!/usr/bin/env python3
"""A model of the durable mode's group commit without the broker: does an fdatasync cost more
on a file that grows than on one whose blocks were written beforehand?

    python3 benches/fsync_model.py [grow|zero ...]   # default: grow zero grow zero

WRITERS threads (BENCH_MODEL_WRITERS=8) each append 10 KB with pwrite under one lock, then
wait until a sync thread's fdatasync covers their bytes; the sync thread runs fdatasync rounds
back to back. `grow` starts from an empty file; `zero` first writes 256 MiB of zeros and
fsyncs them, so appends overwrite allocated blocks (what `LogSegment::write_zeros_ahead`
arranges). Each mode runs BENCH_MODEL_SECONDS=6 and prints appends/s, fdatasync rounds/s and
appends per round. With BENCH_DUR_WRITE_IOPS=N (root, cgroup v1 blkio) it runs in the
slow-fsync cgroup of durable_compare.py, write IOs limited to N a second.
"""

import os
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
WORK = os.environ.get("BENCH_WORK", os.path.join(HERE, ".work"))
WRITERS = int(os.environ.get("BENCH_MODEL_WRITERS", "8"))
SECONDS = float(os.environ.get("BENCH_MODEL_SECONDS", "6"))
WRITE_IOPS = int(os.environ.get("BENCH_DUR_WRITE_IOPS", "0"))
APPEND_BYTES = 10_000
ZEROED_BYTES = 256 << 20


def run(mode):
    os.makedirs(WORK, exist_ok=True)
    path = os.path.join(WORK, "fsync-model.log")
    if os.path.exists(path):
        os.unlink(path)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    if mode == "zero":
        zeros = b"\0" * (1 << 20)
        for i in range(ZEROED_BYTES >> 20):
            os.pwrite(fd, zeros, i << 20)
        os.fdatasync(fd)
    append_lock = threading.Lock()
    synced = threading.Condition()
    state = {"end": 0, "durable": 0, "stop": False, "rounds": 0, "appends": 0}

    def syncer():
        while not state["stop"]:
            with append_lock:
                end = state["end"]
            if end == state["durable"]:
                time.sleep(0.0001)
                continue
            os.fdatasync(fd)
            with synced:
                state["durable"] = end
                state["rounds"] += 1
                synced.notify_all()

    def writer():
        data = b"x" * APPEND_BYTES
        while not state["stop"]:
            with append_lock:
                pos = state["end"]
                os.pwrite(fd, data, pos)
                state["end"] = pos + APPEND_BYTES
                state["appends"] += 1
            with synced:
                while state["durable"] < pos + APPEND_BYTES and not state["stop"]:
                    synced.wait(0.1)

    threads = [threading.Thread(target=syncer)]
    threads += [threading.Thread(target=writer) for _ in range(WRITERS)]
    for t in threads:
        t.start()
    time.sleep(SECONDS)
    state["stop"] = True
    with synced:
        synced.notify_all()
    for t in threads:
        t.join()
    os.close(fd)
    os.unlink(path)
    overran = mode == "zero" and state["end"] > ZEROED_BYTES
    print(f"{mode}: {WRITERS} writers, {state['appends'] / SECONDS:,.0f} appends/s, "
          f"{state['rounds'] / SECONDS:,.0f} fdatasync rounds/s, "
          f"{state['appends'] / max(1, state['rounds']):.2f} appends per round"
          + (" (ran past the zeroed 256 MiB)" if overran else ""), flush=True)


def main():
    modes = sys.argv[1:] or ["grow", "zero", "grow", "zero"]
    if WRITE_IOPS and os.environ.get("BENCH_MODEL_IN_CGROUP") != "1":
        sys.path.insert(0, HERE)
        import durable_compare as D  # noqa: E402  (sets up the throttled cgroup)
        group = D.slow_disk_cgroup()
        env = dict(os.environ, BENCH_MODEL_IN_CGROUP="1")
        cmd = f"echo $$ > {group}/cgroup.procs && exec {sys.executable} {__file__} " + " ".join(modes)
        sys.exit(subprocess.call(["sh", "-c", cmd], env=env))
    for mode in modes:
        run(mode)


if __name__ == "__main__":
    main()
