#!/usr/bin/env bash
# The cold-start benchmark's bubblewrap views (bench/lib.sh,
# bench/bwrap-view.py): "the same view" is the one cordon's sandbox has
# here, mount for mount (only /sys left out, and said so), with cordon's two
# seccomp programs and no capabilities; and bench/cold-start.sh, run by a
# relative path from another directory, reports both ratios (as root, for
# the unprivileged user too). Not a timing test: the figures are
# docs/benchmarks.md's.
. "$CORDON_SRC/tests/lib/tap.sh"
. "$CORDON_SRC/tests/lib/cordon.sh"
command -v bwrap >/dev/null || { skip "bench views" "bubblewrap is not installed"; tap_done; }
ws=$(new_ws ws)
views=$TEST_TMP/views
mkdir -p "$views"
cd "$ws" || exit 1
# shellcheck source=bench/lib.sh
. "$CORDON_SRC/bench/lib.sh"
bench_bwrap_views "$CORDON" "$views"
like "the view leaves only /sys out, and says so" "$bench_bw_note" "left out for bubblewrap: /sys /sys/firmware"

# /proc/irq and /proc/bus: bubblewrap's --proc covers them by itself where
# it sees fit (not cordon's choice, not the translation's), so they are not
# compared.
mounts() { awk '$5 !~ "^/proc/(irq|bus|sysrq-trigger)$" {print $5}' | sort; }
cordon_mounts=$(mounts <"$views/mountinfo")
bw_mounts=$(bwrap "${bench_bw_same[@]}" /bin/cat /proc/self/mountinfo 10<"$bench_bpf_main" 11<"$bench_bpf_notify" | mounts)
like "cordon's view has its masks" "$cordon_mounts" "/proc/keys"
is "bubblewrap's same view: cordon's mount points but /sys" \
    "$(grep -v '^/sys' <<<"$cordon_mounts")" "$bw_mounts"
ro_of() { awk -v mp="$1" '$5 == mp {split($6, o, ","); print o[1]}'; }
for mp in / /etc /usr /dev /proc/acpi "$ws"; do
    is "read-only or not as in cordon's: $mp" \
        "$(bwrap "${bench_bw_same[@]}" /bin/cat /proc/self/mountinfo 10<"$bench_bpf_main" 11<"$bench_bpf_notify" | ro_of "$mp")" \
        "$(ro_of "$mp" <"$views/mountinfo")"
done
status=$(bwrap "${bench_bw_same[@]}" /bin/cat /proc/self/status 10<"$bench_bpf_main" 11<"$bench_bpf_notify")
like "bubblewrap's same view: cordon's two seccomp programs" "$status" "Seccomp_filters:[[:space:]]+2"
like "bubblewrap's same view: no capabilities" "$status" "CapEff:[[:space:]]+0{16}"
is "bubblewrap's same view: the workspace is the cwd" \
    "$(bwrap "${bench_bw_same[@]}" /bin/pwd 10<"$bench_bpf_main" 11<"$bench_bpf_notify")" "$ws"

# The script itself, by a relative path, from the source tree's parent.
out=$(cd "$CORDON_SRC/.." && RUNS=2 CORDON=$CORDON bash "$(basename "$CORDON_SRC")/bench/cold-start.sh" 2>&1)
rc=$?
is "cold-start.sh by a relative path exits 0" "$rc" 0
like "it reports the same-view ratio as $(id -un)" "$out" \
    "cold start as $(id -un),.*ratio cordon/bwrap, same view: [0-9.]+ \(target <= 0.8, issue 20\); minimal view: [0-9.]+"
if is_root && id cordon-test >/dev/null 2>&1; then
    like "and once more as the unprivileged user" "$out" \
        "cold start as cordon-test,.*ratio cordon/bwrap, same view: [0-9.]+"
fi
unlike "nothing went wrong on the way" "$out" "No such file|Permission denied|error|usage:"
[ "$rc" -eq 0 ] || diag "$out"
tap_done
