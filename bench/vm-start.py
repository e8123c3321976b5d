"""The vm backend's start-up cost as an MCP client sees it: wall time from
spawning `cordon mcp` to the first tool result (initialize, then a `read`
of a small file), then the latency of further calls (read, bash `true`) on
the running sandbox; ns, vm booted cold (CORDON_VM_SNAPSHOT=0) and vm
restored from its snapshot, alternating in one run and workspace. Host
context, benchmark-only. Usage: vm-start.py CORDON WORKSPACE RUNS CALLS
(BENCH_BACKENDS="ns" for one backend; default "ns vm-cold vm")"""
import json
import os
import select
import statistics
import subprocess
import sys
import time


class Mcp:
    def __init__(self, cordon, cwd, backend):
        env = dict(os.environ, CORDON_BACKEND=backend)
        if backend == "vm-cold":
            env.update(CORDON_BACKEND="vm", CORDON_VM_SNAPSHOT="0")
        self.proc = subprocess.Popen([cordon, "mcp"], cwd=cwd, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)
        self.buf = b""
        self.next_id = 0

    def request(self, method, params, timeout=120.0):
        self.next_id += 1
        msg = {"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params}
        self.proc.stdin.write(json.dumps(msg).encode() + b"\n")
        self.proc.stdin.flush()
        deadline = time.monotonic() + timeout
        while True:
            while b"\n" not in self.buf:
                left = deadline - time.monotonic()
                r, _, _ = select.select([self.proc.stdout], [], [], max(left, 0))
                if not r:
                    raise RuntimeError(f"no answer to {method} within {timeout} s")
                chunk = os.read(self.proc.stdout.fileno(), 65536)
                if not chunk:
                    raise RuntimeError("cordon mcp exited")
                self.buf += chunk
            line, self.buf = self.buf.split(b"\n", 1)
            resp = json.loads(line)
            if resp.get("id") == self.next_id:
                if "error" in resp or resp.get("result", {}).get("isError"):
                    raise RuntimeError(f"{method} failed: {line[:300]!r}")
                return resp

    def call(self, tool, args):
        return self.request("tools/call", {"name": tool, "arguments": args})

    def close(self):
        self.proc.stdin.close()
        self.proc.wait(30)


def ms(v):
    return f"{v:7.0f} ms" if v >= 100 else f"{v:7.1f} ms"


def main():
    cordon, ws, runs, calls = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    with open(os.path.join(ws, "hello.txt"), "w") as f:
        f.write("hello\n")
    backends = os.environ.get("BENCH_BACKENDS", "ns vm-cold vm").split()
    results = {b: ([], [], []) for b in backends}
    inside = {b: [] for b in backends}
    for backend in backends:
        # One warm-up: the vm backend builds and caches its initramfs,
        # learns which accelerator works and saves its snapshot on the first
        # run.
        m = Mcp(cordon, ws, backend)
        m.request("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                 "clientInfo": {"name": "bench", "version": "1"}})
        m.call("read", {"path": "hello.txt"})
        m.close()
    # Alternating: a busy moment of the machine costs every backend alike.
    for _ in range(runs):
        for backend in backends:
            first, per_read, per_bash = results[backend]
            t0 = time.monotonic()
            m = Mcp(cordon, ws, backend)
            m.request("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                     "clientInfo": {"name": "bench", "version": "1"}})
            m.call("read", {"path": "hello.txt"})
            first.append((time.monotonic() - t0) * 1000)
            for _ in range(calls):
                t = time.monotonic()
                m.call("read", {"path": "hello.txt"})
                per_read.append((time.monotonic() - t) * 1000)
                t = time.monotonic()
                m.call("bash", {"command": "true"})
                per_bash.append((time.monotonic() - t) * 1000)
            # Where a bash call goes: the same spawn timed inside the
            # sandbox (no channel, no agent), per spawn.
            r = m.call("bash", {"command": "TIMEFORMAT=%R; { time (for i in 1 2 3 4 5 6 7 8 9 10;"
                                           " do bash -c true; done); } 2>&1"})
            text = "".join(c.get("text", "") for c in r["result"].get("content", []))
            try:
                inside[backend].append(float(text.strip().split()[-1]) * 100)
            except (ValueError, IndexError):
                pass
            m.close()
    load = open("/proc/loadavg").read().split()[0]
    print(f"cordon mcp: spawn to first tool result, then per-call latency "
          f"({os.cpu_count()} host CPUs, load {load}; {runs} runs, {calls} calls of each per run)")
    print(f"{'':7}  {'first result: min':>18} {'median':>10} {'max':>10}   "
          f"{'read median':>11} {'bash true median':>16} {'inside: bash -c true':>20}")
    for backend, (first, rd, bs) in results.items():
        print(f"{backend:7}  {ms(min(first)):>18} {ms(statistics.median(first)):>10} "
              f"{ms(max(first)):>10}   {ms(statistics.median(rd)):>11} "
              f"{ms(statistics.median(bs)):>16} "
              f"{ms(statistics.median(inside[backend])) if inside[backend] else '?':>20}")


if __name__ == "__main__":
    main()
