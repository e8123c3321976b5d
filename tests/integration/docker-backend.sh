#!/usr/bin/env bash
# Integration: the docker backend (backend = "docker") against a private
# dockerd this test starts (tests/lib/docker-backend.sh: own socket,
# data-root and exec-root in TEST_TMP, no iptables, no bridge), with an image
# it imports from busybox-static and bash-static, and a static cordon-agent
# (the release build of this tree). Also: `cordon shell` in a terminal (a
# tmux pane) and `cordon run --pty` without one, and `cordon verify NAME` of
# a running docker `cordon run` session.
# Root only: a user who may talk to a dockerd is root-equivalent, and
# starting one needs root. The unprivileged user is exercised from here,
# through a socket chowned to it. Needs docker.io, busybox-static and
# bash-static (scripts/bootstrap.sh --test).
. "$CORDON_SRC/tests/lib/tap.sh"
. "$CORDON_SRC/tests/lib/cordon.sh"
. "$CORDON_SRC/tests/lib/fixtures.sh"
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
    echo "tmp-mode=$(stat -c %a /tmp) cwd=$PWD"
    exit 7' 2>&1 </dev/null)
rc=$?
diag "cordon run on docker: $((($(date +%s%N) - t0) / 1000000)) ms (noisy: 2 shared cores)"
is "run: the command's exit status propagates" "$rc" 7
unlike "run: another hostname inside" "$out" "host=$(hostname)$"
like "run: PID 1 is the agent" "$out" "pid1=/run/cordon/agent"
like "run: /tmp is 1777 in the cwd under it (docker's --workdir would leave it 0755)" "$out" "tmp-mode=1777 cwd=$ws"
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
is "the container runs no image HEALTHCHECK (it would run beside the agent's confinement)" \
    "$(docker inspect --format '{{json .Config.Healthcheck.Test}}' "$(docker ps -aq | head -1)" 2>&1)" '["NONE"]'
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
# The daemon and image checks ask the Engine API on the socket: a start
# runs the docker CLI once (docker run), not for docker info or inspect.
if command -v strace >/dev/null; then
    (cd "$ws" && PWD="$ws" strace -f -qq -e trace=execve -e signal=none -o "$TEST_TMP/dtrace" \
        "$CORDON" run "${D[@]}" -- true >/dev/null 2>&1 </dev/null)
    is "a start runs the docker CLI only for docker run" \
        "$(grep -o 'execve("[^"]*/docker", \["[^"]*", "[a-z]*"' "$TEST_TMP/dtrace" | sed 's/.*", "//; s/"$//' | sort | uniq -c | tr -s ' ' | tr '\n' ';')" " 1 run;"
else
    skip "a start runs the docker CLI only for docker run" "strace is not installed"
fi
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
# The workspace file may not pick the daemon.
printf '[docker]\nhost = "unix://%s/sock"\n' "$hd" >"$ws/.cordon.toml"
(cd "$ws" && PWD="$ws" "$CORDON" trust --yes >/dev/null 2>&1)
cordon_run "$ws" --backend docker --set docker.image=cordon-docker-test -- true
is "docker.host in the workspace file: refused (125)" "$rc" 125
like "docker.host in the workspace file: the reason" "$out" "docker.host is refused in the workspace file"
printf '[limits]\npids = 500\n' >"$ws/.cordon.toml"
(cd "$ws" && PWD="$ws" "$CORDON" trust --yes >/dev/null 2>&1)
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
        CORDON_TEST_AGENT="$CORDON_TEST_AGENT" "$ucordon" run "${D[@]}" -- bash -c 'id -u; touch made' 2>&1 </dev/null)
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

