#!/usr/bin/env python3
# Review mode over MCP (tests/integration/review.sh): the status carries the
# pending count; changes and apply are custom methods, never tools.
import json, os, sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from mcp_client import Rpc
cordon = sys.argv[1]
# argv[3:]: the backend's settings (review-docker.sh), none on ns.
rpc = Rpc([cordon, "mcp", "--review", "--name", sys.argv[2]] + sys.argv[3:])
p = rpc.proc
rpc("initialize", {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}})
rpc.notify("notifications/initialized")
tools = [t["name"] for t in rpc("tools/list")["result"]["tools"]]
print("tools", " ".join(sorted(tools)))
rpc("tools/call", {"name": "write", "arguments": {"path": "a.txt", "content": "agent\n"}})
rpc("tools/call", {"name": "write", "arguments": {"path": "b.txt", "content": "b\n"}})
st = rpc("cordon/status")["result"]
print("status", st.get("workspaceMode"), st.get("pendingChanges"))
res = rpc("cordon/reviewChanges")["result"]
ch = res["changes"]
print("changes", " ".join(c["kind"] + ":" + c["path"] for c in ch))
print("checkpoint", res.get("checkpoint"))
# The session runs: apply takes exactly the checkpoint that was shown.
m = rpc("cordon/reviewApply", {"paths": ["b.txt"]})
print("apply-unpinned", "error:" + m["error"]["message"] if "error" in m else "applied")
ap = rpc("cordon/reviewApply", {"paths": ["b.txt"], "checkpoint": res["checkpoint"]})["result"]["results"]
print("apply", " ".join(r["outcome"] + ":" + r["path"] for r in ap))
print("status-after", rpc("cordon/status")["result"].get("pendingChanges"))
# the diff: the user's request too; what the agent wrote cannot paint the
# user's terminal (ESC is escaped)
r = rpc("tools/call", {"name": "write", "arguments": {"path": "esc.txt", "content": "x\x1b[2Jy\n"}})["result"]
print("checkpoint", r["_meta"].get("cordon/checkpoint"))
d = rpc("cordon/reviewDiff")["result"]
print("diff", json.dumps(d["diff"]), d["truncated"])
print("diff-paths", json.dumps(rpc("cordon/reviewDiff", {"paths": ["a.txt"]})["result"]["diff"]))
def sh(cmd):
    r = rpc("tools/call", {"name": "bash", "arguments": {"command": cmd}})["result"]
    return "".join(c.get("text", "") for c in r["content"]).strip()
# call 4: bash writes a file and leaves a process running
sh("echo c > c.txt; (sleep 1000 &) ; echo started")
name = rpc("cordon/status")["result"].get("sandbox")
print("before-rewind", sh("cat c.txt; grep -lx sleep /proc/[0-9]*/comm 2>/dev/null | wc -l"))
r = rpc("cordon/reviewRewind", {"to": 2})
print("rewind", r["result"].get("rewoundTo"), r["result"].get("processesEnded"), r["result"].get("state"), r["result"].get("sandbox") == name)
print("after-rewind", sh("test -e c.txt && echo c-present || echo c-gone; test -e esc.txt && echo esc-present || echo esc-gone; cat a.txt; grep -lx sleep /proc/[0-9]*/comm 2>/dev/null | wc -l"))
print("tools-after", " ".join(sorted(t["name"] for t in rpc("tools/list")["result"]["tools"])))
r = rpc("cordon/reviewRewind", {"to": 999})
print("rewind-999", r.get("error", {}).get("message"), "|", sh("echo still-works"))
r = rpc("cordon/reviewRewind", {"to": "2"})
print("rewind-bad", r.get("error", {}).get("message"))
r = rpc("cordon/reviewDiscard")
print("discard", r["result"].get("discarded"), r["result"].get("pendingChanges"))
print("after-discard", sh("cat a.txt"))
rpc("tools/call", {"name": "write", "arguments": {"path": "d.txt", "content": "shown\n"}})
shown = rpc("cordon/reviewChanges")["result"]["checkpoint"]
rpc("tools/call", {"name": "write", "arguments": {"path": "d.txt", "content": "later\n"}})
m = rpc("cordon/reviewApply", {"paths": ["d.txt"], "checkpoint": shown})
print("apply-stale", "error:" + m["error"]["message"] if "error" in m else "applied")
# a rewind asked while a tool call runs is refused; the call ends as it would
rpc.n += 1
slow = rpc.n
p.stdin.write(json.dumps({"jsonrpc": "2.0", "id": slow, "method": "tools/call", "params": {"name": "bash", "arguments": {"command": "sleep 2; echo slow > slow.txt; echo slow-done"}}}) + "\n"); p.stdin.flush()
r = rpc("cordon/reviewRewind", {"to": 0})
print("rewind-inflight", r.get("error", {}).get("message"))
while True:
    m = json.loads(p.stdout.readline())
    if m.get("id") == slow:
        break
print("inflight-call", "".join(c.get("text", "") for c in m["result"]["content"]).strip(), sh("cat slow.txt"))
p.stdin.close(); p.wait()
