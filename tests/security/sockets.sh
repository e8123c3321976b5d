#!/usr/bin/env bash
# Security case 63 (issue 14, vector 3): a host service's unix socket that
# lies in the workspace (at start, or bound later, in a sub-directory, through
# a symlink, a hard link, stream or datagram) cannot be reached from the
# sandbox, while the sandbox's own sockets work and a socket the user names
# in sockets.allow connects (docs/sockets.md). Each attack is followed by what
# the host user would see: the listener's sentinel file, tmux's window.
. "$CORDON_SRC/tests/lib/tap.sh"
. "$CORDON_SRC/tests/lib/cordon.sh"
. "$CORDON_SRC/tests/lib/fixtures.sh"

helper="$CORDON_SRC/tests/security/sockets-helper.py"
ws=$(new_ws ws)
outside=$(new_ws outside)
sentinels=$(new_ws sentinels)
cp "$helper" "$ws/h.py"

# --- present at start ---
host_listen "$ws/host.sock" stream
mkdir -p "$ws/sub/deeper"
host_listen "$ws/sub/deeper/deep.sock" stream
host_listen "$ws/dgram.sock" dgram
host_listen "$outside/outside.sock" stream
ln -s "$outside/outside.sock" "$ws/to-outside.sock"
ln -s host.sock "$ws/relative-link.sock"
if ln "$outside/outside.sock" "$ws/hardlink.sock" 2>/dev/null; then have_hardlink=1; else have_hardlink=0; fi

sh_in "$ws" 'for t in "host.sock stream" "sub/deeper/deep.sock stream" "'"$ws"'/host.sock stream" \
    "relative-link.sock stream" "to-outside.sock stream" "hardlink.sock stream" "host.sock procfd" \
    "dgram.sock sendto" "dgram.sock dgram-connect" "dgram.sock sendmsg"; do
    set -- $t; echo "$1 $2: $(python3 h.py try $1 $2)"; done'
like "case 63: host stream socket in the workspace: EACCES" "$out" "host.sock stream: EACCES"
like "case 63: host socket in a sub-directory: EACCES" "$out" "sub/deeper/deep.sock stream: EACCES"
like "case 63: host socket by absolute path: EACCES" "$out" "$ws/host.sock stream: EACCES"
like "case 63: a relative symlink to a host socket: EACCES" "$out" "relative-link.sock stream: EACCES"
like "case 63: a host socket through /proc/self/fd/N of an O_PATH fd: EACCES" "$out" "host.sock procfd: EACCES"
like "case 63: a symlink to a host socket outside: not reached" "$out" "to-outside.sock stream: (ENOENT|EACCES|ECONNREFUSED)"
if [ "$have_hardlink" = 1 ]; then
    like "case 63: a hard link of a host socket outside: EACCES" "$out" "hardlink.sock stream: EACCES"
else
    skip "case 63: a hard link of a host socket outside" "the file system refused the link"
fi
like "case 63: host datagram socket, sendto: EACCES" "$out" "dgram.sock sendto: EACCES"
like "case 63: host datagram socket, connect: EACCES" "$out" "dgram.sock dgram-connect: EACCES"
like "case 63: host datagram socket, sendmsg with an address: EACCES" "$out" "dgram.sock sendmsg: EACCES"
like "case 63: cordon says why it refused" "$out" "cordon: warning: sandbox process [0-9]+: connection to the unix socket $ws/host.sock refused \(EACCES\): no socket of the sandbox is bound to it"
ok "case 63: no host listener was reached" eval '! reached host.sock && ! reached deep.sock && ! reached dgram.sock && ! reached outside.sock'

# The path in cordon's warning is the sandbox's choice: its control bytes
# reach the user's terminal escaped.
esc=$'esc\e]0;owned\a.sock'
host_listen "$ws/$esc" stream
cordon_run "$ws" -- python3 h.py try "$esc" stream
like "case 63: a socket named with control bytes: EACCES" "$out" "EACCES$"
like "case 63: cordon's warning shows its control bytes escaped" "$out" 'esc\\x1b\]0;owned\\x07\.sock refused'
unlike "case 63: no raw escape byte reaches the terminal" "$out" $'\e'

