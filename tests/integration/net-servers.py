#!/usr/bin/env python3
"""Test servers for tests/integration/network.sh (host side, loopback or a
test network namespace). Usage: net-servers.py BIND HTTP_PORT ECHO_PORT TEXT
[ABSTRACT_NAME]. HTTP answers GET /bytes/N with N reproducible bytes and
every other GET with TEXT; the echo server returns
what it reads and closes after the client's EOF (half-close)."""
import http.server
import random
import socket
import socketserver
import sys
import threading

bind, http_port, echo_port, text = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
family = socket.AF_INET6 if ":" in bind else socket.AF_INET


class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = (text + "\n").encode()
        if self.path.startswith("/bytes/"):
            # N reproducible pseudo-random bytes, for integrity checks.
            n = int(self.path[7:])
            body = random.Random(n).randbytes(n)
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


class Echo(socketserver.BaseRequestHandler):
    def handle(self):
        while True:
            data = self.request.recv(65536)
            if not data:
                break
            self.request.sendall(data)


class HTTP(socketserver.ThreadingMixIn, http.server.HTTPServer):
    address_family = family
    daemon_threads = True


class EchoServer(socketserver.ThreadingTCPServer):
    address_family = family
    daemon_threads = True
    allow_reuse_address = True


threading.Thread(target=HTTP((bind, http_port), Handler).serve_forever, daemon=True).start()
threading.Thread(target=EchoServer((bind, echo_port), Echo).serve_forever, daemon=True).start()
if len(sys.argv) > 5:
    a = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    a.bind("\0" + sys.argv[5])
    a.listen(8)
print("ready", flush=True)
threading.Event().wait()
