# The docker backend's test fixture (sourced after tap.sh and cordon.sh by
# tests/integration/docker-backend.sh and tests/security/docker-escapes.sh):
# a static cordon-agent (the release build of this tree, shared with
# release.sh), a private dockerd (own socket, data-root and exec-root in
# TEST_TMP, no iptables, no bridge; stopped at exit) and an image of
# busybox-static and bash-static. Skips the whole file (with the reason)
# when not root or something is missing. Sets CORDON_TEST_AGENT, DOCKER_HOST
# (for the test's own docker commands only), host_sock, img, hd and the
# settings array D (--backend docker, the daemon, the image).
. "$CORDON_SRC/tests/lib/fixtures.sh"
if ! is_root; then
    skip "docker backend" "needs root: it starts a private dockerd (a user who may talk to dockerd is root-equivalent)"
    tap_done
fi
for need in /usr/sbin/dockerd /bin/busybox /bin/bash-static; do
    if [ ! -x "$need" ] || ! command -v docker >/dev/null; then
        skip "docker backend" "$need or the docker CLI is missing (scripts/bootstrap.sh --test)"
        tap_done
    fi
done
if [ "${CORDON_BUILDTYPE:-debug}" != debug ]; then
    skip "docker backend" "needs a debug build (the CORDON_TEST_AGENT hook)"
    tap_done
fi

# --- a static agent: the release build of this tree ---
rel="$CORDON_BUILD/release-smoke"
if [ ! -f "$rel/build.ninja" ]; then
    meson setup "$rel" "$CORDON_SRC" --buildtype=release >"$TEST_TMP/setup.log" 2>&1 ||
        cat "$TEST_TMP/setup.log" >&2
fi
ninja -C "$rel" cordon cordon-agent >"$TEST_TMP/build.log" 2>&1 || tail -20 "$TEST_TMP/build.log" >&2
mkdir -p "$TEST_TMP/bin" && cp "$rel/cordon" "$rel/cordon-agent" "$TEST_TMP/bin/" && chmod 755 "$TEST_TMP/bin"
export CORDON_TEST_AGENT="$TEST_TMP/bin/cordon-agent"
# The cordon under test for the unprivileged steps, where that user can run
# it: the build tree may sit under /root (mode 0700).
mkdir -p "$TEST_TMP/ubin"
cp "$CORDON" "${CORDON_AGENT:-$(dirname "$CORDON")/cordon-agent}" "$TEST_TMP/ubin/"
chmod -R a+rX "$TEST_TMP/ubin"
ucordon="$TEST_TMP/ubin/cordon"
host_sock="unix://$TEST_TMP/dockerd/sock"
like "the static agent is static" "$(file -L "$CORDON_TEST_AGENT")" "statically linked"

# --- the private daemon ---
if ! start_private_dockerd; then
    fail "the private dockerd starts: $(tail -3 "$hd/log")"
    tap_done
fi

# --- the image: busybox and a static bash at /bin/bash ---
img="$TEST_TMP/img"
mkdir -p "$img/bin" "$img/etc" "$img/usr/bin"
cp /bin/busybox "$img/bin/"
cp /bin/bash-static "$img/bin/bash"
for c in $(/bin/busybox --list); do
    [ -e "$img/bin/$c" ] || ln -s busybox "$img/bin/$c"
done
echo 'root:x:0:0:root:/root:/bin/sh' >"$img/etc/passwd"
tar -C "$img" -cf "$TEST_TMP/img.tar" .
docker import "$TEST_TMP/img.tar" cordon-docker-test >/dev/null
out=$(docker run --rm --network none cordon-docker-test bash -c 'echo "bash=$BASH_VERSION"')
like "the image has a static bash at /bin/bash" "$out" "bash=5"
D=(--backend docker --set "docker.host=$host_sock" --set docker.image=cordon-docker-test)

# ncontainers: how many containers the private daemon holds.
ncontainers() { docker ps -aq | wc -l; }
