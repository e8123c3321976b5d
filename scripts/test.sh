#!/usr/bin/env bash
# `make test`: install what is missing, build with ASan and UBSan, run every
# suite (unit, integration, security; each shell suite also as an
# unprivileged user when run as root), and end with "N passed, N failed".
set -uo pipefail
cd "$(dirname "$0")/.."
scripts/bootstrap.sh --test || exit 1
builddir=${CORDON_TEST_BUILDDIR:-build-test}
if [ ! -f "$builddir/build.ninja" ]; then
    meson setup "$builddir" -Db_sanitize=address,undefined -Db_lundef=false \
        --buildtype=debug >/dev/null || exit 1
fi
ninja -C "$builddir" >/dev/null || { ninja -C "$builddir"; exit 1; }
meson test -C "$builddir" --print-errorlogs --num-processes 2 ${CORDON_TEST_ARGS:-} \
    > "$builddir/meson-test.out" 2>&1
status=$?
grep -E '^ *[0-9]+/[0-9]+ ' "$builddir/meson-test.out" | sed 's/^ *//'
python3 scripts/tap-summary.py "$builddir/meson-logs/testlog.json"
summary=$?
[ $status -eq 0 ] && [ $summary -eq 0 ]
