#!/usr/bin/env bash
# `make fuzz`: builds the libFuzzer targets of tests/fuzz/ with clang in
# build-fuzz (ASan + UBSan + libFuzzer) and runs each for FUZZ_SECONDS
# (default 60), starting from its seed corpus. New inputs land in
# fuzz-out/<target>/; copy interesting ones into tests/fuzz/corpus/<target>/
# so the normal test run replays them. A crash leaves its input in fuzz-out/.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v clang >/dev/null || { echo "fuzz: clang is not installed (scripts/bootstrap.sh --test)" >&2; exit 1; }
seconds=${FUZZ_SECONDS:-60}
builddir=build-fuzz
if [ ! -f "$builddir/build.ninja" ]; then
    CC=clang meson setup "$builddir" -Dfuzzing=true -Db_sanitize=address,undefined \
        -Db_lundef=false --buildtype=debug \
        -Dc_args="['-Wno-format-nonliteral', '-Wno-missing-field-initializers', '-fsanitize=fuzzer-no-link']" >/dev/null
fi
ninja -C "$builddir" >/dev/null || { ninja -C "$builddir"; exit 1; }
status=0
for corpus in tests/fuzz/corpus/*/; do
    target=$(basename "$corpus")
    out=fuzz-out/$target
    mkdir -p "$out"
    echo "fuzz: $target for ${seconds}s" >&2
    "$builddir/tests/fuzz/fuzz-$target" -max_total_time="$seconds" -max_len=65536 \
        -artifact_prefix="$out/" "$out" "$corpus" || status=1
done
exit $status
