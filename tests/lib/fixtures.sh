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
