#!/usr/bin/env bash
# Integration: network modes (issue 8) as a user sees them. Local servers
# only: on the host's loopback (every run) and, as root, in network
# namespaces this test creates (a "client" namespace that cordon runs in,
# joined by a veth pair to a "server" namespace with 198.51.100.2 and
# 10.99.0.2). Names come from a hosts file given to the proxy
# (--net-hosts-file), never from DNS. Security cases 34-37.
. "$CORDON_SRC/tests/lib/tap.sh"
. "$CORDON_SRC/tests/lib/cordon.sh"
. "$CORDON_SRC/tests/lib/fixtures.sh"

PY=/usr/bin/python3
here="$CORDON_SRC/tests/integration"
ws=$(new_ws net)
cp "$here/net-client.py" "$ws/client.py"
audit="$TEST_TMP/audit.jsonl"
hosts="$TEST_TMP/hosts"

port_base=$((20000 + (RANDOM % 20000)))
HTTP=$port_base
ECHO=$((port_base + 1))
OTHER=$((port_base + 2)) # nothing listens here
PUB=$((port_base + 3))
abstract="cordon-test-$$-$RANDOM"


$PY "$here/net-servers.py" 127.0.0.1 "$HTTP" "$ECHO" hello-from-loopback "$abstract" >/dev/null 2>&1 &
cleanup_pids+=($!)
wait_port 127.0.0.1 "$HTTP" && wait_port 127.0.0.1 "$ECHO" || diag "loopback servers did not start"

# ---------------------------------------------------------------- deny
sh_in "$ws" "curl -sS -m 5 http://127.0.0.1:$HTTP/ 2>&1; echo curl=\$?;
    (exec 3<>/dev/tcp/127.0.0.1/$HTTP) 2>/dev/null; echo devtcp=\$?;
    $PY client.py direct 127.0.0.1 $ECHO; $PY client.py direct 198.51.100.2 80;
    getent ahosts deb.debian.org >/dev/null; echo getent=\$?;
    env | grep -i '_proxy=' | grep -cvxE '(HTTPS?_PROXY|https?_proxy)=http://127.0.0.1:3128|(ALL_PROXY|all_proxy)=socks5h://127.0.0.1:3128|(NO_PROXY|no_proxy)=localhost,127.0.0.1';
    $PY client.py abstract $abstract"
like "deny: curl to a host loopback server fails" "$out" "curl=7"
like "deny: bash /dev/tcp to the host loopback fails" "$out" "devtcp=1"
like "deny: python connect to the host loopback is refused (own loopback)" "$out" "ECONNREFUSED"
like "deny: no route out" "$out" "ENETUNREACH"
like "deny: no DNS" "$out" "getent=2"
like "deny: no proxy variables but those naming cordon's refusing proxy" "$out" $'\n0\n'
like "deny: abstract socket of the host unreachable (case 34)" "$out" "ECONNREFUSED$"
unlike "deny: nothing connected" "$out" "connected|hello-from"

# ---------------------------------------------------------------- allowlist
cat >"$hosts" <<EOF
127.0.0.1 web.test www.example.test example.test evil-example.test rebind.test
EOF
net_run() { # net_run SCRIPT: allowlist mode with the loopback test rules
    cordon_run "$ws" --network allowlist --net-hosts-file "$hosts" --net-audit-log "$audit" \
        --allow-host "*.example.test:$HTTP" --allow-host web.test --allow-host rebind.test \
        --allow-host "127.0.0.1:$HTTP" --allow-host "127.0.0.1:$ECHO" -- bash -c "$1"
}
net_run 'echo "$HTTP_PROXY $HTTPS_PROXY $ALL_PROXY $NO_PROXY $http_proxy $https_proxy $all_proxy $no_proxy"'
is "allowlist: proxy variables point at the in-sandbox listener" "$out" \
    "http://127.0.0.1:3128 http://127.0.0.1:3128 socks5h://127.0.0.1:3128 localhost,127.0.0.1 http://127.0.0.1:3128 http://127.0.0.1:3128 socks5h://127.0.0.1:3128 localhost,127.0.0.1"

