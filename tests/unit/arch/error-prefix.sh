#!/usr/bin/env bash
# The error contract (docs/errors.md): callers add context on the way up,
# so a message never carries the same prefix twice ("configuration:
# configuration: ..."). Drives cordon's error paths that travel through a
# prefixing caller (configuration, network, backend checks) and reads what
# the user sees.
. "$CORDON_SRC/tests/lib/tap.sh"
ws=$(mktemp -d)
trap 'rm -rf "$ws"' EXIT
cd "$ws" || exit 1
git init -q . 2>/dev/null

doubled() { grep -E '(^|: )([A-Za-z][A-Za-z0-9 ._-]*): \2: '; }

check() { # name, expected substring, command...
    local name=$1 want=$2
    shift 2
    local out
    out=$("$@" 2>&1 < /dev/null)
    like "$name: fails with its reason" "$out" "$want"
    is "$name: no prefix twice" "$(printf '%s\n' "$out" | doubled)" ""
}

check "no HOME" "configuration: neither XDG_CONFIG_HOME nor HOME is set" \
    env -u HOME -u XDG_CONFIG_HOME "$CORDON" run -- true
check "no HOME (cordon config)" "configuration: neither XDG_CONFIG_HOME nor HOME is set" \
    env -u HOME -u XDG_CONFIG_HOME "$CORDON" config
check "missing hosts file" "network: hosts file /nonexistent/hosts" \
    "$CORDON" run --net-hosts-file /nonexistent/hosts -- true
check "bad enum" "configuration: --set: network.mode: expected one of" \
    "$CORDON" run --set network.mode=bogus -- true
check "unknown backend" "configuration: --set: backend: expected one of" \
    "$CORDON" run --set backend=bogus -- true
check "out of range" "configuration: --set:1:19: limits.memory_mib: -5 is out of range" \
    "$CORDON" run --set limits.memory_mib=-5 -- true
check "backend refuses a setting" 'docker.mode = "require" \(set by --set\)' \
    "$CORDON" run --set docker.mode=require -- true
# The check itself sees a doubled prefix.
is "a planted doubled prefix is found" \
    "$(printf 'cordon: error: configuration: configuration: x\n' | doubled | wc -l)" "1"
tap_done
