"""Measures a client held by a byte-rate quota (issue 13's quota test), with confluent-kafka.

  quota_rate.py produce BOOTSTRAP TOPIC CLIENT_ID WARMUP_S MEASURE_S
      produces 10 KB messages as fast as the client allows; prints the acknowledged bytes per
      second between WARMUP_S and WARMUP_S + MEASURE_S
  quota_rate.py consume BOOTSTRAP TOPIC CLIENT_ID WARMUP_S MEASURE_S
      consumes the topic from the start; prints the consumed bytes per second in that span

Output: one JSON line {"rate": bytes/s, "bytes": n, "seconds": s, "throttle_events": n,
"max_throttle_ms": n}; throttle events are librdkafka's throttle_cb calls, one per response
carrying a non-zero throttle_time_ms.
"""
import json
import sys
import time

from confluent_kafka import Consumer, Producer


def main():
    mode, bootstrap, topic, client_id = sys.argv[1:5]
    warmup, measure = float(sys.argv[5]), float(sys.argv[6])
    throttles = []

    def on_throttle(event):
        throttles.append(event.throttle_time * 1000.0)

    common = {
        "bootstrap.servers": bootstrap,
        "client.id": client_id,
        "throttle_cb": on_throttle,
    }
    counted = [0]
    t0 = time.monotonic()
    start, end = t0 + warmup, t0 + warmup + measure

    def count(n):
        now = time.monotonic()
        if start <= now < end:
            counted[0] += n

    if mode == "produce":
        p = Producer({**common, "linger.ms": 5, "acks": "all", "queue.buffering.max.kbytes": 4096})
        payload = b"x" * 10_000

        def on_delivery(err, msg):
            if err is None:
                count(len(msg.value()))

        while time.monotonic() < end:
            try:
                p.produce(topic, payload, on_delivery=on_delivery)
            except BufferError:
                p.poll(0.05)
                continue
            p.poll(0)
        p.flush(30)
    else:
        c = Consumer({**common, "group.id": f"quota-{client_id}", "auto.offset.reset": "earliest",
                      "enable.auto.commit": False})
        c.subscribe([topic])
        while time.monotonic() < end:
            msg = c.poll(0.2)
            if msg is not None and msg.error() is None:
                count(len(msg.value()))
        c.close()
    print(json.dumps({
        "rate": counted[0] / measure,
        "bytes": counted[0],
        "seconds": measure,
        "throttle_events": len(throttles),
        "max_throttle_ms": max(throttles, default=0),
    }))


if __name__ == "__main__":
    main()
