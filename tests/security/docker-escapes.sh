#!/usr/bin/env bash
# The security suite on the docker backend (tests/security/cases.md;
# each test names its case): the escape attempts that apply to a container,
# made through `cordon run --backend docker` and `cordon tool --backend
# docker` against a private dockerd (tests/lib/docker-backend.sh), each
# asserting the precise outcome and that the host is unchanged. The
# container's seccomp profile is Docker's default, not cordon's own filter:
# the agent stacks cordon's own filter on it (cordon-agent --seccomp), so
# the answers are the ns backend's (docs/docker-backend.md).
# Root only (a user who may talk to a dockerd is root-equivalent).
. "$CORDON_SRC/tests/lib/tap.sh"
. "$CORDON_SRC/tests/lib/cordon.sh"
. "$CORDON_SRC/tests/lib/fixtures.sh"
. "$CORDON_SRC/tests/lib/docker-backend.sh"

# val KEY: the value of the line KEY=... in $out.
val() { sed -n "s/^$1=//p" <<<"$out" | head -n1; }

# The syscall probe, static: the image has no C library.
probe_bin="$TEST_TMP/probe"
if ! cc -static -D_GNU_SOURCE -O2 -o "$probe_bin" "$CORDON_SRC/tests/security/syscall-probe.c" 2>"$TEST_TMP/cc.log"; then
    fail "a static syscall probe builds" "$(cat "$TEST_TMP/cc.log")"
    tap_done
fi

# --- the host side: a planted home, a git repository, a listener ---
repo=$(new_ws repo)
git -C "$repo" -c init.defaultBranch=main init -q
cp "$probe_bin" "$repo/probe"
hooks_before=$(ls -A "$repo/.git/hooks" | sha256sum)
config_before=$(sha256sum <"$repo/.git/config")
fakehome=$(new_ws home)
plant_home "$fakehome" -SENTINEL
marker="cordon-dksec-$$-$RANDOM"
hostname_before=$(cat /proc/sys/kernel/hostname)

accepted="$TEST_TMP/accepted"
start_host_listener "$accepted"

# --- `cordon run`: filesystem, protected paths, syscalls, identity,
# environment, network, processes; the container inspected from the host ---
script='
probe() { printf "%s=%s\n" "$1" "$(./probe "$@" 2>&1)"; }
echo "uid=$(id -u)"
echo x > "$HOME/'"$marker"'" 2>/dev/null && echo "home_write=ok"
for p in /etc /usr ""; do touch "$p/'"$marker"'" 2>&1 | sed "s/^/ro:/"; done
cat "$HOME/.ssh/id_ed25519" "$HOME/.aws/credentials" "$HOME/.docker/config.json" 2>&1 | sed "s/^/secret:/"
echo "shadow=$(cat /etc/shadow 2>&1)"
echo "root=$(ls -A /root 2>&1 | tr "\n" " ")"
echo evil > .git/hooks/pre-commit 2>/dev/null; echo "hook_write=$?"
echo "[core] hooksPath=/tmp" >> .git/config 2>/dev/null; echo "config_write=$?"
echo idx > .git/index && echo "index_write=ok"
probe umount "$PWD/.git/hooks"
echo "umount_config=$(./probe umount "$PWD/.git/config" 2>&1)"
probe mount_bind "$PWD/.git/hooks"
echo evil > .git/hooks/pre-commit 2>/dev/null; echo "hook_write_after=$?"
for p in keyctl add_key request_key bpf userfaultfd perf_event_open io_uring_setup \
    mount_tmpfs pivot_root chroot unshare_user unshare_mount clone_newuser \
    kexec_load init_module finit_module reboot swapon acct syslog open_by_handle_at \
    socket_vsock socket_netlink_audit; do probe $p; done
probe setns /proc/self/ns/mnt
probe ptrace 1
grep -E "^(CapInh|CapPrm|CapEff|CapBnd|CapAmb|NoNewPrivs|Seccomp):" /proc/self/status | tr -d "\t" | sed "s/:/=/"
{ echo h > /proc/sysrq-trigger; } 2>/dev/null; echo "sysrq=$?"
{ echo evil > /proc/sys/kernel/hostname; } 2>/dev/null; echo "hostname_write=$?"
echo "env_flagged=$(env | grep -cE "^(DOCKER_|COMPOSE_|CORDON_SENTINEL)")"
timeout 5 bash -c "echo x > /dev/tcp/127.0.0.1/'"$port"'" 2>/dev/null; echo "tcp_lo=$?"
timeout 5 bash -c "echo x > /dev/tcp/'"$host_ip"'/'"$port"'" 2>/dev/null; echo "tcp_ip=$?"
echo "net_devices=$(ls /sys/class/net | tr "\n" " ")"
echo "hostpid='"$$"' $(cat /proc/'"$$"'/comm 2>&1)"
echo "docker_sock=$(ls /var/run/docker.sock /run/docker.sock 2>&1 | tr "\n" " ")"
touch ready
for i in $(seq 600); do [ -e go ] && break; sleep 0.1; done
echo done=1'
rm -f "$repo/ready" "$repo/go"
(cd "$repo" && PWD="$repo" HOME="$fakehome" DOCKER_HOST=tcp://cordon-sentinel:2375 \
    CORDON_SENTINEL_DKSEC=leak "$CORDON" run "${D[@]}" -- bash -c "$script" \
    >"$TEST_TMP/run.out" 2>&1 </dev/null; echo "rc=$?" >>"$TEST_TMP/run.out") &
