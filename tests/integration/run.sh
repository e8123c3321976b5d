#!/usr/bin/env bash
# Integration: `cordon run` and `cordon shell` as a user sees them.
. "$CORDON_SRC/tests/lib/tap.sh"
. "$CORDON_SRC/tests/lib/cordon.sh"
. "$CORDON_SRC/tests/lib/fixtures.sh"

ws=$(new_ws plain)
echo hello > "$ws/hello.txt"

# --- exit statuses ---
cordon_run "$ws" -- true
is "true exits 0" "$rc" 0
cordon_run "$ws" -- false
is "false exits 1" "$rc" 1
sh_in "$ws" 'exit 42'
is "exit code propagates" "$rc" 42
cordon_run "$ws" -- no-such-command-xyz
is "missing command exits 127" "$rc" 127
like "missing command is named" "$out" "no-such-command-xyz: No such file or directory"
sh_in "$ws" 'kill -TERM $$'
is "death by signal exits 128+signal" "$rc" 143
cordon_run "$ws"
is "run without a command is cordon's own failure (125)" "$rc" 125

# --- tools work inside ---
sh_in "$ws" 'cat hello.txt && ls / | tr "\n" " " && sort --version | head -1'
is "bash and coreutils run" "$rc" 0
like "workspace file readable" "$out" "hello"
sh_in "$ws" 'echo written > out.txt; mkdir -p d/e; echo deep > d/e/f'
is "workspace writes land on the host" "$(cat "$ws/out.txt" "$ws/d/e/f" 2>&1)" "written
deep"
marker="cordon-marker-$$-$RANDOM"
sh_in "$ws" "echo x > /tmp/$marker; echo x > /var/tmp/$marker; echo x > \$HOME/$marker; ls /tmp/$marker"
is "scratch writes succeed inside" "$rc" 0
if [ ! -e "/tmp/$marker" ] && [ ! -e "/var/tmp/$marker" ] && [ ! -e "$HOME/$marker" ]; then
    pass "writes outside the workspace do not reach the host"
else
    fail "writes outside the workspace do not reach the host"
fi
sh_in "$ws" 'touch /usr/x /etc/x /x 2>&1; true'
like "system directories are read-only" "$out" "cannot touch '/usr/x': Read-only file system"
like "the root is read-only" "$out" "cannot touch '/x': Read-only file system"

mkdir -p "$ws/sub/dir"
out=$(cd "$ws/sub/dir" && "$CORDON" run -- pwd 2>&1)
is "starts in the original cwd" "$out" "$ws/sub/dir"
out=$(echo piped-input | (cd "$ws" && "$CORDON" run -- cat) 2>&1)
is "stdin is piped through" "$out" "piped-input"
out=$( (cd "$ws" && "$CORDON" run -- bash -c 'echo out; echo err >&2') 2>/dev/null)
is "stdout and stderr stay separate" "$out" "out"

# lexical path: a workspace reached through a symlink appears at that path
ln -s "$ws" "$TEST_TMP/link"
out=$(cd "$TEST_TMP/link" && PWD="$TEST_TMP/link" "$CORDON" run -- pwd 2>&1)
is "workspace appears at its lexical path" "$out" "$TEST_TMP/link"

# --- environment ---
out=$(cd "$ws" && env -i PATH=/usr/bin:/bin HOME="$HOME" LANG=C.UTF-8 TERM=dumb SECRET_TOKEN=s3 \
    "$CORDON" run -- env 2>&1 | sort | tr '\n' ' ')
like "strict env keeps PATH" "$out" "PATH=/usr/bin:/bin"
like "strict env sets TMPDIR=/tmp" "$out" "TMPDIR=/tmp"
unlike "strict env drops other variables" "$out" "SECRET_TOKEN"

