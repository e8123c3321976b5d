#!/usr/bin/env python3
"""HTTP server for tests/integration/secrets.sh (host side). Usage:
secret-server.py PORT LOG [CERT KEY] (with CERT and KEY: HTTPS). Each request's head is appended to LOG (on the
host, where the sandbox cannot read it); the answer says only whether the
X-Check header names a value the server expects (environment variables
EXPECT_<NAME>), as "auth=ok NAME" or "auth=bad", so the real values never
travel back into the sandbox."""
import http.server
import os
import socketserver
import sys

port, log = int(sys.argv[1]), sys.argv[2]
expect = {k[7:]: v for k, v in os.environ.items() if k.startswith("EXPECT_")}


class Handler(http.server.BaseHTTPRequestHandler):
    def answer(self):
        head = self.requestline + "\n" + str(self.headers)
        with open(log, "a") as f:
            f.write(head + "----\n")
        seen = [n for n, v in expect.items() if v in head]
        body = (("auth=ok " + ",".join(sorted(seen))) if seen else "auth=bad").encode() + b"\n"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = answer
    do_POST = answer

    def log_message(self, *args):
        pass


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True


server = Server(("127.0.0.1", port), Handler)
if len(sys.argv) > 4:
    import ssl

    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(sys.argv[3], sys.argv[4])
    server.socket = ctx.wrap_socket(server.socket, server_side=True)
print("ready", flush=True)
server.serve_forever()
