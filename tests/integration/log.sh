#!/usr/bin/env bash
# Integration: `cordon log NAME` (issue 18). Every way of running tools
# writes the session's audit log with the call's arguments (bounded);
# network decisions are in it; --json for scripts; --follow while an MCP
# session runs, ending with it; a removed session's log stays until gc
# takes it after gc_hours. The sandbox plays the attacker: arguments and
# host names made to put escape sequences on the user's terminal, and a
# huge write that must not be copied into the log.
. "$CORDON_SRC/tests/lib/tap.sh"
. "$CORDON_SRC/tests/lib/cordon.sh"
. "$CORDON_SRC/tests/lib/fixtures.sh"

private_runtime_dirs
root="$XDG_RUNTIME_DIR/cordon"
PY=/usr/bin/python3
ws=$(new_ws log)
in_log() { out=$("$CORDON" log "$@" 2>&1); rc=$?; }

# ---------------------------------------------------------------- cordon tool
in_ws "$ws" "$CORDON" tool --name lg-one --teardown none bash \
    '{"command":"curl -sS -m 5 https://registry.example.test/ -o /dev/null; printf \"\\033]0;pwned\\007\"; echo done"}' >/dev/null 2>&1
in_log lg-one
is "log: exit status 0" "$rc" 0
like "log: the tool call with its arguments" "$out" 'tool +bash sandbox ok [0-9.]+ ms exit 0 \{"command":"curl -sS -m 5 https://registry.example.test/'
like "log: the network decision with its reason" "$out" 'network +deny +http-connect registry.example.test:443: denied: network.mode is "deny"'
ok "log: the network decision comes before the call that ended after it" \
    bash -c '[ "$(printf "%s\n" "$1" | grep -n network | cut -d: -f1)" -lt "$(printf "%s\n" "$1" | grep -n "tool " | cut -d: -f1)" ]' _ "$out"
ok "log: no raw control character reaches the terminal (the sandbox's OSC sequence is escaped)" \
    bash -c '! printf "%s" "$1" | tr -d "\n" | grep -q "[[:cntrl:]]"' _ "$out"
in_log --json lg-one
ok "log --json: one JSON object per line, kinds tool and network" $PY -c '
import json, sys
lines = [json.loads(l) for l in sys.argv[1].splitlines()]
assert {l["kind"] for l in lines} == {"tool", "network"}, lines
t = [l for l in lines if l["kind"] == "tool"][0]
assert t["tool"] == "bash" and t["args"]["command"].startswith("curl") and t["exit_code"] == 0, t
n = [l for l in lines if l["kind"] == "network"][0]
assert n["host"] == "registry.example.test" and n["decision"] == "deny", n
' "$out"

# ---------------------------------------------------------------- --batch, and a huge argument
big=$($PY -c 'print("x" * 100000)')
printf '%s\n' '{"id":1,"tool":"ls","args":{"path":"."}}' \
    "{\"id\":2,\"tool\":\"write\",\"args\":{\"path\":\"big.txt\",\"content\":\"$big\"}}" \
    '{"id":3,"tool":"read","args":{"path":"big.txt","limit":1}}' |
    (cd "$ws" && "$CORDON" tool --batch --name lg-batch --teardown none >/dev/null 2>&1)
in_log --json lg-batch
ok "batch: every call is in the audit log (it wrote none before)" $PY -c '
import json, sys
lines = [json.loads(l) for l in sys.argv[1].splitlines()]
assert [l["tool"] for l in lines] == ["ls", "write", "read"], lines
assert lines[0]["args"] == {"path": "."} and lines[2]["args"] == {"path": "big.txt", "limit": 1}, lines
w = lines[1]
assert "args" not in w and len(w["args_excerpt"]) <= 2048 and w["args_bytes"] > 100000, {k: (v if k != "args_excerpt" else len(v)) for k, v in w.items()}
' "$out"
ok "batch: the 100 KB write is not copied into the log" test "$(stat -c %s "$root/lg-batch/audit.jsonl")" -lt 10000

# ---------------------------------------------------------------- --follow on a running MCP session
fifo="$TEST_TMP/mcp-in"
mkfifo "$fifo"
(cd "$ws" && exec "$CORDON" mcp --name lg-mcp <"$fifo" >"$TEST_TMP/mcp-out" 2>/dev/null) &
mcp_pid=$!
exec 7>"$fifo"
send() { mcp_send "$1"; }
mcp_hello 'echo first-call' "$TEST_TMP/mcp-out"
"$CORDON" log --follow lg-mcp >"$TEST_TMP/follow" 2>&1 7>&- &
follow_pid=$!
cleanup_pids+=("$mcp_pid" "$follow_pid")
sleep 0.5
send '{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"bash","arguments":{"command":"echo second-call"}}}'
for _ in $(seq 100); do grep -q 'second-call' "$TEST_TMP/follow" 2>/dev/null && break; sleep 0.1; done
like "follow: the call made after it started is printed while the session runs" "$(cat "$TEST_TMP/follow")" 'echo second-call'
like "follow: and the earlier one first" "$(cat "$TEST_TMP/follow")" 'echo first-call'
ok "follow: still running with the session" kill -0 "$follow_pid"
exec 7>&-
wait "$mcp_pid"
for _ in $(seq 50); do kill -0 "$follow_pid" 2>/dev/null || break; sleep 0.1; done
ok "follow: ends when the session ends" bash -c "! kill -0 $follow_pid 2>/dev/null"

# ---------------------------------------------------------------- after teardown, until gc
in_ws "$ws" "$CORDON" tool --name lg-gone --teardown remove bash '{"command":"echo removed-session"}' >/dev/null 2>&1
ok "teardown remove: the session's state is gone" test ! -e "$root/lg-gone"
in_log lg-gone
like "teardown remove: cordon log still shows its calls" "$out" 'echo removed-session'
"$CORDON" gc --hours 1 >/dev/null 2>&1
in_log lg-gone
like "gc within gc_hours keeps it" "$out" 'echo removed-session'
touch -d '2 hours ago' "$root/.logs/lg-gone"
"$CORDON" gc --hours 1 >/dev/null 2>&1
in_log lg-gone
is "gc after gc_hours removes it: cordon log says there is none (125)" "$rc" 125
like "and names it" "$out" "no cordon sandbox named lg-gone"
in_log no-such-session
is "log of an unknown name: 125" "$rc" 125
in_log ../etc
is "log of a name that is a path: refused" "$rc" 125

tap_done
