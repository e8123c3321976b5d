#!/usr/bin/env python3
"""HTTP/1.0 file server for bench/proxy.sh: one request per connection, the
file sent with sendfile(2) so that the server is not what is measured.

  proxy-server.py PORT DIR"""
import os
import socket
import sys
import threading


def handle(c, root):
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


def main():
    port, root = int(sys.argv[1]), sys.argv[2]
    ls = socket.socket()
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind(("127.0.0.1", port))
    ls.listen(128)
    while True:
        c, _ = ls.accept()
        threading.Thread(target=handle, args=(c, root), daemon=True).start()


main()
