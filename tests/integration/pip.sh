#!/usr/bin/env bash
# Integration: pip inside the sandbox against a local package index,
# through cordon's proxy (docs/network.md "Presets"). A PEP 503 simple
# index with a wheel the test builds (tests/integration/pip-index.py),
# served over HTTP and over HTTPS with a CA of the test's own; pip finds
# the proxy through HTTPS_PROXY. Allowed hosts install, an index whose
# files live on a host not allowed fails naming that host (the server sees
# no download), a host not allowed at all and deny mode are refused with
# cordon's reason. As root, a server on port 443 in a test network
# namespace stands for pypi.org and files.pythonhosted.org: plain
# `pip install NAME` with only @pypi, and refused with @npm.
. "$CORDON_SRC/tests/lib/tap.sh"
. "$CORDON_SRC/tests/lib/cordon.sh"
. "$CORDON_SRC/tests/lib/fixtures.sh"
. "$CORDON_SRC/tests/lib/pki.sh"

/usr/bin/python3 -m pip --version >/dev/null 2>&1 ||
    { echo "1..0 # SKIP python3-pip is not installed (scripts/bootstrap.sh --test)"; exit 0; }
proxy_test_env pip
log="$TEST_TMP/index.log"
PH=$((20000 + (RANDOM % 20000)))
PS=$((PH + 1))
pki="$TEST_TMP/pki"
make_test_pki "$pki" "test index CA" pypi.test \
    DNS:pypi.test,DNS:files.test,DNS:pypi.org,DNS:files.pythonhosted.org
