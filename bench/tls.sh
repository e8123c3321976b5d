#!/usr/bin/env bash
# TLS interception cost (docs/network.md "TLS interception"): a 100 MiB
# HTTPS download and the TLS handshake latency, three ways, in one
# alternating run:
#   direct       curl on the host straight to the server;
#   tunnel       curl inside an allowlist sandbox, through cordon's proxy as
#                a plain CONNECT tunnel (no secret names the host: spliced);
#   intercepted  the same, with a [[secrets]] entry bound to the host: the
#                proxy terminates TLS with the session CA's leaf and opens
#                its own verified TLS connection to the server.
# The server is `openssl s_server -WWW` (C, OpenSSL) with a CA of its own;
# the client is curl (OpenSSL) writing to /dev/null. Each sandboxed
# download is its own `cordon run` session (fresh proxy, so the first
# intercepted request also makes the leaf). Handshake latency:
# bench/tls-handshake.py, one process and SSL context, LATENCY_N times TCP
# connect (+ CONNECT through the proxy) + TLS handshake (median ms); every
# client verifies against a bundle of the host's CAs and one more.
#
# Usage: bench/tls.sh [BUILD_DIR] [--markdown]   (RUNS=N, LATENCY_N=N)
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
build=$src/build
markdown=
for arg in "$@"; do
    case $arg in
    --markdown) markdown=1 ;;
    *) build=$arg ;;
    esac
done
build=$(cd "$build" && pwd)
cordon=$build/cordon
[ -x "$cordon" ] || { echo "bench: build first ($cordon missing)" >&2; exit 1; }
tmp=$(mktemp -d /tmp/cordon-bench-tls.XXXXXX)
chmod 755 "$tmp"
server_pid=
trap 'kill $server_pid 2>/dev/null; [ -n "${BENCH_KEEP-}" ] || rm -rf "$tmp"' EXIT
mkdir -p "$tmp/www" "$tmp/ws" "$tmp/xdg-plain/cordon" "$tmp/xdg-tls/cordon"
head -c $((100 * 1024 * 1024)) /dev/urandom >"$tmp/www/big"
echo small >"$tmp/www/small"
o() { openssl "$@" >/dev/null 2>&1; }
o req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -subj "/CN=bench CA" \
    -keyout "$tmp/ca.key" -out "$tmp/ca.pem" -addext "basicConstraints=critical,CA:TRUE" \
    -addext "keyUsage=critical,keyCertSign"
o req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=bench.test" \
    -keyout "$tmp/srv.key" -out "$tmp/srv.csr"
printf 'subjectAltName=DNS:bench.test\n' >"$tmp/ext"
o x509 -req -in "$tmp/srv.csr" -CA "$tmp/ca.pem" -CAkey "$tmp/ca.key" -CAcreateserial -days 2 \
    -extfile "$tmp/ext" -out "$tmp/srv.pem"
