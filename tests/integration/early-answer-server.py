#!/usr/bin/env python3
"""A server that answers an upload before reading its body (tests/integration/tls.sh).

usage: early-answer-server.py PORT LOG MODE [CERT KEY]

Reads a request head and 1 KiB of its body, waits a second (a server
checking a quota: meanwhile the upload fills every buffer on its way, and a
proxy relaying it blocks on a full socket), answers 413 with a short body
and Connection: close, then, by MODE:
  close  ends its side (FIN after the answer), then closes half a second
         later with unread bytes in its receive buffer: the kernel resets
         the connection, as a server that gives up on a body does
  reset  answers at once (no second's wait) and closes at once: the
         reset follows the answer's bytes on the wire (on loopback they
         leave within sendall()) while the upload is in full flow
  stall  neither reads nor closes for 120 s (a server that stopped reading)
  keep   keeps the connection: answers 200 early (after 1 KiB, as above,
         without Connection: close), then reads the rest of that body; on
         the same connection takes the next request's head, waits 3 s
         before reading its body (the upload fills the buffers meanwhile),
         reads it whole and answers 200 "second upload read N"
Each request appends "METHOD PATH read=N" to LOG. With CERT and KEY it
speaks TLS. Listens on 127.0.0.1 only.
"""
import socket
import ssl
import sys
import threading
import time

port, log, mode = int(sys.argv[1]), sys.argv[2], sys.argv[3]
ctx = None
if len(sys.argv) > 5:
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(sys.argv[4], sys.argv[5])

BODY = b"cordon-test: upload refused after 1 KiB\n"


def read_head(c, buf):
    while b"\r\n\r\n" not in buf:
        d = c.recv(4096)
        if not d:
            return None, None
        buf += d
    return buf.split(b"\r\n\r\n", 1)


def read_body(c, have, total):
    got = len(have)
    while got < total:
        d = c.recv(min(65536, total - got))
        if not d:
            break
        got += len(d)
    return got


def length(head):
    for line in head.split(b"\r\n")[1:]:
        k, _, v = line.partition(b":")
        if k.strip().lower() == b"content-length":
            return int(v)
    return 0


def keep(c):
    head, rest = read_head(c, b"")
    if head is None:
        return
    n = length(head)
    body, extra = rest[:n], rest[n:]
    while len(body) < 1024:
        d = c.recv(1024 - len(body))
        if not d:
            return
        body += d
    time.sleep(1)
    c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\nfirst\n")
    if read_body(c, body, n) < n:
        return
    head, rest = read_head(c, extra)
    if head is None:
        return
    time.sleep(3)
    got = read_body(c, rest, length(head))
    answer = b"second upload read %d\n" % got
    c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(answer) + answer)
    with open(log, "a") as f:
        f.write("keep second read=%d\n" % got)


def handle(raw):
    c = raw
    try:
        if ctx:
            c = ctx.wrap_socket(raw, server_side=True)
        if mode == "keep":
            keep(c)
            return
        buf = b""
        while b"\r\n\r\n" not in buf:
            d = c.recv(4096)
            if not d:
                return
            buf += d
        head, rest = buf.split(b"\r\n\r\n", 1)
        got = len(rest)
        while got < 1024:
            d = c.recv(1024 - got)
            if not d:
                break
            got += len(d)
        if mode != "reset":
            time.sleep(1)
        c.sendall(b"HTTP/1.1 413 Payload Too Large\r\nContent-Type: text/plain\r\n"
                  b"Content-Length: %d\r\nConnection: close\r\n\r\n" % len(BODY) + BODY)
        with open(log, "a") as f:
            f.write("%s read=%d\n" % (" ".join(head.split(b"\r\n")[0].decode().split(" ")[:2]),
                                      min(got, 1024)))
        if mode == "stall":
            time.sleep(120)
        elif mode == "close":
            # A close right after sendall() could reset the connection
            # before the answer left this host; FIN first, then the reset.
            raw_sock = c
            if ctx:
                raw_sock = socket.socket(fileno=c.detach())
                c = raw_sock
            raw_sock.shutdown(socket.SHUT_WR)
            time.sleep(0.5)
    except (OSError, ssl.SSLError):
        pass
    finally:
        # No close_notify (SSLSocket.close() sends none), nothing more read.
        c.close()


s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
# A small receive buffer: the upload stops flowing soon after the answer.
s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 65536)
s.bind(("127.0.0.1", port))
s.listen(16)
while True:
    conn, _ = s.accept()
    threading.Thread(target=handle, args=(conn,), daemon=True).start()
