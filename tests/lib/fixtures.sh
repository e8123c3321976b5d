# Fixtures the shell tests share (sourced after tap.sh and cordon.sh), so
# that a test script sources them instead of carrying its own copy: the skip
# guard of the vm tests, the planted home and the host listener of the
# security suites, a Docker API look-alike, and the helpers that read and
# type into a tmux pane. Host context; as root or the unprivileged user.

# skip_without_vm: the whole test is skipped (TAP "1..0 # SKIP") without QEMU
# or without an unpacked guest kernel.
skip_without_vm() {
    if ! command -v qemu-system-x86_64 >/dev/null; then
        echo "1..0 # SKIP qemu-system-x86_64 not installed (scripts/bootstrap.sh --test)"
        exit 0
    fi
    if [ ! -e /var/cache/cordon/vm/current/vmlinuz ] && [ -z "${CORDON_VM_DIR:-}" ]; then
        echo "1..0 # SKIP no guest kernel (scripts/vm-kernel.sh)"
        exit 0
    fi
}

# plant_home DIR [SUFFIX]: the host user's secrets a sandbox must not see,
# in DIR (a home): ~/.ssh/id_ed25519, ~/.aws/credentials and
# ~/.docker/config.json holding KEY, AWS and DOCKER followed by SUFFIX.
plant_home() {
    mkdir -p "$1/.ssh" "$1/.aws" "$1/.docker"
    echo "KEY${2:-}" >"$1/.ssh/id_ed25519"
    echo "AWS${2:-}" >"$1/.aws/credentials"
    echo "DOCKER${2:-}" >"$1/.docker/config.json"
}

# start_host_listener FILE: a TCP listener on all of the host's addresses
# that appends "accepted" to FILE for each connection it accepts (a sandbox
# must reach none); its port in $port, the host's first global IPv4 address
# (or a documentation address) in $host_ip. Killed at exit.
start_host_listener() {
    rm -f "$TEST_TMP/port"
    python3 -c '
import socket, sys
s = socket.socket(); s.bind(("0.0.0.0", 0)); s.listen(8)
print(s.getsockname()[1], flush=True)
while True:
    c, _ = s.accept()
    open(sys.argv[1], "a").write("accepted\n")
    c.close()
' "$1" >"$TEST_TMP/port" 2>/dev/null &
    cleanup_pids+=("$!")
    disown $!
    for _ in $(seq 50); do [ -s "$TEST_TMP/port" ] && break; sleep 0.1; done
    port=$(cat "$TEST_TMP/port")
    host_ip=$(ip -4 -o addr show scope global 2>/dev/null | awk '{sub("/.*", "", $4); print $4; exit}')
    host_ip=${host_ip:-192.0.2.1}
}

# A Unix socket that answers every request as the Docker API does (a
# version header and 200 OK): python3 "$FAKE_DOCKER_API" SOCKET [MODE],
# MODE (octal) chmod'ed onto the socket. A file, so that a sandbox can start
# it inside too.
FAKE_DOCKER_API="$CORDON_SRC/tests/lib/fake-docker-api.py"

