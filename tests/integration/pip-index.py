#!/usr/bin/env python3
"""A local package index for tests/integration/pip.sh.

usage: pip-index.py make DIR FILES_URL
       pip-index.py serve DIR HOST PORT LOG [CERT KEY]

make: builds the wheel cordontestpkg-1.0-py3-none-any.whl (by hand, with
zipfile: no build backend) under DIR/packages/, and a PEP 503 simple index
under DIR/simple/ whose file link is FILES_URL/packages/NAME#sha256=...
(FILES_URL may name another host than the index: pypi.org's files are on
files.pythonhosted.org).
serve: serves DIR over HTTP (HTTPS with CERT and KEY) on HOST:PORT, one
line per request ("GET PATH Host") appended to LOG.
"""
import base64
import hashlib
import http.server
import os
import ssl
import sys
import zipfile

NAME, VERSION = "cordontestpkg", "1.0"


def make(root, files_url):
    dist = f"{NAME}-{VERSION}.dist-info"
    members = {
        f"{NAME}/__init__.py": b'VALUE = "installed from the local index"\n',
        f"{dist}/METADATA": (f"Metadata-Version: 2.1\nName: {NAME}\nVersion: {VERSION}\n"
                             "Summary: cordon's pip test package\n").encode(),
        f"{dist}/WHEEL": (b"Wheel-Version: 1.0\nGenerator: cordon-test\n"
                          b"Root-Is-Purelib: true\nTag: py3-none-any\n"),
    }
    record = []
    for path, data in members.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.append(f"{path},sha256={digest},{len(data)}")
    record.append(f"{dist}/RECORD,,")
    members[f"{dist}/RECORD"] = ("\n".join(record) + "\n").encode()
    os.makedirs(f"{root}/packages", exist_ok=True)
    wheel = f"{NAME}-{VERSION}-py3-none-any.whl"
    with zipfile.ZipFile(f"{root}/packages/{wheel}", "w", zipfile.ZIP_DEFLATED) as z:
        for path, data in members.items():
            z.writestr(path, data)
    with open(f"{root}/packages/{wheel}", "rb") as f:
        sha = hashlib.sha256(f.read()).hexdigest()
    os.makedirs(f"{root}/simple/{NAME}", exist_ok=True)
    with open(f"{root}/simple/index.html", "w") as f:
        f.write(f'<!DOCTYPE html>\n<html><body><a href="{NAME}/">{NAME}</a></body></html>\n')
    with open(f"{root}/simple/{NAME}/index.html", "w") as f:
        f.write(f'<!DOCTYPE html>\n<html><body><a href="{files_url}/packages/{wheel}#sha256={sha}">'
                f"{wheel}</a></body></html>\n")


def serve(root, host, port, log, cert=None, key=None):
    class Handler(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *a, **kw):
            super().__init__(*a, directory=root, **kw)

        def log_message(self, fmt, *args):
            with open(log, "a") as f:
                f.write(f"{self.command} {self.path} {self.headers.get('Host')}\n")

    srv = http.server.ThreadingHTTPServer((host, port), Handler)
    if cert:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(cert, key)
        srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
    srv.serve_forever()


if sys.argv[1] == "make":
    make(sys.argv[2], sys.argv[3])
else:
    serve(sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5], *sys.argv[6:8])
