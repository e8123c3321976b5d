#!/usr/bin/env bash
# Bounded resources and a secret-free /etc (issue 14, vectors 6 and 7), on
# the ns backend, as root and unprivileged:
# - each writable tmpfs (/tmp, /var/tmp, /run, /dev/shm, the home) stops at
#   limits.tmpfs_mib with "No space left on device" and at
#   limits.tmpfs_inodes files; df inside shows the configured size; a
#   configuration whose tmpfs total exceeds limits.memory_mib is refused;
# - `cordon mcp` with a client that stops reading while bash calls print as
#   fast as they can keeps its memory flat and still delivers every result;
# - secret-bearing files of the host's /etc (environment, gitconfig, wgetrc,
#   profile.d) are not in the sandbox's /etc; etc.extra from the user's
#   configuration adds one back, the workspace file cannot, and no path
#   leaves /etc. As root the test plants sentinels in the host's /etc and
#   restores every file at exit.
# The vm backend's console cap is tests/unit/backend/vm/test-log-keeper.c plus the
# vm section below when QEMU and a guest kernel are there (root: the guest's
# root owns /dev/ttyS0); docker's tmpfs is tests/security/bounds-docker.sh.
. "$CORDON_SRC/tests/lib/tap.sh"
. "$CORDON_SRC/tests/lib/cordon.sh"

mkdir -p "$TEST_TMP/xdg/cordon" "$TEST_TMP/runtime"
chmod 700 "$TEST_TMP/runtime"
export XDG_CONFIG_HOME=$TEST_TMP/xdg XDG_RUNTIME_DIR=$TEST_TMP/runtime
ws=$(new_ws ws)
ws=$(cd "$ws" && pwd -P)

# The /etc sentinels are planted first (checked in the /etc section below),
# so that the vm section's boot, which sees them too, can start here and run
# beside the ns sections (one vCPU under TCG: the other core is free).
sentinel="cordon-etc-secret-$$-$RANDOM"
planted=(/etc/environment /etc/gitconfig /etc/wgetrc /etc/profile.d/zz-cordon-test.sh)
backup="$TEST_TMP/etc-backup"
restore_etc() {
    local f
    for f in "${planted[@]}"; do
        if [ -e "$backup$f" ]; then
            cp -a "$backup$f" "$f"
        elif [ -e "$backup$f.absent" ]; then
            rm -f "$f"
        fi
    done
    rm -f /etc/cordon-bounds-link
}
if is_root; then
    mkdir -p "$backup/etc/profile.d"
    trap 'restore_etc; test_cleanup' EXIT
    for f in "${planted[@]}"; do
        if [ -e "$f" ]; then cp -a "$f" "$backup$f"; else : >"$backup$f.absent"; fi
    done
    mkdir -p /etc/profile.d
    echo "CORDON_BOUNDS_TOKEN=$sentinel" >>/etc/environment
    printf '[http]\n\textraHeader = Authorization: Bearer %s\n' "$sentinel" >>/etc/gitconfig
    echo "http_proxy = http://user:$sentinel@proxy.invalid:3128/" >>/etc/wgetrc
    echo "export CORDON_BOUNDS_TOKEN=$sentinel" >/etc/profile.d/zz-cordon-test.sh