# --- appearing after the sandbox started ---
late_out="$TEST_TMP/late.out"
(cd "$ws" && "$CORDON" run -- bash -c 'for i in $(seq 200); do [ -S later.sock ] && break; sleep 0.05; done
    echo "seen: $(test -S later.sock && echo yes)"; echo "later: $(python3 h.py try later.sock stream)"' \
    > "$late_out" 2>&1 </dev/null) &
late_pid=$!
sleep 1
host_listen "$ws/later.sock" stream
wait "$late_pid"
like "case 63: a socket bound after the start is seen inside" "$(cat "$late_out")" "seen: yes"
like "case 63: a host socket bound after the start: EACCES" "$(cat "$late_out")" "later: EACCES"
ok "case 63: the later listener was not reached" eval '! reached later.sock'

# --- cordon mcp: one long-lived sandbox, a socket bound between two calls ---
mcp_out=$(cd "$ws" && python3 - "$CORDON" "$helper" "$ws" "$sentinels" <<'EOF' 2>&1
import json, os, subprocess, sys, time
cordon, helper, ws, sentinels = sys.argv[1:5]
p = subprocess.Popen([cordon, "mcp"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
def call(i, method, params):
    p.stdin.write(json.dumps({"jsonrpc": "2.0", "id": i, "method": method, "params": params}) + "\n")
    p.stdin.flush()
    while True:
        m = json.loads(p.stdout.readline())
        if m.get("id") == i:
            return m
call(1, "initialize", {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}})
p.stdin.write(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}) + "\n")
p.stdin.flush()
r = call(2, "tools/call", {"name": "bash", "arguments": {"command": "echo first"}})
print("first:", r["result"]["content"][0]["text"].strip())
listener = subprocess.Popen([sys.executable, helper, "listen", ws + "/mcp-late.sock", sentinels + "/mcp-late.sock", "stream"], stdout=subprocess.PIPE, text=True)
listener.stdout.readline()
r = call(3, "tools/call", {"name": "bash", "arguments": {"command": "python3 h.py try mcp-late.sock stream"}})
print("mcp-late:", r["result"]["content"][0]["text"].strip())
listener.kill()
p.stdin.close()
p.wait(timeout=30)
EOF
)
like "case 63: cordon mcp: the session's sandbox works" "$mcp_out" "first: first"
like "case 63: cordon mcp: a host socket bound between two calls: EACCES" "$mcp_out" "mcp-late: EACCES"
ok "case 63: cordon mcp: the listener was not reached" eval '! reached mcp-late.sock'

# --- the sandbox's own sockets ---
cordon_run "$ws" -- python3 h.py own "$ws/own"
for check in "own stream, absolute path" "own stream, relative path" "own stream, ../ path" \
    "own stream, through a symlink" "own stream, through /proc/self/fd/N" "own datagram, sendto" "own datagram, sendmsg with an address" \
    "own datagram, connect and send" "own socketpair, SCM_RIGHTS" "own abstract socket" \
    "loopback TCP" "loopback TCP, non-blocking connect" "sendmsg under a fast signal timer, each message once" \
    "forged SCM_CREDENTIALS of pid 1 refused" \
    "a waiting connect does not block the others" "the waiting connect completes once accepted"; do
    like "case 63: sandbox's own: $check" "$out" "$check: ok"
done
rm -rf "$ws/own"

# rtnetlink requests go through the guard too (sendmsg): the kernel checks
# the sender's capabilities, and the guard holds none in the sandbox's user
# namespace (as the owner of that namespace it would hold them all).
sh_in "$ws" 'ip link set lo down 2>&1; echo "down=$?"; ip addr add 10.9.9.9/32 dev lo 2>&1; echo "add=$?"; ip -o link show lo'
like "case 63: rtnetlink through the guard: link down refused" "$out" "Operation not permitted.*down=2"
like "case 63: rtnetlink through the guard: address add refused" "$out" "add=2"
like "case 63: the sandbox's loopback is still up" "$out" "<LOOPBACK,UP"

# --- tmux: the host's server, the sandbox's own ---
if command -v tmux >/dev/null; then
    tmux -S "$ws/tmux.sock" new-session -d -s host 'sleep 600'
    sh_in "$ws" "tmux -S tmux.sock send-keys -t host 'touch $sentinels/tmux-ran' Enter 2>&1; echo rc=\$?"
    like "case 63: host tmux server in the workspace: the client is refused" "$out" "rc=1"
    sleep 0.5
    ok "case 63: host tmux: no command ran on the host" test ! -e "$sentinels/tmux-ran"
    tmux -S "$ws/tmux.sock" kill-server 2>/dev/null
    sh_in "$ws" 'tmux -S /tmp/own.tmux new-session -d -s mine "sleep 30" && tmux -S /tmp/own.tmux ls; tmux -S own.tmux new-session -d -s ws "sleep 30" && tmux -S own.tmux send-keys -t ws "" && echo ws-ok'
    like "case 63: the sandbox's own tmux server works (/tmp)" "$out" "mine: 1 windows"
    like "case 63: the sandbox's own tmux server works (workspace)" "$out" "ws-ok"
    rm -f "$ws/own.tmux"
