"""A fixed bootstrap address for a cluster whose brokers move: a plain TCP forwarder.

    python tcpfwd.py LISTEN_PORT UPSTREAM [UPSTREAM ...]      (UPSTREAM = host:port)

Listens on 127.0.0.1:LISTEN_PORT. Each accepted connection is joined to the first upstream,
in the order given, that accepts a connection within 0.5 s; when none does, the client's
connection is closed at once (a Kafka client then sees its bootstrap broker disconnect and
tries again). Bytes are copied both ways until either side closes. One line per connection
on stderr: which upstream it went to. Prints "listening PORT" on stdout once bound.
"""
import socket, sys, threading, time


def pipe(src, dst):
    try:
        while True:
            data = src.recv(65536)
            if not data:
                break
            dst.sendall(data)
    except OSError:
        pass
    finally:
        for s in (src, dst):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


def serve(client, upstreams, n):
    for host, port in upstreams:
        try:
            up = socket.create_connection((host, port), timeout=0.5)
        except OSError:
            continue
        up.settimeout(None)
        print(f"{time.strftime('%H:%M:%S')} conn {n} -> {host}:{port}", file=sys.stderr, flush=True)
        t = threading.Thread(target=pipe, args=(up, client), daemon=True)
        t.start()
        pipe(client, up)
        t.join()
        up.close()
        client.close()
        return
    print(f"{time.strftime('%H:%M:%S')} conn {n}: no upstream accepts, closed", file=sys.stderr, flush=True)
    client.close()


def main():
    port = int(sys.argv[1])
    upstreams = [(a.rsplit(":", 1)[0], int(a.rsplit(":", 1)[1])) for a in sys.argv[2:]]
    srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind(("127.0.0.1", port))
    srv.listen(64)
    print(f"listening {port}", flush=True)
    n = 0
    while True:
        client, _ = srv.accept()
        n += 1
        threading.Thread(target=serve, args=(client, upstreams, n), daemon=True).start()


if __name__ == "__main__":
    main()
