"""confluent-kafka's idempotent producer across a kill -9 of Strata.
    python restart_clients.py STRATA_BIN DIR TOPIC      exit 0 = pass

The client talks to the broker through a small TCP proxy (the broker advertises the proxy's
address), which can drop the broker's Produce responses while passing every other response.
So: 100 records are produced and acknowledged normally; then 100 more are produced while
their responses are dropped, so the broker has written them but librdkafka has no answer;
the broker is killed with SIGKILL and restarted on the same data; librdkafka reconnects and
retries those batches with the same producer id, epoch and sequence numbers. Strata rebuilds
producer state from the log, so the retries must be answered with their original offsets
and not written again: the partition ends with exactly 200 records, offsets 0..199, each
value once (a broker without deduplication across the restart stores 300).
"""
import os, signal, socket, struct, subprocess, sys, threading, time

STRATA, DIR, TOPIC = sys.argv[1], sys.argv[2], sys.argv[3]


def fail(msg):
    print("ASSERTION FAILED:", msg, file=sys.stderr)
    sys.exit(1)


def spare_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


BROKER_PORT, PROXY_PORT = spare_port(), spare_port()


class Proxy:
    """Forwards whole frames; while `drop_produce_responses` is set, the responses to Produce
    requests (api key 0) sent from then on are read from the broker and thrown away."""

    def __init__(self, listen_port, target_port):
        self.target_port = target_port
        self.drop_produce_responses = False
        self.dropped = 0
        self.srv = socket.socket()
        self.srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.srv.bind(("127.0.0.1", listen_port))
        self.srv.listen(64)
        threading.Thread(target=self.accept_loop, daemon=True).start()

    def accept_loop(self):
        while True:
            client, _ = self.srv.accept()
            try:
                broker = socket.create_connection(("127.0.0.1", self.target_port))
            except OSError:
                client.close()
                continue
            doomed = set()  # correlation ids whose responses are dropped
            threading.Thread(target=self.pump, args=(client, broker, doomed, True), daemon=True).start()
            threading.Thread(target=self.pump, args=(broker, client, doomed, False), daemon=True).start()

    @staticmethod
    def read_exact(sock, n):
        buf = b""
        while len(buf) < n:
            chunk = sock.recv(n - len(buf))
            if not chunk:
                return None
            buf += chunk
        return buf

    def pump(self, src, dst, doomed, requests):
        try:
            while True:
                size = self.read_exact(src, 4)
                if size is None:
                    break
                body = self.read_exact(src, struct.unpack(">i", size)[0])
                if body is None:
                    break
                if requests:
                    api_key, _, corr = struct.unpack(">hhi", body[:8])
                    if api_key == 0 and self.drop_produce_responses:
                        doomed.add(corr)
                else:
                    corr = struct.unpack(">i", body[:4])[0]
                    if corr in doomed:
                        doomed.discard(corr)
                        self.dropped += 1
                        continue
                dst.sendall(size + body)
        except OSError:
            pass
        # One side gone: close both, as a broker that died would look to the client.
        for s in (src, dst):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            s.close()


def start_broker():
    os.makedirs(DIR, exist_ok=True)
    log = open(os.path.join(DIR, "broker.log"), "ab")
    p = subprocess.Popen([STRATA, "--override", f"listeners=PLAINTEXT://127.0.0.1:{BROKER_PORT}",
                          "--override", f"advertised.listeners=PLAINTEXT://127.0.0.1:{PROXY_PORT}",
                          "--override", "strata.admin.listeners=",
                          "--override", f"log.dirs={DIR}/data"], stdout=log, stderr=log)
    deadline = time.time() + 30
    while time.time() < deadline:
        try:
            socket.create_connection(("127.0.0.1", BROKER_PORT), timeout=1).close()
            return p
        except OSError:
            if p.poll() is not None:
                fail("strata exited at start-up")
            time.sleep(0.05)
    fail("strata did not start")


