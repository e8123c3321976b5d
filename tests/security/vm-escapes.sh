#!/usr/bin/env bash
# The security suite on the vm backend (tests/security/cases.md; each
# test names its case): the escape attempts that apply to a microVM, made
# from the guest through `cordon run --backend vm` and `cordon tool --backend
# vm`, each asserting the precise outcome and that the host is unchanged.
# A boot costs seconds under TCG, so each boot runs a group of attempts and
# prints key=value lines that the checks below parse. kill -9 of the
# supervisor killing QEMU (case 32) is in tests/integration/vm.sh.
. "$CORDON_SRC/tests/lib/tap.sh"
. "$CORDON_SRC/tests/lib/cordon.sh"
. "$CORDON_SRC/tests/lib/fixtures.sh"
. "$CORDON_SRC/tests/lib/background.sh"
: "${CORDON_PROBE:?CORDON_PROBE must point at the syscall probe}"

skip_without_vm

# val KEY: the value of the line KEY=... in $out.
val() { sed -n "s/^$1=//p" <<<"$out" | head -n1; }

# --- the host side: a planted home, a git repository, a listener ---
repo=$(new_ws repo)
git -C "$repo" -c init.defaultBranch=main init -q
cp "$CORDON_PROBE" "$repo/probe"
hooks_before=$(ls -A "$repo/.git/hooks" | sha256sum)
config_before=$(sha256sum < "$repo/.git/config")
fakehome=$(new_ws home)
plant_home "$fakehome" -SENTINEL
marker="cordon-vmsec-$$-$RANDOM"
hostname_before=$(cat /proc/sys/kernel/hostname)

accepted="$TEST_TMP/accepted"
start_host_listener "$accepted"

# Boot 2b (checked below, in its own workspace) runs beside boot 1.
tw=$(new_ws tools)
echo hello > "$tw/a.txt"
tools_batch() {
    printf '%s\n' \
    '{"id":1,"tool":"write","args":{"path":"b.txt","content":"one two\n"}}' \
    '{"id":2,"tool":"edit","args":{"path":"b.txt","edits":[{"oldText":"two","newText":"three"}]}}' \
    '{"id":3,"tool":"read","args":{"path":"b.txt"}}' \
    '{"id":4,"tool":"ls","args":{}}' \
    '{"id":5,"tool":"find","args":{"pattern":"*.txt"}}' \
    '{"id":6,"tool":"grep","args":{"pattern":"three"}}' \
    '{"id":7,"tool":"bash","args":{"command":"cat b.txt"}}' \
    '{"id":8,"tool":"write","args":{"path":"/etc/cordon-vmsec","content":"x"}}' |
    "$CORDON" tool --backend vm --batch
}
bg_start tools "$tw" tools_batch

# --- boot 1: `cordon run`: filesystem, protected paths, syscalls, identity,
# environment, network, processes; QEMU inspected from the host meanwhile ---
rm -f "$repo/ready" "$repo/go"
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
sudo -n true >/dev/null 2>&1; echo "sudo_rc=$?"
{ echo h > /proc/sysrq-trigger; } 2>/dev/null; echo "sysrq=$?"
{ echo evil > /proc/sys/kernel/hostname; } 2>/dev/null; echo "hostname_write=$?"
echo "env_flagged=$(env | grep -cE "^(DOCKER_|COMPOSE_|CORDON_SENTINEL)")"
timeout 5 bash -c "echo x > /dev/tcp/127.0.0.1/'"$port"'" 2>/dev/null; echo "tcp_lo=$?"
timeout 5 bash -c "echo x > /dev/tcp/'"$host_ip"'/'"$port"'" 2>/dev/null; echo "tcp_ip=$?"
echo "net_devices=$(ls /sys/class/net | tr "\n" " ")"
echo "boot_id=$(cat /proc/sys/kernel/random/boot_id)"
echo "hostpid='"$$"' $(cat /proc/'"$$"'/comm 2>&1) $(cat /proc/'"$$"'/environ 2>&1 | tr "\0" " " | grep -c DOCKER_HOST)"
touch ready
for i in $(seq 600); do [ -e go ] && break; sleep 0.1; done
echo done=1'
(cd "$repo" && PWD="$repo" HOME="$fakehome" DOCKER_HOST=tcp://cordon-sentinel:2375 \
    CORDON_SENTINEL_VMSEC=leak "$CORDON" run --backend vm -- bash -c "$script" \
    > "$TEST_TMP/boot1.out" 2>&1 </dev/null; echo "rc=$?" >> "$TEST_TMP/boot1.out") &