net_run "curl -sS -m 10 http://www.example.test:$HTTP/; curl -sS -m 10 -p http://www.example.test:$HTTP/;
    curl -sS -m 10 -x socks5h://127.0.0.1:3128 http://web.test:$HTTP/; $PY client.py socks web.test $HTTP"
is "allowlist: listed subdomain via HTTP, CONNECT, SOCKS5 (curl and python)" \
    "$(grep -c hello-from-loopback <<<"$out")" 4
like "allowlist: SOCKS5 success reply" "$out" "reply=0x00"

net_run "$PY client.py connect-echo web.test $ECHO half-closed-message"
like "allowlist: CONNECT to a raw TCP echo server" "$out" "HTTP/1.1 200"
like "allowlist: half-close passes through (echo after the client's EOF)" "$out" "echo=half-closed-message"

code() { echo "$out" | grep -o 'code=[0-9]*' | head -1; }
net_run "curl -sS -m 10 -o /dev/stderr -w 'code=%{http_code}' http://example.test:$HTTP/"
is "allowlist: bare domain refused with 403 (case 36)" "$(code)" "code=403"
like "allowlist: the 403 body names the refusal" "$out" "no allow_hosts rule matches example.test:$HTTP"
net_run "curl -sS -m 10 -o /dev/stderr -w 'code=%{http_code}' http://evil-example.test:$HTTP/"
is "allowlist: look-alike domain refused (case 36)" "$(code)" "code=403"
net_run "curl -sS -m 10 -o /dev/stderr -w 'code=%{http_code}' http://www.example.test:$ECHO/"
is "allowlist: unlisted port refused (case 36)" "$(code)" "code=403"
like "allowlist: the refusal names the rule and the port" "$out" "allows port $HTTP only, not $ECHO"
net_run "curl -sS -m 10 --noproxy '' -o /dev/stderr -w 'code=%{http_code}' http://127.0.0.1:$OTHER/"
is "allowlist: IP literal not listed refused (case 36)" "$(code)" "code=403"
like "allowlist: IP literal refusal says why" "$out" "address literal needs an address or CIDR rule"
net_run "curl -sS -m 10 -o /dev/stderr -w 'code=%{http_code}' http://rebind.test:$OTHER/"
is "allowlist: listed name resolving to 127.0.0.1 refused (DNS rebinding)" "$(code)" "code=403"
like "allowlist: rebinding refusal names the loopback range" "$out" "127.0.0.1 is a loopback address"
net_run "$PY client.py socks evil-example.test $HTTP"
like "allowlist: SOCKS5 refusal is reply 0x02" "$out" "reply=0x02"
like "allowlist: SOCKS5 refusal is logged" "$out" "socks5 evil-example.test:$HTTP refused"

# Case 37: without the proxy variables nothing gets out.
net_run "env -u HTTP_PROXY -u http_proxy -u ALL_PROXY -u all_proxy curl -sS -m 5 http://www.example.test:$HTTP/ 2>&1; echo curl=\$?;
    $PY client.py direct 198.51.100.2 80; (exec 3<>/dev/tcp/127.0.0.1/$HTTP) 2>/dev/null; echo devtcp=\$?"
like "allowlist: proxy unset, no DNS (case 37)" "$out" "curl=6"
like "allowlist: proxy unset, no route (case 37)" "$out" "ENETUNREACH"
like "allowlist: host loopback not reachable directly" "$out" "devtcp=1"

# A relay inside the sandbox gains nothing: the proxy still checks.
net_run "socat TCP-LISTEN:9999,bind=127.0.0.1,fork,reuseaddr TCP:127.0.0.1:3128 & sleep 0.5;
    curl -sS -m 10 -x http://127.0.0.1:9999 -o /dev/stderr -w 'code=%{http_code}' http://evil-example.test:$HTTP/;
    kill %1"
is "allowlist: a relay inside the sandbox cannot CONNECT to an unlisted host" "$(code)" "code=403"

# Slow and stalled clients do not block others.
net_run "exec 4<>/dev/tcp/127.0.0.1/3128; printf 'CONNECT web.test' >&4;
    exec 5<>/dev/tcp/127.0.0.1/3128; curl -sS -m 10 http://web.test:$HTTP/"