# --- shell ---
out=$(echo 'echo from-shell; id -u' | (cd "$ws" && "$CORDON" shell) 2>&1)
is "shell reads commands from stdin without a terminal" "$out" "from-shell
$(id -u)"
if command -v script >/dev/null; then
    out=$(set -o pipefail; cd "$ws" && printf 'tty; stty size; exit 3\n' |
        script -qec "stty rows 33 cols 77; $CORDON shell" /dev/null 2>&1 | tr -d '\r')
    rc=$?
    like "shell gets a terminal of its own" "$out" "/dev/pts/0"
    like "the terminal has the caller's size" "$out" "33 77"
    is "shell exit status propagates through the terminal" "$rc" 3
else
    skip "shell pty" "script(1) not installed"
fi

out=$(python3 "$CORDON_SRC/tests/integration/pty_resize.py" "$CORDON" "$ws" 2>&1)
is "shell: the terminal's size, and a resize, reach the shell inside" "$out" "initial
resized
exit 4"

# --- signals ---
start_until_ready "$TEST_TMP/sig.out" 'trap "echo got-term; exit 7" TERM; echo ready; while :; do sleep 0.05; done'
kill -TERM "$pid"
wait "$pid"
rc=$?
is "SIGTERM reaches the command (its exit status)" "$rc" 7
like "SIGTERM reaches the command (its trap)" "$(cat "$TEST_TMP/sig.out")" "got-term"
start_until_ready "$TEST_TMP/int.out" 'trap "echo got-int; exit 9" INT; echo ready; while :; do sleep 0.05; done'
kill -INT "$pid"
wait "$pid"
is "SIGINT reaches the command" "$?" 9

start_until_ready "$TEST_TMP/hup.out" 'trap "echo got-hup; exit 11" HUP; echo ready; while :; do sleep 0.05; done'
kill -HUP "$pid"
wait "$pid"
is "SIGHUP reaches the command" "$?" 11

# --- the sandbox dies with its parent ---
tag="cordon-orphan-$$-$RANDOM"
start_tagged_sleep "$tag"
kill -9 "$pid"
wait "$pid" 2>/dev/null
gone=no
for _ in $(seq 100); do pgrep -f "$tag" >/dev/null || { gone=yes; break; }; sleep 0.05; done
is "killing cordon -9 takes the sandbox down" "$gone" yes

# --- git ---
repo=$(new_ws repo)
gitc=(git -c user.name=t -c user.email=t@e -c init.defaultBranch=main)
in_ws "$repo" "${gitc[@]}" init -q
echo a > "$repo/a"
in_ws "$repo" "${gitc[@]}" add a
in_ws "$repo" "${gitc[@]}" commit -qm first
mkdir -p "$repo/sub"
out=$(cd "$repo/sub" && "$CORDON" run -- bash -c 'pwd; git rev-parse --show-toplevel; echo b > ../b; git -c user.name=t -c user.email=t@e add ../b && git -c user.name=t -c user.email=t@e commit -qm second && git log --oneline | wc -l' 2>&1)
is "git works inside (commit from a subdirectory)" "$out" "$repo/sub
$repo
2"
is "the commit is on the host" "$(git -C "$repo" log --oneline | wc -l)" 2

wt="$TEST_TMP/wt"
in_ws "$repo" "${gitc[@]}" worktree add -q "$wt" -b feature 2>/dev/null
out=$(cd "$wt" && "$CORDON" run -- bash -c 'git rev-parse --show-toplevel; echo w > w; git -c user.name=t -c user.email=t@e add w && git -c user.name=t -c user.email=t@e commit -qm wt && git log --oneline | wc -l' 2>&1)
is "linked worktree: the worktree is the workspace and git commits" "$out" "$wt
3"
is "linked worktree commit reached the main repository" "$(git -C "$repo" log --oneline feature | wc -l)" 3
out=$(cd "$wt" && "$CORDON" run -- bash -c "echo evil > $repo/.git/hooks/pre-commit; echo x >> $repo/.git/config; echo 'gitdir: /tmp' > .git" 2>&1)
like "linked worktree: the main repository's hooks stay read-only" "$out" "pre-commit: Read-only file system"
like "linked worktree: the main repository's config stays read-only" "$out" "config: Read-only file system"
like "linked worktree: the .git file stays read-only" "$out" ".git: Read-only file system"
ok "linked worktree: nothing planted on the host" test ! -e "$repo/.git/hooks/pre-commit"
out=$(cd "$wt" && "$CORDON" run -- bash -c "ls $TEST_TMP" 2>&1)
unlike "linked worktree: sibling directories stay hidden" "$out" "plain"