run_pid=$!
cleanup_pids+=("$run_pid")
for _ in $(seq 1200); do [ -e "$repo/ready" ] && break; sleep 0.1; done
qemu=$(pgrep -n -f "^qemu-system-x86_64 .*path=$repo,")
if [ -e "$repo/ready" ] && [ -n "$qemu" ]; then
    # Case 38 (H) and the host half of case 23: the process the host runs
    # for the guest holds no secret and no privilege.
    qenv=$(tr '\0' '\n' < "/proc/$qemu/environ")
    unlike "case 38: QEMU's environment holds no host sentinel" "$qenv" "DOCKER_HOST|CORDON_SENTINEL|^HOME="
    qstatus=$(grep -E '^(CapPrm|CapEff|CapBnd|NoNewPrivs|Seccomp):' "/proc/$qemu/status" | tr -d '\t')
    like "case 23: QEMU holds no capability" "$qstatus" "CapPrm:0+
CapEff:0+"
    # Emptied as root, and unprivileged when QEMU got a user namespace
    # (vm-protect.c: the guest runs Docker and a protected path exists, as
    # here); otherwise the unprivileged default, which grants nothing
    # (docs/vm-backend.md).
    if is_root || [ -x /usr/sbin/dockerd ]; then
        like "case 23: QEMU's bounding set is empty" "$qstatus" "CapBnd:0+
"
    else
        skip "case 23: QEMU's bounding set is empty" "unprivileged without a guest Docker daemon: QEMU gets no user namespace"
    fi
    like "case 23: QEMU has no_new_privs and its seccomp filter" "$qstatus" "NoNewPrivs:1
Seccomp:2"
else
    fail "boot 1 reached its checkpoint" "$(cat "$TEST_TMP/boot1.out")"
fi
touch "$repo/go"
wait "$run_pid"
out=$(cat "$TEST_TMP/boot1.out")
is "boot 1 ran to its end" "$(val done)" 1
is "boot 1 exits 0" "$(val rc)" 0
is "the guest user's uid is the host user's" "$(val uid)" "$(id -u)"

# case 1
is "case 1: home is the guest's (the write is allowed there)" "$(val home_write)" ok
like "case 1: /etc is read-only" "$out" "ro:touch: cannot touch '/etc/$marker': Read-only file system"
like "case 1: /usr is read-only" "$out" "ro:touch: cannot touch '/usr/$marker': Read-only file system"
like "case 1: / is read-only" "$out" "ro:touch: cannot touch '/$marker': Read-only file system"
ok "case 1: nothing created on the host" test ! -e "$fakehome/$marker" -a ! -e "/etc/$marker" -a ! -e "/usr/$marker" -a ! -e "/$marker"
# case 2
unlike "case 2: planted secrets are not visible" "$out" "KEY-SENTINEL|AWS-SENTINEL|DOCKER-SENTINEL"
like "case 2: ~/.ssh is absent" "$out" "secret:cat: $fakehome/.ssh/id_ed25519: No such file or directory"
is "case 2: /etc/shadow is absent" "$(val shadow)" "cat: /etc/shadow: No such file or directory"
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
is "case 6: .git/config unchanged on the host" "$(sha256sum < "$repo/.git/config")" "$config_before"
# cases 16-20, 24, 25: the ns backend's filter in the guest
for p in keyctl add_key request_key; do is "case 16: $p -> EPERM" "$(val $p)" EPERM; done
for p in bpf userfaultfd perf_event_open io_uring_setup; do is "case 18: $p -> EPERM" "$(val $p)" EPERM; done
for p in mount_tmpfs pivot_root chroot; do is "case 19: $p -> EPERM" "$(val $p)" EPERM; done
for p in unshare_user unshare_mount clone_newuser; do is "case 20: $p -> EPERM" "$(val $p)" EPERM; done
is "case 20: setns -> EPERM" "$(val setns)" EPERM
is "case 17: ptrace attach to the guest's PID 1 -> EPERM" "$(val ptrace)" EPERM
for p in socket_vsock socket_netlink_audit; do is "case 24: $p -> EPERM" "$(val $p)" EPERM; done
for p in kexec_load init_module finit_module reboot swapon acct syslog open_by_handle_at; do
    is "case 25: $p -> EPERM" "$(val $p)" EPERM
