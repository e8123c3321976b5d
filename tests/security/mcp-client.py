#!/usr/bin/env python3
"""Raw-line MCP client for tests/security/mcp-protocol.sh (security cases
45-53). Drives `cordon mcp` over stdio byte for byte (no SDK: the point is
to send what a well-behaved client never would) and prints one observation
per line, "name=value", for the shell test to assert on."""
import json
import os
import select
import subprocess
import sys
import time

cordon, scenario = sys.argv[1], sys.argv[2]
proc = subprocess.Popen([cordon, "mcp"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                        stderr=subprocess.DEVNULL)
buf = b""


def send_raw(data):
    proc.stdin.write(data)
    proc.stdin.flush()


def send(msg):
    send_raw(json.dumps(msg).encode() + b"\n")


def recv(timeout=30):
    """The next message, or None when none arrives within timeout."""
    global buf
    deadline = time.time() + timeout
    while b"\n" not in buf:
        left = deadline - time.time()
        if left <= 0:
            return None
        r, _, _ = select.select([proc.stdout], [], [], left)
        if not r:
            return None
        chunk = os.read(proc.stdout.fileno(), 1 << 20)
        if not chunk:
            return None
        buf += chunk
    line, buf = buf.split(b"\n", 1)
    return json.loads(line)


def out(name, value):
    print(f"{name}={value}", flush=True)


def initialize(version="2025-06-18"):
    send({"jsonrpc": "2.0", "id": 0, "method": "initialize",
          "params": {"protocolVersion": version, "capabilities": {},
                     "clientInfo": {"name": "mcp-protocol", "version": "1"}}})
    r = recv()
    send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    return r


def code(r):
    return r["error"]["code"] if r and "error" in r else None


def vm(field):
    with open(f"/proc/{proc.pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return -1


def ping(i):
    send({"jsonrpc": "2.0", "id": i, "method": "ping"})
    return recv()


if scenario == "errors":
    # 49: nothing before initialize
    send({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
          "params": {"name": "write", "arguments": {"path": "before-init", "content": "x"}}})
    r = recv()
    out("before_init", f"{code(r)} {r['error']['message'] if r and 'error' in r else r}")
    # 50: an unknown protocol version gets a supported one
    r = initialize("1999-01-01")
    out("version", r["result"]["protocolVersion"])
    # 45: malformed JSON, then the server keeps reading
    send_raw(b'{"jsonrpc": "2.0", "id": 2, "method": \n')
    r = recv()
    out("malformed", f"{code(r)} id={json.dumps(r.get('id'))}")
    out("after_malformed", json.dumps(ping(3).get("result")))
    # 46: id null, no jsonrpc, a batch
    send({"jsonrpc": "2.0", "id": None, "method": "ping"})
    out("id_null", code(recv()))
    send({"id": 4, "method": "ping"})
    r = recv()
    out("no_jsonrpc", f"{code(r)} id={json.dumps(r.get('id'))}")
    send([{"jsonrpc": "2.0", "id": 5, "method": "ping"}])
    out("batch", code(recv()))
    # 47: unknown method, unknown tool
    send({"jsonrpc": "2.0", "id": 6, "method": "tools/frobnicate"})
    out("unknown_method", code(recv()))
    send({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
          "params": {"name": "frobnicate", "arguments": {}}})
    out("unknown_tool", code(recv()))
    # 48: wrong argument types: an error result, nothing executed
    send({"jsonrpc": "2.0", "id": 8, "method": "tools/call",
          "params": {"name": "write", "arguments": {"path": "typed", "content": {"text": "x"}}}})
    r = recv()
    out("write_types", f"{r['result']['isError']} {r['result']['content'][0]['text']}")
    send({"jsonrpc": "2.0", "id": 9, "method": "tools/call",
          "params": {"name": "bash", "arguments": {"command": ["touch", "bash-typed"]}}})
    r = recv()
    out("bash_types", f"{r['result']['isError']} {r['result']['content'][0]['text']}")
    send({"jsonrpc": "2.0", "id": 10, "method": "tools/call",
          "params": {"name": "bash", "arguments": "touch args-string"}})
    out("args_string", code(recv()))
    # 52: notifications are never answered, whatever they say
    send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 4242}})
    send({"jsonrpc": "2.0", "method": "notifications/whatever", "params": {}})
    send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    r = ping(11)
    out("after_notifications", r.get("id"))
    out("silence", json.dumps(recv(timeout=1)))

elif scenario == "big":
    initialize()
    base = vm("VmHWM")
    # 51: a 100 MB line, sent in pieces while the server reads
    chunk = b"x" * (1 << 20)
    send_raw(b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":"')
    for _ in range(100):
        send_raw(chunk)
    send_raw(b'"}}\n')
    r = recv(timeout=60)
    out("big", f"{code(r)} {r['error']['message'] if r and 'error' in r else r}")
    out("big_hwm_growth_mib", (vm("VmHWM") - base) // 1024)
    out("after_big", json.dumps(ping(2).get("result")))
    # 51: invalid UTF-8 inside a string
    send_raw(b'{"jsonrpc":"2.0","id":3,"method":"ping","params":{"s":"\xff\xfe\xc0\xaf"}}\n')
    r = recv()
    out("utf8", f"{code(r)} {r['error']['message'] if r and 'error' in r else r}")
    out("after_utf8", json.dumps(ping(4).get("result")))

elif scenario == "cancel":
    initialize()
    marker = sys.argv[3]
    # 53: cancel an in-flight bash call: its tree dies, no response for it
    send({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
          "params": {"name": "bash",
                     "arguments": {"command": f"(sleep {marker} &) ; sleep {marker} & "
                                              f"sleep {marker}; echo finished"}}})
    for _ in range(100):
        if subprocess.run(["pgrep", "-f", f"sleep {marker}"], capture_output=True).stdout.count(b"\n") >= 3:
            break
        time.sleep(0.1)
    running = subprocess.run(["pgrep", "-f", f"sleep {marker}"], capture_output=True).stdout.count(b"\n")
    out("running_before", running)
    send({"jsonrpc": "2.0", "method": "notifications/cancelled",
          "params": {"requestId": 1, "reason": "test"}})
    left = running
    for _ in range(100):
        left = subprocess.run(["pgrep", "-f", f"sleep {marker}"], capture_output=True).stdout.count(b"\n")
        if left == 0:
            break
        time.sleep(0.1)
    out("running_after", left)
    r = ping(2)
    out("next_response", r.get("id"))
    out("silence", json.dumps(recv(timeout=2)))

proc.stdin.close()
try:
    proc.wait(timeout=20)
except subprocess.TimeoutExpired:
    proc.kill()
out("exit", proc.returncode)
