#!/usr/bin/env python3
"""A corporate proxy for tests/integration/upstream.sh (host side). Usage:
upstream-proxy.py PORT LOG. Speaks CONNECT only; appends each request line
to LOG; connects every name to 127.0.0.1 (the test's servers), except
names starting with "blocked", which get 403 Forbidden."""
import socket
import sys
import threading

port, log = int(sys.argv[1]), sys.argv[2]


def pipe(a, b):
    try:
        while True:
            data = a.recv(65536)
            if not data:
                break
            b.sendall(data)
        b.shutdown(socket.SHUT_WR)
    except OSError:
        pass


def handle(c):
    head = b""
    while b"\r\n\r\n" not in head:
        data = c.recv(4096)
        if not data:
            return c.close()
        head += data
    line = head.split(b"\r\n")[0].decode()
    with open(log, "a") as f:
        f.write(line + "\n")
    parts = line.split()
    if len(parts) != 3 or parts[0] != "CONNECT":
        c.sendall(b"HTTP/1.1 405 Method Not Allowed\r\n\r\n")
        return c.close()
    host, _, p = parts[1].rpartition(":")
    if host.startswith("blocked"):
        c.sendall(b"HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n")
        return c.close()
    try:
        s = socket.create_connection(("127.0.0.1", int(p)), timeout=5)
    except OSError:
        c.sendall(b"HTTP/1.1 502 Bad Gateway\r\n\r\n")
        return c.close()
    c.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
    threading.Thread(target=pipe, args=(s, c), daemon=True).start()
    pipe(c, s)


srv = socket.socket()
srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
srv.bind(("127.0.0.1", port))
srv.listen(16)
print("ready", flush=True)
while True:
    conn, _ = srv.accept()
    threading.Thread(target=handle, args=(conn,), daemon=True).start()
