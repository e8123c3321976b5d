#!/usr/bin/env python3
"""Handshake latency for bench/tls.sh: N times TCP connect (+ CONNECT
through the proxy when PROXY_PORT is given) + TLS handshake + GET /small,
one process and one SSL context (the CA bundle is parsed once). Prints the
median milliseconds from connect to the client's handshake done, and to
the first byte of the answer (through an intercepting proxy the upstream
handshake happens after the client's).

  tls-handshake.py HOST PORT N CAFILE [PROXY_PORT]   (HOST resolved to
  127.0.0.1 when direct)"""
import socket
import ssl
import statistics
import sys
import time

host, port, n, cafile = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
proxy = int(sys.argv[5]) if len(sys.argv) > 5 else 0
ctx = ssl.create_default_context(cafile=cafile)
times, hand = [], []
for _ in range(n):
    t0 = time.perf_counter()
    s = socket.create_connection(("127.0.0.1", proxy or port))
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    if proxy:
        s.sendall(b"CONNECT %s:%d HTTP/1.1\r\nHost: %s:%d\r\n\r\n" % (host.encode(), port, host.encode(), port))
        answer = b""
        while b"\r\n\r\n" not in answer:
            chunk = s.recv(4096)
            if not chunk:
                sys.exit("tls-handshake: the proxy closed")
            answer += chunk
        if not answer.startswith(b"HTTP/1.1 200"):
            sys.exit("tls-handshake: " + answer.decode(errors="replace").splitlines()[0])
    t = ctx.wrap_socket(s, server_hostname=host)
    t1 = time.perf_counter()
    t.sendall(b"GET /small HTTP/1.0\r\nHost: %s:%d\r\n\r\n" % (host.encode(), port))
    t.recv(4096)
    hand.append(t1 - t0)
    times.append(time.perf_counter() - t0)
    while t.recv(4096):
        pass
    t.close()
print("%.2f %.2f" % (1000 * statistics.median(hand), 1000 * statistics.median(times)))
