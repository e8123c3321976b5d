#!/usr/bin/env bash
# `cordon verify NAME` (issue 7): the audit of a running session's own
# sandbox, asked of the supervisor that owns it (`cordon mcp`, `cordon
# shell`, `cordon run`) over the session's control socket. Asserts that it
# is THAT sandbox (its configuration, a change made inside it by the agent
# or the shell, its pids), the ownership row (the supervisor's pid), the
# socket's mode and SO_PEERCRED check, the bounds on what a client sends,
# that a shell keeps working after an audit, and the documented errors for
# a stopped, a stale, an unknown session and one whose command exited
# during the audit.
. "$CORDON_SRC/tests/lib/tap.sh"
. "$CORDON_SRC/tests/lib/cordon.sh"
. "$CORDON_SRC/tests/lib/background.sh"
. "$CORDON_SRC/tests/lib/fixtures.sh"

PY=/usr/bin/python3
# A state root of this test's own (and one another user can be let into).
export XDG_RUNTIME_DIR="$TEST_TMP/run"
mkdir -m 755 "$XDG_RUNTIME_DIR"
state="$XDG_RUNTIME_DIR/cordon"
ws=$(new_ws ws)
echo hello >"$ws/file"
# A fake Docker daemon the agent can start inside its sandbox.
cp "$FAKE_DOCKER_API" "$ws/dock.py"
# Unix sockets that take connections and never answer: the probe waits its
# full connect timeout (1 s) on each, so a shell polling for it finds it
# running whatever the machine's speed.
cat >"$ws/silent.py" <<'EOF'
import os, socket, sys, time
os.makedirs(sys.argv[1], exist_ok=True)
held = []
for i in range(int(sys.argv[2])):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind(os.path.join(sys.argv[1], "s%d" % i))
    s.listen(64)
    held.append(s)
print("silent-up", flush=True)
time.sleep(3600)
EOF

# hold_start NAME [MCP ARGS...]: `cordon mcp --name NAME ARGS` in $ws with a
# real client keeping the session alive (tests/lib/mcp_hold.py); the
# supervisor's pid in $mcp_pid. HOLD_CORDON overrides the binary.
hold_start() {
    local name=$1
    shift
    rm -f "$TEST_TMP/hold.in" "$TEST_TMP/hold.out"
    mkfifo "$TEST_TMP/hold.in" "$TEST_TMP/hold.out"
    (cd "$ws" && exec $PY "$CORDON_SRC/tests/lib/mcp_hold.py" "${HOLD_CORDON:-$CORDON}" \
        --name "$name" "$@" <"$TEST_TMP/hold.in" >"$TEST_TMP/hold.out" 2>"$TEST_TMP/hold.err") &
    hold_pid=$!
    cleanup_pids+=("$hold_pid")
    exec {hold_w}>"$TEST_TMP/hold.in"
    exec {hold_r}<"$TEST_TMP/hold.out"
    hold_line=
    read -r -t 60 hold_line <&"$hold_r"
    mcp_pid=$(awk '$1 == "READY" { print $2 }' <<<"$hold_line")
}
# hold_call CMD: the bash tool in the held session; "RESULT secs json" in $hold_line.
hold_call() {
    echo "call $1" >&"$hold_w"
    hold_line=
    read -r -t 60 hold_line <&"$hold_r"
}
hold_stop() {
    echo quit >&"$hold_w"
    hold_line=
    read -r -t 30 hold_line <&"$hold_r"
    exec {hold_w}>&- {hold_r}<&-
    wait "$hold_pid"
}
# verify_name NAME [ARGS...]: `cordon verify NAME` from another directory
# (it must not matter where): stdout in $out, stderr in $err, status in $rc.
verify_name() {
    out=$(cd / && "$CORDON" verify "$@" 2>"$TEST_TMP/verify.err" </dev/null)
    rc=$?
    err=$(cat "$TEST_TMP/verify.err")
}
row() { grep -E "^[A-Z]{4} +$1 " <<<"$out"; }
# ctl NAME REQUEST [AS_USER]: one raw request on NAME's control socket; prints
# the answer, or the connect error's name.
ctl() {
    local prefix=()
    [ -n "${3:-}" ] && prefix=(runuser -u "$3" --)
    (cd / && "${prefix[@]}" $PY - "$state/$1/control" "$2") <<'EOF'
import socket, sys
s = socket.socket(socket.AF_UNIX)
try:
    s.connect(sys.argv[1])
except OSError as e:
    print(type(e).__name__); sys.exit(0)
try:
    s.sendall(sys.argv[2].encode())
except OSError:
    pass  # refused before the request went out: the answer is still there
s.settimeout(30)
data = b""
while True:
    d = s.recv(65536)
    if not d: break
    data += d
print(data.decode().strip())
EOF
}

# --- a running session, audited by name ---
name="vrun-$$"
hold_start "$name" --env-mode passthrough --readonly
like "mcp --name: the session is up (a real client, one bash call)" "$hold_line" "^READY [0-9]+ alive"
is "control socket: a socket, mode 0600" "$(stat -c '%a %F' "$state/$name/control" 2>&1)" "600 socket"
is "control socket: in the 0700 state directory" "$(stat -c '%a' "$state/$name")" "700"

