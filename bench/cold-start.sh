#!/usr/bin/env bash
# Cold start of `cordon run -- /bin/true` against bubblewrap given an
# equivalent view (user, mount, pid, net, ipc, uts namespaces; read-only
# system; tmpfs /tmp, /run, /var/tmp and home; the workspace bound read-write;
# a new /proc; minimal /dev; a new session), alternating the two in one run.
# Prints medians, the ratio and cordon's peak memory; with --markdown, a table
# for docs/benchmarks.md. Run as root, it measures once as root and once more
# as an unprivileged user (BENCH_USER, default cordon-test, when it exists):
# the two differ (as root, cordon also puts the sandbox in v1 pids/memory
# cgroups; unprivileged, rlimits apply).
set -euo pipefail
runs=${RUNS:-40}
# shellcheck source=bench/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
self=$bench_here/$(basename "${BASH_SOURCE[0]}")
bench_need_cordon
cordon=$bench_cordon
command -v bwrap >/dev/null || { echo "bench: bwrap not installed" >&2; exit 1; }
ws=$(mktemp -d /tmp/cordon-bench.XXXXXX)
trap 'rm -rf "$ws"' EXIT
cd "$ws"

bwrap_args=(--unshare-user --unshare-pid --unshare-net --unshare-ipc --unshare-uts
    --unshare-cgroup-try --die-with-parent --new-session
    --ro-bind /usr /usr --symlink usr/bin /bin --symlink usr/sbin /sbin
    --symlink usr/lib /lib --symlink usr/lib64 /lib64
    --ro-bind /etc /etc --tmpfs /tmp --tmpfs /run --tmpfs /var/tmp --tmpfs "$HOME"
    --bind "$ws" "$ws" --proc /proc --dev /dev --chdir "$ws")

# $EPOCHREALTIME (no fork per timestamp) in microseconds.
now_us() { local t=${EPOCHREALTIME/./}; echo $((10#$t)); }
declare -a tc tb
for ((i = 0; i < runs; i++)); do
    t0=$(now_us); "$cordon" run -- /bin/true; t1=$(now_us)
    bwrap "${bwrap_args[@]}" /bin/true; t2=$(now_us)
    tc+=($((t1 - t0))); tb+=($((t2 - t1)))
done
median() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
p90() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {print a[int(NR*0.9)]}'; }
mc=$(median "${tc[@]}"); mb=$(median "${tb[@]}")
ratio=$(awk -v c="$mc" -v b="$mb" 'BEGIN {printf "%.2f", c/b}')
peak=$( { /usr/bin/time -f '%M' "$cordon" run -- /bin/true; } 2>&1 | tail -1)
bwpeak=$( { /usr/bin/time -f '%M' bwrap "${bwrap_args[@]}" /bin/true; } 2>&1 | tail -1)
who=$(id -un)
if [ "${1:-}" = --markdown ]; then
    [ "${BENCH_NO_HEADER:-}" ] || {
        echo "| user | runs | cordon median | bwrap median | ratio (cordon/bwrap) | cordon p90 | bwrap p90 | cordon peak RSS | bwrap peak RSS |"
        echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"
    }
    echo "| $who | $runs | ${mc} µs | ${mb} µs | $ratio | $(p90 "${tc[@]}") µs | $(p90 "${tb[@]}") µs | ${peak} KiB | ${bwpeak} KiB |"
else
    echo "cold start as $who, $runs runs each, alternating"
    echo "  cordon run -- /bin/true: median ${mc} µs (p90 $(p90 "${tc[@]}") µs), peak RSS ${peak} KiB"
    echo "  bwrap (equivalent view): median ${mb} µs (p90 $(p90 "${tb[@]}") µs), peak RSS ${bwpeak} KiB"
    echo "  ratio cordon/bwrap: $ratio (target <= 0.8, issue 20)"
fi

# As root: once more as an unprivileged user, from a copy it can run.
user=${BENCH_USER:-cordon-test}
if [ "$(id -u)" -eq 0 ] && [ -z "${BENCH_NESTED:-}" ] && id "$user" >/dev/null 2>&1; then
    stage=$(mktemp -d /tmp/cordon-bench-bin.XXXXXX)
    chmod 755 "$stage"
    # The source tree may be where the user cannot read (a clone under
    # /root): the user runs copies, from a directory it can enter.
    cp "$cordon" "$(dirname "$cordon")/cordon-agent" "$self" "$bench_here/lib.sh" "$stage/"
    chmod 755 "$stage"/*
    (cd / && runuser -u "$user" -- env BENCH_NESTED=1 BENCH_NO_HEADER=1 RUNS="$runs" \
        CORDON="$stage/cordon" bash "$stage/$(basename "$self")" "$@") || true
    rm -rf "$stage"
fi
