#!/usr/bin/env bash
# Two builds of cordon and bubblewrap, alternating in one run:
# `A run -- /bin/true`, `B run -- /bin/true`, and bwrap given the two views
# of bench/cold-start.sh (the same view as B's sandbox, read from it, and
# the minimal one); medians and the ratios to both. For a before/after on a
# loaded machine, where only ratios inside one run mean anything. Usage:
# bench/cold-start-ab.sh CORDON_A CORDON_B (RUNS, default 30). As another
# user: copies of both builds (and their cordon-agent) where that user can
# read them, run from /.
set -euo pipefail
runs=${RUNS:-30}
[ $# -eq 2 ] || { echo "usage: $0 CORDON_A CORDON_B" >&2; exit 2; }
a=$1 b=$2
command -v bwrap >/dev/null || { echo "bench: bwrap not installed" >&2; exit 1; }
# shellcheck source=bench/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
a=$(bench_abs "$a") b=$(bench_abs "$b")
ws=$(mktemp -d /tmp/cordon-bench.XXXXXX)
views=$(mktemp -d /tmp/cordon-bench-view.XXXXXX)
trap 'rm -rf "$ws" "$views"' EXIT
cd "$ws"
bench_bwrap_views "$b" "$views"
now_us() { local t=${EPOCHREALTIME/./}; echo $((10#$t)); }
declare -a ta tb tw tm
# The order turns every round (A B bwrap bwrap-min, B bwrap bwrap-min A,
# ...): whatever
# one start leaves running for a moment (an exiting helper) slows the next
# one, and a fixed order charged that to one side (the second build was
# 15-20% slower in either order on the loaded machine).
for ((i = 0; i < runs; i++)); do
    for ((k = 0; k < 4; k++)); do
        case $(((i + k) % 4)) in
        0) t0=$(now_us); "$a" run -- /bin/true; ta+=($(($(now_us) - t0))) ;;
        1) t0=$(now_us); "$b" run -- /bin/true; tb+=($(($(now_us) - t0))) ;;
        2) t0=$(now_us); bwrap "${bench_bw_same[@]}" /bin/true 10<"$bench_bpf_main" 11<"$bench_bpf_notify"
           tw+=($(($(now_us) - t0))) ;;
        3) t0=$(now_us); bwrap "${bench_bw_min[@]}" /bin/true; tm+=($(($(now_us) - t0))) ;;
        esac
    done
done
median() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {printf "%d\n", (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
ma=$(median "${ta[@]}"); mb=$(median "${tb[@]}"); mw=$(median "${tw[@]}"); mm=$(median "${tm[@]}")
ratio() { awk -v x="$1" -v y="$2" 'BEGIN {printf "%.2f", x/y}'; }
echo "cold start as $(id -un), $runs runs each, alternating (load $(cut -d' ' -f1 /proc/loadavg))"
echo "  A $a: median $ma µs, $(ratio "$ma" "$mw")x bwrap same view, $(ratio "$ma" "$mm")x minimal"
echo "  B $b: median $mb µs, $(ratio "$mb" "$mw")x bwrap same view, $(ratio "$mb" "$mm")x minimal"
echo "  bwrap, same view (B's): median $mw µs; minimal view: median $mm µs"
