#!/usr/bin/env bash
# Every C file is formatted as .clang-format says, and follows .editorconfig's
# basics (LF, final newline, no trailing whitespace in C files).
. "$CORDON_SRC/tests/lib/tap.sh"
cd "$CORDON_SRC" || exit 1
mapfile -t files < <(git ls-files --cached --others --exclude-standard '*.c' '*.h' 2>/dev/null || find src tests -name '*.[ch]')
[ ${#files[@]} -gt 0 ] || { fail "no C files found"; tap_done; }
if command -v clang-format >/dev/null; then
    bad=()
    for f in "${files[@]}"; do
        [ -f "$f" ] || continue
        clang-format --dry-run --Werror "$f" >/dev/null 2>&1 || bad+=("$f")
    done
    is "clang-format: all ${#files[@]} C files formatted" "${bad[*]}" ""
else
    skip "clang-format" "clang-format not installed"
fi
crlf=$(grep -l $'\r' "${files[@]}" 2>/dev/null)
is "no CRLF line endings" "$crlf" ""
trailing=$(grep -ln '[[:space:]]$' "${files[@]}" 2>/dev/null)
is "no trailing whitespace" "$trailing" ""
nofinal=()
for f in "${files[@]}"; do [ -s "$f" ] && [ "$(tail -c1 "$f" | od -An -c | tr -d ' ')" != '\n' ] && nofinal+=("$f"); done
is "final newline everywhere" "${nofinal[*]}" ""
tap_done
