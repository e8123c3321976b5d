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
# The floor: bench/splice-relay.c, the least work any relaying proxy must
# do (CONNECT answered, then splice(2) both ways; no policy, no lookup, no
# sandbox), runs in the same loop with the client on the host. It tells
# what share of the gap to direct is the proxy's code and what share is
# the second TCP connection on this machine's cores.
#
# Usage: bench/proxy.sh [BUILD_DIR] [--markdown]   (RUNS=N, LATENCY_N=N)
# With --markdown, also a table row for docs/benchmarks.md.
set -euo pipefail
# shellcheck source=bench/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
src=$bench_src
build=$bench_build
markdown=
for arg in "$@"; do
    case $arg in
    --markdown) markdown=1 ;;
    *) build=$arg ;;
    esac
done
build=$(cd "$build" && pwd)
cordon=$build/cordon
client=$build/bench/proxy-client
relay=$build/bench/splice-relay
for f in "$cordon" "$client" "$relay"; do
    [ -x "$f" ] || { echo "bench: build first ($f missing)" >&2; exit 1; }
done
PY=/usr/bin/python3
tmp=$(mktemp -d /tmp/cordon-bench.XXXXXX)
chmod 755 "$tmp"
server_pid=
relay_pid=
trap 'kill $server_pid $relay_pid 2>/dev/null; rm -rf "$tmp"' EXIT
mkdir -p "$tmp/www" "$tmp/ws"
head -c $((100 * 1024 * 1024)) /dev/urandom >"$tmp/www/big"
echo small >"$tmp/www/small"
cp "$client" "$tmp/ws/proxy-client"
port=$((30000 + RANDOM % 20000))
$PY "$src/bench/proxy-server.py" "$port" "$tmp/www" >/dev/null 2>&1 &
server_pid=$!
relay_port=$((port + 1))
"$relay" "$relay_port" &
relay_pid=$!
for p in "$port" "$relay_port"; do
    for _ in $(seq 100); do (exec 3<>/dev/tcp/127.0.0.1/$p) 2>/dev/null && break; sleep 0.1; done
done
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
: >"$tmp/relay"
for i in $(seq "$runs"); do
    "$client" download 127.0.0.1 "$port" /big | mibs >>"$tmp/direct"
    in_sandbox ./proxy-client download bench.test "$port" /big 3128 | mibs >>"$tmp/proxy"
    "$client" download 127.0.0.1 "$port" /big "$relay_port" | mibs >>"$tmp/relay"
done
direct=$(median <"$tmp/direct")
proxied=$(median <"$tmp/proxy")
floor=$(median <"$tmp/relay")
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
relay_t0=$(cpu_ticks "$relay_pid")
for i in $(seq 10); do "$client" download 127.0.0.1 "$port" /big "$relay_port" >/dev/null; done
relay_cpu_ms=$(awk -v t="$(($(cpu_ticks "$relay_pid") - relay_t0))" -v hz="$(getconf CLK_TCK)" 'BEGIN { printf "%.0f", 1000 * t / hz / 10 }')
# The proxy's own CPU time (user + system, from /proc) for 10 downloads in
# one session: less sensitive to other load than the throughput.
cpu_runs=10
in_sandbox bash -c "sleep 0.5; for i in \$(seq $cpu_runs); do ./proxy-client download bench.test $port /big 3128 >/dev/null; done" &
session=$!
ppid() { awk '/^PPid:/ { print $2 }' "/proc/$1/status" 2>/dev/null; }
descends() { # descends PID ANCESTOR (other sessions may run on a shared machine)
    local p=$1 i
    for i in 1 2 3 4 5; do
        p=$(ppid "$p")
        [ -n "$p" ] || return 1
        [ "$p" = "$2" ] && return 0
    done
    return 1
}
# The proxy: a cordon process in the host's network namespace whose
# parent is cordon (the supervisor) and whose grandparent is not.
proxy_pid=
for _ in $(seq 100); do
    for c in $(pgrep -x cordon); do
        [ "$(readlink "/proc/$c/ns/net")" = "$(readlink /proc/self/ns/net)" ] || continue
        parent=$(ppid "$c")
        # (not one of its resolver workers, whose parent is the proxy)
        [ "$(cat "/proc/$parent/comm" 2>/dev/null)" = cordon ] &&
            [ "$(cat "/proc/$(ppid "$parent")/comm" 2>/dev/null)" != cordon ] &&
            descends "$c" "$session" && proxy_pid=$c
    done
    [ -n "$proxy_pid" ] && break
    sleep 0.05
