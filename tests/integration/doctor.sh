#!/usr/bin/env bash
# Integration: `cordon doctor`, backend = "auto" and the host-owned
# backend_floor, on this host and on a host without user namespaces
# (simulated: a user namespace whose user.max_user_namespaces is 0, so no
# further one can be made, whatever cordon tries).
. "$CORDON_SRC/tests/lib/tap.sh"
. "$CORDON_SRC/tests/lib/cordon.sh"

export XDG_CONFIG_HOME=$TEST_TMP/xdg CORDON_ETC_DIR=$TEST_TMP/etc
mkdir -p "$XDG_CONFIG_HOME" "$CORDON_ETC_DIR"
ws=$(new_ws dws)
have_vm=false
command -v qemu-system-x86_64 >/dev/null &&
    { [ -e /var/cache/cordon/vm/current/vmlinuz ] || [ -n "${CORDON_VM_DIR:-}" ]; } && have_vm=true

# check_json FILE RC: every row and every backend line of a --json report
check_json() {
    python3 - "$1" "$2" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
rc = int(sys.argv[2])
ids = [c["id"] for c in d["checks"]]
for c in d["checks"]:
    assert set(c) == {"id", "status", "evidence", "fix"}, c
    assert c["status"] in ("PASS", "WARN", "FAIL"), c
    assert c["evidence"].strip(), c
    assert c["status"] == "PASS" or c["fix"].strip(), ("a non-PASS row without a fix", c)
    assert "run `cordon doctor`" not in c["evidence"], c
# every check of the issue has its row (mount-api and overlayfs only when
# a user namespace could be made to try them in)
need = ["container", "userns", "seccomp", "landlock", "cgroups", "tun", "pasta", "qemu",
        "guest-kernel", "kvm", "qemu-mountns", "docker"]
userns = next(c for c in d["checks"] if c["id"] == "userns")
if userns["status"] == "PASS":
    need += ["mount-api", "overlayfs"]
missing = [n for n in need if n not in ids]
assert not missing, ("missing rows", missing, ids)
assert len(ids) == len(set(ids)), ("duplicate rows", ids)
names = [b["name"] for b in d["backends"]]
assert names == ["ns", "vm", "docker"], names
for b in d["backends"]:
    assert isinstance(b["works"], bool) and b["why"].strip(), b
    assert b["strength"] in ("ns", "kernel-boundary", "container"), b
vm = d["backends"][1]
assert not vm["works"] or vm["accelerator"] in ("kvm", "tcg"), vm
assert isinstance(d["ok"], bool) and (rc == 0) == d["ok"], (rc, d["ok"])
a = d["auto"]
assert isinstance(a["works"], bool) and a["why"].strip(), a
assert (a["backend"] is not None) == a["works"], a
print("rows=%d ns=%s vm=%s docker=%s auto=%s" % (len(ids), d["backends"][0]["works"], vm["works"],
      d["backends"][2]["works"], a["backend"]))
PY
}

# --- this host ---
in_ws "$ws" "$CORDON" doctor --json >"$TEST_TMP/d.json" 2>"$TEST_TMP/d.err"
rc=$?
out=$(check_json "$TEST_TMP/d.json" "$rc" 2>&1)
ok "doctor --json: every row has a status, evidence and (unless PASS) a fix; every backend a verdict" \
    test "${out#rows=}" != "$out"
diag "$out"
text=$(in_ws "$ws" "$CORDON" doctor 2>&1)
like "doctor prints one line per backend" "$text" $'\n  ns .*\n  vm.*\n  docker .*\n  auto '
like "doctor names the configured backend" "$text" "configured backend ns (works|does NOT work) here"
ns_works=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["backends"][0]["works"])' "$TEST_TMP/d.json")
if [ "$ns_works" = True ]; then
    is "doctor exits 0 when the configured backend (ns) works" "$rc" 0
    out=$(in_ws "$ws" "$CORDON" --debug run --backend auto --network allowlist \
        --allow-host example.test --net-audit-log "$TEST_TMP/audit.jsonl" true 2>&1)
    like "auto picks ns where it works and no KVM boots (--debug says why)" "$out" \
        "backend: auto chose (ns|vm \(kvm\))"
    out=$(cd "$ws" && timeout 60 python3 - "$CORDON" <<'PY' 2>&1
import json, subprocess, sys
p = subprocess.Popen([sys.argv[1], "mcp", "--backend", "auto"], stdin=subprocess.PIPE,
                     stdout=subprocess.PIPE, text=True)
def rpc(i, m, params=None):
    p.stdin.write(json.dumps({"jsonrpc": "2.0", "id": i, "method": m, "params": params or {}}) + "\n")
    p.stdin.flush()
    while True:
        msg = json.loads(p.stdout.readline())
        if msg.get("id") == i:
            return msg
rpc(1, "initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                      "clientInfo": {"name": "doctor-test", "version": "1"}})
p.stdin.write(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}) + "\n")
p.stdin.flush()
r = rpc(2, "tools/call", {"name": "bash", "arguments": {"command": "echo via-mcp"}})
print(r["result"]["content"][0]["text"].strip())
st = rpc(3, "cordon/status")["result"]
print("status backend=%s reason=%s" % (st["backend"], st.get("backendReason")))
p.stdin.close()
p.wait()
PY
)
    like "cordon mcp on auto: a tool call runs" "$out" "via-mcp"
    like "... and its status names the backend auto chose, and why" "$out" \
        "status backend=(ns|vm) reason=auto chose (ns|vm)"
    like "... and the audit log records the choice" "$(cat "$TEST_TMP/audit.jsonl" 2>&1)" \
        '"event":"backend","backend":"(ns|vm)","reason":"auto chose '
fi

