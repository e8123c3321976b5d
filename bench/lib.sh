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
