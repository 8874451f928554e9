"""Tiny admin helper used by the bash tests (librdkafka admin API)."""
import sys, os
from confluent_kafka.admin import AdminClient, NewTopic

def main():
    bs = os.environ.get("BOOTSTRAP", "127.0.0.1:9092")
    a = AdminClient({"bootstrap.servers": bs})
    cmd = sys.argv[1]
    if cmd == "create":
        name, parts = sys.argv[2], int(sys.argv[3])
        fs = a.create_topics([NewTopic(name, num_partitions=parts, replication_factor=1)],
                             operation_timeout=30, request_timeout=30)
        fs[name].result()
        # wait until metadata shows all partitions with a leader
        import time
        for _ in range(100):
            md = a.list_topics(name, timeout=10)
            t = md.topics.get(name)
            if t and t.error is None and len(t.partitions) == parts and all(p.leader >= 0 for p in t.partitions.values()):
                return
            time.sleep(0.1)
        sys.exit(f"topic {name} not ready")
    elif cmd == "delete":
        fs = a.delete_topics(sys.argv[2:], operation_timeout=30)
        for f in fs.values():
            f.result()
    else:
        sys.exit("usage: admin.py create NAME PARTITIONS | delete NAME...")

if __name__ == "__main__":
    main()
