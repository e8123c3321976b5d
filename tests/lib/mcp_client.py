"""A minimal raw-line MCP client for the shell tests: starts `cordon mcp`,
sends JSON-RPC lines, reads responses with a timeout. Test helper only."""
import json
import os
import select
import subprocess
import sys
import time


class Mcp:
    def __init__(self, cordon, cwd, *args, env=None, stderr=subprocess.PIPE):
        self.proc = subprocess.Popen([cordon, "mcp", *args], cwd=cwd, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=stderr, env=env)
        self.buf = b""

    def send(self, msg):
        data = msg if isinstance(msg, (bytes, bytearray)) else json.dumps(msg).encode()
        self.proc.stdin.write(data + b"\n")
        self.proc.stdin.flush()

    def recv(self, timeout=10.0):
        deadline = time.time() + timeout
        while b"\n" not in self.buf:
            left = deadline - time.time()
            if left <= 0:
                return None
            r, _, _ = select.select([self.proc.stdout], [], [], left)
            if not r:
                return None
            chunk = os.read(self.proc.stdout.fileno(), 65536)
            if not chunk:
                return None
            self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        return json.loads(line)

    def request(self, rid, method, params=None, timeout=10.0):
        msg = {"jsonrpc": "2.0", "id": rid, "method": method}
        if params is not None:
            msg["params"] = params
        self.send(msg)
        while True:
            resp = self.recv(timeout)
            if resp is None or resp.get("id") == rid:
                return resp

    def initialize(self):
        return self.request(0, "initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                              "clientInfo": {"name": "test", "version": "1"}})

    def call(self, rid, tool, args, timeout=30.0):
        return self.request(rid, "tools/call", {"name": tool, "arguments": args}, timeout)

    def close(self):
        try:
            self.proc.stdin.close()
        except Exception:
            pass
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()


def text_of(resp):
    if not resp or "result" not in resp:
        return None
    return "".join(c.get("text", "") for c in resp["result"].get("content", []))


class Rpc:
    """JSON-RPC over a `cordon mcp` process (argv), one request at a time
    and without a timeout: rpc(method, params) sends the next id (first_id,
    then counting up) and blocks until the answer with that id, skipping
    the lines in between (notifications). For scripts that run a fixed
    conversation; proc is the process."""

    def __init__(self, argv, stderr=None, first_id=1):
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=stderr, text=True)
        self.n = first_id - 1

    def notify(self, method):
        self.proc.stdin.write(json.dumps({"jsonrpc": "2.0", "method": method}) + "\n")
        self.proc.stdin.flush()

    def __call__(self, method, params=None):
        self.n += 1
        self.proc.stdin.write(json.dumps({"jsonrpc": "2.0", "id": self.n, "method": method,
                                          "params": params or {}}) + "\n")
        self.proc.stdin.flush()
        while True:
            m = json.loads(self.proc.stdout.readline())
            if m.get("id") == self.n:
                return m
