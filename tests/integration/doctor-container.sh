#!/usr/bin/env bash
# Integration: cordon inside a Docker container, as a CI runner starts it:
# Docker's default seccomp profile and capabilities, an unprivileged user.
# The image is a Debian root file system made here and imported (no
# registry is reachable): its own /etc and directories, the host's Debian
# /usr bound read-only (the same binaries and libraries: no mirror needed).
# doctor's report, auto's choice and a tool call, under the default profile
# and under the one container option that makes ns work (docs/ci.md).
. "$CORDON_SRC/tests/lib/tap.sh"
. "$CORDON_SRC/tests/lib/cordon.sh"
. "$CORDON_SRC/tests/lib/fixtures.sh"

if ! is_root; then
    skip "cordon in a container" "needs root: it starts a private dockerd"
    tap_done
fi
if [ ! -x /usr/sbin/dockerd ] || ! command -v docker >/dev/null; then
    skip "cordon in a container" "dockerd or the docker CLI is missing (scripts/bootstrap.sh --test)"
    tap_done
fi
if ! start_private_dockerd; then
    fail "the private dockerd starts: $(tail -3 "$hd/log")"
    tap_done
fi
like "the daemon confines containers with its default seccomp profile" \
    "$(docker info --format '{{json .SecurityOptions}}')" "name=seccomp,profile=default"

root="$TEST_TMP/rootfs"
mkdir -p "$root"/{etc,tmp,home/u,proc,sys,dev,run,work,opt/cordon,var/cache/cordon/vm}
chmod 1777 "$root/tmp"
for l in bin lib lib64 sbin; do [ -L "/$l" ] && ln -s "usr/$l" "$root/$l"; done
printf 'root:x:0:0:root:/root:/bin/sh\nu:x:1000:1000::/home/u:/bin/bash\n' >"$root/etc/passwd"
printf 'root:x:0:\nu:x:1000:\n' >"$root/etc/group"
cp /etc/nsswitch.conf "$root/etc/" 2>/dev/null
chown 1000:1000 "$root/home/u" "$root/work"
tar -C "$root" -cf "$TEST_TMP/rootfs.tar" .
docker import "$TEST_TMP/rootfs.tar" cordon-ci-test >/dev/null
bin="$TEST_TMP/bin"
mkdir -p "$bin" && cp "$CORDON" "$CORDON_AGENT" "$bin/" && chmod -R a+rX "$bin"
vmcache=()
[ -d /var/cache/cordon/vm ] && vmcache=(-v /var/cache/cordon/vm:/var/cache/cordon/vm:ro)
in_container() { # in_container [DOCKER RUN OPTIONS] -- CMD...: as uid 1000 in /work
    local opts=()
    while [ "$1" != -- ]; do opts+=("$1"); shift; done
    shift
    docker run --rm -u 1000:1000 -v /usr:/usr:ro -v "$bin:/opt/cordon:ro" "${vmcache[@]}" \
        -w /work -e HOME=/home/u "${opts[@]}" cordon-ci-test "$@"
}

