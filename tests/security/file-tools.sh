#!/usr/bin/env bash
# The file tools under hostile input (security cases 8-11), through
# `cordon tool` as a client would call them, and configuration that must stop
# a sandbox from starting (cases 40-42) through `cordon run`. Each asserts the
# precise outcome, that nothing hung, and that nothing on the host changed.
. "$CORDON_SRC/tests/lib/tap.sh"
. "$CORDON_SRC/tests/lib/cordon.sh"

PY=/usr/bin/python3
ws=$(new_ws ws)
outside=$(new_ws outside)
echo HOST-SECRET-8 > "$outside/f"
echo original > "$outside/target"
outside_sum=$(cat "$outside"/* | md5sum)

# tool DIR NAME JSON: `cordon tool` in DIR with a time bound; $out, $rc.
tool() {
    local d=$1; shift
    out=$(cd "$d" && PWD="$d" timeout 60 "$CORDON" tool "$@" 2>&1 </dev/null)
    rc=$?
}
# field EXPR: a Python expression over the result r, printed.
field() { $PY -c "import json,sys; r=json.loads(sys.stdin.read()); print($1)" <<<"$out" 2>&1; }

# --- case 8: a path component swapped for a symlink while tools run ---
mkdir -p "$ws/race/d"
echo inside-8 > "$ws/race/d/f"
ln -s "$outside" "$ws/race/lnk"
# Host side: d alternates between the real directory and a symlink to a
# host directory outside the view, as fast as rename allows.
(
    cd "$ws/race" || exit
    while :; do
        mv -T d real 2>/dev/null; mv -T lnk d 2>/dev/null
        mv -T d lnk 2>/dev/null; mv -T real d 2>/dev/null
    done
) &
racer=$!
cleanup_pids+=("$racer")
calls="$TEST_TMP/race.jsonl"
for i in $(seq 150); do
    echo "{\"id\":$i,\"tool\":\"read\",\"args\":{\"path\":\"race/d/f\"}}"
    echo "{\"id\":\"g$i\",\"tool\":\"grep\",\"args\":{\"pattern\":\"SECRET|inside\",\"path\":\"race/d\"}}"
    echo "{\"id\":\"w$i\",\"tool\":\"write\",\"args\":{\"path\":\"race/d/f\",\"content\":\"inside-8\\n\"}}"
    echo "{\"id\":\"e$i\",\"tool\":\"edit\",\"args\":{\"path\":\"race/d/target\",\"edits\":[{\"oldText\":\"original\",\"newText\":\"changed\"}]}}"
done >"$calls"
out=$(cd "$ws" && timeout 120 "$CORDON" tool --batch <"$calls" 2>&1)
rc=$?
kill "$racer" 2>/dev/null
wait "$racer" 2>/dev/null
is "case 8: the batch finishes under the rename loop" "$rc" 0
is "case 8: every call has a result" "$(grep -c '"id"' <<<"$out")" 600
unlike "case 8: nothing outside the view is read" "$out" "HOST-SECRET-8"
is "case 8: nothing outside the view changed" "$(cat "$outside"/* | md5sum)" "$outside_sum"
ok "case 8: nothing was created outside" test "$(ls "$outside" | wc -l)" -eq 2
bad=$($PY -c '
import json, sys
bad = 0
for line in sys.stdin:
    r = json.loads(line)
    text = "".join(c.get("text", "") for c in r.get("content", []))
    if "error" in r or not isinstance(r.get("isError"), bool):
        bad += 1
print(bad)' <<<"$out" 2>&1)
is "case 8: each result is a clean result or error result" "$bad" 0

# --- case 9: hostile paths ---
tool "$ws" read '{"path":"../../../../../../etc/shadow"}'
is "case 9: ../../etc/shadow -> an error result" "$(field 'r["isError"], r["content"][0]["text"]')" \
    "True ENOENT: no such file or directory, access '/etc/shadow'"
tool "$ws" read "{\"path\":\"$outside/f\"}"
is "case 9: an absolute host path outside the view -> ENOENT" \
    "$(field 'r["isError"], r["content"][0]["text"].split(",")[0]')" "True ENOENT: no such file or directory"
tool "$ws" write "{\"path\":\"$outside/target\",\"content\":\"x\"}"
is "case 9: writing a host path outside the view leaves it" "$(cat "$outside/target")" "original"
tool "$ws" read '{"path":"a\u0000b"}'
is "case 9: an embedded NUL is refused before any sandbox starts" "$rc" 125
like "case 9: ... saying why" "$out" "NUL|\\\\u0000 is not allowed"
echo '{"id":1,"tool":"read","args":{"path":"a\u0000/../../etc/passwd"}}' >"$TEST_TMP/nul.jsonl"
out=$(cd "$ws" && timeout 60 "$CORDON" tool --batch <"$TEST_TMP/nul.jsonl" 2>&1)
like "case 9: in a batch, an embedded NUL is an error line" "$out" '"error":"line 1: .*invalid JSON'
long=$(printf 'a%.0s' $(seq 5000))
tool "$ws" read "{\"path\":\"$long\"}"
is "case 9: a 5000-byte path -> an error result" "$(field 'r["isError"]')" "True"
long=$(printf 'abcdefgh/%.0s' $(seq 600))
tool "$ws" write "{\"path\":\"$long/x\",\"content\":\"x\"}"
is "case 9: a 5400-byte nested write path -> an error result" "$(field 'r["isError"]')" "True"
out=$(cd "$ws" && printf '{"id":1,"tool":"read","args":{"path":"\xff\xfe/x"}}\n' |
    timeout 60 "$CORDON" tool --batch 2>&1)
like "case 9: invalid UTF-8 in a path -> an error line, no crash" "$out" '"error":"line 1: .*invalid JSON'
tool "$ws" read '{"path":"\udc80"}'
is "case 9: a lone surrogate is refused" "$rc" 125

# --- case 10: FIFOs and devices: refused or bounded, never hang ---
mkfifo "$ws/fifo"
start=$SECONDS
tool "$ws" read '{"path":"fifo"}'
is "case 10: read on a FIFO is refused" "$out" \
    '{"content":[{"type":"text","text":"EINVAL: invalid argument, read"}],"details":{},"isError":true}'
tool "$ws" edit '{"path":"fifo","edits":[{"oldText":"a","newText":"b"}]}'
is "case 10: edit on a FIFO is refused" "$(field 'r["isError"], r["content"][0]["text"]')" \
    "True Could not edit file: fifo. Error code: EINVAL."
tool "$ws" grep '{"pattern":"x","path":"fifo"}'
is "case 10: grep on a FIFO returns" "$rc" 0
tool "$ws" read '{"path":"/dev/zero"}'
is "case 10: read /dev/zero is bounded" "$(field 'r["isError"], r["content"][0]["text"]')" \
    "True File size (more than 67108864 bytes) is greater than the 64 MiB cordon reads from a device"
tool "$ws" edit '{"path":"/dev/zero","edits":[{"oldText":"a","newText":"b"}]}'
is "case 10: edit /dev/zero is refused" "$(field 'r["isError"]')" "True"
tool "$ws" grep '{"pattern":"x","path":"/dev/zero"}'
is "case 10: grep /dev/zero returns" "$(field 'r["isError"], r["content"][0]["text"]')" "False No matches found"
tool "$ws" read '{"path":"/dev/tty"}'
is "case 10: /dev/tty is not a terminal of the user's" "$(field 'r["content"][0]["text"]')" \
    "ENXIO: no such device or address, access '/dev/tty'"
tool "$ws" read '{"path":"/proc/kmsg"}'
is "case 10: /proc/kmsg is masked (empty)" "$out" '{"content":[{"type":"text","text":""}],"isError":false}'
ok "case 10: none of these hung (all within 60 s together)" test $((SECONDS - start)) -lt 60

# --- case 11: symlink loops and /proc: terminate, stay inside ---
loopws=$(new_ws loops)
mkdir -p "$loopws/dir"
echo needle > "$loopws/dir/file"
ln -s . "$loopws/dir/self"
ln -s .. "$loopws/dir/up"
ln -s b "$loopws/a"
ln -s a "$loopws/b"
ln -s "$outside" "$loopws/out"
start=$SECONDS
tool "$loopws" grep '{"pattern":"needle|HOST-SECRET"}'
is "case 11: grep through symlink loops finds the file once" "$(field 'r["content"][0]["text"]')" "dir/file:1: needle"
tool "$loopws" find '{"pattern":"**/*"}'
like "case 11: find through symlink loops terminates" "$(field 'r["isError"]')" "False"
unlike "case 11: find does not descend a loop" "$out" "self/self|up/dir"
tool "$loopws" read '{"path":"a"}'
like "case 11: read of a symlink loop -> ELOOP" "$(field 'r["content"][0]["text"]')" "^ELOOP"
tool "$loopws" grep '{"pattern":"zzz-not-there","path":"/proc"}'
is "case 11: grep over /proc terminates" "$rc" 0
tool "$loopws" find '{"pattern":"**/environ","path":"/proc","limit":100000}'
is "case 11: find over /proc terminates" "$rc" 0
unlike "case 11: find over /proc sees only the sandbox's processes" "$(field 'r["content"][0]["text"]')" \
    "^[0-9]{3,}/"
ok "case 11: all within 60 s" test $((SECONDS - start)) -lt 60

# --- cases 40-42: configuration that must stop a sandbox through `cordon run` ---
cfgws=$(new_ws cfgws)
etc=$(new_ws etc)
chmod 755 "$etc"
marker="$cfgws/ran-40"
run_cfg() { # run_cfg: `cordon run` in cfgws with the test's policy directory
    out=$(cd "$cfgws" && CORDON_ETC_DIR="$etc" XDG_CONFIG_HOME="$TEST_TMP/xdg" \
        "$CORDON" run -- touch "$marker" 2>&1 </dev/null)
    rc=$?
}
mkdir -p "$TEST_TMP/xdg/cordon"
printf 'fallback_mode = "host"\n' >"$cfgws/.cordon.toml"
(cd "$cfgws" && XDG_CONFIG_HOME="$TEST_TMP/xdg" "$CORDON" trust --yes >/dev/null 2>&1)
run_cfg
is "case 40: a workspace fallback_mode = host stops cordon run" "$rc" 125
like "case 40: ... naming the file and line" "$out" "$cfgws/.cordon.toml:1: fallback_mode = \"host\" is refused"
ok "case 40: ... and nothing ran" test ! -e "$marker"
printf '[[mounts]]\nhost_path = "/var/run/docker.sock"\n' >"$cfgws/.cordon.toml"
(cd "$cfgws" && XDG_CONFIG_HOME="$TEST_TMP/xdg" "$CORDON" trust --yes >/dev/null 2>&1)
run_cfg
is "case 40: a Docker socket mount stops cordon run" "$rc" 125
ok "case 40: ... and nothing ran" test ! -e "$marker"
rm -f "$cfgws/.cordon.toml"

printf 'limits.pids = \n' >"$etc/default.toml"
chmod 644 "$etc/default.toml"
run_cfg
is "case 41: an invalid host policy stops cordon run" "$rc" 125
like "case 41: ... naming the file" "$out" "$etc/default.toml:1"
ok "case 41: ... and nothing ran" test ! -e "$marker"
out=$(cd "$cfgws" && CORDON_ETC_DIR="$etc" XDG_CONFIG_HOME="$TEST_TMP/xdg" $PY -c '
import json, subprocess, sys
p = subprocess.Popen([sys.argv[1], "mcp"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                     stderr=subprocess.DEVNULL, text=True)
for m in [{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18",
           "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}},
          {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "bash",
           "arguments": {"command": "touch ran-41"}}}]:
    p.stdin.write(json.dumps(m) + "\n"); p.stdin.flush()
    r = json.loads(p.stdout.readline())
print(r["result"]["isError"], r["result"]["content"][0]["text"])
p.stdin.close(); p.wait()' "$CORDON" 2>&1)
like "case 41: over MCP the tools are blocked, naming the file" "$out" \
    "^True cordon: the bash tool is blocked: .*$etc/default.toml"
ok "case 41: ... and nothing ran" test ! -e "$cfgws/ran-41"
rm -f "$etc/default.toml"

echo 'limits.pids = 5' >"$cfgws/policy.toml"
ln -s "$cfgws/policy.toml" "$etc/default.toml"
run_cfg
is "case 42: a host policy that is a symlink into the workspace stops cordon run" "$rc" 125
like "case 42: ... saying why" "$out" "symlink|inside the workspace"
ok "case 42: ... and nothing ran" test ! -e "$marker"
rm -f "$etc/default.toml" "$cfgws/policy.toml"
out=$(cd "$cfgws" && CORDON_ETC_DIR="$etc" XDG_CONFIG_HOME="$TEST_TMP/xdg" \
    "$CORDON" run --set "mounts=[{host_path=\"$etc\", readonly=false}]" -- touch "$marker" 2>&1 </dev/null)
rc=$?
is "case 42: a writable mount over the policy directory stops cordon run" "$rc" 125
like "case 42: ... saying why" "$out" "may not overlap the policy location"
ok "case 42: ... and nothing ran" test ! -e "$marker"

tap_done
