#!/usr/bin/env python3
"""Strata next to Apache Kafka over PLAINTEXT, SSL and SASL_SSL (SCRAM-SHA-512) (issue 13).

    compat-tests/.cache/venv/bin/python benches/secure_compare.py

Uses benches/compare.py's brokers, client tools and accounting (Broker, producer_perf,
consumer_perf, measured, proc_cpu_s, ...), so the figures are made exactly as compare.py's are.
Each broker gets three listeners on 127.0.0.1: PLAINTEXT (port P), SSL (P+2) and SASL_SSL
(P+3), where P = BENCH_SEC_KAFKA_PORT (29500; its KRaft controller on P+1) or
BENCH_SEC_STRATA_PORT (29550). TLS: a PEM keystore (key then X.509 v3 certificate with SAN
127.0.0.1, signed by a CA made with openssl in the run dir), the clients trust the CA through a
PEM truststore; TLS versions, cipher suites and everything else are each side's defaults. SASL:
SCRAM-SHA-512 only, the user created with Kafka's ConfigCommand (AlterUserScramCredentials)
over PLAINTEXT before anything is measured.

Runs alternate Kafka, Strata, Kafka, ... (BENCH_SEC_PAIRS pairs), each on a fresh data dir.
In each run: a warm-up produce and consume over every listener (not measured), then per listener
ProducerPerformance (1 KiB records, acks=1, compare.py's producer settings) onto its own new
1-partition topic; then per listener the same producer held to a fixed rate (BENCH_SEC_RATE
records/s) onto another new topic, so that every listener and both brokers carry the same load
with CPU to spare (at full speed the producer saturates the two cores, and what the broker
spends per GB then depends on how the cores were shared); then per listener
ConsumerPerformance of the first topic's records; each with the broker's CPU seconds per GB.
Odd runs take the listeners in the reverse order. In run 0 of each broker a short Java producer with
-Djavax.net.debug prints the TLS handshake, from which the negotiated version and cipher suite
are recorded.

Knobs: BENCH_SEC_PAIRS=2, BENCH_SEC_N=300000 (1 KiB records per measured run),
BENCH_SEC_RATE=30000 (records/s of the fixed-rate produce; 0 leaves it out),
BENCH_SEC_RATE_N (its records per listener; 10 s worth by default),
BENCH_SEC_WARMUP=100000 (1 KiB records per listener, not measured), BENCH_SEC_BROKERS=kafka,strata,
BENCH_SEC_KAFKA_PORT, BENCH_SEC_STRATA_PORT, STRATA_BIN (the broker binary, as for compare.py),
BENCH_KAFKA_HEAP (compare.py's), BENCH_WORK (run dir), BENCH_OUT (JSON path),
BENCH_SEC_SPLICE (a Markdown file whose <!-- secure-table:start/end --> block is replaced).
Writes benches/results/secure-<time>.json and .md; prints the JSON path.
"""

import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import time
import types

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import compare as C  # noqa: E402
from report import fmt  # noqa: E402

PAIRS = int(os.environ.get("BENCH_SEC_PAIRS", "2"))
N = int(os.environ.get("BENCH_SEC_N", "300000"))
WARMUP = int(os.environ.get("BENCH_SEC_WARMUP", "100000"))
RATE = int(os.environ.get("BENCH_SEC_RATE", "30000"))
RATE_N = int(os.environ.get("BENCH_SEC_RATE_N", str(RATE * 10)))
SIZE = 1024
PORTS = {"kafka": int(os.environ.get("BENCH_SEC_KAFKA_PORT", "29500")),
         "strata": int(os.environ.get("BENCH_SEC_STRATA_PORT", "29550"))}
PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_SSL")
OFFSET = {"PLAINTEXT": 0, "SSL": 2, "SASL_SSL": 3}  # +1 is Kafka's controller
USER, PASSWORD = "bench", "bench-secret"


def log(*a):
    print("[secure]", *a, file=sys.stderr, flush=True)