done
ticks=
while [ -n "$proxy_pid" ] && [ -d "/proc/$proxy_pid" ]; do
    t=$(awk '{ print $14 + $15 }' "/proc/$proxy_pid/stat" 2>/dev/null) && [ -n "$t" ] && ticks=$t
    sleep 0.05
done
wait $session
cpu_ms=$(awk -v t="${ticks:-0}" -v hz="$(getconf CLK_TCK)" -v n=$cpu_runs 'BEGIN { printf "%.0f", 1000 * t / hz / n }')
lat_direct=$("$client" latency 127.0.0.1 "$port" "$latency_n")
lat_proxy=$(in_sandbox ./proxy-client latency bench.test "$port" "$latency_n" 3128)
ratio=$(awk -v a="$proxied" -v b="$direct" 'BEGIN { printf "%.0f", 100 * a / b }')
floor_ratio=$(awk -v a="$floor" -v b="$direct" 'BEGIN { printf "%.0f", 100 * a / b }')
vs_floor=$(awk -v a="$proxied" -v b="$floor" 'BEGIN { printf "%.0f", 100 * a / b }')
# Each proxied run against the direct run just before it (same load).
pair_ratio=$(paste "$tmp/direct" "$tmp/proxy" | awk '{ printf "%.1f\n", 100 * $2 / $1 }' | median)
echo "direct MiB/s:    $(tr '\n' ' ' <"$tmp/direct")"
echo "via proxy MiB/s: $(tr '\n' ' ' <"$tmp/proxy")"
echo "via splice-relay MiB/s: $(tr '\n' ' ' <"$tmp/relay")"
printf 'download 100 MiB, median of %d alternating runs:  direct %s MiB/s   via proxy %s MiB/s   (%s%% of direct, target >= 80%%; median of per-pair ratios %s%%)\n' \
    "$runs" "$direct" "$proxied" "$ratio" "$pair_ratio"
printf 'floor, bench/splice-relay (no sandbox, no policy): %s MiB/s (%s%% of direct); cordon is at %s%% of the floor\n' \
    "$floor" "$floor_ratio" "$vs_floor"
printf 'proxy CPU time (user + system) per 100 MiB relayed: %s ms (%d downloads in one session); splice-relay: %s ms\n' \
    "$cpu_ms" "$cpu_runs" "$relay_cpu_ms"
printf 'connect + GET /small, median of %d:  direct %s ms   via proxy %s ms\n' \
    "$latency_n" "$lat_direct" "$lat_proxy"
if [ "$ratio" -ge 80 ]; then echo "target (>= 80%) met"; else echo "target (>= 80%) NOT met"; fi
if [ -n "$markdown" ]; then
    echo
    echo "| runs | direct median | via proxy median | ratio of medians | median of per-pair ratios | splice-relay floor median (of direct) | cordon / floor | proxy CPU per 100 MiB (floor) | connect + GET, direct | connect + GET, via proxy | load average |"
    echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"
    echo "| $runs | $direct MiB/s | $proxied MiB/s | $ratio% | $pair_ratio% | $floor MiB/s ($floor_ratio%) | $vs_floor% | $cpu_ms ms ($relay_cpu_ms ms) | $lat_direct ms | $lat_proxy ms | $(cut -d' ' -f1-3 /proc/loadavg) |"
fi
