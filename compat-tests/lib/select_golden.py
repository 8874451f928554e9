#!/usr/bin/env python3
"""Pick a small representative set of captured request frames into golden/.

    select_golden.py CAPTURE_DIR GOLDEN_DIR [--budget-kb 300]

Rules: (1) for every (client, api_key, api_version) seen, the smallest frame;
(2) for Produce, additionally the smallest frame of every codec round-trip case
(so each client's gzip/snappy/lz4/zstd record batches are covered), up to 24 KB
each. Writes the .bin and .provenance files and GOLDEN_DIR/PROVENANCE.md.
"""
import argparse, glob, os, re, shutil, sys

# What each suite case runs (the "command" column of PROVENANCE.md).
CASE_COMMANDS = {
    "java.topics.create": "kafka-topics --create --partitions 3 (org.apache.kafka.tools.TopicCommand)",
    "java.topics.list": "kafka-topics --list",
    "java.topics.describe": "kafka-topics --describe --topic T",
    "java.topics.alter-partitions": "kafka-topics --alter --partitions 4",
    "java.topics.delete": "kafka-topics --delete",
    "java.console.roundtrip-10k": "kafka-console-producer < 10000 lines; kafka-console-consumer --partition 0 --offset earliest --max-messages 10000",
    "java.console.keys-gzip": "kafka-console-producer --property parse.key=true --compression-codec gzip; kafka-console-consumer --property print.key=true",
    "java.configs.alter-describe": "kafka-configs --describe / --alter --add-config retention.ms=1000 / --delete-config (kafka.admin.ConfigCommand)",
    "java.perf.producer": "kafka-producer-perf-test --num-records 50000 --record-size 100 acks=all",
    "java.groups.console-share": "2 x kafka-console-consumer --group G on a 4-partition topic; kafka-consumer-groups --describe --members",
    "java.groups.describe-lag": "kafka-console-consumer --group G --max-messages 40; kafka-consumer-groups --list / --describe",
    "java.groups.consumer-perf": "kafka-consumer-perf-test --messages 50000",
    "kcat.produce-consume-keys": "kcat -P -K: -z snappy; kcat -C -e -o beginning -f '%k:%s'",
    "kcat.headers-tail": "kcat -P -H h1=a -H h1=b -H h2=c; kcat -C -o -2 -e",
    "kcat.metadata": "kcat -L; kcat -L -J -t T",
    "kcat.query-offsets": "kcat -P; kcat -Q -t T:0:-1",
    "confluent.admin": "AdminClient create_topics / list_topics / create_partitions / describe_configs / delete_topics",
    "confluent.idempotent": "Producer(enable.idempotence=True) 3000 records over 3 partitions; Consumer.assign",
    "confluent.groups.subscribe-commit": "Consumer(group.id).subscribe; commit(); committed()",
    "kafka-python.groups.subscribe-commit": "KafkaConsumer(topic, group_id=G); commit()",
    "kafkajs.groups.consumer-run": "kafkajs consumer.subscribe + run (group); admin.fetchOffsets",
}
for codec in ("none", "gzip", "snappy", "lz4", "zstd"):
    CASE_COMMANDS[f"confluent.roundtrip.{codec}"] = f"AdminClient.create_topics; Producer(compression.type={codec}) keys+dup headers+null values; Consumer.assign(OFFSET_BEGINNING)"
    CASE_COMMANDS[f"kafka-python.roundtrip.{codec}"] = f"KafkaAdminClient.create_topics; KafkaProducer(compression_type={codec}); KafkaConsumer.assign+seek_to_beginning"
    CASE_COMMANDS[f"franz-go.roundtrip.{codec}"] = f"franz-roundtrip -codec {codec} (kadm.CreateTopics; kgo ProduceSync; kgo ConsumePartitions)"
    CASE_COMMANDS[f"kafkajs.roundtrip.{codec}"] = f"kafkajs admin.createTopics; producer.send(compression={codec}); Broker.fetch; admin.fetchTopicOffsets"

PROV_RE = re.compile(r"(\w+)=(.*?)(?= \w+=|$)")


