"""Two builds of cordon alternating in one run: wall time from spawning
`cordon mcp` (ns backend) to the first tool result (initialize, then a
`read` of a small file), the order turned every round. For a before/after
of the MCP start on one machine, where only a comparison inside one run
means anything. Host context, benchmark-only.
Usage: mcp-start-ab.py CORDON_A CORDON_B [RUNS] (run from any directory;
the workspace is a new temporary directory)."""
import importlib.util
import os
import statistics
import sys
import tempfile
import time

here = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location("vm_start", os.path.join(here, "vm-start.py"))
vm_start = importlib.util.module_from_spec(spec)
spec.loader.exec_module(vm_start)


def first_result(cordon, ws):
    t0 = time.monotonic()
    mcp = vm_start.Mcp(cordon, ws, "ns")
    mcp.request("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                               "clientInfo": {"name": "mcp-start-ab", "version": "1"}})
    mcp.call("read", {"path": "small.txt"})
    elapsed = (time.monotonic() - t0) * 1000
    mcp.close()
    return elapsed


def main():
    if len(sys.argv) < 3:
        sys.exit("usage: mcp-start-ab.py CORDON_A CORDON_B [RUNS]")
    builds = [os.path.abspath(b) for b in sys.argv[1:3]]
    runs = int(sys.argv[3]) if len(sys.argv) > 3 else 40
    with tempfile.TemporaryDirectory(prefix="cordon-bench.") as ws:
        with open(os.path.join(ws, "small.txt"), "w") as f:
            f.write("hello\n")
        times = {b: [] for b in builds}
        for b in builds:  # one warm-up each (the /etc cache, page cache)
            first_result(b, ws)
        for i in range(runs):
            for b in builds if i % 2 == 0 else builds[::-1]:
                times[b].append(first_result(b, ws))
    load = open("/proc/loadavg").read().split()[0]
    print(f"cordon mcp (ns) to the first tool result, {runs} runs each, alternating (load {load})")
    for name, b in zip("AB", builds):
        v = sorted(times[b])
        print(f"  {name} {b}: min {v[0]:.1f} ms, median {statistics.median(v):.1f} ms, "
              f"p90 {v[int(len(v) * 0.9)]:.1f} ms")


if __name__ == "__main__":
    main()
