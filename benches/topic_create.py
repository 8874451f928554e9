#!/usr/bin/env python3
"""Topic creation time, Strata next to Kafka (issue 15).

    compat-tests/.cache/venv/bin/python benches/topic_create.py [kafka,strata]

For each broker (compare.py's Broker, fresh data dir), BENCH_TC_ROUNDS times: create topics of
100, 1,000 and 10,000 partitions (replication factor 1; at most 5,000 per CreateTopics, the rest
by CreatePartitions, as compare.py does for Kafka's per-operation record limit) and report three
times: until the admin client's answer, until Metadata shows a leader for every partition, and
until a record produced to the last partition is acknowledged (its log exists: both brokers
make the logs in partition order). Kafka answers once its controller has committed the records
and creates the logs afterwards; Strata does the same above 100 new partitions (below, it
answers once the logs are made).
"""
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import compare as C  # noqa: E402

ROUNDS = int(os.environ.get("BENCH_TC_ROUNDS", "2"))
# Each broker run on a file system made for it (a loop-mounted ext4 image; needs root): ext4
# scans for free inodes for minutes after a directory of 10,000 partitions is deleted, which
# would slow whichever run follows another. BENCH_TC_FRESH_FS=0 uses BENCH_WORK directly.
FRESH_FS = os.environ.get("BENCH_TC_FRESH_FS", "1" if os.geteuid() == 0 else "0") == "1"
SIZES = [int(x) for x in os.environ.get("BENCH_TC_SIZES", "100,1000,10000").split(",")]


def create(addr, name, n):
    from confluent_kafka.admin import AdminClient, NewPartitions, NewTopic
    a = AdminClient({"bootstrap.servers": addr})
    t = time.monotonic()
    a.create_topics([NewTopic(name, min(n, 5000), 1)], operation_timeout=120,
                    request_timeout=120)[name].result()
    if n > 5000:
        a.create_partitions([NewPartitions(name, n)], operation_timeout=120,
                            request_timeout=120)[name].result()
    answered = time.monotonic() - t
    while True:
        md = a.list_topics(name, timeout=30).topics.get(name)
        if md and md.error is None and len(md.partitions) == n and all(
                p.leader >= 0 for p in md.partitions.values()):
            leaders = time.monotonic() - t
            break
        time.sleep(0.005)
    return answered, leaders, produce_to(addr, name, n - 1) - t


def produce_to(addr, name, partition):
    """When a record produced to `partition` is acknowledged (retried until its log exists)."""
    from confluent_kafka import Producer
    p = Producer({"bootstrap.servers": addr, "acks": "1", "linger.ms": 0,
                  "retry.backoff.ms": 5, "retry.backoff.max.ms": 10,
                  "message.timeout.ms": 120000, "log_level": 0})
    done = {}
    p.produce(name, b"x", partition=partition,
              on_delivery=lambda err, msg: done.update(err=err, t=time.monotonic()))
    while "t" not in done:
        p.poll(0.001)
    if done["err"] is not None:
        raise RuntimeError(f"produce to {name}-{partition}: {done['err']}")
    return done["t"]


def fresh_fs(kind):
    """Mounts a new 8 GiB sparse ext4 image at BENCH_WORK/tc-fs-<kind>; the mount point."""
    import subprocess
    image = os.path.join(C.WORK, f"tc-fs-{kind}.img")
    mount = os.path.join(C.WORK, f"tc-fs-{kind}")
    drop_fs(mount)
    os.makedirs(mount, exist_ok=True)
    with open(image, "wb") as f:
        f.truncate(8 << 30)
    subprocess.run(["mkfs.ext4", "-q", "-F", image], check=True)
    subprocess.run(["mount", "-o", "loop", image, mount], check=True)
    return mount


def drop_fs(mount):
    import subprocess
    if os.path.ismount(mount):
        subprocess.run(["umount", mount], check=True)
    image = mount + ".img"
    if os.path.exists(image):
        os.remove(image)


def main():
    kinds = (sys.argv[1] if len(sys.argv) > 1 else "kafka,strata").split(",")
    for rnd in range(ROUNDS):
        for kind in kinds if rnd % 2 == 0 else list(reversed(kinds)):
            mount = fresh_fs(kind) if FRESH_FS else None
            run_dir = os.path.join(mount or C.WORK, f"topic-create-{kind}")
            b = C.Broker(kind, run_dir)
            b.start()
            try:
                for n in SIZES:
                    answered, leaders, usable = create(b.addr, f"t{n}", n)
                    print(f"| {kind} | {rnd} | {n:,} | {answered:.3f} | {leaders:.3f} "
                          f"| {usable:.3f} |", flush=True)
            finally:
                b.stop()
                if mount:
                    drop_fs(mount)


if __name__ == "__main__":
    main()
