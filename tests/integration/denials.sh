#!/usr/bin/env bash
# Integration: denials people can act on (issue 18). In deny mode a client
# that uses the proxy variables is refused at once, with the reason and how
# to allow the host on cordon's stderr; a refused connection during a tool
# call ends the call's result (cordon tool, cordon mcp) with one line naming
# the destination, the rule and the configuration that would allow it. The
# sandbox plays the attacker: a host name made to inject text into that
# line, and allow_hosts set in deny mode. Local servers only, names from a
# hosts file (--net-hosts-file), never DNS.
. "$CORDON_SRC/tests/lib/tap.sh"
. "$CORDON_SRC/tests/lib/cordon.sh"
. "$CORDON_SRC/tests/lib/fixtures.sh"

PY=/usr/bin/python3
here="$CORDON_SRC/tests/integration"
ws=$(new_ws denials)
hosts="$TEST_TMP/hosts"
port_base=$((20000 + (RANDOM % 20000)))
HTTP=$port_base
ECHO=$((port_base + 1))
cat >"$hosts" <<HOSTS
127.0.0.1 web.test rebind.test
HOSTS
$PY "$here/net-servers.py" 127.0.0.1 "$HTTP" "$ECHO" hello-from-loopback "cordon-denials-$$" >/dev/null 2>&1 &
cleanup_pids+=($!)
for _ in $(seq 100); do (exec 3<>/dev/tcp/127.0.0.1/$HTTP) 2>/dev/null && break; sleep 0.1; done

tool_in() { # tool_in JSON-ARGS [OPTIONS...]: `cordon tool bash` in $ws; stdout in $out, stderr in $err
    local args=$1; shift
    out=$(cd "$ws" && PWD="$ws" "$CORDON" tool --net-hosts-file "$hosts" "$@" bash "$args" 2>"$TEST_TMP/stderr" </dev/null)
    rc=$?
    err=$(cat "$TEST_TMP/stderr")
}
result_text() { # the result's text, from $out
    $PY -c 'import json,sys; r=json.loads(sys.argv[1]); print("".join(c.get("text","") for c in r["content"]), end="")' "$out"
}
last_line() { result_text | tail -n 1; }

# ---------------------------------------------------------------- deny mode, at once
start=$(date +%s%N)
cordon_run "$ws" -- bash -c 'cd /tmp && timeout 100 npm view left-pad version --fetch-retries=2 2>&1 | grep -m1 "npm error code"; echo npm=${PIPESTATUS[0]}'
took_ms=$((($(date +%s%N) - start) / 1000000))
diag "npm view in deny mode: ${took_ms} ms"
like "deny: npm fails with the proxy's refusal (E403), not EAI_AGAIN" "$out" "npm error code E403"
unlike "deny: npm does not wait for DNS" "$out" "EAI_AGAIN"
ok "deny: npm gives up within 20 s (was 70 s of retries)" test "$took_ms" -lt 20000
like "deny: cordon's stderr says the network is denied and how to allow the host" "$out" \
    'refused: denied: network.mode is "deny" \(this sandbox has no network\); a host is allowed with network.mode = "allowlist" and network.allow_hosts = \["registry.npmjs.org"\] \(cordon --network allowlist --allow-host registry.npmjs.org\)'

cordon_run "$ws" -- bash -c "curl -sS -m 5 http://web.test:$HTTP/; echo curl=\$?"
like "deny: curl through the variables gets 403 with the reason in the body" "$out" \
    "cordon: network: denied: network.mode is \"deny\""
unlike "deny: nothing connected" "$out" "hello-from"

# The attacker: allow_hosts given in deny mode (a warning says it has no
# effect) must not turn the refusing listener into an allowlist.
cordon_run "$ws" --allow-host "127.0.0.1:$HTTP" --allow-host web.test -- bash -c \
    "curl -sS -m 5 --noproxy '' -x http://127.0.0.1:3128 http://127.0.0.1:$HTTP/; echo; curl -sS -m 5 http://web.test:$HTTP/; echo curl=\$?"
