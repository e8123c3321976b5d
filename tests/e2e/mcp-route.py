#!/usr/bin/env python3
"""Routing through `cordon mcp`, raw JSON-RPC lines: every state (sandboxed,
off, host fallback, blocked), execution_target with exact-call approval over
MCP elicitation (accept, decline, replay, another call's approval, cancel),
headless refusal, the runtime switch, and the skill read exception.
Security cases 54 and 55. TAP on stdout."""
import json
import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time

CORDON = os.environ["CORDON"]
NO_ELICIT = "host execution requires user approval, but no interactive client is available"
n = 0
failed = 0


def ok(cond, name, diag=None):
    global n, failed
    n += 1
    print(f"{'ok' if cond else 'not ok'} {n} - {name}", flush=True)
    if not cond:
        failed += 1
        if diag is not None:
            for line in str(diag).splitlines():
                print(f"#   {line}")


class Server:
    def __init__(self, cwd, args=(), elicitation=True, env=None, new_session=False):
        self.p = subprocess.Popen([CORDON, "mcp", *args], cwd=cwd, stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                                  start_new_session=new_session)
        self.buf = b""
        self.next_id = 100
        caps = {"elicitation": {}} if elicitation else {}
        r = self.request("initialize", {"protocolVersion": "2025-06-18", "capabilities": caps,
                                        "clientInfo": {"name": "route-test", "version": "1"}})
        assert "result" in r, r
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def send(self, msg):
        self.p.stdin.write((json.dumps(msg) + "\n").encode())
        self.p.stdin.flush()

    def read(self, timeout=20):
        deadline = time.time() + timeout
        while b"\n" not in self.buf:
            left = deadline - time.time()
            if left <= 0:
                return None
            r, _, _ = select.select([self.p.stdout], [], [], left)
            if not r:
                return None
            chunk = os.read(self.p.stdout.fileno(), 65536)
            if not chunk:
                return None
            self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        return json.loads(line)

    def request(self, method, params=None):
        self.next_id += 1
        rid = self.next_id
        self.send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params or {}})
        while True:
            m = self.read()
            if m is None or m.get("id") == rid:
                return m

    def call(self, name, arguments):
        r = self.request("tools/call", {"name": name, "arguments": arguments})
        return r["result"] if r and "result" in r else r

    def call_async(self, name, arguments):
        self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": self.next_id, "method": "tools/call",
                   "params": {"name": name, "arguments": arguments}})
        return self.next_id

    def wait_for(self, pred, timeout=20):
        while True:
            m = self.read(timeout)
            if m is None or pred(m):
                return m

    def close(self):
        self.p.stdin.close()
        try:
            self.p.wait(10)
        except subprocess.TimeoutExpired:
            self.p.kill()
        return self.p.stderr.read().decode(errors="replace")


