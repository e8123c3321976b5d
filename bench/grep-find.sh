#!/usr/bin/env bash
# grep and find over a generated tree of 50,000 files (gen-tree.py: nested
# directories, source-like text, .gitignore files, a git repository without
# commits) against ripgrep and fd run with pi's own arguments, warm cache,
# alternating. The tree is kept in $BENCH_TREE (default
# /tmp/cordon-bench-tree) between runs; it depends only on the generator.
# With --markdown, a table for docs/benchmarks.md.
set -euo pipefail
# shellcheck source=bench/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
here=$bench_here
runs=${RUNS:-15}
bench_need_cordon
cordon=$bench_cordon
tree=${BENCH_TREE:-/tmp/cordon-bench-tree}
# Another tree (a real repository, say): BENCH_DIR=DIR and
# BENCH_QUERIES="LITERAL|REGEX|GLOB|PATH-GLOB" (see docs/benchmarks.md).
if [ -n "${BENCH_DIR:-}" ]; then
    [ -n "${BENCH_QUERIES:-}" ] || { echo "bench: BENCH_DIR needs BENCH_QUERIES" >&2; exit 1; }
    exec node "$here/grep-find.mjs" "$cordon" "$(bench_abs "$BENCH_DIR")" "$runs" "$@"
fi
for tool in rg fdfind node python3; do
    command -v "$tool" >/dev/null || { echo "bench: $tool not installed" >&2; exit 1; }
done
stamp=$(sha256sum "$here/gen-tree.py" | cut -c1-16)
if [ ! -f "$tree/.stamp-$stamp" ]; then
    rm -rf "$tree"
    echo "bench: generating $tree (about 30 s)" >&2
    python3 "$here/gen-tree.py" "$tree/ws" 50000
    touch "$tree/.stamp-$stamp"
fi
exec node "$here/grep-find.mjs" "$cordon" "$tree/ws" "$runs" "$@"
