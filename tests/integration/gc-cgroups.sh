#!/usr/bin/env bash
# `cordon gc` and the cgroups of sandboxes that are starting (docs/design.md
# "Lifecycle"). A sandbox makes its cgroups before clone and its child joins
# them only after the id maps, so for that moment they are empty; `cordon
# gc` (run by hand, or by any session's start of another state root) must
# not take them away then: the start would fail with "cgroup: joining: ...
# No such device". What a killed supervisor left is still removed.
. "$CORDON_SRC/tests/lib/tap.sh"
. "$CORDON_SRC/tests/lib/cordon.sh"
export XDG_RUNTIME_DIR="$TEST_TMP/runtime"
mkdir -m 700 "$XDG_RUNTIME_DIR"
ws=$(new_ws ws)
base=/sys/fs/cgroup/pids/cordon
if ! is_root || ! mkdir -p "$base" 2>/dev/null || [ ! -w "$base" ]; then
    skip "gc and young cgroups" "needs root and the cgroup v1 pids hierarchy"
    tap_done
fi
gc() { (cd "$ws" && XDG_RUNTIME_DIR="$TEST_TMP/gc-root" "$CORDON" gc --hours 0 2>&1); }
mkdir -m 700 "$TEST_TMP/gc-root"

# A young empty cgroup (a sandbox starting, of another state root), an old
# one (its supervisor was killed an hour ago), and one a session that is
# starting again on a kept name finds left over: made young again.
young="$base/gc-young-$$" old="$base/gc-old-$$"
mkdir "$young" "$old"
cleanup_cgroups() { rmdir "$young" "$old" 2>/dev/null; }
trap cleanup_cgroups EXIT
touch -d '1 hour ago' "$old"
out=$(gc)
like "cordon gc runs" "$out" "removed [0-9]+ sandbox"
ok "a young empty cgroup (a sandbox starting) is left" test -d "$young"
ok "an old empty cgroup (a killed supervisor's) is removed" test ! -e "$old"

# A kept name's cgroup left by a killed supervisor: the next start makes it
# young again before its child joins.
kept="$base/gc-kept-$$"
mkdir "$kept"
touch -d '1 hour ago' "$kept"
(cd "$ws" && exec "$CORDON" run --name "gc-kept-$$" -- sleep 3 </dev/null >/dev/null 2>&1) &
kept_pid=$!
for _ in $(seq 100); do
    [ -n "$(cat "$kept/cgroup.procs" 2>/dev/null)" ] && break
    sleep 0.1
done
ok "a start on a name whose old cgroup was left: its command runs in it" test -n "$(cat "$kept/cgroup.procs" 2>/dev/null)"
age=$(($(date +%s) - $(stat -c %Y "$kept" 2>/dev/null || echo 0)))
ok "that cgroup was made young again (${age} s old)" test "$age" -lt 60
wait "$kept_pid"
is "that start: exit 0" "$?" 0
ok "the sandbox removed its cgroup at the end" test ! -e "$kept"

# The user's ordinary next step: sessions start while gc runs beside them
# (another state root's session start runs it), and every one starts.
( for _ in $(seq 400); do gc >/dev/null; done ) &
gc_pid=$!
failed=0 errs=
for i in $(seq 25); do
    cordon_run "$ws" -- true
    if [ "$rc" != 0 ]; then
        failed=$((failed + 1))
        errs="$errs $out"
    fi
done
kill "$gc_pid" 2>/dev/null
wait "$gc_pid" 2>/dev/null
is "25 starts while gc runs beside them: none fails" "$failed$errs" 0
tap_done
