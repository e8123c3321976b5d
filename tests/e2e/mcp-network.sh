#!/usr/bin/env bash
# Allowing a refused destination for the rest of a session (issue 18), with
# the official MCP SDK client (mcp-network.mjs) under Node.
command -v node >/dev/null || { echo "1..0 # SKIP node is not installed"; exit 0; }
exec node "$(dirname "$0")/mcp-network.mjs"
