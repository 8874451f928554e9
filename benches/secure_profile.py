#!/usr/bin/env python3
"""`perf record -g` on a Strata broker while Kafka's ProducerPerformance produces over one
listener at a fixed rate, with secure_compare.py's certificates, settings and SCRAM user: how
the TLS produce profile in BENCHMARKS.md ("Runs of 4 December 2026, at a fixed rate") was made.

    compat-tests/.cache/venv/bin/python benches/secure_profile.py SSL 30000 300000
    perf report -i benches/.work/secure-profile-SSL.data --no-children --sort sym --stdio -g none

Arguments: listener (PLAINTEXT, SSL or SASL_SSL), records/s, records (1 KiB each). Prints the
broker's CPU seconds per GB of the profiled run. The broker is the profiling build, which has
the symbols and line tables perf needs (the release profile has none):
`cargo build --profile profiling --bin strata`; STRATA_BIN overrides it.
"""

import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
os.environ.setdefault("STRATA_BIN", os.path.join(HERE, "..", "target", "profiling", "strata"))
sys.path.insert(0, HERE)
import compare as C  # noqa: E402
import secure_compare as S  # noqa: E402


def main():
    proto, rate, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    if not os.path.exists(C.STRATA_BIN):
        sys.exit(f"no {C.STRATA_BIN}: build it with `cargo build --profile profiling --bin strata`")
    certs = S.make_certs(os.path.join(C.WORK, "secure-certs"))
    port = S.PORTS["strata"]
    b = C.Broker("strata", os.path.join(C.WORK, "secure-profile"), port=port,
                 listeners=[(p, port + S.OFFSET[p]) for p in S.PROTOCOLS if p != "PLAINTEXT"],
                 extra_props=S.broker_props("strata", certs))
    b.start()
    try:
        S.add_scram_user(b)
        time.sleep(1)
        cfg = os.path.join(b.dir, f"client-{proto}.properties")
        with open(cfg, "w") as f:
            f.write(S.client_config(proto, certs))
        C.create_topic(b, "warmup", 1)
        C.producer_perf(S.via(b, proto), "warmup", 100000, S.SIZE, "1", config_file=cfg)
        C.create_topic(b, "profiled", 1)
        data = os.path.join(C.WORK, f"secure-profile-{proto}.data")
        perf = subprocess.Popen(["perf", "record", "-F", "2000", "-g", "-p", str(b.pid),
                                 "-o", data], stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
        time.sleep(1)
        r = C.producer_perf(S.via(b, proto), "profiled", n, S.SIZE, "1", throughput=rate,
                            config_file=cfg)
        perf.send_signal(2)
        perf.wait()
        print(f"{proto}: {r['broker_cpu_s_per_gb']:.2f} broker CPU-s/GB at "
              f"{r['records_per_s']:.0f} records/s; profile in {data}")
    finally:
        b.stop()


if __name__ == "__main__":
    main()