def make_certs(d):
    """CA, and a broker certificate (X.509 v3, SAN 127.0.0.1 and localhost) signed by it;
    broker.keystore.pem = unencrypted PKCS#8 key then certificate."""
    if os.path.exists(os.path.join(d, "broker.keystore.pem")):
        return d
    os.makedirs(d, exist_ok=True)

    def sh(*cmd):
        subprocess.run(cmd, cwd=d, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    sh("openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
       "-subj", "/CN=bench-ca", "-keyout", "ca.key", "-out", "ca.pem")
    sh("openssl", "req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=broker",
       "-keyout", "broker.key", "-out", "broker.csr")
    with open(os.path.join(d, "broker.ext"), "w") as f:
        f.write("basicConstraints=CA:FALSE\nkeyUsage=digitalSignature,keyEncipherment\n"
                "extendedKeyUsage=serverAuth\nsubjectAltName=IP:127.0.0.1,DNS:localhost\n")
    sh("openssl", "x509", "-req", "-in", "broker.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
       "-CAcreateserial", "-days", "2", "-extfile", "broker.ext", "-out", "broker.pem")
    with open(os.path.join(d, "broker.keystore.pem"), "w") as f:
        f.write(open(os.path.join(d, "broker.key")).read())
        f.write(open(os.path.join(d, "broker.pem")).read())
    return d


def broker_props(kind, certs):
    props = {"ssl.keystore.type": "PEM",
             "ssl.keystore.location": os.path.join(certs, "broker.keystore.pem"),
             "sasl.enabled.mechanisms": "SCRAM-SHA-512"}
    if kind == "kafka":
        props["listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config"] = (
            "org.apache.kafka.common.security.scram.ScramLoginModule required;")
    return props


def client_config(proto, certs):
    """Security lines of a Java client's properties for one listener ("" for PLAINTEXT)."""
    if proto == "PLAINTEXT":
        return ""
    s = (f"security.protocol={proto}\nssl.truststore.type=PEM\n"
         f"ssl.truststore.location={os.path.join(certs, 'ca.pem')}\n")
    if proto == "SASL_SSL":
        s += ("sasl.mechanism=SCRAM-SHA-512\nsasl.jaas.config=org.apache.kafka.common.security."
              f'scram.ScramLoginModule required username="{USER}" password="{PASSWORD}";\n')
    return s


def via(b, proto):
    """compare.py's client helpers read .addr, .pid and .dir: the same broker seen through
    one of its listeners."""
    return types.SimpleNamespace(addr=f"127.0.0.1:{b.port + OFFSET[proto]}", pid=b.pid,
                                 dir=b.dir, port=b.port + OFFSET[proto])


def add_scram_user(b):
    out, err, _ = C.java_tool("kafka.admin.ConfigCommand", [
        "--bootstrap-server", b.addr, "--alter", "--entity-type", "users", "--entity-name", USER,
        "--add-config", f"SCRAM-SHA-512=[iterations=4096,password={PASSWORD}]"])
    return (out + err).strip()[-300:]


HS_RE = re.compile(r'"ServerHello".*?"server version"\s*:\s*"([^"]+)".*?"cipher suite"\s*:\s*"([^"]+)"',
                   re.S)
SV_RE = re.compile(r'"supported_versions \(\d+\)"\s*:\s*\{\s*"selected version"\s*:\s*\[([^\]]+)\]')


def negotiated(view, cfg_file):
    """A 10-record Java producer with -Djavax.net.debug=ssl:handshake: the ServerHello's
    cipher suite and selected version as the Java client saw them."""
    cmd = ["java", *C.CLIENT_HEAP, "-Djavax.net.debug=ssl:handshake", "-cp", C.LIBS + "/*",
           f"-Dlog4j2.configurationFile={C.LOG4J_TOOLS}",
           "org.apache.kafka.tools.ProducerPerformance", "--topic", "tls-probe",
           "--num-records", "10", "--record-size", "100", "--throughput", "-1",
           "--producer-props", f"bootstrap.servers={view.addr}", "acks=1",
           "--producer.config", cfg_file]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    text = p.stdout + p.stderr
    m = HS_RE.search(text)
    if not m:
        return {"error": f"no ServerHello in the debug output (rc {p.returncode})"}
    v = SV_RE.search(text[m.start():])
    return {"cipher_suite": m.group(2),
            "version": v.group(1).strip() if v else m.group(1)}


def one_run(kind, idx, certs):
    port = PORTS[kind]
    b = C.Broker(kind, os.path.join(C.WORK, f"secure-{kind}-{idx}"), port=port,
                 listeners=[(p, port + OFFSET[p]) for p in PROTOCOLS if p != "PLAINTEXT"],
                 extra_props=broker_props(kind, certs))
    out = {"broker": kind, "run": idx, "scenarios": {}}
    sc = out["scenarios"]

    def step(name, fn):
        log(f"{kind}#{idx} {name}")
        try:
            sc[name] = fn()
        except Exception as e:  # a failed scenario is recorded, not fatal
            log(f"{kind}#{idx} {name} FAILED: {e}")
            sc[name] = {"error": str(e)[:500]}
        return sc[name]

    try:
        st = b.start()
        out["start_to_first_produce_s"] = st
        out["scram_user"] = add_scram_user(b)
        time.sleep(1)
        cfgs = {}
        for proto in PROTOCOLS:
            cfgs[proto] = os.path.join(b.dir, f"client-{proto}.properties")
            with open(cfgs[proto], "w") as f:
                f.write(client_config(proto, certs))
        # Warm-up over each listener (JIT of the TLS and SASL paths for Kafka); not reported.
        for proto in PROTOCOLS:
            C.create_topic(b, f"warmup-{proto.lower()}", 1)
            for attempt in range(2):
                try:
                    C.producer_perf(via(b, proto), f"warmup-{proto.lower()}", WARMUP, SIZE, "1",
                                    config_file=cfgs[proto])
                    break
                except Exception as e:
                    log(f"{kind}#{idx} warm-up {proto} failed ({e}); " +
                        ("retrying" if attempt == 0 else "going on"))
                    time.sleep(2)
        # The consumer side warmed up as well: the warm-up topics read over each listener.
        for proto in PROTOCOLS:
            try:
                C.consumer_perf(via(b, proto), f"warmup-{proto.lower()}", WARMUP, SIZE,
                                extra_config=client_config(proto, certs))
            except Exception as e:
                log(f"{kind}#{idx} consumer warm-up {proto} failed ({e}); going on")
        if idx == 0:
            out["tls"] = {p: negotiated(via(b, p), cfgs[p]) for p in PROTOCOLS if p != "PLAINTEXT"}
            log(f"{kind}#{idx} negotiated {out['tls']}")
        # Odd runs take the listeners in the reverse order, so that no listener is always the
        # first measured (or the last, on a broker that has run longest).
        order = PROTOCOLS if idx % 2 == 0 else tuple(reversed(PROTOCOLS))
        out["order"] = list(order)
        for proto in order:
            t = f"sec-{proto.lower()}"
            C.create_topic(b, t, 1)
            step(f"produce_{proto}", lambda t=t, proto=proto: C.producer_perf(
                via(b, proto), t, N, SIZE, "1", config_file=cfgs[proto]))
        for proto in order if RATE > 0 else ():
            t = f"sec-rate-{proto.lower()}"
            C.create_topic(b, t, 1)
            step(f"produce_rate_{proto}", lambda t=t, proto=proto: C.producer_perf(
                via(b, proto), t, RATE_N, SIZE, "1", throughput=RATE, config_file=cfgs[proto]))
        for proto in order:
            step(f"consume_{proto}", lambda proto=proto: C.consumer_perf(
                via(b, proto), f"sec-{proto.lower()}", N, SIZE,
                extra_config=client_config(proto, certs)))
        out["total_cpu_s"] = C.proc_cpu_s(b.pid)
    except Exception as e:
        log(f"{kind}#{idx} run FAILED: {e}")
        out["error"] = str(e)[:500]
    finally:
        b.stop()
        shutil.rmtree(os.path.join(b.dir, "data"), ignore_errors=True)
    return out


# ---------------------------------------------------------------- report

def vals(runs, kind, scen, metric):
    return [r["scenarios"][scen][metric] for r in runs if r["broker"] == kind
            and isinstance(r.get("scenarios", {}).get(scen, {}).get(metric), (int, float))]


def med(v):
    return statistics.median(v) if v else None


def cell(v):
    if not v:
        return "— (0)"
    if len(v) == 1:
        return f"{fmt(v[0])} (1)"
    return f"{fmt(statistics.median(v))} [{fmt(min(v))}–{fmt(max(v))}] ({len(v)})"


def ratio(a, b):
    return fmt(a / b) if a is not None and b not in (None, 0) else "—"


def table(res):
    runs = res["runs"]
    p = res["params"]
    kafka_v = res["machine"].get("kafka", "")
    lines = [f"Generated by `benches/secure_compare.py` from `{os.path.basename(res['_path'])}`: "
             f"{p['pairs']} pairs (Kafka, Strata alternating, fresh data dir each), Kafka "
             f"{kafka_v} heap `{p['kafka_heap']}`, Strata {res['machine'].get('strata_commit')} "
             f"(`{p['strata_bin']}`); {p['n']:,} × 1 KiB records per run, acks=1, "
             f"linger.ms={p['linger_ms']} batch.size={p['batch_size']}; warm-up {p['warmup']:,} "
             "records per listener; fixed-rate produce: "
             f"{p.get('rate_n', 0):,} records at {p.get('rate', 0):,} records/s per listener. "
             "Cells: median [min–max] (n).", "",
             "| Figure | Listener | Kafka | Strata | Strata/Kafka |", "|---|---|---|---|---|"]
    figs = [("produce", "records_per_s", "Produce, records/s"),
            ("produce", "mb_per_s", "Produce, MB/s"),
            ("produce", "lat_p99_ms", "Produce, p99 ack latency (ms)"),
            ("produce", "broker_cpu_s_per_gb", "Produce, broker CPU s per GB"),
            ("produce_rate", "records_per_s", "Produce at a fixed rate, records/s"),
            ("produce_rate", "lat_p99_ms", "Produce at a fixed rate, p99 ack latency (ms)"),
            ("produce_rate", "broker_cpu_s_per_gb", "Produce at a fixed rate, broker CPU s per GB"),
            ("produce_rate", "machine_busy_cores", "Produce at a fixed rate, machine busy cores"),
            ("consume", "records_per_s", "Consume, records/s"),
            ("consume", "mb_per_s", "Consume, MB/s"),
            ("consume", "broker_cpu_s_per_gb", "Consume, broker CPU s per GB"),
            ("produce", "machine_busy_cores", "Produce, machine busy cores"),
            ("consume", "machine_busy_cores", "Consume, machine busy cores")]
    for what, metric, label in figs:
        for proto in PROTOCOLS:
            k = vals(runs, "kafka", f"{what}_{proto}", metric)
            s = vals(runs, "strata", f"{what}_{proto}", metric)
            if not k and not s:
                continue
            lines.append(f"| {label} | {proto} | {cell(k)} | {cell(s)} | {ratio(med(s), med(k))} |")
    lines += ["", "TLS overhead per broker: median broker CPU s per GB over the listener divided "
              "by the median over PLAINTEXT (1.00 = TLS costs nothing). Issue 13's target is that "
              "TLS costs Strata less CPU per GB than it costs Kafka; both readings are shown. "
              "Per-run factors (each run's own PLAINTEXT as the base) in brackets. Beside it the same in absolute terms: median CPU s per GB over "
              "the listener minus the median over PLAINTEXT (what TLS adds per GB), and whether "
              "TLS adds less to Strata than to Kafka.", "",
              "| CPU per GB, listener / PLAINTEXT | Kafka | Strata | Strata factor < Kafka factor "
              "| Kafka: added CPU s/GB | Strata: added CPU s/GB | Strata adds less |",
              "|---|---|---|---|---|---|---|"]
    names = {"produce": "Produce", "produce_rate": "Produce at a fixed rate",
             "consume": "Consume"}
    for what in ("produce", "produce_rate", "consume"):
        for proto in ("SSL", "SASL_SSL"):
            row = [f"{names[what]}, {proto} / PLAINTEXT"]
            fac, add = {}, {}
            for kind in ("kafka", "strata"):
                a = med(vals(runs, kind, f"{what}_{proto}", "broker_cpu_s_per_gb"))
                base = med(vals(runs, kind, f"{what}_PLAINTEXT", "broker_cpu_s_per_gb"))
                fac[kind] = a / base if a is not None and base else None
                add[kind] = a - base if a is not None and base is not None else None
                per = []
                for r in runs:
                    if r["broker"] != kind:
                        continue
                    x = r.get("scenarios", {}).get(f"{what}_{proto}", {}).get("broker_cpu_s_per_gb")
                    y = r.get("scenarios", {}).get(f"{what}_PLAINTEXT", {}).get("broker_cpu_s_per_gb")
                    if x and y:
                        per.append(fmt(x / y))
                row.append(f"{fmt(fac[kind])} [{', '.join(per)}]")
            if None in fac.values() or None in add.values():
                continue  # e.g. an older result without the fixed-rate produce
            met = "yes" if fac["strata"] < fac["kafka"] else "no"
            less = "yes" if add["strata"] < add["kafka"] else "no"
            row += [met, fmt(add["kafka"]), fmt(add["strata"]), less]
            lines.append("| " + " | ".join(row) + " |")
    tls = {r["broker"]: r["tls"] for r in runs if r.get("tls")}
    if tls:
        lines += ["", "Negotiated by the Java client (run 0, `-Djavax.net.debug=ssl:handshake`): " +
                  "; ".join(f"{k}: " + ", ".join(
                      f"{p} {v.get('version', '?')} {v.get('cipher_suite', v.get('error'))}"
                      for p, v in t.items()) for k, t in tls.items()) + "."]
    errs = [f"{r['broker']}#{r['run']} {n}: {v['error'][:120]}" for r in runs
            for n, v in r.get("scenarios", {}).items() if isinstance(v, dict) and "error" in v]
    errs += [f"{r['broker']}#{r['run']}: {r['error'][:200]}" for r in runs if r.get("error")]
    if errs:
        lines += ["", "Failures: " + "; ".join(errs) + "."]
    return "\n".join(lines) + "\n"


def splice(target, md, marker="secure-table"):
    start, end = f"<!-- {marker}:start -->", f"<!-- {marker}:end -->"
    text = open(target).read()
    if start in text and end in text:
        a, b = text.index(start) + len(start), text.index(end)
        open(target, "w").write(text[:a] + "\n" + md + text[b:])


def main():
    if len(sys.argv) > 1:  # report only: secure_compare.py results.json
        res = json.load(open(sys.argv[1]))
        res["_path"] = sys.argv[1]
        md = table(res)
        open(os.path.splitext(sys.argv[1])[0] + ".md", "w").write(md)
        if os.environ.get("BENCH_SEC_SPLICE"):
            splice(os.environ["BENCH_SEC_SPLICE"], md)
        print(md)
        return
    os.makedirs(C.WORK, exist_ok=True)
    os.makedirs(os.path.join(C.HERE, "results"), exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    path = os.environ.get("BENCH_OUT", os.path.join(C.HERE, "results", f"secure-{stamp}.json"))
    certs = make_certs(os.path.join(C.WORK, "secure-certs"))
    uptime = lambda: subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    res = {"machine": C.machine_info(), "params": {
        "pairs": PAIRS, "n": N, "warmup": WARMUP, "rate": RATE, "rate_n": RATE_N, "record_size": SIZE, "acks": "1",
        "kafka_heap": " ".join(C.KAFKA_HEAP), "linger_ms": C.LINGER_MS,
        "batch_size": C.BATCH_SIZE, "strata_bin": C.STRATA_BIN, "ports": PORTS,
        "nice": os.nice(0)}, "uptime_before": uptime(), "runs": []}
    t0 = time.monotonic()
    for i in range(PAIRS):
        for kind in os.environ.get("BENCH_SEC_BROKERS", "kafka,strata").split(","):
            res["runs"].append(one_run(kind, i, certs))
            with open(path, "w") as f:
                json.dump(res, f, indent=1)
    res["uptime_after"] = uptime()
    res["duration_s"] = time.monotonic() - t0
    with open(path, "w") as f:
        json.dump(res, f, indent=1)
    res["_path"] = path
    md = table(res)
    open(os.path.splitext(path)[0] + ".md", "w").write(md)
    if os.environ.get("BENCH_SEC_SPLICE"):
        splice(os.environ["BENCH_SEC_SPLICE"], md)
    log("results in", path)
    print(path)


if __name__ == "__main__":
    main()
