#!/usr/bin/env bash
# Integration: the network allowlist on the docker backend
# (docs/docker-backend.md "Network"), as a user sees it. The container keeps
# --network none; the host's proxy listens on a unix socket bound into it,
# and the agent's forwarder relays 127.0.0.1:3128 to it. Local servers on
# the host's loopback, names from a hosts file the test writes (never DNS).
# The image has no curl: busybox wget, and bash /dev/tcp with hand-written
# CONNECT and SOCKS5. Root only (a private dockerd, tests/lib/docker-backend.sh).
. "$CORDON_SRC/tests/lib/tap.sh"
. "$CORDON_SRC/tests/lib/cordon.sh"
. "$CORDON_SRC/tests/lib/docker-backend.sh"

PY=/usr/bin/python3
here="$CORDON_SRC/tests/integration"
export HOME="$TEST_TMP/home"
export XDG_CONFIG_HOME="$TEST_TMP/xdg"
export XDG_RUNTIME_DIR="$TEST_TMP/run"
mkdir -p "$HOME" "$XDG_RUNTIME_DIR" && chmod 700 "$XDG_RUNTIME_DIR"
ws=$(new_ws dnet)
audit="$TEST_TMP/audit.jsonl"
hosts="$TEST_TMP/hosts"

port_base=$((20000 + (RANDOM % 20000)))
HTTP=$port_base
ECHO=$((port_base + 1))
OTHER=$((port_base + 2)) # nothing listens here

wait_port() { # wait_port HOST PORT
    local i
    for i in $(seq 100); do
        if bash -c "exec 3<>/dev/tcp/$1/$2" 2>/dev/null; then return 0; fi
        sleep 0.1
    done
    return 1
}
$PY "$here/net-servers.py" 127.0.0.1 "$HTTP" "$ECHO" hello-from-loopback >/dev/null 2>&1 &
cleanup_pids+=($!)
wait_port 127.0.0.1 "$HTTP" && wait_port 127.0.0.1 "$ECHO" || diag "loopback servers did not start"

cat >"$hosts" <<EOF2
127.0.0.1 web.test www.example.test example.test evil-example.test rebind.test
EOF2
RULES=(--allow-host "*.example.test:$HTTP" --allow-host web.test --allow-host rebind.test
    --allow-host "127.0.0.1:$HTTP" --allow-host "127.0.0.1:$ECHO")
dnet_run() { # dnet_run SCRIPT: allowlist mode on docker with the loopback test rules
    cordon_run "$ws" "${D[@]}" --network allowlist --net-hosts-file "$hosts" \
        --net-audit-log "$audit" "${RULES[@]}" -- bash -c "$1"
}

