#!/usr/bin/env python3
"""Benchmark client for bench/proxy.sh.

  download HOST PORT PATH [PROXY_PORT]   GET PATH, print "bytes seconds"
  serve PORT DIR                         HTTP/1.0 file server (sendfile), for the benchmark
  latency HOST PORT N [PROXY_PORT]       N connections each doing GET /small,
                                         print the median set-up+request time in ms
With PROXY_PORT the connection goes through an HTTP CONNECT proxy on
127.0.0.1:PROXY_PORT (cordon's allowlist proxy inside the sandbox)."""
import socket
import statistics
import sys
import time


def open_conn(host, port, proxy):
    if not proxy:
        return socket.create_connection((host, port))
    s = socket.create_connection(("127.0.0.1", proxy))
    s.sendall(b"CONNECT %s:%d HTTP/1.1\r\nHost: %s:%d\r\n\r\n" % (host.encode(), port, host.encode(), port))
    head = b""
    while not head.endswith(b"\r\n\r\n"):
        c = s.recv(1)
        if not c:
            raise SystemExit("proxy closed")
        head += c
    if b" 200 " not in head.split(b"\r\n")[0]:
        raise SystemExit("proxy refused: " + head.decode())
    return s


def get(s, host, path):
    s.sendall(b"GET %s HTTP/1.0\r\nHost: %s\r\n\r\n" % (path.encode(), host.encode()))
    total = 0
    buf = bytearray(1 << 20)
    while True:
        n = s.recv_into(buf)
        if not n:
            break
        total += n
    s.close()
    return total


def serve(port, root):
    """One request per connection, the file sent with sendfile(2), so the
    server is not the bottleneck being measured."""
    import os
    import threading
    ls = socket.socket()
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind(("127.0.0.1", port))
    ls.listen(128)

    def handle(c):
        req = b""
        while b"\r\n\r\n" not in req:
            chunk = c.recv(4096)
            if not chunk:
                c.close()
                return
            req += chunk
        path = req.split(b" ")[1].decode().lstrip("/")
        with open(os.path.join(root, os.path.basename(path)), "rb") as f:
            size = os.fstat(f.fileno()).st_size
            c.sendall(b"HTTP/1.0 200 OK\r\nContent-Length: %d\r\n\r\n" % size)
            c.sendfile(f)
        c.close()

    while True:
        c, _ = ls.accept()
        threading.Thread(target=handle, args=(c,), daemon=True).start()


cmd = sys.argv[1]
if cmd == "serve":
    serve(int(sys.argv[2]), sys.argv[3])
    raise SystemExit(0)
host, port = sys.argv[2], int(sys.argv[3])
if cmd == "download":
    proxy = int(sys.argv[5]) if len(sys.argv) > 5 else 0
    t = time.perf_counter()
    n = get(open_conn(host, port, proxy), host, sys.argv[4])
    print(n, time.perf_counter() - t)
else:
    count = int(sys.argv[4])
    proxy = int(sys.argv[5]) if len(sys.argv) > 5 else 0
    times = []
    for _ in range(count):
        t = time.perf_counter()
        get(open_conn(host, port, proxy), host, "/small")
        times.append((time.perf_counter() - t) * 1000)
    print("%.3f" % statistics.median(times))
