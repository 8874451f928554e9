"""confluent-kafka (librdkafka) and kafka-python cases. One case per invocation:
    python py_clients.py CASE [ARG]      exit 0 = pass
Cases: cf-roundtrip CODEC | cf-idempotent | cf-admin | cf-group | cf-txn-abort |
       kp-roundtrip CODEC | kp-group
"""
import os, sys, time, uuid

BOOTSTRAP = os.environ.get("BOOTSTRAP", "127.0.0.1:9092")
RUN_ID = os.environ.get("RUN_ID", uuid.uuid4().hex[:8])
N = 500


def topic(name):
    return f"compat-{RUN_ID}-{name}"


def fail(msg):
    print("ASSERTION FAILED:", msg, file=sys.stderr)
    sys.exit(1)


def make_records(codec):
    """(key, value, headers) with duplicate header keys, an empty header value,
    null values every 50th record, compressible payloads."""
    recs = []
    for i in range(N):
        key = f"key-{i}".encode()
        value = None if i % 50 == 7 else (f"value-{i}-{codec}-" + "x" * (i % 97)).encode()
        headers = [("h", str(i).encode()), ("h", b"dup"), ("empty", b"")]
        recs.append((key, value, headers))
    return recs


def check(got, want, label):
    if len(got) != len(want):
        fail(f"{label}: got {len(got)} records, want {len(want)}")
    for i, (g, w) in enumerate(zip(got, want)):
        off, key, value, headers = g
        if off != i:
            fail(f"{label}: record {i} has offset {off}")
        if key != w[0] or value != w[1]:
            fail(f"{label}: record {i}: {key!r}={value!r}, want {w[0]!r}={w[1]!r}")
        if [(k, bytes(v) if v is not None else b"") for k, v in headers] != w[2]:
            fail(f"{label}: record {i}: headers {headers!r}, want {w[2]!r}")


# ---------------------------------------------------------------- confluent-kafka
def cf_admin():
    from confluent_kafka.admin import AdminClient
    return AdminClient({"bootstrap.servers": BOOTSTRAP})


def cf_create(name, parts):
    from confluent_kafka.admin import NewTopic
    a = cf_admin()
    a.create_topics([NewTopic(name, parts, 1)], operation_timeout=30)[name].result()
    for _ in range(100):
        t = a.list_topics(name, timeout=10).topics.get(name)
        if t and t.error is None and len(t.partitions) == parts and all(p.leader >= 0 for p in t.partitions.values()):
            return
        time.sleep(0.1)
    fail(f"topic {name} not ready")


def cf_consume_assign(name, partitions, n, timeout=30):
    from confluent_kafka import Consumer, TopicPartition, OFFSET_BEGINNING
    # confluent-kafka's Python binding insists on a group.id even for assign();
    # with assign() + explicit offsets + no commits it is never joined (librdkafka
    # may still look up its coordinator with FindCoordinator).
    c = Consumer({"bootstrap.servers": BOOTSTRAP, "group.id": f"compat-{RUN_ID}-assign",
                  "enable.auto.commit": False, "enable.partition.eof": False})
    c.assign([TopicPartition(name, p, OFFSET_BEGINNING) for p in partitions])
    out, deadline = [], time.time() + timeout
    while len(out) < n and time.time() < deadline:
        m = c.poll(1.0)
        if m is None:
            continue
        if m.error():
            fail(f"consume error: {m.error()}")
        out.append(m)
    c.close()
    return out


def case_cf_roundtrip(codec):
    from confluent_kafka import Producer
    name = topic(f"cf-{codec}")
    cf_create(name, 1)
    want = make_records(codec)
    errs = []
    p = Producer({"bootstrap.servers": BOOTSTRAP, "compression.type": codec,
                  "linger.ms": 5, "acks": "all"})
    for k, v, h in want:
        p.produce(name, value=v, key=k, headers=h, partition=0,
                  on_delivery=lambda e, m: e and errs.append(e))
    if p.flush(30) != 0:
        fail("flush timed out")
    if errs:
        fail(f"delivery errors: {errs[:3]}")
    msgs = cf_consume_assign(name, [0], N)
    check([(m.offset(), m.key(), m.value(), m.headers() or []) for m in msgs], want, f"confluent {codec}")
    print(f"confluent-kafka {codec}: {N} records ok")