like "allowlist: a stalled client does not block the next one" "$out" "hello-from-loopback"

# A lookup that hangs stalls only its own connection. The hosts file is a
# FIFO nobody writes to: reading it blocks like a DNS server that never
# answers. An address literal needs no lookup and goes through at once;
# the hanging name ends with 504 after the resolver's 10 s timeout.
mkfifo "$TEST_TMP/hosts-fifo"
cordon_run "$ws" --network allowlist --net-hosts-file "$TEST_TMP/hosts-fifo" --net-audit-log "$audit" \
    --allow-host web.test --allow-host "127.0.0.1:$HTTP" -- bash -c "
    curl -sS -m 30 -o /dev/stderr -w 'hung=%{http_code} after=%{time_total}\n' http://web.test:$HTTP/ &
    sleep 1; start=\$(date +%s%N)
    curl -sS -m 5 --noproxy '' -x http://127.0.0.1:3128 http://127.0.0.1:$HTTP/
    echo literal-ms=\$(( (\$(date +%s%N) - start) / 1000000 )); wait"
like "resolver: an address literal goes through while a lookup hangs" "$out" "hello-from-loopback"
ms=$(grep -o 'literal-ms=[0-9]*' <<<"$out" | cut -d= -f2)
if [ -n "$ms" ] && [ "$ms" -lt 2000 ]; then
    pass "resolver: ... promptly (${ms} ms)"
else
    fail "resolver: ... promptly" "took ${ms:-?} ms" "$out"
fi
is "resolver: the hanging lookup ends after the answered one" \
    "$(grep -o -e 'literal-ms' -e 'hung=' <<<"$out" | tr '\n' ' ')" "literal-ms hung= "
like "resolver: the hanging lookup ends with 504" "$out" "hung=504"
like "resolver: the 504 says which name timed out" "$out" "resolving web.test timed out after 10 s"
after=$(grep -o 'after=[0-9]*' <<<"$out" | cut -d= -f2)
if [ -n "$after" ] && [ "$after" -ge 9 ] && [ "$after" -le 15 ]; then
    pass "resolver: the timeout is 10 s (${after} s)"
else
    fail "resolver: the timeout is 10 s" "after ${after:-?} s"
fi

# Bytes arrive intact (the relay splices through pipes) and in both
# directions at once; 300 idle connections (more than the 256 bound) do not
# stop the proxy.
head -c $((20 * 1024 * 1024)) /dev/urandom >"$ws/blob"
n=$((20 * 1024 * 1024))
net_run "curl -sS -m 60 -p http://web.test:$HTTP/bytes/$n | sha256sum | cut -d' ' -f1;
    $PY client.py echo-file web.test $ECHO blob"
is "allowlist: a 20 MiB download through CONNECT is byte-identical" "$(sed -n 1p <<<"$out")" \
    "$($PY "$here/net-client.py" bytes-sha $n)"
is "allowlist: 20 MiB echoed both ways at once through CONNECT is byte-identical" \
    "$(sed -n 2p <<<"$out")" "$(sha256sum <"$ws/blob" | cut -d' ' -f1)"
rm -f "$ws/blob"
# A reader that stops reading stalls only its own connection: its
# direction stops reading from the server, the others keep flowing.
net_run "$PY client.py stall web.test $HTTP /bytes/$n 20 & sleep 1;
    start=\$(date +%s%N); curl -sS -m 15 -p http://web.test:$HTTP/bytes/$n | sha256sum | cut -d' ' -f1;
    echo other-ms=\$(( (\$(date +%s%N) - start) / 1000000 )); kill %1"
like "allowlist: a reader that stopped reading holds its own request" "$out" "stalled"
is "allowlist: meanwhile a 20 MiB download through the proxy completes intact" \
    "$(grep -E '^[0-9a-f]{64}$' <<<"$out")" "$($PY "$here/net-client.py" bytes-sha $n)"
