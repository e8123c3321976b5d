#!/usr/bin/env bash
# The real pi wrapped whole: cordon run -- pi (pi-wrap.mjs).
command -v node >/dev/null || { echo "1..0 # SKIP node is not installed"; exit 0; }
exec node "$(dirname "$0")/pi-wrap.mjs"