def case_cf_idempotent():
    from confluent_kafka import Producer
    name = topic("cf-idem")
    cf_create(name, 3)
    errs = []
    p = Producer({"bootstrap.servers": BOOTSTRAP, "enable.idempotence": True,
                  "linger.ms": 2, "batch.num.messages": 100})
    total = 3000
    for i in range(total):
        p.produce(name, key=f"k{i}".encode(), value=f"v{i}".encode(),
                  on_delivery=lambda e, m: e and errs.append(e))
        if i % 500 == 0:
            p.poll(0)
    if p.flush(30) != 0:
        fail("flush timed out")
    if errs:
        fail(f"delivery errors: {errs[:3]}")
    msgs = cf_consume_assign(name, [0, 1, 2], total)
    vals = [m.value() for m in msgs]
    if len(vals) != total or len(set(vals)) != total:
        fail(f"got {len(vals)} ({len(set(vals))} distinct) of {total}")
    per_part = {}
    for m in msgs:
        per_part.setdefault(m.partition(), []).append(m.offset())
    for part, offs in per_part.items():
        if offs != list(range(len(offs))):
            fail(f"partition {part}: offsets not contiguous from 0")
    print(f"idempotent producer: {total} records over {len(per_part)} partitions, no duplicates")


def case_cf_txn_abort():
    """A transactional producer aborts one transaction and commits the next; a read_committed
    consumer sees only the committed one (Strata answers from its .txnindex files)."""
    from confluent_kafka import Producer
    name = topic("cf-txn")
    cf_create(name, 1)
    p = Producer({"bootstrap.servers": BOOTSTRAP, "transactional.id": f"txn-{RUN_ID}"})
    p.init_transactions(30)
    p.begin_transaction()
    for i in range(100):
        p.produce(name, key=b"k", value=f"aborted-{i}".encode(), partition=0)
    p.flush(30)
    p.abort_transaction(30)
    p.begin_transaction()
    for i in range(100):
        p.produce(name, key=b"k", value=f"committed-{i}".encode(), partition=0)
    p.commit_transaction(30)
    msgs = cf_consume_assign(name, [0], 100)
    vals = [m.value().decode() for m in msgs]
    if vals != [f"committed-{i}" for i in range(100)]:
        fail(f"read_committed saw {vals[:3]}... ({len(vals)})")
    print("confluent-kafka transactions: aborted 100, committed 100, read_committed saw 100")


def case_cf_admin():
    from confluent_kafka.admin import NewPartitions, ConfigResource, ResourceType
    a = cf_admin()
    name = topic("cf-admin")
    cf_create(name, 2)
    md = a.list_topics(timeout=10)
    if name not in md.topics or len(md.topics[name].partitions) != 2:
        fail("created topic not in metadata with 2 partitions")
    if not md.brokers:
        fail("no brokers in metadata")
    a.create_partitions([NewPartitions(name, 3)])[name].result()
    for _ in range(50):
        if len(a.list_topics(name, timeout=10).topics[name].partitions) == 3:
            break
        time.sleep(0.1)
    else:
        fail("partitions did not grow to 3")
    res = ConfigResource(ResourceType.TOPIC, name)
    cfg = a.describe_configs([res])[res].result()
    if "cleanup.policy" not in cfg:
        fail("describe_configs lacks cleanup.policy")
    a.delete_topics([name], operation_timeout=30)[name].result()
    for _ in range(50):
        if name not in a.list_topics(timeout=10).topics:
            break
        time.sleep(0.2)
    else:
        fail("topic still listed after delete")
    print("confluent admin: create, metadata, create_partitions, describe_configs, delete ok")