# --- a terminal: cordon shell in a real one (a tmux pane), as on ns/vm ---
if command -v tmux >/dev/null; then
    pws=$(new_ws dpty)
    TM_SOCK="$TEST_TMP/tmux.sock" TM_TARGET=dk
    write_pane_runner "$TEST_TMP/pty-runner.sh" "$pws" shell "${D[@]}"
    tm new-session -d -s dk -x 100 -y 30 "bash $TEST_TMP/pty-runner.sh"
    if wait_screen '[#$] *$' 60; then
        pass "shell: a prompt appears in the terminal"
    else
        fail "shell: a prompt appears in the terminal" "screen: $(screen | grep -v '^$' | tail -5)"
    fi
    shell_do 1 'tty; test -t 0 && echo stdin-is-a-tty; stty size; grep -E "^(CapBnd|NoNewPrivs|Seccomp):" /proc/self/status | tr -s "\t" " "'
    out=$(screen)
    like "shell: the command has a terminal (tty)" "$out" $'\n/dev/pts/[0-9]+\n'
    like "shell: stdin is a terminal" "$out" $'\nstdin-is-a-tty'
    like "shell: the terminal has the window's size" "$out" $'\n30 100\n'
    like "shell: confined as without a terminal (no capability)" "$out" $'\nCapBnd: 0000000000000000\n'
    like "shell: confined as without a terminal (no_new_privs)" "$out" $'\nNoNewPrivs: 1\n'
    like "shell: confined as without a terminal (both filters)" "$out" $'\nSeccomp: 2\n'
    pane_tty=$(tm display -p -t dk '#{pane_tty}')
    like "shell: the host terminal is raw during the session" \
        "$(stty -a -F "$pane_tty" 2>&1 | tr '\n' ' ')" ' -isig -icanon .* -echo '
    pane_resize 120 40 2
    like "shell: a resize of the window reaches the terminal inside" "$(screen)" $'\n40 120\n'
    pane_start_job 3
    sleep 1
    t0=$SECONDS
    tm send-keys -t dk C-c
    if shell_do 4 'echo alive-$((6*7))' && [[ "$(screen)" =~ $'\nalive-42\n' ]]; then
        pass "shell: Ctrl-C ends the foreground job, the shell lives ($((SECONDS - t0)) s)"
    else
        fail "shell: Ctrl-C ends the foreground job, the shell lives" "screen: $(screen | grep -v '^$' | tail -5)"
    fi
    pane_start_job 5
    sleep 1
    tm send-keys -t dk C-z
    if wait_screen 'Stopped +sleep 100' 30; then
        pass "shell: Ctrl-Z stops the foreground job (job control)"
    else
        fail "shell: Ctrl-Z stops the foreground job (job control)" "screen: $(screen | grep -v '^$' | tail -5)"
    fi
    shell_do 6 'kill -KILL %1; wait'
    type_line 'exit 3'
    if wait_screen $'cordon-exit=3\n' 30; then
        pass "shell: exit 3 gives 3"
    else
        fail "shell: exit 3 gives 3" "screen: $(screen | grep -v '^$' | tail -5)"
    fi
    settings=$(runner_settings)
    like "shell: the host terminal is cooked again after (icanon)" "$settings" '(^|[ \n])icanon( |$)'
    like "shell: the host terminal echoes again after (echo)" "$settings" '(^|[ \n])echo( |$)'
    tm kill-server 2>/dev/null
    is "shell: the container is gone afterwards" "$(ncontainers)" 0

    # The docker CLI killed (it owned the host terminal, raw): cordon puts
    # the terminal back itself, and removes the container.
    tm new-session -d -s dk -x 100 -y 30 "bash $TEST_TMP/pty-runner.sh"
    wait_screen '[#$] *$' 60 || diag "no prompt in the second session: $(screen | grep -v '^$' | tail -3)"
    cordon_pid=$(pgrep -P "$(tm display -p -t dk '#{pane_pid}')" -x cordon)
    cli_pid=$([ -n "$cordon_pid" ] && pgrep -P "$cordon_pid" -x docker)
    [ -n "$cli_pid" ] && kill -KILL "$cli_pid"
    if wait_screen 'cordon-exit=137 *'$'\n' 30; then
        pass "shell: the docker CLI killed ends cordon shell (137)"
    else
        fail "shell: the docker CLI killed ends cordon shell (137)" "screen: $(screen | grep -v '^$' | tail -5)"
    fi
    settings=$(runner_settings)
    like "shell: the host terminal is cooked after the CLI was killed (icanon)" "$settings" '(^|[ \n])icanon( |$)'
    like "shell: the host terminal echoes after the CLI was killed (echo)" "$settings" '(^|[ \n])echo( |$)'
    tm kill-server 2>/dev/null
    is "shell: the CLI killed: the container is removed" "$(ncontainers)" 0
