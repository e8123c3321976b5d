#!/usr/bin/env python3
"""Deterministic source-like tree for the grep/find benchmarks.

usage: gen-tree.py DIR [FILES]

DIR becomes a git repository (`git init`, no commits: the .gitignore files
then count for ripgrep as they do for cordon's grep). Layout: 10 x 10 x 10
nested directories (d0..d9/m0..m9/l0..l9), FILES source files spread over
the 1000 leaves (default 50,000), each 20-120 lines of C/Python/TypeScript/Go
looking text (~2 KiB on average). Each top-level directory dN and each dN/m5
holds a .gitignore ignoring `*.log` and `gen/`, with five .log files and a
gen/ directory of five files beside it that the tools must skip. Rare markers for the queries:
  - "rare_marker_" + number: on one line in 40 of the files (a grep literal
    that forces a full scan: 40 < pi's 100-match limit);
  - files named *.proto: 60 of them (a find glob with few results).
The content depends only on FILES (a fixed-seed PRNG), never on time.
"""
import os
import random
import subprocess
import sys

WORDS = ("alpha beta gamma delta value result buffer index count state config "
         "handler request response error options context path name data item "
         "list map key node parent child offset length size total start end").split()
EXTS = (".c", ".py", ".ts", ".go", ".h", ".js", ".rs", ".md")


def line(rng, ext, n):
    w = [rng.choice(WORDS) for _ in range(rng.randint(2, 7))]
    ident = "_".join(w[:2])
    kind = n % 6
    if ext in (".py",):
        return ["def %s(%s):" % (ident, ", ".join(w[2:])), "    return %s + %d" % (w[0], n),
                "# %s" % " ".join(w), "%s = %s(%s)" % (w[0], ident, n), "", "    if %s: pass" % w[-1]][kind]
    if ext == ".md":
        return " ".join(w).capitalize() + "." if kind else "## " + " ".join(w)
    return ["static int %s(int %s)" % (ident, w[-1]), "{", "    %s += %s * %d;" % (w[0], w[-1], n),
            "    return %s(%s, %d);" % (ident, w[1], n), "}", "// %s" % " ".join(w)][kind]


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    root = sys.argv[1]
    total = int(sys.argv[2]) if len(sys.argv) > 2 else 50000
    rng = random.Random(20260101)
    os.makedirs(root, exist_ok=True)
    subprocess.run(["git", "init", "-q", root], check=True)
    leaves = [(a, b, c) for a in range(10) for b in range(10) for c in range(10)]
    rare = set(rng.sample(range(total), 40))
    proto = set(rng.sample(range(total), 60))
    for i in range(total):
        a, b, c = leaves[i % len(leaves)]
        d = os.path.join(root, "d%d" % a, "m%d" % b, "l%d" % c)
        if i < len(leaves):
            os.makedirs(d, exist_ok=True)
        ext = ".proto" if i in proto else EXTS[i % len(EXTS)]
        name = "%s_%s_%05d%s" % (rng.choice(WORDS), rng.choice(WORDS), i, ext)
        lines = [line(rng, ext, n) for n in range(rng.randint(20, 120))]
        if i in rare:
            lines[len(lines) // 2] += "  /* rare_marker_%d */" % i
        with open(os.path.join(d, name), "w") as f:
            f.write("\n".join(lines) + "\n")
    for a in range(10):
        for b in range(10):
            if b not in (0, 5):
                continue
            d = os.path.join(root, "d%d" % a, "m%d" % b) if b else os.path.join(root, "d%d" % a)
            with open(os.path.join(d, ".gitignore"), "w") as f:
                f.write("*.log\ngen/\n")
            os.makedirs(os.path.join(d, "gen"), exist_ok=True)
            for k in range(5):
                with open(os.path.join(d, "gen", "out%d.c" % k), "w") as f:
                    f.write("/* rare_marker_ignored */\nint generated_%d;\n" % k)
                with open(os.path.join(d, "build%d.log" % k), "w") as f:
                    f.write("rare_marker_ignored in a log\n")


if __name__ == "__main__":
    main()
