#!/usr/bin/env bash
# Integration: the docker backend (backend = "docker") against a private
# dockerd this test starts (tests/lib/docker-backend.sh: own socket,
# data-root and exec-root in TEST_TMP, no iptables, no bridge), with an image
# it imports from busybox-static and bash-static, and a static cordon-agent
# (the release build of this tree).
# Root only: a user who may talk to a dockerd is root-equivalent, and
# starting one needs root. The unprivileged user is exercised from here,
# through a socket chowned to it. Needs docker.io, busybox-static and
# bash-static (scripts/bootstrap.sh --test).
. "$CORDON_SRC/tests/lib/tap.sh"
. "$CORDON_SRC/tests/lib/cordon.sh"
. "$CORDON_SRC/tests/lib/docker-backend.sh"

# The settings every run below uses, and a HOME of its own with a secret.
export HOME="$TEST_TMP/home"
mkdir -p "$HOME" && echo "home-secret" >"$HOME/.secret-token"
export XDG_CONFIG_HOME="$TEST_TMP/xdg"
ws=$(new_ws dws)
git -C "$ws" init -q
echo "hello" >"$ws/hello.txt"
printf '[limits]\npids = 500\n' >"$ws/.cordon.toml"

# --- cordon run ---
t0=$(date +%s%N)
out=$(cd "$ws" && PWD="$ws" CORDON_DOCKER_SENTINEL=leaked "$CORDON" run "${D[@]}" -- bash -c '
    echo "host=$(hostname)"
    read -r -d "" pid1 </proc/1/cmdline; echo "pid1=$pid1"
    echo "uid=$(id -u)"
    cat hello.txt
    echo w > written.txt && echo "write=ok"
    echo x > /etc/cordon-x 2>&1; echo x > /usr/cordon-x 2>&1; echo x > /cordon-x 2>&1
    echo x > .git/hooks/pre-commit 2>&1
    echo x >> .git/config 2>&1
    echo x >> .cordon.toml 2>&1
    mv .git .git-moved 2>&1
    ls -a "$HOME"; echo "home-listed"
    [ -e /etc/shadow ] && echo "shadow=present"
    [ -S /var/run/docker.sock ] || [ -S /run/docker.sock ] && echo "docker-sock=present"
    echo "sentinel=${CORDON_DOCKER_SENTINEL-unset}"
    echo tmp > /tmp/t && echo "tmp=ok"
    exit 7' 2>&1 </dev/null)
rc=$?
diag "cordon run on docker: $((($(date +%s%N) - t0) / 1000000)) ms (noisy: 2 shared cores)"
is "run: the command's exit status propagates" "$rc" 7
unlike "run: another hostname inside" "$out" "host=$(hostname)$"
like "run: PID 1 is the agent" "$out" "pid1=/run/cordon/agent"
like "run: the user's uid inside" "$out" "uid=0"
like "run: the workspace is visible" "$out" "hello"
like "run: a workspace write works" "$out" "write=ok"
is "run: the write lands on the host" "$(cat "$ws/written.txt" 2>/dev/null)" "w"
is "run: owned by the user" "$(stat -c %u "$ws/written.txt" 2>/dev/null)" "0"
like "run: /etc is read-only" "$out" "/etc/cordon-x: Read-only file system"
like "run: /usr is read-only" "$out" "/usr/cordon-x: Read-only file system"
like "run: / is read-only" "$out" "/cordon-x: Read-only file system"
like "run: .git/hooks is read-only" "$out" ".git/hooks/pre-commit: Read-only file system"
like "run: .git/config is read-only" "$out" ".git/config: Read-only file system"
like "run: .cordon.toml is read-only" "$out" ".cordon.toml: Read-only file system"
like "run: .git cannot be moved away from its protection" "$out" "can.t rename '.git': Device or resource busy"
[ -d "$ws/.git" ] && [ ! -e "$ws/.git/hooks/pre-commit" ] && pass "run: nothing written into .git" ||
    fail "run: nothing written into .git"
unlike "run: the host's home is not there" "$out" ".secret-token"
like "run: HOME is an empty scratch" "$out" "home-listed"
unlike "run: no /etc/shadow of the host" "$out" "shadow=present"
unlike "run: no docker socket inside" "$out" "docker-sock=present"
like "run: the environment sentinel is absent" "$out" "sentinel=unset"
like "run: /tmp is writable" "$out" "tmp=ok"
is "run: the container is gone afterwards" "$(ncontainers)" 0

# The release build as users get it: the static agent found next to cordon.
out=$(cd "$ws" && PWD="$ws" env -u CORDON_TEST_AGENT "$TEST_TMP/bin/cordon" run "${D[@]}" -- bash -c 'cat hello.txt' 2>&1 </dev/null)
rc=$?
is "release build: run exits 0" "$rc" 0
like "release build: the workspace is visible" "$out" "hello"

# Exit statuses: a signal, and stdin relayed.
cordon_run "$ws" "${D[@]}" -- bash -c 'kill -9 $$'
is "run: a command killed by SIGKILL gives 137" "$rc" 137
out=$(cd "$ws" && echo "from-stdin" | PWD="$ws" "$CORDON" run "${D[@]}" -- bash -c 'read -r l; echo "got=$l"' 2>&1)
like "run: stdin reaches the command" "$out" "got=from-stdin"

# A protected directory that is also on the way to another (.git/hooks,
# then .git): read-only wins.
cordon_run "$ws" "${D[@]}" --set 'protected_paths=[".git"]' -- bash -c 'echo x > .git/cordon-x'
like "protected .git after .git/hooks: .git is read-only" "$out" ".git/cordon-x: Read-only file system"

# A signal sent to cordon reaches the command (through the docker CLI).
(cd "$ws" && PWD="$ws" exec "$CORDON" run "${D[@]}" -- bash -c 'trap "echo got-term; exit 9" TERM; sleep 60 & wait' </dev/null >"$TEST_TMP/term.out" 2>&1) &
sup=$!
disown $sup
for _ in $(seq 1 50); do [ "$(ncontainers)" -ge 1 ] && break; sleep 0.2; done
sleep 0.5
kill -TERM "$sup"
for _ in $(seq 1 50); do kill -0 "$sup" 2>/dev/null || break; sleep 0.2; done
like "run: SIGTERM to cordon reaches the command" "$(cat "$TEST_TMP/term.out")" "got-term"
is "run: the container is gone after SIGTERM" "$(ncontainers)" 0

# Limits from [limits].
out=$(cd "$ws" && PWD="$ws" "$CORDON" run "${D[@]}" --set limits.open_files=77 --set limits.memory_mib=300 \
    --set limits.pids=33 -- bash -c 'echo "nofile=$(ulimit -n)"
    for f in /sys/fs/cgroup/memory.max /sys/fs/cgroup/memory/memory.limit_in_bytes; do [ -r $f ] && echo "mem=$(<$f)"; done
    for f in /sys/fs/cgroup/pids.max /sys/fs/cgroup/pids/pids.max; do [ -r $f ] && echo "pids=$(<$f)"; done' 2>&1 </dev/null)
like "limits: open_files" "$out" "nofile=77"
like "limits: memory_mib" "$out" "mem=314572800"
like "limits: pids" "$out" "pids=33"

# workspace_readonly, and [[mounts]] from the user's file.
mkdir -p "$TEST_TMP/share-ro" "$TEST_TMP/share-rw" "$XDG_CONFIG_HOME/cordon"
echo "shared" >"$TEST_TMP/share-ro/s.txt"
printf '[[mounts]]\nhost_path = "%s"\nguest_path = "/data/ro"\n[[mounts]]\nhost_path = "%s"\nguest_path = "/data/rw"\nreadonly = false\n' \
    "$TEST_TMP/share-ro" "$TEST_TMP/share-rw" >"$XDG_CONFIG_HOME/cordon/config.toml"
out=$(cd "$ws" && PWD="$ws" "$CORDON" run "${D[@]}" --readonly -- bash -c '
    echo x > ro-ws.txt 2>&1; cat /data/ro/s.txt; echo x > /data/ro/n 2>&1; echo rw > /data/rw/n && echo "rw=ok"
    echo h > "$HOME/h" && echo "home=ok"' 2>&1 </dev/null)
rm -f "$XDG_CONFIG_HOME/cordon/config.toml"
like "readonly: a workspace write fails with EROFS" "$out" "ro-ws.txt: Read-only file system"
like "mounts: a read-only mount is visible" "$out" "shared"
like "mounts: ... and read-only" "$out" "/data/ro/n: Read-only file system"
like "mounts: a writable mount takes writes" "$out" "rw=ok"
is "mounts: ... which land on the host" "$(cat "$TEST_TMP/share-rw/n" 2>/dev/null)" "rw"
like "readonly: HOME is writable scratch" "$out" "home=ok"

# A linked worktree: its git directories are there, their hooks and config
# read-only.
git -C "$ws" -c user.email=t@t -c user.name=t commit -q --allow-empty -m init
wt="$TEST_TMP/wt"
git -C "$ws" worktree add -q "$wt" 2>/dev/null
out=$(cd "$wt" && PWD="$wt" "$CORDON" run "${D[@]}" -- bash -c "
    echo x > '$ws/.git/hooks/post-checkout' 2>&1
    echo x >> '$ws/.git/config' 2>&1
    echo x >> '$ws/.git/worktrees/wt/config.worktree' 2>&1
    echo x >> .git 2>&1
    touch '$ws/.git/objects/cordon-probe' && echo objects=ok" 2>&1 </dev/null)
like "worktree: the common hooks are read-only" "$out" "post-checkout: Read-only file system"
like "worktree: the common config is read-only" "$out" "$ws/.git/config: Read-only file system"
like "worktree: the .git file is read-only" "$out" "\.git: Read-only file system"
like "worktree: the object store is writable" "$out" "objects=ok"
rm -f "$ws/.git/objects/cordon-probe"

# No network: a loopback server on the host, and the host's own address.
port=$((20000 + RANDOM % 20000))
socat TCP-LISTEN:$port,bind=127.0.0.1,reuseaddr,fork SYSTEM:'echo reached' &
cleanup_pids+=($!)
disown $!
sleep 0.3
hostip=$(ip -4 -o addr show scope global 2>/dev/null | awk '{print $4}' | cut -d/ -f1 | head -1)
out=$(cd "$ws" && PWD="$ws" "$CORDON" run "${D[@]}" -- bash -c "
    (exec 3<>/dev/tcp/127.0.0.1/$port && echo lo=connected) 2>/dev/null || echo lo=blocked
    (exec 3<>/dev/tcp/${hostip:-10.0.0.1}/$port && echo host=connected) 2>/dev/null || echo host=blocked
    ls /sys/class/net" 2>&1 </dev/null)
like "network: the host's loopback server is unreachable" "$out" "lo=blocked"
like "network: the host's address is unreachable" "$out" "host=blocked"
is "network: only lo inside" "$(echo "$out" | tail -1)" "lo"

# --- cordon tool: the same answers as the ns backend ---
tool_both() { # NAME ARGS: runs on ns, then on docker (same workspace, reset between)
    local name=$1 args=$2
    printf 'alpha\nbeta\ngamma\n' >"$ws/t.txt"
    rm -f "$ws/new.txt"
    ns_out=$(cd "$ws" && PWD="$ws" "$CORDON" tool "$name" "$args" 2>&1)
    ns_rc=$?
    ns_file=$(cat "$ws/t.txt" "$ws/new.txt" 2>/dev/null)
    printf 'alpha\nbeta\ngamma\n' >"$ws/t.txt"
    rm -f "$ws/new.txt"
    dk_out=$(cd "$ws" && PWD="$ws" "$CORDON" tool "${D[@]}" "$name" "$args" 2>&1)
    dk_rc=$?
    dk_file=$(cat "$ws/t.txt" "$ws/new.txt" 2>/dev/null)
}
for call in 'read {"path":"t.txt"}' 'read {"path":"t.txt","offset":2,"limit":1}' \
    'write {"path":"new.txt","content":"made\n"}' \
    'edit {"path":"t.txt","edits":[{"oldText":"beta","newText":"BETA"}]}' \
    'ls {"path":"."}' 'find {"pattern":"*.txt"}' 'grep {"pattern":"gam","path":"."}' \
    'bash {"command":"echo out; echo err >&2; exit 4"}' 'read {"path":"missing.txt"}'; do
    name=${call%% *}
    tool_both "$name" "${call#* }"
    if [ "$ns_out" = "$dk_out" ] && [ "$ns_rc" = "$dk_rc" ] && [ "$ns_file" = "$dk_file" ]; then
        pass "tool $call: the same result as on ns"
    else
        fail "tool $call: the same result as on ns"
        diag "ns ($ns_rc): $ns_out"
        diag "docker ($dk_rc): $dk_out"
    fi
done
like "tool bash: the output is the command's" "$dk_out" "ENOENT|not found|No such file"
is "tool: no container left" "$(ncontainers)" 0

# --- cordon mcp: the tools in a container ---
out=$(cd "$ws" && (printf '%s\n' \
    '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}' \
    '{"jsonrpc":"2.0","method":"notifications/initialized"}' \
    '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"bash","arguments":{"command":"read -r -d \"\" c </proc/1/cmdline; echo \"mcp-pid1=$c\""}}}'
    sleep 3) | PWD="$ws" timeout 30 "$CORDON" mcp "${D[@]}" 2>&1)
like "mcp: a tool call runs in the container" "$out" 'mcp-pid1=/run/cordon/agent'
like "mcp: routed to the sandbox" "$out" '"cordon/route":"sandbox"'
is "mcp: no container left" "$(ncontainers)" 0

# --- the watchdog: SIGKILL of the supervisor removes the container ---
(cd "$ws" && PWD="$ws" exec "$CORDON" run "${D[@]}" -- bash -c 'sleep 120' </dev/null >/dev/null 2>&1) &
sup=$!
disown $sup
for _ in $(seq 1 50); do [ "$(ncontainers)" -ge 1 ] && break; sleep 0.2; done
is "watchdog: the container runs" "$(ncontainers)" 1
kill -9 "$sup"
gone=no
for _ in $(seq 1 50); do [ "$(ncontainers)" -eq 0 ] && { gone=yes; break; }; sleep 0.2; done
is "watchdog: SIGKILL of cordon removes the container within 10 s" "$gone" yes

# ... and of `cordon mcp` with a call running.
(cd "$ws" && (printf '%s\n' \
    '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}' \
    '{"jsonrpc":"2.0","method":"notifications/initialized"}' \
    '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"bash","arguments":{"command":"sleep 120"}}}'
    sleep 60) | PWD="$ws" exec "$CORDON" mcp "${D[@]}" >/dev/null 2>&1) &
sub=$!
disown $sub
for _ in $(seq 1 50); do [ "$(ncontainers)" -ge 1 ] && break; sleep 0.2; done
is "watchdog (mcp): the container runs" "$(ncontainers)" 1
mcp_pid=$(pgrep -P "$sub" -f "cordon mcp" | head -1)
[ -n "$mcp_pid" ] && kill -9 "$mcp_pid"
gone=no
for _ in $(seq 1 50); do [ "$(ncontainers)" -eq 0 ] && { gone=yes; break; }; sleep 0.2; done
is "watchdog (mcp): SIGKILL of cordon mcp removes the container within 10 s" "$gone" yes
pkill -P "$sub" sleep 2>/dev/null

# --- refusals, each with exit 125 and the reason ---
cordon_run "$ws" --backend docker --set "docker.host=$host_sock" -- true
is "no image: refused (125)" "$rc" 125
like "no image: says how to set it" "$out" 'needs an image: set docker.image'
cordon_run "$ws" --backend docker --set "docker.host=$host_sock" --set docker.image=no-such-image -- true
is "missing image: refused (125)" "$rc" 125
like "missing image: names it" "$out" 'image "no-such-image" is not on the daemon'
out=$(cd "$ws" && PWD="$ws" CORDON_TEST_AGENT="$CORDON_AGENT" "$CORDON" run "${D[@]}" -- true 2>&1 </dev/null)
rc=$?
if file -L "$CORDON_AGENT" | grep -q "dynamically linked"; then
    is "a dynamic agent: refused (125)" "$rc" 125
    like "a dynamic agent: the reason" "$out" "is dynamically linked .* needs a static cordon-agent"
else
    skip "a dynamic agent: refused (125)" "this build's agent is static"
    skip "a dynamic agent: the reason" "this build's agent is static"
fi
docker import --change 'ENV LD_PRELOAD=/x.so' "$TEST_TMP/img.tar" cordon-docker-ldpreload >/dev/null
cordon_run "$ws" --backend docker --set "docker.host=$host_sock" --set docker.image=cordon-docker-ldpreload -- true
is "an image whose ENV sets LD_PRELOAD: refused (125)" "$rc" 125
like "an image whose ENV sets LD_PRELOAD: the reason" "$out" 'sets LD_PRELOAD in its ENV'
# The allowlist works (tests/integration/docker-network.sh); open does not.
cordon_run "$ws" "${D[@]}" --set network.mode=open -- true
is "network open: refused (125)" "$rc" 125
like "network open: the reason" "$out" 'network.mode = "open" is not supported on the docker backend'
cordon_run "$ws" "${D[@]}" --set docker.host=unix:///nonexistent/docker.sock -- true
is "a missing socket: refused (125)" "$rc" 125
like "a missing socket: names it" "$out" "/nonexistent/docker.sock"
python3 -c 'import socket, sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])' "$TEST_TMP/dead.sock"
out=$(cd "$ws" && PWD="$ws" "$CORDON" tool "${D[@]}" --set "docker.host=unix://$TEST_TMP/dead.sock" read '{"path":"hello.txt"}' 2>&1)
rc=$?
is "a daemon that does not answer: cordon tool refused (125)" "$rc" 125
like "a daemon that does not answer: the reason" "$out" "docker: the daemon at unix://$TEST_TMP/dead.sock does not answer: Cannot connect"
cordon_run "$ws" "${D[@]}" --set docker.host=tcp://127.0.0.1:2375 -- true
is "a TCP daemon: refused (125)" "$rc" 125
like "a TCP daemon: unix sockets only" "$out" "unix sockets only"
cordon_run "$ws" "${D[@]}" --pty -- true
is "--pty: refused (125)" "$rc" 125
like "--pty: the reason" "$out" "--pty is not available on the docker backend"
# The workspace file may not pick the daemon.
printf '[docker]\nhost = "unix://%s/sock"\n' "$hd" >"$ws/.cordon.toml"
(cd "$ws" && PWD="$ws" "$CORDON" trust >/dev/null 2>&1)
cordon_run "$ws" --backend docker --set docker.image=cordon-docker-test -- true
is "docker.host in the workspace file: refused (125)" "$rc" 125
like "docker.host in the workspace file: the reason" "$out" "docker.host is refused in the workspace file"
printf '[limits]\npids = 500\n' >"$ws/.cordon.toml"
(cd "$ws" && PWD="$ws" "$CORDON" trust >/dev/null 2>&1)
# A protected path that is a symlink refuses the start.
sws=$(new_ws symws)
mkdir -p "$sws/elsewhere"
ln -s elsewhere "$sws/.vscode"
cordon_run "$sws" "${D[@]}" -- true
is "a symlinked protected path: refused (125)" "$rc" 125
like "a symlinked protected path: the reason" "$out" "protected path .*\.vscode is a symlink"
# A socket owned by someone else.
if id cordon-test >/dev/null 2>&1; then
    chown cordon-test "$hd/sock"
    cordon_run "$ws" "${D[@]}" -- true
    is "a socket owned by another user: refused (125)" "$rc" 125
    like "a socket owned by another user: the reason" "$out" "is owned by uid $(id -u cordon-test), neither root nor you"
    # ... which that user may drive: its uid inside, its files on the host.
    uws=$(mktemp -d /tmp/cordon-dk.XXXXXX)
    cleanup_dirs+=("$uws")
    chown cordon-test "$uws"
    uhome=$(mktemp -d /tmp/cordon-dkh.XXXXXX)
    cleanup_dirs+=("$uhome")
    chown cordon-test "$uhome"
    out=$(cd "$uws" && runuser -u cordon-test -- env -u XDG_CONFIG_HOME PWD="$uws" HOME="$uhome" \
        CORDON_TEST_AGENT="$CORDON_TEST_AGENT" "$CORDON" run "${D[@]}" -- bash -c 'id -u; touch made' 2>&1 </dev/null)
    rc=$?
    is "unprivileged: run exits 0" "$rc" 0
    like "unprivileged: the user's uid inside" "$out" "^$(id -u cordon-test)"
    is "unprivileged: the file is the user's on the host" "$(stat -c %U "$uws/made" 2>/dev/null)" cordon-test
    chown root "$hd/sock"
else
    for d in "a socket owned by another user: refused" "unprivileged: run exits 0"; do
        skip "$d" "no cordon-test user"
    done
fi

# The agent's own confinement refuses a place that holds capabilities
# (here: root on the host, outside any container).
out=$("$CORDON_TEST_AGENT" --confine --writable /tmp -- probe </dev/null 2>&1)
rc=$?
is "agent --confine with capabilities: refused (125)" "$rc" 125
like "agent --confine with capabilities: the reason" "$out" "the sandbox holds capabilities"

# --- cordon verify on docker ---
out=$(cd "$ws" && PWD="$ws" "$CORDON" verify "${D[@]}" 2>&1 </dev/null)
rc=$?
diag "$out"
is "verify: passes on docker" "$rc" 0
unlike "verify: no FAIL row" "$out" "FAIL"
like "verify: the agent seen from the host is the container's PID 1, with both filters" "$out" \
    "PASS  seccomp +agent \(pid [0-9]+, from the host\): Seccomp 2, 2 filter\(s\)"
if "$CORDON" --debug run -- true 2>&1 | grep -q 'landlock: available'; then
    like "verify: Landlock applies in the container" "$out" \
        "PASS  landlock +kernel \(seen in the container\) ABI [0-9]+; .* -> EACCES"
else
    like "verify: Landlock reported absent (this kernel has none)" "$out" "SKIP  landlock"
fi
like "verify: the user namespace is the host's, said so" "$out" "the host's: docker, the user's uid, no capabilities"
is "verify: no container left" "$(ncontainers)" 0
tap_done
