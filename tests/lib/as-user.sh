#!/usr/bin/env bash
# Runs a TAP shell test as the unprivileged user "cordon-test" (created on
# demand), so every suite is exercised both as root and rootless. The binaries
# and test scripts are copied to a world-readable place first: the build tree
# may sit under a directory the test user cannot enter.
set -u
script=$1
if [ "$(id -u)" -ne 0 ]; then
    echo "1..0 # SKIP already unprivileged: the main run covers it"
    exit 0
fi
user=cordon-test
if ! id "$user" >/dev/null 2>&1; then
    useradd --create-home --shell /bin/bash "$user" >/dev/null 2>&1 ||
        { echo "1..0 # SKIP cannot create user $user"; exit 0; }
fi
stage=$(mktemp -d /tmp/cordon-unpriv.XXXXXX)
trap 'rm -rf "$stage"' EXIT
chmod 755 "$stage"
cp "$CORDON" "$stage/cordon"
cp "$CORDON_AGENT" "$stage/cordon-agent"
mkdir -p "$stage/build"
[ -e "$CORDON_BUILD/tests" ] &&
    find "$CORDON_BUILD/tests" -maxdepth 3 -type f -perm -u+x -exec cp {} "$stage/build/" \;
probe=
[ -n "${CORDON_PROBE:-}" ] && cp "$CORDON_PROBE" "$stage/build/syscall-probe" && probe="$stage/build/syscall-probe"
mkdir -p "$stage/src"
# node_modules (pi, the MCP SDK) is large: link it when the test user can
# read it where it is, copy it otherwise.
mkdir -p "$stage/src/tests"
for entry in "$CORDON_SRC"/tests/*; do
    [ "$(basename "$entry")" = pi ] && continue
    [ "$(basename "$entry")" = agents ] && continue
    cp -r "$entry" "$stage/src/tests/"
done
mkdir -p "$stage/src/tests/pi"
cp "$CORDON_SRC"/tests/pi/package*.json "$stage/src/tests/pi/" 2>/dev/null
if [ -d "$CORDON_SRC/tests/pi/node_modules" ]; then
    if runuser -u "$user" -- test -r "$CORDON_SRC/tests/pi/node_modules/@mariozechner/pi-coding-agent/package.json"; then
        ln -s "$CORDON_SRC/tests/pi/node_modules" "$stage/src/tests/pi/node_modules"
    else
        cp -r "$CORDON_SRC/tests/pi/node_modules" "$stage/src/tests/pi/node_modules"
    fi
fi
# The agent CLIs (tests/agents, about 1 GB) are linked when the test user
# can read them, and left out otherwise (their checks then skip).
mkdir -p "$stage/src/tests/agents"
cp "$CORDON_SRC"/tests/agents/package*.json "$stage/src/tests/agents/" 2>/dev/null
if [ -d "$CORDON_SRC/tests/agents/node_modules" ] &&
    runuser -u "$user" -- test -r "$CORDON_SRC/tests/agents/node_modules/.package-lock.json"; then
    ln -s "$CORDON_SRC/tests/agents/node_modules" "$stage/src/tests/agents/node_modules"
fi
[ -d "$CORDON_SRC/src" ] && cp -r "$CORDON_SRC/src" "$stage/src/src"
[ -d "$CORDON_SRC/integrations" ] && cp -r "$CORDON_SRC/integrations" "$stage/src/integrations"
# The benchmarks' scripts and seccomp-export, where bench/lib.sh looks for
# it next to the cordon it runs (integration/bench-views).
[ -d "$CORDON_SRC/bench" ] && cp -r "$CORDON_SRC/bench" "$stage/src/bench"
[ -x "$CORDON_BUILD/bench/seccomp-export" ] &&
    mkdir -p "$stage/bench" && cp "$CORDON_BUILD/bench/seccomp-export" "$stage/bench/"
# The repository's root package.json (pi's git install) and docs (the
# snippets tests/e2e/agents-config.mjs runs).
[ -f "$CORDON_SRC/package.json" ] && cp "$CORDON_SRC/package.json" "$stage/src/package.json"
[ -d "$CORDON_SRC/docs" ] && cp -r "$CORDON_SRC/docs" "$stage/src/docs"
chmod -R a+rX "$stage"
rel=${script#"$CORDON_SRC"/}
home=$(getent passwd "$user" | cut -d: -f6)
# The test's cwd is the build directory, which the user may not enter (a
# clone under /root): it starts in the stage instead.
cd "$stage" || exit 1
# Not exec: the stage (a copy of the build's binaries and the tests, some
# 300 MB) is removed by the EXIT trap when the test ends.
runuser -u "$user" -- env -i \
    PATH=/usr/local/bin:/usr/bin:/bin HOME="$home" USER="$user" LOGNAME="$user" LANG=C.UTF-8 \
    CORDON="$stage/cordon" CORDON_AGENT="$stage/cordon-agent" CORDON_SRC="$stage/src" \
    CORDON_BUILD="$stage/build" CORDON_PROBE="$probe" CORDON_TEST_UNPRIVILEGED=1 \
    CORDON_BUILDTYPE="${CORDON_BUILDTYPE:-}" \
    CORDON_TEST_JOBS="${CORDON_TEST_JOBS:-}" \
    ASAN_OPTIONS="${ASAN_OPTIONS:-}" UBSAN_OPTIONS="${UBSAN_OPTIONS:-}" \
    bash "$stage/src/$rel"
exit $?
