#!/usr/bin/env bash
# The MCP SDK end-to-end test (mcp-sdk.mjs) under Node.
command -v node >/dev/null || { echo "1..0 # SKIP node is not installed"; exit 0; }
exec node "$(dirname "$0")/mcp-sdk.mjs"
