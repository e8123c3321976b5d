#!/usr/bin/env bash
# Start-up cost of a sandbox, ns vs vm backend booted cold
# (CORDON_VM_SNAPSHOT=0) vs vm restored from its snapshot, alternating in
# the same run and workspace: (1) wall time from `cordon run` to the first
# command's result (`uname -r` printed, cordon exited); (2) wall time from
# spawning `cordon mcp` to the first tool result (initialize, then `read`),
# and the per-call latency after that (bench/vm-start.py). Usage:
# bench/vm-start.sh [RUNS] (default 5); CORDON=path/to/cordon (default:
# build/cordon, the release build with the static agent, then
# build-test/cordon). The figures are only as quiet as the machine.
set -euo pipefail
# shellcheck source=bench/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$bench_src"
runs=${1:-5}
cordon=$bench_cordon
[ -x "$cordon" ] || [ -n "${CORDON:-}" ] || cordon=$PWD/build-test/cordon
[ -x "${cordon:-}" ] || { echo "vm-start: build cordon first (make)" >&2; exit 1; }
ws=$(mktemp -d "${TMPDIR:-/tmp}/cordon-bench.XXXXXX")
trap 'rm -rf "$ws"' EXIT

now_ms() { echo $(( $(date +%s%N) / 1000000 )); }

# once BACKEND: the time in ms of one run (vm-cold: vm without its snapshot)
once() {
    local backend=$1 t0 out snap=1
    [ "$backend" = vm-cold ] && backend=vm snap=0
    t0=$(now_ms)
    out=$(cd "$ws" && CORDON_VM_SNAPSHOT=$snap "$cordon" run --backend "$backend" -- uname -r 2>/dev/null </dev/null)
    [ -n "$out" ] || { echo "vm-start: $1 run failed" >&2; exit 1; }
    echo $(( $(now_ms) - t0 ))
}

summary() { # summary NAME TIMES...
    local name=$1; shift
    local n=$# min=$1 max=${!#} med
    local sorted=("$@")
    med=${sorted[$(( n / 2 ))]}
    printf '%-7s  runs %-3d  min %6d ms  median %6d ms  max %6d ms\n' "$name" "$n" "$min" "$med" "$max"
}

# One warm-up each: the vm backend builds and caches its initramfs and learns
# which accelerator works on the first run.
(cd "$ws" && "$cordon" run --backend ns -- true && "$cordon" run --backend vm -- true) </dev/null >/dev/null 2>&1 || true
accel=$(cd "$ws" && "$cordon" --debug run --backend vm -- true 2>&1 </dev/null |
    sed -n 's/.*booted in [0-9]* ms: //p')
# Alternating: a busy moment of the machine costs each alike.
ns=() vm_cold=() vm=()
for ((i = 0; i < runs; i++)); do
    ns+=("$(once ns)") vm_cold+=("$(once vm-cold)") vm+=("$(once vm)")
done
sorted() { printf '%s\n' "$@" | sort -n; }
mapfile -t ns < <(sorted "${ns[@]}")
mapfile -t vm_cold < <(sorted "${vm_cold[@]}")
mapfile -t vm < <(sorted "${vm[@]}")
echo "cordon run -- uname -r, start to result ($(nproc) host CPUs, load $(cut -d' ' -f1 /proc/loadavg))"
summary ns "${ns[@]}"
summary vm-cold "${vm_cold[@]}"
summary vm "${vm[@]}"
echo "vm: $accel"
echo
python3 bench/vm-start.py "$cordon" "$ws" "$runs" 5
