"""Producer and consumer group through broker crashes and pauses, on a 3-node cluster.
    python chaos.py [--topic chaos] [--duration 30]        exit 0 = every check held

Needs a running cluster managed by cluster.sh (same CLUSTER_DIR / CLUSTER_PORT_BASE env);
the clients bootstrap from `cluster.sh bootstrap` (BOOTSTRAP is ignored).

Topic: 3 partitions, replication factor 3, min.insync.replicas=2. An idempotent producer
(acks=all) sends the sequence numbers 0, 1, 2, ... as values, round-robin over the
partitions, and remembers the partition and offset of every record whose delivery report
succeeded. A consumer in a group (manual commits after each processed batch) runs
concurrently and samples the group's committed offsets with committed() every ~0.5 s.

Chaos, driven through cluster.sh while producing for --duration seconds (and at least 5 s
after the last step; each step is timed from the end of the one before):
  t=5 s   kill -9 the leader of partition 0 (from a Metadata request)
  +5 s    restart it on its data
  +2 s    SIGSTOP another broker (the leader of partition 1 or 2 if that is not the first
          victim), SIGCONT it 8 s later
Then producing stops (flush), the group consumer drains, and a fresh consumer reads every
partition from the beginning up to its high watermark.

Checks (each a violation if it fails):
  a) every acknowledged record is in the log exactly once, at the partition and offset its
     delivery report gave; no value appears twice anywhere (the idempotent producer must
     not have introduced duplicates); offsets of each partition are contiguous from 0; the
     acknowledged values of a partition are in increasing order of offset (idempotence
     keeps per-partition order)
  b) the committed offsets of the group, as sampled, never went backwards
  c) the group consumer saw every acknowledged record at least once (same partition,
     offset and value)
  d) the killed broker is back in the ISR of every partition within 30 s of its restart,
     and the paused broker within 30 s of SIGCONT
"""
import argparse, os, random, subprocess, sys, threading, time
from collections import defaultdict

import kmeta

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition, OFFSET_BEGINNING
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic

HERE = os.path.dirname(os.path.abspath(__file__))
CLUSTER_SH = os.environ.get("CLUSTER_SH", os.path.join(HERE, "cluster.sh"))
PARTITIONS = 3
T0 = time.time()


def log(msg):
    print(f"[{time.time() - T0:6.1f}s] {msg}", flush=True)


def cluster(*args):
    """Run cluster.sh; returns its stdout, raises on failure."""
    r = subprocess.run(["bash", CLUSTER_SH, *map(str, args)], capture_output=True, text=True)
    out = (r.stdout + r.stderr).strip()
    log(f"cluster.sh {' '.join(map(str, args))}: {out}")
    if r.returncode != 0:
        raise RuntimeError(f"cluster.sh {' '.join(map(str, args))} failed: {out}")
    return r.stdout.strip()


class Violations:
    def __init__(self):
        self.items = []
        self.lock = threading.Lock()

    def add(self, check, msg):
        with self.lock:
            self.items.append((check, msg))
        log(f"VIOLATION {check}: {msg}")


V = Violations()


def describe(admin, topic):
    """{partition: (leader, replicas, isrs)} from a fresh Metadata request; None on error."""
    try:
        md = admin.list_topics(topic, timeout=5)
    except KafkaException as e:
        log(f"metadata failed: {e}")
        return None
    t = md.topics.get(topic)
    if t is None or t.error is not None:
        log(f"metadata: topic error {None if t is None else t.error}")
        return None
    return {p: (pm.leader, list(pm.replicas), list(pm.isrs)) for p, pm in t.partitions.items()}


