# Running an independent slow part of a test script (a vm boot, mostly)
# beside the rest of it, so that two single-vCPU TCG guests use both cores
# instead of one (sourced after tap.sh and cordon.sh). A part's output and
# status are kept in files; its checks stay where they were in the script,
# after it is waited for, so the TAP plan, order and descriptions do not
# change. Host context; as root or the unprivileged user.

# A part runs in the foreground where it is started, its checks still where
# they stand, when CORDON_TEST_JOBS=1, or (CORDON_TEST_JOBS unset) when the
# machine is already busy: a load average of at least its number of CPUs,
# where two guests booting at once could miss their 60 s boot timeout under
# TCG. CORDON_TEST_JOBS=2 runs parts beside the rest whatever the load.

declare -A bg_pids=() bg_parts=()
bg_serial() {
    local load
    case "${CORDON_TEST_JOBS:-}" in
    1) return 0 ;;
    "") ;;
    *) return 1 ;;
    esac
    read -r load _ </proc/loadavg 2>/dev/null || return 1
    [ "${load%%.*}" -ge "$(nproc)" ]
}

# bg_run KEY DIR CMD...: CMD in DIR (PWD set, stdin /dev/null), in the
# foreground; stdout and stderr go together to KEY's file, as in
# out=$(CMD 2>&1), and its status to another. For the parts of a bg_group.
bg_run() {
    local key=$1 dir=$2
    shift 2
    rm -f "$TEST_TMP/bg-$key.out" "$TEST_TMP/bg-$key.rc"
    (
        cd "$dir" && export PWD="$dir"
        "$@" >"$TEST_TMP/bg-$key.out" 2>&1 </dev/null
        echo "$?" >"$TEST_TMP/bg-$key.rc"
    )
}

# bg_start KEY DIR CMD...: bg_run in the background; bg_wait KEY ends it.
bg_start() {
    bg_parts[$1]=1
    if bg_serial; then
        bg_run "$@"
        return
    fi
    bg_run "$@" &
    bg_pids[$1]=$!
    cleanup_pids+=($!)
}

# bg_group KEY FUNCTION: FUNCTION (a sequence of bg_run parts that depend on
# each other or should not run at once) in the background.
bg_group() {
    if bg_serial; then
        "$2"
        return
    fi
    "$2" &
    bg_pids[$1]=$!
    cleanup_pids+=($!)
}

# bg_wait KEY: until what was started as KEY (bg_start or bg_group) has
# ended; for a bg_start part, bg_result KEY too.
bg_wait() {
    [ -n "${bg_pids[$1]:-}" ] && wait "${bg_pids[$1]}"
    unset "bg_pids[$1]"
    if [ -n "${bg_parts[$1]:-}" ]; then
        unset "bg_parts[$1]"
        bg_result "$1"
    fi
    return 0
}

# bg_result KEY: sets out and rc of the bg_run part KEY, as cordon_run does
# (rc 255 when it never wrote its status).
bg_result() {
    out=$(cat "$TEST_TMP/bg-$1.out" 2>/dev/null)
    rc=$(cat "$TEST_TMP/bg-$1.rc" 2>/dev/null || echo 255)
    rm -f "$TEST_TMP/bg-$1.out" "$TEST_TMP/bg-$1.rc"
}

# bg_checks KEY FUNCTION: FUNCTION, checks and all, in the background, its
# TAP lines kept in a file; bg_checks_print KEY prints them later, where
# FUNCTION would have run, numbered on from the checks before them. For a
# group of checks that shares no state with what runs meanwhile.
bg_checks() {
    rm -f "$TEST_TMP/bgtap-$1.tap" "$TEST_TMP/bgtap-$1.end"
    (
        tap_n=0 tap_failed=0
        "$2" >"$TEST_TMP/bgtap-$1.tap" 2>"$TEST_TMP/bgtap-$1.err" </dev/null
        echo "$tap_n $tap_failed" >"$TEST_TMP/bgtap-$1.end"
    ) &
    bg_pids[$1]=$!
    if bg_serial; then wait "${bg_pids[$1]}"; fi
    cleanup_pids+=($!)
}
bg_checks_print() {
    local n failed line
    wait "${bg_pids[$1]}" 2>/dev/null
    unset "bg_pids[$1]"
    if ! read -r n failed <"$TEST_TMP/bgtap-$1.end"; then
        fail "the background checks $1 ran to their end" "$(tail -5 "$TEST_TMP/bgtap-$1.err" 2>/dev/null)"
        return
    fi
    while IFS= read -r line; do
        if [[ "$line" =~ ^(not )?ok\ ([0-9]+)(.*)$ ]]; then
            line="${BASH_REMATCH[1]}ok $((BASH_REMATCH[2] + tap_n))${BASH_REMATCH[3]}"
        fi
        printf '%s\n' "$line"
    done <"$TEST_TMP/bgtap-$1.tap"
    cat "$TEST_TMP/bgtap-$1.err" >&2
    tap_n=$((tap_n + n)) tap_failed=$((tap_failed + failed))
    rm -f "$TEST_TMP/bgtap-$1".*
}
