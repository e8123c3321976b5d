#!/usr/bin/env bash
# Review mode in pi's interactive TUI end-to-end (pi-review.mjs), in tmux.
command -v node >/dev/null || { echo "1..0 # SKIP node is not installed"; exit 0; }
exec node "$(dirname "$0")/pi-review.mjs"