else
    skip "shell in a terminal" "tmux not installed (scripts/bootstrap.sh --test)"
fi

# --- run --pty without a host terminal, as on ns: a terminal inside, its
# output (stderr too) through it, the status back ---
out=$(cd "$ws" && PWD="$ws" "$CORDON" run "${D[@]}" --pty -- \
    bash -c 'tty; test -t 1 && echo stdout-is-a-tty; echo to-stderr >&2; exit 5' </dev/null 2>"$TEST_TMP/err")
rc=$?
is "run --pty without a host terminal: the command's status" "$rc" 5
like "run --pty without a host terminal: a terminal inside" "$out" $'^/dev/pts/[0-9]+\r\nstdout-is-a-tty\r\n'
like "run --pty: stderr comes through the terminal too" "$out" $'\nto-stderr\r'
is "run --pty: nothing on cordon's stderr" "$(cat "$TEST_TMP/err")" ""
# cordon shell without a terminal still reads commands from stdin.
out=$(cd "$ws" && printf 'echo from-shell; tty; exit 4\n' | PWD="$ws" "$CORDON" shell "${D[@]}" 2>&1)
rc=$?
is "shell without a terminal: commands from stdin, no terminal inside" "$out" "from-shell
not a tty"
is "shell without a terminal: the exit status" "$rc" 4

# --- cordon verify on docker ---
out=$(cd "$ws" && PWD="$ws" "$CORDON" verify "${D[@]}" 2>&1 </dev/null)
rc=$?
diag "$out"
is "verify: passes on docker" "$rc" 0
unlike "verify: no FAIL row" "$out" "FAIL"
like "verify: the agent seen from the host is the container's PID 1, with its three filters" "$out" \
    "PASS  seccomp +agent \(pid [0-9]+, from the host\): Seccomp 2, 3 filter\(s\)"
if "$CORDON" --debug run -- true 2>&1 | grep -q 'landlock: available'; then
    like "verify: Landlock applies in the container" "$out" \
        "PASS  landlock +kernel \(seen in the container\) ABI [0-9]+; .* -> EACCES"
else
    like "verify: Landlock reported absent (this kernel has none)" "$out" "SKIP  landlock"
fi
like "verify: the user namespace is the host's, said so" "$out" "the host's: docker, the user's uid, no capabilities"
is "verify: no container left" "$(ncontainers)" 0

# --- cordon verify NAME of a running docker `cordon run` session: the
# session's supervisor serves its control socket, the probe is a `docker
# exec` of the agent in that container ---
export XDG_RUNTIME_DIR="$TEST_TMP/run"
mkdir -p -m 755 "$XDG_RUNTIME_DIR"
vstate="$XDG_RUNTIME_DIR/cordon"
vname="dvr-$$"
(cd "$ws" && PWD="$ws" exec "$CORDON" run --name "$vname" "${D[@]}" -- sleep 60 </dev/null \
    >"$TEST_TMP/vrun.out" 2>"$TEST_TMP/vrun.err") &
vrun_pid=$!
cleanup_pids+=("$vrun_pid")
for _ in $(seq 150); do [ -S "$vstate/$vname/control" ] && break; sleep 0.2; done
is "verify NAME: the docker session serves a control socket (mode 0600)" \
    "$(stat -c '%a %F' "$vstate/$vname/control" 2>&1)" "600 socket"