verify_name "$name"
is "verify NAME: exit 0 when nothing fails" "$rc" 0
like "verify NAME: the same table, headed by the session's name" "$out" "^cordon verify: sandbox $name"
for check in env-scrub host-files docker-socket seccomp no-new-privs capabilities namespaces \
    processes network-egress policy-dir; do
    like "verify NAME: $check passes" "$(row "$check")" "^PASS"
done
like "verify NAME: ownership: held by the supervisor's pid, seen by both sides" "$(row ownership)" \
    "^PASS .*busy \(held\); the record names pid $mcp_pid, this supervisor is $mcp_pid; seen by \`cordon verify $name\`: the lock is held, its record names pid $mcp_pid, the control socket's peer \(SO_PEERCRED\) is pid $mcp_pid$"
like "verify NAME: the control socket is not in the sandbox's view" "$(row docker-socket)" \
    ", 0 sockets found$"
like "verify NAME: that session's configuration (env.mode = passthrough: WARN)" \
    "$(row env-forwarding)" "^WARN .*env.mode = passthrough"
like "verify NAME: that session's configuration (read-only workspace)" "$(row workspace)" \
    "^PASS .*read-only mode\): creating a file -> EROFS"
like "verify NAME: the verdict" "$out" "result: PASS \(0 failed, 1 warning\)"

verify_name "$name" --json
printf '%s' "$out" >"$TEST_TMP/report.json"
json_ok=$(
    $PY - "$TEST_TMP/report.json" "$state/$name/lock" "$name" "$mcp_pid" 2>&1 <<'EOF'
import json, sys
sys.argv.pop(0)
r = json.load(open(sys.argv[0]))
lock = json.load(open(sys.argv[1]))
c = {x["check"]: x["status"] for x in r["checks"]}
assert r["sandbox"] == sys.argv[2], r["sandbox"]
assert r["result"] == "PASS" and r["failed"] == 0, r["result"]
assert len(r["checks"]) == 18, len(r["checks"])
assert {x["check"]: x["status"] for x in r["checks"]}["git-metadata"] == "PASS"
assert c["ownership"] == "PASS" and c["env-forwarding"] == "WARN", c
assert lock["pid"] == int(sys.argv[3]), lock
# The agent audited from the host is the sandbox this session's lock records.
assert r["host"]["agent_pid"] == lock["sandbox_pid"], (r["host"]["agent_pid"], lock)
print("ok")
EOF
)
is "verify NAME --json: 18 checks, the report of the sandbox its lock records" "$json_ok" ok

# The agent starts a Docker API look-alike inside its own sandbox: THAT
# sandbox's audit FAILs, a fresh sandbox of the same workspace does not.
hold_call "python3 $ws/dock.py /tmp/d.sock </dev/null >/dev/null 2>&1 & for i in \$(seq 50); do [ -S /tmp/d.sock ] && break; sleep 0.1; done; ls /tmp"
like "inside the session: the agent planted /tmp/d.sock" "$hold_line" "^RESULT .*d.sock"
verify_name "$name"
is "verify NAME after the change inside: exit 1" "$rc" 1
like "verify NAME: the change made inside that sandbox is seen" "$(row docker-socket)" \
    "^FAIL .*, 1 sockets found; reachable: /tmp/d.sock \(answers the Docker API\)$"
like "verify NAME: a FAIL tells the user what to do" "$out" \
    "Treat sandbox $name as compromised.*cordon rm $name"
out=$(cd "$ws" && "$CORDON" verify 2>/dev/null </dev/null)
like "fresh verify of the same workspace: its own /tmp, no such socket" "$(row docker-socket)" "^PASS"
like "fresh verify: its own configuration (writable, strict)" "$(row workspace)" "writable mode"
like "fresh verify: env-forwarding passes" "$(row env-forwarding)" "^PASS .*env.mode = strict"

# The agent's own calls are served while a verify is in flight.
(cd / && "$CORDON" verify "$name" >"$TEST_TMP/bg.out" 2>&1 </dev/null; echo "rc=$?" >>"$TEST_TMP/bg.out") &
bg=$!
hold_call "echo concurrent"
like "a tool call while verify NAME runs: answered" "$hold_line" '^RESULT [0-9.]+ "concurrent\\n"$'
wait "$bg"
like "... and the verify completes (it FAILs: the planted socket)" "$(cat "$TEST_TMP/bg.out")" \
    "result: FAIL \(1 failed.*rc=1$"

# --- the control socket's bounds ---
like "control: status answers with the supervisor's pid" "$(ctl "$name" '{"op":"status"}
')" "^\{\"ok\": ?true, ?\"status\": ?\{.*\"pid\": ?$mcp_pid"
like "control: an unknown op is refused" "$(ctl "$name" '{"op":"rm"}
')" "\"ok\": ?false, ?\"error\": ?\"unknown op \\\\\"rm\\\\\""
like "control: a request that is not JSON is refused" "$(ctl "$name" 'hello
')" "\"ok\": ?false.*bad request"
like "control: a request over 4096 bytes is refused" "$(ctl "$name" "$(head -c 5000 /dev/zero | tr '\0' x)")" \
    "\"ok\": ?false.*longer than 4096 bytes"
