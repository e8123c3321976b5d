# Review mode's core on one backend (docs/review.md), sourced after tap.sh,
# cordon.sh and the backend's fixture by review-vm.sh and review-docker.sh:
# RB holds the backend's settings (--backend vm, or the docker fixture's D),
# RN a name prefix, RL the backend's name in the test names. Every kind of change, apply, a conflict with a host
# edit, what apply never writes, checkpoints and a rewind after bash
# rewrote files, the MCP requests; six sandbox starts in all (a vm boots
# once per start).
# The host-side readers are the ns backend's (review.sh): what is asserted
# is that the backend's overlay left the layer in the form they read.
. "$CORDON_SRC/tests/lib/fixtures.sh"
. "$CORDON_SRC/tests/lib/review.sh"
private_runtime_dirs
rb=${RL:-${RB[*]}}

# --- every kind of change, in one sandbox ---
rws=$(new_ws "${RN}ws")
review_plant_ws "$rws"
before=$(tree_sum "$rws")
script=$review_changes'cat a.txt
'
cordon_run "$rws" "${RB[@]}" --review --name "${RN}k" -- bash -c "$script"
is "$rb: the agent's script ran in review mode" "$rc" 0
like "$rb: the agent sees its own change" "$out" "one.two"
is "$rb: nothing the agent did reached the host" "$(tree_sum "$rws")" "$before"
ok "$rb: the layer is kept in the state directory" test -d "$XDG_RUNTIME_DIR/cordon/${RN}k/review/upper"
ch=$("$CORDON" changes "${RN}k" 2>&1)
like "$rb: changes: modified file" "$ch" $'(^|\n)M  a.txt\n'
like "$rb: changes: deleted directory (a whiteout)" "$ch" $'(^|\n)D  gone/\n'
like "$rb: changes: rename over an existing file" "$ch" $'M  over.txt\n'
like "$rb: changes: the renamed file's old name is deleted" "$ch" $'D  src.txt\n'
like "$rb: changes: mode change" "$ch" $'T  run.sh \\(mode 644 -> 755\\)'
like "$rb: changes: file replaced by a directory" "$ch" $'M  typechange/ \\(file -> directory\\)'
like "$rb: changes: symlink retargeted" "$ch" $'M  oldlink \\(symlink\\)'
like "$rb: changes: added binary file" "$ch" $'A  new.bin\n'
like "$rb: changes: added directory tree" "$ch" $'A  newdir/x/y/z\n'
like "$rb: changes: an odd name is shown escaped" "$ch" 'A  odd name\\x0awith newline \\u202e'
like "$rb: changes: an emptied and recreated directory (opaque) loses the old entry" "$ch" $'D  sub/k\n'
like "$rb: changes: and has the new one" "$ch" $'A  sub/n\n'
like "$rb: diff names a binary file" "$("$CORDON" diff "${RN}k" big.bin)" "Binary files a/big.bin and b/big.bin differ"
sleep 0.05
echo host-edit >"$rws/conflict.txt"
ap=$(cd "$rws" && "$CORDON" apply "${RN}k" 2>&1)
is "$rb: apply exits 1 when something was not applied" "$?" 1
like "$rb: apply reports the conflict" "$ap" "conflict: conflict.txt: the host changed it since the session started"
is "$rb: the host's version of a conflict is kept" "$(cat "$rws/conflict.txt")" host-edit
is "$rb: applied: modified file" "$(cat "$rws/a.txt")" $'one\ntwo'
ok "$rb: applied: deleted directory" test ! -e "$rws/gone"
is "$rb: applied: rename over an existing file" "$(cat "$rws/over.txt")" moved-content
ok "$rb: applied: the renamed file's old name is gone" test ! -e "$rws/src.txt"
is "$rb: applied: mode" "$(stat -c %a "$rws/run.sh")" 755
is "$rb: applied: file replaced by a directory" "$(cat "$rws/typechange/f")" inside
is "$rb: applied: symlink target" "$(readlink "$rws/oldlink")" over.txt
is "$rb: applied: binary content" "$(od -An -c "$rws/new.bin" | tr -s ' ')" " a \\0 b \\0 c"
ok "$rb: applied: large file" test "$(stat -c %s "$rws/big.bin")" = 2000000
is "$rb: applied: hard links stay one file" "$(stat -c %i "$rws/hl1")" "$(stat -c %i "$rws/hl2")"
ok "$rb: applied: odd name" test -f "$rws/$(printf 'odd name\nwith newline \xe2\x80\xae')"
is "$rb: applied: nested new directories" "$(cat "$rws/newdir/x/y/z")" leaf
ok "$rb: applied: opaque directory's old entry removed" test ! -e "$rws/sub/k"
is "$rb: applied: opaque directory's new entry" "$(cat "$rws/sub/n")" fresh
is "$rb: only the conflict is still pending" "$("$CORDON" changes "${RN}k" 2>&1)" \
    "M  conflict.txt [conflict: the host changed it since the session started]"