chmod 644 "$pki"/*
cp "$pki/ca.pem" "$ws/index-ca.pem"

# The HTTP index serves its files itself; the HTTPS one links them on
# files.test, as pypi.org links files.pythonhosted.org.
$PY "$here/pip-index.py" make "$TEST_TMP/plain" "http://pypi.test:$PH"
$PY "$here/pip-index.py" make "$TEST_TMP/tls" "https://files.test:$PS"
$PY "$here/pip-index.py" serve "$TEST_TMP/plain" 127.0.0.1 "$PH" "$log" >/dev/null 2>&1 &
cleanup_pids+=($!)
$PY "$here/pip-index.py" serve "$TEST_TMP/tls" 127.0.0.1 "$PS" "$log" "$pki/srv.pem" "$pki/srv.key" \
    >/dev/null 2>&1 &
cleanup_pids+=($!)
for p in $PH $PS; do wait_port 127.0.0.1 "$p"; done
echo "127.0.0.1 pypi.test files.test other.test" >"$hosts"

PIP="python3 -m pip install --no-cache-dir --disable-pip-version-check --retries 0 --timeout 15 --root-user-action=ignore --target /tmp/site"
IMPORT='PYTHONPATH=/tmp/site python3 -c "import cordontestpkg; print(cordontestpkg.VALUE)"'
# --memory 0: the sanitizer build's cordon-agent reserves more address space
# than RLIMIT_AS allows (a release build needs no such option).
AL=(--memory 0 --network allowlist --net-hosts-file "$hosts" --net-audit-log "$audit"
    --allow-host "127.0.0.1:$PH" --allow-host "127.0.0.1:$PS")

# ------------------------------------------------ HTTP index, allowed
: >"$log"
cordon_run "$ws" "${AL[@]}" --allow-host "pypi.test:$PH" -- bash -c "echo proxy=\$HTTPS_PROXY
    $PIP --index-url http://pypi.test:$PH/simple --trusted-host pypi.test cordontestpkg 2>&1 | tail -1; $IMPORT"
like "pip finds the proxy in the environment" "$out" "proxy=http://127.0.0.1:3128"
like "pip install from a local HTTP index through the proxy" "$out" \
    "Successfully installed cordontestpkg-1.0"
like "... the package imports inside" "$out" "installed from the local index"
like "... the index served the page and the wheel" "$(cat "$log")" \
    "GET /simple/cordontestpkg/ pypi.test:$PH.*GET /packages/cordontestpkg-1.0-py3-none-any.whl"
like "... the audit log has the allowed request" "$(grep "pypi.test" "$audit" | tail -1)" \
    "\"host\":\"pypi.test\",\"port\":$PH,.*\"decision\":\"allow\""

# ------------------------------------------------ HTTPS index, files on another host
: >"$log"
TLS_PIP="$PIP --index-url https://pypi.test:$PS/simple --cert index-ca.pem cordontestpkg"
cordon_run "$ws" "${AL[@]}" --allow-host "pypi.test:$PS" -- bash -c "$TLS_PIP 2>&1; echo pip=\$?"
like "HTTPS index allowed, its files' host not: pip fails" "$out" "pip=1"
like "... pip names the proxy's refusal" "$out" "403 Forbidden"
like "... cordon's stderr names the host and the missing rule" "$out" \
    "cordon: warning: network: http-connect files.test:$PS refused: denied: no allow_hosts rule matches files.test:$PS"
like "... the index page was read" "$(cat "$log")" "GET /simple/cordontestpkg/ pypi.test:$PS"
unlike "... the wheel was never downloaded" "$(cat "$log")" "GET /packages/"

: >"$log"
cordon_run "$ws" "${AL[@]}" --allow-host "pypi.test:$PS" --allow-host "files.test:$PS" -- \
    bash -c "$TLS_PIP 2>&1 | tail -1; $IMPORT"
like "HTTPS index and files host allowed: pip install works" "$out" \
    "Successfully installed cordontestpkg-1.0.*installed from the local index"
like "... the wheel came from files.test" "$(cat "$log")" \
    "GET /packages/cordontestpkg-1.0-py3-none-any.whl files.test:$PS"

# ------------------------------------------------ refused
: >"$log"
cordon_run "$ws" "${AL[@]}" --allow-host other.test -- bash -c "$TLS_PIP 2>&1; echo pip=\$?"
like "an index host not allowed: pip fails" "$out" "pip=1"
like "... cordon names the refused destination" "$out" \
    "http-connect pypi.test:$PS refused: denied: no allow_hosts rule matches pypi.test:$PS"
is "... the index saw no request" "$(wc -l <"$log")" "0"

start=$(date +%s)
cordon_run "$ws" --memory 0 --net-hosts-file "$hosts" -- bash -c "$TLS_PIP 2>&1; echo pip=\$?"
like "deny mode: pip fails" "$out" "pip=1"
like "... with the mode as the reason" "$out" "pypi.test:$PS refused: denied: network.mode is \"deny\""
ok "... at once, not after retries (under 20 s)" [ $(($(date +%s) - start)) -lt 20 ]
is "... the index saw no request" "$(wc -l <"$log")" "0"

# ------------------------------------------------ @pypi, pypi.org on port 443 in netns
if ! is_root || [ -n "${CORDON_TEST_UNPRIVILEGED:-}" ]; then
    skip "@pypi: pip install NAME from pypi.org:443 in a test network namespace" "needs root (ip netns add)"
    tap_done
fi
cl=cordon-pipc-$$ sv=cordon-pips-$$
if ! netns_pair "$cl" "$sv" veth-pc veth-ps; then
    skip "@pypi: pip install NAME from pypi.org:443 in a test network namespace" "could not create them"
    tap_done
fi
$PY "$here/pip-index.py" make "$TEST_TMP/pypi" "https://files.pythonhosted.org"
ip netns exec "$sv" $PY "$here/pip-index.py" serve "$TEST_TMP/pypi" 198.51.100.2 443 "$log" \
    "$pki/srv.pem" "$pki/srv.key" >/dev/null 2>&1 &
cleanup_pids+=($!)
wait_port 198.51.100.2 443 "$cl"
echo "198.51.100.2 pypi.org files.pythonhosted.org" >"$hosts"
pypi_run() { # pypi_run PRESET: pip install with pip's default index
    out=$(set -o pipefail; cd "$ws" && PWD="$ws" ip netns exec "$cl" "$CORDON" run --memory 0 \
        --network allowlist --net-hosts-file "$hosts" --allow-host "$1" -- \
        bash -c "$PIP --cert index-ca.pem cordontestpkg 2>&1 | tail -3; echo pip=\$?; $IMPORT" 2>&1 </dev/null |
        { grep -v '^cordon: warning: running as root without a pids cgroup' || true; })
}
: >"$log"
pypi_run @pypi
like "@pypi: plain pip install NAME (pypi.org's index, files.pythonhosted.org's wheel)" "$out" \
    "Successfully installed cordontestpkg-1.0.*installed from the local index"
like "... both names on port 443" "$(cat "$log")" \
    "GET /simple/cordontestpkg/ pypi.org.*GET /packages/cordontestpkg-1.0-py3-none-any.whl files.pythonhosted.org"
pypi_run @npm
like "@npm: pypi.org is refused" "$out" "no allow_hosts rule matches pypi.org:443"

tap_done