# tmux pane helpers: TM_SOCK is the server's socket, TM_TARGET the session.
tm() { tmux -S "$TM_SOCK" -f /dev/null "$@"; }
# screen: what the pane shows.
screen() { tm capture-pane -p -J -t "$TM_TARGET" 2>/dev/null; }
# wait_screen REGEX SECONDS: true once the pane shows REGEX.
wait_screen() {
    local deadline=$((SECONDS + $2))
    while [ "$SECONDS" -lt "$deadline" ]; do
        [[ "$(screen)" =~ $1 ]] && return 0
        sleep 0.2
    done
    return 1
}
# type_line TEXT: types TEXT and Enter.
type_line() { tm send-keys -t "$TM_TARGET" -l "$1" && tm send-keys -t "$TM_TARGET" Enter; }
# shell_do N CMD: types CMD and waits (30 s) for its end marker, which only
# the command's output shows (the typed line holds the unexpanded $((...))).
shell_do() {
    type_line "$2; echo end-\$((1000+$1))"
    wait_screen $'(^|\n)end-'$((1000 + $1))$'\n' 30
}
# pane_resize COLUMNS ROWS N: resizes the window, gives the change a
# second to travel, and has the shell print its size (shell_do step N).
pane_resize() {
    tm resize-window -t "$TM_TARGET" -x "$1" -y "$2"
    sleep 1
    shell_do "$3" 'stty size'
}
# pane_start_job N: types a foreground job (sleep 100) that first prints
# sleep-N-N, and waits (30 s) until the pane shows that it runs.
pane_start_job() {
    type_line "echo sleep-$1-\$((0+$1)); sleep 100"
    wait_screen $'\nsleep-'"$1-$1"$'(\n|$)' 30 || diag "the job of step $1 did not start"
}
# runner_settings: what write_pane_runner's script printed after cordon's
# exit status (stty -a: the host terminal's settings once cordon ended),
# once the pane shows them (10 s at most).
runner_settings() {
    wait_screen 'lnext' 10
    local settings
    settings=$(screen)
    printf '%s' "${settings#*cordon-exit=}"
}
# write_pane_runner FILE DIR CORDON-ARGS...: the script a pane runs: cordon
# with CORDON-ARGS in DIR, then its exit status and the terminal's settings,
# and the pane stays open to be read.
write_pane_runner() {
    local file=$1 dir=$2
    shift 2
    cat >"$file" <<EOF
cd "$dir" && export PWD="$dir"
"$CORDON" $*
echo "cordon-exit=\$?"
stty -a
exec sleep 600
EOF
}

# private_runtime_dirs: XDG_RUNTIME_DIR (mode 0700, as a login's) and
# XDG_STATE_HOME in TEST_TMP, so that the sessions, locks and audit logs of
# the test are its own.
private_runtime_dirs() {
    export XDG_RUNTIME_DIR="$TEST_TMP/runtime" XDG_STATE_HOME="$TEST_TMP/state"
    mkdir -p "$XDG_RUNTIME_DIR"
    chmod 700 "$XDG_RUNTIME_DIR"
}

# wait_port HOST PORT [NETNS]: true once a TCP connection to HOST:PORT (from
# the network namespace NETNS) succeeds; false after 10 s.
wait_port() {
    local i
    for i in $(seq 100); do
        if ${3:+ip netns exec "$3"} bash -c "exec 3<>/dev/tcp/$1/$2" 2>/dev/null; then return 0; fi
        sleep 0.1
    done
    return 1
}

# proxy_test_env NAME: the setting of a test of cordon's proxy: its own
# HOME, user configuration directory and /etc/cordon (CORDON_ETC_DIR), a
# workspace $ws named NAME, and the paths $hosts (the proxy's hosts file)
# and $audit (the audit log); $PY is the system's python3, $here the
# integration tests' folder (their servers).
proxy_test_env() {
    PY=/usr/bin/python3
    here="$CORDON_SRC/tests/integration"
    export XDG_CONFIG_HOME=$TEST_TMP/xdg HOME=$TEST_TMP/home CORDON_ETC_DIR=$TEST_TMP/etc
    mkdir -p "$XDG_CONFIG_HOME/cordon" "$HOME" "$CORDON_ETC_DIR"
    ws=$(new_ws "$1")
    hosts="$TEST_TMP/hosts"
    audit="$TEST_TMP/audit.jsonl"
}

# netns_pair CLIENT SERVER CLIENT-IF SERVER-IF: two network namespaces
# joined by a veth pair, CLIENT at 198.51.100.1 and SERVER at 198.51.100.2
# (documentation addresses: nothing real answers there), both with
# loopback up; removed at exit with their processes. As root; false when
# they cannot be made.
netns_pair() {
    netns_client=$1 netns_server=$2
    trap 'netns_pair_cleanup; test_cleanup' EXIT
    { ip netns add "$1" && ip netns add "$2" &&
        ip link add "$3" netns "$1" type veth peer name "$4" netns "$2" &&
        ip -n "$1" addr add 198.51.100.1/24 dev "$3" && ip -n "$2" addr add 198.51.100.2/24 dev "$4" &&
        ip -n "$1" link set "$3" up && ip -n "$2" link set "$4" up &&
        ip -n "$1" link set lo up && ip -n "$2" link set lo up; } 2>/dev/null
}
netns_pair_cleanup() {
    ip netns pids "$netns_server" 2>/dev/null | xargs -r kill -9
    ip netns pids "$netns_client" 2>/dev/null | xargs -r kill -9
    ip netns del "$netns_client" 2>/dev/null
    ip netns del "$netns_server" 2>/dev/null
}