"$CORDON" discard "${RN}k" >/dev/null 2>&1
is "$rb: discard empties the layer the backend wrote (its whiteouts included)" \
    "$(find "$XDG_RUNTIME_DIR/cordon/${RN}k/review/upper" -mindepth 1 | wc -l)" 0
out=$("$CORDON" rm "${RN}k" 2>&1)
is "$rb: cordon rm removes the sandbox and its layer: $out" "$?" 0

# --- what apply never writes: git metadata, protected paths, trusted files ---
gws=$(new_ws "${RN}git")
git -C "$gws" init -q
git -C "$gws" -c user.email=t@t -c user.name=t commit -q --allow-empty -m init
mkdir -p "$gws/conf"
echo host-secret >"$gws/conf/secret"
cp "$gws/.git/config" "$TEST_TMP/${RN}config.before"
cordon_run "$gws" "${RB[@]}" --review --name "${RN}g" --set 'protected_paths=["conf/secret"]' -- bash -c '
echo planted > conf/secret 2>/dev/null; echo "[core]" >> .git/config 2>/dev/null
echo hook > .git/hooks/pre-commit 2>/dev/null
mkdir -p lib/.git; echo "[core] fsmonitor = evil" > lib/.git/config
echo x > .envrc; mkdir -p .vscode; echo "{}" > .vscode/settings.json
echo beside > conf/beside; mv conf conf.old 2>/dev/null; mkdir -p conf; echo planted > conf/secret
echo fine > fine.txt; true'
ch=$("$CORDON" changes "${RN}g" 2>&1)
like "$rb: a nested .git is never applied" "$ch" "lib/.git/config \\[never applied: git metadata"
like "$rb: .envrc is never applied" "$ch" ".envrc \\[never applied"
out=$(cd "$gws" && "$CORDON" apply "${RN}g" 2>&1)
unlike "$rb: apply never writes the protected path, even made anew" "$out" "applied: conf/secret"
is "$rb: the protected path on the host is the host's" "$(cat "$gws/conf/secret")" host-secret
ok "$rb: no nested .git, .envrc or .vscode reached the host" \
    test ! -e "$gws/lib/.git" -a ! -e "$gws/.envrc" -a ! -e "$gws/.vscode"
ok "$rb: the host's .git/config is unchanged" cmp -s "$gws/.git/config" "$TEST_TMP/${RN}config.before"
ok "$rb: no hook reached the host" test ! -e "$gws/.git/hooks/pre-commit"
is "$rb: the ordinary file was applied" "$(cat "$gws/fine.txt")" fine
"$CORDON" rm "${RN}g" >/dev/null 2>&1

