#!/usr/bin/env python3
"""Power-loss test of durable acknowledgements (issue 15).

    compat-tests/.cache/venv/bin/python compat-tests/powerloss/run.py

Strata's log dir is on volatile_fs.py (a FUSE file system that keeps unsynced file data in
memory only). A confluent-kafka producer (acks=all, idempotent) writes numbered records
while, mid-stream, the power is cut: the file system process is killed with SIGKILL (every
unsynced byte is gone), then Strata. Strata restarts on what reached the store and a consumer
reads the partition from the beginning.

Four cases, each must hold:
  durable     strata.log.durable.acks=true: every acknowledged record is read back, in order,
              once each.
  page-cache  the default (acknowledged once written): the same cut loses acknowledged
              records. This is Kafka's behaviour with flush.messages unset, and it shows the
              test can see a loss.
  durable-disk-cache, page-cache-disk-cache
              the same two on an ext4 file system on a loop device whose backing file is on
              volatile_fs: the loop device's cache flushes are that file's fsyncs, so the cut
              loses every write the "disk" did not flush, as a disk's volatile write cache
              does. Records go to 8 partitions, so the durable mode's rounds share one cache
              flush between logs (storage/shared_flush.rs); the durable case also checks, from
              /metrics before the cut, that they did.
What is modelled: file contents and sizes are lost unless fsynced; directory changes are
kept (see volatile_fs.py); on the disk-cache cases, whatever ext4 and its journal wrote and
flushed, and nothing else. Prints "N passed, M failed" last; exits non-zero on a failure.
"""

import json
import os
import re
import urllib.request
import signal
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
PYTHON = sys.executable
STRATA = os.environ.get("STRATA_BIN", os.path.join(ROOT, "target", "release", "strata"))
PORT = int(os.environ.get("POWERLOSS_PORT", "19480"))
TOPIC = "powerloss"
# Acknowledged records to wait for before the cut.
ACKED_BEFORE_CUT = int(os.environ.get("POWERLOSS_ACKED", "4000"))
CUT_AFTER_S = 60
CASE_TIMEOUT_S = 300
ADMIN_PORT = PORT + 1
# The disk-cache cases: partitions of the topic and size of the loop device's image.
DISK_PARTITIONS = 8
DISK_IMAGE_BYTES = 256 << 20


def log(*a):
    print("[powerloss]", *a, flush=True)


def wait_port(port, proc, seconds=30):
    import socket
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError("strata exited at start-up")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError("strata did not listen")


def start_strata(log_dir, out_path, durable, admin=False):
    admin_listeners = f"http://127.0.0.1:{ADMIN_PORT}" if admin else ""
    cmd = [STRATA,
           "--override", f"listeners=PLAINTEXT://127.0.0.1:{PORT}",
           "--override", f"log.dirs={log_dir}",
           "--override", f"strata.admin.listeners={admin_listeners}",
           "--override", "log.segment.bytes=262144",
           "--override", "log.index.size.max.bytes=65536",
           "--override", f"strata.log.durable.acks={'true' if durable else 'false'}"]
    out = open(out_path, "a")
    p = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    wait_port(PORT, p)
    return p


