#!/usr/bin/env bash
# Integration: the vm backend's start from a snapshot (docs/vm-backend.md
# "Snapshot restore") as a user sees it. A session saves the parked guest
# when its configuration has no snapshot yet; later sessions restore it and
# are as fresh as a booted guest: another boot id, other random bytes and
# UUIDs, the host's clock, nothing of an earlier session outside the
# workspace. A damaged snapshot is not restored: the session boots normally
# and saves a good one. The curated /etc is a prepared copy per content,
# read-only to the guest. Twelve to sixteen boots/restores.
. "$CORDON_SRC/tests/lib/tap.sh"
. "$CORDON_SRC/tests/lib/cordon.sh"
. "$CORDON_SRC/tests/lib/fixtures.sh"
. "$CORDON_SRC/tests/lib/background.sh"

skip_without_vm

ws=$(new_ws vmsnap)
vm_run() { # vm_run CMD...: cordon --debug run --backend vm in the workspace
    out=$(cd "$ws" && PWD="$ws" "$CORDON" --debug run --backend vm -- "$@" 2>&1 </dev/null)
    rc=$?
}
# What a session reports about itself, and the host's clock around it.
probe='echo "boot_id=$(cat /proc/sys/kernel/random/boot_id)"
    echo "uuid=$(cat /proc/sys/kernel/random/uuid)"
    echo "random=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d " \n")"
    echo "clock=$(date +%s)"
    echo "earlier=$(ls /tmp/from-session-* 2>/dev/null | tr "\n" " ")"
    echo "secret" > /tmp/from-session-$1; echo "wrote=$1"'