def alive(pid):
    """Running, not a zombie left for init."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except (OSError, IndexError):
        return False


def wait_gone(pids, timeout=15):
    """The pids still alive after timeout; those are then killed, so a
    failing run leaves nothing behind."""
    deadline = time.time() + timeout
    while time.time() < deadline and any(alive(p) for p in pids):
        time.sleep(0.05)
    left = [p for p in pids if alive(p)]
    for p in left:
        try:
            os.kill(p, 9)
        except OSError:
            pass
    return left


LEAVE_BEHIND = ("sleep 1000 >/dev/null 2>&1 & echo $!; nohup sleep 1001 >/dev/null 2>&1 & echo $!; "
                "setsid sleep 1002 >/dev/null 2>&1 & echo $!; sh -c 'sleep 1003 >/dev/null 2>&1 & echo $!'")


def text(r):
    return "".join(c.get("text", "") for c in (r or {}).get("content", []) if c.get("type") == "text")


def meta(r):
    return (r or {}).get("_meta", {})


tmp = tempfile.mkdtemp(prefix="cordon-route-")
os.chmod(tmp, 0o755)
ws = os.path.join(tmp, "ws")
outside = os.path.join(tmp, "outside")
os.makedirs(ws)
os.makedirs(outside)
os.chmod(outside, 0o777)
env = dict(os.environ, CORDON_ROUTE_SENTINEL="sentinel-42")
try:
    # --- sandboxed, a client without elicitation (case 54)
    s = Server(ws, elicitation=False, env=env)
    listed = s.request("tools/list")["result"]["tools"]
    # sandbox_verify is cordon's own audit: never routed, no execution_target.
    tools = [t for t in listed if t["name"] != "sandbox_verify"]
    ok(any(t["name"] == "sandbox_verify" for t in listed) and
       "execution_target" not in json.dumps([t for t in listed if t["name"] == "sandbox_verify"]),
       "tools/list: sandbox_verify is listed, without execution_target", json.dumps(listed)[-600:])
    et = [t["inputSchema"]["properties"].get("execution_target") for t in tools]
    ok(len(tools) == 7 and all(e and e["enum"] == ["sandbox", "host"] for e in et) and
       all("execution_target" not in t["inputSchema"].get("required", []) for t in tools),
       "tools/list: every tool has the optional execution_target enum", json.dumps(tools)[:2000])
    r = s.call("bash", {"command": "cat /proc/1/comm"})
    ok(text(r) == "cordon-agent\n" and meta(r) == {"cordon/route": "sandbox", "cordon/state": "sandboxed"},
       "a call runs in the sandbox and _meta says so", r)
    marker = os.path.join(outside, "host-ran")
    r = s.call("bash", {"command": f"touch {marker}", "execution_target": "host"})
    ok(r["isError"] and text(r) == NO_ELICIT and not os.path.exists(marker),
       "case 54: host execution without elicitation is refused with the exact text, nothing ran", r)
    r = s.call("bash", {"command": "true", "execution_target": "elsewhere"})
    ok(r["isError"] and "execution_target must be" in text(r), "an unknown execution_target is refused", r)
    st = s.request("cordon/status")["result"]
    ok(st["state"] == "sandboxed" and st["sandbox"] and st["workspace"] == os.path.realpath(ws)
       and st["backend"] == "ns", "cordon/status: state, sandbox name, workspace, backend", st)
    # --- the runtime switch
    st = s.request("cordon/setMode", {"mode": "off"})["result"]
    ok(st["state"] == "off", "cordon/setMode off", st)
    r = s.call("bash", {"command": f"cat /proc/1/comm; pwd; echo $CORDON_ROUTE_SENTINEL; touch {marker}"})
    lines = text(r).split("\n")
    ok(lines[0] != "cordon-agent" and lines[1] == ws and lines[2] == "sentinel-42" and os.path.exists(marker)
       and meta(r) == {"cordon/route": "host", "cordon/state": "off"},
       "off: calls run on the host without a prompt, in the user's cwd and environment", r)
    os.unlink(marker)
    r = s.call("bash", {"command": "true", "execution_target": "sandbox"})
    ok(r["isError"] and "not available" in text(r), "off: an explicit sandbox request is refused, not run on the host", r)
    r = s.request("cordon/setMode", {"mode": "sideways"})
    ok(r.get("error", {}).get("code") == -32602, "cordon/setMode refuses an unknown mode", r)
    st = s.request("cordon/setMode", {"mode": "on"})["result"]
    r = s.call("bash", {"command": "cat /proc/1/comm"})
    ok(st["state"] == "sandboxed" and text(r) == "cordon-agent\n", "cordon/setMode on: back in the sandbox", r)
    s.close()

    # --- exact-call approval over elicitation (case 55)
    s = Server(ws, elicitation=True, env=env)
    m1 = os.path.join(outside, "approved")
    args = {"command": f"echo $CORDON_ROUTE_SENTINEL; touch {m1}", "execution_target": "host"}
    cid = s.call_async("bash", args)
    q = s.wait_for(lambda m: m.get("method") == "elicitation/create")
    msg = (q or {}).get("params", {}).get("message", "")
    ok(q and "bypasses the sandbox" in msg and "Tool: bash" in msg and f"Working directory: {ws}" in msg
       and '"command":' in msg and "execution_target" not in msg and not os.path.exists(m1),
       "a host call asks for approval of the exact call (tool, cwd, args), nothing ran yet", q)
    fp = q["params"]["_meta"]["cordon/approval"]["fingerprint"]
    ok(fp == json.dumps({"args": {"command": args["command"]}, "cwd": ws, "tool": "bash"},
                        separators=(",", ":"), sort_keys=True),
       "the fingerprint is tool, cwd and key-sorted arguments without execution_target", fp)
    s.send({"jsonrpc": "2.0", "id": q["id"], "result": {"action": "accept", "content": {"approve": True}}})
    r = s.wait_for(lambda m: m.get("id") == cid)["result"]
    ok(text(r) == "sentinel-42\n" and os.path.exists(m1) and meta(r) == {"cordon/route": "host", "cordon/state": "sandboxed"},
       "the approved call ran on the host, once, with the user's environment", r)
    os.unlink(m1)
    s.send({"jsonrpc": "2.0", "id": q["id"], "result": {"action": "accept", "content": {"approve": True}}})
    pong = s.request("ping")
    time.sleep(0.3)
    ok(pong and pong.get("result") == {} and not os.path.exists(m1), "replaying the approval runs nothing", pong)
    cid = s.call_async("bash", args)
    q2 = s.wait_for(lambda m: m.get("method") == "elicitation/create")
    ok(q2 and q2["id"] != q["id"], "the same call again asks again (an approval is used once)", q2)
    s.send({"jsonrpc": "2.0", "id": q2["id"], "result": {"action": "decline"}})
    r = s.wait_for(lambda m: m.get("id") == cid)["result"]
    ok(r["isError"] and "declined" in text(r) and not os.path.exists(m1), "a declined call is refused and never runs", r)
    # another call's approval: answer B's question with A's id
    m2 = os.path.join(outside, "other")
    cid = s.call_async("bash", {"command": f"touch {m2}", "execution_target": "host"})
    q3 = s.wait_for(lambda m: m.get("method") == "elicitation/create")
    s.send({"jsonrpc": "2.0", "id": q["id"], "result": {"action": "accept", "content": {"approve": True}}})
    s.send({"jsonrpc": "2.0", "id": q2["id"], "result": {"action": "accept", "content": {"approve": True}}})
    s.send({"jsonrpc": "2.0", "id": q3["id"], "result": {"action": "accept", "content": {}}})
    r = s.wait_for(lambda m: m.get("id") == cid)["result"]
    ok(r["isError"] and not os.path.exists(m2), "case 55: approvals of other calls and an accept without approve=true run nothing", r)
    cid = s.call_async("bash", {"command": f"touch {m2}", "execution_target": "host"})
    q4 = s.wait_for(lambda m: m.get("method") == "elicitation/create")
    s.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": cid}})
    s.send({"jsonrpc": "2.0", "id": q4["id"], "result": {"action": "accept", "content": {"approve": True}}})
    pong = s.request("ping")
    time.sleep(0.3)
    ok(pong and pong.get("result") == {} and not os.path.exists(m2), "a call cancelled while asking never runs and gets no response", pong)
    r = s.call("read", {"path": "x", "execution_target": "sandbox"})
    ok(r["isError"] and "ENOENT" in text(r) and meta(r)["cordon/route"] == "sandbox", "execution_target sandbox runs in the sandbox", r)
    # an approved host call's background processes end with the session
    cid = s.call_async("bash", {"command": LEAVE_BEHIND, "execution_target": "host"})
    q5 = s.wait_for(lambda m: m.get("method") == "elicitation/create")
    s.send({"jsonrpc": "2.0", "id": q5["id"], "result": {"action": "accept", "content": {"approve": True}}})
    r = s.wait_for(lambda m: m.get("id") == cid)["result"]
    left = [int(x) for x in text(r).split()]
    ok(len(left) == 4 and all(alive(p) for p in left) and meta(r)["cordon/route"] == "host",
       "an approved host call's background processes outlive the call", r)
    s.close()
    ok(wait_gone(left) == [], "they end with the session", left)

    s = Server(ws, args=["--headless"], elicitation=True)
    r = s.call("ls", {"execution_target": "host"})
    ok(r["isError"] and text(r) == NO_ELICIT, "--headless refuses host execution even with elicitation", r)
    s.close()
    s = Server(ws, args=["--set", "allow_host_execution=false"], elicitation=True)
    r = s.call("ls", {"execution_target": "host"})
    ok(r["isError"] and "allow_host_execution = false" in text(r), "allow_host_execution = false refuses outright", r)
    s.close()

    # --- off from the start, blocked, host fallback
    s = Server(ws, args=["--off"], elicitation=False)
    r = s.call("bash", {"command": "cat /proc/1/comm"})
    ok(text(r) != "cordon-agent\n" and meta(r)["cordon/state"] == "off" and s.request("cordon/status")["result"]["sandbox"] is None,
       "cordon mcp --off: host mode without a sandbox", r)
    r = s.call("bash", {"command": LEAVE_BEHIND})
    left = [int(x) for x in text(r).split()]
    ok(len(left) == 4 and all(alive(p) for p in left),
       "off: background processes (&, nohup, setsid, double fork) outlive their host call", r)
    s.close()
    ok(wait_gone(left) == [], "off: they end with the session (the client closes stdin)", left)
    s = Server(ws, args=["--off"], elicitation=False)
    left = [int(x) for x in text(s.call("bash", {"command": LEAVE_BEHIND})).split()]
    s.p.kill()
    ok(len(left) == 4 and wait_gone(left) == [], "off: they end when cordon mcp is SIGKILLed too (the host agent sees EOF)", left)
    s.close()
    # A terminal's hangup goes to its whole foreground process group: here,
    # cordon mcp's group. The host agent has a session of its own.
    s = Server(ws, args=["--off"], elicitation=False, new_session=True)
    left = [int(x) for x in text(s.call("bash", {"command": LEAVE_BEHIND})).split()]
    os.killpg(s.p.pid, signal.SIGHUP)
    ok(len(left) == 4 and wait_gone(left) == [], "off: they end when the terminal hangs up (SIGHUP to cordon mcp's process group)", left)
    s.close()
    s = Server(ws, args=["--set", "backend=docker"], elicitation=True)
    m3 = os.path.join(outside, "blocked")
    r = s.call("bash", {"command": f"touch {m3}"})
    r2 = s.call("bash", {"command": f"touch {m3}", "execution_target": "host"})
    ok(r["isError"] and "blocked" in text(r) and "backend" in text(r) and r2["isError"] and not os.path.exists(m3)
       and meta(r).get("cordon/state") == "blocked" and "backend" in meta(r).get("cordon/reason", ""),
       "a sandbox failure blocks every call with the reason; nothing runs anywhere", [r, r2])
    s.close()
    s = Server(ws, args=["--set", "backend=docker", "--fallback", "host"], elicitation=False)
    r = s.call("bash", {"command": "cat /proc/1/comm"})
    ok(not r["isError"] and text(r) != "cordon-agent\n" and meta(r) == {"cordon/route": "host", "cordon/state": "host fallback"},
       "fallback_mode = host from the session: host fallback, shown in _meta", r)
    r = s.call("bash", {"command": LEAVE_BEHIND})
    left = [int(x) for x in text(r).split()]
    ok(len(left) == 4 and all(alive(p) for p in left), "host fallback: background processes outlive their call", r)
    s.p.terminate()
    ok(wait_gone(left) == [], "host fallback: they end with the session (SIGTERM to cordon mcp)", left)
    s.close()
    s = Server(ws, args=["--set", "limits.pids=many"], elicitation=False)
    r = s.call("ls", {})
    ok(r["isError"] and "blocked" in text(r) and "limits.pids" in text(r), "a configuration error blocks the tools, naming the key", r)
    s.close()
    s = Server(ws, args=["--set", 'route_tools=["read","bash"]'], elicitation=False)
    names = sorted(t["name"] for t in s.request("tools/list")["result"]["tools"]
                   if t["name"] != "sandbox_verify")
    r = s.request("tools/call", {"name": "write", "arguments": {"path": "x", "content": "y"}})
    ok(names == ["bash", "read"] and r.get("error", {}).get("code") == -32602,
       "route_tools: only routed tools are listed; others are unknown to cordon", [names, r])
    s.close()

    # --- skills
    skills = os.path.join(tmp, "skills")
    foo = os.path.join(skills, "foo")
    os.makedirs(os.path.join(foo, "sub"))
    open(os.path.join(foo, "SKILL.md"), "w").write("# foo skill\n")
    open(os.path.join(foo, "sub", "ref.md"), "w").write("reference\n")
    secret = os.path.join(tmp, "secret.txt")
    open(secret, "w").write("top secret\n")
    os.symlink(secret, os.path.join(foo, "escape.md"))
    os.symlink("sub/ref.md", os.path.join(foo, "inside.md"))
    os.mkfifo(os.path.join(foo, "fifo"))
    alone = os.path.join(tmp, "alone")
    os.makedirs(alone)
    open(os.path.join(alone, "bar.md"), "w").write("bar skill\n")
    open(os.path.join(alone, "neighbour.md"), "w").write("not a skill\n")
    tree = os.path.join(tmp, "tree")
    os.makedirs(os.path.join(tree, "baz"))
    open(os.path.join(tree, "baz", "SKILL.md"), "w").write("baz\n")
    open(os.path.join(tree, "loose.md"), "w").write("loose\n")
    os.chmod(tmp, 0o755)
    s = Server(ws, args=["--set", f'skills.paths=["{tree}"]'], elicitation=False)
    r = s.request("cordon/setSkills", {"paths": [os.path.join(foo, "SKILL.md"), os.path.join(alone, "bar.md")]})
    ok(r["result"]["skills"] == 3, "cordon/setSkills takes the client's skills (plus configuration's)", r)
    r = s.call("read", {"path": os.path.join(foo, "SKILL.md")})
    ok(text(r) == "# foo skill\n" and meta(r)["cordon/route"] == "skill", "a discovered SKILL.md is served from the host", r)
    r = s.call("read", {"path": os.path.join(foo, "sub", "ref.md")})
    ok(text(r) == "reference\n", "a regular file below a SKILL.md directory is served", r)
    r = s.call("read", {"path": os.path.join(foo, "inside.md")})
    ok(text(r) == "reference\n", "a symlink that stays inside the skill directory is followed", r)
    r = s.call("read", {"path": os.path.join(foo, "escape.md")})
    ok(r["isError"] and "symlink" in text(r) and "top secret" not in text(r), "a symlink escaping the skill directory is refused", r)
    r = s.call("read", {"path": os.path.join(foo, "fifo")})
    ok(r["isError"] and "regular file" in text(r), "a FIFO in a skill directory is refused (no hang)", r)
    r = s.call("read", {"path": os.path.join(foo, "sub", "..", "..", "..", "secret.txt")})
    ok(r["isError"] and "top secret" not in text(r), "dot-dot out of a skill directory is not served", r)
    r = s.call("read", {"path": os.path.join(alone, "bar.md")})
    ok(text(r) == "bar skill\n", "an exact skill file is served", r)
    r = s.call("read", {"path": os.path.join(alone, "neighbour.md")})
    ok(r["isError"] and "not a skill" not in text(r) and meta(r)["cordon/route"] == "sandbox",
       "its neighbour is not (the sandbox cannot see it)", r)
    r = s.call("read", {"path": os.path.join(tree, "baz", "SKILL.md")})
    r2 = s.call("read", {"path": os.path.join(tree, "loose.md")})
    ok(text(r) == "baz\n" and r2["isError"], "[skills] paths: files under a SKILL.md directory, not loose files", [r, r2])
    s.request("cordon/setSkills", {"paths": []})
    r = s.call("read", {"path": os.path.join(foo, "SKILL.md")})
    r2 = s.call("read", {"path": os.path.join(tree, "baz", "SKILL.md")})
    ok(r["isError"] and text(r2) == "baz\n", "a new skill list replaces the client's old one (configuration's stays)", [r, r2])
    s.close()
finally:
    shutil.rmtree(tmp, ignore_errors=True)

print(f"1..{n}")
sys.exit(1 if failed else 0)
