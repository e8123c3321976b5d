#!/usr/bin/env bash
# The tools through `cordon tool` under failure: a write or edit that fails
# midway leaves the old file whole (no half-written file, no temporary left);
# huge command output stays bounded in the result and in cordon's memory.
. "$CORDON_SRC/tests/lib/tap.sh"
. "$CORDON_SRC/tests/lib/cordon.sh"
export XDG_RUNTIME_DIR=$TEST_TMP/runtime
mkdir -p "$XDG_RUNTIME_DIR" && chmod 700 "$XDG_RUNTIME_DIR"
ws=$(new_ws ws)
printf 'original content\n' > "$ws/keep.txt"

batch() { # batch OPTIONS... < calls -> stdout
    (cd "$ws" && "$CORDON" tool "$@" --batch)
}
out=$(python3 -c 'import json; print(json.dumps({"id":1,"tool":"write","args":{"path":"keep.txt","content":"x" * (3 << 20)}}))' | batch --file-size 1)
like "a write past the file-size limit is an error result" "$out" '"isError":true'
like "... naming EFBIG" "$out" "EFBIG: file too large"
is "... and the old file is whole" "$(cat "$ws/keep.txt")" "original content"
is "... and no temporary file is left" "$(ls -A "$ws")" "keep.txt"

out=$(python3 -c 'import json; print(json.dumps({"id":1,"tool":"edit","args":{"path":"keep.txt","edits":[{"oldText":"original","newText":"x" * (3 << 20)}]}}))' | batch --file-size 1)
like "an edit that cannot be written is an error result" "$out" '"isError":true'
is "... and the old file is whole" "$(cat "$ws/keep.txt")" "original content"
is "... and no temporary file is left" "$(ls -A "$ws")" "keep.txt"

# Calls in flight at once on one file: every edit lands (serialised, none lost).
seq -f 'line %g' 1 20 > "$ws/many.txt"
out=$(python3 -c '
import json
for i in range(1, 21):
    print(json.dumps({"id": i, "tool": "edit", "args": {"path": "many.txt",
        "edits": [{"oldText": "line %d\n" % i, "newText": "edited %d\n" % i}]}}))' | batch)
is "20 edits of one file in flight at once: all succeed" "$(grep -c '"isError":false' <<<"$out")" 20
is "... and every one of them is in the file" "$(grep -c '^edited ' "$ws/many.txt")" 20
rm -f "$ws/many.txt"

# 1 GB on stdout (case 31): a bounded result, the full output in a file
# inside, and cordon's own memory bounded.
"$CORDON" --version >/dev/null
out=$( { cd "$ws" && /usr/bin/time -f 'maxrss=%M' "$CORDON" tool bash '{"command":"head -c 1000000000 /dev/zero | tr \"\\\\0\" a | fold -w 100; echo; echo last line; ls -la /tmp/pi-bash-*.log | wc -l"}'; } 2>&1)
like "1 GB of output: the result keeps the tail" "$out" 'last line'
like "... names the full output file" "$out" '"fullOutputPath":"/tmp/pi-bash-[0-9a-f]+\.log"'
text_len=$(python3 -c 'import json,sys
line=[l for l in sys.stdin.read().splitlines() if l.startswith("{")][0]
print(len(json.loads(line)["content"][0]["text"].encode()))' <<<"$out")
ok "... the result text is bounded ($text_len bytes)" test "$text_len" -le 52000
rss=$(grep -o 'maxrss=[0-9]*' <<<"$out" | cut -d= -f2)
ok "... cordon's peak memory stays bounded (${rss} KiB)" test "${rss:-999999}" -lt 200000
tap_done
