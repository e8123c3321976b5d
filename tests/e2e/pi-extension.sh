#!/usr/bin/env bash
# The pi integration end-to-end (pi-extension.mjs) under Node.
command -v node >/dev/null || { echo "1..0 # SKIP node is not installed"; exit 0; }
exec node "$(dirname "$0")/pi-extension.mjs"