# Landlock allows writes under /tmp, /var/tmp, /run, /dev and home anyway; a
# linked worktree elsewhere shows that its git directories (the main
# repository's, outside the workspace) are in the writable set.
if ! "$CORDON" --debug run -- true 2>&1 | grep -q 'landlock: available'; then
    skip "linked worktree outside /tmp commits under Landlock" "Landlock not available on this kernel"
elif [ "$(id -u)" -ne 0 ]; then
    skip "linked worktree outside /tmp commits under Landlock" "needs a directory outside /tmp, /var/tmp and home (the root run covers it)"
else
    far=$(mktemp -d /var/lib/cordon-worktree.XXXXXX)
    cleanup_dirs+=("$far")
    chmod 755 "$far"
    mkdir "$far/repo"
    in_ws "$far/repo" "${gitc[@]}" init -q
    echo a >"$far/repo/a"
    in_ws "$far/repo" "${gitc[@]}" add a
    in_ws "$far/repo" "${gitc[@]}" commit -qm first
    in_ws "$far/repo" "${gitc[@]}" worktree add -q "$far/wt" -b far 2>/dev/null
    out=$(cd "$far/wt" && "$CORDON" run -- bash -c 'echo w > w && git -c user.name=t -c user.email=t@e add w && git -c user.name=t -c user.email=t@e commit -qm far && git log --oneline | wc -l; touch ../outside' 2>&1)
    is "linked worktree outside /tmp: git add and commit work under Landlock" "$out" "2
touch: cannot touch '../outside': Read-only file system"
    is "linked worktree outside /tmp: the commit is in the main repository" "$(git -C "$far/repo" log --oneline far | wc -l)" 2
fi

sup=$(new_ws super)
subsrc=$(new_ws subsrc)
in_ws "$subsrc" "${gitc[@]}" init -q
echo s > "$subsrc/s"
in_ws "$subsrc" "${gitc[@]}" add s
in_ws "$subsrc" "${gitc[@]}" commit -qm s
in_ws "$sup" "${gitc[@]}" init -q
in_ws "$sup" "${gitc[@]}" -c protocol.file.allow=always submodule add -q "$subsrc" mod 2>/dev/null
out=$(cd "$sup/mod" && "$CORDON" run -- bash -c 'git rev-parse --show-toplevel; git status --short | wc -l; ls ..' 2>&1)
is "submodule: the submodule is the workspace and git works" "$out" "$sup/mod
0
mod"

