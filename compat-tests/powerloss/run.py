#!/usr/bin/env python3
"""Power-loss test of durable acknowledgements (issue 15).

    compat-tests/.cache/venv/bin/python compat-tests/powerloss/run.py

Strata's log dir is on volatile_fs.py (a FUSE file system that keeps unsynced file data in
memory only). A confluent-kafka producer (acks=all, idempotent) writes numbered records
while, mid-stream, the power is cut: the file system process is killed with SIGKILL (every
unsynced byte is gone), then Strata. Strata restarts on what reached the store and a consumer
reads the partition from the beginning.

Two cases, each must hold:
  durable     strata.log.durable.acks=true: every acknowledged record is read back, in order,
              once each.
  page-cache  the default (acknowledged once written): the same cut loses acknowledged
              records. This is Kafka's behaviour with flush.messages unset, and it shows the
              test can see a loss.
What is modelled: file contents and sizes are lost unless fsynced; directory changes are
kept (see volatile_fs.py). Prints "N passed, M failed" last; exits non-zero on a failure.
"""

import json
import os
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


def start_strata(log_dir, out_path, durable):
    cmd = [STRATA,
           "--override", f"listeners=PLAINTEXT://127.0.0.1:{PORT}",
           "--override", f"log.dirs={log_dir}",
           "--override", "strata.admin.listeners=",
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


def create_topic():
    from confluent_kafka.admin import AdminClient, NewTopic
    a = AdminClient({"bootstrap.servers": f"127.0.0.1:{PORT}"})
    a.create_topics([NewTopic(TOPIC, 1, 1)])[TOPIC].result(30)


def produce_until_cut(cut):
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
            p.produce(TOPIC, str(i).encode(), partition=0, on_delivery=on_delivery)
            i += 1
        except BufferError:
            p.poll(0.01)
        p.poll(0)
    # What was in flight fails (the broker is gone) or was answered before the cut.
    p.flush(10)
    with lock:
        return list(acked), i


def read_back():
    from confluent_kafka import Consumer, TopicPartition
    c = Consumer({"bootstrap.servers": f"127.0.0.1:{PORT}", "group.id": "powerloss-check",
                  "enable.auto.commit": False, "log_level": 0})
    c.assign([TopicPartition(TOPIC, 0, 0)])
    _, high = c.get_watermark_offsets(TopicPartition(TOPIC, 0), timeout=30)
    values = []
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        msgs = c.consume(1000, 1.0)
        for m in msgs:
            if m.error() is None:
                values.append(int(m.value()))
        if values and len(values) >= high:
            break
        if not msgs and high == 0:
            break
    c.close()
    return values, high


def case(name, durable):
    work = tempfile.mkdtemp(prefix=f"strata-powerloss-{name}.")
    store, mnt = os.path.join(work, "store"), os.path.join(work, "mnt")
    os.makedirs(store)
    os.makedirs(mnt)
    out = os.path.join(work, "broker.log")
    fs = mount(store, mnt, os.path.join(work, "fs.log"))
    broker = start_strata(os.path.join(mnt, "data"), out, durable)
    try:
        create_topic()

        def cut():
            fs.send_signal(signal.SIGKILL)
            fs.wait()
            broker.send_signal(signal.SIGKILL)
            broker.wait()

        acked, sent = produce_until_cut(cut)
    finally:
        for p in (fs, broker):
            if p.poll() is None:
                p.kill()
                p.wait()
        subprocess.run(["umount", "-l", mnt], check=False)
    log(f"{name}: {sent} sent, {len(acked)} acknowledged before the power cut")
    broker = start_strata(os.path.join(store, "data"), out, durable)
    try:
        values, high = read_back()
    finally:
        broker.send_signal(signal.SIGTERM)
        broker.wait(30)
    present = set(values)
    lost = [v for v in acked if v not in present]
    duplicated = len(values) - len(present)
    in_order = values == sorted(values)
    log(f"{name}: {len(values)} records after restart (high watermark {high}), "
        f"{len(lost)} acknowledged lost, {duplicated} duplicated, in order: {in_order}")
    return lost, duplicated, in_order, work, len(acked)


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


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--case":
        name = sys.argv[2]
        lost, duplicated, in_order, work, acked = case(name, name == "durable")
        print("RESULT " + json.dumps({"lost": lost, "duplicated": duplicated,
                                      "in_order": in_order, "work": work, "acked": acked}))
        return
    passed = failed = 0
    r = run_case("durable")
    if r is None:
        failed += 1
        log("FAIL durable: the case did not finish (see above)")
    elif r["acked"] == 0:
        failed += 1
        log(f"FAIL durable: nothing was acknowledged before the cut (files in {r['work']})")
    elif not r["lost"] and r["duplicated"] == 0 and r["in_order"]:
        passed += 1
        log("PASS durable: no acknowledged record lost")
    else:
        failed += 1
        log(f"FAIL durable: lost {r['lost'][:10]}..., duplicated {r['duplicated']}, "
            f"in order {r['in_order']} (files in {r['work']})")
    r = run_case("page-cache")
    if r is None:
        failed += 1
        log("FAIL page-cache: the case did not finish (see above)")
    elif r["lost"]:
        passed += 1
        log(f"PASS page-cache: the cut lost {len(r['lost'])} acknowledged records, as expected")
    else:
        failed += 1
        log(f"FAIL page-cache: nothing acknowledged was lost, so the cut is not seen "
            f"(files in {r['work']})")
    print(f"powerloss: {passed} passed, {failed} failed")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
