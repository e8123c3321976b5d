#!/usr/bin/env bash
# Per-call latency of read, write, edit and `bash -c true` in a warm
# `cordon tool --batch` session (tool-latency.mjs: one call at a time, each
# round trip timed), then the in-agent cost of read measured directly
# (tool-micro: tool_read() in a loop, built by meson from bench/tool-micro.c).
# With --markdown, tables for docs/benchmarks.md.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
runs=${RUNS:-1000}
build=$(cd "$here/.." && pwd)/${BUILDDIR:-build}
cordon=${CORDON:-$build/cordon}
micro=$build/bench/tool-micro
[ -x "$cordon" ] && [ -x "$micro" ] || { echo "bench: build cordon first (make build)" >&2; exit 1; }
node "$here/tool-latency.mjs" "$cordon" "$runs" "$@"
echo
scratch=$(mktemp -d /tmp/cordon-bench-micro.XXXXXX)
trap 'rm -rf "$scratch"' EXIT
(cd "$scratch" && "$micro" "${MICRO_CALLS:-10000}" "$@")
