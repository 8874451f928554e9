#!/usr/bin/env python3
"""Capturing TCP proxy for the Kafka protocol.

Sits between clients and a broker and forwards bytes both ways unchanged.
Every request frame (client -> broker) is also written to --out as

    <client>-<api_key>-v<api_version>-<n>.bin   the request bytes AFTER the
                                               4-byte size prefix (header + body)
    <client>-<api_key>-v<api_version>-<n>.provenance   text: who sent it

and one line per frame is appended to --out/index.tsv.

<client> is the --client label, or (with --label-file) the first token of the
file's content at connection time (before the first '.'), so a test harness can
label connections per test case: the harness writes "kcat.metadata" into the
file, connections opened during that case are labelled "kcat" and the case name
goes into the provenance. Client software name/version come from the
ApiVersions v3+ request body when the client sends one.

Clients learn broker addresses from Metadata, so the broker must ADVERTISE the
proxy's address (kafka-ref.sh: KAFKA_ADVERTISED=127.0.0.1:<proxy port>),
otherwise clients bypass the proxy after bootstrap.

    capture_proxy.py --listen 127.0.0.1:19092 --upstream 127.0.0.1:9192 \
        --out /tmp/frames [--client NAME | --label-file FILE] [--max-per-key 2]
"""
import argparse, asyncio, os, struct, sys, time

API_NAMES = {0: "Produce", 1: "Fetch", 2: "ListOffsets", 3: "Metadata", 8: "OffsetCommit",
             9: "OffsetFetch", 10: "FindCoordinator", 11: "JoinGroup", 12: "Heartbeat",
             13: "LeaveGroup", 14: "SyncGroup", 15: "DescribeGroups", 16: "ListGroups",
             17: "SaslHandshake", 18: "ApiVersions", 19: "CreateTopics", 20: "DeleteTopics",
             21: "DeleteRecords", 22: "InitProducerId", 23: "OffsetForLeaderEpoch",
             24: "AddPartitionsToTxn", 25: "AddOffsetsToTxn", 26: "EndTxn", 27: "WriteTxnMarkers",
             28: "TxnOffsetCommit", 29: "DescribeAcls", 32: "DescribeConfigs", 33: "AlterConfigs", 35: "DescribeLogDirs",
             36: "SaslAuthenticate", 37: "CreatePartitions", 42: "DeleteGroups",
             34: "AlterReplicaLogDirs", 38: "CreateDelegationToken", 39: "RenewDelegationToken",
             40: "ExpireDelegationToken", 41: "DescribeDelegationToken", 43: "ElectLeaders",
             44: "IncrementalAlterConfigs", 45: "AlterPartitionReassignments", 46: "ListPartitionReassignments", 47: "OffsetDelete",
             48: "DescribeClientQuotas", 49: "AlterClientQuotas", 50: "DescribeUserScramCredentials",
             51: "AlterUserScramCredentials", 55: "DescribeQuorum", 57: "UpdateFeatures", 60: "DescribeCluster",
             61: "DescribeProducers", 65: "DescribeTransactions", 66: "ListTransactions",
             68: "ConsumerGroupHeartbeat", 69: "ConsumerGroupDescribe",
             71: "GetTelemetrySubscriptions", 72: "PushTelemetry", 74: "ListClientMetricsResources",
             75: "DescribeTopicPartitions", 76: "ShareGroupHeartbeat", 77: "ShareGroupDescribe",
             78: "ShareFetch", 79: "ShareAcknowledge"}


# Matched as prefixes of "<name> <version>"; the first match wins. The newest Java client
# (KAFKA_LATEST_VERSION, the `java-latest.*` cases) gets its own family so that its frames sit
# beside the pinned client's in golden/ instead of replacing them.
SOFTWARE_FAMILIES = [("apache-kafka-java 4.3.", "java43"), ("apache-kafka-java", "java"),
                     ("confluent-kafka-python", "confluent"), ("kafka-python", "kafka-python"), ("kgo", "franz-go"), ("franz", "franz-go"),
                     ("kcat", "kcat"), ("librdkafka", "librdkafka"), ("kafkajs", "kafkajs")]


def family(software):
    """Client family from ApiVersions client_software_name (beats the case label,
    e.g. a kcat case that creates its topic with confluent-kafka's admin)."""
    name = software.lower()
    for prefix, fam in SOFTWARE_FAMILIES:
        if name.startswith(prefix):
            return fam
    return None


def uvarint(buf, pos):
    shift = val = 0
    while True:
        b = buf[pos]; pos += 1
        val |= (b & 0x7F) << shift
        if not b & 0x80:
            return val, pos
        shift += 7


