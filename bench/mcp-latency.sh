#!/usr/bin/env bash
# Tool calls over `cordon mcp` (read of a 4 KiB file, bash `true`): median
# and p99 of one call at a time, calls per second with 8 in flight, against
# the same calls made by pi 0.73.1's tool implementations in-process in Node
# on the host (mcp-latency.mjs). With --markdown, a table for
# docs/benchmarks.md.
set -euo pipefail
# shellcheck source=bench/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
bench_need_cordon
exec node "$bench_here/mcp-latency.mjs" "$bench_cordon" "${RUNS:-600}" "$@"