run_pid=$!
cleanup_pids+=("$run_pid")
for _ in $(seq 300); do [ -e "$repo/ready" ] && break; sleep 0.1; done
name=$(docker ps --format '{{.Names}}' | head -1)
cpid=$(docker inspect --format '{{.State.Pid}}' "$name" 2>/dev/null)
if [ -e "$repo/ready" ] && [ -n "$cpid" ] && [ "$cpid" -gt 1 ]; then
    # Case 38 (H) and the host half of case 23: the container's PID 1 (the
    # agent), seen from the host, holds no secret and no privilege.
    cenv=$(tr '\0' '\n' <"/proc/$cpid/environ")
    unlike "case 38: the container's environment holds no host sentinel" "$cenv" "DOCKER_HOST|CORDON_SENTINEL"
    cstatus=$(grep -E '^(CapPrm|CapEff|CapBnd|NoNewPrivs|Seccomp):' "/proc/$cpid/status" | tr -d '\t')
    like "case 23: the container's PID 1 holds no capability" "$cstatus" "CapPrm:0+
CapEff:0+
CapBnd:0+"
    like "case 23: ... with no_new_privs and a seccomp filter" "$cstatus" "NoNewPrivs:1
Seccomp:2"
    is "cases 16-25: three filters on the container's PID 1 (Docker's, cordon's own, the socket guard's)" \
        "$(sed -n 's/^Seccomp_filters:\t*//p' "/proc/$cpid/status")" 3
    # The docker CLI cordon drives: the scrubbed environment, nothing else.
    cli=$(pgrep -n -f "docker run -i --rm --name $name")
    clienv=$(tr '\0' '\n' <"/proc/$cli/environ" 2>/dev/null | cut -d= -f1 | sort | tr '\n' ' ')
    is "the docker CLI's environment is the four variables cordon builds" "$clienv" \
        "DOCKER_CONFIG DOCKER_HOST HOME PATH "
else
    fail "the run reached its checkpoint" "$(cat "$TEST_TMP/run.out")"
fi
touch "$repo/go"
wait "$run_pid"
out=$(cat "$TEST_TMP/run.out")
is "run: ran to its end" "$(val done)" 1
is "run: exits 0" "$(val rc)" 0
is "the container's uid is the host user's" "$(val uid)" "$(id -u)"

# case 1
is "case 1: home is the container's (the write is allowed there)" "$(val home_write)" ok
like "case 1: /etc is read-only" "$out" "ro:touch: /etc/$marker: Read-only file system"
like "case 1: /usr is read-only" "$out" "ro:touch: /usr/$marker: Read-only file system"
like "case 1: / is read-only" "$out" "ro:touch: /$marker: Read-only file system"
ok "case 1: nothing created on the host" test ! -e "$fakehome/$marker" -a ! -e "/etc/$marker" -a ! -e "/usr/$marker" -a ! -e "/$marker"
# case 2
unlike "case 2: planted secrets are not visible" "$out" "KEY-SENTINEL|AWS-SENTINEL|DOCKER-SENTINEL"
like "case 2: ~/.ssh is absent" "$out" "secret:cat: can't open '$fakehome/.ssh/id_ed25519': No such file or directory"
is "case 2: /etc/shadow is absent" "$(val shadow)" "cat: can't open '/etc/shadow': No such file or directory"
unlike "case 2: /root shows nothing of the host's" "$(val root)" "\.bash_history|\.ssh"
# case 6 and 19 over protected paths
is "case 6: .git/hooks/pre-commit cannot be written" "$(val hook_write)" 1
is "case 6: .git/config cannot be written" "$(val config_write)" 1
is "case 6: .git/index stays writable" "$(val index_write)" ok
is "case 19: umount of .git/hooks -> EPERM" "$(val umount)" EPERM
is "case 19: umount of .git/config -> EPERM" "$(val umount_config)" EPERM
is "case 19: mount --bind over .git/hooks -> EPERM" "$(val mount_bind)" EPERM
is "case 6: .git/hooks still read-only after the attempts" "$(val hook_write_after)" 1
ok "case 6: no hook planted on the host" test ! -e "$repo/.git/hooks/pre-commit"
is "case 6: .git/hooks unchanged on the host" "$(ls -A "$repo/.git/hooks" | sha256sum)" "$hooks_before"
is "case 6: .git/config unchanged on the host" "$(sha256sum <"$repo/.git/config")" "$config_before"
# cases 16-20, 24, 25 under Docker's default profile and no capabilities
for p in keyctl add_key request_key; do is "case 16: $p -> EPERM" "$(val $p)" EPERM; done
for p in bpf userfaultfd perf_event_open; do is "case 18: $p -> EPERM" "$(val $p)" EPERM; done
for p in mount_tmpfs pivot_root chroot; do is "case 19: $p -> EPERM" "$(val $p)" EPERM; done
for p in unshare_user unshare_mount clone_newuser; do is "case 20: $p -> EPERM" "$(val $p)" EPERM; done
is "case 20: setns -> EPERM" "$(val setns)" EPERM
for p in kexec_load init_module finit_module reboot swapon acct syslog open_by_handle_at; do
    is "case 25: $p -> EPERM" "$(val $p)" EPERM
