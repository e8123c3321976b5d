#!/usr/bin/env bash
# Runs tests/toml-decode over the TOML cases in toml/ (the toml-test suite's
# layout and tagged JSON format): every valid/*.toml must decode to its
# .json, every invalid/*.toml must be refused with exit status 1 and a
# file:line:column message.
. "$CORDON_SRC/tests/lib/tap.sh"
decode=${1:?usage: toml-suite.sh PATH-TO-toml-decode}
dir="$CORDON_SRC/tests/unit/config/toml"
for toml in "$dir"/valid/*.toml; do
    name=valid/$(basename "$toml" .toml)
    got=$("$decode" < "$toml" 2>&1)
    status=$?
    if [ $status -ne 0 ]; then
        fail "$name decodes" "exit $status: $got"
        continue
    fi
    if python3 -c 'import json,sys; sys.exit(json.loads(sys.argv[1]) != json.load(open(sys.argv[2])))' \
        "$got" "${toml%.toml}.json"; then
        pass "$name decodes to the expected JSON"
    else
        fail "$name decodes to the expected JSON" "got: $got"
    fi
done
for toml in "$dir"/invalid/*.toml; do
    name=invalid/$(basename "$toml" .toml)
    got=$("$decode" < "$toml" 2>&1 >/dev/null)
    status=$?
    if [ $status -eq 1 ] && [[ $got =~ ^\<stdin\>:[0-9]+:[0-9]+:\  ]]; then
        pass "$name is refused: $got"
    else
        fail "$name is refused with file:line:column" "exit $status: $got"
    fi
done
tap_done
