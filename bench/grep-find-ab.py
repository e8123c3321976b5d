"""Two builds' grep and find in a warm session, alternating in one run: the
cases of bench/grep-find.sh on the generated tree, each call timed from the
request written to the answer read (`cordon tool --batch`), the order
turned every round. For a before/after of the agent's walk and search,
where only a comparison inside one run means anything. Host context,
benchmark-only.
Usage: grep-find-ab.py CORDON_A CORDON_B [RUNS] [TREE]
(RUNS default 11; TREE default /tmp/cordon-bench-tree, which
bench/grep-find.sh generates)."""
import json
import os
import statistics
import subprocess
import sys
import time

CASES = [
    ("find", {"pattern": "*.proto"}),
    ("find", {"pattern": "d3/**/*.go"}),
    ("grep", {"pattern": "rare_marker_"}),
    ("grep", {"pattern": "rare_marker_\\d+ \\*/"}),
]


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    builds = [os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])]
    runs = int(sys.argv[3]) if len(sys.argv) > 3 else 11
    tree = sys.argv[4] if len(sys.argv) > 4 else "/tmp/cordon-bench-tree"
    if not os.path.isdir(tree):
        sys.exit(f"grep-find-ab: {tree} is missing (bench/grep-find.sh generates it)")
    procs = [subprocess.Popen([b, "tool", "--batch"], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, cwd=tree, text=True) for b in builds]

    def call(p, n, tool, args):
        t0 = time.perf_counter()
        p.stdin.write(json.dumps({"id": n, "tool": tool, "args": args}) + "\n")
        p.stdin.flush()
        answer = json.loads(p.stdout.readline())
        took = (time.perf_counter() - t0) * 1000
        return took, answer["content"][0]["text"]

    times = {(k, i): [] for k in range(2) for i in range(len(CASES))}
    n = 0
    for r in range(-1, runs):  # round -1 warms the cache and compares answers
        for i, (tool, args) in enumerate(CASES):
            texts = []
            for k in ((0, 1) if r % 2 else (1, 0)):
                n += 1
                took, text = call(procs[k], n, tool, args)
                texts.append(text)
                if r >= 0:
                    times[(k, i)].append(took)
            if texts[0] != texts[1]:
                sys.exit(f"grep-find-ab: the two builds answer {tool} {args} differently")
    for p in procs:
        p.stdin.close()
        p.wait()
    print(f"grep/find in a warm session, {runs} rounds alternating (load {os.getloadavg()[0]:.2f})")
    for i, (tool, args) in enumerate(CASES):
        a = statistics.median(times[(0, i)])
        b = statistics.median(times[(1, i)])
        print(f"  {tool} {args['pattern']}: A {a:.1f} ms, B {b:.1f} ms, B/A {b / a:.2f}")


if __name__ == "__main__":
    main()
