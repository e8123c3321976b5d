#!/usr/bin/env bash
# Shell completions, driven through each real shell: bash (the completion
# function `cordon completions bash` prints, called the way readline calls
# it), zsh (compinit on a pty, TAB pressed) and fish (`complete -C`). They
# offer commands, options, configuration keys after --set, backends, network
# modes, and for `cordon rm` the stopped sandboxes but not a running one.
. "$CORDON_SRC/tests/lib/tap.sh"
. "$CORDON_SRC/tests/lib/cordon.sh"
bin=$TEST_TMP/bin
mkdir -p "$bin" "$TEST_TMP/run"
chmod 700 "$TEST_TMP/run"
ln -s "$CORDON" "$bin/cordon"
export PATH=$bin:$PATH XDG_RUNTIME_DIR=$TEST_TMP/run
ws=$(new_ws ws)

# One sandbox kept stopped, one running while the shells complete.
in_ws "$ws" "$CORDON" run --name cmpl-stopped-$$ --teardown stop -- true >/dev/null 2>&1
in_ws "$ws" "$CORDON" run --name cmpl-running-$$ -- sleep 60 >/dev/null 2>&1 </dev/null &
cleanup_pids+=($!)
disown
for _ in $(seq 100); do
    "$CORDON" ls 2>/dev/null | grep -q "cmpl-running-$$ .*running" && break
    sleep 0.1
done
names=$("$CORDON" ls 2>/dev/null)
like "setup: a stopped sandbox" "$names" "cmpl-stopped-$$"
like "setup: a running sandbox" "$names" "cmpl-running-$$ +running"

# Each case: LINE (the cursor at its end), words that must be offered, and
# words that must not be (after "!").
cases=(
    "cordon |run shell verify mcp help|!completions"
    "cordon --ve|--version"
    "cordon run --netw|--network"
    "cordon run --network |deny allowlist open"
    "cordon shell --backend |ns vm docker"
    "cordon mcp --set limits.p|limits.pids="
    "cordon config --set netw|network.mode= network.allow_hosts= network.publish_ports="
    "cordon tool |read write edit bash"
    "cordon rm |cmpl-stopped-$$|!cmpl-running-$$"
)

check() { # SHELL CANDIDATES CASE
    local sh=$1 got=$2 spec=$3 line want word bad=()
    line=${spec%%|*}
    want=${spec#*|}
    for word in ${want//|/ }; do
        if [[ $word == !* ]]; then
            grep -qw -- "${word#!}" <<<"$got" && bad+=("offers ${word#!}")
        else
            grep -qw -- "$word" <<<"$got" || bad+=("misses $word")
        fi
    done
    is "$sh: '$line<TAB>'" "${bad[*]}" ""
    [ ${#bad[@]} -eq 0 ] || diag "offered: $(tr '\n' ' ' <<<"$got")"
}

# bash: the function readline would call, with COMP_WORDS as it splits them.
"$CORDON" completions bash > "$TEST_TMP/cordon.bash"
for spec in "${cases[@]}"; do
    line=${spec%%|*}
    got=$(bash --norc -c '
        . "$1"
        read -ra COMP_WORDS <<<"$2"
        [[ $2 == *" " ]] && COMP_WORDS+=("")
        COMP_CWORD=$((${#COMP_WORDS[@]} - 1)) COMP_LINE=$2 COMP_POINT=${#2}
        _cordon cordon "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD-1]}"
        printf "%s\n" "${COMPREPLY[@]}"' bash "$TEST_TMP/cordon.bash" "$line")
    check bash "$got" "$spec"
done

# zsh: compinit with the generated _cordon, TAB pressed on a pty.
if command -v zsh >/dev/null; then
    mkdir -p "$TEST_TMP/zsh"
    "$CORDON" completions zsh > "$TEST_TMP/zsh/_cordon"
    ln -s "$CORDON" "$TEST_TMP/zsh/cordon"
    for spec in "${cases[@]}"; do
        line=${spec%%|*}
        got=$(timeout 20 zsh -f "$CORDON_SRC/tests/lib/zsh-complete.zsh" "$TEST_TMP/zsh" "$line" |
            sed 's/\x1b\[[0-9;?]*[A-Za-z]//g' | tr '\r' '\n' | tr -s ' ' '\n')
        check zsh "$got" "$spec"
    done
else
    skip "zsh completions" "zsh not installed"
fi

# fish: its own completion engine on the generated file.
if command -v fish >/dev/null; then
    mkdir -p "$TEST_TMP/fish/completions"
    "$CORDON" completions fish > "$TEST_TMP/fish/completions/cordon.fish"
    for spec in "${cases[@]}"; do
        line=${spec%%|*}
        got=$(HOME=$TEST_TMP/fish fish --no-config -c \
            'set fish_complete_path $argv[1] $fish_complete_path; complete -C"$argv[2]"' \
            "$TEST_TMP/fish/completions" "$line" 2>&1 | cut -f1)
        check fish "$got" "$spec"
    done
else
    skip "fish completions" "fish not installed"
fi
tap_done
