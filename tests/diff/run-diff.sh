#!/usr/bin/env bash
# Runs the differential suite (run-diff.mjs) with Node; TAP on stdout.
dir=$(cd "$(dirname "$0")" && pwd)
if ! command -v node >/dev/null; then
    echo "1..0 # SKIP node is not installed"
    exit 0
fi
exec node "$dir/run-diff.mjs" "$@"
