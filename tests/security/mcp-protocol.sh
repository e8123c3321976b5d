#!/usr/bin/env bash
# The MCP protocol as an attack surface (security cases 45-53): raw lines to
# `cordon mcp` from tests/security/mcp-client.py, asserting the precise
# JSON-RPC error, that the server keeps serving, that nothing ran, and that
# memory stays bounded. Cases 54-55 (host execution, approvals) belong to the
# routing work.
. "$CORDON_SRC/tests/lib/tap.sh"
. "$CORDON_SRC/tests/lib/cordon.sh"

PY=/usr/bin/python3
client="$CORDON_SRC/tests/security/mcp-client.py"
ws=$(new_ws ws)

# obs NAME: the observation NAME from $out.
obs() { sed -n "s/^$1=//p" <<<"$out" | head -1; }

out=$(cd "$ws" && $PY "$client" "$CORDON" errors 2>&1)
like "case 49: tools/call before initialize is refused" "$(obs before_init)" \
    "^-32002 server not initialized"
ok "case 49: nothing was executed" test ! -e "$ws/before-init"
like "case 50: an unknown protocol version is answered with a supported one" "$(obs version)" \
    "^2025-(11-25|06-18|03-26)$"
is "case 45: a malformed line -> -32700 with id null" "$(obs malformed)" "-32700 id=null"
is "case 45: the server keeps reading" "$(obs after_malformed)" "{}"
is "case 46: id null -> -32600" "$(obs id_null)" "-32600"
is "case 46: no jsonrpc member -> -32600, answered to its id" "$(obs no_jsonrpc)" "-32600 id=4"
is "case 46: a batch array -> -32600" "$(obs batch)" "-32600"
is "case 47: unknown method -> -32601" "$(obs unknown_method)" "-32601"
is "case 47: tools/call for an unknown tool -> -32602" "$(obs unknown_tool)" "-32602"
like "case 48: write with an object as content -> an error result" "$(obs write_types)" \
    "^True Validation failed for tool \"write\""
ok "case 48: ... and no file was written" test ! -e "$ws/typed"
like "case 48: bash with an array as command -> an error result" "$(obs bash_types)" "^True "
ok "case 48: ... and nothing ran" test ! -e "$ws/bash-typed"
is "case 48: arguments that are not an object -> -32602" "$(obs args_string)" "-32602"
ok "case 48: ... and nothing ran" test ! -e "$ws/args-string"
is "case 52: notifications (cancelled for an unknown id, unknown, initialized) get no answer" \
    "$(obs after_notifications)" "11"
is "case 52: nothing else arrives" "$(obs silence)" "null"
is "cases 45-52: the server exits cleanly at end of input" "$(obs exit)" "0"

out=$(cd "$ws" && $PY "$client" "$CORDON" big 2>&1)
like "case 51: a 100 MB line -> -32700, longer than the bound" "$(obs big)" \
    "^-32700 Parse error: message longer than [0-9]+ bytes"
growth=$(obs big_hwm_growth_mib)
# The bound is one 16 MiB message; a reader that kept the line would grow by
# 100 MiB or more (sanitizer builds add their own overhead to both).
if [ -n "$growth" ] && [ "$growth" -lt 64 ]; then
    pass "case 51: memory stays bounded (peak RSS grew ${growth} MiB for a 100 MiB line)"
else
    fail "case 51: memory stays bounded" "peak RSS growth: ${growth:-?} MiB"
fi
is "case 51: the server answers after the big line" "$(obs after_big)" "{}"
like "case 51: invalid UTF-8 -> -32700" "$(obs utf8)" "^-32700 Parse error: .*(UTF-8|decode byte 0xff)"
is "case 51: the server answers after invalid UTF-8" "$(obs after_utf8)" "{}"

marker="98$RANDOM.$$"
out=$(cd "$ws" && $PY "$client" "$CORDON" cancel "$marker" 2>&1)
like "case 53: the bash call's tree was running" "$(obs running_before)" "^[1-9]"
is "case 53: cancel kills the whole tree (a detached child too)" "$(obs running_after)" "0"
is "case 53: the next response is the next request's" "$(obs next_response)" "2"
is "case 53: no response for the cancelled id" "$(obs silence)" "null"
ok "case 53: no sleep of the call survives on the host" bash -c "! pgrep -f 'slee[p] $marker' >/dev/null"

tap_done