def create_topic(admin, topic):
    fs = admin.create_topics([NewTopic(topic, num_partitions=PARTITIONS, replication_factor=3,
                                       config={"min.insync.replicas": "2"})],
                             operation_timeout=30, request_timeout=30)
    fs[topic].result()
    deadline = time.time() + 30
    while time.time() < deadline:
        d = describe(admin, topic)
        if d and len(d) == PARTITIONS and all(l >= 0 and len(r) == 3 and len(i) == 3 for l, r, i in d.values()):
            log(f"topic {topic} ready: {d}")
            res = ConfigResource(ConfigResource.Type.TOPIC, topic)
            cfg = admin.describe_configs([res])[res].result()
            mir = cfg["min.insync.replicas"].value
            if mir != "2":
                V.add("setup", f"min.insync.replicas of {topic} is {mir}, not 2")
            return d
        time.sleep(0.2)
    raise RuntimeError(f"topic {topic} not ready (3 replicas, full ISR, a leader): {describe(admin, topic)}")


class ProducerThread(threading.Thread):
    def __init__(self, bootstrap, topic):
        super().__init__(daemon=True)
        self.topic = topic
        self.stop = threading.Event()
        self.acked = {}  # seq -> (partition, offset)
        self.failed = defaultdict(int)  # error name -> count
        self.sent = 0
        self.fatal = None
        self.p = Producer({
            "bootstrap.servers": bootstrap,
            "enable.idempotence": True,
            "acks": "all",
            "linger.ms": 5,
            # Outlast the chaos: a record is retried until the cluster takes it.
            "message.timeout.ms": 120000,
            "error_cb": self.on_error,
        })

    def on_error(self, err):
        log(f"producer error_cb: {err}")
        if err.fatal():
            self.fatal = str(err)

    def on_delivery(self, err, msg):
        seq = int(msg.value())
        if err is not None:
            self.failed[err.name()] += 1
            if sum(self.failed.values()) <= 20:
                log(f"delivery failed seq={seq} partition={msg.partition()}: {err}")
        else:
            self.acked[seq] = (msg.partition(), msg.offset())

    def run(self):
        seq = 0
        while not self.stop.is_set() and self.fatal is None:
            try:
                self.p.produce(self.topic, value=str(seq).encode(), partition=seq % PARTITIONS,
                               on_delivery=self.on_delivery)
                seq += 1
                self.sent = seq
            except BufferError:
                self.p.poll(0.1)
                continue
            self.p.poll(0)
            time.sleep(0.004)  # ~200 records/s
        log(f"producer: stop after {self.sent} records, flushing")
        left = self.p.flush(90)
        log(f"producer: flushed, {left} still queued, {len(self.acked)} acked, failures {dict(self.failed)}")
        self.unflushed = left


class GroupConsumerThread(threading.Thread):
    def __init__(self, bootstrap, topic, group):
        super().__init__(daemon=True)
        self.topic = topic
        self.stop = threading.Event()
        self.seen = defaultdict(set)  # partition -> {(offset, value)}
        self.history = []  # (time, partition, committed offset)
        self.commit_errors = defaultdict(int)
        self.committed_errors = defaultdict(int)
        self.consumed = 0
        self.c = Consumer({
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            "session.timeout.ms": 10000,
            "error_cb": lambda e: log(f"group consumer error_cb: {e}"),
            # CHAOS_CONSUMER_DEBUG=cgrp,protocol: librdkafka's debug log of the group consumer
            **({"debug": os.environ["CHAOS_CONSUMER_DEBUG"]} if os.environ.get("CHAOS_CONSUMER_DEBUG") else {}),
        })
        self.tps = [TopicPartition(topic, p) for p in range(PARTITIONS)]

    def sample_committed(self):
        try:
            for tp in self.c.committed(self.tps, timeout=10):
                if tp.error is not None:
                    self.committed_errors[str(tp.error)] += 1
                elif tp.offset >= 0:
                    self.history.append((time.time() - T0, tp.partition, tp.offset))
        except KafkaException as e:
            self.committed_errors[e.args[0].name()] += 1

    def run(self):
        self.c.subscribe([self.topic])
        last_sample = 0.0
        while not self.stop.is_set():
            msgs = self.c.consume(num_messages=500, timeout=0.5)
            upto = {}
            for m in msgs:
                if m.error() is not None:
                    log(f"group consumer: {m.error()}")
                    continue
                self.seen[m.partition()].add((m.offset(), int(m.value())))
                self.consumed += 1
                upto[m.partition()] = max(upto.get(m.partition(), -1), m.offset() + 1)
            if upto:
                offs = [TopicPartition(self.topic, p, o) for p, o in sorted(upto.items())]
                try:
                    self.c.commit(offsets=offs, asynchronous=False)
                except KafkaException as e:
                    # Not a violation by itself: the next batch's commit covers these.
                    self.commit_errors[e.args[0].name()] += 1
                    if sum(self.commit_errors.values()) <= 20:
                        log(f"group consumer: commit {[(t.partition, t.offset) for t in offs]} failed: {e}")
            if time.time() - last_sample >= 0.5:
                self.sample_committed()
                last_sample = time.time()
        self.sample_committed()
        self.c.close()


