#!/usr/bin/env bash
# Integration: network.upstream_proxy and network.no_proxy (docs/network.md
# "Upstream proxy"): every allowed connection is a CONNECT through the
# user's proxy (a test proxy on the host's loopback that logs what it is
# asked), no_proxy destinations go direct, the allowlist still decides
# first, and the upstream's refusals reach the client with its status line.
. "$CORDON_SRC/tests/lib/tap.sh"
. "$CORDON_SRC/tests/lib/cordon.sh"
. "$CORDON_SRC/tests/lib/fixtures.sh"

proxy_test_env upstream
log="$TEST_TMP/upstream.log"
base=$((20000 + (RANDOM % 20000)))
HTTP=$base ECHO=$((base + 1)) UP=$((base + 2))

$PY "$here/net-servers.py" 127.0.0.1 "$HTTP" "$ECHO" hello-from-origin >/dev/null 2>&1 &
cleanup_pids+=($!)
$PY "$here/upstream-proxy.py" "$UP" "$log" >/dev/null 2>&1 &
cleanup_pids+=($!)
for p in $HTTP $UP; do wait_port 127.0.0.1 "$p"; done
: >"$log"
# Only direct.test resolves here: chained names are the upstream's to resolve.
echo "127.0.0.1 direct.test" >"$hosts"
cat >"$XDG_CONFIG_HOME/cordon/config.toml" <<EOF2
[network]
upstream_proxy = "http://127.0.0.1:$UP"
no_proxy = ["direct.test"]
EOF2
up_run() {
    cordon_run "$ws" --network allowlist --net-hosts-file "$hosts" --net-audit-log "$audit" \
        --allow-host web.test --allow-host direct.test --allow-host blocked.test \
        --allow-host "127.0.0.1:$HTTP" -- bash -c "$1"
}

up_run "curl -sS -m 10 http://web.test:$HTTP/; curl -sS -m 10 -p http://web.test:$HTTP/x;
    curl -sS -m 10 -x socks5h://127.0.0.1:3128 http://web.test:$HTTP/y"
is "plain HTTP, CONNECT and SOCKS5 reach the origin through the upstream proxy" \
    "$(grep -c hello-from-origin <<<"$out")" 3
is "the upstream proxy was asked for the name each time (unresolved)" \
    "$(grep -c "^CONNECT web.test:$HTTP HTTP/1.1\$" "$log")" 3
like "the audit log says the connection went through the upstream" "$(tail -1 "$audit")" \
    "\"decision\":\"allow\".*through the upstream proxy 127.0.0.1:$UP"

: >"$log"
up_run "curl -sS -m 10 http://direct.test:$HTTP/"
like "a no_proxy destination is reached directly" "$out" "hello-from-origin"
is "... without the upstream proxy" "$(wc -c <"$log")" "0"

up_run "curl -sS -m 10 -o /dev/stderr -w 'code=%{http_code}' http://evil.test:$HTTP/"
like "the allowlist still decides first (403)" "$out" "code=403.*|no allow_hosts rule matches evil.test"
is "... and the upstream proxy is never asked" "$(grep -c evil.test "$log")" "0"

up_run "curl -sS -m 10 -o /dev/stderr -w 'code=%{http_code}' http://blocked.test:$HTTP/"
like "an upstream refusal reaches the client as 502" "$out" "code=502"
like "... with the upstream's status line" "$out" \
    "the upstream proxy 127.0.0.1:$UP refused CONNECT blocked.test:$HTTP: HTTP/1.1 403 Forbidden"

NONE=$((base + 3)) # nothing listens here
sed -i "s/127.0.0.1:$UP/127.0.0.1:$NONE/" "$XDG_CONFIG_HOME/cordon/config.toml"
up_run "curl -sS -m 10 -o /dev/stderr -w 'code=%{http_code}' http://web.test:$HTTP/"
like "an unreachable upstream proxy: 502" "$out" "code=502"
like "... in words" "$out" "could not connect to the upstream proxy 127.0.0.1:$NONE"

printf '[network]\nupstream_proxy = "127.0.0.1:%s"\n' "$UP" >"$ws/.cordon.toml"
(cd "$ws" && "$CORDON" trust --yes >/dev/null 2>&1)
cordon_run "$ws" -- true
is "a workspace file setting upstream_proxy is refused (125)" "$rc" 125
like "... saying why" "$out" "network.upstream_proxy is refused in the workspace file"
rm -f "$ws/.cordon.toml"
cordon_run "$ws" --set network.upstream_proxy=user@127.0.0.1:3 -- true
like "credentials in upstream_proxy are refused" "$out" "must be host:port or http://host:port"

tap_done