# --- the curated /etc, prepared once per content of the host's /etc ---
rt="$TEST_TMP/runtime"
mkdir -m 700 "$rt"
out=$(cd "$ws" && PWD="$ws" XDG_RUNTIME_DIR="$rt" "$CORDON" --debug run -- cat /etc/passwd 2>&1)
like "/etc comes from the prepared copy" "$out" "/etc: the prepared copy under $rt/cordon/.etc"
inside=$(cd "$ws" && PWD="$ws" XDG_RUNTIME_DIR="$rt" "$CORDON" run -- cat /etc/passwd 2>/dev/null)
is "/etc/passwd inside is the host's" "$inside" "$(cat /etc/passwd)"
is "two starts share one prepared copy" "$(ls "$rt/cordon/.etc" | wc -l)" 1
is "the prepared copies are private (0700)" "$(stat -c %a "$rt/cordon/.etc")" 700
sh_in "$ws" 'ls /etc/shadow /etc/ssl/private 2>&1; true'
like "no secrets in the prepared /etc" "$out" "cannot access '/etc/shadow'"
chmod 777 "$rt/cordon/.etc"
cordon_run_rt() { out=$(cd "$ws" && PWD="$ws" XDG_RUNTIME_DIR="$rt" "$CORDON" run "$@" 2>&1); rc=$?; }
cordon_run_rt -- cat /etc/hostname
is "a cache directory opened to others: the start goes on" "$rc" 0
is "... and the directory is private again" "$(stat -c %a "$rt/cordon/.etc")" 700
key=$(ls "$rt/cordon/.etc")
rm -rf "${rt:?}/cordon/.etc/$key"
mkdir "$rt/cordon/.etc/$key"
if is_root; then
    chown 65534 "$rt/cordon/.etc/$key"
    cordon_run_rt -- cat /etc/hostname
    is "a prepared copy that is not the user's own: nothing runs (125)" "$rc" 125
    like "... and the error names it" "$out" "etc cache: .*$key is not a directory of this user"
else
    skip "a prepared copy that is not the user's own: nothing runs (125)" "needs root to chown"
    skip "... and the error names it" "needs root to chown"
fi
rm -rf "${rt:?}/cordon/.etc/$key"

# --- git metadata git itself would reject fails closed (detection reads it
# without host git, docs/workspace.md) ---
broken=$(new_ws broken)
in_ws "$broken" "${gitc[@]}" init -q
echo '[broken' >> "$broken/.git/config"
out=$(cd "$broken" && "$CORDON" run -- true 2>&1)
rc=$?
is "git failure fails closed (exit 125)" "$rc" 125
like "git failure is explained" "$out" "bad config line 6 in $broken/.git/config"

# --- a start leaves the workspace as it was (the host user's next `git
# status`, hooks and file times): nothing created, written or touched, a
# missing .git/hooks stays missing ---
still=$(new_ws still)
in_ws "$still" "${gitc[@]}" init -q
echo a > "$still/a"
in_ws "$still" "${gitc[@]}" add a
in_ws "$still" "${gitc[@]}" commit -qm first
rm -rf "$still/.git/hooks"
tree_state() { (cd "$1" && find . -printf '%p %M %s %T@\n' | sort); }
before=$(tree_state "$still")
cordon_run "$still" -- true
is "a run in a repository without .git/hooks exits 0" "$rc" 0
is "the workspace is unchanged after a start" "$(tree_state "$still")" "$before"
ok "a missing .git/hooks is not created" test ! -e "$still/.git/hooks"
# A repository without a commit has no .git/logs yet: the start makes that
# one empty directory (gitguard.c: the first commit's reflog then reaches the
# host), and nothing else.
fresh=$(new_ws fresh)
in_ws "$fresh" "${gitc[@]}" init -q
echo a > "$fresh/a"
before=$(tree_state "$fresh" | grep -v '^\./\.git ')
cordon_run "$fresh" -- true
added=$(comm -13 <(echo "$before") <(tree_state "$fresh" | grep -v '^\./\.git ') | cut -d' ' -f1-2)
is "a repository without a commit: only an empty .git/logs is added" "$added" "./.git/logs drwxr-xr-x"
is "... and it is empty" "$(ls -A "$fresh/.git/logs" | wc -l)" 0
is "... nothing is removed or changed" "$(comm -23 <(echo "$before") <(tree_state "$fresh" | grep -v '^\./\.git '))" ""

# --- unsafe roots ---
for d in / /usr /etc /proc "$HOME"; do
    out=$(cd "$d" && PWD="$d" "$CORDON" run -- true 2>&1)
    rc=$?
    is "workspace $d is refused (125)" "$rc" 125
    like "workspace $d refusal names the reason" "$out" "refusing"
done
tap_done
