#!/usr/bin/env bash
# Trust cannot be harvested (issue 14): a .cordon.toml created or changed
# during a sandboxed session is never offered for trust with a nudge;
# `cordon trust` shows the file and what it changes and needs a terminal or
# --yes; a workspace file, even trusted, cannot mount the user's home,
# credential or policy directories. Each case plays the agent (or a write
# during its session), then the user's ordinary next step: the next `cordon
# run`, `cordon trust`. HOME and XDG_CONFIG_HOME are temporary (the "user's"
# ~/.ssh is a fake key), so this runs unprivileged too.
. "$CORDON_SRC/tests/lib/tap.sh"
. "$CORDON_SRC/tests/lib/cordon.sh"
mkdir -p "$TEST_TMP/xdg/cordon" "$TEST_TMP/etc" "$TEST_TMP/home/.ssh" "$TEST_TMP/home/.aws"
home=$(cd "$TEST_TMP/home" && pwd -P)
export XDG_CONFIG_HOME=$TEST_TMP/xdg CORDON_ETC_DIR=$TEST_TMP/etc HOME=$home
export XDG_RUNTIME_DIR=$TEST_TMP/runtime
mkdir -p "$XDG_RUNTIME_DIR" && chmod 700 "$XDG_RUNTIME_DIR"
key="PRIVATE-KEY-$RANDOM$RANDOM"
echo "$key" > "$home/.ssh/id_ed25519"
echo "aws_secret_access_key = AWS$key" > "$home/.aws/credentials"
guard=$XDG_CONFIG_HOME/cordon/trust-guard

# run_in DIR ARGS...: cordon ARGS in DIR; stdout in $out, stderr in $err.
run_in() {
    local d=$1; shift
    out=$(cd "$d" && PWD="$d" "$CORDON" "$@" 2>"$TEST_TMP/stderr" </dev/null)
    rc=$?
    err=$(cat "$TEST_TMP/stderr")
}
# during_session DIR SCRIPT: runs SCRIPT on the host while a `cordon run` in
# DIR is between its start and its end (the write counts as the session's).
during_session() {
    local d=$1 script=$2
    rm -f "$d/.started"
    (cd "$d" && PWD="$d" exec "$CORDON" run -- sh -c 'touch .started; sleep 2' >/dev/null 2>&1 </dev/null) &
    local pid=$! i
    for i in $(seq 100); do [ -e "$d/.started" ] && break; sleep 0.05; done
    (cd "$d" && eval "$script")
    wait "$pid"
    rm -f "$d/.started"
}
trusted() { "$CORDON" trust --list 2>/dev/null | grep -q "^$1	"; }
export CORDON

# 1. The sandbox itself creates .cordon.toml (there was none at start). If
# the protected-path rule keeps it from being created, there is nothing to
# harvest; if it is created, the next run must not nudge.
ws=$(new_ws created); ws=$(cd "$ws" && pwd -P)
sh_in "$ws" 'printf "[network]\nmode = \"open\"\n" > .cordon.toml'
run_in "$ws" run -- true
if [ -e "$ws/.cordon.toml" ]; then
    unlike "sandbox-created .cordon.toml: the next run does not nudge to trust it" "$err" "cordon trust"
    like "... it says a sandboxed session wrote it" "$err" "\`\.cordon\.toml\` was written by a sandboxed session; review it before trusting"
    ok "... the marker lives in the user's state" bash -c 'find "$1" -name "*.written" | grep -q .' _ "$guard"
    is "... not in the workspace" "$(ls -A "$ws")" ".cordon.toml"
else
    pass "sandbox could not create .cordon.toml: nothing to trust"
    pass "... (no nudge possible)"
    pass "... (no marker needed)"
fi

# 2. Written on the host while a session runs (the case where the sandbox
# got a missing protected path, or the file was replaced by rename during
# the session), both when it did not exist and when it did.
ws=$(new_ws during); ws=$(cd "$ws" && pwd -P)
during_session "$ws" 'printf "[limits]\npids = 2000\n[network]\nmode = \"allowlist\"\nallow_hosts = [\"evil.example\"]\n" > .cordon.toml'
ok "written during a session: the file is there" test -s "$ws/.cordon.toml"
run_in "$ws" run -- bash -c 'ulimit -u'
is "... the next run does not honour it" "$out" "1024"
unlike "... and does not nudge to trust it" "$err" "cordon trust"
like "... it warns that a sandboxed session wrote it" "$err" "ignoring $ws/\.cordon\.toml: \`\.cordon\.toml\` was written by a sandboxed session; review it before trusting"
run_in "$ws" config
unlike "... cordon config does not nudge either" "$err" "cordon trust"