def load(capdir):
    frames = []
    for prov in glob.glob(os.path.join(capdir, "*.provenance")):
        text = open(prov).read().strip()
        meta = dict(PROV_RE.findall(text))
        base = prov[: -len(".provenance")]
        meta.update(path=base + ".bin", name=os.path.basename(base), size=os.path.getsize(base + ".bin"),
                    api_key=int(meta["api"].split("(")[1].rstrip(")")), api_name=meta["api"].split("(")[0],
                    version=int(meta["version"]))
        frames.append(meta)
    return frames


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("capdir"); ap.add_argument("golden")
    ap.add_argument("--budget-kb", type=int, default=300)
    a = ap.parse_args()
    frames = load(a.capdir)
    if not frames:
        sys.exit("no frames in " + a.capdir)
    def foreign(f):  # frame from a helper of another client inside a case (kcat cases create
        # their topics with confluent-kafka's AdminClient via lib/admin.py)
        fam = {"librdkafka": "kcat"}.get(f["client"], f["client"])
        return 0 if f["case"].split(".")[0] == fam else 1
    chosen = {}
    for f in sorted(frames, key=lambda f: (foreign(f), f["size"], f["name"])):
        chosen.setdefault((f["client"], f["api_key"], f["version"]), f)
    picked = {f["name"]: f for f in chosen.values()}
    extras = {}
    for f in sorted(frames, key=lambda f: (f["size"], f["name"])):
        if f["api_key"] == 0 and re.search(r"roundtrip\.(gzip|snappy|lz4|zstd)$|keys-gzip$|produce-consume-keys$", f["case"]) \
                and f["size"] <= 24 * 1024:
            extras.setdefault((f["client"], f["case"]), f)
    for f in sorted(extras.values(), key=lambda f: f["size"]):
        if sum(x["size"] for x in picked.values()) + f["size"] > a.budget_kb * 1024 - 16 * 1024:
            break
        picked[f["name"]] = f
    os.makedirs(a.golden, exist_ok=True)
    for old in glob.glob(os.path.join(a.golden, "*.bin")) + glob.glob(os.path.join(a.golden, "*.provenance")):
        os.remove(old)
    def command(f):
        if foreign(f):
            return "lib/admin.py create T N (confluent-kafka AdminClient.create_topics + list_topics), topic set-up inside that case"
        return CASE_COMMANDS.get(f["case"], "")
    rows = []
    for f in sorted(picked.values(), key=lambda f: (f["client"], f["api_key"], f["version"], f["name"])):
        shutil.copy(f["path"], os.path.join(a.golden, f["name"] + ".bin"))
        shutil.copy(f["path"][:-4] + ".provenance", os.path.join(a.golden, f["name"] + ".provenance"))
        rows.append(f)
    total = sum(f["size"] for f in rows)
    with open(os.path.join(a.golden, "PROVENANCE.md"), "w") as out:
        out.write("# Golden request frames\n\n"
                  "Real request frames captured by `compat-tests/capture_proxy.py` between unmodified clients and\n"
                  "Apache Kafka (the reference broker from `kafka-ref.sh`), while `compat-tests/capture.sh` ran the\n"
                  "compat suite through the proxy. Each `.bin` is one request exactly as sent, WITHOUT the 4-byte size\n"
                  "prefix (request header + body). The `.provenance` file beside it says the same as the row below.\n"
                  "Regenerate: `./capture.sh DIR && .cache/venv/bin/python lib/select_golden.py DIR golden`.\n\n"
                  f"{len(rows)} files, {total} bytes. Selection: the smallest frame per (client, API, version), plus for\n"
                  "Produce the smallest frame of each compressed round-trip case.\n\n"
                  "| file | API | v | bytes | client software (ApiVersions) | client_id | case | command |\n"
                  "|---|---|---|---|---|---|---|---|\n")
        for f in rows:
            sw = f.get("software", "n/a").replace("|", "/")
            if sw == "n/a" and f["client"] == "kafkajs":
                sw = "kafkajs 2.2.4 (sends ApiVersions v2: no software name)"
            out.write(f"| {f['name']}.bin | {f['api_name']} ({f['api_key']}) | {f['version']} | {f['size']} | "
                      f"{sw} | {f.get('client_id', '')} | {f['case']} | {command(f)} |\n")
    print(f"{len(rows)} frames, {total} bytes -> {a.golden}")


if __name__ == "__main__":
    main()