like "deny + allow_hosts: the warning says it has no effect" "$out" "allow_hosts has no effect in deny mode"
unlike "deny + allow_hosts: the refusing proxy still connects nowhere" "$out" "hello-from"
like "deny + allow_hosts: both refused by the mode" "$out" '(network.mode is "deny".*){2}'

# ---------------------------------------------------------------- the tool result's last line
tool_in '{"command":"curl -sS -m 5 https://registry.npmjs.org/ -o /dev/null; echo curl=$?"}'
like "tool, deny: the command's own output is kept" "$(result_text)" "curl=56"
is "tool, deny: the result ends with cordon's line: destination, rule, configuration" "$(last_line)" \
    '[cordon] network: registry.npmjs.org:443 refused: network.mode is "deny" (this sandbox has no network). To allow it: network.mode = "allowlist" and network.allow_hosts = ["registry.npmjs.org"] (cordon --network allowlist --allow-host registry.npmjs.org)'

tool_in '{"command":"echo quiet"}'
is "tool: a call that touched no network has no cordon line" "$(result_text)" "quiet" || diag "rc=$rc stderr: $err"

AL=(--network allowlist --allow-host web.test:1 --allow-host "127.0.0.1:$HTTP")
tool_in "{\"command\":\"curl -sS -m 5 http://other.test:$HTTP/ -o /dev/null; curl -sS -m 5 http://other.test:$HTTP/ -o /dev/null; echo curl=\$?\"}" "${AL[@]}"
is "tool, allowlist: no rule matches (a client's retry counts once)" "$(last_line)" \
    "[cordon] network: other.test:$HTTP refused: denied: no allow_hosts rule matches other.test:$HTTP. To allow it: network.allow_hosts = [\"other.test\"] (cordon --allow-host other.test)"

tool_in "{\"command\":\"curl -sS -m 5 http://web.test:$HTTP/; echo curl=\$?\"}" "${AL[@]}"
is "tool, allowlist: a rule for another port names the rule and suggests host:port" "$(last_line)" \
    "[cordon] network: web.test:$HTTP refused: denied: rule 'web.test:1' allows port 1 only, not $HTTP (no allow_hosts rule matches web.test:$HTTP). To allow it: network.allow_hosts = [\"web.test:$HTTP\"] (cordon --allow-host web.test:$HTTP)"

tool_in "{\"command\":\"curl -sS -m 5 http://rebind.test:$HTTP/; curl -sS -m 5 http://other.test:1/; echo curl=\$?\"}" --network allowlist --allow-host rebind.test
is "tool, allowlist: a name on a protected address: the address rule too, and the count of others" "$(last_line)" \
    "[cordon] network: rebind.test:$HTTP refused: denied: 127.0.0.1 is a loopback address; only an address or CIDR rule in allow_hosts allows it (protection against DNS rebinding). To allow it: network.allow_hosts = [\"rebind.test\", \"127.0.0.1:$HTTP\"] (cordon --allow-host rebind.test --allow-host 127.0.0.1:$HTTP) (and 1 more refused)"

# The attacker: a host name built to forge text in the user's line (a
# quote, an escape sequence, a control byte). The proxy's parser refuses
# it before any policy decision, so no line from cordon quotes it.
tool_in "{\"command\":\"exec 3<>/dev/tcp/127.0.0.1/3128; printf 'CONNECT a\\\"b\\\\033[31mX\\\\001:443 HTTP/1.1\\\\r\\\\n\\\\r\\\\n' >&3; head -c 12 <&3; echo\"}" "${AL[@]}"
text=$(result_text)
like "tool, forged host: refused by the parser" "$text" "HTTP/1.1 400"
ok "tool, forged host: no control character in the result" \
    bash -c '! printf "%s" "$1" | grep -q "[[:cntrl:]]"' _ "$(printf '%s' "$text" | tr -d '\n')"
unlike "tool, forged host: no cordon line quotes it" "$text" "\\[cordon\\]"

