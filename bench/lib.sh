# Sourced by the bench scripts: where the source tree and the build are,
# whatever the caller's working directory and however the script was named
# (`bash bench/x.sh`, `./x.sh`, an absolute path, a clone under /root).
#   bench_src    the source tree (absolute)
#   bench_build  the build directory: $BUILDDIR (relative to the source tree
#                unless absolute), else build/, else build-rel/
#   bench_cordon $CORDON (made absolute) or $bench_build/cordon
# shellcheck shell=bash
bench_here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
bench_src=$(cd "$bench_here/.." && pwd)
bench_abs() { # bench_abs PATH: absolute, resolved against the caller's cwd
    case $1 in
    /*) printf '%s\n' "$1" ;;
    *) printf '%s/%s\n' "$(cd "$(dirname "$1")" && pwd)" "$(basename "$1")" ;;
    esac
}
if [ -n "${BUILDDIR:-}" ]; then
    case $BUILDDIR in /*) bench_build=$BUILDDIR ;; *) bench_build=$bench_src/$BUILDDIR ;; esac
else
    bench_build=$bench_src/build
    [ -x "$bench_build/cordon" ] || [ ! -x "$bench_src/build-rel/cordon" ] || bench_build=$bench_src/build-rel
fi
if [ -n "${CORDON:-}" ]; then
    bench_cordon=$(bench_abs "$CORDON")
else
    bench_cordon=$bench_build/cordon
fi
bench_need_cordon() {
    [ -x "$bench_cordon" ] || {
        echo "bench: build cordon first (make build, or BUILDDIR=DIR / CORDON=PATH): $bench_cordon missing" >&2
        exit 1
    }
}

# bench_bwrap_views CORDON DIR: bubblewrap's two views for a cold-start run
# in the current directory (the workspace), in two arrays:
#   bench_bw_min   the minimal view: namespaces, read-only /usr and /etc,
#                  tmpfs /tmp, /run, /var/tmp and home, the workspace, a new
#                  /proc and /dev (what the earlier rounds measured)
#   bench_bw_same  the view CORDON's sandbox has here, read from one of its
#                  sandboxes by bench/bwrap-view.py (its mounts; /sys left
#                  out, see there), with CORDON's two seccomp programs
#                  (bench/seccomp-export) on fds 10 and 11 and every
#                  capability dropped: run it as
#                  bwrap "${bench_bw_same[@]}" CMD 10<"$bench_bpf_main" 11<"$bench_bpf_notify"
# DIR receives the files. Without seccomp-export (a build without the
# benchmarks), the filters are left out and bench_bw_note says so.
# shellcheck disable=SC2034 # the arrays and paths are for the caller
bench_bwrap_views() {
    local cordon=$1 dir=$2 export=
    local common=(--unshare-user --unshare-pid --unshare-net --unshare-ipc --unshare-uts
        --unshare-cgroup-try --die-with-parent --new-session)
    bench_bw_min=("${common[@]}"
        --ro-bind /usr /usr --symlink usr/bin /bin --symlink usr/sbin /sbin
        --symlink usr/lib /lib --symlink usr/lib64 /lib64
        --ro-bind /etc /etc --tmpfs /tmp --tmpfs /run --tmpfs /var/tmp --tmpfs "$HOME"
        --bind "$PWD" "$PWD" --proc /proc --dev /dev --chdir "$PWD")
    "$cordon" run -- /bin/cat /proc/self/mountinfo >"$dir/mountinfo"
    # shellcheck disable=SC2016
    "$cordon" run -- /bin/sh -c 'for l in /*; do [ -L "$l" ] && printf "%s %s\n" "$l" "$(readlink "$l")"; done; true' >"$dir/links"
    local view=()
    mapfile -d '' view < <(python3 "$bench_here/bwrap-view.py" "$dir/mountinfo" "$dir/links" 2>"$dir/left-out")
    [ ${#view[@]} -gt 0 ] || { cat "$dir/left-out" >&2; echo "bench: bwrap-view.py gave no view" >&2; exit 1; }
    bench_bw_same=("${common[@]}" --cap-drop ALL "${view[@]}" --chdir "$PWD")
    bench_bw_note=$(sed 's/^bwrap-view: //' "$dir/left-out")
    for export in "$(dirname "$cordon")/seccomp-export" "$(dirname "$cordon")/bench/seccomp-export" \
        "$bench_build/bench/seccomp-export" ""; do
        [ -z "$export" ] || [ -x "$export" ] && break
    done
    bench_bpf_main=/dev/null bench_bpf_notify=/dev/null
    if [ -n "$export" ]; then
        "$export" main >"$dir/main.bpf" && "$export" notify >"$dir/notify.bpf"
        bench_bpf_main=$dir/main.bpf bench_bpf_notify=$dir/notify.bpf
        bench_bw_same+=(--add-seccomp-fd 10 --add-seccomp-fd 11)
    else
        bench_bw_note="$bench_bw_note; no seccomp filters (seccomp-export not built)"
    fi
}
