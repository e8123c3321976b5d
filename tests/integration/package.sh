#!/usr/bin/env bash
# The Debian package, as a user gets it: `make deb`'s package (scripts/deb.sh,
# lintian clean) installed with apt into a fresh Debian 12 root file system
# made by mmdebstrap, entered as a container (own mount and PID namespaces,
# pivot_root: a chroot could not create user namespaces). There, as root and
# as an unprivileged user: `cordon run`, `cordon verify`, `cordon mcp` driven
# by the official MCP SDK client (node runs outside, the server inside), the
# man pages and completions where man and the shells look; then `apt-get
# purge` leaves nothing of cordon. Root only. The package (keyed by the
# tracked files) and the root file system (keyed by suite and package list,
# rebuilt after a week for security updates) are cached.
. "$CORDON_SRC/tests/lib/tap.sh"
[ "$(id -u)" -eq 0 ] || { echo "1..0 # SKIP needs root (mmdebstrap, pivot_root)"; exit 0; }
for t in mmdebstrap dpkg-buildpackage lintian unshare pivot_root node zstd; do
    command -v "$t" >/dev/null || { echo "1..0 # SKIP $t is not installed (scripts/bootstrap.sh --test)"; exit 0; }
done
# Every mount of this test lives in a mount namespace of its own.
if [ -z "${CORDON_PACKAGE_NS:-}" ]; then
    exec unshare --mount --propagation private env CORDON_PACKAGE_NS=1 bash "$0" "$@"
fi
. "$CORDON_SRC/tests/lib/cordon.sh"
t0=$SECONDS

deb=$(CORDON_DEB_DIR=$CORDON_BUILD/deb "$CORDON_SRC/scripts/deb.sh" 2>"$TEST_TMP/deb.err")
rc=$?
is "make deb: the package builds and lintian passes" "$rc" 0 ||
    { diag "$(tail -n 30 "$TEST_TMP/deb.err")"; tap_done; }
fields=$(dpkg-deb -f "$deb" Depends Recommends Suggests Built-Using)
like "Recommends passt (open networking)" "$fields" "Recommends: .*passt"
like "Suggests qemu-system-x86 and docker.io" "$fields" "Suggests: .*qemu-system-x86.*docker.io"
t_deb=$((SECONDS - t0))

suite=bookworm
pkgs=mount,passt
cache=${XDG_CACHE_HOME:-$HOME/.cache}/cordon/mmdebstrap
key=$(printf '%s\n' "$suite" "$pkgs" "$(mmdebstrap --version)" | sha256sum | cut -c1-16)
tar=$cache/$suite-$key.tar.zst
if [ -z "$(find "$tar" -mtime -7 2>/dev/null)" ]; then
    mkdir -p "$cache"
    rm -f "$cache/$suite-"*.tar*
    (set -o pipefail
        mmdebstrap --quiet --variant=apt --include="$pkgs" --format=tar "$suite" - 2>"$TEST_TMP/mm.log" |
            zstd -q -T2 >"$tar.part") && mv "$tar.part" "$tar" || { fail "mmdebstrap $suite" "$(tail -n 20 "$TEST_TMP/mm.log")"; tap_done; }
fi
root=$TEST_TMP/root
mkdir -p "$root"
zstd -dc "$tar" | tar -C "$root" -xf -
pass "a Debian 12 root file system ($tar)"
t_rootfs=$((SECONDS - t0 - t_deb))

cat >"$TEST_TMP/enter.sh" <<'SH'
#!/bin/sh
# enter.sh ROOT CMD...: CMD inside ROOT as a container.
root=$1; shift
exec unshare --mount --pid --fork --propagation private /bin/sh -c '
    root=$1; shift
    mount --rbind "$root" "$root" && mount --rbind /dev "$root/dev" &&
        mount --rbind /sys "$root/sys" || exit 125
    cd "$root" && mkdir -p .oldroot && pivot_root . .oldroot || exit 125
    exec /usr/sbin/chroot . /bin/sh -c "mount -t proc proc /proc &&
        umount -l /.oldroot && rmdir /.oldroot && mount -t tmpfs -o mode=1777 tmpfs /tmp &&
        mount -t tmpfs -o mode=755 tmpfs /run && exec \"\$@\"" sh "$@"' sh "$root" "$@"
SH
chmod +x "$TEST_TMP/enter.sh"
enter() { "$TEST_TMP/enter.sh" "$root" "$@"; }
user_sh() { # SCRIPT: as the unprivileged user in its workspace
    enter /usr/sbin/runuser -u tester -- env -i HOME=/home/tester PATH=/usr/bin:/bin \
        /bin/sh -c "cd /home/tester/ws && $1"
}
root_sh() { enter env -i HOME=/root PATH=/usr/sbin:/usr/bin:/sbin:/bin /bin/sh -c "cd /srv/ws && $1"; }

