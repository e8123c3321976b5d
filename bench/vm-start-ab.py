"""Two builds' vm start as an MCP client sees it, alternating in one run:
wall time from spawning `cordon mcp` (CORDON_BACKEND=vm, the guest
restored from its snapshot) to the first tool result (initialize, then a
`read` of a small file), and the guest's own account of its start from
`cordon --debug run` (where the restore's time goes). Host context,
benchmark-only. Usage: vm-start-ab.py OLD_CORDON NEW_CORDON [RUNS]
(default 9); run from any directory."""
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from importlib import import_module  # noqa: E402

Mcp = import_module("vm-start").Mcp


def first_result(cordon, ws):
    t0 = time.monotonic()
    m = Mcp(cordon, ws, "vm")
    m.request("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                             "clientInfo": {"name": "bench", "version": "1"}})
    m.call("read", {"path": "hello.txt"})
    took = (time.monotonic() - t0) * 1000
    m.close()
    return took


def debug_lines(cordon, ws):
    out = subprocess.run([cordon, "--debug", "run", "--backend", "vm", "--", "true"], cwd=ws,
                         stdin=subprocess.DEVNULL, capture_output=True, text=True).stderr
    keep = ("restored from", "boot spec sent", "checksum passed", "booted in")
    return [re.sub(r"^cordon: debug: ", "", line) for line in out.splitlines()
            if any(k in line for k in keep)]


def main():
    old, new = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    runs = int(sys.argv[3]) if len(sys.argv) > 3 else 9
    with tempfile.TemporaryDirectory(prefix="cordon-bench-") as ws:
        with open(os.path.join(ws, "hello.txt"), "w") as f:
            f.write("hello\n")
        builds = {"old": old, "new": new}
        # Warm-up: each build's initramfs and snapshot made, the
        # accelerator's verdict known.
        for cordon in builds.values():
            first_result(cordon, ws)
            first_result(cordon, ws)
        times = {k: [] for k in builds}
        for _ in range(runs):
            for name, cordon in builds.items():
                times[name].append(first_result(cordon, ws))
        load = open("/proc/loadavg").read().split()[0]
        print(f"cordon mcp --backend vm: spawn to first tool result, restored guest "
              f"({os.cpu_count()} host CPUs, load {load}, {runs} runs each, alternating)")
        for name, t in times.items():
            t.sort()
            print(f"  {name}: min {t[0]:6.0f} ms  median {statistics.median(t):6.0f} ms  "
                  f"max {t[-1]:6.0f} ms  ({builds[name]})")
        print(f"  new / old (median): {statistics.median(times['new']) / statistics.median(times['old']):.2f}")
        for name, cordon in builds.items():
            print(f"  {name}, one `cordon --debug run -- true`:")
            for line in debug_lines(cordon, ws):
                print(f"    {line}")


if __name__ == "__main__":
    main()
