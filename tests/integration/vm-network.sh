#!/usr/bin/env bash
# Integration: network modes and published ports on the vm backend (issue 9
# part 3, docs/vm-backend.md "Network"), as a user sees them. Local servers
# only: on the host's loopback and (as root) in network namespaces this test
# creates as test hosts, like network.sh. One boot per mode under TCG.
. "$CORDON_SRC/tests/lib/tap.sh"
. "$CORDON_SRC/tests/lib/cordon.sh"
. "$CORDON_SRC/tests/lib/fixtures.sh"
. "$CORDON_SRC/tests/lib/background.sh"

skip_without_vm

PY=/usr/bin/python3
here="$CORDON_SRC/tests/integration"
ws=$(new_ws vmnet)
audit="$TEST_TMP/audit.jsonl"
hosts="$TEST_TMP/hosts"
export XDG_RUNTIME_DIR="$TEST_TMP/runtime"
mkdir -p "$XDG_RUNTIME_DIR" && chmod 700 "$XDG_RUNTIME_DIR"

port_base=$((20000 + (RANDOM % 20000)))
HTTP=$port_base
ECHO=$((port_base + 1))
PUB=$((port_base + 3))

vm_run() { # vm_run [OPTIONS] -- CMD...: cordon run on the vm backend in $ws
    out=$(cd "$ws" && PWD="$ws" "$CORDON" run --backend vm "$@" 2>&1 </dev/null)
    rc=$?
}

# A host listener on the loopback, and (when there is one) on the address of
# the host's default-route interface: the guest must reach neither.
$PY "$here/net-servers.py" 127.0.0.1 "$HTTP" "$ECHO" hello-from-loopback >/dev/null 2>&1 &
cleanup_pids+=($!)
host_addr=$(ip -4 -o route get 1.1.1.1 2>/dev/null | sed -n 's/.* src \([0-9.]*\).*/\1/p')
if [ -n "$host_addr" ]; then
    $PY "$here/net-servers.py" "$host_addr" "$HTTP" "$ECHO" hello-from-host-address >/dev/null 2>&1 &
    cleanup_pids+=($!)
fi
wait_port 127.0.0.1 "$HTTP" || diag "loopback server did not start"

