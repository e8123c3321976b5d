#!/usr/bin/env bash
# The pi extension's dialog for a refused network destination (pi-network.mjs) under Node.
command -v node >/dev/null || { echo "1..0 # SKIP node is not installed"; exit 0; }
exec node "$(dirname "$0")/pi-network.mjs"
