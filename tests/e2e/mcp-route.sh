#!/usr/bin/env bash
# Routing through cordon mcp over raw JSON-RPC lines (mcp-route.py).
command -v python3 >/dev/null || { echo "1..0 # SKIP python3 is not installed"; exit 0; }
exec python3 "$(dirname "$0")/mcp-route.py"