def parse_header(frame):
    """-> (api_key, api_version, correlation_id, client_id, software or None)"""
    api_key, api_version, corr = struct.unpack_from(">hhi", frame, 0)
    pos = 8
    (cid_len,) = struct.unpack_from(">h", frame, pos); pos += 2
    client_id = None
    if cid_len >= 0:
        client_id = frame[pos:pos + cid_len].decode("utf-8", "replace"); pos += cid_len
    software = None
    if api_key == 18 and api_version >= 3:
        try:  # header v2 tagged fields, then compact strings name, version
            n, pos = uvarint(frame, pos)
            for _ in range(n):
                _, pos = uvarint(frame, pos)
                size, pos = uvarint(frame, pos); pos += size
            parts = []
            for _ in range(2):
                ln, pos = uvarint(frame, pos)
                parts.append(frame[pos:pos + ln - 1].decode("utf-8", "replace")); pos += ln - 1
            software = f"{parts[0]} {parts[1]}"
        except Exception:
            software = None
    return api_key, api_version, corr, client_id, software


class Capture:
    def __init__(self, args):
        self.args = args
        self.counts = {}
        os.makedirs(args.out, exist_ok=True)
        self.index = open(os.path.join(args.out, "index.tsv"), "a", buffering=1)
        self.conn_seq = 0

    def label(self):
        if self.args.label_file:
            try:
                with open(self.args.label_file) as f:
                    case = f.read().strip() or "unknown"
            except OSError:
                case = "unknown"
            return case.split(".")[0], case
        return self.args.client, self.args.note or ""

    def record(self, conn, frame):
        try:
            api_key, ver, corr, client_id, software = parse_header(frame)
        except Exception as e:  # never break forwarding
            print(f"capture: unparsable frame: {e}", file=sys.stderr)
            return
        if software:
            conn["software"] = software
            fam = family(software)
            if fam:
                conn["label"] = (fam, conn["label"][1])
        client, case = conn["label"]
        key = (client, api_key, ver)
        n = self.counts.get(key, 0) + 1
        self.counts[key] = n
        # keep at most --max-per-key frames per (client, case, api, version)
        ckey = (client, case, api_key, ver)
        kept = self.counts.get(ckey, 0) + 1
        self.counts[ckey] = kept
        self.index.write("\t".join(map(str, [time.strftime("%H:%M:%S"), client, case, conn["id"],
                         api_key, API_NAMES.get(api_key, "?"), ver, len(frame), client_id,
                         conn.get("software") or ""])) + "\n")
        if kept > self.args.max_per_key or len(frame) > self.args.max_frame_bytes:
            return
        base = os.path.join(self.args.out, f"{client}-{api_key}-v{ver}-{n}")
        with open(base + ".bin", "wb") as f:
            f.write(frame)
        with open(base + ".provenance", "w") as f:
            f.write(f"api={API_NAMES.get(api_key, '?')}({api_key}) version={ver} bytes={len(frame)} "
                    f"client={client} client_id={client_id} software={conn.get('software') or 'n/a'} "
                    f"case={case} connection={conn['id']} correlation_id={corr}\n")

    async def handle(self, creader, cwriter):
        self.conn_seq += 1
        conn = {"id": self.conn_seq, "label": self.label()}
        host, port = self.args.upstream.rsplit(":", 1)
        try:
            ureader, uwriter = await asyncio.open_connection(host, int(port))
        except OSError as e:
            print(f"capture: upstream connect failed: {e}", file=sys.stderr)
            cwriter.close(); return

        async def c2u():
            try:
                while True:
                    size_b = await creader.readexactly(4)
                    (size,) = struct.unpack(">i", size_b)
                    frame = await creader.readexactly(size) if size > 0 else b""
                    self.record(conn, frame)
                    uwriter.write(size_b + frame)
                    await uwriter.drain()
            except (asyncio.IncompleteReadError, ConnectionError):
                pass
            finally:
                uwriter.close()

        async def u2c():
            try:
                while True:
                    data = await ureader.read(65536)
                    if not data:
                        break
                    cwriter.write(data)
                    await cwriter.drain()
            except ConnectionError:
                pass
            finally:
                cwriter.close()

        await asyncio.gather(c2u(), u2c(), return_exceptions=True)


async def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--listen", default="127.0.0.1:19092")
    ap.add_argument("--upstream", default="127.0.0.1:9092")
    ap.add_argument("--out", required=True)
    ap.add_argument("--client", default="client", help="label used in file names")
    ap.add_argument("--note", default="", help="free text (e.g. the command) for provenance")
    ap.add_argument("--label-file", help="read label per connection from this file")
    ap.add_argument("--max-per-key", type=int, default=2, help="files kept per (client, case, api, version)")
    ap.add_argument("--max-frame-bytes", type=int, default=1 << 20)
    args = ap.parse_args()
    cap = Capture(args)
    host, port = args.listen.rsplit(":", 1)
    server = await asyncio.start_server(cap.handle, host, int(port))
    print(f"capture proxy {args.listen} -> {args.upstream}, frames to {args.out}", flush=True)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    try:
        asyncio.run(main())
    except KeyboardInterrupt:
        pass