# A client that connects and says nothing: dropped after the timeout, and
# the MCP loop serves the agent meanwhile.
$PY - "$state/$name/control" >"$TEST_TMP/silent.out" <<'EOF' &
import socket, sys, time
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
t = time.time()
s.settimeout(30)
data = b""
while True:
    d = s.recv(4096)
    if not d: break
    data += d
print("%.1f %s" % (time.time() - t, data.decode().strip()))
EOF
silent=$!
sleep 0.5
hold_call "echo still-serving"
like "control: a silent client does not stall the agent's tool calls (answered well before its 5 s timeout)" "$hold_line" \
    '^RESULT [0-3]\.[0-9]+ "still-serving\\n"$'
wait "$silent"
like "control: the silent client is dropped after about 5 s, told why" "$(cat "$TEST_TMP/silent.out")" \
    "^[4-7]\.[0-9] .*timeout: no request"

# --- another uid ---
if is_root; then
    user=cordon-test
    id "$user" >/dev/null 2>&1 || useradd --create-home --shell /bin/bash "$user" >/dev/null 2>&1
    if id "$user" >/dev/null 2>&1; then
        is "another uid: the socket's directory mode denies it" \
            "$(ctl "$name" '{"op":"verify"}
' "$user")" PermissionError
        # Widen every mode on the way: SO_PEERCRED still refuses.
        chmod 711 "$state" "$state/$name"
        chmod 666 "$state/$name/control"
        like "another uid: SO_PEERCRED refuses it when the modes would not" \
            "$(ctl "$name" '{"op":"verify"}
' "$user")" "\"ok\": ?false, ?\"error\": ?\"permission denied: uid $(id -u "$user") is not the session owner \(uid 0\) or root\""
        chmod 700 "$state" "$state/$name"
        chmod 600 "$state/$name/control"
        like "another uid: the refusal is logged by the supervisor" "$(cat "$TEST_TMP/hold.err")" \
            "control socket: refused pid [0-9]+: permission denied"
    else
        skip "another uid: refused" "cannot create user $user"
        skip "another uid: SO_PEERCRED" "cannot create user $user"
        skip "another uid: logged" "cannot create user $user"
    fi
else
    skip "another uid: the socket's mode denies it" "needs root to act as another user"
    skip "another uid: SO_PEERCRED refuses it" "needs root to act as another user"
    skip "another uid: the refusal is logged" "needs root to act as another user"
fi

# --- the session ends: a stopped (kept) session ---
hold_stop
is "mcp: the client closes, the supervisor exits 0" "$hold_line" "DONE 0"
is "teardown: the control socket is removed" "$(ls -A "$state/$name" | grep -c '^control$')" 0
verify_name "$name"
is "verify NAME of a stopped session: exit 2" "$rc" 2
like "verify NAME of a stopped session: says so and how to start it" "$err" \
    "sandbox $name is not running \(stopped\).*\`cordon shell $name\` starts it"
is "verify NAME of a stopped session: nothing on stdout" "$out" ""

verify_name "no-such-session-$$"
is "verify NAME of an unknown session: exit 125" "$rc" 125
like "verify NAME of an unknown session: says so" "$err" "no cordon sandbox named no-such-session-$$"
verify_name "$name" --readonly
is "verify NAME with configuration flags: refused (125)" "$rc" 125

# A stale socket (planted) in a stopped session: still "not running", and
# garbage collection removes it (the sweep at the end of a session, at most
# once a minute, does the same as `cordon gc`).
$PY -c 'import socket, sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])' "$state/$name/control"
verify_name "$name"
is "verify NAME with a stale control socket: not running (2)" "$rc" 2
(cd "$ws" && "$CORDON" gc --hours 1000 >/dev/null 2>&1)
is "gc: a stale control socket of a stopped session is removed" \
    "$(ls -A "$state/$name" | grep -c '^control$')" 0
$PY -c 'import socket, sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])' "$state/$name/control"
cordon_run "$ws" --name "$name" -- true
is "a session that takes the name over removes a stale control socket (cordon run)" \
    "$rc $(ls -A "$state/$name" | grep -c '^control$')" "0 0"

# The supervisor is killed: the watchdog removes its socket with the rest.
name2="vkill-$$"
hold_start "$name2"
like "second session up" "$hold_line" "^READY"
kill -9 "$mcp_pid"
for _ in $(seq 100); do
    verify_name "$name2"
    [ "$rc" = 2 ] && break
    sleep 0.1
done
is "supervisor SIGKILLed: verify NAME says not running" "$rc" 2
is "supervisor SIGKILLed: the watchdog removed the control socket" \
    "$(ls -A "$state/$name2" 2>/dev/null | grep -c '^control$')" 0
hold_stop >/dev/null 2>&1

