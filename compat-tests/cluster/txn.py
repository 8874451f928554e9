"""Transactions on the 3-node cluster with confluent-kafka (librdkafka), issue 12 item 9.

    python txn.py rf-cases PREFIX      one transaction per partition of a fresh 3-partition
                                       topic, for replication factor 1 and 3, with a
                                       transactional id whose coordinator leads fewer than all
                                       of the partitions; then an aborted and a committed
                                       transaction over every partition of both topics
    python txn.py rdkafka-0129 PREFIX  librdkafka test 0129's scenario: 1,000 records in one
                                       transaction to an RF-1 topic, all delivered, all read
    python txn.py rdkafka-0103 PREFIX  librdkafka test 0103's scenarios: a series of
                                       committed and aborted transactions, and a
                                       consume-transform-produce loop committing the
                                       consumer's offsets with send_offsets_to_transaction

The scenarios of librdkafka's own tests are written here with confluent-kafka because no
package registry that CI can reach serves librdkafka's tests/ folder (see README.md).
BOOTSTRAP (env) lists the brokers. Exits non-zero with a reason on any failure.
"""
import os
import socket
import struct
import sys
import time
import uuid

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kmeta  # noqa: E402

BOOTSTRAP = os.environ.get("BOOTSTRAP", "127.0.0.1:19401")
BROKERS = BOOTSTRAP.split(",")


def fail(msg):
    print(f"ASSERTION FAILED: {msg}", file=sys.stderr)
    sys.exit(1)


def create(name, partitions, rf):
    admin = AdminClient({"bootstrap.servers": BOOTSTRAP})
    # The suite's brokers default to min.insync.replicas=2, which one replica cannot meet
    # (acks=all, as transactional producers send, would get NOT_ENOUGH_REPLICAS).
    config = {"min.insync.replicas": "1"} if rf == 1 else {}
    fs = admin.create_topics([NewTopic(name, partitions, rf, config=config)],
                             operation_timeout=30)
    fs[name].result(timeout=40)
    # Every broker knows every partition's leader (so its producer and consumer find them).
    deadline = time.time() + 30
    while time.time() < deadline:
        try:
            views = [kmeta.metadata(b, name) for b in BROKERS]
            if all(len(v) == partitions and all(l >= 0 for l, _, _ in v.values()) for v in views):
                return views[0]
        except (OSError, ValueError):
            pass
        time.sleep(0.2)
    fail(f"{name}: leaders never known to every broker")


def find_coordinator(addr, key):
    """The node id of the transaction coordinator of `key` (FindCoordinator v1, key type 1)."""
    host, port = addr.rsplit(":", 1)
    client = b"txn-py"
    k = key.encode()
    body = struct.pack(">hhih", 10, 1, 9, len(client)) + client
    body += struct.pack(">h", len(k)) + k + b"\x01"
    for _ in range(100):
        with socket.create_connection((host, int(port)), timeout=5) as s:
            s.sendall(struct.pack(">i", len(body)) + body)
            buf = b""
            while len(buf) < 4 or len(buf) < 4 + struct.unpack(">i", buf[:4])[0]:
                chunk = s.recv(65536)
                if not chunk:
                    raise OSError("closed")
                buf += chunk
        b = buf[4:]
        (err,) = struct.unpack_from(">h", b, 8)
        pos = 10
        (n,) = struct.unpack_from(">h", b, pos)
        pos += 2 + max(n, 0)
        (node,) = struct.unpack_from(">i", b, pos)
        if err == 0:
            return node
        time.sleep(0.2)
    fail(f"no transaction coordinator for {key}")


def producer(tid):
    p = Producer({
        "bootstrap.servers": BOOTSTRAP,
        "transactional.id": tid,
        "transaction.timeout.ms": 60000,
        "message.timeout.ms": 20000,
    })
    p.init_transactions(30)
    return p


def produce_acked(p, topic, partition, value):
    """Produces one record and waits (20 s at most) for its acknowledgement."""
    outcome = []
    p.produce(topic, value=value, partition=partition,
              on_delivery=lambda err, msg: outcome.append(err))
    left = p.flush(20)
    if left or not outcome:
        fail(f"{topic}[{partition}]: record never acknowledged within 20 s")
    if outcome[0] is not None:
        fail(f"{topic}[{partition}]: delivery failed: {outcome[0]}")


def read_committed(topics, want, group=None, timeout_s=30):
    """Every value a read_committed consumer sees of `topics` until it has `want` of them."""
    c = Consumer({
        "bootstrap.servers": BOOTSTRAP,
        "group.id": group or f"txn-reader-{uuid.uuid4()}",
        "isolation.level": "read_committed",
        "auto.offset.reset": "earliest",
        "enable.auto.commit": False,
    })
    c.subscribe(topics)
    seen = []
    deadline = time.time() + timeout_s
    while time.time() < deadline and len(seen) < want:
        m = c.poll(0.5)
        if m is None or m.error():
            continue
        seen.append((m.topic(), m.partition(), m.value().decode()))
    # A little longer: nothing more (no aborted record) may show up.
    end = time.time() + 2
    while time.time() < end:
        m = c.poll(0.2)
        if m is not None and not m.error():
            seen.append((m.topic(), m.partition(), m.value().decode()))
    c.close()
    return seen