# --- Docker's default profile ---
out=$(in_container -- /opt/cordon/cordon doctor --backend auto --json 2>&1)
rc=$?
is "default profile: doctor exits 1 (nothing works here)" "$rc" 1
rows=$(python3 -c '
import json, sys
d = json.loads(sys.stdin.read())
row = {c["id"]: c for c in d["checks"]}
for c in d["checks"]:
    assert c["status"] in ("PASS", "WARN", "FAIL") and c["evidence"] and (c["status"] == "PASS" or c["fix"]), c
b = {x["name"]: x for x in d["backends"]}
print("container=%s userns=%s qemu-mountns=%s ns=%s vm=%s auto=%s" % (row["container"]["status"],
      row["userns"]["status"], row["qemu-mountns"]["status"], b["ns"]["works"], b["vm"]["works"],
      d["auto"]["works"]))
print("FIX", row["userns"]["fix"])
print("WHY", b["vm"]["why"])' <<<"$out" 2>&1)
like "default profile: doctor sees the container" "$rows" "container=WARN"
like "default profile: user namespaces FAIL (seccomp refuses unshare without CAP_SYS_ADMIN)" \
    "$rows" "userns=FAIL qemu-mountns=FAIL ns=False vm=False auto=False"
like "default profile: the fix names the container option" "$rows" "FIX .*--security-opt seccomp=unconfined"
like "default profile: the vm backend's reason is QEMU's mount namespace" "$rows" \
    "WHY QEMU cannot get the mount namespace"
out=$(in_container -- /opt/cordon/cordon tool --backend auto bash '{"command":"echo ran"}' 2>&1)
rc=$?
is "default profile: auto refuses (fails closed, 125)" "$rc" 125
like "... with each backend's reason and the pointer to doctor" "$out" \
    'no backend that works here .*vm: QEMU cannot get the mount namespace.*ns: unprivileged user namespaces are refused.*run `cordon doctor`'
unlike "... and ran nothing" "$out" '"text":"ran'

# --- --security-opt seccomp=unconfined: user namespaces, but /proc masked ---
U=(--security-opt seccomp=unconfined)
out=$(in_container "${U[@]}" -- /opt/cordon/cordon doctor --json 2>&1)
rc=$?
is "seccomp=unconfined: doctor exits 1 (ns still does not work)" "$rc" 1
rows=$(python3 -c '
import json, sys
d = json.loads(sys.stdin.read())
row = {c["id"]: c for c in d["checks"]}
b = {x["name"]: x for x in d["backends"]}
print("userns=%s proc=%s ns=%s vm=%s auto=%s" % (row["userns"]["status"], row["proc"]["status"],
      b["ns"]["works"], b["vm"]["works"], d["auto"]["backend"]))
print("FIX", row["proc"]["fix"])' <<<"$out" 2>&1)
like "seccomp=unconfined: userns PASSes, a new proc FAILs (Docker masks parts of /proc)" "$rows" \
    "userns=PASS proc=FAIL ns=False"
like "... the fix is systempaths=unconfined" "$rows" "FIX .*--security-opt systempaths=unconfined"
if [ ${#vmcache[@]} -gt 0 ] && [[ $rows == *"vm=True auto=vm"* ]]; then
    pass "seccomp=unconfined: the vm backend works (TCG, QEMU's mount namespace in a user namespace)"
    out=$(in_container "${U[@]}" -- /opt/cordon/cordon --debug tool --backend auto bash \
        '{"command":"echo via-$((6*7)) kernel=$(uname -r)"}' 2>&1)
    like "seccomp=unconfined: auto picks vm under TCG, saying why" "$out" \
        "backend: auto chose vm \(tcg\); ns: the sandbox's /proc cannot be mounted"
    like "... and the tool call runs in the guest" "$out" "via-42 kernel="
else
    skip "seccomp=unconfined: auto picks vm" "no guest kernel, or the vm backend does not work: $rows"
fi

# --- and --security-opt systempaths=unconfined: ns works (docs/ci.md) ---
U+=(--security-opt systempaths=unconfined)
out=$(in_container "${U[@]}" -- /opt/cordon/cordon doctor --json 2>&1)
rc=$?
is "seccomp+systempaths unconfined: doctor exits 0 (ns works)" "$rc" 0
auto=$(python3 -c 'import json,sys; d=json.loads(sys.stdin.read()); print(d["auto"]["backend"], d["backends"][0]["works"])' <<<"$out" 2>&1)
like "... auto picks ns (no KVM in the container)" "$auto" "^ns True"
out=$(in_container "${U[@]}" -- /opt/cordon/cordon --debug tool --backend auto bash \
    '{"command":"echo via-$((6*7)) uid=$(id -u); grep ^Seccomp: /proc/self/status"}' 2>&1)
like "... auto says it chose ns" "$out" "backend: auto chose ns"
like "... the tool call runs in the sandbox" "$out" 'via-42 uid=1000'
like "... under cordon's own seccomp filter" "$out" 'Seccomp:\\t2'
tap_done
