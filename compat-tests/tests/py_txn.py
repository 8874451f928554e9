"""Transactions with confluent-kafka (librdkafka): commit/abort visibility under read_committed
and read_uncommitted, and consume-transform-produce with send_offsets_to_transaction where a
crashed run is redone with no duplicate in the output."""
import os, sys, uuid
from confluent_kafka import Consumer, Producer, TopicPartition, KafkaException
from confluent_kafka.admin import AdminClient, NewTopic

BOOTSTRAP = os.environ.get("BOOTSTRAP", "127.0.0.1:9092")
RUN_ID = os.environ.get("RUN_ID", uuid.uuid4().hex[:8])


def fail(msg):
    print("ASSERTION FAILED:", msg)
    sys.exit(1)


def create(name, parts=1):
    admin = AdminClient({"bootstrap.servers": BOOTSTRAP})
    for f in admin.create_topics([NewTopic(name, parts, 1)]).values():
        f.result(30)


def read_all(name, isolation, expect_at_least, timeout=20):
    c = Consumer({"bootstrap.servers": BOOTSTRAP, "group.id": f"compat-{RUN_ID}-read-{uuid.uuid4().hex[:6]}",
                  "isolation.level": isolation, "enable.auto.commit": False, "auto.offset.reset": "earliest"})
    c.assign([TopicPartition(name, 0, 0)])
    got, idle = [], 0
    while idle < 6 and len(got) < 10_000:
        m = c.poll(1.0)
        if m is None:
            idle += 1
            if len(got) >= expect_at_least:
                idle += 2
            continue
        if m.error():
            continue
        idle = 0
        got.append(m.value().decode())
    c.close()
    return got


def case_commit_abort():
    t = f"compat-{RUN_ID}-txn"
    create(t)
    p = Producer({"bootstrap.servers": BOOTSTRAP, "transactional.id": f"compat-{RUN_ID}-tx"})
    p.init_transactions(30)
    for label, n, commit in (("a", 10, True), ("b", 5, False), ("c", 3, True)):
        p.begin_transaction()
        for i in range(n):
            p.produce(t, value=f"{label}{i}".encode(), partition=0)
        p.flush(30)
        (p.commit_transaction if commit else p.abort_transaction)(30)
    committed = read_all(t, "read_committed", 13)
    want = [f"a{i}" for i in range(10)] + [f"c{i}" for i in range(3)]
    if committed != want:
        fail(f"read_committed saw {committed}")
    uncommitted = read_all(t, "read_uncommitted", 18)
    if len(uncommitted) != 18:
        fail(f"read_uncommitted saw {len(uncommitted)} records, expected 18 (aborted data included)")
    print(f"read_committed 13, read_uncommitted 18 (t={t})")


def transform_run(src, dst, group, txid, crash_after=None):
    c = Consumer({"bootstrap.servers": BOOTSTRAP, "group.id": group, "enable.auto.commit": False,
                  "auto.offset.reset": "earliest", "isolation.level": "read_committed"})
    c.subscribe([src])
    p = Producer({"bootstrap.servers": BOOTSTRAP, "transactional.id": txid})
    p.init_transactions(30)
    done, idle = 0, 0
    while idle < 8:
        msgs = c.consume(num_messages=5, timeout=1.0)
        msgs = [m for m in msgs if not m.error()]
        if not msgs:
            idle += 1
            continue
        idle = 0
        p.begin_transaction()
        for m in msgs:
            p.produce(dst, value=m.value().upper(), partition=0)
        p.send_offsets_to_transaction(c.position(c.assignment()), c.consumer_group_metadata(), 30)
        done += len(msgs)
        if crash_after is not None and done >= crash_after:
            p.flush(30)
            # "Crash": the transaction is neither committed nor aborted; the next incarnation
            # with the same transactional id fences it. The consumer leaves so the group can
            # rebalance without waiting out the session timeout.
            c.close()
            return done
        p.commit_transaction(30)
    c.close()
    return done


def case_consume_transform_produce():
    src, dst = f"compat-{RUN_ID}-eos-in", f"compat-{RUN_ID}-eos-out"
    create(src)
    create(dst)
    p = Producer({"bootstrap.servers": BOOTSTRAP})
    for i in range(30):
        p.produce(src, value=f"m{i}".encode(), partition=0)
    p.flush(30)
    group, txid = f"compat-{RUN_ID}-eos", f"compat-{RUN_ID}-eos-tx"
    transform_run(src, dst, group, txid, crash_after=10)
    transform_run(src, dst, group, txid)
    out = read_all(dst, "read_committed", 30)
    want = [f"M{i}" for i in range(30)]
    if sorted(out) != sorted(want) or len(out) != 30:
        fail(f"output has {len(out)} records (want each of 30 exactly once): {out}")
    print("30 inputs, 30 outputs exactly once after a crashed run")


CASES = {"commit-abort": case_commit_abort, "ctp": case_consume_transform_produce}

if __name__ == "__main__":
    try:
        CASES[sys.argv[1]]()
    except KafkaException as e:
        fail(f"client error: {e}")
