#!/usr/bin/env bash
# The layout's size rules (issue 15, docs/design.md "Layout"): no function in
# src/ over 120 lines and no C file over 1,000, so that a reader finds one
# topic a file and one step a function. A function is counted from its
# opening brace in column 0 to its closing brace in column 0 (the style of
# .clang-format); each one over the limit is named.
. "$CORDON_SRC/tests/lib/tap.sh"
cd "$CORDON_SRC" || exit 1
FUNC_MAX=120
FILE_MAX=1000
mapfile -t files < <(git ls-files 'src/*.c' 2>/dev/null || find src -name '*.c')
ok "the C files of src/ are found (${#files[@]})" test "${#files[@]}" -gt 50

# long_funcs FILE...: "FILE:LINE NAME (N lines)" for each function over
# FUNC_MAX lines.
long_funcs() {
    awk -v max="$FUNC_MAX" '
        FNR == 1 { start = 0 }
        /\(/ { sig = $0 }
        /^\{$/ { start = FNR; name = sig; next }
        /^\}/ && start {
            n = FNR - start + 1
            if (n > max) {
                sub(/\(.*/, "", name); sub(/.*[ *]/, "", name)
                printf "%s:%d %s (%d lines)\n", FILENAME, start, name, n
            }
            start = 0
        }' "$@"
}
is "no function in src/ is over $FUNC_MAX lines" "$(long_funcs "${files[@]}")" ""
long_files=$(wc -l "${files[@]}" | awk -v max="$FILE_MAX" '$2 != "total" && $1 > max { print $2 " (" $1 " lines)" }')
is "no C file in src/ is over $FILE_MAX lines" "$long_files" ""

# The counter itself: a function of 121 lines is found, one of 120 is not.
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
{
    printf 'static int small(void)\n{\n'; for _ in $(seq 118); do echo '    x++;'; done; printf '}\n'
    printf 'static int big(int a)\n{\n'; for _ in $(seq 119); do echo '    x++;'; done; printf '}\n'
} >"$tmp/t.c"
got=$(long_funcs "$tmp/t.c")
is "the counter: names the 121-line function only" "$got" "$tmp/t.c:123 big (121 lines)"
tap_done