# ------------------------------------------------- deny, with a published port
rm -f "$ws/ready" "$ws/done"
(cd "$ws" && PWD="$ws" "$CORDON" run --backend vm --publish "127.0.0.1:$PUB:8000" -- bash -c "
    echo \"net=\$(ls /sys/class/net | tr '\n' ' ')\"
    curl -sS -m 5 http://127.0.0.1:$HTTP/ 2>&1; echo loop=\$?
    curl -sS -m 5 http://${host_addr:-192.0.2.1}:$HTTP/ 2>&1; echo hostaddr=\$?
    $PY -c 'import socket; socket.create_connection((\"198.51.100.2\", 80), 3)' 2>&1 | tail -1
    cd /tmp && echo published-from-the-guest > index.html
    $PY -m http.server 8000 --bind 127.0.0.1 >/dev/null 2>&1 &
    for i in \$(seq 100); do (exec 3<>/dev/tcp/127.0.0.1/8000) 2>/dev/null && break; sleep 0.1; done
    touch $ws/ready; for i in \$(seq 3000); do [ -e $ws/done ] && break; sleep 0.1; done" \
    >"$TEST_TMP/deny.out" 2>&1 </dev/null) &
pid=$!
cleanup_pids+=("$pid")
# The host-services boot (checked below) runs beside this session.
bg_start host-services "$ws" "$CORDON" run --backend vm --net-audit-log "$audit" --set "network.host_services=[\"127.0.0.1:$HTTP\"]" -- bash -c "
    curl -sS -m 20 http://127.0.0.1:$HTTP/; echo hs=\$?
    curl -sS -m 20 http://localhost:$HTTP/; echo hs-localhost=\$?
    $PY -c 'import socket; socket.create_connection((\"127.0.0.1\", $ECHO), 3)' 2>&1 | tail -1
    curl -sS -m 5 --noproxy '*' http://${host_addr:-192.0.2.1}:$HTTP/ 2>&1; echo hostaddr=\$?
    curl -sS -m 20 http://web.test:$HTTP/; echo
    curl -sS -m 20 http://127.0.0.1:$HTTP/; echo hs-again=\$?"
for _ in $(seq 1800); do [ -e "$ws/ready" ] && break; sleep 0.1; done
got=$(curl -sS -m 10 "http://127.0.0.1:$PUB/" 2>&1)
listen=$(ss -Hltn "sport = :$PUB" 2>/dev/null | awk '{print $4}')
if [ -n "$host_addr" ]; then
    other=$(curl -sS -m 5 "http://$host_addr:$PUB/" 2>&1; echo "rc=$?")
fi
touch "$ws/done"
wait "$pid"
out=$(cat "$TEST_TMP/deny.out")
like "deny: no interface but lo in the guest" "$out" $'net=lo \n'
like "deny: the guest's 127.0.0.1 is its own (the host's loopback server is not there)" "$out" "loop=7"
unlike "deny: no host listener answered" "$out" "hello-from"
like "deny: no route out" "$out" "Network is unreachable"
is "publish: the guest's listener answers on the host at 127.0.0.1:$PUB" "$got" "published-from-the-guest"
is "publish: bound to 127.0.0.1 only" "$listen" "127.0.0.1:$PUB"
if [ -n "$host_addr" ]; then
    like "publish: not reachable at the host's other address ($host_addr)" "$other" "rc=7"
else
    skip "publish: the host's other address" "no default route here"
fi

# ------------------------------------------------- host services
# network.host_services: the host's loopback service ($HTTP) is reached in
# the guest at the same address and port (the guest's forwarder, the relay,
# the host's proxy); another port of the host's loopback ($ECHO, which
# listens) stays closed, and so does the service's port on the host's other
# address. Deny mode, whose refusing proxy still answers beside it.
bg_wait host-services
is "host service: the run exits 0" "$rc" 0
like "host service: the guest's 127.0.0.1:$HTTP reaches the host's service" "$out" $'hello-from-loopback\nhs=0'
like "host service: through localhost too" "$out" $'hello-from-loopback\nhs-localhost=0'
like "host service: another port of the host's loopback stays closed" "$out" "ConnectionRefusedError"
unlike "host service: the host's other address is not reached" "$out" "hello-from-host-address"
like "host service: deny mode's refusing proxy still answers" "$out" 'cordon: network: denied: network.mode is "deny"'
like "host service: and the service again afterwards" "$out" $'hello-from-loopback\nhs-again=0'
like "host service: the connection is in the audit log" "$(cat "$audit" 2>/dev/null)" \
    "\"port\":$HTTP,.*\"decision\":\"allow\",\"reason\":\"host service 127.0.0.1:$HTTP\""
out=$(cd "$ws" && PWD="$ws" "$CORDON" run --backend vm --network allowlist \
    --set "network.host_services=[\"127.0.0.1:3128\"]" -- true 2>&1 </dev/null)
like "host service: the proxy's own port is refused before anything runs" "$out" \
    "network.host_services: .*port 3128 is cordon's proxy inside the sandbox"

# ------------------------------------------------- allowlist
cat >"$hosts" <<EOF
127.0.0.1 web.test other.test
EOF
# cordon verify's boot (checked below) runs beside the allowlist boot.
vpub=$((port_base + 4))
bg_start verify "$ws" "$CORDON" verify --backend vm --set network.mode=allowlist \
    --set 'network.allow_hosts=["web.test"]' --set "network.publish_ports=[\"127.0.0.1:$vpub:8000\"]"
vm_run --network allowlist --net-hosts-file "$hosts" --net-audit-log "$audit" \
    --allow-host web.test --allow-host "127.0.0.1:$HTTP" -- bash -c "
    echo \"net=\$(ls /sys/class/net | tr '\n' ' ')\"
    echo \"proxy=\$HTTP_PROXY \$HTTPS_PROXY \$ALL_PROXY \$http_proxy \$https_proxy \$all_proxy\"
    curl -sS -m 20 http://web.test:$HTTP/; echo
    curl -sS -m 20 -p http://web.test:$HTTP/; echo
    curl -sS -m 20 -x socks5h://127.0.0.1:3128 http://web.test:$HTTP/; echo
    curl -sS -m 20 -o /dev/null -w 'code=%{http_code}\n' http://other.test:$HTTP/
    curl -sS -m 5 --noproxy '*' http://127.0.0.1:$HTTP/ 2>&1; echo direct-loop=\$?
    curl -sS -m 5 --noproxy '*' http://${host_addr:-192.0.2.1}:$HTTP/ 2>&1; echo direct-host=\$?"
is "allowlist: the run exits 0" "$rc" 0
like "allowlist: still no interface but lo" "$out" $'net=lo \n'
like "allowlist: proxy variables point at the guest's forwarder" "$out" \
    "proxy=http://127.0.0.1:3128 http://127.0.0.1:3128 socks5h://127.0.0.1:3128 http://127.0.0.1:3128 http://127.0.0.1:3128 socks5h://127.0.0.1:3128"
is "allowlist: the listed host through the proxy by HTTP, CONNECT and SOCKS5" \
    "$(grep -c hello-from-loopback <<<"$out")" 3
like "allowlist: an unlisted host is refused with 403" "$out" "code=403"
like "allowlist: the refusal names the rule" "$out" "no allow_hosts rule matches other.test:$HTTP"
like "allowlist: a direct connection to the host's loopback fails" "$out" "direct-loop=7"
like "allowlist: a direct connection to the host's address fails" "$out" "direct-host=7"
like "allowlist: the allowed request is in the audit log" "$(cat "$audit" 2>/dev/null)" \
    '"host":"web.test".*"decision":"allow"'
like "allowlist: the refusal is in the audit log" "$(cat "$audit" 2>/dev/null)" \
    '"host":"other.test".*"decision":"deny".*no allow_hosts rule matches'

# ------------------------------------------------- cordon verify's network rows
bg_wait verify
like "verify on vm: network-egress passes in allowlist mode" "$out" "PASS  network-egress   network.mode = allowlist"
like "verify on vm: the proxy refused the unlisted CONNECTs" "$out" "proxy CONNECT [0-9.:]+ \(not allowlisted\) -> HTTP/1.1 403"
like "verify on vm: published-ports passes (loopback only)" "$out" "PASS  published-ports  127.0.0.1:$vpub -> 8000: host listeners: tcp:$vpub on loopback"

# ------------------------------------------------- open (test hosts in namespaces)
if ! command -v passt >/dev/null; then
    skip "open mode" "passt (Debian package passt) is not installed"
elif [ "$(id -u)" != 0 ]; then
    skip "open mode" "needs root (ip netns add) for its test host"
else
    cl="cordon-vmnet-c-$$"
    srv="cordon-vmnet-s-$$"
    netns_cleanup() {
        ip netns pids "$srv" 2>/dev/null | xargs -r kill -9
        ip netns pids "$cl" 2>/dev/null | xargs -r kill -9
        ip netns del "$cl" 2>/dev/null
        ip netns del "$srv" 2>/dev/null
        test_cleanup
    }
    trap netns_cleanup EXIT
    if ip netns add "$cl" && ip netns add "$srv" &&
        ip link add veth-c netns "$cl" type veth peer name veth-s netns "$srv" &&
        ip -n "$cl" addr add 198.51.100.1/24 dev veth-c && ip -n "$srv" addr add 198.51.100.2/24 dev veth-s &&
        ip -n "$cl" link set veth-c up && ip -n "$srv" link set veth-s up &&
        ip -n "$cl" link set lo up && ip -n "$srv" link set lo up &&
        ip -n "$cl" route add default via 198.51.100.2; then
        ip netns exec "$srv" $PY "$here/net-servers.py" 0.0.0.0 80 7 hello-from-test-host >/dev/null 2>&1 &
        ip netns exec "$cl" $PY "$here/net-servers.py" 127.0.0.1 "$HTTP" "$ECHO" hello-from-client-loopback >/dev/null 2>&1 &
        wait_port 198.51.100.2 80 "$cl" && wait_port 127.0.0.1 "$HTTP" "$cl" || diag "test hosts did not start"
        out=$(cd "$ws" && PWD="$ws" ip netns exec "$cl" "$CORDON" run --backend vm --network open -- bash -c "
            echo \"net=\$(ls /sys/class/net | tr '\n' ' ')\"
            curl -sS -m 20 http://198.51.100.2/; echo
            curl -sS -m 5 http://127.0.0.1:$HTTP/ 2>&1; echo loop=\$?
            curl -sS -m 5 http://198.51.100.1:$HTTP/ 2>&1; echo hostaddr=\$?" 2>&1 </dev/null)
        like "open: the guest has a network interface" "$out" $'net=eth0 lo \n'
        like "open: a test host on a non-loopback address is reachable" "$out" "hello-from-test-host"
        like "open: the host's loopback is unreachable" "$out" "loop=7"
        unlike "open: nothing reached the host's loopback server" "$out" "hello-from-client-loopback"
    else
        skip "open mode" "could not create the test hosts"
    fi
fi

# Three parts that run beside the [[secrets]] boots (their checks are below,
# in their places), started before the secrets' configuration is exported.
after_secrets() {
    local t0
    t0=$(date +%s%N)
    bg_run deny-now "$ws" "$CORDON" run --backend vm -- bash -c "curl -sS -m 20 http://web.test:$HTTP/; echo curl=\$?"
    echo "$((($(date +%s%N) - t0) / 1000000))" >"$TEST_TMP/deny-now.ms"
    (cd "$ws" && PWD="$ws" "$CORDON" tool --backend vm --net-hosts-file "$hosts" bash \
        "{\"command\":\"curl -sS -m 20 http://web.test:$HTTP/ -o /dev/null; echo curl=\$?\"}" 2>/dev/null </dev/null >"$TEST_TMP/tool.json")
    if command -v node >/dev/null && [ -d "$CORDON_SRC/tests/pi/node_modules/@modelcontextprotocol/sdk" ]; then
        bg_run mcp-e2e "$PWD" env CORDON_E2E_ARGS='["--backend","vm"]' node "$CORDON_SRC/tests/e2e/mcp-network.mjs"
    fi
}
bg_group after-secrets after_secrets

# ------------------------------------------------- [[secrets]] (docs/secrets.md)
# The shared sentinel run (tests/lib/secrets.sh): placeholders in the
# guest, the value put in by the host's proxy, a leak refused, and no value
# in any process's environ, cmdline or memory, or any file, in the guest.
export XDG_CONFIG_HOME="$TEST_TMP/xdg-secrets"
. "$CORDON_SRC/tests/lib/secrets.sh"
secrets_setup
cp "$here/secret-sweep.py" "$ws/sweep.py"
vm_run --network allowlist "${secret_rules[@]}" -- bash -c "$(secrets_script curl)"
secrets_assert vm
like "vm: the memory sweep read the guest's processes" "$out" "scanned-bytes [1-9][0-9]{5,}"
like "vm: no value in any process's memory in the guest" "$out" "found: nothing"

# ------------------------------------------------- HTTPS: TLS interception
# The session CA reaches the guest in its boot spec; the guest's bundle is
# the host's plus that CA. Real clients (curl, Python, Node, git) against
# an HTTPS server with its own CA; the same sweep.
secrets_tls_setup
vm_run --network allowlist --net-audit-log "$audit" "${tls_rules[@]}" -- bash -c "$(secrets_tls_script)"
secrets_tls_assert vm
like "vm https: no value in any process's memory in the guest" "$out" "found: nothing"
like "vm https: the audit log records the interception" "$(cat "$audit" 2>/dev/null)" \
    '"host":"api.test".*"decision":"allow".*TLS intercepted'
rm -f "$ws/sweep.py"
unset XDG_CONFIG_HOME HOST_API_TOKEN

# ------------------------------------------------- deny mode answers at once
bg_wait after-secrets
bg_result deny-now
diag "vm deny-mode refusal, boot included: $(cat "$TEST_TMP/deny-now.ms") ms"
like "vm deny: curl through the variables gets 403 with the reason and the way out" "$out" \
    'cordon: network: denied: network.mode is "deny" \(this sandbox has no network\); a host is allowed with network.mode = "allowlist" and network.allow_hosts = \["web.test"\] \(cordon --network allowlist --allow-host web.test\)'
like "vm deny: ... and curl exits 0 at once (no retry on a missing route)" "$out" "curl=0"
like "vm deny: cordon's stderr says it too" "$out" "web.test:$HTTP refused: denied: network.mode is \"deny\""
unlike "vm deny: nothing connected" "$out" "hello-from"

# ------------------------------------------------- the tool result's line
out=$(cat "$TEST_TMP/tool.json")
last=$($PY -c 'import json,sys; r=json.loads(sys.argv[1]); print("".join(c.get("text","") for c in r["content"]).rstrip().splitlines()[-1])' "$out" 2>&1)
is "vm tool, deny: the result ends with cordon's line: destination, rule, configuration" "$last" \
    "[cordon] network: web.test:$HTTP refused: network.mode is \"deny\" (this sandbox has no network). To allow it: network.mode = \"allowlist\" and network.allow_hosts = [\"web.test\"] (cordon --network allowlist --allow-host web.test)"

# ------------------------------------------------- the allow dialog (MCP elicitation)
# tests/e2e/mcp-network.mjs with the official SDK client, on the vm backend.
if command -v node >/dev/null && [ -d "$CORDON_SRC/tests/pi/node_modules/@modelcontextprotocol/sdk" ]; then
    bg_result mcp-e2e
    e2e=$out
    like "vm mcp: the user allowed a refused destination for the session (official SDK client)" \
        "$e2e" "ok [0-9]+ - the next call reaches the allowed destination, with no cordon line"
    unlike "vm mcp: every step of the dialog passed" "$e2e" "not ok"
else
    skip "vm mcp: the allow dialog" "node or @modelcontextprotocol/sdk is missing (scripts/bootstrap.sh --test)"
fi

tap_done