def tid_apart_from(leaders, prefix):
    """A transactional id whose coordinator does not lead every partition in `leaders`."""
    for n in range(60):
        tid = f"{prefix}-tx-{n}"
        coord = find_coordinator(BROKERS[0], tid)
        if any(l != coord for l in leaders):
            return tid, coord
    fail("no transactional id with a coordinator apart from the leaders")


def rf_cases(prefix):
    topics = {}
    for rf in (1, 3):
        name = f"{prefix}-rf{rf}"
        md = create(name, 3, rf)
        topics[name] = [md[p][0] for p in range(3)]
    leaders = [l for ls in topics.values() for l in ls]
    tid, coord = tid_apart_from(leaders, prefix)
    print(f"transactional id {tid}: coordinator {coord}; leaders {topics}")
    p = producer(tid)
    for name, ls in topics.items():
        for part in range(3):
            p.begin_transaction()
            produce_acked(p, name, part, f"one-{part}")
            try:
                p.commit_transaction(30)
            except KafkaException as e:
                fail(f"{name}[{part}] (leader {ls[part]}, coordinator {coord}): commit: {e}")
    # An aborted transaction over all six partitions, then a committed one.
    for outcome in ("abort", "commit"):
        p.begin_transaction()
        for name in topics:
            for part in range(3):
                produce_acked(p, name, part, f"{outcome}-{part}")
        if outcome == "abort":
            p.abort_transaction(30)
        else:
            p.commit_transaction(30)
    for name in topics:
        seen = sorted(v for _, _, v in read_committed([name], 6))
        want = sorted([f"one-{i}" for i in range(3)] + [f"commit-{i}" for i in range(3)])
        if seen != want:
            fail(f"{name}: read_committed saw {seen}, wanted {want}")
    print("rf-cases ok")


def rdkafka_0129(prefix):
    name = f"{prefix}-0129"
    md = create(name, 3, 1)
    tid, coord = tid_apart_from([md[p][0] for p in range(3)], prefix + "-0129")
    p = producer(tid)
    p.begin_transaction()
    delivered = []
    for i in range(1000):
        p.produce(name, value=f"m{i}", partition=i % 3,
                  on_delivery=lambda err, msg: delivered.append(err))
        p.poll(0)
    if p.flush(30):
        fail(f"{name}: {sum(1 for e in delivered if e is None)} of 1000 delivered in 30 s")
    errors = [e for e in delivered if e is not None]
    if errors:
        fail(f"{name}: {len(errors)} delivery errors, first {errors[0]}")
    p.commit_transaction(30)
    seen = read_committed([name], 1000, timeout_s=60)
    if len(seen) != 1000:
        fail(f"{name}: read_committed saw {len(seen)} of 1000")
    print(f"0129 ok (coordinator {coord})")


def rdkafka_0103(prefix):
    src, dst = f"{prefix}-0103-in", f"{prefix}-0103-out"
    create(src, 3, 3)
    md = create(dst, 3, 1)
    tid, _ = tid_apart_from([md[p][0] for p in range(3)], prefix + "-0103")
    p = producer(tid)
    # A series of transactions, every other one aborted.
    for n in range(6):
        p.begin_transaction()
        for part in range(3):
            produce_acked(p, src, part, f"in-{n}-{part}")
        if n % 2:
            p.abort_transaction(30)
        else:
            p.commit_transaction(30)
    want = 9
    # Consume-transform-produce: the input's offsets commit with the output's records.
    group = f"{prefix}-0103-group"
    c = Consumer({
        "bootstrap.servers": BOOTSTRAP,
        "group.id": group,
        "isolation.level": "read_committed",
        "auto.offset.reset": "earliest",
        "enable.auto.commit": False,
    })
    c.subscribe([src])
    copied = 0
    deadline = time.time() + 60
    while copied < want and time.time() < deadline:
        msgs = c.consume(10, 1.0)
        msgs = [m for m in msgs if not m.error()]
        if not msgs:
            continue
        p.begin_transaction()
        for m in msgs:
            produce_acked(p, dst, m.partition(), m.value())
        p.send_offsets_to_transaction(c.position(c.assignment()), c.consumer_group_metadata(), 30)
        p.commit_transaction(30)
        copied += len(msgs)
    if copied != want:
        fail(f"copied {copied} committed records of {want}")
    committed = c.committed([TopicPartition(src, i) for i in range(3)], 30)
    c.close()
    total = sum(tp.offset for tp in committed)
    # Each partition holds 6 records and 6 markers; the group's position is past all of them.
    if any(tp.offset < 0 for tp in committed) or total < want:
        fail(f"committed offsets {[(tp.partition, tp.offset) for tp in committed]}")
    seen = read_committed([dst], want)
    if len(seen) != want or any(not v.startswith("in-") for _, _, v in seen):
        fail(f"{dst}: read_committed saw {seen}")
    print("0103 ok")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        print(__doc__)
        sys.exit(2)
    {"rf-cases": rf_cases, "rdkafka-0129": rdkafka_0129, "rdkafka-0103": rdkafka_0103}[
        sys.argv[1]
    ](sys.argv[2])