# 3. cordon trust without a terminal and without --yes refuses, showing the
# file and what it changes.
run_in "$ws" trust
is "cordon trust without a terminal or --yes refuses (exit 1)" "$rc" 1
like "... saying to review and pass --yes" "$err" "no terminal to confirm on.*--yes"
like "... after showing the file" "$err" "allow_hosts = \[\"evil.example\"\]"
like "... and what trusting it changes: the network" "$err" '! network.mode = "allowlist" \(was "deny"; line 4\)'
like "... the hosts" "$err" 'network.allow_hosts = \["evil.example"\]'
like "... the raised limit" "$err" '! limits.pids = 2000 \(was 1024; line 2\)'
like "... and that a sandboxed session wrote it" "$err" "was written by a sandboxed session; review it before trusting"
is "... stdout stays empty" "$out" ""
ok "... and nothing was trusted" bash -c '! "$CORDON" trust --list | grep -q "^$1	"' _ "$ws"
run_in "$ws" run -- bash -c 'ulimit -u'
is "... the file is still not honoured" "$out" "1024"

# 4. With --yes it trusts exactly the reviewed content.
run_in "$ws" trust --yes
is "cordon trust --yes trusts" "$out" "trusted $ws"
run_in "$ws" run -- bash -c 'ulimit -u'
is "... the trusted file applies" "$out" "2000"
is "... without a warning" "$err" ""
ok "... trust --list shows it" trusted "$ws"

# 4b. On a terminal it asks, and only "y" trusts.
if command -v script >/dev/null; then
    tws=$(new_ws tty); tws=$(cd "$tws" && pwd -P)
    printf '[limits]\npids = 70\n' > "$tws/.cordon.toml"
    out=$(cd "$tws" && echo n | script -qec "$CORDON trust" /dev/null 2>&1)
    like "on a terminal cordon trust shows the change and asks" "$out" "limits.pids = 70 \(was 1024; line 2\).*Trust this file\? \[y/N\]"
    like "... answering n does not trust" "$out" "not trusted: $tws"
    ok "... nothing recorded" bash -c '! "$CORDON" trust --list | grep -q "^$1	"' _ "$tws"
    out=$(cd "$tws" && echo y | script -qec "$CORDON trust" /dev/null 2>&1)
    like "... answering y trusts" "$out" "trusted $tws"
    ok "... recorded" bash -c '"$CORDON" trust --list | grep -q "^$1	"' _ "$tws"
else
    for i in 1 2 3 4 5; do skip "cordon trust on a terminal" "no script(1)"; done
fi

# 5. A trusted file changed afterwards (host, outside a session) is not
# honoured until trusted again; one changed during a session is flagged.
printf '[limits]\npids = 50\n' > "$ws/.cordon.toml"
run_in "$ws" run -- bash -c 'ulimit -u'
is "a trusted file changed since is not honoured" "$out" "1024"
like "... warned as changed" "$err" "changed since the workspace was trusted"
run_in "$ws" trust --yes
run_in "$ws" run -- bash -c 'ulimit -u'
is "... honoured once trusted again" "$out" "50"
during_session "$ws" 'printf "[limits]\npids = 0\n" > .cordon.toml.new && mv .cordon.toml.new .cordon.toml'
run_in "$ws" run -- bash -c 'ulimit -u'
is "a trusted file replaced during a session is not honoured" "$out" "1024"
unlike "... and not offered for trust" "$err" "cordon trust"
like "... flagged as written by a sandboxed session" "$err" "was written by a sandboxed session"

# 6. A session that dies without its end (supervisor SIGKILLed) still counts.
ws=$(new_ws killed); ws=$(cd "$ws" && pwd -P)
(cd "$ws" && PWD="$ws" exec "$CORDON" run -- sh -c 'touch .started; sleep 30' >/dev/null 2>&1 </dev/null) &
pid=$!
cleanup_pids+=("$pid")
for i in $(seq 100); do [ -e "$ws/.started" ] && break; sleep 0.05; done
printf '[limits]\npids = 0\n' > "$ws/.cordon.toml"
kill -9 "$pid"; wait "$pid" 2>/dev/null
sleep 0.5
rm -f "$ws/.started"
run_in "$ws" run -- true
unlike "written while a killed session ran: no nudge" "$err" "cordon trust"
like "... flagged" "$err" "was written by a sandboxed session"
run_in "$ws" run -- true
like "... still flagged at the run after (the dead session's record is settled, not dropped)" "$err" "was written by a sandboxed session"

