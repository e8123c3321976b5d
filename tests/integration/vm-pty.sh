#!/usr/bin/env bash
# Integration: `cordon shell --backend vm` in a real terminal (a tmux pane),
# as a user sees it: a terminal of its own inside, the window's size and its
# changes, a prompt, Ctrl-C and Ctrl-Z for the foreground job only, a host
# signal to the foreground job, the exit status, and the host terminal back
# in cooked mode afterwards, also after a hang-up and after the guest died.
# Then `cordon run --backend vm --pty` without a host terminal, as on ns,
# and `cordon shell` without one. Five boots.
. "$CORDON_SRC/tests/lib/tap.sh"
. "$CORDON_SRC/tests/lib/cordon.sh"
. "$CORDON_SRC/tests/lib/fixtures.sh"

skip_without_vm
if ! command -v tmux >/dev/null; then
    echo "1..0 # SKIP tmux not installed (scripts/bootstrap.sh --test)"
    exit 0
fi

ws=$(new_ws vmpty)
# One tmux server per session (a new server on a socket whose server is
# still shutting down fails to start).
sessions=0
TM_SOCK="$TEST_TMP/tmux0.sock" TM_TARGET=vm
trap 'for s in "$TEST_TMP"/tmux*.sock; do tmux -S "$s" kill-server 2>/dev/null; done; test_cleanup' EXIT

# The pane runs cordon shell, then shows its exit status and the terminal's
# settings, and stays open to be read.
write_pane_runner "$TEST_TMP/runner.sh" "$ws" shell --backend vm

# start_shell: a new pane running the runner; true once the shell's prompt
# (Debian's bash.bashrc: user@host:dir$, the guest's hostname) shows.
start_shell() {
    sessions=$((sessions + 1))
    TM_SOCK="$TEST_TMP/tmux$sessions.sock"
    tm new-session -d -s vm -x 100 -y 30 "bash $TEST_TMP/runner.sh"
    wait_screen '@cordon:[^ ]*[#$] $' 90
}
# check_cooked WHEN: the pane's terminal settings, printed by the runner
# after cordon ended, are the cooked ones again.
check_cooked() {
    local settings
    settings=$(runner_settings)
    like "the host terminal is back in cooked mode $1 (icanon)" "$settings" '(^|[ \n])icanon( |$)'
    like "the host terminal echoes again $1 (echo)" "$settings" '(^|[ \n])echo( |$)'
    unlike "the host terminal is not raw $1 (-isig)" "$settings" '(^|[ \n])-isig( |$)'
}

uid=$(id -u)
if start_shell; then
    pass "a prompt appears in the terminal"
else
    fail "a prompt appears in the terminal" "screen: $(screen | grep -v '^$' | tail -5)"
fi

shell_do 1 'tty; test -t 0 && echo stdin-is-a-tty; stat -c "owner=%u" "$(tty)"; stty size; grep -E "^(CapEff|NoNewPrivs|Seccomp):" /proc/self/status | tr -s "\t" " "'
out=$(screen)
# The terminal changes nothing of the confinement (vm-init.c confine_user).
like "the shell is confined as without a terminal (no capability)" "$out" $'\nCapEff: 0000000000000000\n'
like "the shell is confined as without a terminal (no_new_privs)" "$out" $'\nNoNewPrivs: 1\n'
like "the shell is confined as without a terminal (seccomp filter)" "$out" $'\nSeccomp: 2\n'
like "the shell has a terminal of the guest" "$out" $'\n/dev/pts/[0-9]+\r?\n'
like "stdin is a terminal (test -t 0)" "$out" $'\nstdin-is-a-tty'
like "the terminal belongs to the user (uid $uid)" "$out" $'\nowner='"$uid"$'\n'
like "the terminal has the window's size" "$out" $'\n30 100\n'

# While the shell runs, the host terminal (the pane's) is raw: the keys go
# to the guest's terminal as bytes.
pane_tty=$(tm display -p -t vm '#{pane_tty}')
like "the host terminal is raw during the session (-icanon -isig -echo)" \
    "$(stty -a -F "$pane_tty" 2>&1 | tr '\n' ' ')" ' -isig -icanon .* -echo '

pane_resize 120 40 2
like "a resize of the window reaches the terminal inside" "$(screen)" $'\n40 120\n'

# Ctrl-C: a byte through the raw host terminal, SIGINT from the guest's
# line discipline to the foreground job only.
pane_start_job 3
sleep 1
t0=$SECONDS
tm send-keys -t vm C-c
if shell_do 4 'echo alive-$((6*7))' && [[ "$(screen)" =~ $'\nalive-42\n' ]]; then
    pass "Ctrl-C ends the foreground job and the shell takes the next command ($((SECONDS - t0)) s)"
else
    fail "Ctrl-C ends the foreground job and the shell takes the next command" \
        "screen: $(screen | grep -v '^$' | tail -5)"