# --- `cordon shell --name` and `cordon run --name`: probed through their init ---
# wait_verify NAME [TRIES]: until the session answers on its control socket
# (out, err and rc: its last try's, empty when it never answered).
wait_verify() {
    out= err= rc=
    for _ in $(seq "${2:-150}"); do
        [ -S "$state/$1/control" ] && verify_name "$1" && [ "$rc" != 125 ] && [ "$rc" != 2 ] && return
        sleep 0.1
    done
}
# shell_send LINE, shell_wait TEXT: a command line into the held shell, and
# waiting for what it prints.
shell_send() { printf '%s\n' "$1" >&"$sh_w"; }
# sh_out: where the held shell's stdout goes; shell_wait tries $2 times.
sh_out="$TEST_TMP/sh.out"
shell_wait() {
    for _ in $(seq "${2:-100}"); do
        grep -q -- "$1" "$sh_out" 2>/dev/null && return 0
        sleep 0.1
    done
    return 1
}
name5="vshell-$$"
rm -f "$TEST_TMP/sh.in"
mkfifo "$TEST_TMP/sh.in"
# stdin from a fifo kept open: the shell reads commands and stays alive.
(cd "$ws" && exec "$CORDON" shell --readonly --name "$name5" <"$TEST_TMP/sh.in" \
    >"$TEST_TMP/sh.out" 2>"$TEST_TMP/sh.err") &
shell_pid=$!
cleanup_pids+=("$shell_pid")
exec {sh_w}>"$TEST_TMP/sh.in"
shell_send "echo shell-up"
shell_wait shell-up
is "shell --name: the shell runs commands" "$(cat "$TEST_TMP/sh.out")" "shell-up"
wait_verify "$name5"
is "shell: control socket: a socket, mode 0600" "$(stat -c '%a %F' "$state/$name5/control" 2>&1)" \
    "600 socket"
is "verify NAME of a \`cordon shell\` session: exit 0" "$rc" 0
like "verify NAME (shell): the table, headed by the session's name" "$out" "^cordon verify: sandbox $name5"
for check in env-scrub env-forwarding host-files docker-socket seccomp no-new-privs capabilities \
    namespaces processes network-egress policy-dir landlock; do
    like "verify NAME (shell): $check passes" "$(row "$check")" "^PASS"
done
like "verify NAME (shell): probed by a child of the sandbox's init, PID 1 is cordon-init" \
    "$(row processes)" "PID 1 is cordon-init"
like "verify NAME (shell): the probe holds nothing of init's or the supervisor's (only its pipes)" \
    "$(row processes)" "the probe's open descriptors: 0 pipe, 1 pipe, 2 pipe$"
like "verify NAME (shell): env-scrub: the probe's environment read from the host, clean" \
    "$(row env-scrub)" "agent /proc/[0-9]+/environ from the host: clean; inside \(the probe, a child of the sandbox's init\): none present"
like "verify NAME (shell): ownership: held by the supervisor's pid ($shell_pid), seen by both sides" \
    "$(row ownership)" \
    "^PASS .*busy \(held\); the record names pid $shell_pid, this supervisor is $shell_pid; seen by \`cordon verify $name5\`: the lock is held, its record names pid $shell_pid, the control socket's peer \(SO_PEERCRED\) is pid $shell_pid$"
like "verify NAME (shell): THAT session's configuration (--readonly)" "$(row workspace)" \
    "^PASS .*read-only mode\): creating a file -> EROFS"
like "control (shell): status names the supervisor and the kind" "$(ctl "$name5" '{"op":"status"}
')" "\"kind\": ?\"shell\".*\"pid\": ?$shell_pid"

verify_name "$name5" --json
printf '%s' "$out" >"$TEST_TMP/report5.json"
json_ok=$(
    $PY - "$TEST_TMP/report5.json" "$state/$name5/lock" "$name5" 2>&1 <<'EOF'
import json, sys
sys.argv.pop(0)
r = json.load(open(sys.argv[0]))
lock = json.load(open(sys.argv[1]))
c = {x["check"]: x["status"] for x in r["checks"]}
assert r["sandbox"] == sys.argv[2], r["sandbox"]
assert r["result"] == "PASS" and r["failed"] == 0, (r["result"], c, r.get("probe_error"))
assert len(r["checks"]) == 18, len(r["checks"])
assert {x["check"]: x["status"] for x in r["checks"]}["git-metadata"] == "PASS"
# The process read from the host is the probe, not the sandbox's init, and
# it is in the sandbox's namespaces.
assert r["host"]["agent_pid"] != lock["sandbox_pid"], (r["host"], lock)
assert r["host"]["agent_ns"]["pid"] != r["host"]["self_ns"]["pid"], r["host"]
print("ok")
EOF
)
is "verify NAME --json (shell): 18 checks, the host read the probe inside the sandbox" "$json_ok" ok

# The shell starts a Docker API look-alike in its own /tmp: THAT sandbox's
# audit FAILs.
shell_send "python3 $ws/dock.py /tmp/d.sock </dev/null >/dev/null 2>&1 & for i in \$(seq 50); do [ -S /tmp/d.sock ] && break; sleep 0.1; done; echo planted-\$(ls /tmp/d.sock)"
shell_wait planted-
like "inside the shell: /tmp/d.sock planted" "$(cat "$TEST_TMP/sh.out")" "planted-/tmp/d.sock"
verify_name "$name5"
is "verify NAME (shell) after the change inside: exit 1" "$rc" 1
like "verify NAME (shell): the change made inside that sandbox is seen" "$(row docker-socket)" \
    "^FAIL .*, 1 sockets found; reachable: /tmp/d.sock \(answers the Docker API\)$"
like "verify NAME (shell): a FAIL tells the user what to do" "$out" \
    "Treat sandbox $name5 as compromised.*cordon rm $name5"
