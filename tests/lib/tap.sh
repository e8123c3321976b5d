# TAP helpers for cordon's shell tests (sourced). Each test script prints TAP;
# meson runs it with protocol: 'tap'. The plan comes last.
tap_n=0
tap_failed=0

ok() { # ok DESCRIPTION COMMAND...
    local desc=$1; shift
    tap_n=$((tap_n + 1))
    if "$@"; then
        echo "ok $tap_n - $desc"
    else
        echo "not ok $tap_n - $desc"
        tap_failed=$((tap_failed + 1))
    fi
}

pass() { tap_n=$((tap_n + 1)); echo "ok $tap_n - $1"; }
fail() {
    tap_n=$((tap_n + 1)); tap_failed=$((tap_failed + 1))
    # The first detail line, cut short, on the result line itself: a CI log
    # that keeps only the summary still says what was seen. No '#' in it (a
    # TAP directive would start there).
    local seen=${2:-}
    seen=${seen//#/?}
    [ ${#seen} -gt 160 ] && seen="${seen:0:160}..."
    echo "not ok $tap_n - $1${seen:+ [$seen]}"
    shift
    local line; for line in "$@"; do echo "#   $line"; done
}
skip() { tap_n=$((tap_n + 1)); echo "ok $tap_n - $1 # SKIP $2"; }
diag() { printf '%s\n' "$*" | sed 's/^/# /'; }

# is DESCRIPTION GOT WANT
is() {
    if [ "$2" == "$3" ]; then pass "$1"; else fail "$1" "got:  $(printf %q "$2")" "want: $(printf %q "$3")"; fi
}
# like DESCRIPTION GOT REGEX
like() {
    if [[ "$2" =~ $3 ]]; then pass "$1"; else fail "$1" "got:  $(printf %q "$2")" "want match: $3"; fi
}
# unlike DESCRIPTION GOT REGEX
unlike() {
    if [[ "$2" =~ $3 ]]; then fail "$1" "got:  $(printf %q "$2")" "must not match: $3"; else pass "$1"; fi
}

tap_done() { echo "1..$tap_n"; [ "$tap_failed" -eq 0 ]; exit $?; }
