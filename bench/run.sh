#!/usr/bin/env bash
# `make bench`: every benchmark, side by side with its peer.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
for b in cold-start.sh grep-find.sh tool-latency.sh mcp-latency.sh proxy.sh; do
    echo "== $b"
    bash "$here/$b" "$@"
done
