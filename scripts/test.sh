#!/usr/bin/env bash
# `make test`: install what is missing, build with ASan and UBSan, run every
# suite (unit, integration, security; each shell suite also as an
# unprivileged user when run as root), and end with "N passed, N failed".
#
# The compiled tests run first, two at a time. The shell suites then run in
# two lanes side by side (tests/meson.build says which suite is in which):
# lane-heavy one suite after another (vm guests, Docker, shared builds),
# lane-light beside it one suite after another, so that a TCG guest and an
# ns suite share the two cores instead of each waiting for the other; then
# lane-alone, the suites that change what the whole host reads, by
# themselves. CORDON_TEST_ARGS (meson test's own arguments: a suite, a test
# name) runs just that, as one meson test. CORDON_TEST_LANES=1 runs the
# lanes one after the other.
set -uo pipefail
cd "$(dirname "$0")/.."
scripts/bootstrap.sh --test || exit 1
builddir=${CORDON_TEST_BUILDDIR:-build-test}
if [ ! -f "$builddir/build.ninja" ]; then
    meson setup "$builddir" -Db_sanitize=address,undefined -Db_lundef=false \
        --buildtype=debug >/dev/null || exit 1
fi
ninja -C "$builddir" >/dev/null || { ninja -C "$builddir"; exit 1; }
builddir_abs=$(cd "$builddir" && pwd)

# meson_test LOGBASE ARGS...: one meson test run, its console output in
# $builddir/LOGBASE.out, its results in meson-logs/LOGBASE.json.
meson_test() {
    local base=$1
    shift
    meson test -C "$builddir" --no-rebuild --print-errorlogs --logbase "$base" "$@" \
        >"$builddir/$base.out" 2>&1
}

if [ -n "${CORDON_TEST_ARGS:-}" ]; then
    # shellcheck disable=SC2086
    meson_test testlog --num-processes 2 $CORDON_TEST_ARGS
    status=$?
    logs=(testlog)
else
    # The unprivileged user exists before the lanes start: two first runs
    # of tests/lib/as-user.sh would race to create it.
    if [ "$(id -u)" -eq 0 ] && ! id cordon-test >/dev/null 2>&1; then
        useradd --create-home --shell /bin/bash cordon-test >/dev/null 2>&1
    fi
    # One vm session first, beside the compiled tests: the host's first
    # vm boot learns which accelerator works (a KVM that cannot boot a
    # stock guest, as here, is said in a warning once, then remembered),
    # so no suite's output depends on being that first boot.
    warm=
    if [ "$(id -u)" -eq 0 ] && command -v qemu-system-x86_64 >/dev/null 2>&1; then
        (cd "$(mktemp -d)" && "$builddir_abs/cordon" run --backend vm -- true \
            >"$builddir_abs/vm-warm-up.out" 2>&1 </dev/null; rm -rf "$PWD") &
        warm=$!
    fi
    meson_test testlog --num-processes 2 --no-suite lane-heavy --no-suite lane-light \
        --no-suite lane-alone
    status=$?
    [ -n "$warm" ] && wait "$warm"
    if [ "${CORDON_TEST_LANES:-2}" = 1 ]; then
        meson_test lane-heavy --num-processes 1 --suite lane-heavy || status=1
        meson_test lane-light --num-processes 1 --suite lane-light || status=1
    else
        meson_test lane-heavy --num-processes 1 --suite lane-heavy &
        heavy=$!
        meson_test lane-light --num-processes 1 --suite lane-light || status=1
        wait "$heavy" || status=1
    fi
    meson_test lane-alone --num-processes 1 --suite lane-alone || status=1
    logs=(testlog lane-heavy lane-light lane-alone)
fi
for base in "${logs[@]}"; do
    grep -E '^ *[0-9]+/[0-9]+ ' "$builddir/$base.out" | sed 's/^ *//'
done
jsons=()
for base in "${logs[@]}"; do
    jsons+=("$builddir/meson-logs/$base.json")
done
python3 scripts/tap-summary.py "${jsons[@]}"
summary=$?
[ $status -eq 0 ] && [ $summary -eq 0 ]