# --- checkpoints at tool-call boundaries; rewind after bash rewrote files ---
cws=$(new_ws "${RN}ck")
for i in $(seq 1 30); do echo "orig $i" >"$cws/f$i"; done
out=$(cd "$cws" && PYTHONPATH="$CORDON_SRC/tests/lib" python3 - "$CORDON" "${RN}c" "${RB[@]}" <<'EOF'
import subprocess, sys
from mcp_client import Rpc
rpc = Rpc([sys.argv[1], "mcp", "--review", "--name", sys.argv[2]] + sys.argv[3:], stderr=subprocess.DEVNULL)
p = rpc.proc
def call(name, args):
    r = rpc("tools/call", {"name": name, "arguments": args})["result"]
    return r.get("_meta", {}).get("cordon/checkpoint"), "".join(c.get("text", "") for c in r["content"]).strip()
rpc("initialize", {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}})
print("ck", call("write", {"path": "note.txt", "content": "first\n"})[0])
print("ck", call("edit", {"path": "f1", "edits": [{"oldText": "orig 1", "newText": "edited 1"}]})[0])
print("ck", call("bash", {"command": "for i in $(seq 1 30); do echo bash $i > f$i; done; rm note.txt; echo done"})[0])
p.stdin.close(); p.wait()
EOF
)
like "$rb: each call ends with a checkpoint" "$out" $'ck 1\nck 2\nck 3'
is "$rb: changes --call 1: what the write made" "$("$CORDON" changes "${RN}c" --call 1 2>&1)" "A  note.txt"
c3=$("$CORDON" changes "${RN}c" --call 3 2>&1)
is "$rb: changes --call 3: bash rewrote 30 files and removed one (its writes were on the host when the checkpoint was taken)" \
    "$(printf '%s\n' "$c3" | wc -l)" 31
like "$rb: changes --call 3 names the removed file" "$c3" "D  note.txt"
out=$("$CORDON" rewind "${RN}c" --to 2 2>&1)
like "$rb: rewind says processes are not rewound" "$out" "processes are not rewound"
cordon_run "$cws" "${RB[@]}" --review --name "${RN}c" -- bash -c 'cat f1 f2 note.txt'
like "$rb: after rewind --to 2 the sandbox has the edit, bash's rewrite undone, the deleted file back" \
    "$out" $'^edited 1\norig 2\nfirst($|\n)'
is "$rb: rewind never touched the host" "$(cat "$cws/f1") $(ls "$cws" | wc -l)" "orig 1 30"
"$CORDON" rm "${RN}c" >/dev/null 2>&1

# --- the MCP surface (review-mcp.py, as review.sh runs it on ns): rewind
# and discard stop the sandbox, change the layer and start it again ---
mws=$(new_ws "${RN}mcp")
echo host >"$mws/a.txt"
out=$(cd "$mws" && python3 "$CORDON_SRC/tests/integration/review-mcp.py" "$CORDON" "${RN}m" "${RB[@]}" 2>/dev/null)
like "$rb: MCP: the status carries the mode and the pending count" "$out" "status review 2"
like "$rb: MCP: cordon/reviewApply applies the paths asked for" "$out" "apply applied:b.txt"
like "$rb: MCP: bash's file and process before the rewind" "$out" $'before-rewind c\n1\n'
like "$rb: MCP: cordon/reviewRewind restarts the same sandbox" "$out" "rewind 2 True sandboxed True"
like "$rb: MCP: after the rewind, bash's and the later write's files are gone, no process left" "$out" \
    $'after-rewind c-gone\nesc-gone\nagent\n0\n'
like "$rb: MCP: cordon/reviewDiscard empties the layer" "$out" "discard True 0"
like "$rb: MCP: after the discard the sandbox reads the host's file" "$out" "after-discard host"
like "$rb: MCP: a rewind while a tool call runs is refused" "$out" \
    "rewind-inflight a tool call is still running: rewind after it ends"
is "$rb: MCP: the host has only the applied file" "$(cat "$mws/a.txt" "$mws/b.txt")" $'host\nb'
"$CORDON" rm "${RN}m" >/dev/null 2>&1