chmod 644 "$tmp"/*.pem "$tmp"/*.key
# Every client loads a bundle of the same size (the host's and one CA):
# OpenSSL 3 spends tens of ms parsing ~150 certificates, in every case.
cat /etc/ssl/certs/ca-certificates.crt "$tmp/ca.pem" >"$tmp/ws/servers-ca.pem"
port=$((30000 + RANDOM % 20000))
(cd "$tmp/www" && exec openssl s_server -quiet -WWW -accept "$port" -cert "$tmp/srv.pem" \
    -key "$tmp/srv.key" -naccept 100000) >"$tmp/server.log" 2>&1 &
server_pid=$!
for _ in $(seq 100); do (exec 3<>/dev/tcp/127.0.0.1/$port) 2>/dev/null && break; sleep 0.1; done
echo "127.0.0.1 bench.test" >"$tmp/hosts"
export BENCH_TOKEN=bench-token-value
cat >"$tmp/xdg-tls/cordon/config.toml" <<EOF2
[network]
ca_file = "$tmp/ca.pem"

[[secrets]]
name = "TOKEN"
from = "env:BENCH_TOKEN"
hosts = ["bench.test"]
EOF2
: >"$tmp/xdg-plain/cordon/config.toml"
runs=${RUNS:-7}
latency_n=${LATENCY_N:-200}
url=https://bench.test:$port

in_sandbox() { # in_sandbox plain|tls SCRIPT
    (cd "$tmp/ws" && XDG_CONFIG_HOME=$tmp/xdg-$1 "$cordon" run --network allowlist \
        --net-hosts-file "$tmp/hosts" --net-audit-log "$tmp/audit.jsonl" \
        --allow-host bench.test --allow-host "127.0.0.1:$port" -- bash -c "$2")
}
get_big='curl -sS -o /dev/null -w "%{speed_download}\n"'
mibs() { awk '{ printf "%.0f\n", $1 / 1048576 }'; }
median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
direct_curl=(curl -sS --cacert "$tmp/ws/servers-ca.pem" --resolve "bench.test:$port:127.0.0.1" --noproxy '*')

: >"$tmp/direct"
: >"$tmp/tunnel"
: >"$tmp/intercepted"
for i in $(seq "$runs"); do
    "${direct_curl[@]}" -o /dev/null -w "%{speed_download}\n" "$url/big" | mibs >>"$tmp/direct"
    in_sandbox plain "$get_big --cacert servers-ca.pem $url/big" | mibs >>"$tmp/tunnel"
    in_sandbox tls "$get_big $url/big" | mibs >>"$tmp/intercepted"
done
cp "$src/bench/tls-handshake.py" "$tmp/ws/"
hs="/usr/bin/python3 tls-handshake.py bench.test $port $latency_n"
lat_direct=$(cd "$tmp/ws" && $hs servers-ca.pem)
lat_tunnel=$(in_sandbox plain "$hs servers-ca.pem 3128")
lat_inter=$(in_sandbox tls "$hs /etc/ssl/certs/ca-certificates.crt 3128")
grep -q '"host":"bench.test".*TLS intercepted' "$tmp/audit.jsonl" ||
    { echo "bench: the intercepted runs were not intercepted" >&2; exit 1; }
direct=$(median <"$tmp/direct")
tunnel=$(median <"$tmp/tunnel")
inter=$(median <"$tmp/intercepted")
pct() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.0f", 100 * a / b }'; }
x() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", a / b }'; }
echo "direct MiB/s:      $(tr '\n' ' ' <"$tmp/direct")"
echo "tunnel MiB/s:      $(tr '\n' ' ' <"$tmp/tunnel")"
echo "intercepted MiB/s: $(tr '\n' ' ' <"$tmp/intercepted")"
printf 'HTTPS download 100 MiB, median of %d alternating runs: direct %s MiB/s, tunnel %s MiB/s (%s%% of direct), intercepted %s MiB/s (%s%% of direct, %s%% of the tunnel)\n' \
    "$runs" "$direct" "$tunnel" "$(pct "$tunnel" "$direct")" "$inter" "$(pct "$inter" "$direct")" \
    "$(pct "$inter" "$tunnel")"
h() { echo "$1" | cut -d' ' -f"$2"; }
printf 'TCP + (CONNECT +) TLS handshake, median of %d: direct %s ms, tunnel %s ms (%sx), intercepted %s ms (%sx direct, %sx tunnel)\n' \
    "$latency_n" "$(h "$lat_direct" 1)" "$(h "$lat_tunnel" 1)" "$(x "$(h "$lat_tunnel" 1)" "$(h "$lat_direct" 1)")" \
    "$(h "$lat_inter" 1)" "$(x "$(h "$lat_inter" 1)" "$(h "$lat_direct" 1)")" "$(x "$(h "$lat_inter" 1)" "$(h "$lat_tunnel" 1)")"
printf '... to the first byte of GET /small: direct %s ms, tunnel %s ms (%sx), intercepted %s ms (%sx direct, %sx tunnel)\n' \
    "$(h "$lat_direct" 2)" "$(h "$lat_tunnel" 2)" "$(x "$(h "$lat_tunnel" 2)" "$(h "$lat_direct" 2)")" \
    "$(h "$lat_inter" 2)" "$(x "$(h "$lat_inter" 2)" "$(h "$lat_direct" 2)")" "$(x "$(h "$lat_inter" 2)" "$(h "$lat_tunnel" 2)")"
if [ -n "$markdown" ]; then
    echo
    echo "| runs | direct | tunnel (of direct) | intercepted (of direct, of tunnel) | handshake direct / tunnel / intercepted | to first byte direct / tunnel / intercepted (x direct, x tunnel) | load average |"
    echo "| --- | --- | --- | --- | --- | --- | --- |"
    echo "| $runs | $direct MiB/s | $tunnel MiB/s ($(pct "$tunnel" "$direct")%) | $inter MiB/s ($(pct "$inter" "$direct")%, $(pct "$inter" "$tunnel")%) | $(h "$lat_direct" 1) / $(h "$lat_tunnel" 1) / $(h "$lat_inter" 1) ms | $(h "$lat_direct" 2) / $(h "$lat_tunnel" 2) / $(h "$lat_inter" 2) ms ($(x "$(h "$lat_inter" 2)" "$(h "$lat_direct" 2)")x, $(x "$(h "$lat_inter" 2)" "$(h "$lat_tunnel" 2)")x) | $(cut -d' ' -f1-3 /proc/loadavg) |"
fi
