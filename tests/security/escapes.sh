#!/usr/bin/env bash
# The security suite for the ns backend: real escape attempts from inside the
# sandbox (tests/security/cases.md; each test names its case), each
# asserting the precise outcome and that the host is unchanged.
. "$CORDON_SRC/tests/lib/tap.sh"
. "$CORDON_SRC/tests/lib/cordon.sh"
. "$CORDON_SRC/tests/lib/fixtures.sh"
: "${CORDON_PROBE:?CORDON_PROBE must point at the syscall probe}"

ws=$(new_ws ws)
cp "$CORDON_PROBE" "$ws/probe"
outside=$(new_ws outside)
echo secret > "$outside/secret"
echo original > "$outside/target"

# probe NAME EXPECTED [ARG...]: runs the probe inside and compares its answer.
probe() {
    local name=$1 want=$2 case=$3; shift 3
    cordon_run "$ws" -- ./probe "$name" "$@"
    is "case $case: $name -> $want" "$out" "$want"
}

# --- Filesystem ---
marker="cordon-sec-$$-$RANDOM"
sh_in "$ws" "echo x > \$HOME/$marker; touch /etc/$marker /usr/$marker /$marker 2>&1; true"
like "case 1: /etc is read-only" "$out" "/etc/$marker': Read-only file system"
like "case 1: /usr is read-only" "$out" "/usr/$marker': Read-only file system"
like "case 1: / is read-only" "$out" "'/$marker': Read-only file system"
ok "case 1: nothing created on the host" test ! -e "$HOME/$marker" -a ! -e "/etc/$marker" -a ! -e "/usr/$marker" -a ! -e "/$marker"

fakehome=$(new_ws home)
plant_home "$fakehome"
out=$(cd "$ws" && HOME="$fakehome" "$CORDON" run -- bash -c 'ls -A $HOME; cat $HOME/.ssh/id_ed25519 $HOME/.aws/credentials $HOME/.docker/config.json /etc/shadow /etc/gshadow /root/.bash_history 2>&1; ls /root 2>&1; true' 2>&1)
unlike "case 2: host secrets are not visible" "$out" "KEY|AWS|DOCKER"
like "case 2: ~/.ssh is absent" "$out" "id_ed25519: No such file or directory"
like "case 2: /etc/shadow is absent" "$out" "/etc/shadow: No such file or directory"

ln -s "$outside/secret" "$ws/link-read"
ln -s "$outside/target" "$ws/link-write"
ln -s "$outside" "$ws/link-dir"
sh_in "$ws" 'cat link-read; echo changed > link-write; touch link-dir/new; ls link-dir' 
unlike "case 3: a symlink to a host path reads nothing" "$out" "secret"
is "case 3: writing through a symlink leaves the host file" "$(cat "$outside/target")" "original"
ok "case 3: nothing created through a directory symlink" test ! -e "$outside/new"

probe link EXDEV 4 /etc/passwd passwd-link
ok "case 4: no hard link to /etc/passwd in the workspace" test ! -e "$ws/passwd-link"
probe mknod EPERM 5 node
ok "case 5: no device node in the workspace" test ! -e "$ws/node"

# --- case 6/7: protected paths ---
repo=$(new_ws repo)
git -C "$repo" -c init.defaultBranch=main init -q
echo 'trusted = true' > "$repo/.cordon.toml"
hooks_before=$(ls -A "$repo/.git/hooks" | wc -l)
cp "$CORDON_PROBE" "$repo/probe"
sh_in "$repo" 'echo evil > .git/hooks/pre-commit; echo "[core] hooksPath=/tmp" >> .git/config; echo x >> .cordon.toml; rm -rf .git/hooks; echo ok > .git/description; mkdir -p .git/objects/zz && echo o > .git/objects/zz/o; echo idx > .git/index; echo ok'
like "case 6: .git/hooks is read-only" "$out" "pre-commit: Read-only file system"
like "case 6: .git/config is read-only" "$out" ".git/config: Read-only file system"
like "case 6: .cordon.toml is read-only" "$out" ".cordon.toml: Read-only file system"
ok "case 6: no hook planted on the host" test ! -e "$repo/.git/hooks/pre-commit"
is "case 6: hooks directory unchanged" "$(ls -A "$repo/.git/hooks" | wc -l)" "$hooks_before"
unlike "case 6: .git/config unchanged" "$(cat "$repo/.git/config")" "hooksPath"
is "case 6: .cordon.toml unchanged" "$(cat "$repo/.cordon.toml")" "trusted = true"
ok "case 6: .git/index and .git/objects stay writable" test -e "$repo/.git/objects/zz/o" -a "$(cat "$repo/.git/index")" = idx
sh_in "$repo" 'mv .git .git-old 2>&1; mv .git/hooks .git/h2 2>&1; mkdir -p x/.git && mv .git x 2>&1; ls -d .git'
like "case 7: renaming .git is refused (pinned)" "$out" "cannot move '.git' to '.git-old': Device or resource busy"
like "case 7: renaming .git/hooks is refused" "$out" "Device or resource busy"
ok "case 7: .git still in place on the host" test -d "$repo/.git/hooks" -a ! -e "$repo/.git-old"
rm -rf "$repo/.git/hooks"
ln -s ../evil "$repo/.git/hooks"
cordon_run "$repo" -- true
is "case 7: a symlinked protected path refuses the start (125)" "$rc" 125
like "case 7: the refusal names the path" "$out" "protected path is a symlink; refusing to start: .git/hooks"

