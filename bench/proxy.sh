#!/usr/bin/env bash
# Throughput of a 100 MiB download and connection set-up latency through
# cordon's allowlist proxy (HTTP CONNECT from inside the sandbox) against a
# direct loopback connection on the host. Target: the proxy reaches >= 80%
# of direct throughput.
#
# Direct and proxied downloads alternate (RUNS of each, default 15), so
# that load from other processes hits both alike; medians are compared.
# The client is bench/proxy-client.c (1 MiB reads into a discarded
# buffer), the server sends with sendfile(2): neither limits the result.
# Each proxied run is its own `cordon run` session (fresh proxy); only the
# download is timed.
#
# Usage: bench/proxy.sh [BUILD_DIR]   (RUNS=N, LATENCY_N=N)
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$src/build}" && pwd)
cordon=$build/cordon
client=$build/bench/proxy-client
for f in "$cordon" "$client"; do
    [ -x "$f" ] || { echo "bench: build first ($f missing)" >&2; exit 1; }
done
PY=/usr/bin/python3
tmp=$(mktemp -d /tmp/cordon-bench.XXXXXX)
chmod 755 "$tmp"
server_pid=
trap '[ -n "$server_pid" ] && kill $server_pid 2>/dev/null; rm -rf "$tmp"' EXIT
mkdir -p "$tmp/www" "$tmp/ws"
head -c $((100 * 1024 * 1024)) /dev/urandom >"$tmp/www/big"
echo small >"$tmp/www/small"
cp "$client" "$tmp/ws/proxy-client"
port=$((30000 + RANDOM % 20000))
$PY "$src/bench/proxy-server.py" "$port" "$tmp/www" >/dev/null 2>&1 &
server_pid=$!
for _ in $(seq 100); do (exec 3<>/dev/tcp/127.0.0.1/$port) 2>/dev/null && break; sleep 0.1; done
echo "127.0.0.1 bench.test" >"$tmp/hosts"
runs=${RUNS:-15}
latency_n=${LATENCY_N:-200}

in_sandbox() { # in_sandbox COMMAND...: in allowlist mode, bench.test allowed
    (cd "$tmp/ws" && "$cordon" run --network allowlist --net-hosts-file "$tmp/hosts" \
        --net-audit-log "$tmp/audit.jsonl" --allow-host bench.test \
        --allow-host "127.0.0.1:$port" -- "$@")
}
mibs() { awk '{ printf "%.0f\n", $1 / $2 / 1048576 }'; }
median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

: >"$tmp/direct"
: >"$tmp/proxy"
for i in $(seq "$runs"); do
    "$client" download 127.0.0.1 "$port" /big | mibs >>"$tmp/direct"
    in_sandbox ./proxy-client download bench.test "$port" /big 3128 | mibs >>"$tmp/proxy"
done
direct=$(median <"$tmp/direct")
proxied=$(median <"$tmp/proxy")
lat_direct=$("$client" latency 127.0.0.1 "$port" "$latency_n")
lat_proxy=$(in_sandbox ./proxy-client latency bench.test "$port" "$latency_n" 3128)
ratio=$(awk -v a="$proxied" -v b="$direct" 'BEGIN { printf "%.0f", 100 * a / b }')
echo "direct MiB/s:    $(tr '\n' ' ' <"$tmp/direct")"
echo "via proxy MiB/s: $(tr '\n' ' ' <"$tmp/proxy")"
printf 'download 100 MiB, median of %d alternating runs:  direct %s MiB/s   via proxy %s MiB/s   (%s%% of direct, target >= 80%%)\n' \
    "$runs" "$direct" "$proxied" "$ratio"
printf 'connect + GET /small, median of %d:  direct %s ms   via proxy %s ms\n' \
    "$latency_n" "$lat_direct" "$lat_proxy"
[ "$ratio" -ge 80 ]
