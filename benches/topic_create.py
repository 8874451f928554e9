#!/usr/bin/env python3
"""Topic creation time, Strata next to Kafka (issue 15).

    compat-tests/.cache/venv/bin/python benches/topic_create.py [kafka,strata]

For each broker (compare.py's Broker, fresh data dir), BENCH_TC_ROUNDS times: create topics of
100, 1,000 and 10,000 partitions (replication factor 1; at most 5,000 per CreateTopics, the rest
by CreatePartitions, as compare.py does for Kafka's per-operation record limit) and report two
times: until the admin client's answer, and until Metadata shows a leader for every partition.
Kafka answers once its controller has committed the records and creates the logs afterwards;
Strata answers after its broker has created them.
"""
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import compare as C  # noqa: E402

ROUNDS = int(os.environ.get("BENCH_TC_ROUNDS", "2"))
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
            return answered, time.monotonic() - t
        time.sleep(0.005)


def main():
    kinds = (sys.argv[1] if len(sys.argv) > 1 else "kafka,strata").split(",")
    for rnd in range(ROUNDS):
        for kind in kinds if rnd % 2 == 0 else list(reversed(kinds)):
            b = C.Broker(kind, os.path.join(C.WORK, f"topic-create-{kind}"))
            b.start()
            try:
                for n in SIZES:
                    answered, leaders = create(b.addr, f"t{n}", n)
                    print(f"| {kind} | {rnd} | {n:,} | {answered:.3f} | {leaders:.3f} |",
                          flush=True)
            finally:
                b.stop()


if __name__ == "__main__":
    main()