class IsrWatch(threading.Thread):
    """Polls Metadata until `broker` is in the ISR of every partition, for at most 30 s.
    Asks the *other* brokers directly (kmeta): the watched broker's own view is stale right
    after a restart or SIGCONT. Brokers that do not answer within 2 s (paused) are skipped;
    at least one must answer and every answer must show `broker` in every ISR."""

    def __init__(self, brokers, topic, broker, what):
        super().__init__(daemon=True)
        self.topic, self.broker, self.what = topic, broker, what
        self.others = {i + 1: a for i, a in enumerate(brokers) if i + 1 != broker}
        self.start_time = time.time()
        self.took = None
        self.last = {}

    def run(self):
        while time.time() - self.start_time < 30:
            answers = {}
            for b, addr in self.others.items():
                try:
                    answers[b] = kmeta.metadata(addr, self.topic, timeout=2)
                except (OSError, ValueError) as e:
                    self.last[b] = repr(e)
            self.last.update(answers)
            if answers and all(len(d) == PARTITIONS and all(self.broker in isr for _, _, isr in d.values())
                               for d in answers.values()):
                self.took = time.time() - self.start_time
                log(f"{self.what} broker {self.broker} is in every ISR after {self.took:.1f}s, "
                    f"as brokers {sorted(answers)} say: {answers}")
                return
            time.sleep(0.5)