# --- backend_floor: host-owned only ---
out=$(in_ws "$ws" "$CORDON" doctor --set backend_floor=any 2>&1)
rc=$?
is "backend_floor from --set is refused" "$rc" 125
like "... saying it is host-owned policy" "$out" "backend_floor is refused in the session layer.*host-owned"
out=$(in_ws "$ws" env CORDON_BACKEND_FLOOR=any "$CORDON" run true 2>&1)
like "backend_floor from the environment is refused too" "$out" "backend_floor is refused in the environment layer"
mkdir -p "$XDG_CONFIG_HOME/cordon"
echo 'backend_floor = "any"' >"$XDG_CONFIG_HOME/cordon/config.toml"
out=$(in_ws "$ws" "$CORDON" run true 2>&1)
like "... and from the user's file" "$out" "config.toml:1: backend_floor is refused in the user layer"
rm "$XDG_CONFIG_HOME/cordon/config.toml"

echo 'backend_floor = "kernel-boundary"' >"$CORDON_ETC_DIR/default.toml"
out=$(in_ws "$ws" "$CORDON" run --backend ns true 2>&1)
rc=$?
is "a host floor of kernel-boundary refuses the ns backend" "$rc" 125
like "... with the reason" "$out" 'backend = "ns" \(set by --backend\) is below backend_floor = "kernel-boundary"'
mkdir -p "$TEST_TMP/novm"
out=$(in_ws "$ws" env CORDON_VM_DIR="$TEST_TMP/novm" "$CORDON" run --backend auto true 2>&1)
rc=$?
is "auto with a kernel-boundary floor and no usable vm refuses" "$rc" 125
like "... naming the floor and the vm's reason, pointing at doctor" "$out" \
    'no backend that works here meets backend_floor = "kernel-boundary" \(vm: vm: no guest kernel.*run `cordon doctor`'
out=$(in_ws "$ws" env CORDON_VM_DIR="$TEST_TMP/novm" "$CORDON" doctor --backend auto --json)
rc=$?
is "doctor exits 1 when auto finds nothing that meets the floor" "$rc" 1
like "... and says so in its auto verdict" "$out" '"works": false'
rm "$CORDON_ETC_DIR/default.toml"

# --- a host without user namespaces ---
nouserns() { # nouserns CMD...: in a user namespace that allows no further one
    unshare --user --map-root-user bash -c 'echo 0 >/proc/sys/user/max_user_namespaces && exec "$@"' nouserns "$@"
}
if ! nouserns true 2>/dev/null; then
    skip "a host without user namespaces" "unshare --user --map-root-user is refused here"
    tap_done
fi
in_ws "$ws" nouserns "$CORDON" doctor --json >"$TEST_TMP/n.json" 2>"$TEST_TMP/n.err"
rc=$?
out=$(check_json "$TEST_TMP/n.json" "$rc" 2>&1)
ok "no userns: doctor --json is complete" test "${out#rows=}" != "$out"
diag "$out"
is "no userns: doctor exits 1 (the configured ns does not work)" "$rc" 1
row=$(python3 -c 'import json,sys; c=[c for c in json.load(open(sys.argv[1]))["checks"] if c["id"]=="userns"][0]; print(c["status"], c["evidence"], "FIX", c["fix"])' "$TEST_TMP/n.json")
like "no userns: the userns row FAILs with the sysctl's value" "$row" "^FAIL .*user.max_user_namespaces = 0"
like "no userns: ... and the fix is the sysctl" "$row" "FIX sudo sysctl -w user.max_user_namespaces="
out=$(in_ws "$ws" nouserns "$CORDON" run echo ran 2>&1)
rc=$?
is "no userns: ns refuses (125)" "$rc" 125
unlike "no userns: ... and nothing ran" "$out" "^ran"
like "no userns: ... saying why and pointing at doctor" "$out" \
    'unprivileged user namespaces may be disabled.*run `cordon doctor`'

echo 'backend_floor = "ns"' >"$CORDON_ETC_DIR/default.toml"
out=$(in_ws "$ws" nouserns env CORDON_VM_DIR="$TEST_TMP/novm" "$CORDON" run --backend auto echo ran 2>&1)
rc=$?
is "no userns, no vm, floor ns: auto refuses" "$rc" 125
like "... with every backend's reason" "$out" \
    'backend_floor = "ns" \(vm: .*no guest kernel.*; ns: unprivileged user namespaces are refused'
rm "$CORDON_ETC_DIR/default.toml"

if ! $have_vm; then
    skip "no userns: auto picks vm" "no QEMU or guest kernel"
    tap_done
fi
# Inside that user namespace cordon is uid 0, so it writes its initramfs
# next to the kernel: as the unprivileged user, a writable copy of the
# kernel's directory (links to the files) stands in for /var/cache's.
vmdir=()
if ! is_root && [ -z "${CORDON_VM_DIR:-}" ]; then
    ver=$(readlink /var/cache/cordon/vm/current)
    mkdir -p "$TEST_TMP/vm/$ver"
    for f in /var/cache/cordon/vm/"$ver"/*; do
        case $f in */initramfs-*|*/kvm-broken-*) ;; *) ln -s "$f" "$TEST_TMP/vm/$ver/" ;; esac
    done
    ln -s "$ver" "$TEST_TMP/vm/current"
    vmdir=(CORDON_VM_DIR="$TEST_TMP/vm")
fi
out=$(in_ws "$ws" nouserns env "${vmdir[@]}" "$CORDON" --debug tool --backend auto bash '{"command":"echo via-$((6*7))"}' 2>&1)
like "no userns: auto picks vm (--debug says why)" "$out" "backend: auto chose vm \((kvm|tcg)\).*ns: unprivileged user namespaces are refused"
like "no userns: ... and the bash tool call works there" "$out" "via-42"
tap_done
