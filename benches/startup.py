#!/usr/bin/env python3
"""Start of the process to the first acknowledged produce, Kafka next to Strata (issue 15).

    compat-tests/.cache/venv/bin/python benches/startup.py

compare.py's `Broker.start` (a confluent-kafka producer retrying every 5-10 ms, the topic
auto-created), fresh data dir each, BENCH_START_ROUNDS (3) rounds alternating Kafka and
Strata; prints one Markdown row per broker in milliseconds.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import compare as C  # noqa: E402

ROUNDS = int(os.environ.get("BENCH_START_ROUNDS", "3"))


def main():
    times = {"kafka": [], "strata": []}
    for _ in range(ROUNDS):
        for kind in times:
            b = C.Broker(kind, os.path.join(C.WORK, f"startup-{kind}"))
            times[kind].append(b.start() * 1000)
            b.stop()
    for kind, ms in times.items():
        print(f"| {kind.capitalize()} (ms) | " + " | ".join(f"{t:,.1f}" for t in ms) + " |")


if __name__ == "__main__":
    main()
