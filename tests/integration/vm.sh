#!/usr/bin/env bash
# Integration: `cordon run --backend vm` as a user sees it. Each boot costs a
# few seconds under TCG, so the checks share few boots.
. "$CORDON_SRC/tests/lib/tap.sh"
. "$CORDON_SRC/tests/lib/cordon.sh"
. "$CORDON_SRC/tests/lib/fixtures.sh"

skip_without_vm

ws=$(new_ws vmws)
echo hello > "$ws/hello.txt"
vm_run() { # vm_run DIR [OPTIONS --] CMD...: like cordon_run, on the vm backend
    local d=$1; shift
    out=$(cd "$d" && PWD="$d" "$CORDON" --debug run --backend vm "$@" 2>&1 </dev/null)
    rc=$?
}

# --- boot 1: the kernel, the view, the accelerator ---
vm_run "$ws" -- bash -c '
    echo "kernel=$(uname -r)"
    echo "hello=$(cat hello.txt)"
    echo written > out.txt
    touch /usr/x 2>&1; touch /x 2>&1
    echo "home=$(ls -A "$HOME" | wc -l)"
    echo "net=$(ls /sys/class/net | tr "\n" " ")"
    echo "shadow=$(ls /etc/shadow 2>&1)"
    echo "pwd=$(pwd)"
    echo "tmp=$(touch /tmp/t && echo ok)"
    echo "docker=$(stat -f -c %T /var/lib/docker) $(ls -A /var/lib/docker | wc -l)"'
is "boot 1 exits 0" "$rc" 0
like "the guest runs its own kernel" "$out" "kernel=[^ ]+"
guest_kernel=$(sed -n 's/^kernel=//p' <<<"$out")
if [ -n "$guest_kernel" ] && [ "$guest_kernel" != "$(uname -r)" ]; then
    pass "guest kernel ($guest_kernel) differs from the host's ($(uname -r))"
else
    fail "guest kernel differs from the host's" "guest: $guest_kernel" "host: $(uname -r)"
fi
like "the workspace is shared" "$out" "hello=hello"
is "a workspace write lands on the host" "$(cat "$ws/out.txt" 2>&1)" "written"
like "/usr is read-only" "$out" "cannot touch '/usr/x': Read-only file system"
like "the root is read-only" "$out" "cannot touch '/x': Read-only file system"
like "home is empty" "$out" "home=0"
like "no network device but lo" "$out" "net=lo 
shadow="
like "no /etc/shadow" "$out" "shadow=ls: cannot access '/etc/shadow': No such file or directory"
like "starts in the workspace at its host path" "$out" "pwd=$ws"
like "/tmp is writable" "$out" "tmp=ok"
like "/var/lib/docker is a fresh tmpfs of the guest" "$out" "docker=tmpfs 0"
like "the accelerator is reported" "$out" "vm: booted in [0-9]+ ms: vm \((kvm|tcg), "
accel=$(sed -n 's/.*booted in [0-9]* ms: vm (\([a-z]*\),.*/\1/p' <<<"$out")
diag "accelerator: $accel; $(grep -o 'booted in [0-9]* ms' <<<"$out")"
if [ -e /dev/kvm ] && ls /var/cache/cordon/vm/current/kvm-broken-* >/dev/null 2>&1; then
    is "KVM known broken on this host: TCG used" "$accel" tcg
fi

# --- boot 1b: on a host whose KVM cannot run a stock guest, a KVM boot fails
# and is retried under TCG (CORDON_VM_ACCEL=kvm skips the cached verdict) ---
if [ -r /dev/kvm ] && [ -w /dev/kvm ] && ls /var/cache/cordon/vm/current/kvm-broken-* >/dev/null 2>&1; then
    out=$(cd "$ws" && CORDON_VM_ACCEL=kvm "$CORDON" --debug run --backend vm -- uname -r 2>&1 </dev/null)
    rc=$?
    is "a failed KVM boot falls back to TCG and runs the command" "$rc" 0
    like "the KVM failure is reported" "$out" "vm: KVM did not boot the guest .*; trying TCG"
    like "the fallback boot used TCG" "$out" "booted in [0-9]+ ms: vm \(tcg,"
else
    skip "KVM fallback" "KVM is usable here or not accessible"
fi