else
    skip "case 63: host tmux server in the workspace" "tmux is not installed"
fi

# --- sockets.allow ---
mkdir -p "$ws/run"
host_listen "$ws/run/app.sock" stream
cordon_run "$ws" --set 'sockets.allow=["run/app.sock"]' -- python3 h.py try run/app.sock stream
is "case 63: sockets.allow: the named host socket connects" "$out" "OK"
for _ in $(seq 40); do reached app.sock && break; sleep 0.05; done
ok "case 63: sockets.allow: the host listener was reached" reached app.sock
cordon_run "$ws" --set 'sockets.allow=["run/app.sock"]' -- python3 h.py try host.sock stream
like "case 63: sockets.allow: other host sockets stay refused" "$out" "EACCES"
ln -sf run/app.sock "$ws/run-link"
cordon_run "$ws" --set 'sockets.allow=["run-link"]' -- python3 h.py try run/app.sock stream
like "case 63: sockets.allow: an entry that is a symlink allows nothing" "$out" "EACCES"
echo 'sockets.allow = ["host.sock"]' > "$ws/.cordon.toml"
out=$(cd "$ws" && "$CORDON" config check "$ws/.cordon.toml" 2>&1)
like "case 63: sockets.allow is refused in the workspace file" "$out" "sockets.allow is refused in the workspace file"
rm -f "$ws/.cordon.toml"

# (docker: tests/security/docker-sockets.sh, root only, a private dockerd)

# --- vm backend: the guest's kernel reaches the workspace over 9p, where
# a host socket file is only a file: nothing answers it ---
if command -v qemu-system-x86_64 >/dev/null &&
    { [ -e /var/cache/cordon/vm/current/vmlinuz ] || [ -n "${CORDON_VM_DIR:-}" ]; }; then
    vm_out="$TEST_TMP/vm.out"
    (cd "$ws" && timeout 600 "$CORDON" run --backend vm -- bash -c '
        echo "vm-seen: $(test -S host.sock && echo socket)"
        for t in "host.sock stream" "sub/deeper/deep.sock stream" "dgram.sock sendto" "dgram.sock sendmsg"; do
            set -- $t; echo "vm $1 $2: $(python3 h.py try $1 $2)"; done
        for i in $(seq 600); do [ -S vm-later.sock ] && break; sleep 0.1; done
        echo "vm later: $(python3 h.py try vm-later.sock stream)"
        python3 h.py own /tmp/own | sed "s/^/vm /"' > "$vm_out" 2>&1 </dev/null) &
    vm_pid=$!
    for _ in $(seq 600); do grep -q "vm dgram.sock sendmsg" "$vm_out" 2>/dev/null && break; sleep 0.1; done
    host_listen "$ws/vm-later.sock" stream
    wait "$vm_pid"
    out=$(cat "$vm_out")
    like "case 63: vm: the host socket is visible in the guest" "$out" "vm-seen: socket"
    like "case 63: vm: host stream socket: refused by the guest kernel" "$out" "vm host.sock stream: ECONNREFUSED"
    like "case 63: vm: host socket in a sub-directory: refused" "$out" "vm sub/deeper/deep.sock stream: ECONNREFUSED"
    like "case 63: vm: host datagram socket, sendto: refused" "$out" "vm dgram.sock sendto: ECONNREFUSED"
    like "case 63: vm: host datagram socket, sendmsg: refused" "$out" "vm dgram.sock sendmsg: ECONNREFUSED"
    like "case 63: vm: a host socket bound after the boot: refused" "$out" "vm later: ECONNREFUSED"
    like "case 63: vm: the guest's own sockets work" "$out" "vm own stream, relative path: ok"
    like "case 63: vm: the guest's own datagram sockets work" "$out" "vm own datagram, sendto: ok"
    ok "case 63: vm: no host listener was reached" eval '! reached host.sock && ! reached deep.sock && ! reached dgram.sock && ! reached vm-later.sock'
else
    skip "case 63: vm backend" "qemu-system-x86_64 or the guest kernel is missing (scripts/vm-kernel.sh)"
fi

tap_done