done
# case 23
for c in CapInh CapPrm CapEff CapBnd CapAmb; do
    is "case 23: $c all zero inside" "$(val $c)" 0000000000000000
done
is "case 23: NoNewPrivs inside" "$(val NoNewPrivs)" 1
is "case 23: seccomp filter mode inside" "$(val Seccomp)" 2
if is_root; then
    skip "case 23: sudo -n true fails" "the guest user is root (without capabilities) when cordon runs as root"
else
    isnt_zero=$(val sudo_rc)
    ok "case 23: sudo -n true fails (status $isnt_zero)" test "$isnt_zero" != 0
fi
# case 14
is "case 14: /proc/sysrq-trigger cannot be written" "$(val sysrq)" 1
is "case 14: /proc/sys/kernel/hostname cannot be written" "$(val hostname_write)" 1
is "case 14: the host's hostname is unchanged" "$(cat /proc/sys/kernel/hostname)" "$hostname_before"
# case 38
is "case 38: no DOCKER_*/COMPOSE_*/sentinel variable inside" "$(val env_flagged)" 0
# case 35
is "case 35: 127.0.0.1:<host listener port> is the guest's own loopback: refused" "$(val tcp_lo)" 1
is "case 35: the host's address $host_ip is unreachable" "$(val tcp_ip)" 1
is "case 35: no network device but lo" "$(val net_devices)" "lo "
ok "case 35: the host listener accepted nothing" test ! -e "$accepted"
# cases 26, 39
guest_boot=$(val boot_id)
if [ -n "$guest_boot" ] && [ "$guest_boot" != "$(cat /proc/sys/kernel/random/boot_id)" ]; then
    pass "case 26: the guest's processes are another kernel's (boot_id differs)"
else
    fail "case 26: the guest's processes are another kernel's (boot_id differs)" "guest: $guest_boot"
fi
hostpid=$(val hostpid)
unlike "case 39: the host test shell's pid names nothing of the host's inside" "$hostpid" " bash | [1-9]"

# Boots 3 and 4 (checked below) run one after the other beside boot 2.
verifies() {
    bg_run verify "$repo" "$CORDON" verify --backend vm
    if [ "${CORDON_BUILDTYPE:-}" = debug ]; then
        bg_run verify-no-seccomp "$repo" env CORDON_TEST_VM_NO_SECCOMP=1 "$CORDON" verify --backend vm
    fi
}
bg_group verifies verifies

# --- boot 2: `cordon tool`: the agent's bash has the same restrictions ---
out=$(cd "$repo" && PWD="$repo" DOCKER_HOST=tcp://cordon-sentinel:2375 "$CORDON" tool --backend vm bash \
    '{"command":"grep -E \"^(CapEff|CapBnd|NoNewPrivs|Seccomp):\" /proc/self/status | tr -d \"\\t\" | tr \"\\n\" \" \"; echo; ./probe keyctl; ./probe umount .git/hooks; echo evil > .git/hooks/pre-commit; env | grep -c DOCKER_"}' 2>&1)