def case_cf_group():
    from confluent_kafka import Producer, Consumer, TopicPartition
    name = topic("cf-group")
    group = f"compat-{RUN_ID}-cfgroup"
    cf_create(name, 3)
    p = Producer({"bootstrap.servers": BOOTSTRAP})
    total = 600
    for i in range(total):
        p.produce(name, key=f"k{i}".encode(), value=f"v{i}".encode())
    p.flush(30)
    c = Consumer({"bootstrap.servers": BOOTSTRAP, "group.id": group,
                  "auto.offset.reset": "earliest", "enable.auto.commit": False})
    c.subscribe([name])
    seen, deadline = set(), time.time() + 60
    while len(seen) < total and time.time() < deadline:
        m = c.poll(1.0)
        if m is None:
            continue
        if m.error():
            fail(f"consume error: {m.error()}")
        seen.add(m.value())
    if len(seen) != total:
        fail(f"group consumer saw {len(seen)} of {total}")
    c.commit(asynchronous=False)
    committed = c.committed([TopicPartition(name, i) for i in range(3)], timeout=10)
    c.close()
    hw = {}
    c2 = Consumer({"bootstrap.servers": BOOTSTRAP, "group.id": group + "-probe"})
    for i in range(3):
        hw[i] = c2.get_watermark_offsets(TopicPartition(name, i), timeout=10)[1]
    c2.close()
    for tp in committed:
        if tp.offset != hw[tp.partition]:
            fail(f"partition {tp.partition}: committed {tp.offset}, high watermark {hw[tp.partition]}")
    print(f"confluent group: consumed {total}, committed offsets == high watermarks")


# ---------------------------------------------------------------- kafka-python
def kp_create(name, parts):
    from kafka.admin import KafkaAdminClient, NewTopic
    a = KafkaAdminClient(bootstrap_servers=BOOTSTRAP)
    a.create_topics([NewTopic(name, num_partitions=parts, replication_factor=1)])
    a.close()


def case_kp_roundtrip(codec):
    from kafka import KafkaProducer, KafkaConsumer, TopicPartition
    name = topic(f"kp-{codec}")
    kp_create(name, 1)
    want = make_records(codec)
    p = KafkaProducer(bootstrap_servers=BOOTSTRAP, acks="all", linger_ms=5,
                      compression_type=None if codec == "none" else codec)
    futs = [p.send(name, key=k, value=v, headers=h, partition=0) for k, v, h in want]
    p.flush(30)
    for f in futs:
        f.get(timeout=30)
    p.close()
    c = KafkaConsumer(bootstrap_servers=BOOTSTRAP, group_id=None, enable_auto_commit=False,
                      consumer_timeout_ms=15000)
    tp = TopicPartition(name, 0)
    c.assign([tp])
    c.seek_to_beginning(tp)
    got = []
    for m in c:
        got.append((m.offset, m.key, m.value, list(m.headers)))
        if len(got) >= N:
            break
    c.close()
    check(got, want, f"kafka-python {codec}")
    print(f"kafka-python {codec}: {N} records ok")


def case_kp_group():
    from kafka import KafkaProducer, KafkaConsumer
    name = topic("kp-group")
    group = f"compat-{RUN_ID}-kpgroup"
    kp_create(name, 3)
    total = 300
    p = KafkaProducer(bootstrap_servers=BOOTSTRAP)
    for i in range(total):
        p.send(name, key=f"k{i}".encode(), value=f"v{i}".encode())
    p.flush(30)
    p.close()
    c = KafkaConsumer(name, bootstrap_servers=BOOTSTRAP, group_id=group,
                      auto_offset_reset="earliest", enable_auto_commit=False,
                      consumer_timeout_ms=20000)
    seen = set()
    for m in c:
        seen.add(m.value)
        if len(seen) >= total:
            break
    c.commit()
    c.close()
    if len(seen) != total:
        fail(f"kafka-python group saw {len(seen)} of {total}")
    print(f"kafka-python group: consumed and committed {total}")


CASES = {
    "cf-roundtrip": case_cf_roundtrip, "cf-idempotent": case_cf_idempotent,
    "cf-admin": case_cf_admin, "cf-group": case_cf_group, "cf-txn-abort": case_cf_txn_abort,
    "kp-roundtrip": case_kp_roundtrip, "kp-group": case_kp_group,
}

if __name__ == "__main__":
    CASES[sys.argv[1]](*sys.argv[2:])