# --- 12: the agent binary and /proc/self/exe ---
agent_sum=$(sha256sum < "${CORDON_AGENT:-$(dirname "$CORDON")/cordon-agent}")
probe open_write EACCES 12 /proc/1/exe
sh_in "$ws" 'readlink /proc/1/exe || echo no-access; exec 3>>/proc/self/exe 2>&1 || echo refused'
like "case 12: PID 1's exe link is closed to the sandbox (not dumpable)" "$out" "no-access"
like "case 12: /proc/self/exe cannot be opened for writing" "$out" "(Text file busy|Permission denied|Read-only file system).*refused"
tag="cordon-exe-$$-$RANDOM"
(cd "$ws" && exec "$CORDON" tool bash "{\"command\":\"exec -a $tag sleep 30\"}") >/dev/null &
exe_pid=$!
cleanup_pids+=("$exe_pid")
agent=
for _ in $(seq 100); do
    sleeper=$(pgrep -f "^$tag" | head -1)
    [ -n "$sleeper" ] && agent=$(awk '{print $4}' "/proc/$sleeper/stat") && break
    sleep 0.05
done
is "case 12: the tools' PID 1 runs from the read-only bind of the agent" "$(readlink "/proc/$agent/exe" 2>&1)" "/run/cordon/agent"
kill "$exe_pid" 2>/dev/null
is "case 12: the agent binary on the host is unchanged" "$(sha256sum < "${CORDON_AGENT:-$(dirname "$CORDON")/cordon-agent}")" "$agent_sum"

# --- 13: inherited fds ---
exec 7<"$outside"
cordon_run "$ws" -- ./probe fchdir_fds
is "case 13: no inherited fd allows fchdir" "$out" "0"
exec 7<&-
sh_in "$ws" 'ls /proc/self/fd | tr "\n" " "'
is "case 13: only 0-2 (and ls's own) are open" "$out" "0 1 2 3 "

# --- 14/15: /proc and /sys ---
sh_in "$ws" 'echo b > /proc/sysrq-trigger; echo x > /proc/sys/kernel/hostname; echo x > /sys/kernel/uevent_helper; true' 
like "case 14: /proc/sysrq-trigger is read-only (or absent)" "$out" "sysrq-trigger: (Read-only file system|No such file or directory)"
like "case 14: /proc/sys is read-only" "$out" "hostname: Read-only file system"
like "case 14: /sys is read-only" "$out" "uevent_helper: (Read-only file system|No such file or directory)"
sh_in "$ws" 'for f in /proc/kcore /proc/keys /proc/timer_list /proc/kallsyms; do printf "%s=%s " $f "$(head -c 64 $f 2>/dev/null | wc -c)"; done; printf "fw=%s" "$(ls -A /sys/firmware 2>/dev/null | wc -l)"'
is "case 15: sensitive /proc files are masked and /sys/firmware is empty" "$out" "/proc/kcore=0 /proc/keys=0 /proc/timer_list=0 /proc/kallsyms=0 fw=0"

# --- 16-25: the kernel surface ---
for p in keyctl add_key request_key; do probe $p EPERM 16; done
probe ptrace EPERM 17 1
probe process_vm_readv EPERM 17 1
if command -v strace >/dev/null; then
    sh_in "$ws" 'strace -f true'
    ok "case 17: strace fails inside" test "$rc" -ne 0
else
    skip "case 17: strace" "strace not installed"
