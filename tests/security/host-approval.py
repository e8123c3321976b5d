#!/usr/bin/env python3
"""An approved host call opens exactly what the user approved (issue 14,
vectors 4 and 5). The attacker is the sandbox: while the user reads the
prompt for a host `write notes/todo.md`, a sandboxed bash call swaps `notes`
for a symlink to a directory outside the workspace (a fake HOME's .ssh);
then the user approves. The outside files must be unchanged and the call
must fail naming the symlink. Also: the prompt shows the resolved path
(and says when it leaves the workspace), the working directory of an
approved bash is pinned, and hidden characters (bidi, ESC, zero-width,
invalid UTF-8) are shown escaped and counted. TAP on stdout."""
import json
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from mcp_client import Mcp  # noqa: E402

CORDON = os.environ["CORDON"]
n = 0
failed = 0


def ok(cond, name, diag=None):
    global n, failed
    n += 1
    print(f"{'ok' if cond else 'not ok'} {n} - {name}", flush=True)
    if not cond:
        failed += 1
        for line in str(diag).splitlines()[:40]:
            print(f"#   {line}")


def text(resp):
    r = (resp or {}).get("result", {})
    return "".join(c.get("text", "") for c in r.get("content", []) if c.get("type") == "text")


def is_error(resp):
    return bool((resp or {}).get("result", {}).get("isError"))


def read(path):
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError as e:
        return e.__class__.__name__


class Server(Mcp):
    def __init__(self, cwd, env):
        super().__init__(CORDON, cwd, env=env)
        self.rid = 100
        caps = {"elicitation": {}}
        r = self.request(1, "initialize", {"protocolVersion": "2025-06-18", "capabilities": caps,
                                           "clientInfo": {"name": "approval-test", "version": "1"}})
        assert r and "result" in r, r
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def next_id(self):
        self.rid += 1
        return self.rid

    def call(self, tool, args, timeout=60):
        return self.request(self.next_id(), "tools/call", {"name": tool, "arguments": args}, timeout)

    def ask(self, tool, args):
        """Sends a host call; returns (its request id, the elicitation request)."""
        rid = self.next_id()
        self.send({"jsonrpc": "2.0", "id": rid, "method": "tools/call",
                   "params": {"name": tool, "arguments": dict(args, execution_target="host")}})
        while True:
            m = self.recv(60)
            if m is None or m.get("method") == "elicitation/create" or m.get("id") == rid:
                return rid, m

    def answer(self, question, rid, approve=True):
        result = {"action": "accept", "content": {"approve": True}} if approve else {"action": "decline"}
        self.send({"jsonrpc": "2.0", "id": question["id"], "result": result})
        while True:
            m = self.recv(60)
            if m is None or m.get("id") == rid:
                return m

    def sandbox(self, command):
        """The attacker: a command inside the sandbox."""
        r = self.call("bash", {"command": command})
        assert r and not is_error(r), r
        return text(r)


def message(q):
    return (q or {}).get("params", {}).get("message", "")


tmp = tempfile.mkdtemp(prefix="cordon-approve-")
os.chmod(tmp, 0o755)
ws = os.path.join(tmp, "ws")
home = os.path.join(tmp, "home")
ssh = os.path.join(home, ".ssh")
os.makedirs(os.path.join(ws, "notes"))
os.makedirs(os.path.join(ws, "sub"))
os.makedirs(ssh)
# The workspace is a git repository, so its root is ws and the cwd ws/sub can
# be a directory the sandbox renames (the root itself is its mount point).
subprocess.run(["git", "init", "-q", ws], check=True)
SSH_FILES = {"authorized_keys": b"ssh-ed25519 AAAA the-user\n", "id_ed25519": b"PRIVATE-KEY-SECRET\n",
             "todo.md": b"old\n"}
for name, data in SSH_FILES.items():
    with open(os.path.join(ssh, name), "wb") as f:
        f.write(data)


def ssh_unchanged():
    return sorted(os.listdir(ssh)) == sorted(SSH_FILES) and all(
        read(os.path.join(ssh, k)) == v for k, v in SSH_FILES.items())


def reset_notes():
    for d in ("notes", "notes.orig"):
        p = os.path.join(ws, d)
        if os.path.islink(p):
            os.unlink(p)
        elif os.path.isdir(p):
            shutil.rmtree(p)
    os.makedirs(os.path.join(ws, "notes"))
    for name in ("todo.md", "id_ed25519"):
        with open(os.path.join(ws, "notes", name), "wb") as f:
            f.write(b"old\n" if name == "todo.md" else b"harmless\n")
    os.chmod(os.path.join(ws, "notes"), 0o777)
    for name in ("todo.md", "id_ed25519"):
        os.chmod(os.path.join(ws, "notes", name), 0o666)


