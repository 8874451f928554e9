#!/usr/bin/env python3
"""Pick a small representative set of captured request frames into golden/.

    select_golden.py CAPTURE_DIR GOLDEN_DIR [--budget-kb 300] [--clients java43,...]

Rules: (1) for every (client, api_key, api_version) seen, the smallest frame;
(2) for Produce, additionally the smallest frame of every codec round-trip case
(so each client's gzip/snappy/lz4/zstd record batches are covered), up to 24 KB
each. Writes the .bin and .provenance files and GOLDEN_DIR/PROVENANCE.md.

With --clients, only those clients' frames are selected and replaced: other clients' files in
GOLDEN_DIR and their PROVENANCE.md rows stay (how the `java43-*` frames of the newest Java
client, captured against the newest Kafka, sit beside the others). Without it every client's
frames are replaced except those of SEPARATE_CAPTURE (a whole-suite capture runs the
java-latest.* cases against the pinned Kafka, whose frames would not carry 4.3's versions).
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
# The newest Java client and tools (KAFKA_LATEST_VERSION, the java-latest.* cases).
CASE_COMMANDS.update({
    "java-latest.topics.admin": "kafka-topics (4.3.1) --create --partitions 3; --list; --describe; --alter --partitions 4; --delete",
    "java-latest.configs.alter-describe": "kafka-configs (4.3.1) --describe / --alter --add-config retention.ms=1000 / --delete-config; --describe --entity-type brokers --all",
    "java-latest.groups.describe-lag": "kafka-console-producer (4.3.1) 100 lines; kafka-console-consumer --group G --max-messages 40 --command-property max.poll.records=10 (classic protocol); kafka-consumer-groups --list / --describe",
    "java-latest.groups.kip848-share": "2 x kafka-console-consumer (4.3.1) --group G --command-property group.protocol=consumer on a 4-partition topic; kafka-console-producer 2000 keyed lines; kafka-consumer-groups --describe --members / --state / --describe",
    "java-latest.txn.v2": "TxnV2Check (tests/TxnV2Check.java, kafka-clients 4.3.1): transaction.version 2 commit, abort, sendOffsetsToTransaction, fencing, coordinator timeout abort; read back at read_committed and read_uncommitted",
    "java-latest.transactions.list-pattern": "kafka-transactions (4.3.1, org.apache.kafka.tools.TransactionsCommand) list --transactional-id-pattern 'P-.*'",
})
# Requests the reference broker sends to itself through its advertised listener (the proxy),
# by client_id prefix: they carry the broker's apache-kafka-java software name.
BROKER_CLIENT_IDS = {
    "AddPartitionsManager-": "sent by the broker itself: a partition leader verifying a transactional write with the coordinator (inter-broker AddPartitionsToTxn)",
    "broker-": "sent by the broker itself: the transaction coordinator's marker sender (inter-broker)",
}
for codec in ("none", "gzip", "snappy", "lz4", "zstd"):
    CASE_COMMANDS[f"confluent.roundtrip.{codec}"] = f"AdminClient.create_topics; Producer(compression.type={codec}) keys+dup headers+null values; Consumer.assign(OFFSET_BEGINNING)"
    CASE_COMMANDS[f"kafka-python.roundtrip.{codec}"] = f"KafkaAdminClient.create_topics; KafkaProducer(compression_type={codec}); KafkaConsumer.assign+seek_to_beginning"
    CASE_COMMANDS[f"franz-go.roundtrip.{codec}"] = f"franz-roundtrip -codec {codec} (kadm.CreateTopics; kgo ProduceSync; kgo ConsumePartitions)"
    CASE_COMMANDS[f"kafkajs.roundtrip.{codec}"] = f"kafkajs admin.createTopics; producer.send(compression={codec}); Broker.fetch; admin.fetchTopicOffsets"

SEPARATE_CAPTURE = {"java43"}
PROV_RE = re.compile(r"(\w+)=(.*?)(?= \w+=|$)")
NAME_RE = re.compile(r"^(.+)-(\d+)-v(\d+)-(\d+)\.bin$")


def broker_sent(f):
    return next((why for p, why in BROKER_CLIENT_IDS.items() if f.get("client_id", "").startswith(p)), None)


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
    ap.add_argument("--clients", help="comma-separated: select and replace only these clients' frames")
    a = ap.parse_args()
    only = set(a.clients.split(",")) if a.clients else None
    def selected(client):
        return client in only if only is not None else client not in SEPARATE_CAPTURE
    frames = [f for f in load(a.capdir) if selected(f["client"])]
    if not frames:
        sys.exit("no frames in " + a.capdir)
    def foreign(f):  # frame from a helper of another client inside a case (kcat cases create
        # their topics with confluent-kafka's AdminClient via lib/admin.py), or from the broker
        fam = {"librdkafka": "kcat", "java43": "java-latest"}.get(f["client"], f["client"])
        return 0 if f["case"].split(".")[0] == fam and not broker_sent(f) else 1
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
    def replaced(path):
        m = NAME_RE.match(os.path.basename(path)[: -len(".provenance")] + ".bin"
                          if path.endswith(".provenance") else os.path.basename(path))
        return m is None or selected(m.group(1))
    for old in glob.glob(os.path.join(a.golden, "*.bin")) + glob.glob(os.path.join(a.golden, "*.provenance")):
        if replaced(old):
            os.remove(old)
    def command(f):
        if broker_sent(f):
            return broker_sent(f) + " during `" + CASE_COMMANDS.get(f["case"], f["case"]) + "`"
        if foreign(f):
            return "lib/admin.py create T N (confluent-kafka AdminClient.create_topics + list_topics), topic set-up inside that case"
        return CASE_COMMANDS.get(f["case"], "")
    def sort_key(client, api_key, version, name):
        return (client, api_key, version, name)
    rows = []  # (sort key, table row, bytes)
    for f in picked.values():
        shutil.copy(f["path"], os.path.join(a.golden, f["name"] + ".bin"))
        shutil.copy(f["path"][:-4] + ".provenance", os.path.join(a.golden, f["name"] + ".provenance"))
        sw = f.get("software", "n/a").replace("|", "/")
        if sw == "n/a" and f["client"] == "kafkajs":
            sw = "kafkajs 2.2.4 (sends ApiVersions v2: no software name)"
        rows.append((sort_key(f["client"], f["api_key"], f["version"], f["name"]),
                     f"| {f['name']}.bin | {f['api_name']} ({f['api_key']}) | {f['version']} | {f['size']} | "
                     f"{sw} | {f.get('client_id', '')} | {f['case']} | {command(f)} |\n", f["size"]))
    md = os.path.join(a.golden, "PROVENANCE.md")
    if os.path.exists(md):  # keep the other clients' rows as they are
        for line in open(md):
            m = NAME_RE.match(line.split("|")[1].strip()) if line.startswith("| ") and line.count("|") > 2 else None
            if m and not selected(m.group(1)) and os.path.exists(os.path.join(a.golden, m.group(0))):
                rows.append((sort_key(m.group(1), int(m.group(2)), int(m.group(3)), m.group(0)[:-4]), line,
                             os.path.getsize(os.path.join(a.golden, m.group(0)))))
    rows.sort(key=lambda r: r[0])
    total = sum(r[2] for r in rows)
    with open(md, "w") as out:
        out.write("# Golden request frames\n\n"
                  "Real request frames captured by `compat-tests/capture_proxy.py` between unmodified clients and\n"
                  "Apache Kafka (the reference broker from `kafka-ref.sh`), while `compat-tests/capture.sh` ran the\n"
                  "compat suite through the proxy. Each `.bin` is one request exactly as sent, WITHOUT the 4-byte size\n"
                  "prefix (request header + body). The `.provenance` file beside it says the same as the row below.\n"
                  "Regenerate: `./capture.sh DIR && .cache/venv/bin/python lib/select_golden.py DIR golden`.\n\n"
                  "The `java43-*` frames come from the newest Java client and tools (Apache Kafka 4.3.1, the\n"
                  "`java-latest.*` cases) against a Kafka 4.3.1 reference broker; the other Java frames from\n"
                  "4.1.2 against 4.1.2. Regenerate only those (from `compat-tests/`):\n\n"
                  "    KAFKA_REF_LIBS=.cache/kafka-libs-latest \\\n"
                  "    KAFKA_EXTRA_PROPS=transaction.abort.timed.out.transaction.cleanup.interval.ms=1000 \\\n"
                  "      ./capture.sh DIR --clients \"java txn\" --filter '^java-latest\\.'\n"
                  "    .cache/venv/bin/python lib/select_golden.py DIR golden --clients java43\n\n"
                  "(the shorter abort clean-up interval lets `java-latest.txn.v2` see its timed-out transaction\n"
                  "aborted within its 6 s wait; the default is 10 s). Frames whose command says \"sent by the\n"
                  "broker itself\" are the reference broker's own requests to itself, which pass through the\n"
                  "proxy because it advertises the proxy's address.\n\n"
                  f"{len(rows)} files, {total} bytes. Selection: the smallest frame per (client, API, version), plus for\n"
                  "Produce the smallest frame of each compressed round-trip case.\n\n"
                  "| file | API | v | bytes | client software (ApiVersions) | client_id | case | command |\n"
                  "|---|---|---|---|---|---|---|---|\n")
        for _, line, _ in rows:
            out.write(line)
    print(f"{len(rows)} frames, {total} bytes -> {a.golden}")


if __name__ == "__main__":
    main()