vpid1=""
for _ in $(seq 50); do
    vpid1=$(docker inspect --format '{{.State.Pid}}' "$vname" 2>/dev/null)
    [ -n "$vpid1" ] && [ "$vpid1" != 0 ] && pgrep -P "$vpid1" -x sleep >/dev/null && break
    sleep 0.2
done
# Why a `docker exec` is no way around the container: an exec'd process,
# before the agent's own --confine, already has the container's bounding
# set (empty), no_new_privs and Docker's seccomp filter.
st=$(docker exec --user "$(id -u):$(id -g)" "$vname" cat /proc/self/status 2>&1)
like "docker exec: the exec'd process has no capability (CapBnd)" "$st" $'\nCapBnd:\t0000000000000000'
like "docker exec: the exec'd process has no_new_privs" "$st" $'\nNoNewPrivs:\t1'
like "docker exec: the exec'd process has Docker's seccomp filter" "$st" $'\nSeccomp:\t2'
verify_name() {
    out=$(cd / && "$CORDON" verify "$@" 2>"$TEST_TMP/verify.err" </dev/null)
    rc=$?
    err=$(cat "$TEST_TMP/verify.err")
}
row() { grep -E "^[A-Z]{4} +$1 " <<<"$out"; }
verify_name "$vname"
is "verify NAME (docker run): exit 0" "$rc" 0 || diag "$out $err"
like "verify NAME (docker run): the table of that session" "$out" "^cordon verify: sandbox $vname"
for check in env-scrub host-files docker-socket seccomp no-new-privs capabilities namespaces \
    processes; do
    like "verify NAME (docker run): $check passes" "$(row "$check")" "^PASS"
done
like "verify NAME (docker run): the host side is the container's PID 1, with its three filters" \
    "$(row seccomp)" "agent \(pid $vpid1, from the host\): Seccomp 2, 3 filter"
like "verify NAME (docker run): the probe ran in the container (docker exec)" "$out" "docker exec"
verify_name "$vname" --json
printf '%s' "$out" >"$TEST_TMP/dreport.json"
json_ok=$(python3 - "$TEST_TMP/dreport.json" "$vname" "$vpid1" 2>&1 <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))
assert r["sandbox"] == sys.argv[2], r["sandbox"]
assert r["result"] == "PASS" and r["failed"] == 0, r["result"]
assert r["host"]["agent_pid"] == int(sys.argv[3]), (r["host"]["agent_pid"], sys.argv[3])
print("ok")
EOF
)
is "verify NAME --json (docker run): parses, PASS, the container's PID 1 audited" "$json_ok" ok

# A probe that does not end (its docker exec CLI held with SIGSTOP) is
# killed after 30 s: the audit says so, and the next one runs.
(cd / && exec "$CORDON" verify "$vname" >"$TEST_TMP/vt.out" 2>"$TEST_TMP/vt.err" </dev/null) &
vt=$!
held=""
for _ in $(seq 1000); do
    held=$(pgrep -P "$vrun_pid" -f " exec -i --user ")
    [ -n "$held" ] && break
    sleep 0.01
done
[ -n "$held" ] && kill -STOP "$held"
t0=$SECONDS
wait "$vt"
is "verify NAME (docker run) with a held probe: exit 1" "$?" 1
like "verify NAME (docker run): the held probe is killed after 30 s ($((SECONDS - t0)) s)" \
    "$(cat "$TEST_TMP/vt.out")" "killed after 30 s \(timeout\)"
verify_name "$vname"
is "verify NAME (docker run) after the held probe: the session is still audited (exit 0)" "$rc" 0

