#!/usr/bin/env bash
# Per-call latency of read, write, edit and `bash -c true` in a warm
# `cordon tool --batch` session (tool-latency.mjs: one call at a time, each
# round trip timed), then the in-agent cost of read measured directly
# (tool-micro: tool_read() in a loop, built by meson from bench/tool-micro.c).
# With --markdown, tables for docs/benchmarks.md.
set -euo pipefail
# shellcheck source=bench/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
here=$bench_here
runs=${RUNS:-1000}
bench_need_cordon
cordon=$bench_cordon
micro=$bench_build/bench/tool-micro
[ -x "$micro" ] || { echo "bench: build first: $micro missing" >&2; exit 1; }
node "$here/tool-latency.mjs" "$cordon" "$runs" "$@"
echo
scratch=$(mktemp -d /tmp/cordon-bench-micro.XXXXXX)
trap 'rm -rf "$scratch"' EXIT
(cd "$scratch" && "$micro" "${MICRO_CALLS:-10000}" "$@")