# --- boot 2: stdio, exit status, limits ---
out=$(cd "$ws" && echo piped-in | "$CORDON" run --backend vm --memory 700 --cpus 2 --open-files 321 \
    -- bash -c 'cat; echo err >&2; echo "mem=$(awk "/MemTotal/ {print int(\$2/1024)}" /proc/meminfo)"
                echo "cpus=$(nproc)"; echo "nofile=$(ulimit -n)"; exit 7' 2>"$TEST_TMP/err")
rc=$?
is "exit status comes back" "$rc" 7
like "stdin is relayed (once, no echo)" "$out" "^piped-in
mem="
is "stderr stays separate" "$(cat "$TEST_TMP/err")" "err"
mem=$(sed -n 's/^mem=//p' <<<"$out")
if [ -n "$mem" ] && [ "$mem" -le 700 ] && [ "$mem" -gt 400 ]; then
    pass "memory comes from --memory ($mem MiB visible of 700)"
else
    fail "memory comes from --memory" "MemTotal: $mem MiB"
fi
like "vCPUs come from --cpus" "$out" "cpus=2"
like "the open-files rlimit applies inside" "$out" "nofile=321"

# --- boot 3: a missing command; the backend chosen by CORDON_BACKEND ---
out=$(cd "$ws" && CORDON_BACKEND=vm "$CORDON" --debug run -- no-such-command-xyz 2>&1 </dev/null)
rc=$?
like "CORDON_BACKEND=vm selects the vm backend" "$out" "vm: booted in"
is "missing command exits 127" "$rc" 127
like "missing command is named" "$out" "no-such-command-xyz: No such file or directory"

# --- boot 4: the agent protocol over the virtio-serial channel (serve mode) ---
out=$(cd "$ws" && printf '%s\n' \
    '{"id":1,"tool":"bash","args":{"command":"uname -r; id -u; echo tool > tool.txt"}}' \
    '{"id":2,"tool":"read","args":{"path":"hello.txt"}}' |
    "$CORDON" tool --backend vm --batch 2>&1)
rc=$?
is "cordon tool --batch on the vm backend exits 0" "$rc" 0
like "bash runs in the guest kernel, as the invoking user" "$out" "\"id\":1,.*$guest_kernel\\\\n$(id -u)\\\\n"
like "read is served by the guest's agent" "$out" "\"id\":2,\"content\":\[\{\"type\":\"text\",\"text\":\"hello\\\\n\"\}\]"
is "a tool's write lands on the host" "$(cat "$ws/tool.txt" 2>&1)" "tool"

# --- boot 5: kill -9 of cordon takes QEMU down ---
rt5="$TEST_TMP/vm-runtime-run"
mkdir -p "$rt5" && chmod 700 "$rt5"
rm -f "$ws/vm-up"
(cd "$ws" && XDG_RUNTIME_DIR="$rt5" exec "$CORDON" run --backend vm -- bash -c "touch $ws/vm-up; exec sleep 300") </dev/null >/dev/null 2>&1 &
pid=$!
cleanup_pids+=("$pid")
qemu=""
for _ in $(seq 100); do
    qemu=$(pgrep -P "$pid" qemu-system-x86 | head -n1)
    [ -n "$qemu" ] && break
    sleep 0.05
done
if [ -z "$qemu" ]; then
    fail "QEMU runs as cordon's child"
else
    pass "QEMU runs as cordon's child"
    cleanup_pids+=("$qemu")
    # Killed once the guest runs the command (the watchdog is armed after
    # the boot; before, QEMU's PDEATHSIG alone covers it).
    for _ in $(seq 600); do [ -e "$ws/vm-up" ] && break; sleep 0.1; done
    kill -9 "$pid"
    wait "$pid" 2>/dev/null
    gone=no
    # Dead means gone or a zombie waiting for whoever reaps orphans here.
    for _ in $(seq 100); do
        state=$(awk '{print $3}' "/proc/$qemu/stat" 2>/dev/null)
        if [ -z "$state" ] || [ "$state" = Z ]; then gone=yes; break; fi
        sleep 0.05
    done
    is "kill -9 of cordon kills QEMU" "$gone" yes
    left=yes
    for _ in $(seq 100); do
        [ -z "$(ls "$rt5/cordon" 2>/dev/null | grep '^cordon-')" ] && { left=no; break; }
        sleep 0.05
    done
    is "kill -9 of cordon run: the watchdog removed the state" "$left" no
fi

# --- boot 6: kill -9 of `cordon mcp` mid-call: the watchdog kills QEMU and
# removes the session's state ---
rt="$TEST_TMP/vm-runtime"
mkdir -p "$rt" && chmod 700 "$rt"
out=$(cd "$ws" && XDG_RUNTIME_DIR="$rt" CORDON_BACKEND=vm PYTHONPATH="$CORDON_SRC/tests/lib" python3 -c "
import os, time, signal
from mcp_client import Mcp, text_of
m = Mcp('$CORDON', '$ws')
m.initialize()
print('first=' + str(text_of(m.call(1, 'bash', {'command': 'echo up'}, timeout=120))))
m.send({'jsonrpc': '2.0', 'id': 2, 'method': 'tools/call',
        'params': {'name': 'bash', 'arguments': {'command': 'sleep 300'}}})
time.sleep(1.0)
print('qemu=' + os.popen('pgrep -P %d qemu-system' % m.proc.pid).read().strip())
os.kill(m.proc.pid, signal.SIGKILL)
m.proc.wait()
" 2>&1)
like "mcp on the vm backend answers a call" "$out" "first=up"
qemu=$(sed -n 's/^qemu=//p' <<<"$out")
if [ -z "$qemu" ]; then
    fail "QEMU runs as the mcp supervisor's child" "$out"
else
    cleanup_pids+=("$qemu")
    gone=no
    for _ in $(seq 100); do
        state=$(awk '{print $3}' "/proc/$qemu/stat" 2>/dev/null)
        if [ -z "$state" ] || [ "$state" = Z ]; then gone=yes; break; fi
        sleep 0.05
    done
    is "kill -9 of cordon mcp mid-call: QEMU gone within 5 s" "$gone" yes
    left=yes
    for _ in $(seq 100); do
        [ -z "$(ls "$rt/cordon" 2>/dev/null | grep '^cordon-')" ] && { left=no; break; }
        sleep 0.05
    done
    is "the watchdog removed the vm session's state" "$left" no
fi

# --- [[mounts]] on the vm backend: shared as ns binds them, or no start ---
mnt_ro="$TEST_TMP/mnt-ro"; mnt_rw="$TEST_TMP/mnt-rw"
mkdir -p "$mnt_ro" "$mnt_rw"
echo ro-data >"$mnt_ro/f"
chmod 755 "$mnt_ro" "$mnt_rw"; chmod 777 "$mnt_rw"
mkdir -p "$TEST_TMP/xdgm/cordon"
printf '[[mounts]]\nhost_path = "%s"\nguest_path = "/opt/ro"\n[[mounts]]\nhost_path = "%s"\nguest_path = "/opt/rw"\nreadonly = false\n' \
    "$mnt_ro" "$mnt_rw" >"$TEST_TMP/xdgm/cordon/config.toml"
out=$(cd "$ws" && XDG_CONFIG_HOME="$TEST_TMP/xdgm" "$CORDON" run --backend vm -- bash -c '
    cat /opt/ro/f; echo x > /opt/ro/g 2>&1; echo vm-wrote > /opt/rw/w && echo rw=ok' 2>&1 </dev/null)
like "vm [[mounts]]: a read-only mount is shared" "$out" "ro-data"
like "vm [[mounts]]: ... and read-only" "$out" "/opt/ro/g: Read-only file system"
like "vm [[mounts]]: a readonly = false mount is writable" "$out" "rw=ok"
is "vm [[mounts]]: ... and the write lands on the host" "$(cat "$mnt_rw/w" 2>&1)" "vm-wrote"
printf '[[mounts]]\nhost_path = "%s"\nguest_path = "/opt/f"\n' "$mnt_ro/f" >"$TEST_TMP/xdgm/cordon/config.toml"
out=$(cd "$ws" && XDG_CONFIG_HOME="$TEST_TMP/xdgm" "$CORDON" run --backend vm -- true 2>&1 </dev/null)
rc=$?
is "vm [[mounts]]: a file mount is refused (exit 125), nothing runs" "$rc" 125
like "vm [[mounts]]: ... saying why" "$out" "the vm backend shares directories only"
rm -rf "$TEST_TMP/xdgm"

tap_done
