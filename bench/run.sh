#!/usr/bin/env bash
# `make bench`: every benchmark, side by side with its peer.
set -euo pipefail
cd "$(dirname "$0")"
for b in cold-start.sh; do
    echo "== $b"
    ./"$b"
done
