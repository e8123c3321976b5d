#!/usr/bin/env bash
# Tool calls over `cordon mcp` (read of a 4 KiB file, bash `true`): median
# and p99 of one call at a time, calls per second with 8 in flight, against
# the same calls made by pi 0.73.1's tool implementations in-process in Node
# on the host (mcp-latency.mjs). With --markdown, a table for
# docs/benchmarks.md.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cordon=${CORDON:-$here/../build/cordon}
[ -x "$cordon" ] || { echo "bench: build cordon first (make build)" >&2; exit 1; }
exec node "$here/mcp-latency.mjs" "$(cd "$(dirname "$cordon")" && pwd)/$(basename "$cordon")" "${RUNS:-600}" "$@"
