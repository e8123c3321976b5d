#!/usr/bin/env bash
# The pi package installed with `pi install` and removed (pi-package.mjs).
command -v node >/dev/null || { echo "1..0 # SKIP node is not installed"; exit 0; }
exec node "$(dirname "$0")/pi-package.mjs"