def read_all(bootstrap, topic):
    """Fresh consumer: every partition from offset 0 to its high watermark.
    Returns ({partition: [(offset, value)] in read order}, {partition: high watermark})."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"chaos-verify-{random.randrange(1 << 30)}",
                  "enable.auto.commit": False, "enable.partition.eof": True})
    hw = {}
    for p in range(PARTITIONS):
        lo, hi = c.get_watermark_offsets(TopicPartition(topic, p), timeout=30, cached=False)
        if lo != 0:
            V.add("a", f"partition {p}: log start offset {lo}, expected 0")
        hw[p] = hi
    c.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(PARTITIONS)])
    out = defaultdict(list)
    done = {p for p in range(PARTITIONS) if hw[p] == 0}
    deadline = time.time() + 60
    while len(done) < PARTITIONS and time.time() < deadline:
        for m in c.consume(num_messages=1000, timeout=1):
            if m.error() is not None:
                if m.error().code() == KafkaError._PARTITION_EOF:
                    if m.offset() >= hw[m.partition()]:
                        done.add(m.partition())
                else:
                    log(f"verify consumer: {m.error()}")
                continue
            out[m.partition()].append((m.offset(), int(m.value())))
            if m.offset() + 1 >= hw[m.partition()]:
                done.add(m.partition())
    c.close()
    if len(done) < PARTITIONS:
        V.add("a", f"fresh consumer did not reach the high watermarks {hw} in 60 s "
                   f"(read {{p: len}} = {{{', '.join(f'{p}: {len(v)}' for p, v in out.items())}}})")
    return out, hw


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--topic", default="chaos")
    ap.add_argument("--duration", type=float, default=30.0)
    args = ap.parse_args()
    topic = args.topic
    brokers = cluster("bootstrap").split(",")  # node order: brokers[0] is node 1
    bootstrap = ",".join(brokers)
    admin = AdminClient({"bootstrap.servers": bootstrap})
    create_topic(admin, topic)

    producer = ProducerThread(bootstrap, topic)
    group = f"chaos-group-{random.randrange(1 << 30)}"
    consumer = GroupConsumerThread(bootstrap, topic, group)
    t_start = time.time()
    consumer.start()
    producer.start()

    def sleep_until(t):
        while time.time() < t:
            time.sleep(0.05)

    # Each step is timed from the end of the one before (a restart can take a while), and
    # producing goes on for at least 5 s after the last step.
    watches = []
    victim = paused = None
    try:
        sleep_until(t_start + 5)
        d = describe(admin, topic)
        if d is None:
            raise RuntimeError("no metadata for the chaos topic at t=5s")
        victim = d[0][0]
        if victim not in (1, 2, 3):
            raise RuntimeError(f"partition 0 has no leader at t=5s: {d}")
        log(f"leader of partition 0 is broker {victim}; kill -9")
        cluster("kill", victim)
        sleep_until(time.time() + 5)
        cluster("restart", victim)
        w = IsrWatch(brokers, topic, victim, "restarted")
        w.start()
        watches.append(w)
        sleep_until(time.time() + 2)
        d = describe(admin, topic) or {}
        candidates = [d[p][0] for p in (1, 2) if p in d and d[p][0] in (1, 2, 3) and d[p][0] != victim]
        paused = candidates[0] if candidates else next(b for b in (1, 2, 3) if b != victim)
        log(f"SIGSTOP broker {paused} (metadata {d})")
        cluster("pause", paused)
        sleep_until(time.time() + 8)
        cluster("resume", paused)
        w = IsrWatch(brokers, topic, paused, "resumed")
        w.start()
        watches.append(w)
        sleep_until(max(t_start + args.duration, time.time() + 5))
    except Exception as e:  # the chaos driver failed: still stop clients, report it
        V.add("chaos", f"schedule failed: {e}")
        if paused is not None:
            subprocess.run(["bash", CLUSTER_SH, "resume", str(paused)], capture_output=True)
    producer.stop.set()
    producer.join(120)
    if producer.fatal:
        V.add("producer", f"fatal producer error: {producer.fatal}")
    if getattr(producer, "unflushed", 0):
        V.add("producer", f"{producer.unflushed} records still unacknowledged after flush(90 s)")

    acked = dict(producer.acked)
    log(f"producer: sent {producer.sent}, acked {len(acked)}, failed {dict(producer.failed)}")

    # Let the group consumer drain: it must see every acknowledged record.
    want = {(p, o, s) for s, (p, o) in acked.items()}
    deadline = time.time() + 60
    missing = want
    while time.time() < deadline:
        seen = {(p, o, v) for p, recs in list(consumer.seen.items()) for o, v in list(recs)}
        missing = want - seen
        if not missing:
            break
        time.sleep(0.5)
    consumer.stop.set()
    consumer.join(60)
    seen = {(p, o, v) for p, recs in consumer.seen.items() for o, v in recs}
    missing = sorted(want - seen)
    if missing:
        V.add("c", f"group consumer never saw {len(missing)} acknowledged records, e.g. "
                   f"(partition, offset, value) {missing[:10]}")
    log(f"group consumer: consumed {consumer.consumed} (distinct {len(seen)}), commit errors "
        f"{dict(consumer.commit_errors)}, committed() errors {dict(consumer.committed_errors)}, "
        f"{len(consumer.history)} committed-offset samples")

    # b) committed offsets per partition never go backwards.
    last = {}
    for t, p, off in consumer.history:
        if p in last and off < last[p][1]:
            V.add("b", f"partition {p}: committed offset went back from {last[p][1]} (t={last[p][0]:.1f}s) "
                       f"to {off} (t={t:.1f}s)")
        last[p] = (t, off) if p not in last or off >= last[p][1] else last[p]
    final = {p: o for p, (_, o) in last.items()}
    log(f"group: last committed offsets {final}")
    if not consumer.history:
        V.add("b", "no committed offset was ever read back")

    # a) fresh read from the beginning.
    logrecs, hw = read_all(bootstrap, topic)
    log(f"fresh consumer: high watermarks {hw}, read {{{', '.join(f'{p}: {len(v)}' for p, v in sorted(logrecs.items()))}}}")
    by_pos = {}
    where = defaultdict(list)  # value -> [(partition, offset)]
    for p, recs in logrecs.items():
        prev = -1
        for off, val in recs:
            if off <= prev:
                V.add("a", f"partition {p}: offset {off} read after {prev} (out of order or twice)")
            elif off != prev + 1:
                V.add("a", f"partition {p}: offsets jump from {prev} to {off}")
            prev = off
            if (p, off) not in by_pos:
                by_pos[(p, off)] = val
                where[val].append((p, off))
    dups = {v: ps for v, ps in where.items() if len(ps) > 1}
    if dups:
        V.add("a", f"{len(dups)} values are in the log more than once, e.g. "
                   f"{dict(list(sorted(dups.items()))[:10])}")
    lost = [(s, p, o) for s, (p, o) in sorted(acked.items()) if (p, o) not in by_pos]
    if lost:
        V.add("a", f"{len(lost)} acknowledged records are missing from the log, e.g. "
                   f"(value, partition, offset) {lost[:10]}")
    moved = [(s, p, o, by_pos[(p, o)]) for s, (p, o) in sorted(acked.items())
             if (p, o) in by_pos and by_pos[(p, o)] != s]
    if moved:
        V.add("a", f"{len(moved)} acknowledged offsets hold another value, e.g. "
                   f"(value, partition, offset, found) {moved[:10]}")
    for p in range(PARTITIONS):
        order = [s for s, (pp, o) in sorted(acked.items(), key=lambda kv: kv[1]) if pp == p]
        bad = [(a, b) for a, b in zip(order, order[1:]) if b <= a]
        if bad:
            V.add("a", f"partition {p}: acknowledged values out of order by offset, e.g. {bad[:5]}")
    for s, (p, _) in acked.items():
        if p != s % PARTITIONS:
            V.add("a", f"value {s} acknowledged on partition {p}, produced to {s % PARTITIONS}")
            break

    # d) ISR rejoin.
    for w in watches:
        w.join(35)
        if w.took is None:
            V.add("d", f"{w.what} broker {w.broker} not in the ISR of every partition within 30 s; "
                       f"last answers (broker: metadata or error) {w.last}")
    for i, addr in enumerate(brokers):
        try:
            log(f"final metadata from broker {i + 1} (partition: (leader, replicas, isr)): "
                f"{kmeta.metadata(addr, topic)}")
        except (OSError, ValueError) as e:
            log(f"final metadata from broker {i + 1}: {e!r}")

    print()
    print(f"chaos summary: topic {topic}, {producer.sent} produced, {len(acked)} acknowledged, "
          f"{sum(producer.failed.values())} failed deliveries {dict(producer.failed)}; "
          f"killed broker {victim}, paused broker {paused}; log {sum(len(v) for v in logrecs.values())} "
          f"records, high watermarks {hw}; group saw {len(seen)} distinct, "
          f"last committed {final}; ISR rejoin "
          f"{', '.join(f'{w.what} {w.broker}: ' + (f'{w.took:.1f}s' if w.took is not None else 'NO') for w in watches)}")
    if V.items:
        print(f"{len(V.items)} violations:")
        for check, msg in V.items:
            print(f"  [{check}] {msg}")
        sys.exit(1)
    print("all checks held")


if __name__ == "__main__":
    main()
