#!/usr/bin/env python3
"""A model of a group commit round over several partition logs, without the broker: does one
cache flush for the whole round (each file's pages written with sync_file_range, then one
fdatasync) beat an fdatasync per file?

    python3 benches/flush_model.py [each|shared ...]   # default: each shared each shared

FILES files (BENCH_MODEL_FILES=4), each first written with 64 MiB of zeros and fsynced (as
`LogSegment::write_zeros_ahead` arranges), each with one writer thread that appends 10 KB with
pwrite and waits until a round covers it (one request in flight per partition, as a librdkafka
idempotent producer). One thread runs rounds back to back over the files with new bytes:
`each` fdatasyncs them together on kept threads, one per file (the broker's rounds); `shared` writes
their pages with sync_file_range(WAIT_BEFORE|WRITE|WAIT_AFTER), then fdatasyncs one of them,
whose cache flush covers them all. Each mode runs BENCH_MODEL_SECONDS=6 and prints appends/s,
rounds/s and appends per round. BENCH_DUR_WRITE_IOPS=N runs it in durable_compare.py's
slow-fsync cgroup (root, cgroup v1 blkio), write IOs limited to N a second.
"""

import concurrent.futures
import ctypes
import os
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
WORK = os.environ.get("BENCH_WORK", os.path.join(HERE, ".work"))
FILES = int(os.environ.get("BENCH_MODEL_FILES", "4"))
SECONDS = float(os.environ.get("BENCH_MODEL_SECONDS", "6"))
WRITE_IOPS = int(os.environ.get("BENCH_DUR_WRITE_IOPS", "0"))
APPEND_BYTES = 10_000
ZEROED_BYTES = 64 << 20
SYNC_FILE_RANGE = 1 | 2 | 4  # WAIT_BEFORE | WRITE | WAIT_AFTER

libc = ctypes.CDLL("libc.so.6", use_errno=True)
libc.sync_file_range.argtypes = [ctypes.c_int, ctypes.c_int64, ctypes.c_int64, ctypes.c_uint]


def sync_file_range(fd):
    if libc.sync_file_range(fd, 0, 0, SYNC_FILE_RANGE) != 0:
        raise OSError(ctypes.get_errno(), "sync_file_range")


def run(mode):
    os.makedirs(WORK, exist_ok=True)
    fds = []
    zeros = b"\0" * (1 << 20)
    for i in range(FILES):
        path = os.path.join(WORK, f"flush-model-{i}.log")
        if os.path.exists(path):
            os.unlink(path)
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        for j in range(ZEROED_BYTES >> 20):
            os.pwrite(fd, zeros, j << 20)
        os.fdatasync(fd)
        fds.append((fd, path))
    lock = threading.Condition()
    state = {"stop": False, "rounds": 0, "appends": 0,
             "end": [0] * FILES, "durable": [0] * FILES}

    # Kept threads, as the broker keeps its fsync helpers.
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=FILES)

    def fdatasync_all(dirty):
        futures = [pool.submit(os.fdatasync, fds[i][0]) for i in dirty[1:]]
        os.fdatasync(fds[dirty[0]][0])
        for f in futures:
            f.result()

    def syncer():
        while not state["stop"]:
            with lock:
                ends = list(state["end"])
            dirty = [i for i in range(FILES) if ends[i] > state["durable"][i]]
            if not dirty:
                time.sleep(0.0001)
                continue
            if mode == "shared" and len(dirty) > 1:
                for i in dirty[1:]:
                    sync_file_range(fds[i][0])
                os.fdatasync(fds[dirty[0]][0])
            else:
                fdatasync_all(dirty)
            with lock:
                for i in dirty:
                    state["durable"][i] = ends[i]
                state["rounds"] += 1
                lock.notify_all()

    def writer(i):
        data = b"x" * APPEND_BYTES
        fd = fds[i][0]
        while not state["stop"]:
            pos = state["end"][i]
            os.pwrite(fd, data, pos)
            with lock:
                state["end"][i] = pos + APPEND_BYTES
                state["appends"] += 1
                while state["durable"][i] < pos + APPEND_BYTES and not state["stop"]:
                    lock.wait(0.1)

    threads = [threading.Thread(target=syncer)]
    threads += [threading.Thread(target=writer, args=(i,)) for i in range(FILES)]
    for t in threads:
        t.start()
    time.sleep(SECONDS)
    state["stop"] = True
    with lock:
        lock.notify_all()
    for t in threads:
        t.join()
    pool.shutdown()
    for fd, path in fds:
        os.close(fd)
        os.unlink(path)
    print(f"{mode}: {FILES} files, {state['appends'] / SECONDS:,.0f} appends/s, "
          f"{state['rounds'] / SECONDS:,.0f} rounds/s, "
          f"{state['appends'] / max(1, state['rounds']):.2f} appends per round", flush=True)


def main():
    modes = sys.argv[1:] or ["each", "shared", "each", "shared"]
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