# 7. An untouched file that the user wrote is offered as before.
ws=$(new_ws mine); ws=$(cd "$ws" && pwd -P)
printf '[limits]\npids = 60\n' > "$ws/.cordon.toml"
run_in "$ws" run -- true
like "a file no session wrote: the usual hint" "$err" "not trusted \(run \`cordon trust\` to use it\)"

# 8. The review escapes what a terminal would interpret.
printf '[limits]\npids = 61 # \033[2K\033[1Ahidden \xe2\x80\xae evil\n' > "$ws/.cordon.toml"
run_in "$ws" trust
like "the review shows an escape sequence escaped" "$err" '\\x1b\[2K\\x1b\[1Ahidden'
like "... and a bidi override escaped" "$err" '\\u202e evil'
like "... and says how many characters it escaped" "$err" 'it holds 3 control, invisible or invalid character'
ok "... no raw ESC or U+202E reaches the terminal" \
    bash -c '! grep -qF "$(printf "\033")" "$1" && ! grep -qF "$(printf "\342\200\256")" "$1"' _ "$TEST_TMP/stderr"

# 9. Credential directories: a trusted workspace file cannot mount them.
ws=$(new_ws creds); ws=$(cd "$ws" && pwd -P)
printf '[[mounts]]\nhost_path = "%s/.ssh"\n' "$home" > "$ws/.cordon.toml"
run_in "$ws" trust
like "trust review of a ~/.ssh mount says nothing would run" "$err" "nothing runs:.*\.cordon\.toml:1: mount of $home/\.ssh is refused"
run_in "$ws" trust --yes
run_in "$ws" run -- cat "$home/.ssh/id_ed25519"
is "a trusted workspace file mounting ~/.ssh stops the start (125)" "$rc" 125
like "... naming file, line and the rule" "$err" "$ws/\.cordon\.toml:1: mount of $home/\.ssh is refused in the workspace file: .*rule: a workspace file may not mount the user's home, credential or policy directories"
unlike "... and the key was not read" "$out$err" "$key"
printf '[[mounts]]\nhost_path = "%s/.ssh"\nguest_path = "/mnt/keys"\n' "$home" > "$ws/.cordon.toml"
run_in "$ws" trust --yes
run_in "$ws" run -- cat /mnt/keys/id_ed25519
is "... at another guest path too (125)" "$rc" 125
unlike "... key not read" "$out$err" "$key"
ln -s "$home/.aws" "$ws/aws"
printf '[[mounts]]\nhost_path = "%s/aws"\nguest_path = "/mnt/aws"\n' "$ws" > "$ws/.cordon.toml"
run_in "$ws" trust --yes
run_in "$ws" run -- cat /mnt/aws/credentials
is "a workspace symlink to ~/.aws as a mount source is refused (125)" "$rc" 125
like "... naming where it resolves" "$err" "mount of $ws/aws \(resolves to $home/\.aws\) is refused"
unlike "... the credentials were not read" "$out$err" "AWS$key"
rm "$ws/aws"
for src in "$home" "$(dirname "$home")" "$home/.config" "$XDG_CONFIG_HOME" "$home/.netrc" \
    "$XDG_RUNTIME_DIR" /tmp "/tmp/tmux-$(id -u)" /tmp/.X11-unix /var/tmp /run /etc /proc /dev/shm /; do
    printf '[[mounts]]\nhost_path = "%s"\nguest_path = "/mnt/x"\n' "$src" > "$ws/.cordon.toml"
    run_in "$ws" trust --yes
    run_in "$ws" run -- true
    is "a workspace mount of $src is refused (125)" "$rc" 125
    like "... by the credential rule" "$err" "mount of $src.* is refused in the workspace file: .*rule: a workspace file may not mount"
