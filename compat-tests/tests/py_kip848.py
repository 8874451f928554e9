"""confluent-kafka (librdkafka) with the KIP-848 consumer group protocol
(`group.protocol=consumer`, ConsumerGroupHeartbeat v1, OffsetCommit/OffsetFetch v9).

Cases: share (two consumers split a 4-partition topic: every record once, both get some,
        committed offsets equal the high watermarks) | describe (AdminClient
        describe_consumer_groups reports a consumer-type group with its members)
"""
import os
import sys
import threading
import time

from confluent_kafka import Consumer, Producer, TopicPartition, libversion
from confluent_kafka.admin import AdminClient, NewTopic

BOOTSTRAP = os.environ.get("BOOTSTRAP", "127.0.0.1:9092")
RUN_ID = os.environ.get("RUN_ID", "local")


def fail(msg):
    print("ASSERTION FAILED:", msg, file=sys.stderr)
    sys.exit(1)


def create(name, parts):
    admin = AdminClient({"bootstrap.servers": BOOTSTRAP})
    admin.create_topics([NewTopic(name, parts, 1)])[name].result(30)
    return admin


def consumer(group, assigned):
    def on_assign(c, parts):
        assigned.update((p.topic, p.partition) for p in parts)

    def on_revoke(c, parts):
        assigned.difference_update((p.topic, p.partition) for p in parts)

    c = Consumer({"bootstrap.servers": BOOTSTRAP, "group.id": group,
                  "group.protocol": "consumer", "auto.offset.reset": "earliest",
                  "enable.auto.commit": False})
    return c, on_assign, on_revoke


def case_share():
    print("librdkafka", libversion())
    name = f"compat-{RUN_ID}-cf848"
    group = f"compat-{RUN_ID}-cf848"
    admin = create(name, 4)
    owned = [set(), set()]
    consumers = []
    for i in range(2):
        c, a, r = consumer(group, owned[i])
        c.subscribe([name], on_assign=a, on_revoke=r)
        consumers.append(c)
    seen = {}
    counts = [0, 0]
    total = 2000
    stop = threading.Event()

    def run(i):
        c = consumers[i]
        while not stop.is_set():
            m = c.poll(0.2)
            if m is None or m.error():
                continue
            seen[m.value()] = seen.get(m.value(), 0) + 1
            counts[i] += 1
            c.commit(message=m, asynchronous=False)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    deadline = time.time() + 60
    while not (len(owned[0]) == 2 and len(owned[1]) == 2):
        if time.time() > deadline:
            stop.set()
            fail(f"group never balanced: {owned}")
        time.sleep(0.2)
    print("balanced:", sorted(owned[0]), sorted(owned[1]))
    desc = admin.describe_consumer_groups([group])[group].result(30)
    print("described:", desc.type, desc.state, len(desc.members), "members")
    if str(desc.type) != "ConsumerGroupType.CONSUMER" or len(desc.members) != 2:
        stop.set()
        fail(f"describe: type {desc.type}, {len(desc.members)} members")
    p = Producer({"bootstrap.servers": BOOTSTRAP})
    for i in range(total):
        p.produce(name, key=str(i).encode(), value=f"v{i}".encode())
    p.flush(30)
    deadline = time.time() + 60
    while sum(counts) < total and time.time() < deadline:
        time.sleep(0.2)
    stop.set()
    for t in threads:
        t.join()
    dup = [v for v, n in seen.items() if n != 1]
    if dup:
        fail(f"{len(dup)} records read more than once, e.g. {dup[:3]}")
    if len(seen) != total or 0 in counts:
        fail(f"read {len(seen)} of {total}, per member {counts}")
    committed = consumers[0].committed([TopicPartition(name, i) for i in range(4)], timeout=10)
    for tp in committed:
        lo, hi = consumers[0].get_watermark_offsets(tp, timeout=10)
        if tp.offset != hi:
            fail(f"partition {tp.partition}: committed {tp.offset}, high watermark {hi}")
    for c in consumers:
        c.close()
    print(f"confluent KIP-848 group: {total} records once each, per member {counts}")


if __name__ == "__main__":
    {"share": case_share}[sys.argv[1]]()