echo 'tester:x:1000:1000::/home/tester:/bin/bash' >>"$root/etc/passwd"
echo 'tester:x:1000:' >>"$root/etc/group"
mkdir -p "$root/home/tester/ws" "$root/srv/ws"
chown -R 1000:1000 "$root/home/tester"
enter find / -xdev \( -path /proc -o -path /sys -o -path /dev -o -path /var/lib/apt -o -path /var/cache \
    -o -path /var/log -o -path /var/lib/dpkg -o -path /home -o -path /root -o -path /srv \) -prune -o -print |
    sort >"$TEST_TMP/before"
cp "$deb" "$root/srv/cordon.deb"

out=$(enter env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends /srv/cordon.deb 2>&1)
is "apt-get install ./cordon.deb in Debian 12" "$?" 0 || diag "$out"
out=$(user_sh 'command -v cordon; cordon --version; stat -c "%U %a" /usr/libexec/cordon/cordon-agent /usr/libexec/cordon')
like "installed: cordon on PATH, --version names version and commit" "$out" \
    $'^/usr/bin/cordon\ncordon [0-9.]+ \\(commit [0-9a-f]{12}'
like "the agent is root's, not writable by the user" "$out" $'root 755\nroot 755$'
for f in /usr/share/man/man1/cordon.1.gz /usr/share/man/man5/cordon.toml.5.gz \
    /usr/share/bash-completion/completions/cordon /usr/share/zsh/vendor-completions/_cordon \
    /usr/share/fish/vendor_completions.d/cordon.fish /usr/share/cordon/pi/package.json \
    /usr/share/cordon/apparmor/cordon /usr/share/doc/cordon/README.md.gz; do
    [ -f "$root$f" ] || missing_files+=" $f"
done
is "man pages, completions, pi package, AppArmor profile, docs are installed" "${missing_files:-}" ""

for who in root user; do
    sh=${who}_sh
    out=$($sh 'cordon run -- sh -c "echo ran-\$((6*7)); cat /etc/shadow" 2>&1; echo "rc=$?"')
    like "$who: cordon run runs in the sandbox" "$out" "ran-42"
    like "$who: ... which has no /etc/shadow" "$out" "cat: /etc/shadow: No such file"
    out=$($sh 'cordon verify 2>&1; echo "rc=$?"')
    like "$who: cordon verify passes" "$out" "rc=0$"
    like "$who: ... with its checks" "$out" "PASS"
    unlike "$who: ... none FAILs" "$out" "FAIL"
    [[ $out == *rc=0 ]] || diag "$out"
    if [ "$who" = root ]; then
        args=(env -i HOME=/root PATH=/usr/bin:/bin /bin/sh -c 'cd /srv/ws && exec cordon mcp')
    else
        args=(/usr/sbin/runuser -u tester -- env -i HOME=/home/tester PATH=/usr/bin:/bin
            /bin/sh -c 'cd /home/tester/ws && exec cordon mcp')
    fi
    if [ ! -d "$CORDON_SRC/tests/pi/node_modules/@modelcontextprotocol/sdk" ]; then
        skip "$who: cordon mcp with the SDK client" "the MCP SDK is not installed (scripts/bootstrap.sh --test)"
        continue
    fi
    json=$(CORDON_SRC=$CORDON_SRC timeout 120 node "$CORDON_SRC/tests/integration/package-mcp.mjs" \
        "$TEST_TMP/enter.sh" "$root" "${args[@]}")
    like "$who: cordon mcp with the SDK client: the tools" "$json" '"tools":"bash,edit,find,grep,ls,read,sandbox_verify,write"'
    like "$who: ... bash runs in the sandbox" "$json" '"bash":"inside-42\\n[0-9]+\\n.*No such file'
    like "$who: ... write then read" "$json" '"write_error":false,"read":"hello'
    like "$who: ... sandbox_verify PASS" "$json" '"verify":"PASS"'
    [[ $json == *'"verify":"PASS"'* ]] || diag "$json"
done
ws_file=$root/home/tester/ws/made-by-mcp.txt
[ ! -d "$CORDON_SRC/tests/pi/node_modules/@modelcontextprotocol/sdk" ] ||
    is "the user's MCP write landed in the workspace, owned by the user" "$(stat -c %u "$ws_file" 2>&1)" 1000

out=$(enter env DEBIAN_FRONTEND=noninteractive apt-get purge -y -q cordon 2>&1)
is "apt-get purge cordon" "$?" 0 || diag "$out"
enter find / -xdev \( -path /proc -o -path /sys -o -path /dev -o -path /var/lib/apt -o -path /var/cache \
    -o -path /var/log -o -path /var/lib/dpkg -o -path /home -o -path /root -o -path /srv \) -prune -o -print |
    sort >"$TEST_TMP/after"
is "after purge nothing of cordon is left (files outside home and state)" \
    "$(comm -13 "$TEST_TMP/before" "$TEST_TMP/after")" ""
is "... and dpkg knows no cordon" "$(enter dpkg-query -W -f '${Status}' cordon 2>/dev/null)" ""
diag "times: package ${t_deb}s, root file system ${t_rootfs}s, total $((SECONDS - t0))s"
tap_done
