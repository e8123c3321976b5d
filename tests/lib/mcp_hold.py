"""Keeps a `cordon mcp` session alive for a shell test (test helper only).

usage: mcp_hold.py CORDON [MCP ARGS...]   (cwd: the workspace)

Starts `cordon mcp ARGS` (its stderr goes to this script's), initializes, runs one bash call, then prints
"READY <supervisor pid> <that call's output>". Then reads commands, one per
line, on stdin:
  call CMD   runs CMD with the bash tool: "RESULT <seconds> <output as JSON>"
  quit       closes stdin of `cordon mcp` and waits: "DONE <exit status>"
End of stdin is "quit". Every line it prints is flushed at once."""
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from mcp_client import Mcp, text_of  # noqa: E402


def main():
    # The supervisor's stderr is this script's (the test reads its log).
    m = Mcp(sys.argv[1], os.getcwd(), *sys.argv[2:], stderr=None)
    m.initialize()
    m.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    r = m.call(1, "bash", {"command": "echo alive"})
    out = text_of(r)
    if out is None:
        print("FAILED", json.dumps(r), flush=True)
        m.close()
        print("DONE", m.proc.returncode, flush=True)
        return
    print("READY", m.proc.pid, out.strip(), flush=True)
    rid = 10
    for line in sys.stdin:
        line = line.rstrip("\n")
        if line == "quit":
            break
        if line.startswith("call "):
            rid += 1
            t = time.time()
            r = m.call(rid, "bash", {"command": line[5:]})
            print("RESULT %.3f %s" % (time.time() - t, json.dumps(text_of(r))), flush=True)
    m.close()
    print("DONE", m.proc.returncode, flush=True)


main()
