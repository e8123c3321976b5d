#!/usr/bin/env python3
"""Network probes run inside the sandbox by tests/integration/network.sh.

  direct HOST PORT            plain TCP connect; prints "connected" or the errno name
  socks HOST PORT             SOCKS5 CONNECT through 127.0.0.1:3128; prints "reply=0xNN"
                              and, on success, the HTTP response to GET /
  connect-echo HOST PORT MSG  HTTP CONNECT through the proxy, sends MSG, half-closes,
                              prints everything read until EOF (half-close handling)
  echo-file HOST PORT FILE    like connect-echo with FILE's bytes, sent while reading;
                              prints the SHA-256 of what came back
  bytes-sha N                 SHA-256 of the test servers' GET /bytes/N body
  abstract NAME               connect to the abstract Unix socket @NAME
  stall HOST PORT PATH SECS   HTTP CONNECT, GET PATH, then read nothing for SECS
                              (a slow reader); prints "stalled" once the request is out
"""
import errno
import socket
import struct
import sys

PROXY = ("127.0.0.1", 3128)


def err_name(e):
    return errno.errorcode.get(e.errno, str(e)) if e.errno else str(e)


def direct(host, port):
    try:
        socket.create_connection((host, int(port)), timeout=5).close()
        print("connected")
    except OSError as e:
        print(err_name(e))


def socks(host, port):
    s = socket.create_connection(PROXY, timeout=10)
    s.sendall(b"\x05\x01\x00")
    if s.recv(2) != b"\x05\x00":
        print("greeting refused")
        return
    name = host.encode()
    s.sendall(b"\x05\x01\x00\x03" + bytes([len(name)]) + name + struct.pack(">H", int(port)))
    reply = s.recv(10)
    print("reply=0x%02x" % reply[1])
    if reply[1] == 0:
        s.sendall(b"GET / HTTP/1.0\r\nHost: " + name + b"\r\n\r\n")
        data = b""
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
        print(data.decode(errors="replace"))


def connect_echo(host, port, msg):
    s = socket.create_connection(PROXY, timeout=10)
    s.sendall(("CONNECT %s:%s HTTP/1.1\r\nHost: %s:%s\r\n\r\n" % (host, port, host, port)).encode())
    head = b""
    while b"\r\n\r\n" not in head:
        chunk = s.recv(1)
        if not chunk:
            break
        head += chunk
    status = head.split(b"\r\n", 1)[0].decode()
    print(status)
    if " 200 " not in status:
        print(s.recv(4096).decode(errors="replace"))
        return
    s.sendall(msg.encode())
    s.shutdown(socket.SHUT_WR)
    data = b""
    while True:
        chunk = s.recv(65536)
        if not chunk:
            break
        data += chunk
    print("echo=" + data.decode(errors="replace"))


def echo_file(host, port, path):
    import hashlib
    import threading
    s = socket.create_connection(PROXY, timeout=30)
    s.sendall(("CONNECT %s:%s HTTP/1.1\r\n\r\n" % (host, port)).encode())
    head = b""
    while b"\r\n\r\n" not in head:
        head += s.recv(1)
    data = open(path, "rb").read()

    def send():
        s.sendall(data)
        s.shutdown(socket.SHUT_WR)

    t = threading.Thread(target=send)
    t.start()
    h = hashlib.sha256()
    while True:
        chunk = s.recv(65536)
        if not chunk:
            break
        h.update(chunk)
    t.join()
    print(h.hexdigest())


def bytes_sha(n):
    import hashlib
    import random
    print(hashlib.sha256(random.Random(int(n)).randbytes(int(n))).hexdigest())


def abstract(name):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        s.connect("\0" + name)
        print("connected")
    except OSError as e:
        print(err_name(e))


def stall(host, port, path, secs):
    import time
    s = socket.create_connection(PROXY, timeout=10)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.sendall(("CONNECT %s:%s HTTP/1.1\r\n\r\n" % (host, port)).encode())
    head = b""
    while b"\r\n\r\n" not in head:
        head += s.recv(1)
    s.sendall(("GET %s HTTP/1.0\r\nHost: %s\r\n\r\n" % (path, host)).encode())
    print("stalled", flush=True)
    time.sleep(float(secs))


if __name__ == "__main__":
    cmd, args = sys.argv[1], sys.argv[2:]
    {"direct": direct, "socks": socks, "connect-echo": connect_echo, "abstract": abstract,
     "echo-file": echo_file, "bytes-sha": bytes_sha, "stall": stall}[cmd](*args)
