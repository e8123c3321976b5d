#!/usr/bin/env bash
# Cold start of `cordon run -- /bin/true` against bubblewrap, alternating the
# three in one run:
#   bwrap, same view   the view cordon's sandbox has (read from one of its
#                      sandboxes by bench/bwrap-view.py: the curated /etc and
#                      its binds, /dev, the tmpfs dirs, the workspace, /proc
#                      and its masks; /sys left out) with cordon's two seccomp
#                      programs and no capabilities: issue 20's target,
#                      cordon <= 0.8x of this
#   bwrap, minimal     user, mount, pid, net, ipc, uts namespaces; read-only
#                      /usr and /etc; tmpfs /tmp, /run, /var/tmp and home;
#                      the workspace; a new /proc and /dev; a new session:
#                      the lighter view the earlier rounds compared against
# Prints medians, both ratios and cordon's peak memory; with --markdown, a
# table for docs/benchmarks.md. Run as root, it measures once as root and
# once more as an unprivileged user (BENCH_USER, default cordon-test, when it
# exists): the two differ (as root, cordon also puts the sandbox in v1
# pids/memory cgroups; unprivileged, rlimits apply).
set -euo pipefail
runs=${RUNS:-40}
# shellcheck source=bench/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
self=$bench_here/$(basename "${BASH_SOURCE[0]}")
bench_need_cordon
cordon=$bench_cordon
command -v bwrap >/dev/null || { echo "bench: bwrap not installed" >&2; exit 1; }
ws=$(mktemp -d /tmp/cordon-bench.XXXXXX)
views=$(mktemp -d /tmp/cordon-bench-view.XXXXXX)
trap 'rm -rf "$ws" "$views"' EXIT
cd "$ws"
bench_bwrap_views "$cordon" "$views"

# $EPOCHREALTIME (no fork per timestamp) in microseconds.
now_us() { local t=${EPOCHREALTIME/./}; echo $((10#$t)); }
declare -a tc ts tm
# The order turns every round: whatever one start leaves running for a
# moment slows the next one, and a fixed order would charge it to one side.
for ((i = 0; i < runs; i++)); do
    for ((k = 0; k < 3; k++)); do
        t0=$(now_us)
        case $(((i + k) % 3)) in
        0) "$cordon" run -- /bin/true; tc+=($(($(now_us) - t0))) ;;
        1) bwrap "${bench_bw_same[@]}" /bin/true 10<"$bench_bpf_main" 11<"$bench_bpf_notify"
           ts+=($(($(now_us) - t0))) ;;
        2) bwrap "${bench_bw_min[@]}" /bin/true; tm+=($(($(now_us) - t0))) ;;
        esac
    done
done
median() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
p90() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {print a[int(NR*0.9)]}'; }
ratio() { awk -v c="$1" -v b="$2" 'BEGIN {printf "%.2f", c/b}'; }
mc=$(median "${tc[@]}"); ms=$(median "${ts[@]}"); mm=$(median "${tm[@]}")
peak=$( { /usr/bin/time -f '%M' "$cordon" run -- /bin/true; } 2>&1 | tail -1)
bwpeak=$( { /usr/bin/time -f '%M' bwrap "${bench_bw_same[@]}" /bin/true 10<"$bench_bpf_main" 11<"$bench_bpf_notify"; } 2>&1 | tail -1)
who=$(id -un)
if [ "${1:-}" = --markdown ]; then
    [ "${BENCH_NO_HEADER:-}" ] || {
        echo "| user | runs | cordon median (p90) | bwrap, same view (p90) | ratio, same view (target <= 0.8) | bwrap, minimal view (p90) | ratio, minimal view | cordon / bwrap peak RSS |"
        echo "| --- | --- | --- | --- | --- | --- | --- | --- |"
    }
    echo "| $who | $runs | ${mc} µs ($(p90 "${tc[@]}")) | ${ms} µs ($(p90 "${ts[@]}")) | $(ratio "$mc" "$ms") | ${mm} µs ($(p90 "${tm[@]}")) | $(ratio "$mc" "$mm") | ${peak} / ${bwpeak} KiB |"
else
    echo "cold start as $who, $runs runs each, alternating (load $(cut -d' ' -f1 /proc/loadavg))"
    echo "  cordon run -- /bin/true: median ${mc} µs (p90 $(p90 "${tc[@]}") µs), peak RSS ${peak} KiB"
    echo "  bwrap, same view: median ${ms} µs (p90 $(p90 "${ts[@]}") µs), peak RSS ${bwpeak} KiB"
    echo "  bwrap, minimal view: median ${mm} µs (p90 $(p90 "${tm[@]}") µs)"
    echo "  ratio cordon/bwrap, same view: $(ratio "$mc" "$ms") (target <= 0.8, issue 20); minimal view: $(ratio "$mc" "$mm")"
    [ -z "$bench_bw_note" ] || echo "  bwrap's same view: $bench_bw_note"
fi

# As root: once more as an unprivileged user, from a copy it can run.
user=${BENCH_USER:-cordon-test}
if [ "$(id -u)" -eq 0 ] && [ -z "${BENCH_NESTED:-}" ] && id "$user" >/dev/null 2>&1; then
    stage=$(mktemp -d /tmp/cordon-bench-bin.XXXXXX)
    chmod 755 "$stage"
    # The source tree may be where the user cannot read (a clone under
    # /root): the user runs copies, from a directory it can enter.
    cp "$cordon" "$(dirname "$cordon")/cordon-agent" "$self" "$bench_here/lib.sh" \
        "$bench_here/bwrap-view.py" "$stage/"
    for x in "$(dirname "$cordon")/bench/seccomp-export" "$bench_build/bench/seccomp-export"; do
        [ -x "$x" ] && { cp "$x" "$stage/"; break; }
    done
    chmod 755 "$stage"/*
    (cd / && runuser -u "$user" -- env BENCH_NESTED=1 BENCH_NO_HEADER=1 RUNS="$runs" \
        CORDON="$stage/cordon" bash "$stage/$(basename "$self")" "$@") || true
    rm -rf "$stage"
fi