def main():
    from confluent_kafka import Consumer, Producer, TopicPartition, OFFSET_BEGINNING
    from confluent_kafka.admin import AdminClient, NewTopic

    broker = start_broker()
    proxy = Proxy(PROXY_PORT, BROKER_PORT)
    bootstrap = f"127.0.0.1:{PROXY_PORT}"
    try:
        admin = AdminClient({"bootstrap.servers": bootstrap})
        admin.create_topics([NewTopic(TOPIC, 1, 1)], operation_timeout=30)[TOPIC].result()

        errors, delivered = [], []

        def on_delivery(err, msg):
            if err:
                errors.append(err)
            else:
                delivered.append((msg.offset(), msg.value()))

        p = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "acks": "all",
                      "linger.ms": 50, "batch.num.messages": 1000, "message.timeout.ms": 120000,
                      "retry.backoff.ms": 100, "reconnect.backoff.ms": 100,
                      "reconnect.backoff.max.ms": 500})
        for i in range(100):
            p.produce(TOPIC, value=f"before-{i}".encode(), partition=0, on_delivery=on_delivery)
        if p.flush(30) != 0 or errors or len(delivered) != 100:
            fail(f"phase 1: {len(delivered)} delivered, errors {errors[:3]}")

        # Phase 2: the broker writes these, the client never hears back. One batch: with a
        # Produce response outstanding, librdkafka 2.16 sent no further batch for the partition
        # in our runs, so smaller batches would leave most records unsent until the restart.
        proxy.drop_produce_responses = True
        for i in range(100):
            p.produce(TOPIC, value=f"during-{i}".encode(), partition=0, on_delivery=on_delivery)
        c = Consumer({"bootstrap.servers": bootstrap, "group.id": "unused", "enable.auto.commit": False})
        deadline, high = time.time() + 30, 0
        while time.time() < deadline:
            p.poll(0.1)
            high = c.get_watermark_offsets(TopicPartition(TOPIC, 0), timeout=5)[1]
            if high >= 200:
                break
        c.close()
        if high != 200 or len(delivered) != 100:
            fail(f"phase 2: broker high watermark {high} (want 200), {len(delivered)} delivered (want 100)")
        print(f"broker wrote 200 records; {proxy.dropped} produce responses dropped; killing it")

        # kill -9 and restart on the same data; the proxy now passes everything.
        broker.send_signal(signal.SIGKILL)
        broker.wait()
        proxy.drop_produce_responses = False
        broker = start_broker()
        if p.flush(60) != 0:
            fail("flush after restart timed out")
        if errors:
            fail(f"delivery errors after restart: {errors[:3]}")
        if len(delivered) != 200:
            fail(f"{len(delivered)} delivered, want 200")
        retried = sorted(o for o, v in delivered if v.startswith(b"during-"))
        if retried != list(range(100, 200)):
            fail(f"retried records acknowledged at {retried[:5]}..., want 100..199")

        c = Consumer({"bootstrap.servers": bootstrap, "group.id": "unused", "enable.auto.commit": False})
        c.assign([TopicPartition(TOPIC, 0, OFFSET_BEGINNING)])
        got, deadline = [], time.time() + 30
        while time.time() < deadline:
            m = c.poll(0.5)
            if m is None:
                if len(got) >= 200:
                    break
                continue
            if m.error():
                fail(f"consume error: {m.error()}")
            got.append((m.offset(), m.value()))
        c.close()
        want = [(i, f"before-{i}".encode()) for i in range(100)] + \
               [(100 + i, f"during-{i}".encode()) for i in range(100)]
        if got != want:
            fail(f"partition holds {len(got)} records ({len(set(v for _, v in got))} distinct), "
                 f"want exactly 200 in order; first difference at "
                 f"{next((i for i, (a, b) in enumerate(zip(got, want)) if a != b), min(len(got), 200))}")
        print("idempotent retries across kill -9: 200 records, offsets 0..199, no duplicates")
    finally:
        broker.send_signal(signal.SIGTERM)
        broker.wait()


main()