done
# skills.paths is read by the host for the agent, without a prompt: a
# workspace file cannot grant the key that way either (cordon mcp's read).
printf '[skills]\npaths = ["%s/.ssh/id_ed25519"]\n' "$home" > "$ws/.cordon.toml"
run_in "$ws" trust --yes
out=$(cd "$ws" && PYTHONPATH="$CORDON_SRC/tests/lib" python3 -c "
from mcp_client import Mcp, text_of
m = Mcp('$CORDON', '$ws')
m.initialize()
print(text_of(m.call(1, 'read', {'path': '$home/.ssh/id_ed25519'})))
m.close()
" 2>&1)
unlike "a workspace skills.paths entry in ~/.ssh does not hand over the key (mcp read)" "$out" "$key"
like "... the tools are blocked naming file, line and rule" "$out" "\.cordon\.toml:2: skills\.paths entry $home/\.ssh/id_ed25519 is refused in the workspace file: .*rule: a workspace file may not expose"
mkdir -p "$TEST_TMP/data"
echo data-ok > "$TEST_TMP/data/f"
printf '[[mounts]]\nhost_path = "%s/data"\nguest_path = "/mnt/data"\n' "$TEST_TMP" > "$ws/.cordon.toml"
run_in "$ws" trust --yes
run_in "$ws" run -- cat /mnt/data/f
is "an ordinary host directory still mounts from a trusted workspace file" "$out" "data-ok"
rm -f "$ws/.cordon.toml"

# 10. Another workspace's file below the root: a nested repository (as a
# submodule is) and a project in a non-git directory. The sandbox of the
# enclosing workspace writes it; the user then works in the inner one.
ws=$(new_ws outer); ws=$(cd "$ws" && pwd -P)
git init -q "$ws" && git init -q "$ws/inner"
plain=$(new_ws plain); plain=$(cd "$plain" && pwd -P)
mkdir -p "$plain/project"
sh_in "$ws" 'printf "[limits]\npids = 0\n" > inner/.cordon.toml && echo done'
is "the outer sandbox wrote the nested repository's file" "$out" "done"
sh_in "$plain" 'printf "[limits]\npids = 0\n" > project/.cordon.toml && echo done'
is "the sandbox of a non-git directory wrote a project's file below it" "$out" "done"
run_in "$ws/inner" run -- bash -c 'ulimit -u'
is "a nested repository's file written by the outer session is not honoured" "$out" "1024"
unlike "... and not offered for trust in the inner workspace" "$err" "cordon trust"
like "... flagged as written by a sandboxed session" "$err" "inner/\.cordon\.toml: \`\.cordon\.toml\` was written by a sandboxed session"
run_in "$plain/project" run -- true
unlike "a non-git project's file written from the enclosing directory's session: no nudge" "$err" "cordon trust"
like "... flagged" "$err" "was written by a sandboxed session"
sleep 2.2
printf '[limits]\npids = 62\n' > "$ws/inner/.cordon.toml"
run_in "$ws/inner" run -- true
like "... a later edit on the host is the user's: the usual hint" "$err" "not trusted \(run \`cordon trust\` to use it\)"

# 11. The user's own configuration may mount ~/.ssh (their choice), warned.
printf '[[mounts]]\nhost_path = "%s/.ssh"\nguest_path = "/mnt/keys"\n' "$home" > "$XDG_CONFIG_HOME/cordon/config.toml"
run_in "$ws" run -- cat /mnt/keys/id_ed25519
is "a user-layer mount of ~/.ssh works" "$out" "$key"
like "... with a warning" "$err" "mount $home/\.ssh: exposes your credentials to the sandbox \(read-only\)"
# ... but not through a symlink the agent planted in the workspace: that
# mount points where the agent says, whoever named it.
mkdir -p "$ws/shared"
echo shared-ok > "$ws/shared/f"
printf '[[mounts]]\nhost_path = "%s/shared"\nguest_path = "/mnt/shared"\n' "$ws" > "$XDG_CONFIG_HOME/cordon/config.toml"
run_in "$ws" run -- cat /mnt/shared/f
is "a user-layer mount of a workspace directory works" "$out" "shared-ok"
sh_in "$ws" 'rm -rf shared && ln -s '"$home"'/.ssh shared && echo planted'
is "the agent replaces it with a symlink to ~/.ssh" "$out" "planted"
run_in "$ws" run -- cat /mnt/shared/id_ed25519
is "... the next start is refused (125)" "$rc" 125
like "... saying it resolves out of the workspace through a symlink" "$err" "mount $ws/shared: resolves out of the workspace $ws to $home/\.ssh through a symlink"
unlike "... the key was not read" "$out$err" "$key"
rm -f "$XDG_CONFIG_HOME/cordon/config.toml" "$ws/shared"

tap_done