# The shell keeps working after the audits, with its exit statuses.
shell_send "echo after-verify; (exit 3); echo status=\$?"
shell_wait status=
like "shell after verify: a command typed afterwards runs, its status unchanged" \
    "$(cat "$TEST_TMP/sh.out")" "after-verify
status=3$"
shell_send "exit 7"
exec {sh_w}>&-
wait "$shell_pid"
is "shell after verify: its exit status is the shell's (7)" "$?" 7
is "shell: teardown removes the control socket" "$(ls -A "$state/$name5" 2>/dev/null | grep -c '^control$')" 0
is "shell: nothing on stderr" "$(cat "$TEST_TMP/sh.err")" ""

name6="vrun6-$$"
(cd "$ws" && exec "$CORDON" run --name "$name6" -- sleep 60 </dev/null >/dev/null 2>"$TEST_TMP/run6.err") &
run_pid=$!
cleanup_pids+=("$run_pid")
wait_verify "$name6"
is "verify NAME of a \`cordon run\` session: exit 0" "$rc" 0
like "verify NAME (run): ownership names the supervisor's pid ($run_pid)" "$(row ownership)" \
    "^PASS .*the record names pid $run_pid, this supervisor is $run_pid; .*the control socket's peer \(SO_PEERCRED\) is pid $run_pid$"
like "verify NAME (run): THAT session's configuration (writable workspace)" "$(row workspace)" \
    "^PASS .*writable mode\): creating a file -> ok"
like "verify NAME (run): not the shell's sandbox (no /tmp/d.sock there)" "$(row docker-socket)" \
    "^PASS .*, 0 sockets found$"
sandbox_pid=$($PY -c 'import json, sys; print(json.load(open(sys.argv[1]))["sandbox_pid"])' "$state/$name6/lock")
# wait_in_flight NAME: until its supervisor has a verify in flight (the
# request is with init).
wait_in_flight() {
    for _ in $(seq 200); do
        ctl "$1" '{"op":"status"}
' | grep -Eq '"verifying": ?true' && return
        sleep 0.05
    done
}
# A probe that hangs is killed after 30 s, and init goes on: init is held
# while the request is queued, then the supervisor is held so the probe
# never gets its stdin (the supervisor lets it go only after reading its
# /proc).
kill -STOP "$sandbox_pid"
(cd / && exec "$CORDON" verify "$name6" >"$TEST_TMP/v7.out" 2>"$TEST_TMP/v7.err" </dev/null) &
v7=$!
wait_in_flight "$name6"
kill -STOP "$run_pid"
kill -CONT "$sandbox_pid"
# The vm section's held shell (checked there) boots meanwhile: the hung
# probe leaves the machine idle for 30 s (there, on a busy machine:
# tests/lib/background.sh).
vsh_start() {
    namevsh="vmsh-$$"
    rm -f "$TEST_TMP/vsh.in"
    mkfifo "$TEST_TMP/vsh.in"
    (cd "$ws" && exec "$CORDON" shell --backend vm --readonly --name "$namevsh" \
        <"$TEST_TMP/vsh.in" >"$TEST_TMP/vsh.out" 2>"$TEST_TMP/vsh.err") &
    vsh_pid=$!
    cleanup_pids+=("$vsh_pid")
    exec {vsh_w}>"$TEST_TMP/vsh.in"
}
vm_ok= vsh_early=
if command -v qemu-system-x86_64 >/dev/null &&
    { [ -e /var/cache/cordon/vm/current/vmlinuz ] || [ -n "${CORDON_VM_DIR:-}" ]; }; then
    vm_ok=1
    if ! bg_serial; then
        vsh_early=1
        vsh_start
    fi
fi
# Until init has killed the probe (its 30 s), seen as the probe process
# among init's children appearing and then gone; 33 s when it is never seen.
t_hold=$(date +%s)
probe_seen=
while [ $(($(date +%s) - t_hold)) -lt 40 ]; do
    if pgrep -P "$sandbox_pid" -f 'cordon-agent probe' >/dev/null; then
        probe_seen=1
    elif [ -n "$probe_seen" ] || [ $(($(date +%s) - t_hold)) -ge 33 ]; then
        break
    fi
    sleep 0.1
done
kill -CONT "$run_pid"
wait "$v7"
is "a probe that hangs: verify NAME exits 1 (its rows FAIL)" "$?" 1
like "a probe that hangs: killed after 30 s, said so" "$(cat "$TEST_TMP/v7.out")" \
    "probe: the probe in the sandbox was killed after 30 s \(timeout\)"
verify_name "$name6"
is "after the hung probe: the session is still audited (exit 0)" "$rc" 0
is "after the hung probe: the command still runs" "$(pgrep -P "$sandbox_pid" -x sleep | wc -l)" 1
# The command exits while a probe is in flight: init is held (SIGSTOP from
# the host) so the request waits, the command is killed, init goes on.
cmd_pid=$(pgrep -P "$sandbox_pid" | head -1)
kill -STOP "$sandbox_pid"
(cd / && exec "$CORDON" verify "$name6" >"$TEST_TMP/v6.out" 2>"$TEST_TMP/v6.err" </dev/null) &
v6=$!
wait_in_flight "$name6"
verify_name "$name6"
is "a second verify NAME while one is in flight: refused (125)" "$rc" 125
like "a second verify NAME while one is in flight: says so" "$err" \
    "the supervisor answered: a verify of this session is already running"
