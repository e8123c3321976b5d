#!/usr/bin/env bash
# Throughput of a 100 MB download and connection set-up latency through
# cordon's allowlist proxy (HTTP CONNECT from inside the sandbox) against a
# direct loopback connection on the host, in one run. Target: the proxy
# reaches >= 80% of direct throughput. Usage: bench/proxy.sh [BUILD_DIR]
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$src/build}" && pwd)
cordon=$build/cordon
[ -x "$cordon" ] || { echo "bench: build first ($cordon missing)" >&2; exit 1; }
PY=/usr/bin/python3
tmp=$(mktemp -d /tmp/cordon-bench.XXXXXX)
chmod 755 "$tmp"
server_pid=
trap '[ -n "$server_pid" ] && kill $server_pid 2>/dev/null; rm -rf "$tmp"' EXIT
mkdir -p "$tmp/www" "$tmp/ws"
head -c $((100 * 1024 * 1024)) /dev/urandom >"$tmp/www/big"
echo small >"$tmp/www/small"
cp "$src/bench/proxy-client.py" "$tmp/ws/client.py"
port=$((30000 + RANDOM % 20000))
$PY "$src/bench/proxy-client.py" serve "$port" "$tmp/www" >/dev/null 2>&1 &
server_pid=$!
for _ in $(seq 100); do (exec 3<>/dev/tcp/127.0.0.1/$port) 2>/dev/null && break; sleep 0.1; done
echo "127.0.0.1 bench.test" >"$tmp/hosts"
runs=${RUNS:-5}
latency_n=${LATENCY_N:-200}

best() { sort -g | tail -1; }
direct=$(for _ in $(seq "$runs"); do $PY "$tmp/ws/client.py" download 127.0.0.1 "$port" /big |
    awk '{printf "%.1f\n", $1 / $2 / 1048576}'; done | best)
proxied=$(cd "$tmp/ws" && "$cordon" run --network allowlist --net-hosts-file "$tmp/hosts" \
    --net-audit-log "$tmp/audit.jsonl" --allow-host bench.test --allow-host "127.0.0.1:$port" -- \
    bash -c "for i in \$(seq $runs); do $PY client.py download bench.test $port /big 3128; done" |
    awk '{printf "%.1f\n", $1 / $2 / 1048576}' | best)
lat_direct=$($PY "$tmp/ws/client.py" latency 127.0.0.1 "$port" "$latency_n")
lat_proxy=$(cd "$tmp/ws" && "$cordon" run --network allowlist --net-hosts-file "$tmp/hosts" \
    --net-audit-log "$tmp/audit.jsonl" --allow-host bench.test --allow-host "127.0.0.1:$port" -- \
    $PY client.py latency bench.test "$port" "$latency_n" 3128)
ratio=$(awk -v a="$proxied" -v b="$direct" 'BEGIN { printf "%.0f", 100 * a / b }')
printf 'download 100 MiB, best of %d:  direct %s MiB/s   via proxy %s MiB/s   (%s%% of direct, target >= 80%%)\n' \
    "$runs" "$direct" "$proxied" "$ratio"
printf 'connect + GET /small, median of %d:  direct %s ms   via proxy %s ms\n' \
    "$latency_n" "$lat_direct" "$lat_proxy"
[ "$ratio" -ge 80 ]