fi
vm_ok=
if command -v qemu-system-x86_64 >/dev/null && { [ -e /var/cache/cordon/vm/current/vmlinuz ] || [ -n "${CORDON_VM_DIR:-}" ]; }; then
    vm_ok=1
    name="bounds-vm-$$"
    # 24 MiB into the serial port, then hold the session open while the host
    # looks at its state directory (which it does after the ns sections).
    # The same boot checks the guest's tmpfs bounds and /etc.
    (cd "$ws" && timeout 600 "$CORDON" run --backend vm --name "$name" \
        --set limits.tmpfs_mib=48 --set 'etc.extra=["gitconfig"]' -- bash -c '
        for d in /tmp /var/tmp /run /dev/shm "$HOME"; do
            echo "vm-df $d=$(df -m --output=size "$d" | tail -1 | tr -d " ")"
        done
        dd if=/dev/zero of=/tmp/fill bs=1M count=64 2>&1 | grep -o "No space left on device"
        rm -f /tmp/fill
        for f in environment gitconfig wgetrc profile.d; do [ -e "/etc/$f" ] && echo "vm-etc: $f"; done
        head -c 25165824 /dev/zero | tr "\0" x >/dev/ttyS0; echo "flood rc=$?"
        echo "guest-last-words" >/dev/ttyS0
        touch flooded; for i in $(seq 1500); do [ -e done ] && break; sleep 0.2; done' \
        >"$TEST_TMP/vm.out" 2>&1 </dev/null) &
    vm_pid=$!
    cleanup_pids+=("$vm_pid")
    # Its configuration is read before the ns sections write theirs.
    for _ in $(seq 200); do [ -d "$XDG_RUNTIME_DIR/cordon/$name" ] && break; sleep 0.05; done
fi

# ---------- tmpfs sizes ----------
# 48 MiB into each writable tmpfs of a sandbox whose tmpfs are 32 MiB.
fill_script='
for d in /tmp /var/tmp /run /dev/shm "$HOME"; do
    label=$d; [ "$d" = "$HOME" ] && label=HOME
    dd if=/dev/zero of="$d/fill" bs=1M count=48 2>"$PWD/dd.err" >/dev/null
    echo "$label rc=$? size=$(($(stat -c %s "$d/fill") >> 20)) err=$(grep -o "No space left on device" "$PWD/dd.err" | head -1)"
    rm -f "$d/fill"
    echo "$label df=$(df -m --output=size "$d" | tail -1 | tr -d " ")"
done'
cordon_run "$ws" --set limits.tmpfs_mib=32 -- bash -c "$fill_script"
for d in /tmp /var/tmp /run /dev/shm HOME; do
    like "tmpfs $d: dd past limits.tmpfs_mib = 32 fails with ENOSPC" "$(grep "^$d rc=" <<<"$out")" \
        "^$d rc=1 size=3[12] err=No space left on device$"
    is "tmpfs $d: df shows the configured 32 MiB" "$(grep "^$d df=" <<<"$out")" "$d df=32"
done
rm -f "$ws/dd.err"

# The default: an eighth of limits.memory_mib (4096 -> 512 MiB), and
# limits.memory_mib changes it.
cordon_run "$ws" -- df -m --output=size /tmp
is "default: each tmpfs is an eighth of the default 4096 MiB memory" "$(tail -1 <<<"$out" | tr -d ' ')" "512"
cordon_run "$ws" --memory 1024 -- df -m --output=size /dev/shm
is "--memory 1024 gives 128 MiB tmpfs" "$(tail -1 <<<"$out" | tr -d ' ')" "128"

# Inodes: files past limits.tmpfs_inodes fail.
cordon_run "$ws" --set limits.tmpfs_inodes=1024 -- bash -c '
    i=0; while [ $i -lt 1100 ] && : 2>/tmp/err >"/tmp/f$i"; do i=$((i+1)); done
    echo "created=$i"; cat /tmp/err; echo "itotal=$(df --output=itotal /tmp | tail -1 | tr -d " ")"'
like "inodes: creating files stops before limits.tmpfs_inodes = 1024" "$out" "created=10[0-2][0-9]"
like "inodes: ... with No space left on device" "$out" "No space left on device"
like "inodes: df shows 1024 inodes" "$out" "itotal=1024"

# The budget: five tmpfs of tmpfs_mib must fit in limits.memory_mib.
cordon_run "$ws" --memory 1000 --set limits.tmpfs_mib=300 -- echo ran
is "a tmpfs total over limits.memory_mib is refused (125)" "$rc" 125
like "... naming both keys and the most that fits" "$out" \
    "limits.tmpfs_mib = 300 .*1500 MiB.* exceed limits.memory_mib = 1000; lower limits.tmpfs_mib to at most 200"
unlike "... and nothing ran" "$out" "^ran$"
cordon_run "$ws" --memory 1000 --set limits.tmpfs_mib=200 -- echo ran
is "five tmpfs of exactly a fifth of memory start" "$out" "ran"

# ---------- cordon mcp and a client that does not read ----------
# The client starts 8 bash calls with progress tokens, each printing 1000-byte
# lines as fast as it can for 18 s, reads nothing for 15 s while it samples
# cordon's VmRSS, then reads. Unbounded, the queue grew by 33 MiB here in
# those 15 s (865 notifications); held, by 3 MiB. ASan's quarantine (freed
# memory kept back, up to 256 MiB) is turned down so that RSS measures
# cordon's own memory.
out=$(cd "$ws" && ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}quarantine_size_mb=1:detect_leaks=0" \
    timeout 300 python3 "$CORDON_SRC/tests/security/bounds-mcp.py" "$CORDON" 15 8 2>&1)
obs() { sed -n "s/^$1=//p" <<<"$out" | head -1; }
is "mcp: the session started" "$(obs warm)" "yes"
growth=$(obs growth_mib)
peak=$(obs peak_rss_kib)
diag "mcp: VmRSS $(($(obs base_rss_kib) / 1024)) MiB at start, peak $((${peak:-0} / 1024)) MiB while the client did not read"
if [ -n "$growth" ] && [ "$growth" -lt 16 ] && [ "${peak:-0}" -lt $((64 * 1024)) ]; then
    pass "mcp: memory stays flat while the client does not read (grew ${growth} MiB, peak $((peak / 1024)) MiB)"
else
    fail "mcp: memory stays flat while the client does not read" "grew ${growth:-?} MiB, peak ${peak:-?} KiB"
fi
is "mcp: every call's final result arrives" "$(obs results)" "8"
is "mcp: ... whole (each ends with its marker)" "$(obs results_with_marker)" "8"
like "mcp: progress was delivered" "$(obs progress_seen)" "^[1-9]"
is "mcp: no progress after a call's result" "$(obs progress_after_result)" "0"
is "mcp: progress never goes backwards" "$(obs progress_backwards)" "0"
is "mcp: the server exits cleanly" "$(obs exit)" "0"

# ---------- /etc ----------
etc_script='
for f in environment gitconfig wgetrc subversion perl profile.d profile.d/zz-cordon-test.sh; do
    [ -e "/etc/$f" ] && echo "present: $f"
done
cat /etc/environment /etc/gitconfig /etc/wgetrc /etc/profile.d/zz-cordon-test.sh 2>/dev/null
bash -lc "echo login-token=\${CORDON_BOUNDS_TOKEN-unset}"
git config --system --list 2>/dev/null
echo end'
cordon_run "$ws" -- bash -c "$etc_script"
is "etc: the run works" "$rc" 0
unlike "etc: none of environment, gitconfig, wgetrc, subversion, perl, profile.d inside" "$out" "present:"
is "etc: a login shell gets no token from /etc/profile.d or /etc/environment" \
    "$(grep login-token <<<"$out")" "login-token=unset"
if is_root; then
    unlike "etc: the planted sentinels are nowhere in the sandbox's /etc" "$out" "$sentinel"
    cordon_run "$ws" -- bash -c 'grep -rl "'"$sentinel"'" /etc 2>/dev/null; echo end'
    is "etc: grep -r of the whole /etc finds no sentinel" "$out" "end"
else
    skip "etc: the planted sentinels are nowhere in the sandbox's /etc" "planting into the host's /etc needs root"
    skip "etc: grep -r of the whole /etc finds no sentinel" "planting into the host's /etc needs root"
fi
is "etc: the host's files are still there" "$(ls /etc/environment >/dev/null 2>&1 && echo yes)" "yes"

# etc.extra from the user's configuration adds entries back.
printf '[etc]\nextra = ["environment", "gitconfig"]\n' >"$XDG_CONFIG_HOME/cordon/config.toml"
cordon_run "$ws" -- bash -c 'ls /etc/environment /etc/gitconfig; [ -e /etc/wgetrc ] && echo wgetrc-present; cat /etc/environment /etc/gitconfig'
is "etc.extra in the user's config.toml shows environment" "$(grep -x /etc/environment <<<"$out")" "/etc/environment"
is "etc.extra ... and gitconfig" "$(grep -x /etc/gitconfig <<<"$out")" "/etc/gitconfig"
unlike "etc.extra: only what it names (wgetrc stays out)" "$out" "wgetrc-present"
if is_root; then
    like "etc.extra: the added file's content is the host's" "$out" "CORDON_BOUNDS_TOKEN=$sentinel"
    cordon_run "$ws" --set 'etc.extra=["profile.d/zz-cordon-test.sh"]' -- \
        bash -c 'ls /etc/profile.d; bash -lc "echo login-token=\${CORDON_BOUNDS_TOKEN-unset}"'
    is "etc.extra: a file below a directory that is out brings only that file" \
        "$(grep -v login-token <<<"$out")" "zz-cordon-test.sh"
    is "etc.extra: ... and a login shell reads it" "$(grep login-token <<<"$out")" "login-token=$sentinel"
else
    skip "etc.extra: the added file's content is the host's" "the sentinel is planted as root"
    skip "etc.extra: a file below a directory that is out brings only that file" "needs root to plant it"
    skip "etc.extra: ... and a login shell reads it" "needs root to plant it"
fi
rm -f "$XDG_CONFIG_HOME/cordon/config.toml"

# The workspace file may not add any.
printf '[etc]\nextra = ["gitconfig"]\n' >"$ws/.cordon.toml"
out=$(cd "$ws" && "$CORDON" trust 2>&1 </dev/null)
like "cordon trust's preview says the workspace's etc.extra would stop every session" "$out" \
    "etc.extra is refused in the workspace file"
(cd "$ws" && "$CORDON" trust --yes >/dev/null 2>&1)
cordon_run "$ws" -- echo ran
is "etc.extra in a trusted workspace file is refused (125)" "$rc" 125
like "... saying it is a user or host-owned setting" "$out" "etc.extra is refused in the workspace file"
rm -f "$ws/.cordon.toml"
(cd "$ws" && "$CORDON" untrust >/dev/null 2>&1)

# No path leaves /etc.
for bad in '../root/.ssh' '/root' 'ssh/ssh_host_ed25519_key' 'shadow' 'sudoers.d/x' 'ssl/private'; do
    cordon_run "$ws" --set "etc.extra=[\"$bad\"]" -- echo ran
    is "etc.extra = [\"$bad\"] is refused (125)" "$rc" 125
done
if is_root; then
    secretdir="$TEST_TMP/secretdir"
    mkdir -p "$secretdir" && echo "$sentinel" >"$secretdir/key"
    ln -s "$secretdir" /etc/cordon-bounds-link
    cordon_run "$ws" --set 'etc.extra=["cordon-bounds-link/key"]' -- echo ran
    is "etc.extra through a symlinked directory of /etc is refused (125)" "$rc" 125
    like "... naming the link" "$out" "/etc/cordon-bounds-link is a symlink"
    cordon_run "$ws" --set 'etc.extra=["cordon-bounds-link"]' -- bash -c 'cat /etc/cordon-bounds-link/key 2>&1; readlink /etc/cordon-bounds-link'
    unlike "etc.extra naming a symlink copies the link, resolved in the sandbox's view only" "$out" "$sentinel"
    like "... (the link is there, its target is not)" "$out" "No such file or directory"
    rm -f /etc/cordon-bounds-link
else
    skip "etc.extra through a symlinked directory of /etc is refused (125)" "a link in /etc needs root"
    skip "... naming the link" "a link in /etc needs root"
    skip "etc.extra naming a symlink copies the link, resolved in the sandbox's view only" "needs root"
    skip "... (the link is there, its target is not)" "needs root"
fi

# ---------- vm: the guest's console is capped ----------
if [ -z "$vm_ok" ]; then
    skip "vm: tmpfs, /etc and the console cap" "no QEMU or guest kernel"
else
    for _ in $(seq 600); do [ -e "$ws/flooded" ] && break; sleep 0.5; done
    sleep 1
    st="$XDG_RUNTIME_DIR/cordon/$name/vm"
    total=$(cat "$st"/console.log* 2>/dev/null | wc -c)
    diag "vm: console.log $(stat -c %s "$st/console.log" 2>/dev/null) bytes, console.log.1 $(stat -c %s "$st/console.log.1" 2>/dev/null) bytes"
    touch "$ws/done"
    wait "$vm_pid"
    vm_out=$(cat "$TEST_TMP/vm.out")
    is "vm: each guest tmpfs has limits.tmpfs_mib = 48" "$(grep -c "^vm-df .*=48$" <<<"$vm_out")" 5
    like "vm: dd past it fails with ENOSPC" "$vm_out" "No space left on device"
    is "vm: /etc has none of environment, wgetrc, profile.d; etc.extra brought gitconfig" \
        "$(grep "^vm-etc:" <<<"$vm_out" | tr "\n" " ")" "vm-etc: gitconfig "
    if is_root; then
        like "vm: the guest wrote 24 MiB to its serial port" "$vm_out" "flood rc=0"
        ok "vm: console.log and console.log.1 hold at most 2.2 MiB together ($total bytes)" \
            test "$total" -gt 0 -a "$total" -le 2306867
    else
        skip "vm: console.log stays capped while the guest floods /dev/ttyS0" "the guest's /dev/ttyS0 is root's (guest root as non-root needs the guest's docker: vm-docker.sh); tests/unit/backend/vm/test-log-keeper.c covers the cap"
    fi
    "$CORDON" rm "$name" >/dev/null 2>&1
fi

tap_done