kill -KILL "$cmd_pid"
# The command is dead (a zombie waiting for init) before init goes on, so
# init sees its death together with the request, whatever the load.
for _ in $(seq 200); do
    [ "$(awk '{print $3}' "/proc/$cmd_pid/stat" 2>/dev/null)" = Z ] && break
    sleep 0.05
done
kill -CONT "$sandbox_pid"
wait "$v6"
is "verify NAME while the command exits: exit 125" "$?" 125
like "verify NAME while the command exits: a clear error" "$(cat "$TEST_TMP/v6.err")" \
    "sandbox $name6: the supervisor answered: sandbox $name6: its command exited \(status 137\) before the audit ended: nothing was audited"
is "verify NAME while the command exits: no report" "$(cat "$TEST_TMP/v6.out")" ""
wait "$run_pid"
is "run: the exit status is the command's (137), unchanged by the probe" "$?" 137
verify_name "$name6"
is "verify NAME after the command exited: not running (2)" "$rc" 2

# --- a build without the seccomp filter: verify NAME FAILs too ---
if [ -n "${CORDON_TEST_UNPRIVILEGED:-}" ] || [ ! -f "$CORDON_SRC/meson.build" ]; then
    skip "unsafe_no_seccomp: verify NAME FAILs seccomp" "built and run by the privileged run (needs the source tree)"
else
    unsafe="$CORDON_BUILD/unsafe-no-seccomp"
    if { [ -f "$unsafe/build.ninja" ] ||
        meson setup "$unsafe" "$CORDON_SRC" -Dunsafe_no_seccomp=true -Db_sanitize=none \
            --buildtype=debug >/dev/null 2>&1; } &&
        nice ninja -C "$unsafe" cordon cordon-agent >/dev/null 2>&1; then
        name4="vunsafe-$$"
        HOLD_CORDON="$unsafe/cordon" hold_start "$name4"
        verify_name "$name4"
        is "unsafe_no_seccomp: verify NAME exits 1" "$rc" 1
        like "unsafe_no_seccomp: verify NAME: the seccomp row FAILs" "$(row seccomp)" \
            "^FAIL .*Seccomp 0, 0 filter"
        hold_stop
    else
        fail "unsafe_no_seccomp: the build failed" "meson setup/ninja in $unsafe"
    fi
fi

# --- a cordon mcp session on the vm backend: the same socket, the guest's rows ---
namevm="vmv-$$"
if [ -n "$vm_ok" ]; then
    hold_start "$namevm" --backend vm
    like "vm: the held session is up" "$hold_line" "^READY"
    verify_name "$namevm"
    is "vm: verify NAME of a running vm session exits 0" "$rc" 0
    like "vm: the namespaces row checks the kernel boundary" "$(row namespaces)" \
        "^PASS .*kernel boundary \(microVM\)"
    like "vm: ownership names that session's supervisor from both sides" "$(row ownership)" \
        "record names pid $mcp_pid.*control socket's peer \(SO_PEERCRED\) is pid $mcp_pid"
    hold_stop
    # --- `cordon shell` and `cordon run` on the vm backend: the probe run
    # by the guest's init, the host-side evidence QEMU's ---
    # A shell held on a fifo, as above: THAT guest's audit, a change made
    # inside it, commands typed afterwards.
    # (Started during the ns backend's hung probe above, or here.)
    [ -n "$vsh_early" ] || vsh_start
    sh_w=$vsh_w
    sh_out="$TEST_TMP/vsh.out"
    shell_send "echo vshell-up"
    shell_wait vshell-up 600
    is "vm shell --name: the shell runs commands" "$(cat "$sh_out")" "vshell-up"
    wait_verify "$namevsh"
    is "vm shell: control socket: a socket, mode 0600" \
        "$(stat -c '%a %F' "$state/$namevsh/control" 2>&1)" "600 socket"
    is "vm: verify NAME of a \`cordon shell\` session: exit 0" "$rc" 0
    like "vm shell: the table, headed by the session's name" "$out" "^cordon verify: sandbox $namevsh"
    for check in env-scrub env-forwarding host-files docker-socket seccomp no-new-privs \
        capabilities namespaces processes network-egress policy-dir; do
        like "vm shell: $check passes" "$(row "$check")" "^PASS"
    done
    like "vm shell: the kernel boundary, not namespace ids" "$(row namespaces)" \
        "^PASS +namespaces +kernel boundary \(microVM\): boot_id inside"
    like "vm shell: seccomp: QEMU's filter from the host, the guest's inside" "$(row seccomp)" \
        "^PASS +seccomp +QEMU \(pid [0-9]+, from the host; its own -sandbox filter\).*inside the guest: Seccomp 2"
    like "vm shell: the probe is a child of the guest's init, PID 1 is cordon-init" \
        "$(row processes)" "all the guest kernel's own .*PID 1 is cordon-init"
    like "vm shell: env-scrub: QEMU's environment from the host, the probe's inside" \
        "$(row env-scrub)" \
        "agent /proc/[0-9]+/environ from the host: clean; inside \(the probe, a child of the guest's init\): none present"
    like "vm shell: ownership: held by the supervisor's pid ($vsh_pid), seen by both sides" \
        "$(row ownership)" \
        "^PASS .*the record names pid $vsh_pid, this supervisor is $vsh_pid; .*the control socket's peer \(SO_PEERCRED\) is pid $vsh_pid$"
    like "vm shell: THAT session's configuration (--readonly)" "$(row workspace)" \
        "^PASS .*read-only mode\): creating a file -> EROFS"
    like "vm shell: control status: the kind, QEMU as the sandbox's pid, the supervisor" \
        "$(ctl "$namevsh" '{"op":"status"}