# ---------------------------------------------------------------- MCP: the same line in tools/call
mcp_out=$(cd "$ws" && PWD="$ws" $PY - "$CORDON" "$hosts" "$HTTP" <<'PYEOF' 2>/dev/null
import json, subprocess, sys
cordon, hosts, port = sys.argv[1:4]
p = subprocess.Popen([cordon, "mcp", "--net-hosts-file", hosts, "--network", "allowlist",
                      "--allow-host", "web.test:1"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                     stderr=subprocess.DEVNULL)
def send(m):
    p.stdin.write((json.dumps(m) + "\n").encode()); p.stdin.flush()
def recv(want):
    while True:
        m = json.loads(p.stdout.readline())
        if m.get("id") == want:
            return m
send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}})
recv(1)
send({"jsonrpc": "2.0", "method": "notifications/initialized"})
send({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "bash", "arguments": {"command": "curl -sS -m 5 http://other.test:%s/ -o /dev/null; echo curl=$?" % port}}})
r = recv(2)["result"]
print("".join(c.get("text", "") for c in r["content"]).splitlines()[-1])
p.stdin.close(); p.wait(timeout=30)
PYEOF
)
is "mcp: the tools/call result ends with cordon's line" "$mcp_out" \
    "[cordon] network: other.test:$HTTP refused: denied: no allow_hosts rule matches other.test:$HTTP. To allow it: network.allow_hosts = [\"other.test\"] (cordon --allow-host other.test)"

# ---------------------------------------------------------------- published ports
PUB=$((port_base + 5))
cordon_run "$ws" --publish "$PUB:8000" -- bash -c "$PY -m http.server 8000 --bind ::1 >/dev/null 2>&1 &
    for i in \$(seq 50); do (exec 3<>/dev/tcp/::1/8000) 2>/dev/null && break; sleep 0.1; done; sleep 3" &
run_pid=$!
for _ in $(seq 50); do got=$(curl -sS -m 2 "http://127.0.0.1:$PUB/" 2>/dev/null) && [ -n "$got" ] && break; sleep 0.2; done
like "publish: a server listening on ::1 only inside is reached from the host" "$got" "Directory listing"
wait "$run_pid"
PUB2=$((port_base + 6))
(cd "$ws" && "$CORDON" run --publish "$PUB2:8001" -- sleep 2 >"$TEST_TMP/pub2" 2>&1) &
run_pid=$!
sleep 1
got=$(curl -sS -m 2 "http://127.0.0.1:$PUB2/" 2>&1)
wait "$run_pid"
like "publish: nothing listening inside: cordon's stderr says so (not only an empty reply)" "$(cat "$TEST_TMP/pub2")" \
    "published 127.0.0.1:$PUB2 -> 8001: nothing accepts on the sandbox's 127.0.0.1:8001 or \\[::1\\]"

# ---------------------------------------------------------------- cordon verify NAME stays quiet
export XDG_RUNTIME_DIR="$TEST_TMP/runtime"
mkdir -p "$XDG_RUNTIME_DIR" && chmod 700 "$XDG_RUNTIME_DIR"
fifo="$TEST_TMP/mcp-in"
mkfifo "$fifo"
(cd "$ws" && exec "$CORDON" mcp --name dn-verify --network allowlist --net-hosts-file "$hosts" <"$fifo" >"$TEST_TMP/mcp-out" 2>"$TEST_TMP/mcp-err") &
mcp_pid=$!
cleanup_pids+=("$mcp_pid")
exec 7>"$fifo"
send() { mcp_send "$1"; }
mcp_hello 'echo up' "$TEST_TMP/mcp-out"
vout=$("$CORDON" verify dn-verify 7>&- 2>&1)
like "verify NAME: the running session's egress check passes through its proxy" "$vout" "PASS +network-egress .*proxy CONNECT 127.0.0.1:[0-9]+ \\(not allowlisted\\) -> HTTP/1.1 403"
send '{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"bash","arguments":{"command":"echo after-verify"}}}'
for _ in $(seq 100); do grep -q '"id":3' "$TEST_TMP/mcp-out" 2>/dev/null && break; sleep 0.1; done
unlike "verify NAME: its probe's refusals are not warned about on the session's stderr" "$(cat "$TEST_TMP/mcp-err")" "refused"
unlike "verify NAME: nor reported in the session's next tool result" "$(grep '"id":3' "$TEST_TMP/mcp-out")" "cordon\\] network"
send "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"tools/call\",\"params\":{\"name\":\"bash\",\"arguments\":{\"command\":\"curl -sS -m 5 http://other.test:$HTTP/ -o /dev/null\"}}}"
for _ in $(seq 100); do grep -q '"id":4' "$TEST_TMP/mcp-out" 2>/dev/null && break; sleep 0.1; done
like "the agent's own refusal afterwards is still warned about" "$(cat "$TEST_TMP/mcp-err")" "other.test:$HTTP refused"
like "and still ends its result" "$(grep '"id":4' "$TEST_TMP/mcp-out")" "cordon\\] network: other.test:$HTTP refused"
exec 7>&-
wait "$mcp_pid"

