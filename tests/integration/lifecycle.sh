#!/usr/bin/env bash
# Lifecycle (docs/design.md "Start-up, in order"): ownership locks, the watchdog, teardown
# policies, `cordon ls/rm/gc`, the audit log.
. "$CORDON_SRC/tests/lib/tap.sh"
. "$CORDON_SRC/tests/lib/cordon.sh"
. "$CORDON_SRC/tests/lib/fixtures.sh"
private_runtime_dirs
root="$XDG_RUNTIME_DIR/cordon"
ws=$(new_ws ws)
py() { PYTHONPATH="$CORDON_SRC/tests/lib" python3 -c "$@"; }

# --- state directory and lock record ---
cordon_run "$ws" --name rec -- true
is "a run with an explicit name exits 0" "$rc" 0
ok "state directories are 0700" test "$(stat -c %a "$root")" = 700 -a "$(stat -c %a "$root/rec")" = 700
ok "the lock file is 0600" test "$(stat -c %a "$root/rec/lock")" = 600
like "the lock record names session, workspace, pid and start" "$(cat "$root/rec/lock")" '"name":"rec".*"pid":[0-9]+.*"started":[0-9]+.*"workspace":"'"$ws"'"'
out=$(cd "$ws" && "$CORDON" ls)
like "cordon ls lists a stopped named sandbox" "$out" "rec +stopped +ns +- +[0-9]+s +$ws"
like "cordon ls: the command that made it" "$out" $'rec +stopped[^\n]*\n    command  cordon run '
like "cordon ls: where its tool calls are logged" "$out" $'\n    log      [^\n]*/rec/audit\.jsonl\n'
like "cordon ls: how to go back in" "$out" $'\n    attach   `cordon mcp --attach rec` goes back in \(its home and /tmp\); `cordon rm rec` removes it'

# --- teardown policies ---
cordon_run "$ws" -- true
n=$(ls "$root" | grep -c '^cordon-' || true)
is "teardown remove (default for session names) leaves no state" "$n" 0
cordon_run "$ws" --name kept --teardown stop -- true
ok "teardown stop keeps the state" test -f "$root/kept/lock"
cordon_run "$ws" --name gone --teardown remove -- true
ok "teardown remove on a named sandbox removes it" test ! -e "$root/gone"