# Bash helpers inside the container: CONNECT and SOCKS5 by hand (printf's
# \xHH writes the bytes), then a GET through the tunnel.
CLIENTS='
connect_get() { # HOST PORT
    exec 3<>/dev/tcp/127.0.0.1/3128 || return
    printf "CONNECT %s:%s HTTP/1.1\r\nHost: %s:%s\r\n\r\nGET / HTTP/1.0\r\nHost: %s\r\n\r\n" "$1" "$2" "$1" "$2" "$1" >&3
    timeout 10 cat <&3; exec 3<&-
}
socks_get() { # HOST PORT
    exec 3<>/dev/tcp/127.0.0.1/3128 || return
    local hi lo n
    hi=$(printf %02x $(($2 >> 8))); lo=$(printf %02x $(($2 & 255))); n=$(printf %02x ${#1})
    printf "\x05\x01\x00\x05\x01\x00\x03\x$n%s\x$hi\x$lo" "$1" >&3
    printf "GET / HTTP/1.0\r\nHost: %s\r\n\r\n" "$1" >&3
    timeout 10 cat <&3 >/tmp/socks.out; exec 3<&-
    echo "socks-reply=$(od -An -tx1 -N4 /tmp/socks.out | tr -d " ")"
    tr -d "\000" </tmp/socks.out
}
http_get() { # URL-PATH HOST: a plain proxied GET, the whole answer (head and body)
    exec 3<>/dev/tcp/127.0.0.1/3128 || return
    printf "GET %s HTTP/1.0\r\nHost: %s\r\n\r\n" "$1" "$2" >&3
    timeout 10 cat <&3; exec 3<&-
}
'

# ------------------------------------------------------------ the happy path
t0=$(date +%s%N)
dnet_run "$CLIENTS
    echo \"net=\$(ls /sys/class/net | tr '\n' ' ')\"
    echo \"proxy=\$HTTP_PROXY \$HTTPS_PROXY \$ALL_PROXY \$NO_PROXY \$http_proxy \$https_proxy \$all_proxy \$no_proxy\"
    wget -q -O - http://www.example.test:$HTTP/; echo wget=\$?
    connect_get web.test $HTTP
    socks_get web.test $HTTP
    exec 4<>/dev/tcp/127.0.0.1/3128; printf 'CONNECT web.test:$ECHO HTTP/1.1\r\n\r\necho-through-the-tunnel\n' >&4
    timeout 3 cat <&4; echo"
diag "allowlist run on docker: $((($(date +%s%N) - t0) / 1000000)) ms (noisy: 2 shared cores)"
is "allowlist: the run exits 0" "$rc" 0
like "allowlist: the container keeps only lo" "$out" $'net=lo \n'
like "allowlist: proxy variables point at the in-container forwarder" "$out" \
    "proxy=http://127.0.0.1:3128 http://127.0.0.1:3128 socks5h://127.0.0.1:3128 localhost,127.0.0.1 http://127.0.0.1:3128 http://127.0.0.1:3128 socks5h://127.0.0.1:3128 localhost,127.0.0.1"
like "allowlist: busybox wget through HTTP_PROXY reaches the listed subdomain" "$out" $'hello-from-loopback\nwget=0'
is "allowlist: the listed host by HTTP, CONNECT and SOCKS5" "$(grep -c hello-from-loopback <<<"$out")" 3
like "allowlist: SOCKS5 greeting and success reply" "$out" "socks-reply=05000500"
like "allowlist: CONNECT to a raw TCP echo server" "$out" "HTTP/1.1 200 Connection established.*echo-through-the-tunnel"
is "allowlist: no container left" "$(ncontainers)" 0

# ------------------------------------------------------------ refusals
dnet_run "$CLIENTS
    http_get http://example.test:$HTTP/ example.test; echo; echo ---
    http_get http://evil-example.test:$HTTP/ evil-example.test; echo; echo ---
    connect_get www.example.test $ECHO; echo; echo ---
    http_get http://127.0.0.1:$OTHER/ 127.0.0.1; echo; echo ---
    http_get http://rebind.test:$OTHER/ rebind.test; echo; echo ---
    socks_get evil-example.test $HTTP
    wget -q -O - http://evil-example.test:$HTTP/ 2>&1; echo wget=\$?"
is "refusals: five 403 answers" "$(grep -c '^HTTP/1.1 403' <<<"$out")" 5
like "refusals: bare domain names the rule (case 36)" "$out" "no allow_hosts rule matches example.test:$HTTP"
like "refusals: look-alike domain (case 36)" "$out" "no allow_hosts rule matches evil-example.test:$HTTP"
like "refusals: unlisted port names the rule and the port (case 36)" "$out" "allows port $HTTP only, not $ECHO"
like "refusals: IP literal says why (case 36)" "$out" "address literal needs an address or CIDR rule"
like "refusals: a listed name resolving to loopback (rebinding)" "$out" "127.0.0.1 is a loopback address"
like "refusals: SOCKS5 refusal is reply 0x02" "$out" "socks-reply=05000502"
like "refusals: busybox wget sees the 403" "$out" "403 Forbidden"
unlike "refusals: nothing reached the server" "$out" "hello-from-loopback"
aud=$(cat "$audit" 2>/dev/null)
like "audit: the allowed request is logged" "$aud" '"host":"www.example.test".*"decision":"allow"'
like "audit: a refusal is logged with its reason" "$aud" \
    '"host":"evil-example.test".*"decision":"deny".*no allow_hosts rule matches'
like "audit: the session is named" "$aud" '"session":"'

# ------------------------------------------------------------ no way around the proxy (case 37)
dnet_run "env -u HTTP_PROXY -u http_proxy wget -q -O - http://www.example.test:$HTTP/ 2>&1; echo wget=\$?
    nslookup www.example.test 2>&1 | tail -2; echo
    (exec 3<>/dev/tcp/198.51.100.2/80) 2>&1; echo route=\$?
    (exec 3<>/dev/tcp/127.0.0.1/$HTTP) 2>/dev/null; echo devtcp=\$?
    ls -l /run/cordon/proxy.sock; echo x > /run/cordon/proxy.sock 2>&1; rm /run/cordon/proxy.sock 2>&1"
like "unset: no DNS (wget)" "$out" "bad address 'www.example.test"
like "unset: no DNS (nslookup)" "$out" "nslookup: can't connect to remote host .*: Network is unreachable"
like "unset: no route out" "$out" "Network is unreachable"
like "unset: the host's loopback server is not reachable directly" "$out" "devtcp=1"
unlike "unset: nothing reached the server" "$out" "hello-from-loopback"
like "the proxy socket inside is a socket" "$out" "srw-------"
like "the proxy socket cannot be removed (read-only bind)" "$out" "rm: can't remove '/run/cordon/proxy.sock': (Read-only file system|Device or resource busy)"

# ------------------------------------------------------------ the tools
tout=$(cd "$ws" && PWD="$ws" "$CORDON" tool "${D[@]}" --network allowlist --net-hosts-file "$hosts" \
    "${RULES[@]}" bash "{\"command\":\"wget -q -O - http://web.test:$HTTP/; wget -q -O - http://evil-example.test:$HTTP/ 2>&1\"}" 2>&1)
like "tool bash: the forwarder is up for the first call" "$tout" "hello-from-loopback"
like "tool bash: an unlisted host is refused" "$tout" "403 Forbidden"

# ------------------------------------------------------------ nothing left behind
sleep 0.5
is "teardown: no container left" "$(ncontainers)" 0
is "teardown: no forwarder left" "$(pgrep -x cordon-forward | wc -l)" 0
is "teardown: no proxy socket left" "$(find "$XDG_RUNTIME_DIR" -name proxy.sock 2>/dev/null | wc -l)" 0
left=$(ps -eo pid,args | grep -F "$hosts" | grep -v grep)
is "teardown: no proxy process left" "$left" ""

# ------------------------------------------------------------ what stays refused
cordon_run "$ws" "${D[@]}" --network open -- true
is "open: refused on docker (125)" "$rc" 125
like "open: the reason" "$out" 'network.mode = "open" is not supported on the docker backend'

tap_done