ms=$(grep -o 'other-ms=[0-9]*' <<<"$out" | cut -d= -f2)
if [ -n "$ms" ] && [ "$ms" -lt 10000 ]; then
    pass "allowlist: ... without waiting for the stalled one (${ms} ms)"
else
    fail "allowlist: ... without waiting for the stalled one" "took ${ms:-?} ms" "$out"
fi
# 24 downloads at once: more bulk transfers than the pipe budget grows
# pipes for (16 MiB), the connections taking turns; every byte arrives.
m=$((4 * 1024 * 1024))
net_run "for i in \$(seq 24); do curl -sS -m 60 -p http://web.test:$HTTP/bytes/$m | sha256sum | cut -d' ' -f1 & done; wait"
is "allowlist: 24 downloads of 4 MiB at once through CONNECT are byte-identical" \
    "$(sort -u <<<"$out")" "$($PY "$here/net-client.py" bytes-sha $m)"
is "allowlist: ... all 24 of them" "$(grep -c . <<<"$out")" 24
net_run "$PY -c '
import socket
s = [socket.create_connection((\"127.0.0.1\", 3128)) for _ in range(300)]
[x.close() for x in s]
'; sleep 0.5; curl -sS -m 10 http://web.test:$HTTP/"
like "allowlist: 300 idle connections, then the proxy still answers" "$out" "hello-from-loopback"

if [ -s "$audit" ] && $PY - "$audit" <<'EOF'; then
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
assert all({"time", "protocol", "host", "port", "decision", "reason"} <= l.keys() for l in lines)
assert any(l["decision"] == "allow" and l["host"] == "www.example.test" for l in lines)
assert any(l["decision"] == "deny" and l["host"] == "evil-example.test" and l["protocol"] == "socks5" for l in lines)
assert any(l["decision"] == "deny" and "rebinding" in l["reason"] for l in lines)
EOF
    pass "allowlist: every decision in the audit log (JSON lines)"
else
    fail "allowlist: every decision in the audit log (JSON lines)" "$(tail -3 "$audit" 2>&1)"
fi

cordon_run "$ws" --network allowlist --allow-host 'a.*.test' -- true
is "allowlist: a bad pattern stops the start" "$rc" 125
like "allowlist: the error names the key and the pattern" "$out" 'network.allow_hosts: "a\.\*\.test" not a host name'

# The proxy readies itself while the sandbox's view is built and is waited
# for before the command may exec: one that cannot start (deny mode's
# refusing proxy, its audit log in a missing directory) still stops the
# start, and nothing ran inside.
rm -f "$ws/ran-marker"
cordon_run "$ws" --net-audit-log "$TEST_TMP/no-such-dir/audit.jsonl" -- sh -c 'echo ran > ran-marker'
is "deny: a proxy that cannot start stops the start" "$rc" 125
like "deny: the error names the audit log" "$out" "network: audit log $TEST_TMP/no-such-dir/audit.jsonl"
if [ ! -e "$ws/ran-marker" ]; then
    pass "deny: the command never ran"
else
    fail "deny: the command never ran" "$(cat "$ws/ran-marker")"
fi

# The proxy and its namespace socket factory die with the session, also
# when the supervisor is killed with SIGKILL.
(cd "$ws" && exec "$CORDON" run --network allowlist --allow-host x.test -- sleep 30 >/dev/null 2>&1) &
sup=$!
helpers=
for _ in $(seq 50); do
    helpers=$(pgrep -P "$sup" | while read -r c; do echo "$c"; pgrep -P "$c"; done | sort -u)
    [ "$(wc -w <<<"$helpers")" -ge 3 ] && break
    sleep 0.1
done
kill -9 "$sup"
wait "$sup" 2>/dev/null
sleep 0.5
left=$(for h in $helpers; do [ -d "/proc/$h" ] && ! grep -q '^State:.*Z' "/proc/$h/status" 2>/dev/null && echo "$h"; done)
if [ "$(wc -w <<<"$helpers")" -ge 3 ] && [ -z "$left" ]; then
    pass "allowlist: sandbox, proxy and factory gone after SIGKILL of the supervisor"
else
    fail "allowlist: sandbox, proxy and factory gone after SIGKILL of the supervisor" \
        "helpers: $helpers" "left: $left"
fi

# ---------------------------------------------------------------- publish
publish_check() { # publish_check MODE: a server inside answers on the host
    rm -f "$ws/ready" "$ws/done"
    (cd "$ws" && "$CORDON" run --network "$1" --publish "127.0.0.1:$PUB:8000" -- bash -c \
        "cd /tmp && echo published-$1 > index.html && $PY -m http.server 8000 --bind 127.0.0.1 >/dev/null 2>&1 &
         for i in \$(seq 100); do (exec 3<>/dev/tcp/127.0.0.1/8000) 2>/dev/null && break; sleep 0.1; done
         touch $ws/ready; for i in \$(seq 100); do [ -e $ws/done ] && break; sleep 0.1; done" \
        >/dev/null 2>&1) &
    local pid=$!
    for _ in $(seq 100); do [ -e "$ws/ready" ] && break; sleep 0.1; done
    local got listen
    got=$(curl -sS -m 5 "http://127.0.0.1:$PUB/" 2>&1)
    listen=$(ss -Hltn "sport = :$PUB" 2>/dev/null | awk '{print $4}')
    touch "$ws/done"
    wait "$pid"
    is "publish ($1): the sandbox's listener answers on the host" "$got" "published-$1"
    is "publish ($1): bound to 127.0.0.1 only" "$listen" "127.0.0.1:$PUB"
}
publish_check deny
publish_check allowlist

# The proxy holding a published port is gone when cordon returns: the
# same port again at once, ten times, binds every time.
rebound=0
for _ in $(seq 10); do
    cordon_run "$ws" --publish "127.0.0.1:$PUB:8000" -- true
    [ "$rc" -eq 0 ] && rebound=$((rebound + 1))
done
is "publish: the port is free as soon as cordon returns (10 runs in a row)" "$rebound" 10

cordon_run "$ws" --publish "127.0.0.1:$HTTP:80" -- true
is "publish: a host port in use stops the start" "$rc" 125
like "publish: the error names the port" "$out" "publish 127.0.0.1:$HTTP:80"

# ---------------------------------------------------------------- open
if ! command -v pasta >/dev/null; then
    skip "open mode" "pasta (Debian package passt) is not installed"
elif [ ! -r /dev/net/tun ] || [ ! -w /dev/net/tun ]; then
    rm -f "$ws/ran"
    cordon_run "$ws" --network open -- touch "$ws/ran"
    is "open: a tun device this user cannot open stops the start" "$rc" 125
    ok "open: ... before the command runs (fail closed)" test ! -e "$ws/ran"
    like "open: the error names /dev/net/tun and why" "$out" "cannot open /dev/net/tun: Permission denied"
    like "open: the error says what to do" "$out" "give the device mode 0666.*or use --network allowlist"
    skip "open mode" "/dev/net/tun is not readable and writable by $(id -un)"
else
    publish_check open
    sh_in "$ws" true
    cordon_run "$ws" --network open -- bash -c "gw=\$(ip route | awk '/default/ {print \$3}');
        curl -sS -m 5 http://127.0.0.1:$HTTP/ 2>&1; echo loop=\$?;
        curl -sS -m 5 http://\$gw:$HTTP/ 2>&1; echo gw=\$?; ip route | grep -c default"
    like "open: the sandbox has a default route" "$out" $'\n1$'
    like "open: the host's loopback is unreachable" "$out" "loop=7"
    unlike "open: the gateway address does not lead to the host's loopback" "$out" "hello-from-loopback"
fi

# ---------------------------------------------------------------- test hosts in namespaces (root)
if ! is_root || [ -n "${CORDON_TEST_UNPRIVILEGED:-}" ]; then
    skip "test hosts in network namespaces" "needs root (ip netns add)"
    tap_done
fi
cl=cordon-cl-$$
srv=cordon-srv-$$
netns_cleanup() {
    ip netns pids "$srv" 2>/dev/null | xargs -r kill -9
    ip netns pids "$cl" 2>/dev/null | xargs -r kill -9
    ip netns del "$cl" 2>/dev/null
    ip netns del "$srv" 2>/dev/null
    test_cleanup
}
trap netns_cleanup EXIT
ip netns add "$cl" && ip netns add "$srv" &&
    ip link add veth-c netns "$cl" type veth peer name veth-s netns "$srv" &&
    ip -n "$cl" addr add 198.51.100.1/24 dev veth-c && ip -n "$srv" addr add 198.51.100.2/24 dev veth-s &&
    ip -n "$srv" addr add 10.99.0.2/24 dev veth-s &&
    ip -n "$cl" link set veth-c up && ip -n "$srv" link set veth-s up &&
    ip -n "$cl" link set lo up && ip -n "$srv" link set lo up &&
    ip -n "$cl" route add default via 198.51.100.2
if [ $? -ne 0 ]; then
    skip "test hosts in network namespaces" "could not create them"
    tap_done
fi
ip netns exec "$srv" $PY "$here/net-servers.py" 0.0.0.0 80 7 hello-from-test-host >/dev/null 2>&1 &
ip netns exec "$cl" $PY "$here/net-servers.py" 127.0.0.1 "$HTTP" "$ECHO" hello-from-client-loopback >/dev/null 2>&1 &
wait_port 198.51.100.2 80 "$cl" && wait_port 127.0.0.1 "$HTTP" "$cl" || diag "test host servers did not start"
cat >"$hosts" <<EOF
198.51.100.2 www.example.test example.test evil-example.test
10.99.0.2 private.example.test
127.0.0.1 loop.example.test
EOF
ns_run() { # ns_run [OPTIONS --] SCRIPT: cordon inside the client namespace
    local script=$1
    # `ip netns exec` remounts /sys, so there is no cgroup there: drop that
    # (correct) warning; the exit status stays cordon's.
    out=$(set -o pipefail; cd "$ws" && PWD="$ws" ip netns exec "$cl" "$CORDON" run --network allowlist \
        --net-hosts-file "$hosts" --net-audit-log "$audit" --allow-host '*.example.test:80' \
        -- bash -c "$script" 2>&1 </dev/null |
        { grep -v '^cordon: warning: running as root without a pids cgroup' || true; })
    rc=$?
}
ns_run "curl -sS -m 10 http://www.example.test/"
is "netns: listed subdomain reaches the test host (case 36)" "$out" "hello-from-test-host"
for u in http://example.test/ http://evil-example.test/ http://198.51.100.2/ http://www.example.test:7/ \
    http://private.example.test/ http://loop.example.test/; do
    ns_run "curl -sS -m 10 --noproxy '' -x http://127.0.0.1:3128 -o /dev/null -w 'code=%{http_code}' $u"
    is "netns: $u refused (case 36)" "$(code)" "code=403"
done
ns_run "$PY client.py connect-echo www.example.test 7 x; $PY client.py socks www.example.test 7"
like "netns: CONNECT to an unlisted port refused" "$out" "HTTP/1.1 403"
like "netns: SOCKS5 to an unlisted port refused with 0x02" "$out" "reply=0x02"
ns_run "env -u HTTP_PROXY -u http_proxy -u ALL_PROXY -u all_proxy curl -sS -m 5 http://198.51.100.2/ 2>&1; echo curl=\$?"
like "netns: proxy unset, no route to the test host (case 37)" "$out" "curl=7"

if command -v pasta >/dev/null; then
    out=$(cd "$ws" && ip netns exec "$cl" "$CORDON" run --network open -- bash -c \
        "curl -sS -m 10 http://198.51.100.2/; curl -sS -m 5 http://127.0.0.1:$HTTP/ 2>&1; echo loop=\$?;
         curl -sS -m 5 http://198.51.100.2:$HTTP/ 2>&1; echo gw=\$?" 2>&1 </dev/null)
    like "netns: open mode reaches the test host" "$out" "hello-from-test-host"
    like "netns: open mode cannot reach the client's loopback" "$out" "loop=7"
    unlike "netns: open mode's gateway is not the host's loopback" "$out" "hello-from-client-loopback"
fi
tap_done
