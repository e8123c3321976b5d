#!/usr/bin/env bash
# Two builds of cordon and bubblewrap, alternating in one run:
# `A run -- /bin/true`, `B run -- /bin/true`, then bwrap given
# bench/cold-start.sh's view; medians and both ratios to bwrap. For a
# before/after on a loaded machine, where only ratios inside one run mean
# anything. Usage: bench/cold-start-ab.sh CORDON_A CORDON_B (RUNS, default
# 30). As another user: copies of both builds (and their cordon-agent)
# where that user can read them, run from /.
set -euo pipefail
runs=${RUNS:-30}
[ $# -eq 2 ] || { echo "usage: $0 CORDON_A CORDON_B" >&2; exit 2; }
a=$1 b=$2
command -v bwrap >/dev/null || { echo "bench: bwrap not installed" >&2; exit 1; }
ws=$(mktemp -d /tmp/cordon-bench.XXXXXX)
trap 'rm -rf "$ws"' EXIT
cd "$ws"
bw=(--unshare-user --unshare-pid --unshare-net --unshare-ipc --unshare-uts
    --unshare-cgroup-try --die-with-parent --new-session
    --ro-bind /usr /usr --symlink usr/bin /bin --symlink usr/sbin /sbin
    --symlink usr/lib /lib --symlink usr/lib64 /lib64
    --ro-bind /etc /etc --tmpfs /tmp --tmpfs /run --tmpfs /var/tmp --tmpfs "$HOME"
    --bind "$ws" "$ws" --proc /proc --dev /dev --chdir "$ws")
now_us() { local t=${EPOCHREALTIME/./}; echo $((10#$t)); }
declare -a ta tb tw
# The order turns every round (A B bwrap, B bwrap A, bwrap A B): whatever
# one start leaves running for a moment (an exiting helper) slows the next
# one, and a fixed order charged that to one side (the second build was
# 15-20% slower in either order on the loaded machine).
for ((i = 0; i < runs; i++)); do
    for ((k = 0; k < 3; k++)); do
        case $(((i + k) % 3)) in
        0) t0=$(now_us); "$a" run -- /bin/true; ta+=($(($(now_us) - t0))) ;;
        1) t0=$(now_us); "$b" run -- /bin/true; tb+=($(($(now_us) - t0))) ;;
        2) t0=$(now_us); bwrap "${bw[@]}" /bin/true; tw+=($(($(now_us) - t0))) ;;
        esac
    done
done
median() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {printf "%d\n", (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
ma=$(median "${ta[@]}"); mb=$(median "${tb[@]}"); mw=$(median "${tw[@]}")
ratio() { awk -v x="$1" -v y="$2" 'BEGIN {printf "%.2f", x/y}'; }
echo "cold start as $(id -un), $runs runs each, alternating (load $(cut -d' ' -f1 /proc/loadavg))"
echo "  A $a: median $ma µs, $(ratio "$ma" "$mw")x bwrap"
echo "  B $b: median $mb µs, $(ratio "$mb" "$mw")x bwrap"
echo "  bwrap: median $mw µs"