fi
for p in userfaultfd perf_event_open bpf io_uring_setup; do probe $p EPERM 18; done
for p in mount_tmpfs mount_bind umount pivot_root chroot; do probe $p EPERM 19; done
probe unshare_user EPERM 20
probe unshare_mount EPERM 20
probe clone_newuser EPERM 20
probe clone3 ENOSYS 20
probe setns EPERM 20 /proc/self/ns/mnt
sh_in "$ws" 'unshare -Ur true; echo nested=$?'
like "case 20: a nested sandbox cannot be made" "$out" "nested=1"
probe tiocsti EPERM 21
probe tiocsti_high EPERM 21
probe tioclinux EPERM 21
sh_in "$ws" 'exec 3</dev/tty && echo has-tty || echo no-tty'
like "case 21: /dev/tty is not the user's terminal (no controlling tty)" "$out" "No such device or address"
probe int80_getpid SIGNAL:SYS 22
probe int80_keyctl SIGNAL:SYS 22
probe x32_getpid SIGNAL:SYS 22
sh_in "$ws" 'grep -E "^(CapInh|CapPrm|CapEff|CapBnd|CapAmb|NoNewPrivs)" /proc/self/status | tr -s "\t" " " | tr "\n" " "'
is "case 23: no capabilities, no_new_privs" "$out" "CapInh: 0000000000000000 CapPrm: 0000000000000000 CapEff: 0000000000000000 CapBnd: 0000000000000000 CapAmb: 0000000000000000 NoNewPrivs: 1 "
sh_in "$ws" 'cp /usr/bin/id ./suid-id && chmod u+s,g+s ./suid-id; ./suid-id -u; ./suid-id -g; sudo -n true 2>/dev/null && echo sudo-ok || echo sudo-failed'
is "case 23: a copied setuid binary gains nothing; sudo fails" "$out" "$(id -u)
$(id -g)
sudo-failed"
probe socket_vsock EPERM 24
probe socket_netlink_audit EPERM 24
for p in kexec_load init_module finit_module reboot swapon acct syslog open_by_handle_at; do probe $p EPERM 25; done

# --- 26-32: processes and resources ---
sh_in "$ws" 'n=0; for p in /proc/[0-9]*; do n=$((n + 1)); done; echo $n'
is "case 26: only the sandbox's processes are visible (init and bash)" "$out" "2"
probe kill0 ESRCH 26 $$
tag="cordon-detached-$$-$RANDOM"
sh_in "$ws" "setsid nohup bash -c 'exec -a $tag sleep 1000' >/dev/null 2>&1 & sleep 0.2; echo started"
sleep 0.3
if pgrep -f "$tag" >/dev/null; then fail "case 27: detached processes die with the session"; pkill -f "$tag"; else pass "case 27: detached processes die with the session"; fi

start=$(date +%s%N)
out=$(cd "$ws" && timeout 60 "$CORDON" run --pids 64 -- bash -c 'bomb() { bomb | bomb & }; bomb; sleep 2; echo survived' 2>&1)
rc=$?
elapsed=$(( ($(date +%s%N) - start) / 1000000 ))
cordon_run "$ws" --pids 16 -- bash -c 'for i in $(seq 40); do sleep 30 & done 2>&1; wait'
like "case 28: the process limit stops forks inside (EAGAIN)" "$out" "Resource temporarily unavailable"
ok "case 28: the fork bomb ends with the session (${elapsed} ms)" test "$rc" -ne 124
host_probe_start=$(date +%s%N); /bin/true; host_probe_ms=$(( ($(date +%s%N) - host_probe_start) / 1000000 ))
ok "case 28: the host stays responsive (${host_probe_ms} ms for /bin/true)" test "$host_probe_ms" -lt 1000
sleep 0.2
ok "case 28: no bomb process remains" bash -c '! pgrep -f "bomb\(\) \{" >/dev/null'

