#!/usr/bin/env bash
# The catalogue (tests/security/cases.md, cases 1-55) against the tests:
# every case is named by an automated test ("case N" in its description), or
# listed here as skipped with the reason. A case that loses its test fails
# this script.
. "$CORDON_SRC/tests/lib/tap.sh"

tests=("$CORDON_SRC"/tests/security/*.sh "$CORDON_SRC"/tests/security/syscall-probe.c
       "$CORDON_SRC"/tests/integration/*.sh "$CORDON_SRC"/tests/e2e/*.py)
declare -A not_built=()
for n in $(seq 1 55); do
    if [ -n "${not_built[$n]:-}" ]; then
        skip "case $n" "${not_built[$n]}"
        continue
    fi
    # escapes.sh passes the case number to its probe helper: "probe NAME WANT N".
    where=$(grep -lE "case $n([^0-9]|\$)|^ *probe [a-z0-9_]+ [A-Z:]+ $n( |\$)|EPERM $n; done" "${tests[@]}" 2>/dev/null |
        xargs -r -n1 basename | sort -u | tr '\n' ' ')
    if [ -n "$where" ]; then
        pass "case $n is tested (${where% })"
    else
        fail "case $n has no test"
    fi
done
tap_done