fi

# Ctrl-Z: job control.
pane_start_job 5
sleep 1
tm send-keys -t vm C-z
if wait_screen 'Stopped +sleep 100' 30; then
    pass "Ctrl-Z stops the foreground job (job control)"
else
    fail "Ctrl-Z stops the foreground job (job control)" "screen: $(screen | grep -v '^$' | tail -5)"
fi
shell_do 6 'kill -KILL %1; wait'

# A signal sent to cordon itself goes to the terminal's foreground job, as
# the terminal's own key would, not to the shell.
pane_start_job 7
sleep 1
pane_pid=$(tm display -p -t vm '#{pane_pid}')
cordon_pid=$(pgrep -P "$pane_pid" -x cordon)
if [ -n "$cordon_pid" ]; then
    kill -INT "$cordon_pid"
    if shell_do 8 'echo host-int-$((6*7))' && [[ "$(screen)" =~ $'\nhost-int-42\n' ]]; then
        pass "SIGINT to cordon ends the foreground job; the shell stays"
    else
        fail "SIGINT to cordon ends the foreground job; the shell stays" \
            "screen: $(screen | grep -v '^$' | tail -5)"
    fi
else
    fail "SIGINT to cordon ends the foreground job; the shell stays" "no cordon process below pane $pane_pid"
fi

type_line 'exit 3'
if wait_screen $'cordon-exit=3\n' 30; then
    pass "exit 3 ends cordon shell with status 3"
else
    fail "exit 3 ends cordon shell with status 3" "screen: $(screen | grep -v '^$' | tail -5)"
fi
check_cooked "after exit"
tm kill-server 2>/dev/null

# --- the terminal comes back on the other ways out: a hang-up (SIGHUP to
# cordon, as when its terminal window closes: the shell gets it and ends),
# and a guest that dies (QEMU killed: cordon's own error) ---
start_shell || diag "no prompt in the second session: $(screen | grep -v '^$' | tail -3)"
cordon_pid=$(pgrep -P "$(tm display -p -t vm '#{pane_pid}')" -x cordon)
[ -n "$cordon_pid" ] && kill -HUP "$cordon_pid"
if wait_screen $'cordon-exit=129\n' 30; then
    pass "SIGHUP to cordon ends the shell (status 129)"
else
    fail "SIGHUP to cordon ends the shell (status 129)" "screen: $(screen | grep -v '^$' | tail -5)"
fi
check_cooked "after SIGHUP"
tm kill-server 2>/dev/null

start_shell || diag "no prompt in the third session: $(screen | grep -v '^$' | tail -3)"
cordon_pid=$(pgrep -P "$(tm display -p -t vm '#{pane_pid}')" -x cordon)
qemu_pid=$([ -n "$cordon_pid" ] && pgrep -P "$cordon_pid" -f qemu-system)
[ -n "$qemu_pid" ] && kill -KILL "$qemu_pid"
if wait_screen $'cordon-exit=125\n' 30; then
    pass "a guest that dies ends cordon shell with cordon's own status (125)"
else
    fail "a guest that dies ends cordon shell with cordon's own status (125)" \
        "screen: $(screen | grep -v '^$' | tail -5)"
fi
# Printed in raw mode, the next line would start where the message ended.
like "the error is shown, and the line after it starts at its beginning" "$(screen)" \
    $'cordon: error: vm: the guest stopped without reporting an exit status\ncordon-exit=125\n'
check_cooked "after the guest died"
tm kill-server 2>/dev/null

# --- without a host terminal: --pty still gives the command a terminal, as
# on ns (size 0x0 there too), and its status comes back ---
out=$(cd "$ws" && PWD="$ws" "$CORDON" run --backend vm --pty -- \
    bash -c 'tty; test -t 1 && echo stdout-is-a-tty; echo to-stderr >&2; exit 5' </dev/null 2>"$TEST_TMP/err")
rc=$?
is "run --pty without a host terminal: the command's status" "$rc" 5
like "run --pty without a host terminal: a terminal inside" "$out" $'^/dev/pts/[0-9]+\r\nstdout-is-a-tty\r\n'
like "run --pty: stderr comes through the terminal too" "$out" $'\nto-stderr\r'
is "run --pty: nothing on cordon's stderr" "$(cat "$TEST_TMP/err")" ""

# --- and cordon shell without a terminal still reads commands from stdin,
# with no terminal inside (the choice is made on the host's stdin/stdout) ---
out=$(cd "$ws" && printf 'echo from-shell; tty; exit 4\n' | PWD="$ws" "$CORDON" shell --backend vm 2>&1)
rc=$?
is "shell without a terminal: commands from stdin, no terminal inside" "$out" "from-shell
not a tty"
is "shell without a terminal: the exit status" "$rc" 4

tap_done