# A Docker API look-alike planted in that container's /tmp (bound by the
# test, root, through the container's root): THAT session's audit FAILs,
# a fresh one does not.
python3 "$FAKE_DOCKER_API" "/proc/$vpid1/root/tmp/docker.sock" </dev/null >/dev/null 2>&1 &
cleanup_pids+=($!)
for _ in $(seq 50); do [ -S "/proc/$vpid1/root/tmp/docker.sock" ] && break; sleep 0.1; done
verify_name "$vname"
is "verify NAME (docker run) with a fake docker.sock inside: exit 1" "$rc" 1
like "verify NAME (docker run): the planted socket is found" "$(row docker-socket)" \
    "^FAIL .*/tmp/docker.sock \(answers the Docker API\)"
out=$(cd "$ws" && PWD="$ws" "$CORDON" verify "${D[@]}" 2>/dev/null </dev/null)
like "fresh verify on docker: its own /tmp, no such socket" "$(row docker-socket)" "^PASS"

# Another uid: the control socket's checks, as on ns.
user=cordon-test
id "$user" >/dev/null 2>&1 || useradd --create-home --shell /bin/bash "$user" >/dev/null 2>&1
ctl() {
    (cd / && runuser -u "$user" -- python3 - "$vstate/$1/control" "$2") <<'EOF'
import socket, sys
s = socket.socket(socket.AF_UNIX)
try:
    s.connect(sys.argv[1])
except OSError as e:
    print(type(e).__name__); sys.exit(0)
try:
    s.sendall(sys.argv[2].encode())
except OSError:
    pass
s.settimeout(30)
data = b""
while True:
    d = s.recv(65536)
    if not d: break
    data += d
print(data.decode().strip())
EOF
}
if id "$user" >/dev/null 2>&1; then
    is "verify NAME (docker run): another uid: the socket's directory mode denies it" \
        "$(ctl "$vname" '{"op":"verify"}
')" PermissionError
    chmod 711 "$vstate" "$vstate/$vname"
    chmod 666 "$vstate/$vname/control"
    like "verify NAME (docker run): another uid: SO_PEERCRED refuses it when the modes would not" \
        "$(ctl "$vname" '{"op":"verify"}
')" "permission denied: uid $(id -u "$user") is not the session owner \(uid 0\) or root"
    chmod 700 "$vstate" "$vstate/$vname"
    chmod 600 "$vstate/$vname/control"
else
    skip "verify NAME (docker run): another uid" "cannot create user $user"
    skip "verify NAME (docker run): another uid, SO_PEERCRED" "cannot create user $user"
fi

# The command ends during an audit: said so, nothing audited. The probe is
# held (SIGSTOP on the docker exec CLI) until the command is killed.
(cd / && exec "$CORDON" verify "$vname" >"$TEST_TMP/v6.out" 2>"$TEST_TMP/v6.err" </dev/null) &
v6=$!
execpid=""
for _ in $(seq 1000); do
    execpid=$(pgrep -P "$vrun_pid" -f " exec -i --user ")
    [ -n "$execpid" ] && break
    sleep 0.01
done
[ -n "$execpid" ] && kill -STOP "$execpid"
[ -n "$execpid" ] || diag "the probe's docker exec was not seen"
pkill -KILL -P "$vpid1" -x sleep
wait "$v6"
is "verify NAME while the command exits (docker): exit 125" "$?" 125
[ -s "$TEST_TMP/v6.out" ] && diag "verify's report: $(grep -E '^(FAIL|result)' "$TEST_TMP/v6.out")"
like "verify NAME while the command exits (docker): a clear error" "$(cat "$TEST_TMP/v6.err")" \
    "sandbox $vname: its command exited \(status 137\) before the audit ended: nothing was audited"
[ -n "$execpid" ] && kill -CONT "$execpid" 2>/dev/null
wait "$vrun_pid"
is "run --name (docker): the command's status (137)" "$?" 137
verify_name "$vname"
is "verify NAME (docker) after the command exited: not running (2)" "$rc" 2
like "verify NAME (docker) after the command exited: says so" "$err" "sandbox $vname is not running"
is "verify NAME (docker): no container left" "$(ncontainers)" 0
tap_done
