#!/usr/bin/env bash
# Review mode's cost (docs/review.md, docs/benchmarks.md):
#  1. the checkpoint after each routed tool call, time and space, for a small
#     change (an edit of one file, a bash command rewriting three) on a
#     50,000-file workspace (bench/gen-tree.py), from cordon's own
#     "timing: checkpoint" debug line;
#  2. building cordon itself (meson setup + ninja -j2, debug) in the sandbox
#     in direct mode and in review mode, alternating, RUNS_BUILD times each.
#     BACKEND=vm runs the builds on the vm backend (the guest builds with the
#     host's /usr over 9p; docker needs an image with a toolchain: not here).
# Usage: [RUNS_BUILD=N] [BACKEND=ns|vm] bench/review.sh [--no-build | --build-only]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/.." && pwd)
cordon=${CORDON:-$src/build/cordon}
[ -x "$cordon" ] || { echo "bench: build cordon first (make build)" >&2; exit 1; }
calls=${CALLS:-40}
runs_build=${RUNS_BUILD:-1}
backend=${BACKEND:-ns}
tmp=$(mktemp -d /var/tmp/cordon-bench-review.XXXXXX)
export XDG_RUNTIME_DIR="$tmp/runtime" XDG_STATE_HOME="$tmp/state"
mkdir -p "$XDG_RUNTIME_DIR" && chmod 700 "$XDG_RUNTIME_DIR"
trap 'rm -rf "$tmp"' EXIT

# --- 1. checkpoints ---
if [ "${1:-}" != --build-only ]; then
ws="$tmp/tree"
python3 "$here/gen-tree.py" "$ws" 50000 >/dev/null
nfiles=$(find "$ws" -type f | wc -l)
mapfile -t files < <(cd "$ws" && find d0 -name '*.c' | sort | sed -n 1,3p)
{
    for ((i = 1; i <= calls; i++)); do
        if ((i % 2)); then
            printf '{"id":%d,"tool":"write","args":{"path":"%s","content":"call %d\\n"}}\n' \
                "$i" "${files[0]}" "$i"
        else
            printf '{"id":%d,"tool":"bash","args":{"command":"for f in %s %s %s; do echo call %d >> $f; done"}}\n' \
                "$i" "${files[0]}" "${files[1]}" "${files[2]}" "$i"
        fi
    done
} >"$tmp/calls.jsonl"
(cd "$ws" && "$cordon" --debug tool --review --name bench --batch <"$tmp/calls.jsonl" \
    >/dev/null 2>"$tmp/debug.log")
mapfile -t us < <(grep -o 'timing: checkpoint [0-9]* [0-9]* us' "$tmp/debug.log" | awk '{print $4}' | sort -n)
n=${#us[@]}
[ "$n" -gt 0 ] || { echo "bench: no checkpoint timings (is --debug on?)" >&2; exit 1; }
ck="$XDG_RUNTIME_DIR/cordon/bench/review/checkpoints"
space_kib=$(du -sk "$ck" | awk '{print $1}')
echo "checkpoints: $n calls on a $nfiles-file workspace: median ${us[$((n / 2))]} us," \
    "p90 ${us[$((n * 9 / 10))]} us, max ${us[$((n - 1))]} us;" \
    "space $space_kib KiB for all $n ($(awk "BEGIN{printf \"%.1f\", $space_kib / $n}") KiB per call)"

fi
[ "${1:-}" = --no-build ] && exit 0

# --- 2. building cordon in direct and in review mode ---
bws="$tmp/build-ws"
mkdir -p "$bws"
git -C "$src" archive HEAD | tar -x -C "$bws"
build() { # build MODE-FLAGS...
    rm -rf "$bws/b"
    local t0=${EPOCHREALTIME/./}
    (cd "$bws" && "$cordon" run --backend "$backend" "$@" -- bash -c 'meson setup b --buildtype=debug >/dev/null &&
        ninja -C b -j2 cordon cordon-agent >/dev/null') || return 1
    local t1=${EPOCHREALTIME/./}
    echo $(((10#$t1 - 10#$t0) / 1000))
}
declare -a td tr
for ((i = 0; i < runs_build; i++)); do
    # alternating, the order flipped each round
    if ((i % 2)); then
        td+=("$(build)")
        tr+=("$(build --review --name "bench-build-$i")")
    else
        tr+=("$(build --review --name "bench-build-$i")")
        td+=("$(build)")
    fi
    "$cordon" discard "bench-build-$i" >/dev/null
done
med() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END{print a[int((NR+1)/2)]}'; }
d=$(med "${td[@]}") r=$(med "${tr[@]}")
echo "build of cordon on $backend (meson setup + ninja -j2): direct ${d} ms, review ${r} ms," \
    "ratio $(awk "BEGIN{printf \"%.3f\", $r / $d}") (runs: direct ${td[*]}; review ${tr[*]})"
