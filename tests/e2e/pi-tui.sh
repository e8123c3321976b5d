#!/usr/bin/env bash
# pi's interactive TUI end-to-end (pi-tui.mjs), in tmux, under Node.
command -v node >/dev/null || { echo "1..0 # SKIP node is not installed"; exit 0; }
exec node "$(dirname "$0")/pi-tui.mjs"