done
# Where Docker's default profile (20.10) alone would allow them: cordon's
# own filter, stacked by the agent, refuses them as on ns.
is "case 18: io_uring_setup -> EPERM" "$(val io_uring_setup)" EPERM
for p in socket_vsock socket_netlink_audit; do is "case 24: $p -> EPERM" "$(val $p)" EPERM; done
is "case 17: ptrace attach to the container's PID 1 -> EPERM" "$(val ptrace)" EPERM
# case 23
for c in CapInh CapPrm CapEff CapBnd CapAmb; do
    is "case 23: $c all zero inside" "$(val $c)" 0000000000000000
done
is "case 23: NoNewPrivs inside" "$(val NoNewPrivs)" 1
is "case 23: seccomp filter mode inside" "$(val Seccomp)" 2
# case 14
is "case 14: /proc/sysrq-trigger cannot be written" "$(val sysrq)" 1
is "case 14: /proc/sys/kernel/hostname cannot be written" "$(val hostname_write)" 1
is "case 14: the host's hostname is unchanged" "$(cat /proc/sys/kernel/hostname)" "$hostname_before"
# case 38
is "case 38: no DOCKER_*/COMPOSE_*/sentinel variable inside" "$(val env_flagged)" 0
# case 33
unlike "case 33: no Docker socket inside" "$(val docker_sock)" "docker.sock( |$)"
# case 35
is "case 35: 127.0.0.1:<host listener port> is the container's own loopback: refused" "$(val tcp_lo)" 1
is "case 35: the host's address $host_ip is unreachable" "$(val tcp_ip)" 1
is "case 35: no network device but lo" "$(val net_devices)" "lo "
ok "case 35: the host listener accepted nothing" test ! -e "$accepted"
# case 39
hostpid=$(val hostpid)
unlike "case 39: the host test shell's pid names nothing of the host's inside" "$hostpid" " bash$"

# --- `cordon tool`: the agent's bash has the same restrictions ---
out=$(cd "$repo" && PWD="$repo" DOCKER_HOST=tcp://cordon-sentinel:2375 "$CORDON" tool "${D[@]}" bash \
    '{"command":"grep -E \"^(CapEff|CapBnd|NoNewPrivs|Seccomp):\" /proc/self/status | tr -d \"\\t\" | tr \"\\n\" \" \"; echo; ./probe keyctl; ./probe umount .git/hooks; echo evil > .git/hooks/pre-commit; env | grep -c DOCKER_"}' 2>&1)
is "cordon tool exits 0" "$?" 0
like "case 23 (bash tool): no capabilities, no_new_privs, seccomp" "$out" "CapEff:0{16} CapBnd:0{16} NoNewPrivs:1 Seccomp:2"
like "case 16/19 (bash tool): keyctl and umount of .git/hooks -> EPERM" "$out" 'EPERM\\nEPERM\\n'
like "case 6 (bash tool): .git/hooks is read-only" "$out" "pre-commit: Read-only file system"
like "case 38 (bash tool): no DOCKER_ variable" "$out" '\\n0\\n'
ok "case 6 (bash tool): no hook planted on the host" test ! -e "$repo/.git/hooks/pre-commit"
# case 1 through the write tool
out=$(cd "$repo" && PWD="$repo" "$CORDON" tool "${D[@]}" write '{"path":"/etc/cordon-dksec","content":"x"}' 2>&1)
like "case 1 (write tool): /etc is read-only" "$out" "EROFS: read-only file system"
ok "case 1 (write tool): nothing created on the host" test ! -e /etc/cordon-dksec

# --- cases 56-62: git metadata (tests/lib/git-metadata.sh; the test image
# has no git, so the attacks are plain shell and the host's git checks) ---
GM_ARGS="${D[*]}"
GM_GIT=0
. "$CORDON_SRC/tests/lib/git-metadata.sh"
gm_case_repo
gm_case_host_rename
gm_case_linked_worktree
gm_case_nongit
is "no container left" "$(ncontainers)" 0
tap_done