def mount(store, mountpoint, out_path):
    out = open(out_path, "a")
    p = subprocess.Popen([PYTHON, os.path.join(HERE, "volatile_fs.py"), store, mountpoint],
                         stdout=out, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 20
    while not os.path.ismount(mountpoint):
        if p.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(f"cannot mount volatile_fs (see {out_path}; needs /dev/fuse, "
                               "libfuse2 and root)")
        time.sleep(0.05)
    return p


def create_topic(partitions):
    from confluent_kafka.admin import AdminClient, NewTopic
    a = AdminClient({"bootstrap.servers": f"127.0.0.1:{PORT}"})
    a.create_topics([NewTopic(TOPIC, partitions, 1)])[TOPIC].result(30)


def shared_flushes():
    """The durable mode's count of logs made durable by another log's cache flush."""
    with urllib.request.urlopen(f"http://127.0.0.1:{ADMIN_PORT}/metrics", timeout=5) as r:
        text = r.read().decode()
    m = re.search(r"^strata_group_commit_shared_flushes_total (\S+)$", text, re.M)
    return float(m.group(1)) if m else 0.0


def loop_mount(image, mountpoint):
    """Mounts the ext4 file system in `image` through a new loop device; returns the device."""
    dev = subprocess.run(["losetup", "--find", "--show", image], check=True,
                         capture_output=True, text=True).stdout.strip()
    os.makedirs(mountpoint, exist_ok=True)
    subprocess.run(["mount", "-t", "ext4", dev, mountpoint], check=True)
    return dev


def loop_unmount(dev, mountpoint):
    subprocess.run(["umount", "-l", mountpoint], check=False, capture_output=True)
    subprocess.run(["losetup", "-d", dev], check=False, capture_output=True)


def produce_until_cut(cut, partitions):
    """Produces numbered records until `cut()` has run; returns the acknowledged numbers."""
    from confluent_kafka import Producer
    # Small batches: many acknowledgements before the cut, and several requests in flight
    # when it comes.
    p = Producer({"bootstrap.servers": f"127.0.0.1:{PORT}", "acks": "all",
                  "enable.idempotence": True, "linger.ms": 1, "batch.num.messages": 100,
                  "message.timeout.ms": 4000, "log_level": 0})
    acked = []
    lock = threading.Lock()

    def on_delivery(err, msg):
        if err is None:
            with lock:
                acked.append(int(msg.value()))

    cut_done = threading.Event()

    def cutter():
        # The cut comes after ACKED_BEFORE_CUT acknowledgements, or after CUT_AFTER_S seconds
        # whatever was acknowledged: a broker that stops acknowledging fails the checks below
        # instead of hanging the run.
        deadline = time.monotonic() + CUT_AFTER_S
        while time.monotonic() < deadline:
            with lock:
                n = len(acked)
            if n >= ACKED_BEFORE_CUT:
                break
            time.sleep(0.01)
        cut()
        cut_done.set()

    t = threading.Thread(target=cutter, daemon=True)
    t.start()
    i = 0
    while not cut_done.is_set():
        try:
            p.produce(TOPIC, str(i).encode(), partition=i % partitions,
                      on_delivery=on_delivery)
            i += 1
        except BufferError:
            p.poll(0.01)
        p.poll(0)
    # What was in flight fails (the broker is gone) or was answered before the cut.
    p.flush(10)
    with lock:
        return list(acked), i


def read_back(partitions):
    """Every record of the topic, as one list per partition, and the sum of high watermarks."""
    from confluent_kafka import Consumer, TopicPartition
    c = Consumer({"bootstrap.servers": f"127.0.0.1:{PORT}", "group.id": "powerloss-check",
                  "enable.auto.commit": False, "log_level": 0})
    c.assign([TopicPartition(TOPIC, p, 0) for p in range(partitions)])
    high = sum(c.get_watermark_offsets(TopicPartition(TOPIC, p), timeout=30)[1]
               for p in range(partitions))
    values = [[] for _ in range(partitions)]
    count = 0
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        msgs = c.consume(1000, 1.0)
        for m in msgs:
            if m.error() is None:
                values[m.partition()].append(int(m.value()))
                count += 1
        if count and count >= high:
            break
        if not msgs and high == 0:
            break
    c.close()
    return values, high


def case(name, durable, disk_cache):
    work = tempfile.mkdtemp(prefix=f"strata-powerloss-{name}.")
    store, mnt = os.path.join(work, "store"), os.path.join(work, "mnt")
    os.makedirs(store)
    os.makedirs(mnt)
    out = os.path.join(work, "broker.log")
    partitions = DISK_PARTITIONS if disk_cache else 1
    fs = mount(store, mnt, os.path.join(work, "fs.log"))
    loop = None
    shared = None
    if disk_cache:
        # The "disk": an ext4 image on volatile_fs, flushed only by the loop device's flushes.
        image = os.path.join(mnt, "disk.img")
        with open(image, "wb") as f:
            f.truncate(DISK_IMAGE_BYTES)
            os.fsync(f.fileno())
        subprocess.run(["mkfs.ext4", "-q", "-F", image], check=True, capture_output=True)
        with open(image, "rb+") as f:
            os.fsync(f.fileno())
        disk = os.path.join(work, "disk")
        loop = loop_mount(image, disk)
        log_dir = os.path.join(disk, "data")
    else:
        log_dir = os.path.join(mnt, "data")
    broker = start_strata(log_dir, out, durable, admin=disk_cache)
    try:
        create_topic(partitions)

        def cut():
            nonlocal shared
            if disk_cache and durable:
                shared = shared_flushes()
            fs.send_signal(signal.SIGKILL)
            fs.wait()
            broker.send_signal(signal.SIGKILL)
            broker.wait()

        acked, sent = produce_until_cut(cut, partitions)
    finally:
        for p in (fs, broker):
            if p.poll() is None:
                p.kill()
                p.wait()
        if loop:
            loop_unmount(loop, disk)
        subprocess.run(["umount", "-l", mnt], check=False)
    log(f"{name}: {sent} sent, {len(acked)} acknowledged before the power cut"
        + (f", {shared:.0f} logs made durable by a shared cache flush" if shared is not None
           else ""))
    if disk_cache:
        # What reached the store is the disk after the power cut; mounting replays the journal.
        after = os.path.join(work, "disk-after")
        loop = loop_mount(os.path.join(store, "disk.img"), after)
        log_dir = os.path.join(after, "data")
    else:
        log_dir = os.path.join(store, "data")
    broker = start_strata(log_dir, out, durable)
    try:
        values, high = read_back(partitions)
    finally:
        broker.send_signal(signal.SIGTERM)
        broker.wait(30)
        if disk_cache:
            loop_unmount(loop, after)
    present = {v for part in values for v in part}
    total = sum(len(part) for part in values)
    lost = [v for v in acked if v not in present]
    duplicated = total - len(present)
    in_order = all(part == sorted(part) for part in values)
    log(f"{name}: {total} records after restart (high watermark {high}), "
        f"{len(lost)} acknowledged lost, {duplicated} duplicated, in order: {in_order}")
    return lost, duplicated, in_order, work, len(acked), shared


def run_case(name):
    """One case in its own process, so each starts its clients afresh. (Run in the first
    case's process, the second case's warm admin client reached the new broker within its
    first milliseconds, when Strata still answered Metadata without listing itself; librdkafka
    then waited 30 s. Strata now accepts client connections only once it is ready.)"""
    try:
        p = subprocess.run([PYTHON, os.path.abspath(__file__), "--case", name],
                           capture_output=True, text=True, timeout=CASE_TIMEOUT_S)
    except subprocess.TimeoutExpired as e:
        print(e.stdout or "", end="")
        return None
    print("".join(l + "\n" for l in p.stdout.splitlines() if not l.startswith("RESULT ")), end="")
    for line in p.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[len("RESULT "):])
    print(p.stderr[-3000:], end="")
    return None


