#!/usr/bin/env bash
# `make bench`: every benchmark, side by side with its peer.
set -euo pipefail
cd "$(dirname "$0")"
for b in cold-start.sh grep-find.sh tool-latency.sh mcp-latency.sh proxy.sh; do
    echo "== $b"
    ./"$b" "$@"
done
