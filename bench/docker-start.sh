#!/usr/bin/env bash
# The docker backend's start against a bare `docker run --rm` of the same
# image: `cordon run --backend docker -- /bin/true` and
# `docker run --rm --network none IMAGE /bin/true`, alternating in one run,
# on a private dockerd (own socket, data-root and exec-root, no iptables, no
# bridge, as tests/lib/docker-backend.sh starts it) and an image of
# busybox-static and bash-static. Root only (a user who may talk to dockerd
# is root-equivalent). Prints medians and the ratio; --markdown, a table row
# for docs/benchmarks.md. RUNS (default 15).
set -euo pipefail
runs=${RUNS:-15}
# shellcheck source=bench/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
bench_need_cordon
cordon=$bench_cordon
[ "$(id -u)" -eq 0 ] || { echo "bench: docker-start.sh needs root (a private dockerd)" >&2; exit 1; }
for need in /usr/sbin/dockerd /bin/busybox /bin/bash-static; do
    [ -x "$need" ] || { echo "bench: $need missing (scripts/bootstrap.sh --test)" >&2; exit 1; }
done
command -v docker >/dev/null || { echo "bench: the docker CLI is missing" >&2; exit 1; }
# The docker backend copies the agent into the container: it must be static
# (the release build's).
file -L "$(dirname "$cordon")/cordon-agent" | grep -q "statically linked" ||
    { echo "bench: $(dirname "$cordon")/cordon-agent is not static (a release build: BUILDDIR=build-rel)" >&2; exit 1; }

tmp=$(mktemp -d /tmp/cordon-bench-docker.XXXXXX)
hd=$tmp/dockerd
mkdir -p "$hd" "$tmp/ws"
dockerd --iptables=false --bridge=none -H "unix://$hd/sock" --data-root "$hd/data" \
    --exec-root "$hd/exec" --pidfile "$hd/pid" >"$hd/log" 2>&1 &
dockerd_pid=$!
cleanup() {
    kill "$dockerd_pid" 2>/dev/null || true
    for _ in $(seq 1 50); do kill -0 "$dockerd_pid" 2>/dev/null || break; sleep 0.2; done
    kill -9 "$dockerd_pid" 2>/dev/null || true
    umount -R "$hd/exec" "$hd/data" 2>/dev/null || true
    rm -rf "$tmp"
}
trap cleanup EXIT
export DOCKER_HOST="unix://$hd/sock"
for _ in $(seq 1 100); do
    docker info --format '{{.ID}}' >/dev/null 2>&1 && break
    sleep 0.3
done
docker info --format '{{.ID}}' >/dev/null 2>&1 || { echo "bench: dockerd did not start: $(tail -3 "$hd/log")" >&2; exit 1; }

img=$tmp/img
mkdir -p "$img/bin" "$img/etc"
cp /bin/busybox "$img/bin/"
cp /bin/bash-static "$img/bin/bash"
for c in $(/bin/busybox --list); do
    [ -e "$img/bin/$c" ] || ln -s busybox "$img/bin/$c"
done
echo 'root:x:0:0:root:/root:/bin/sh' >"$img/etc/passwd"
tar -C "$img" -cf "$tmp/img.tar" .
docker import "$tmp/img.tar" cordon-bench-docker >/dev/null

cd "$tmp/ws"
D=(--backend docker --set "docker.host=unix://$hd/sock" --set docker.image=cordon-bench-docker)
# One of each first: docker's first container start pays for its own
# set-up (the image's layer, runc's first run).
"$cordon" run "${D[@]}" -- /bin/true
docker run --rm --network none cordon-bench-docker /bin/true

now_us() { local t=${EPOCHREALTIME/./}; echo $((10#$t)); }
declare -a tc td
for ((i = 0; i < runs; i++)); do
    if ((i % 2)); then
        t0=$(now_us); docker run --rm --network none cordon-bench-docker /bin/true; t1=$(now_us)
        "$cordon" run "${D[@]}" -- /bin/true; t2=$(now_us)
        td+=($((t1 - t0))); tc+=($((t2 - t1)))
    else
        t0=$(now_us); "$cordon" run "${D[@]}" -- /bin/true; t1=$(now_us)
        docker run --rm --network none cordon-bench-docker /bin/true; t2=$(now_us)
        tc+=($((t1 - t0))); td+=($((t2 - t1)))
    fi
done
median() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {printf "%d\n", (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
mc=$(median "${tc[@]}"); md=$(median "${td[@]}")
ratio=$(awk -v c="$mc" -v d="$md" 'BEGIN {printf "%.2f", c/d}')
load=$(cut -d' ' -f1 /proc/loadavg)
if [ "${1:-}" = --markdown ]; then
    echo "| runs | cordon --backend docker median | docker run --rm median | ratio | load |"
    echo "| --- | --- | --- | --- | --- |"
    echo "| $runs | $((mc / 1000)) ms | $((md / 1000)) ms | $ratio | $load |"
else
    echo "docker start, $runs runs each, alternating (load $load)"
    echo "  cordon run --backend docker -- /bin/true: median $((mc / 1000)) ms"
    echo "  docker run --rm --network none IMAGE /bin/true: median $((md / 1000)) ms"
    echo "  ratio cordon/docker: $ratio (target <= 1.1)"
fi
