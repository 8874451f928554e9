"""Reads Strata's /metrics (Prometheus text format) for the compat cases.

    prom.py value ADMIN NAME [label=value ...]   the sample with exactly these labels, or "absent"
    prom.py series ADMIN NAME...                 exit 1 naming any metric with no sample at all
    prom.py lag ADMIN GROUP                      "topic partition lag" per kafka_consumergroup_lag
    prom.py status ADMIN METHOD PATH             the HTTP status code
ADMIN is host:port of strata.admin.listeners.
"""
import re
import sys
import urllib.error
import urllib.request

SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)$')
LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


def samples(admin):
    with urllib.request.urlopen(f"http://{admin}/metrics", timeout=10) as r:
        text = r.read().decode()
    for line in text.splitlines():
        if line.startswith("#") or not line.strip():
            continue
        m = SAMPLE.match(line)
        if not m:
            raise SystemExit(f"unparsable line: {line!r}")
        labels = dict(LABEL.findall(m.group(2) or ""))
        yield m.group(1), labels, float(m.group(3))


def main(argv):
    cmd, admin = argv[1], argv[2]
    if cmd == "value":
        want = dict(a.split("=", 1) for a in argv[4:])
        for name, labels, v in samples(admin):
            if name == argv[3] and labels == want:
                print(int(v) if v == int(v) else v)
                return 0
        print("absent")
        return 0
    if cmd == "series":
        names = {n for n, _, _ in samples(admin)}
        missing = [n for n in argv[3:] if n not in names]
        if missing:
            print("missing series: " + " ".join(missing))
            return 1
        return 0
    if cmd == "lag":
        for name, labels, v in samples(admin):
            if name == "kafka_consumergroup_lag" and labels.get("group") == argv[3]:
                print(labels["topic"], labels["partition"], int(v))
        return 0
    if cmd == "status":
        req = urllib.request.Request(f"http://{admin}{argv[4]}", method=argv[3])
        try:
            with urllib.request.urlopen(req, timeout=10) as r:
                print(r.status)
        except urllib.error.HTTPError as e:
            print(e.code)
        return 0
    raise SystemExit(__doc__)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
