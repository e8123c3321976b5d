#!/usr/bin/env bash
# Integration: the release build, the one `make run` and users get. The rest
# of the suite runs the sanitizer build, which links dynamically; the release
# binaries are linked statically (glibc's static name service, its static
# dlopen for libgd), so they get their own smoke test: built here from the
# same tree, then driven as root and as the unprivileged test user.
. "$CORDON_SRC/tests/lib/tap.sh"
. "$CORDON_SRC/tests/lib/cordon.sh"

rel="$CORDON_BUILD/release-smoke"
if [ ! -f "$rel/build.ninja" ]; then
    meson setup "$rel" "$CORDON_SRC" --buildtype=release >"$TEST_TMP/setup.log" 2>&1 ||
        { cat "$TEST_TMP/setup.log" >&2; }
fi
ninja -C "$rel" cordon cordon-agent >"$TEST_TMP/build.log" 2>&1
is "the release build builds" "$?" 0
bin="$TEST_TMP/bin"
mkdir -p "$bin" && chmod 755 "$bin"
cp "$rel/cordon" "$rel/cordon-agent" "$bin/"
for b in cordon cordon-agent; do
    like "release $b is linked statically" "$(file -L "$bin/$b")" "statically linked"
done
CORDON="$bin/cordon"

ws=$(new_ws rel)
echo hello > "$ws/hello.txt"
sh_in "$ws" 'cat hello.txt; echo "home=$HOME"; cat /proc/1/comm'
is "release: run exits 0" "$rc" 0
like "release: the workspace is visible" "$out" "hello"
like "release: HOME comes from the user database (static NSS)" "$out" "home=/"
out=$(cd "$ws" && printf 'echo from-shell\n' | PWD="$ws" "$CORDON" shell 2>&1)
like "release: shell reads commands from stdin" "$out" "from-shell"
out=$(cd "$ws" && PWD="$ws" "$CORDON" tool read '{"path":"hello.txt"}' 2>&1)
like "release: the read tool answers" "$out" "hello"
out=$(cd "$ws" && PWD="$ws" "$CORDON" verify 2>&1)
rc=$?
is "release: cordon verify passes" "$rc" 0
unlike "release: cordon verify has no FAIL row" "$out" "FAIL"

if is_root && id cordon-test >/dev/null 2>&1; then
    uws=$(mktemp -d /tmp/cordon-rel.XXXXXX)
    cleanup_dirs+=("$uws")
    chown cordon-test "$uws"
    out=$(cd "$uws" && runuser -u cordon-test -- env PWD="$uws" "$CORDON" run -- sh -c 'id -un; touch ok' 2>&1)
    rc=$?
    is "release, unprivileged: run exits 0" "$rc" 0
    like "release, unprivileged: runs as the user" "$out" "cordon-test"
    out=$(cd "$uws" && runuser -u cordon-test -- env PWD="$uws" "$CORDON" verify 2>&1)
    is "release, unprivileged: cordon verify passes" "$?" 0
else
    for d in "run exits 0" "runs as the user" "cordon verify passes"; do
        skip "release, unprivileged: $d" "needs root and the cordon-test user"
    done
fi
tap_done
