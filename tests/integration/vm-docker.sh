#!/usr/bin/env bash
# Integration: Docker inside the vm backend's guest (issue 9), and the
# read-only workspace mode on both backends, as a user sees them. Every boot
# that starts dockerd costs 10-30 s under TCG: the checks share few boots.
# Needs docker.io, docker-compose and busybox-static (scripts/bootstrap.sh --test).
. "$CORDON_SRC/tests/lib/tap.sh"
. "$CORDON_SRC/tests/lib/cordon.sh"
. "$CORDON_SRC/tests/lib/background.sh"

ws=$(new_ws dws)
# A git workspace: its .git/hooks and .git/config are protected paths.
git -C "$ws" init -q

# The host's own Docker daemon (root only, checked below) starts here, while
# the ns checks run.
hd="$TEST_TMP/hostd"
if is_root && [ -x /usr/sbin/dockerd ]; then
    mkdir -p "$hd"
    dockerd --iptables=false --bridge=none -H "unix://$hd/sock" --data-root "$hd/data" \
        --exec-root "$hd/exec" --pidfile "$hd/pid" >"$hd/log" 2>&1 &
    cleanup_pids+=($!)
fi

# --- ns backend: no Docker inside; read-only mode (cheap, no VM) ---
cordon_run "$ws" --set docker.mode=require -- true
is "ns + docker.mode=require: refused (exit 125)" "$rc" 125
like "ns + require: the reason" "$out" 'docker.mode = "require" .*the ns backend has no Docker daemon inside'
out=$(cd "$ws" && PWD="$ws" "$CORDON" --debug run -- true 2>&1 </dev/null)
like "ns + auto: reported unavailable in --debug, and runs" "$out" "docker: unavailable: the ns backend has no Docker daemon inside"
out=$(cd "$ws" && PWD="$ws" "$CORDON" --debug run --readonly -- bash -c '
    echo x > ro.txt 2>&1 || true; echo x > "$HOME/s" && echo "home=ok"; echo x > /tmp/s && echo "tmp=ok"' 2>&1 </dev/null)
like "ns --readonly: a workspace write fails with EROFS" "$out" "ro.txt: Read-only file system"
like "ns --readonly: HOME is writable scratch" "$out" "home=ok"
like "ns --readonly: /tmp is writable scratch" "$out" "tmp=ok"
like "ns --readonly: --debug names the scratch places" "$out" "workspace read-only: writes under $ws fail with EROFS; the writable scratch places are .* \(HOME, empty at start\) and /tmp"
[ -e "$ws/ro.txt" ] && fail "ns --readonly: nothing written" || pass "ns --readonly: nothing written"

# Mounts that would shadow the guest's Docker runtime or its executables.
mkdir -p "$TEST_TMP/xdg/cordon"
for g in /var/lib/docker/x /run/containerd /usr/bin/docker /var/run/docker.sock; do
    printf '[[mounts]]\nhost_path = "%s"\nguest_path = "%s"\n' "$ws" "$g" >"$TEST_TMP/xdg/cordon/config.toml"
    out=$(cd "$ws" && XDG_CONFIG_HOME="$TEST_TMP/xdg" "$CORDON" run -- true 2>&1 </dev/null)
    rc=$?
    is "a mount on $g is refused (exit 125)" "$rc" 125
    like "a mount on $g: the reason" "$out" "guest path $g overlaps the protected"
done
rm -rf "$TEST_TMP/xdg"
out=$(cd "$ws" && DOCKER_HOST=tcp://127.0.0.1:9 "$CORDON" run --set env.mode=allowlist --set env.allow=DOCKER_HOST -- true 2>&1 </dev/null)
rc=$?
is "env.allow = DOCKER_HOST is refused (exit 125)" "$rc" 125
like "env.allow = DOCKER_HOST: the reason" "$out" '"DOCKER_HOST" is protected and can never be forwarded'

if ! command -v qemu-system-x86_64 >/dev/null || { [ ! -e /var/cache/cordon/vm/current/vmlinuz ] && [ -z "${CORDON_VM_DIR:-}" ]; }; then
    skip "vm checks" "no QEMU or guest kernel (scripts/bootstrap.sh --test)"
    tap_done
fi
if [ ! -x /usr/sbin/dockerd ] || [ ! -x /bin/busybox ]; then
    skip "Docker in the guest" "docker.io or busybox-static missing (scripts/bootstrap.sh --test)"
    tap_done
fi

# --- require with dockerd missing: blocked with the reason, before any boot ---
out=$(cd "$ws" && CORDON_VM_DOCKERD=/usr/sbin/no-dockerd "$CORDON" run --backend vm --set docker.mode=require -- true 2>&1 </dev/null)
rc=$?
is "vm + require + no dockerd: refused (exit 125)" "$rc" 125
like "vm + require + no dockerd: the reason" "$out" 'docker.mode = "require": Docker is missing: /usr/sbin/no-dockerd is not in the shared system directories'

out=$(cd "$ws" && CORDON_VM_DOCKERD=/usr/sbin/no-dockerd "$CORDON" tool --backend vm --set docker.mode=require bash '{"command":"echo ran"}' 2>&1 </dev/null)
rc=$?
is "vm + require + no dockerd: the tools are blocked (cordon tool exits 125)" "$rc" 125
like "vm + require + no dockerd: cordon tool gives the reason" "$out" 'docker.mode = "require": Docker is missing'
unlike "vm + require + no dockerd: the tool never ran" "$out" "ran"

# The test image's base: busybox-static, as a tarball for `docker import`.
mkdir -p "$TEST_TMP/base/bin"
cp /bin/busybox "$TEST_TMP/base/bin/"
for c in sh echo cat ls touch; do ln -s busybox "$TEST_TMP/base/bin/$c"; done
tar -C "$TEST_TMP/base" -cf "$ws/base.tar" .
cat > "$ws/Dockerfile" <<'EOF'
FROM cordon-test-base
COPY hello.txt /hello.txt
RUN echo "built inside the guest" > /built.txt
CMD ["cat", "/built.txt", "/hello.txt"]
EOF
echo "from the workspace" > "$ws/hello.txt"
cat > "$ws/docker-compose.yml" <<'EOF'
version: "3"
services:
  hello:
    image: cordon-test
    network_mode: none
EOF

# --- the host's own Docker daemon, started by the test (root only) ---
host_sock=
if is_root; then
    for _ in $(seq 1 100); do
        docker -H "unix://$hd/sock" info --format '{{.ID}}' >/dev/null 2>&1 && break
        sleep 0.3
    done
    if host_id=$(docker -H "unix://$hd/sock" info --format '{{.ID}}' 2>/dev/null); then
        host_sock="unix://$hd/sock"
    else
        diag "host dockerd did not start: $(tail -3 "$hd/log")"
    fi
fi

# Boots that start no dockerd (or one that exits at once), run one after the
# other beside boots 1 and 2; their checks are below, in their places.
light_boots() {
    bg_run verify-auto "$ws" "$CORDON" verify --backend vm
    bg_run false-require "$ws" env CORDON_VM_DOCKERD=/usr/bin/false "$CORDON" run --backend vm --set docker.mode=require -- echo ran
    bg_run false-auto "$ws" env CORDON_VM_DOCKERD=/usr/bin/false "$CORDON" --debug run --backend vm -- bash -c 'docker version >/dev/null 2>&1; echo "docker=$?"; cat /run/cordon/docker.json'
    bg_run missing-auto "$ws" env CORDON_VM_DOCKERD=/usr/sbin/no-dockerd "$CORDON" --debug run --backend vm -- bash -c 'docker version >/dev/null 2>&1; echo docker=$?; ls /run/cordon/'
    bg_run disabled "$ws" "$CORDON" --debug run --backend vm --set docker.mode=disabled -- bash -c '
    test -e /var/run/docker.sock && echo socket=present || echo socket=absent
    echo "disks=$(grep -c vd /proc/partitions)"'
}
bg_group light light_boots

# --- boot 1 (auto: the daemon starts on first use; allowlist network): build,
# run, compose ---
t0=$(date +%s%N)
out=$(cd "$ws" && PWD="$ws" DOCKER_HOST="${host_sock:-tcp://127.0.0.1:9}" DOCKER_CONTEXT=sentinel \
    "$CORDON" --debug run --backend vm --network allowlist --allow-host registry.example -- bash -c '
    echo "env=$(env | grep -E "^(DOCKER|COMPOSE)_" | tr "\n" " ")"
    docker import base.tar cordon-test-base >/dev/null && echo import=ok
    docker build -q -t cordon-test . >/dev/null && echo build=ok
    docker run --rm cordon-test
    echo "net=$(docker run --rm cordon-test-base cat /proc/net/dev | tail -n +3 | cut -d: -f1 | tr -d " " | tr "\n" " ")"
    echo "id=$(docker info --format "{{.ID}}")"
    echo "status=$(cat /run/cordon/docker.json)"
    # The agent'"'"'s processes (no capability) cannot read the daemon'"'"'s
    # environment; a container sharing the guest'"'"'s PID namespace, which
    # is guest root, can.
    echo "daemon_env_direct=$(cat /proc/$(cat /run/docker.pid)/environ 2>&1 >/dev/null | sed "s/.*: //")"
    echo "daemon_env=$(docker run --rm --privileged --pid=host cordon-test-base cat /proc/$(cat /run/docker.pid)/environ | tr "\0" "\n" | cut -d= -f1 | sort | tr "\n" " ")"
    echo "fs=$(stat -f -c %T /var/lib/docker)"
    echo "tcp_listen=$(ss -Hltnp | grep -cE "dockerd|containerd")"
    if command -v docker-compose >/dev/null; then
        docker-compose up --no-color 2>&1 | grep -E "built inside|exited with code" | sed "s/^/compose: /"
    else
        echo "compose=none"
    fi
    # Last: an impostor socket in place of the daemon'"'"'s; the probe (what
    # cordon verify runs) must not take it for the guest'"'"'s own.
    # Guest root through Docker (a privileged container in the init'"'"'s
    # mount namespace) undoes the guest'"'"'s read-only bind of .git/hooks;
    # QEMU'"'"'s own view of the path is read-only on the host (cordon as root).
    # One stream (exec 2>&1 inside): docker carries stdout and stderr apart,
    # and their lines could interleave mid-line on the way out.
    docker run --rm --privileged --pid=host cordon-test-base /bin/busybox nsenter -t 1 -m \
        /bin/sh -c "exec 2>&1; umount $PWD/.git/hooks && echo hooks=unmounted; echo x > $PWD/.git/hooks/post-checkout" 2>&1 | sed "s/^/attack: /"
    # Case 70: guest root renames .git (the parent of every protected path
    # in it) through 9p, and writes a redirect file at its top level.
    docker run --rm --privileged --pid=host cordon-test-base /bin/busybox nsenter -t 1 -m \
        /bin/sh -c "mv $PWD/.git $PWD/.git-old || echo rename=refused; echo /tmp > $PWD/.git/commondir; echo [core] >> $PWD/.git/config || echo config=refused" 2>&1 | sed "s/^/attack70: /"
    probe() {
        echo "{}" | /run/cordon/agent probe | sed -n "s/^CORDON-PROBE //p" |
            python3 -c "import json, sys; g = json.load(sys.stdin)[\"guest_docker\"]; print(\"probe_own=%s: %s\" % (g[\"own\"], g[\"detail\"]))"
    }
    probe
    python3 -c "import socket, os; s = socket.socket(socket.AF_UNIX); s.bind(\"/run/x.sock\"); s.listen(1); os.rename(\"/run/x.sock\", \"/run/docker.sock\")"
    probe' 2>&1 </dev/null)
rc=$?
t1=$(date +%s%N)
diag "boot 1 (dockerd started on first use, build, run, compose): $(((t1 - t0) / 1000000)) ms"
is "boot 1 exits 0" "$rc" 0
like "--debug reports the guest's daemon plan" "$out" "vm: docker: auto: the guest's own /usr/sbin/dockerd, storage on .*/docker.img"
like "--debug: idle until first use" "$out" "vm: docker: idle \(dockerd starts on the first connection to /var/run/docker.sock\)"
like "no DOCKER_*/COMPOSE_* variable reaches the guest (host DOCKER_HOST sentinel set)" "$out" "env=
"
like "docker import of the test's tarball" "$out" "import=ok"
like "docker build with the workspace as context" "$out" "build=ok"
like "docker run prints the image's output" "$out" "built inside the guest
from the workspace"
like "a container gets loopback only (no bridge)" "$out" "net=lo "
unlike "docker run no longer warns \"IPv4 forwarding is disabled\" (no bridge, by design)" "$out" \
    "IPv4 forwarding is disabled"
like "the daemon's storage is the guest-private ext4 disk" "$out" "fs=ext2/ext3"
like "dockerd and containerd listen on no TCP port in the guest" "$out" "tcp_listen=0"
is "dockerd's environment is not readable by the user's processes" \
    "$(sed -n 's/^daemon_env_direct=//p' <<<"$out")" "Permission denied"
is "dockerd's environment: cordon's own and the allowlist proxy's, nothing else" \
    "$(sed -n 's/^daemon_env=//p' <<<"$out")" "DOCKER_RAMDISK HOME HTTPS_PROXY HTTP_PROXY LISTEN_FDS LISTEN_PID NO_PROXY PATH http_proxy https_proxy no_proxy "
like "the guest's status: ready, verified" "$out" 'status=\{"mode":"auto","state":"ready"'
ready_ms=$(sed -n 's/.*"ready_ms":\([0-9]*\).*/\1/p' <<<"$out")
diag "dockerd ready (first use to verified answer, TCG): ${ready_ms:-?} ms"
guest_id=$(sed -n 's/^id=//p' <<<"$out")
like "the probe: the guest's own daemon answers (listener pid 1, same ID)" "$out" "probe_own=True: listener pid 1 uid 0; daemon ID seen ([A-Z0-9:]+), started "
like "the probe rejects an impostor socket at the daemon's path" "$out" "probe_own=False: /var/run/docker.sock is not the socket the guest's init made"
like "guest root via a privileged container unmounts the guest's bind of .git/hooks" "$out" "attack: hooks=unmounted"
like "... and still cannot write the host's .git/hooks (QEMU's view is read-only)" "$out" "attack: .*post-checkout: Read-only file system"
ok "no hook was planted in the host's workspace" test ! -e "$ws/.git/hooks/post-checkout"
like "case 70: guest root cannot rename .git through 9p" "$out" "attack70: rename=refused"
like "case 70: guest root cannot write .git/config through 9p" "$out" "attack70: config=refused"
ok "case 70: .git is still in place on the host" test -d "$ws/.git" -a ! -e "$ws/.git-old"
ok "case 70: the redirect file never reached the host's .git" test ! -e "$ws/.git/commondir"
if command -v docker-compose >/dev/null; then
    like "docker-compose up runs the service" "$out" "compose: .*built inside the guest"
else
    skip "docker compose up" "docker-compose is not installed"
fi
if [ -n "$host_sock" ]; then
    isnt_id=$([ -n "$guest_id" ] && [ "$guest_id" != "$host_id" ] && echo differ)
    is "the guest's daemon is not the host's (IDs differ)" "$isnt_id" differ
    is "the host daemon has no images from the guest" "$(docker -H "$host_sock" images -q | wc -l)" 0
    is "the host daemon has no containers from the guest" "$(docker -H "$host_sock" ps -aq | wc -l)" 0
else
    skip "host daemon isolation" "no host dockerd (needs root)"
fi

# The kept-disk sessions (two boots and cordon gc, their checks with them)
# run from here beside boot 2 and the verify below; their TAP lines are
# printed last, where they stood.
# A state root of the test's own: `cordon gc` below must not touch the
# sessions of anything else running on this machine.
name=vmdocker-$$
state_home="$TEST_TMP/state"
kept() { (cd "$ws" && env -u XDG_RUNTIME_DIR XDG_STATE_HOME="$state_home" "$CORDON" "$@" 2>&1 </dev/null); }
kept_checks() {
out=$(kept run --backend vm --name "$name" --teardown stop -- docker import base.tar kept-image)
rc=$?
is "teardown stop: the session ends" "$rc" 0
ok "teardown stop keeps the Docker disk" test -f "$state_home/cordon/$name/docker.img"
out=$(kept run --backend vm --name "$name" --teardown stop -- docker images --format '{{.Repository}}')
like "the next session of that name finds its image on the kept disk" "$out" "kept-image"
out=$(kept gc --hours 0)
ok "cordon gc removes the stopped session's Docker disk" test ! -e "$state_home/cordon/$name/docker.img"
}
bg_checks kept kept_checks

# --- boot 2: require + read-only workspace: the daemon is up before the
# command, build with the read-only workspace as context, container binds
# of it read-only, scratch writable ---
out=$(cd "$ws" && PWD="$ws" "$CORDON" --debug run --backend vm --readonly --set docker.mode=require -- bash -c '
    echo x > ro.txt 2>&1 || true
    echo x > "$HOME/scratch" && echo home=ok
    echo "state=$(grep -o "\"state\":\"[a-z]*\"" /run/cordon/docker.json)"
    docker import base.tar cordon-test-base >/dev/null && docker build -q -t cordon-test . >/dev/null && echo build=ok
    docker run --rm -v "$PWD:/w" cordon-test-base sh -c "touch /w/from-container" 2>&1
    docker run --rm -v "$PWD:/w" cordon-test-base cat /w/hello.txt' 2>&1 </dev/null)
rc=$?
is "boot 2 exits 0" "$rc" 0
like "require: the daemon is ready before the command runs" "$out" "vm: docker: ready \(dockerd .* in [0-9]+ ms\)"
like "require: state ready at the first command" "$out" 'state="state":"ready"'
like "vm --readonly: a workspace write fails with EROFS" "$out" "ro.txt: Read-only file system"
like "vm --readonly: HOME is writable scratch" "$out" "home=ok"
like "vm --readonly: docker build with the read-only workspace as context" "$out" "build=ok"
like "vm --readonly: a container's bind of the workspace is read-only" "$out" "touch: /w/from-container: Read-only file system"
like "vm --readonly: the container reads the workspace" "$out" "from the workspace"
[ -e "$ws/ro.txt" ] || [ -e "$ws/from-container" ] && fail "vm --readonly: nothing written" || pass "vm --readonly: nothing written"

# --- cordon verify's docker row: the daemon answering is the guest's own ---
out=$(cd "$ws" && "$CORDON" verify --backend vm --set docker.mode=require 2>&1 </dev/null)
like "verify: the docker row passes with the guest's daemon ready" "$out" "PASS  docker-socket    guest dockerd: ready \(pid [0-9]+, ID [A-Z0-9:]+\): listener pid 1 uid 0; daemon ID seen [A-Z0-9:]+, started "
row=$(grep 'docker-socket' <<<"$out")
started=$(sed -n 's/.*ID \([A-Z0-9:]*\)).*/\1/p' <<<"$row")
seen=$(sed -n 's/.*daemon ID seen \([A-Z0-9:]*\),.*/\1/p' <<<"$row")
is "verify: the ID answering through the socket is the one the guest started" "${seen:-none}" "${started:-missing}"
bg_wait light
bg_result verify-auto
like "verify (auto, unused): the guest's socket is its own and the daemon idle" "$out" "PASS  docker-socket    guest dockerd: idle .*socket made by the guest's init"

# --- a daemon that does not come up: require blocks with the reason; auto
# carries on and the guest's status says why ---
bg_result false-require
is "require + a daemon that exits: blocked (exit 125)" "$rc" 125
like "require + a daemon that exits: the reason" "$out" 'docker.mode = "require": the guest.s Docker daemon is not available: unavailable: dockerd exited \(status 1\) during start'
unlike "require + a daemon that exits: the command never ran" "$out" "^ran"
bg_result false-auto
is "auto + a daemon that exits: the command runs" "$rc" 0
like "auto + a daemon that exits: docker fails in the guest" "$out" "docker=1"
like "auto + a daemon that exits: cordon --debug says why at the end" "$out" "vm: docker at exit: unavailable: dockerd exited \(status 1\) during start"
like "auto + a daemon that exits: the status says why" "$out" '"state":"unavailable","reason":"dockerd exited \(status 1\) during start; see /var/log/dockerd.log"'

# --- auto with dockerd missing carries on; teardown stop keeps the disk ---
bg_result missing-auto
is "vm + auto + no dockerd: the command runs" "$rc" 0
like "vm + auto + no dockerd: the reason in --debug" "$out" "vm: docker: missing: /usr/sbin/no-dockerd is not in the shared system directories"
like "vm + auto + no dockerd: no daemon in the guest" "$out" "docker=1"

# The container's-port session (checked below) starts here, beside the
# unprivileged boot, unless the machine is busy (tests/lib/background.sh).
cport_start() {
    cpub=$((20000 + RANDOM % 20000)); cunl=$((cpub + 1))
    rm -f "$ws/cready" "$ws/cdone"
    (cd "$ws" && PWD="$ws" "$CORDON" run --backend vm --publish "127.0.0.1:$cpub:$cpub" -- bash -c "
        docker import base.tar cport >/dev/null
        mkdir -p /tmp/www && echo from-a-container > /tmp/www/index.html
        for p in $cpub $cunl; do
            docker run -d --network host -v /tmp/www:/www cport /bin/busybox httpd -f -p \$p -h /www >/dev/null
        done
        for i in \$(seq 150); do
            (exec 3<>/dev/tcp/127.0.0.1/$cpub) 2>/dev/null && (exec 3<>/dev/tcp/127.0.0.1/$cunl) 2>/dev/null && break
            sleep 0.2
        done
        echo guest_sees=\$(curl -sS -m 5 http://127.0.0.1:$cunl/)
        touch $ws/cready; for i in \$(seq 6000); do [ -e $ws/cdone ] && break; sleep 0.1; done" \
        >"$TEST_TMP/cport.out" 2>&1 </dev/null) &
    cport_pid=$!
    cleanup_pids+=("$cport_pid")
}
cport_early=
if ! bg_serial; then
    cport_early=1
    cport_start
fi

# --- unprivileged: the agent's user reaches the daemon through the socket's
# group, and a hook planted through a privileged container still fails ---
user=cordon-test
if is_root && { id "$user" >/dev/null 2>&1 || useradd --create-home --shell /bin/bash "$user" >/dev/null 2>&1; }; then
    stage="$TEST_TMP/unpriv"
    mkdir -p "$stage/ws"
    chmod 755 "$stage"
    cp "$CORDON" "$stage/cordon"
    cp "${CORDON_AGENT:-$(dirname "$CORDON")/cordon-agent}" "$stage/cordon-agent"
    cp "$ws/base.tar" "$stage/ws/"
    chown -R "$user" "$stage/ws"
    runuser -u "$user" -- git -C "$stage/ws" init -q
    out=$(cd "$stage/ws" && runuser -u "$user" -- env PWD="$stage/ws" "$stage/cordon" run --backend vm -- bash -c '
        echo "id=$(id -u) socket=$(stat -c "%U:%g %a" /var/run/docker.sock)"
        docker import base.tar b >/dev/null && echo import=ok
        docker run --rm --privileged --pid=host b /bin/busybox nsenter -t 1 -m \
            /bin/sh -c "exec 2>&1; umount $PWD/.git/hooks && echo hooks=unmounted; echo x > $PWD/.git/hooks/post-checkout" 2>&1 | sed "s/^/attack: /"
        echo x > mine.txt' 2>&1 </dev/null)
    like "unprivileged: the socket is root's, group the user's, 0660" "$out" "id=$(id -u $user) socket=root:$(id -g $user) 660"
    like "unprivileged: the user's docker reaches the guest's daemon" "$out" "import=ok"
    like "unprivileged: guest root via Docker unmounts the guest's bind" "$out" "attack: hooks=unmounted"
    like "unprivileged: ... and cannot write the host's .git/hooks" "$out" "attack: .*post-checkout: Read-only file system"
    ok "unprivileged: no hook planted on the host" test ! -e "$stage/ws/.git/hooks/post-checkout"
    is "unprivileged: files the guest creates are the user's on the host" "$(stat -c %U "$stage/ws/mine.txt" 2>&1)" "$user"
else
    skip "unprivileged Docker checks" "not root, or no user $user"
fi

# --- disabled: no socket, no disk ---
bg_result disabled
like "disabled: --debug says so" "$out" 'vm: docker: disabled \(docker.mode = "disabled"\)'
like "disabled: no Docker socket in the guest" "$out" "socket=absent"
like "disabled: no Docker disk attached" "$out" "disks=0"

# --- a container's port: reachable from the host only when publish_ports
# lists it (containers share the guest's network; the host side forwards only
# the listed ports) ---
[ -n "$cport_early" ] || cport_start
for _ in $(seq 1800); do [ -e "$ws/cready" ] && break; sleep 0.1; done
listed=$(curl -sS -m 10 "http://127.0.0.1:$cpub/" 2>&1)
unlisted=$(curl -sS -m 5 "http://127.0.0.1:$cunl/" 2>&1; echo "rc=$?")
touch "$ws/cdone"
wait "$cport_pid"
like "a container's port: served inside the guest" "$(cat "$TEST_TMP/cport.out")" "guest_sees=from-a-container"
is "a container's port listed in publish_ports: reachable from the host" "$listed" "from-a-container"
like "a container's port not listed: not reachable from the host" "$unlisted" "rc=7"

bg_checks_print kept

tap_done
