#!/usr/bin/env bash
# The differential suite through `cordon tool`: every call runs in a real
# sandbox of the fixture (the agent protocol, cordon-agent, the namespace
# backend), and must still return pi's bytes.
dir=$(cd "$(dirname "$0")" && pwd)
if ! command -v node >/dev/null; then
    echo "1..0 # SKIP node is not installed"
    exit 0
fi
# Two sandboxed calls at a time (each waits mostly on its sandbox's setup);
# the results are reported in case order.
CORDON_DIFF_JOBS=2 CORDON_DIFF_SANDBOX=1 CORDON_TOOL_RUNNER="$CORDON tool" exec node "$dir/run-diff.mjs" "$@"
