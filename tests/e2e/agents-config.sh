#!/usr/bin/env bash
# docs/agents.md's agent configurations, parsed and run (agents-config.mjs).
command -v node >/dev/null || { echo "1..0 # SKIP node is not installed"; exit 0; }
exec node "$(dirname "$0")/agents-config.mjs"
