"""Metadata (v4: Kafka 4 has no v0-v3, KIP-896) asked of one given broker, over a plain socket.

librdkafka sends a Metadata request to whichever broker it likes, so right after a broker is
resumed from SIGSTOP its own stale view may be what list_topics() returns. The cluster tests
need to know what a *specific* broker says, so they ask it directly with this.

    python kmeta.py HOST:PORT TOPIC     prints {partition: [leader, replicas, isr]} as JSON
    python kmeta.py wait BROKERS TOPIC TIMEOUT_S EXPR
        BROKERS is a comma list; polls every broker in it until at least one answers and,
        for every broker that answers, the Python expression EXPR is true of its view
        `d` ({partition: (leader, replicas, isr)}); exit 1 with the last answers on timeout
    python kmeta.py create HOST:PORT TOPIC TIMEOUT_MS
        CreateTopics (v4, one partition, replication factor 3) sent to that broker alone, with
        the request's own timeout_ms; prints "ERROR_CODE ELAPSED_MS" (librdkafka's admin
        client would pick the broker itself, and the forwarding tests need a given one)
"""
import json, socket, struct, sys, time


def _string(b, pos):
    (n,) = struct.unpack_from(">h", b, pos)
    pos += 2
    if n < 0:
        return None, pos
    return b[pos:pos + n].decode(), pos + n


def _int32s(b, pos):
    (n,) = struct.unpack_from(">i", b, pos)
    pos += 4
    vals = list(struct.unpack_from(f">{n}i", b, pos)) if n > 0 else []
    return vals, pos + 4 * max(n, 0)


def _exchange(addr, api_key, version, body, timeout):
    """Sends one request (non-flexible header v1) and returns the response after its size."""
    host, port = addr.rsplit(":", 1)
    client = b"chaos-kmeta"
    head = struct.pack(">hhih", api_key, version, 7, len(client)) + client  # correlation 7
    with socket.create_connection((host, int(port)), timeout=timeout) as s:
        s.sendall(struct.pack(">i", len(head) + len(body)) + head + body)
        buf = b""
        while len(buf) < 4 or len(buf) < 4 + struct.unpack(">i", buf[:4])[0]:
            chunk = s.recv(65536)
            if not chunk:
                raise OSError(f"{addr} closed the connection")
            buf += chunk
    b = buf[4:]
    (corr,) = struct.unpack_from(">i", b, 0)
    if corr != 7:
        raise OSError(f"{addr}: correlation id {corr}")
    return b


def create(addr, topic, timeout_ms):
    """(error code, elapsed ms) of a CreateTopics v4 for `topic` sent to broker `addr`."""
    name = topic.encode()
    body = struct.pack(">ih", 1, len(name)) + name
    body += struct.pack(">ihii", 1, 3, 0, 0)  # 1 partition, RF 3, no assignments, no configs
    body += struct.pack(">ib", timeout_ms, 0)  # timeout_ms, validate_only false
    started = time.time()
    b = _exchange(addr, 19, 4, body, timeout_ms / 1000 + 30)
    elapsed_ms = int((time.time() - started) * 1000)
    pos = 8  # correlation id, throttle_time_ms
    (nt,) = struct.unpack_from(">i", b, pos)
    if nt != 1:
        raise ValueError(f"{addr}: {nt} topics in the CreateTopics answer")
    _, pos = _string(b, pos + 4)
    (err,) = struct.unpack_from(">h", b, pos)
    return err, elapsed_ms


def metadata(addr, topic, timeout=5.0):
    """{partition: (leader, replicas, isr)} for `topic` as broker `addr` sees it.
    Raises OSError on connection problems, ValueError on a topic error code."""
    name = topic.encode()
    body = struct.pack(">ih", 1, len(name)) + name + b"\x00"  # allow_auto_topic_creation false
    b = _exchange(addr, 3, 4, body, timeout)
    pos = 8  # correlation id, throttle_time_ms
    (nb,) = struct.unpack_from(">i", b, pos)
    pos += 4
    for _ in range(nb):  # node_id, host, port, rack
        pos += 4
        _, pos = _string(b, pos)
        pos += 4
        _, pos = _string(b, pos)
    _, pos = _string(b, pos)  # cluster id
    pos += 4  # controller id
    (nt,) = struct.unpack_from(">i", b, pos)
    pos += 4
    out = None
    for _ in range(nt):
        (err,) = struct.unpack_from(">h", b, pos)
        pos += 2
        tname, pos = _string(b, pos)
        pos += 1  # is_internal
        (np_,) = struct.unpack_from(">i", b, pos)
        pos += 4
        parts = {}
        for _ in range(np_):
            _perr, pid, leader = struct.unpack_from(">hii", b, pos)
            pos += 10
            replicas, pos = _int32s(b, pos)
            isr, pos = _int32s(b, pos)
            parts[pid] = (leader, replicas, isr)
        if tname == topic:
            if err != 0:
                raise ValueError(f"{addr}: topic {topic} error code {err}")
            out = parts
    if out is None:
        raise ValueError(f"{addr}: topic {topic} not in the answer")
    return out


def wait(brokers, topic, timeout_s, expr):
    deadline = time.time() + timeout_s
    last = {}
    while True:
        answers = {}
        for addr in brokers:
            try:
                answers[addr] = metadata(addr, topic, timeout=2)
            except (OSError, ValueError, struct.error) as e:
                last[addr] = repr(e)
        last.update(answers)
        if answers and all(eval(expr, {}, {"d": d}) for d in answers.values()):
            print(f"ok after {timeout_s - (deadline - time.time()):.1f}s: {answers}")
            return True
        if time.time() > deadline:
            print(f"timed out after {timeout_s}s waiting for {expr!r} on {topic}; last answers: {last}")
            return False
        time.sleep(0.5)


if __name__ == "__main__":
    if sys.argv[1] == "create":
        print(*create(sys.argv[2], sys.argv[3], int(sys.argv[4])))
        sys.exit(0)
    if sys.argv[1] == "wait":
        ok = wait(sys.argv[2].split(","), sys.argv[3], float(sys.argv[4]), sys.argv[5])
        sys.exit(0 if ok else 1)
    print(json.dumps(metadata(sys.argv[1], sys.argv[2])))