# ---------------------------------------------------------------- the refusing proxy waits for a connection
# Deny mode with nothing published: no proxy process runs until the
# sandbox's first connection to 127.0.0.1:3128, and that listener is there
# before the command runs (made by the sandbox's child, issue 20).
proxy_children() { # the supervisor's children named cordon: the proxy (init, the guard and the watchdog have their own names)
    ps -o comm= --ppid "$1" | grep -cx cordon
}
wait_file() { for _ in $(seq 400); do [ -e "$1" ] && return 0; sleep 0.05; done; return 1; }
rm -f "$ws"/lazy-*
(cd "$ws" && exec "$CORDON" run -- bash -c 'touch lazy-ready; while [ ! -e lazy-go ]; do sleep 0.05; done
    (exec 3<>/dev/tcp/127.0.0.1/3128) && echo listening >lazy-conn
    curl -sS -m 5 http://web.test:'"$HTTP"'/ >lazy-curl 2>&1; touch lazy-curled
    while [ ! -e lazy-end ]; do sleep 0.05; done') >"$TEST_TMP/lazy-out" 2>&1 &
sup=$!
wait_file "$ws/lazy-ready"
is "deny: no proxy process while the sandbox has not connected" "$(proxy_children "$sup")" 0
touch "$ws/lazy-go"
wait_file "$ws/lazy-curled"
is "deny: the sandbox's first connection starts the proxy (one process)" "$(proxy_children "$sup")" 1
touch "$ws/lazy-end"
wait "$sup"
is "deny: the listener inside was there before the proxy" "$(cat "$ws/lazy-conn" 2>/dev/null)" listening
like "deny: the first client through it gets the refusal with the reason" "$(cat "$ws/lazy-curl" 2>/dev/null)" \
    "cordon: network: denied: network.mode is \"deny\""
is "deny: the session's end leaves no proxy behind" "$(pgrep -P "$sup" 2>/dev/null | wc -l)" 0
rm -f "$ws"/lazy-*

# ---------------------------------------------------------------- host services
# The host's loopback HTTP server ($HTTP) listed as a host service: reached
# inside at the same address and port, in deny mode (NO_PROXY sends
# 127.0.0.1 straight to the sandbox's own loopback, where cordon listens).
cordon_run "$ws" --set "network.host_services=[\"127.0.0.1:$HTTP\"]" -- bash -c \
    "curl -sS -m 5 http://127.0.0.1:$HTTP/; curl -sS -m 5 http://localhost:$HTTP/; $PY -c 'import socket; s=socket.create_connection((\"127.0.0.1\", $ECHO), 3)' 2>&1 | tail -1"
like "host service: 127.0.0.1:PORT inside reaches the host's service" "$out" "hello-from-loopback"
is "host service: through localhost too (curl, twice)" "$(grep -c hello-from-loopback <<<"$out")" 2
like "host service: another port of the host's loopback stays unreachable" "$out" "ConnectionRefusedError"
hsws=$(new_ws hs)
printf '[network]\nhost_services = ["127.0.0.1:%s"]\n' "$HTTP" >"$hsws/.cordon.toml"
out=$(cd "$hsws" && "$CORDON" config check --as workspace .cordon.toml 2>&1)
like "host service: refused in a workspace's .cordon.toml" "$out" "network.host_services is refused in the workspace file"
out=$("$CORDON" config --set 'network.host_services=["10.1.2.3:80"]' 2>&1)
like "host service: only the host's loopback" "$out" "expected 127.0.0.1:PORT"

tap_done
