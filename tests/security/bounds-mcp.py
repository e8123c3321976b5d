"""A slow MCP client (tests/security/bounds.sh): starts bash calls with
progress tokens whose commands print as fast as they can, does not read
cordon's stdout for a while, samples the server's resident memory meanwhile,
then reads everything and checks each call's final result.
Usage: bounds-mcp.py CORDON SECONDS CALLS
Prints NAME=VALUE observations, one a line."""
import json
import os
import select
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from mcp_client import Mcp  # noqa: E402


def out(name, value):
    print(f"{name}={value}", flush=True)


def rss_kib(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def main():
    cordon, seconds, calls = sys.argv[1], float(sys.argv[2]), int(sys.argv[3])
    m = Mcp(cordon, os.getcwd())
    init = m.initialize()
    out("initialized", "yes" if init and "result" in init else "no")
    # A first call builds the sandbox, so the baseline includes it.
    first = m.call(1, "bash", {"command": "echo warm"}, timeout=60)
    out("warm", "yes" if first and "result" in first else "no")
    base = rss_kib(m.proc.pid)
    out("base_rss_kib", base)
    for i in range(calls):
        # Lines of 1000 bytes as fast as the sandbox prints them, for longer
        # than the client stays away (so progress keeps coming the whole
        # time), then a marker the final result must hold.
        cmd = (f"end=$((SECONDS+{int(seconds) + 3})); line=$(printf '%01000d' {i}); "
               f"while [ $SECONDS -lt $end ]; do yes \"$line\" | head -c 20000000; done; "
               f"echo; echo final-marker-{i}")
        m.send({"jsonrpc": "2.0", "id": 100 + i, "method": "tools/call",
                "params": {"name": "bash", "arguments": {"command": cmd, "timeout": 300},
                           "_meta": {"progressToken": f"tok-{i}"}}})
    peak = base
    deadline = time.time() + seconds
    while time.time() < deadline:
        peak = max(peak, rss_kib(m.proc.pid))
        time.sleep(0.2)
    out("peak_rss_kib", peak)
    out("growth_mib", (peak - base) // 1024)
    # Now read: every call's result must arrive whole, after its progress.
    results, progress, after_result = {}, {}, 0
    last_progress = {}
    backwards = 0
    end = time.time() + 240
    while len(results) < calls and time.time() < end:
        msg = m.recv(timeout=max(1.0, end - time.time()))
        if msg is None:
            break
        if msg.get("method") == "notifications/progress":
            tok = msg["params"]["progressToken"]
            progress[tok] = progress.get(tok, 0) + 1
            val = msg["params"]["progress"]
            if val <= last_progress.get(tok, -1):
                backwards += 1
            last_progress[tok] = val
            if int(tok.split("-")[1]) + 100 in results:
                after_result += 1
        elif "id" in msg and msg["id"] in range(100, 100 + calls):
            res = msg.get("result") or {}
            text = "".join(c.get("text", "") for c in res.get("content", []))
            results[msg["id"]] = text
    ok = sum(1 for i in range(calls) if f"final-marker-{i}" in results.get(100 + i, ""))
    out("results", len(results))
    out("results_with_marker", ok)
    out("progress_seen", sum(progress.values()))
    out("progress_after_result", after_result)
    out("progress_backwards", backwards)
    out("final_rss_kib", rss_kib(m.proc.pid))
    m.close()
    out("exit", m.proc.returncode)


main()