')" "\"kind\": ?\"shell\", ?\"sandbox_pid\": ?$(
        $PY -c 'import json, sys; print(json.load(open(sys.argv[1]))["sandbox_pid"])' \
            "$state/$namevsh/lock"
    ).*\"pid\": ?$vsh_pid"

    verify_name "$namevsh" --json
    printf '%s' "$out" >"$TEST_TMP/report-vsh.json"
    json_ok=$(
        $PY - "$TEST_TMP/report-vsh.json" "$state/$namevsh/lock" "$namevsh" 2>&1 <<'EOF'
import json, sys
sys.argv.pop(0)
r = json.load(open(sys.argv[0]))
lock = json.load(open(sys.argv[1]))
c = {x["check"]: x["status"] for x in r["checks"]}
assert r["sandbox"] == sys.argv[2], r["sandbox"]
assert r["result"] == "PASS" and r["failed"] == 0, (r["result"], c, r.get("probe_error"))
assert len(r["checks"]) == 18, len(r["checks"])
assert {x["check"]: x["status"] for x in r["checks"]}["git-metadata"] == "PASS"
# The host-side evidence is THIS session's QEMU (the pid its lock records).
assert r["host"]["agent_pid"] == lock["sandbox_pid"], (r["host"]["agent_pid"], lock)
assert r["host"]["agent_comm"].startswith("qemu"), r["host"]["agent_comm"]
print("ok")
EOF
    )
    is "vm shell: verify NAME --json: 18 checks, QEMU of the pid the lock records" "$json_ok" ok

    # A probe that hangs (stopped from inside by the shell, as a sandboxed
    # process may): the guest's init kills it after 30 s and goes on.
    # Silent sockets in the guest's /tmp hold the probe for seconds, so the
    # shell's polling finds it however fast or loaded the machine is.
    shell_send "python3 $ws/silent.py /tmp/hold 8 </dev/null >/tmp/silent.out 2>&1 & for i in \$(seq 100); do grep -q silent-up /tmp/silent.out 2>/dev/null && break; sleep 0.1; done; echo silent-\$(ls /tmp/hold | wc -l)"
    shell_wait silent- 300
    like "vm shell: silent sockets planted to hold the probe" "$(cat "$sh_out")" "silent-8$"
    shell_send "for i in \$(seq 3000); do pkill -STOP -f '^cordon-agent probe' && { echo probe-stopped-\$i; break; }; sleep 0.01; done; echo probe-loop-done"
    (cd / && exec "$CORDON" verify "$namevsh" >"$TEST_TMP/vt.out" 2>"$TEST_TMP/vt.err" </dev/null) &
    vt=$!
    shell_wait probe-loop-done 600
    like "vm shell: the shell stopped the probe" "$(cat "$sh_out")" "probe-stopped-[0-9]+"
    # The vm run section's guest (checked there) boots while the probe is
    # held (there, on a busy machine): its command outlives everything until
    # the section kills it.
    vrun_start() {
        namevrun="vmrun-$$"
        (cd "$ws" && exec "$CORDON" run --backend vm --name "$namevrun" -- sleep 600 \
            </dev/null >/dev/null 2>"$TEST_TMP/vrun.err") &
        vrun_pid=$!
        cleanup_pids+=("$vrun_pid")
    }
    vrun_early=
    if ! bg_serial; then
        vrun_early=1
        vrun_start
    fi
    wait "$vt"
    is "vm shell: a probe that hangs: verify NAME exits 1 (its rows FAIL)" "$?" 1
    like "vm shell: a probe that hangs: killed after 30 s by the guest's init, said so" \
        "$(cat "$TEST_TMP/vt.out")" "probe: the probe in the sandbox was killed after 30 s \(timeout\)"
    shell_send "pkill -f 'silent.py /tmp/hold'; rm -rf /tmp/hold; echo unheld-\$(ls /tmp/hold 2>&1 | wc -l)"
    shell_wait unheld- 300
    verify_name "$namevsh"
    is "vm shell: after the hung probe: the session is still audited (exit 0)" "$rc" 0

    # A Docker API look-alike started by the shell in the guest's /tmp.
    shell_send "python3 $ws/dock.py /tmp/d.sock </dev/null >/dev/null 2>&1 & for i in \$(seq 100); do [ -S /tmp/d.sock ] && break; sleep 0.1; done; echo planted-\$(ls /tmp/d.sock)"
    shell_wait planted- 300
    like "vm shell: /tmp/d.sock planted in the guest" "$(cat "$sh_out")" "planted-/tmp/d.sock"
    verify_name "$namevsh"
    is "vm shell: verify NAME after the change inside: exit 1" "$rc" 1
    like "vm shell: the change made inside that guest is seen" "$(row docker-socket)" \
        "^FAIL .*reachable: /tmp/d.sock \(answers the Docker API\)$"
    like "vm shell: a FAIL tells the user what to do" "$out" \
        "Treat sandbox $namevsh as compromised.*cordon rm $namevsh"

    if is_root && id cordon-test >/dev/null 2>&1; then
        is "vm shell: another uid: the socket's directory mode denies it" \
            "$(ctl "$namevsh" '{"op":"verify"}