field() { sed -n "s/^$1=//p" <<<"$2"; }
# ram_file digest FILE: a digest of a sparse file's data (the holes
# skipped); ram_file damage FILE: 16 bytes changed in the middle of it.
ram_file() {
    python3 - "$@" <<'PY'
import hashlib, os, sys
what, path = sys.argv[1], sys.argv[2]
fd, pos, extents = os.open(path, os.O_RDWR), 0, []
size = os.fstat(fd).st_size
while pos < size:
    try:
        pos = os.lseek(fd, pos, os.SEEK_DATA)
    except OSError:
        break
    end = os.lseek(fd, pos, os.SEEK_HOLE)
    extents.append((pos, end))
    pos = end
if what == "digest":
    h = hashlib.sha256()
    for start, end in extents:
        h.update(start.to_bytes(8, "little") + os.pread(fd, end - start, start))
    print(h.hexdigest())
else:
    start, end = extents[len(extents) // 2]
    os.pwrite(fd, b"X" * 16, start + (end - start) // 2)
PY
}
within() { # within A B SECONDS: |A - B| <= SECONDS
    local d=$(($1 - $2))
    [ "${d#-}" -le "$3" ]
}

# The cold boot of the last section (CORDON_VM_SNAPSHOT=0: it neither reads
# nor writes a snapshot) runs beside the snapshot sessions; it is done before
# the /etc section moves the prepared copy it would read.
cold_boot() { bg_run cold "$ws" env CORDON_VM_SNAPSHOT=0 "$CORDON" --debug run --backend vm -- true; }
bg_group cold-boot cold_boot

# --- session 0: saves a snapshot (or restores one an earlier run saved) ---
vm_run sh -c "$probe" sh 0
is "session 0 exits 0" "$rc" 0
like "session 0 starts from a snapshot or saves one (--debug says which)" "$out" \
    'vm: (snapshot saved to|restored from) '
snap=$(sed -n 's/.*vm: snapshot saved to \([^ ]*\) in .*/\1/p; s/.*vm: restored from \([^ ]*\) in .*/\1/p' <<<"$out" | head -1)
ram=${snap%.snap}.ram
if [ -n "$snap" ] && [ -f "$snap" ]; then
    is "the snapshot is the user's, mode 0600" "$(stat -c '%u %a' "$snap")" "$(id -u) 600"
    is "no temp file of the save is left" "$(ls "$(dirname "$snap")" | grep -c '\.snap\.')" 0
    # The guest's memory is a file beside it that a restore maps, not a
    # part of the stream it reads.
    is "the guest's memory is a file beside it, the user's, mode 0600" \
        "$(stat -c '%u %a' "$ram" 2>&1)" "$(id -u) 600"
    is "no temp memory file of the save is left" "$(ls "$(dirname "$snap")" | grep -c '\.ram\.')" 0
    size=$(stat -c %s "$snap")
    if [ "$size" -lt $((8 << 20)) ]; then
        pass "the stream is the device state only ($size bytes)"
    else
        fail "the stream is the device state only" "$size bytes"
    fi
    read -r apparent blocks < <(stat -c '%s %b' "$ram")
    if [ "$((blocks * 512))" -lt "$((apparent / 2))" ]; then
        pass "the memory file is sparse ($((blocks / 2048)) MiB of $((apparent >> 20)))"
    else
        fail "the memory file is sparse" "$blocks blocks of $apparent bytes"
    fi
    ram_before=$(ram_file digest "$ram")
else
    fail "the snapshot file exists" "path: '$snap'" "$out"
    fail "no temp file of the save is left"
fi

# --- sessions 1 and 2: restored, each as fresh as a booted guest ---
declare -A got
for s in 1 2; do
    before=$(date +%s)
    vm_run sh -c "$probe" sh "$s"
    after=$(date +%s)
    is "session $s exits 0" "$rc" 0
    like "session $s is restored from the snapshot" "$out" "vm: restored from $snap in [0-9]+ ms"
    like "the sandbox's description says it was restored" "$out" 'restored from a snapshot'
    like "session $s ran the command" "$out" "wrote=$s"
    is "session $s sees no file an earlier session wrote to /tmp" "$(field earlier "$out")" ""
    clock=$(field clock "$out")
    if [ -n "$clock" ] && within "$clock" "$before" $((after - before + 3)); then
        pass "session $s's clock is the host's ($clock, host $before..$after)"
    else
        fail "session $s's clock is the host's" "guest: '$clock'" "host: $before..$after"
    fi
    for k in boot_id uuid random; do
        got[$s.$k]=$(field $k "$out")
    done
    like "session $s has a boot id" "${got[$s.boot_id]}" '^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$'
done
for k in boot_id uuid random; do
    if [ -n "${got[1.$k]}" ] && [ "${got[1.$k]}" != "${got[2.$k]}" ]; then
        pass "two sessions from one snapshot differ in $k"
    else
        fail "two sessions from one snapshot differ in $k" "1: ${got[1.$k]}" "2: ${got[2.$k]}"
    fi
done

if [ -f "$ram" ]; then
    is "the sessions restored from it left its memory file as it was (copy-on-write)" \
        "$(ram_file digest "$ram")" "$ram_before"
fi

# --- a damaged snapshot: bytes of the guest's memory changed on disk ---
if [ -f "$snap" ]; then
    size=$(stat -c %s "$snap")
    printf 'XXXXXXXXXXXXXXXX' | dd of="$snap" bs=1 seek=$((size / 2)) conv=notrunc status=none
    vm_run sh -c 'echo "alive=$(cat /proc/sys/kernel/random/boot_id)"'
    is "the session after the damage exits 0" "$rc" 0
    like "it still runs the command" "$out" 'alive=[0-9a-f-]{36}'
    like "the damaged snapshot is refused, with the reason" "$out" \
        "snapshot $snap: its content does not match its checksum"
    unlike "it is not restored" "$out" 'vm: restored from'
    like "a good one is saved in its place" "$out" "vm: snapshot saved to $snap"
    # A header that says another format: the same.
    printf 'not-a-snapshot' | dd of="$snap" bs=1 seek=0 conv=notrunc status=none
    vm_run true
    like "a file without a valid header is refused" "$out" "snapshot $snap: no snapshot header"
    vm_run true
    like "and the next session restores the new one" "$out" "vm: restored from $snap"
    # The memory file: bytes changed, then the file gone.
    ram_file damage "$ram"
    vm_run sh -c 'echo "alive=$(cat /proc/sys/kernel/random/boot_id)"'
    like "a session after damage to the memory file still runs the command" "$out" \
        'alive=[0-9a-f-]{36}'
    like "the damaged memory file is refused, with the reason" "$out" \
        "snapshot $snap: its content does not match its checksum"
    unlike "... not restored" "$out" 'vm: restored from'
    like "... and a good snapshot saved in its place" "$out" "vm: snapshot saved to $snap"
    rm -f "$ram"
    vm_run true
    like "a snapshot without its memory file is refused, with the reason" "$out" \
        "snapshot $snap: its memory file is missing"
    like "... and saved anew" "$out" "vm: snapshot saved to $snap"
    vm_run true
    like "and the next session restores it" "$out" "vm: restored from $snap"
fi

bg_wait cold-boot

# --- the curated /etc: prepared once per content, read-only to the guest ---
etc_probe='ls -AR /etc | md5sum | cut -c1-32 | sed "s/^/listing=/"
    touch /etc/cordon-probe 2>/dev/null; echo "touch=$?"'
vm_run sh -c "$etc_probe"
is "a session with the prepared /etc exits 0" "$rc" 0
like "it uses the prepared /etc copy, said in --debug" "$out" 'vm: /etc: the prepared copy '
cache=$(sed -n 's/.*vm: \/etc: the prepared copy \([^ ]*\) (key.*/\1/p' <<<"$out" | head -1)
listing=$(field listing "$out")
is "the guest cannot write its /etc (the prepared copy)" "$(field touch "$out")" 1
if [ -n "$cache" ] && [ -d "$cache" ]; then
    is "nothing the guest tried reached the copy" "$(ls -A "$cache" | grep -c cordon-probe)" 0
    is "the copy is the user's, not writable by others" "$(stat -c '%u %a' "$cache")" "$(id -u) 755"
    is "its cache directory is 0700" "$(stat -c '%a' "$(dirname "$cache")")" 700
    # The same content through a session's own fresh copy: what the guest
    # sees is the copy etc_fill() makes, the cache changes nothing of it.
    mv "$cache" "$cache.moved"
    vm_run sh -c "$etc_probe"
    like "without it, the session fills its own copy" "$out" 'vm: /etc: no prepared copy'
    is "the guest's /etc is the same as from the prepared copy" "$(field listing "$out")" "$listing"
    like "and stores it for the next session" "$out" "vm: /etc: this session's copy is now the prepared $cache"
    rm -rf "$cache.moved"
    # A copy someone made writable to others is not used, and replaced.
    chmod 0775 "$cache"
    vm_run sh -c "$etc_probe"
    like "a copy writable by others is refused" "$out" "vm: /etc: $cache is writable by group or others"
    like "the session fills its own instead" "$out" 'vm: /etc: no prepared copy'
    is "... and sees the same /etc" "$(field listing "$out")" "$listing"
    is "... and the copy in place is 0755 again" "$(stat -c '%a' "$cache")" 755
else
    fail "the prepared /etc copy exists" "path: '$cache'" "$out"
fi
# A change of the host's /etc is a new key: the next session sees it (root
# only: it adds a file to the host's /etc, named etc.extra).
if [ "$(id -u)" = 0 ]; then
    extra=cordon-test-vmetc-$$
    echo vmetc-content-one >"/etc/$extra"
    etc_run() { out=$(cd "$ws" && PWD="$ws" "$CORDON" --debug run --backend vm --set "etc.extra=$extra" -- cat "/etc/$extra" 2>&1 </dev/null); }
    etc_run
    etc_run
    like "etc.extra: the second session uses the prepared copy" "$out" 'vm: /etc: the prepared copy '
    like "... which has the entry" "$out" vmetc-content-one
    sleep 0.01
    echo vmetc-content-two >"/etc/$extra"
    etc_run
    like "the host's entry changed: a fresh copy" "$out" 'vm: /etc: no prepared copy'
    like "... with the new content" "$out" vmetc-content-two
    unlike "... not the old" "$out" vmetc-content-one
    rm -f "/etc/$extra"
else
    skip "etc.extra: the second session uses the prepared copy" "root only (writes to /etc)"
    skip "... which has the entry" "root only"
    skip "the host's entry changed: a fresh copy" "root only"
    skip "... with the new content" "root only"
    skip "... not the old" "root only"
fi

# --- turned off: a normal boot ---
bg_result cold
(exit "$rc")
is "CORDON_VM_SNAPSHOT=0 still boots" "$?" 0
like "CORDON_VM_SNAPSHOT=0: no snapshot, said in --debug" "$out" \
    'no snapshot for this session \(CORDON_VM_SNAPSHOT=0\)'
unlike "CORDON_VM_SNAPSHOT=0: not restored" "$out" 'vm: restored from'
tap_done