CASES = {
    # name: (durable, disk_cache)
    "durable": (True, False),
    "page-cache": (False, False),
    "durable-disk-cache": (True, True),
    "page-cache-disk-cache": (False, True),
}


def judge(name, r):
    """True when case `name` holds, with its log line."""
    durable, disk_cache = CASES[name]
    if r is None:
        log(f"FAIL {name}: the case did not finish (see above)")
        return False
    if not durable:
        if r["lost"]:
            log(f"PASS {name}: the cut lost {len(r['lost'])} acknowledged records, as expected")
            return True
        log(f"FAIL {name}: nothing acknowledged was lost, so the cut is not seen "
            f"(files in {r['work']})")
        return False
    if r["acked"] == 0:
        log(f"FAIL {name}: nothing was acknowledged before the cut (files in {r['work']})")
        return False
    if r["lost"] or r["duplicated"] or not r["in_order"]:
        log(f"FAIL {name}: lost {r['lost'][:10]}..., duplicated {r['duplicated']}, "
            f"in order {r['in_order']} (files in {r['work']})")
        return False
    if disk_cache and not r["shared"]:
        log(f"FAIL {name}: no round shared a cache flush, so that path was not tested")
        return False
    log(f"PASS {name}: no acknowledged record lost")
    return True


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--case":
        name = sys.argv[2]
        lost, duplicated, in_order, work, acked, shared = case(name, *CASES[name])
        print("RESULT " + json.dumps({"lost": lost, "duplicated": duplicated,
                                      "in_order": in_order, "work": work, "acked": acked,
                                      "shared": shared}))
        return
    wanted = sys.argv[1:] or list(CASES)
    results = [judge(name, run_case(name)) for name in wanted]
    passed = sum(results)
    print(f"powerloss: {passed} passed, {len(results) - passed} failed")
    sys.exit(0 if all(results) else 1)


if __name__ == "__main__":
    main()