' cordon-test)" PermissionError
        chmod 711 "$state" "$state/$namevsh"
        chmod 666 "$state/$namevsh/control"
        like "vm shell: another uid: SO_PEERCRED refuses it when the modes would not" \
            "$(ctl "$namevsh" '{"op":"verify"}
' cordon-test)" "\"ok\": ?false, ?\"error\": ?\"permission denied: uid $(id -u cordon-test) is not the session owner \(uid 0\) or root\""
        chmod 700 "$state" "$state/$namevsh"
        chmod 600 "$state/$namevsh/control"
    else
        skip "vm shell: another uid: the socket's mode denies it" "needs root and the test user"
        skip "vm shell: another uid: SO_PEERCRED refuses it" "needs root and the test user"
    fi

    shell_send "echo after-verify; (exit 3); echo status=\$?"
    shell_wait status= 300
    like "vm shell after verify: a command typed afterwards runs, its status unchanged" \
        "$(cat "$sh_out")" "after-verify
status=3$"
    shell_send "exit 7"
    exec {sh_w}>&-
    wait "$vsh_pid"
    is "vm shell after verify: its exit status is the shell's (7)" "$?" 7
    is "vm shell: teardown removes the control socket" \
        "$(ls -A "$state/$namevsh" 2>/dev/null | grep -c '^control$')" 0
    verify_name "$namevsh"
    is "vm shell: verify NAME after it ended: not running (2)" "$rc" 2

    # `cordon run --backend vm`: its own guest (no /tmp/d.sock there); an
    # audit in flight when the command exits.
    # (Started during the vm shell's hung probe above, or here.)
    [ -n "$vrun_early" ] || vrun_start
    wait_verify "$namevrun" 600
    is "vm: verify NAME of a \`cordon run\` session: exit 0" "$rc" 0
    like "vm run: ownership names the supervisor's pid ($vrun_pid)" "$(row ownership)" \
        "^PASS .*the record names pid $vrun_pid, this supervisor is $vrun_pid; .*the control socket's peer \(SO_PEERCRED\) is pid $vrun_pid$"
    like "vm run: THAT session's configuration (writable workspace)" "$(row workspace)" \
        "^PASS .*writable mode\): creating a file -> ok"
    like "vm run: not the shell's guest (no Docker look-alike here)" "$(row docker-socket)" "^PASS"
    like "vm run: control status says run" "$(ctl "$namevrun" '{"op":"status"}
')" "\"kind\": ?\"run\""
    # QEMU is held (SIGSTOP from the host) while the request waits in its
    # channel; the command gets SIGTERM through cordon the same way; both
    # reach the guest together, and the command ends long before a probe
    # could.
    qemu_pid=$($PY -c 'import json, sys; print(json.load(open(sys.argv[1]))["sandbox_pid"])' \
        "$state/$namevrun/lock")
    kill -STOP "$qemu_pid"
    (cd / && exec "$CORDON" verify "$namevrun" >"$TEST_TMP/vv.out" 2>"$TEST_TMP/vv.err" </dev/null) &
    vv=$!
    wait_in_flight "$namevrun"
    verify_name "$namevrun"
    is "vm run: a second verify NAME while one is in flight: refused (125)" "$rc" 125
    like "vm run: a second verify NAME while one is in flight: says so" "$err" \
        "the supervisor answered: a verify of this session is already running"
    kill -TERM "$vrun_pid"
    sleep 0.5
    kill -CONT "$qemu_pid"
    wait "$vv"
    is "vm run: verify NAME while the command exits: exit 125" "$?" 125
    like "vm run: verify NAME while the command exits: the same error as on ns" \
        "$(cat "$TEST_TMP/vv.err")" \
        "sandbox $namevrun: the supervisor answered: sandbox $namevrun: its command exited \(status 143\) before the audit ended: nothing was audited"
    is "vm run: verify NAME while the command exits: no report" "$(cat "$TEST_TMP/vv.out")" ""
    wait "$vrun_pid"
    is "vm run: the exit status is the command's (143), unchanged by the probe" "$?" 143
    verify_name "$namevrun"
    is "vm run: verify NAME after the command exited: not running (2)" "$rc" 2
else
    for d in "the held session is up" "verify NAME of a running vm session exits 0" \
        "the namespaces row checks the kernel boundary" "ownership names that session's supervisor"; do
        skip "vm: $d" "no QEMU or guest kernel (scripts/bootstrap.sh --test)"
    done
    skip "vm: cordon shell and cordon run sessions" "no QEMU or guest kernel (scripts/bootstrap.sh --test)"
fi

for n in "$name" "$name2" "$name5" "$name6" "${name4:-}" "$namevm" "${namevsh:-}" "${namevrun:-}"; do
    [ -n "$n" ] && "$CORDON" rm "$n" >/dev/null 2>&1
done
tap_done