is "boot 2: cordon tool exits 0" "$?" 0
like "case 23 (bash tool): no capabilities, no_new_privs, seccomp" "$out" "CapEff:0{16} CapBnd:0{16} NoNewPrivs:1 Seccomp:2"
like "case 16/19 (bash tool): keyctl and umount of .git/hooks -> EPERM" "$out" 'EPERM\\nEPERM\\n'
like "case 6 (bash tool): .git/hooks is read-only" "$out" "pre-commit: Read-only file system"
like "case 38 (bash tool): no DOCKER_ variable" "$out" '\\n0\\n'
ok "case 6 (bash tool): no hook planted on the host" test ! -e "$repo/.git/hooks/pre-commit"
# The guest's Docker daemon still answers the confined bash tool: the socket
# is root:<user's gid> 0660, reached as its owner (uid 0, no capability
# needed) or through the group.
if [ -x /usr/sbin/dockerd ] && command -v docker >/dev/null; then
    out=$(cd "$repo" && PWD="$repo" "$CORDON" tool --backend vm bash \
        '{"command":"docker version --format \"server={{.Server.Version}}\"; echo rc=$?","timeout":150}' 2>&1)
    like "the bash tool's docker CLI reaches the guest's daemon" "$out" 'server=[0-9][^\]*\\nrc=0'
else
    skip "the bash tool's docker CLI reaches the guest's daemon" "no dockerd/docker on this host"
fi

# --- boot 2b: the seven tools, confined agent and all, in one session ---
bg_wait tools
like "tools: write" "$out" '"id":1,"content":\[\{"type":"text","text":"Successfully wrote 8 bytes to b.txt"'
like "tools: edit" "$out" '"id":2,"content":\[\{"type":"text","text":"Successfully replaced 1 block'
like "tools: read" "$out" '"id":3,"content":\[\{"type":"text","text":"one three\\n"'
like "tools: ls" "$out" '"id":4,"content":\[\{"type":"text","text":"a.txt\\nb.txt"'
like "tools: find" "$out" '"id":5,"content":\[\{"type":"text","text":"a.txt\\nb.txt"'
like "tools: grep" "$out" '"id":6,"content":\[\{"type":"text","text":"b.txt:1: one three"'
like "tools: bash" "$out" '"id":7,"content":\[\{"type":"text","text":"one three\\n"'
like "case 1 (write tool): /etc is read-only" "$out" '"id":8,"content":\[\{"type":"text","text":"EROFS: read-only file system'
is "tools: the edit reached the host" "$(cat "$tw/b.txt")" "one three"
ok "case 1 (write tool): nothing created on the host" test ! -e /etc/cordon-vmsec

# --- boot 3: `cordon verify --backend vm` passes here ---
bg_wait verifies
bg_result verify
is "verify --backend vm exits 0" "$rc" 0
unlike "verify --backend vm: no FAIL row" "$out" "^FAIL"
like "verify --backend vm: the namespaces row shows the kernel boundary" "$out" "PASS  namespaces +kernel boundary \(microVM\): boot_id inside"
like "verify --backend vm: QEMU's capabilities from the host" "$out" "PASS  capabilities +QEMU \(from the host\): CapPrm 0+ "

# --- boot 4: a guest without its seccomp filter makes verify FAIL ---
if [ "${CORDON_BUILDTYPE:-}" = debug ]; then
    bg_result verify-no-seccomp
    is "no in-guest seccomp: verify exits 1" "$rc" 1
    like "no in-guest seccomp: the seccomp row FAILs with the evidence" "$out" \
        "FAIL  seccomp +QEMU .*inside the guest: Seccomp 0, 0 filter\(s\); keyctl\(invalid\) -> E[A-Z]+ "
    like "no in-guest seccomp: only that row fails" "$out" "result: FAIL \(1 failed"
else
    skip "no in-guest seccomp: verify FAILs" "the test hook CORDON_TEST_VM_NO_SECCOMP exists in debug builds only"
fi

tap_done