# --- a kept sandbox: home and /tmp come back; cordon shell NAME; mcp --attach ---
cordon_run "$ws" --name keep --teardown stop -- bash -c 'echo in-home > ~/note; echo in-tmp > /tmp/note'
cordon_run "$ws" --name keep -- bash -c 'cat ~/note /tmp/note'
is "teardown stop keeps the sandbox's home and /tmp for the next session on the name" "$out" "in-home
in-tmp"
out=$(echo 'cat ~/note' | (cd "$ws" && "$CORDON" shell keep) 2>&1)
is "cordon shell NAME goes back into a kept sandbox" "$out" "in-home"
out=$(cd "$ws" && "$CORDON" shell no-such-sandbox 2>&1 </dev/null)
like "cordon shell NAME refuses an unknown name" "$out" "no sandbox named 'no-such-sandbox'"
out=$(py "
from mcp_client import Mcp, text_of
m = Mcp('$CORDON', '$ws', '--attach', 'keep')
m.initialize()
print(text_of(m.call(1, 'bash', {'command': 'cat ~/note'})).strip())
m.close()
n = Mcp('$CORDON', '$ws', '--attach', 'nothing-here')
n.initialize()
r = n.call(1, 'bash', {'command': 'true'})
print(r['result']['isError'], text_of(r))
n.close()
")
like "cordon mcp --attach NAME serves from the kept sandbox" "$out" "^in-home"
like "cordon mcp --attach of an unknown name blocks the tools with the reason" "$out" "True .*no sandbox named nothing-here to attach to"
cordon_run "$ws" -- bash -c 'ls -A ~ | wc -l'
is "a session sandbox's home starts empty (nothing kept)" "$out" "0"
(cd "$ws" && "$CORDON" rm keep >/dev/null)

# A kept home the sandbox left read-only (a Go module cache is 0555, a
# directory may be 000): `cordon rm` removes all of it, the logs stay under
# .logs/NAME (with the lock file, nothing else), and the name is reusable.
cordon_run "$ws" --name rohome --teardown stop -- bash -c \
    'mkdir -p ~/gomod/pkg@v1/sub ~/locked && echo x > ~/gomod/pkg@v1/sub/f && chmod -R a-w ~/gomod && chmod 000 ~/locked'
out=$(cd "$ws" && "$CORDON" rm rohome 2>&1)
is "cordon rm of a sandbox whose home holds read-only directories" "$out" "rohome"
ok "... removes its state directory" test ! -e "$root/rohome"
is "... and keeps only its logs and lock file under .logs" \
    "$(ls -A "$root/.logs/rohome" 2>/dev/null | grep -v -e '^audit' -e '^network' -e '^lock$' | wc -l)" 0
out=$(cd "$ws" && "$CORDON" ls)
unlike "... and cordon ls no longer lists it" "$out" "rohome"
cordon_run "$ws" --name rohome -- true
is "... and the name starts again" "$rc" 0
(cd "$ws" && "$CORDON" rm rohome >/dev/null 2>&1)

# --- ownership ---
(cd "$ws" && exec "$CORDON" run --name owned -- sleep 5) &
pid=$!
cleanup_pids+=("$pid")
for _ in $(seq 100); do grep -q '"status":"running"' "$root/owned/lock" 2>/dev/null && break; sleep 0.05; done
cordon_run "$ws" --name owned -- touch should-not-exist
is "case 44: a second session on the same name is refused (125)" "$rc" 125
like "... with \"another process owns this session\"" "$out" "another process owns this session"
ok "... and nothing ran" test ! -e "$ws/should-not-exist"
out=$(cd "$ws" && "$CORDON" ls)
like "cordon ls shows the running owner" "$out" "owned +running +ns +$pid "
out=$(cd "$ws" && "$CORDON" rm owned 2>&1)
like "cordon rm refuses a sandbox another process owns" "$out" "another process owns this session"
kill "$pid"; wait "$pid" 2>/dev/null
cordon_run "$ws" --name owned -- true
is "the name is free once the owner is gone" "$rc" 0
out=$(cd "$ws" && "$CORDON" rm owned kept)
is "cordon rm removes stopped sandboxes" "$out" "owned
kept"
ok "... and their state" test ! -e "$root/owned" -a ! -e "$root/kept"

# --- MCP: second session refused, kill -9 leaves nothing ---
out=$(py "
import sys, time
from mcp_client import Mcp, text_of
a = Mcp('$CORDON', '$ws', '--name', 'mcpsess')
a.initialize()
print(text_of(a.call(1, 'bash', {'command': 'echo first'})).strip())
b = Mcp('$CORDON', '$ws', '--name', 'mcpsess')
b.initialize()
r = b.call(1, 'bash', {'command': 'echo second'})
print(r['result']['isError'], text_of(r))
b.close()
a.close()
c = Mcp('$CORDON', '$ws', '--name', 'mcpsess')
c.initialize()
print(text_of(c.call(1, 'bash', {'command': 'echo third'})).strip())
c.close()
")
like "mcp: the first session runs" "$out" "^first"
like "mcp: a second session on the name is blocked with the reason" "$out" "True cordon: the bash tool is blocked: sandbox mcpsess: another process owns this session"
like "mcp: it succeeds after the first ends" "$out" "third"

tag="cordon-lifecycle-$$-$RANDOM"
py "
import os, time, signal
from mcp_client import Mcp
m = Mcp('$CORDON', '$ws')
m.initialize()
m.send({'jsonrpc': '2.0', 'id': 5, 'method': 'tools/call', 'params': {'name': 'bash', 'arguments': {'command': 'exec -a $tag sleep 300'}}})
time.sleep(1.0)
os.kill(m.proc.pid, signal.SIGKILL)
m.proc.wait()
"
gone=no
for _ in $(seq 100); do pgrep -f "$tag" >/dev/null || { gone=yes; break; }; sleep 0.05; done
is "kill -9 of the supervisor mid-call leaves no sandbox process within 5 s" "$gone" yes
left=yes
for _ in $(seq 100); do [ -z "$(ls "$root" | grep '^cordon-')" ] && { left=no; break; }; sleep 0.05; done
is "the watchdog removed the session's state" "$left" no

# --- audit log ---
(cd "$ws" && "$CORDON" tool --name audited --teardown stop bash '{"command":"exit 3"}' >/dev/null)
(cd "$ws" && "$CORDON" tool --name audited --teardown stop read '{"path":"nope"}' >/dev/null)
audit=$(cat "$root/audited/audit.jsonl" 2>/dev/null)
like "audit: bash call recorded with its exit code" "$audit" '"exit_code":3.*"outcome":"error".*"target":"sandbox".*"tool":"bash"|"tool":"bash".*"exit_code":3'
like "audit: every call is a JSON line with time and duration" "$audit" '"duration_ms":[0-9.]+.*"time":"20[0-9-]+T'
is "audit: one line per call" "$(wc -l < "$root/audited/audit.jsonl")" 2

# --- gc ---
mk_state() { # name started running?
    mkdir -p "$root/$1"; chmod 700 "$root/$1"
    printf '{"backend":"ns","cordon":1,"name":"%s","pid":1,"started":%s,"status":"stopped","workspace":"/x"}' "$1" "$2" > "$root/$1/lock"
}
old=$(( $(date +%s) - 7200 ))
mk_state stale "$old"
mk_state fresh "$(date +%s)"
mk_state held "$old"
mkdir -p "$root/not-cordon"; echo '{"something":"else"}' > "$root/not-cordon/lock"
flock "$root/held/lock" sleep 30 &
cleanup_pids+=($!)
sleep 0.3
out=$(cd "$ws" && "$CORDON" gc --hours 1)
is "gc reports what it removed" "$out" "removed 1 sandbox(es) older than 1 hours"
ok "gc removed the stale, unlocked sandbox" test ! -e "$root/stale"
ok "gc kept the fresh one" test -e "$root/fresh"
ok "gc kept the one whose lock is held (running)" test -e "$root/held"
ok "gc never touches what cordon did not make" test -e "$root/not-cordon"
tap_done