# host_listen PATH KIND: a host listener (tests/security/sockets-helper.py,
# KIND stream or dgram) on the unix socket PATH whose sentinel file,
# $sentinels/<basename>, appears when something reaches it; waits until it
# is bound. reached NAME: true when the listener NAME was reached.
host_listen() {
    local path=$1 kind=$2 sentinel="$sentinels/$(basename "$1")"
    rm -f "$sentinel"
    python3 -u "$CORDON_SRC/tests/security/sockets-helper.py" listen "$path" "$sentinel" "$kind" \
        >"$sentinel.ready" 2>&1 &
    cleanup_pids+=($!)
    for _ in $(seq 100); do
        grep -q ready "$sentinel.ready" 2>/dev/null && return 0
        sleep 0.05
    done
    diag "listener on $path did not start: $(cat "$sentinel.ready")"
    return 1
}
reached() { test -e "$sentinels/$1"; }

# start_private_dockerd: a dockerd of the test's own (socket, data-root and
# exec-root in $hd = TEST_TMP/dockerd, no iptables, no bridge), stopped and
# its mounts removed at exit (stop_dockerd); DOCKER_HOST points the test's
# docker commands at it. False when it does not answer within 30 s (its
# log is $hd/log). As root.
start_private_dockerd() {
    hd="$TEST_TMP/dockerd"
    mkdir -p "$hd"
    dockerd --iptables=false --bridge=none -H "unix://$hd/sock" --data-root "$hd/data" \
        --exec-root "$hd/exec" --pidfile "$hd/pid" >"$hd/log" 2>&1 &
    dockerd_pid=$!
    trap stop_dockerd EXIT
    export DOCKER_HOST="unix://$hd/sock"
    for _ in $(seq 1 100); do
        docker info --format '{{.ID}}' >/dev/null 2>&1 && break
        sleep 0.3
    done
    docker info --format '{{.ID}}' >/dev/null 2>&1
}
stop_dockerd() {
    kill "$dockerd_pid" 2>/dev/null
    for _ in $(seq 1 50); do kill -0 "$dockerd_pid" 2>/dev/null || break; sleep 0.2; done
    kill -9 "$dockerd_pid" 2>/dev/null
    umount -R "$hd/exec" "$hd/data" 2>/dev/null
    test_cleanup
}

# start_tagged_sleep TAG: `cordon run` of a sleep named TAG in $ws, in the
# background ($pid is cordon's); returns once TAG runs (pgrep finds it).
start_tagged_sleep() {
    (cd "$ws" && exec "$CORDON" run -- bash -c "exec -a $1 sleep 300") &
    pid=$!
    for _ in $(seq 100); do pgrep -f "$1" >/dev/null && break; sleep 0.05; done
}

# start_until_ready OUT SCRIPT: `cordon run` of bash -c SCRIPT in $ws, in
# the background with its output in OUT ($pid is cordon's, killed at exit);
# returns once the output shows "ready" (5 s at most).
start_until_ready() {
    (cd "$ws" && exec "$CORDON" run -- bash -c "$2") >"$1" 2>&1 &
    pid=$!
    cleanup_pids+=("$pid")
    for _ in $(seq 100); do grep -q ready "$1" 2>/dev/null && break; sleep 0.05; done
}

# MCP over a fifo, for a `cordon mcp` started in the background with its
# stdin from a fifo the test holds open on fd 7: mcp_send LINE writes one
# message; mcp_hello COMMAND OUT initializes the session and has bash run
# COMMAND (request 2), waiting until its answer is in the server's output OUT.
mcp_send() { printf '%s\n' "$1" >&7; }
mcp_hello() {
    mcp_send '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}'
    mcp_send '{"jsonrpc":"2.0","method":"notifications/initialized"}'
    mcp_send '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"bash","arguments":{"command":"'"$1"'"}}}'
    for _ in $(seq 100); do grep -q '"id":2' "$2" 2>/dev/null && break; sleep 0.1; done
}