cordon_run "$ws" --memory 128 -- python3 -c 'x = b"a" * (512 << 20); print("allocated")'
unlike "case 29: allocating past the memory limit fails inside" "$out" "allocated"
ok "case 29: ... with an error or an OOM kill (exit $rc)" test "$rc" -ne 0
cordon_run "$ws" --file-size 1 -- bash -c 'trap "" XFSZ; head -c 2M /dev/zero > big'
like "case 29: writing past the file-size limit fails with EFBIG" "$out" "File too large"
ok "case 29: the file stopped at the limit" test "$(stat -c %s "$ws/big")" -le 1048576
rm -f "$ws/big"
cordon_run "$ws" --open-files 64 -- bash -c 'ulimit -n; for i in $(seq 100); do exec {fd}</dev/null || { echo emfile; break; }; done 2>&1'
like "case 29: open files are limited (EMFILE)" "$out" "64.*Too many open files"
cordon_run "$ws" --cpu-seconds 1 -- bash -c 'while :; do :; done'
is "case 30: a CPU spin past the CPU limit is killed (SIGXCPU)" "$rc" 152
bytes=$(cd "$ws" && "$CORDON" run -- head -c 200M /dev/zero | wc -c)
is "case 31: large output streams through unbuffered" "$bytes" 209715200

tag="cordon-midcall-$$-$RANDOM"
start_tagged_sleep "$tag"
kill -9 "$pid"
gone=no
for _ in $(seq 100); do pgrep -f "$tag" >/dev/null || { gone=yes; break; }; sleep 0.05; done
is "case 32: kill -9 of the supervisor mid-call leaves no sandbox process" "$gone" yes

# --- 33-39: sockets, network, environment ---
sockdir=$(new_ws sockets)
listen_unix() { python3 -c 'import socket,sys,time
s=socket.socket(socket.AF_UNIX); s.bind(sys.argv[1]); s.listen(); time.sleep(60)' "$1" & cleanup_pids+=($!); }
listen_unix "$sockdir/agent.sock"
made=()
for path in /var/run/docker.sock /run/dbus/system_bus_socket /tmp/.X11-unix/X0; do
    if [ ! -e "$path" ] && mkdir -p "$(dirname "$path")" 2>/dev/null && [ -w "$(dirname "$path")" ]; then
        listen_unix "$path"; made+=("$path")
    fi
done
abstract="cordon-test-$$-$RANDOM"
python3 -c 'import socket,sys,time
s=socket.socket(socket.AF_UNIX); s.bind("\0"+sys.argv[1]); s.listen(); time.sleep(60)' "$abstract" &
cleanup_pids+=($!)
sleep 0.5
for path in "$sockdir/agent.sock" /var/run/docker.sock /run/dbus/system_bus_socket /tmp/.X11-unix/X0; do
    out=$(cd "$ws" && SSH_AUTH_SOCK="$sockdir/agent.sock" "$CORDON" run -- ./probe connect_unix "$path" 2>&1)
    is "case 33: $path is not reachable" "$out" "ENOENT"
done
sh_in "$ws" 'echo "${SSH_AUTH_SOCK:-unset}"'
is "case 33: SSH_AUTH_SOCK is not forwarded" "$out" "unset"
probe connect_abstract ECONNREFUSED 34 "$abstract"
for path in "${made[@]}"; do rm -f "$path"; done

port=$((20000 + RANDOM % 20000))
python3 -c 'import socket,sys,time
s=socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen(); time.sleep(60)' "$port" &
cleanup_pids+=($!)
sleep 0.3
sh_in "$ws" "exec 3<>/dev/tcp/127.0.0.1/$port && echo connected || echo refused"
like "case 35: bash /dev/tcp to a host listener fails" "$out" "refused"
sh_in "$ws" "getent ahosts example.com || echo no-dns; ip route 2>/dev/null | wc -l"
like "case 35: no name resolution" "$out" "no-dns"
if command -v curl >/dev/null; then
    sh_in "$ws" "curl -s -m 3 http://127.0.0.1:$port/ || echo curl-failed"
    like "case 35: curl to the host fails" "$out" "curl-failed"
fi

out=$(cd "$ws" && DOCKER_HOST=tcp://evil:2375 DOCKER_CONTEXT=evil CORDON_SENTINEL_X=leak AWS_SECRET_ACCESS_KEY=leak COMPOSE_FILE=x LD_AUDIT=/x.so BASH_ENV=/x "$CORDON" run -- env 2>/dev/null)
unlike "case 38: host sentinels are absent inside (strict mode)" "$out" "DOCKER_|CORDON_SENTINEL|AWS_SECRET|COMPOSE_|LD_AUDIT|BASH_ENV"
probe open_write ENOENT 39 "/proc/$$/environ"

# --- 43: unsafe roots ---
for d in / /usr /etc "$HOME"; do
    out=$(cd "$d" && PWD="$d" "$CORDON" run -- true 2>&1)
    is "case 43: workspace $d refused (125)" "$?" 125
done
tap_done