env = dict(os.environ, HOME=home)
SWAP_DIR = f"mv notes notes.orig && ln -s {ssh} notes"
try:
    s = Server(ws, env)
    # --- control: without an attacker the approved write lands where approved
    reset_notes()
    rid, q = s.ask("write", {"path": "notes/todo.md", "content": "new\n"})
    msg = message(q)
    ok(f"Path: {os.path.realpath(ws)}/notes/todo.md\n" in msg and "OUTSIDE" not in msg
       and "symlink" not in msg,
       "the prompt names the canonical path the write will touch", msg)
    meta = (q or {}).get("params", {}).get("_meta", {}).get("cordon/approval", {})
    ok(meta.get("resolvedPath") == f"{os.path.realpath(ws)}/notes/todo.md" and meta.get("hiddenCharacters") == 0,
       "_meta cordon/approval carries resolvedPath and hiddenCharacters", meta)
    r = s.answer(q, rid)
    ok(not is_error(r) and text(r) == "Successfully wrote 4 bytes to notes/todo.md"
       and read(os.path.join(ws, "notes/todo.md")) == b"new\n",
       "an approved host write with nothing swapped writes the approved file", r)

    rid, q = s.ask("edit", {"path": "notes/todo.md", "edits": [{"oldText": "new", "newText": "edited"}]})
    r = s.answer(q, rid)
    ok(not is_error(r) and text(r) == "Successfully replaced 1 block(s) in notes/todo.md."
       and read(os.path.join(ws, "notes/todo.md")) == b"edited\n",
       "an approved host edit with nothing swapped edits the approved file", r)
    rid, q = s.ask("write", {"path": "notes/new/deeper/f.md", "content": "x"})
    r = s.answer(q, rid)
    ok(not is_error(r) and read(os.path.join(ws, "notes/new/deeper/f.md")) == b"x",
       "an approved host write creates the missing directories beneath the approved one", r)
    rid, q = s.ask("grep", {"pattern": "edited", "path": "notes"})
    r = s.answer(q, rid)
    ok(not is_error(r) and text(r) == "todo.md:1: edited", "an approved host grep searches the approved directory", r)
    rid, q = s.ask("ls", {})
    r = s.answer(q, rid)
    ok(not is_error(r) and "notes/" in text(r).split("\n"), "an approved host ls of the cwd lists it", r)

    # --- vector 4: write, the directory swapped for a symlink after the prompt
    reset_notes()
    rid, q = s.ask("write", {"path": "notes/todo.md", "content": "PLANTED\n"})
    s.sandbox(SWAP_DIR)
    ok(os.path.islink(os.path.join(ws, "notes")), "the sandbox swapped notes for a symlink to ~/.ssh")
    r = s.answer(q, rid)
    ok(is_error(r) and text(r) == f"cordon: a symlink appeared at {os.path.realpath(ws)}/notes after approval; refused",
       "write: the approved call fails naming the symlink", r)
    ok(ssh_unchanged() and read(os.path.join(ws, "notes.orig/todo.md")) == b"old\n",
       "write: ~/.ssh is unchanged (nothing written through the symlink)", os.listdir(ssh))

    # --- edit: the swapped-in directory holds a file the edit would match
    reset_notes()
    rid, q = s.ask("edit", {"path": "notes/todo.md", "edits": [{"oldText": "old", "newText": "PLANTED"}]})
    ok(f"Path: {os.path.realpath(ws)}/notes/todo.md\n" in message(q), "edit: the prompt names the resolved path", message(q))
    s.sandbox(SWAP_DIR)
    r = s.answer(q, rid)
    ok(is_error(r) and "a symlink appeared at" in text(r) and "/notes after approval; refused" in text(r),
       "edit: the approved call fails naming the symlink", r)
    ok(ssh_unchanged(), "edit: ~/.ssh/todo.md is unchanged", read(os.path.join(ssh, "todo.md")))

    # --- read: the model would get the private key back
    reset_notes()
    rid, q = s.ask("read", {"path": "notes/id_ed25519"})
    s.sandbox(SWAP_DIR)
    r = s.answer(q, rid)
    ok(is_error(r) and "a symlink appeared at" in text(r) and b"SECRET" not in json.dumps(r).encode(),
       "read: refused, the key is not in the result", r)

    # --- the last component swapped for a symlink to a file outside
    reset_notes()
    rid, q = s.ask("write", {"path": "notes/todo.md", "content": "ssh-ed25519 ATTACKER\n"})
    s.sandbox(f"rm notes/todo.md && ln -s {ssh}/authorized_keys notes/todo.md")
    r = s.answer(q, rid)
    ok(is_error(r) and text(r) == f"cordon: a symlink appeared at {os.path.realpath(ws)}/notes/todo.md after approval; refused",
       "write: a symlink planted as the file itself is refused by name", r)
    ok(ssh_unchanged(), "authorized_keys is unchanged", read(os.path.join(ssh, "authorized_keys")))

    # --- ls, find and grep walk exactly the approved directory
    for tool, args in (("ls", {"path": "notes"}), ("find", {"pattern": "*", "path": "notes"}),
                       ("grep", {"pattern": "SECRET", "path": "notes"})):
        reset_notes()
        rid, q = s.ask(tool, args)
        s.sandbox(SWAP_DIR)
        r = s.answer(q, rid)
        ok(is_error(r) and "a symlink appeared at" in text(r) and "id_ed25519" not in text(r).replace("notes", "")
           and "SECRET" not in text(r) and "authorized_keys" not in text(r),
           f"{tool}: refused, nothing of ~/.ssh listed", r)

    # --- a symlink that was there before the prompt: the prompt says where it leads
    reset_notes()
    os.symlink(ssh, os.path.join(ws, "keys"))
    rid, q = s.ask("read", {"path": "keys/id_ed25519"})
    msg = message(q)
    ok(f"Path: {ssh}/id_ed25519  (reached through a symlink)  (OUTSIDE the workspace {os.path.realpath(ws)})\n" in msg,
       "a path leading out through a symlink is shown resolved, marked as outside the workspace", msg)
    r = s.answer(q, rid, approve=False)
    ok(is_error(r) and "declined" in text(r), "declined: nothing read", r)
    os.unlink(os.path.join(ws, "keys"))

    # --- a dangling symlink: nothing to show, refused before asking
    os.symlink(os.path.join(ssh, "new-key"), os.path.join(ws, "dangling"))
    rid, q = s.ask("write", {"path": "dangling", "content": "x"})
    ok(q and q.get("id") == rid and is_error(q) and "is a symlink to a missing target" in text(q)
       and not os.path.exists(os.path.join(ssh, "new-key")),
       "a write through a dangling symlink is refused without a prompt", q)
    os.unlink(os.path.join(ws, "dangling"))

    # --- hidden characters: shown escaped and counted (vector 5)
    cmd = "echo \u202eevil\u200b; printf '\x1b[2K'"
    rid, q = s.ask("bash", {"command": cmd})
    msg = message(q)
    ok("\u202e" not in msg and "\u200b" not in msg and "\x1b" not in msg
       and '"command":"echo \\u202eevil\\u200b; printf \'\\x1b[2K\'"' in msg
       and "NOTE: this call contains 3 invisible or control characters, shown escaped" in msg,
       "bash: U+202E, U+200B and ESC are shown escaped and counted", msg)
    ok(q["params"]["_meta"]["cordon/approval"]["hiddenCharacters"] == 3
       and q["params"]["_meta"]["cordon/approval"]["arguments"]["command"] == cmd,
       "_meta keeps the exact arguments and the count", q["params"]["_meta"])
    s.answer(q, rid, approve=False)
    # invalid UTF-8 cannot come in a JSON-RPC line ...
    s.send(b'{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"bash","arguments":'
           b'{"command":"echo \xff\xfe","execution_target":"host"}}}')
    m = s.recv(20)
    ok(m and m.get("error", {}).get("code") == -32700, "raw invalid UTF-8 in a request is a parse error, nothing asked", m)
    # ... but a name in the workspace can hold it, and the resolved path shows it
    bad = os.path.join(ws.encode(), b"\xff\xfe\xe2\x80\xae")
    os.makedirs(bad)
    with open(os.path.join(bad, b"f"), "w") as f:
        f.write("x\n")
    os.symlink(bad, os.path.join(ws.encode(), b"odd"))
    rid, q = s.ask("read", {"path": "odd/f"})
    msg = message(q)
    ok(f"Path: {os.path.realpath(ws)}/\\xff\\xfe\\u202e/f  (reached through a symlink)\n" in msg
       and "NOTE: this call contains 3 invisible or control characters" in msg,
       "invalid UTF-8 and U+202E in the resolved path are shown as \\xNN and \\u202e, and counted", msg)
    r = s.answer(q, rid)
    ok(not is_error(r) and text(r) == "x\n", "approved: the read opens that path", r)

    # --- bash: the approved working directory is pinned
    s.close()
    s = Server(os.path.join(ws, "sub"), env)
    rid, q = s.ask("bash", {"command": "pwd -P; touch marker"})
    ok(f"Working directory: {os.path.realpath(ws)}/sub\n" in message(q), "bash: the prompt names the cwd", message(q))
    s.sandbox(f"cd .. && mv sub sub.orig && ln -s {ssh} sub")
    r = s.answer(q, rid)
    ok(is_error(r) and not os.path.exists(os.path.join(ssh, "marker")) and ssh_unchanged(),
       "bash: a cwd swapped for a symlink after the prompt is refused, nothing ran in ~/.ssh", r)
    s.close()
    os.unlink(os.path.join(ws, "sub"))
    os.rename(os.path.join(ws, "sub.orig"), os.path.join(ws, "sub"))
    s = Server(os.path.join(ws, "sub"), env)
    rid, q = s.ask("bash", {"command": "pwd -P"})
    r = s.answer(q, rid)
    ok(not is_error(r) and text(r) == f"{os.path.realpath(ws)}/sub\n", "bash: unswapped, it runs in the approved cwd", r)
    s.close()
finally:
    subprocess.run(["rm", "-rf", tmp])
print(f"1..{n}")
sys.exit(1 if failed else 0)
