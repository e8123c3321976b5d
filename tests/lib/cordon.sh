# Helpers for shell tests that drive the real cordon binary (sourced after
# tap.sh). Every test works in its own temporary workspace, removed at exit.
: "${CORDON:?CORDON must point at the cordon binary}"
TEST_TMP=$(mktemp -d "${TMPDIR:-/tmp}/cordon-test.XXXXXX")
chmod 755 "$TEST_TMP"
cleanup_dirs=("$TEST_TMP")
cleanup_pids=()
test_cleanup() {
    local p
    for p in "${cleanup_pids[@]}"; do kill -9 "$p" 2>/dev/null; done
    chmod -R u+w "${cleanup_dirs[@]}" 2>/dev/null
    rm -rf "${cleanup_dirs[@]}"
}
trap test_cleanup EXIT

# new_ws NAME: a fresh workspace directory; prints its path.
new_ws() {
    local d="$TEST_TMP/$1"
    mkdir -p "$d"
    echo "$d"
}

# in_ws DIR CMD...: runs CMD with DIR as cwd (and PWD).
in_ws() {
    local d=$1; shift
    (cd "$d" && PWD="$d" "$@")
}

# cordon_run DIR [OPTIONS --] CMD...: `cordon run` in DIR; stdout+stderr in $out,
# exit status in $rc.
cordon_run() {
    local d=$1; shift
    out=$(cd "$d" && PWD="$d" "$CORDON" run "$@" 2>&1 </dev/null)
    rc=$?
}

# sh_in DIR SCRIPT: `cordon run -- bash -c SCRIPT` in DIR.
sh_in() {
    cordon_run "$1" -- bash -c "$2"
}

is_root() { [ "$(id -u)" -eq 0 ]; }
