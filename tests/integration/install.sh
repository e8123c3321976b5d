#!/usr/bin/env bash
# Integration: `make install` and `make uninstall` (docs/install.md), the way
# a user runs them, into a prefix of this test's own: the release binaries,
# the agent where the installed cordon looks for it (not writable by the
# user), the man pages, completions and the pi package; the installed cordon
# works from any directory without the build tree, names its version and
# commit; `make uninstall` leaves nothing of cordon behind. Also DESTDIR
# staging (what packagers use): everything lands below DESTDIR+PREFIX and
# nothing under PREFIX itself. Root only: the user step runs the installed
# cordon as the unprivileged test user.
. "$CORDON_SRC/tests/lib/tap.sh"
. "$CORDON_SRC/tests/lib/cordon.sh"

if ! is_root; then
    skip "make install" "root only (the unprivileged step runs as the test user)"
    tap_done
fi

# A release build directory of this test's own: make install reconfigures
# the prefix of the build directory it is given. It is kept under the build
# tree between runs (like release.sh's), so a run rebuilds only what the
# prefix changes instead of the whole tree.
build="$CORDON_BUILD/install-tree"
prefix="$TEST_TMP/prefix"
mkdir -p "$prefix" && chmod 755 "$TEST_TMP" "$prefix"
make -C "$CORDON_SRC" install BUILDDIR="$build" PREFIX="$prefix" >"$TEST_TMP/install.log" 2>&1
is "make install exits 0" "$?" 0 || tail -20 "$TEST_TMP/install.log" >&2

for f in bin/cordon libexec/cordon/cordon-agent share/man/man1/cordon.1 \
    share/man/man5/cordon.toml.5; do
    is "installed: $f" "$([ -f "$prefix/$f" ] && echo yes)" "yes"
done
is "installed: the bash completion" \
    "$(find "$prefix/share" -path '*bash-completion*' -name cordon -type f | wc -l)" 1
is "installed: the zsh completion" "$(find "$prefix/share" -name _cordon -type f | wc -l)" 1
is "installed: the fish completion" "$(find "$prefix/share" -name cordon.fish -type f | wc -l)" 1
is "installed: the pi package" \
    "$(find "$prefix/share" -path '*cordon*' -name package.json -type f | wc -l | grep -c '^[1-9]')" 1
like "the installed cordon is static" "$(file -L "$prefix/bin/cordon")" "statically linked"
agent="$prefix/libexec/cordon/cordon-agent"
is "the agent belongs to root" "$(stat -c %U "$agent")" "root"
is "the agent is not writable by group or others" "$((0$(stat -c %a "$agent") & 022))" 0
man_out=$(MANWIDTH=80 man -l "$prefix/share/man/man1/cordon.1" 2>/dev/null | head -20)
like "man cordon renders" "$man_out" "cordon"

# The installed cordon, away from the build tree: from / and from a
# workspace, with nothing of the build on PATH or in the environment.
ver=$(cd / && env -i PATH=/usr/bin:/bin "$prefix/bin/cordon" --version 2>&1)
like "--version names the version and the commit" "$ver" \
    "^cordon [0-9]+\.[0-9]+\.[0-9]+ \(commit [0-9a-f]{7,}"
ws=$(new_ws inst)
echo installed-hello >"$ws/hello.txt"
out=$(cd "$ws" && env -i PATH=/usr/bin:/bin HOME="$HOME" PWD="$ws" "$prefix/bin/cordon" \
    run -- cat hello.txt 2>&1)
is "installed cordon run exits 0" "$?" 0
like "installed cordon run sees the workspace" "$out" "installed-hello"
# It runs the installed agent: without it, it refuses and names that path
# (never one of the build tree).
mv "$agent" "$agent.away"
out=$(cd "$ws" && env -i PATH=/usr/bin:/bin HOME="$HOME" PWD="$ws" "$prefix/bin/cordon" \
    run -- true 2>&1)
rc=$?
mv "$agent.away" "$agent"
is "without its agent the installed cordon refuses" "$rc" 125
like "the refusal names the installed agent's path" "$out" "$prefix/libexec/cordon"
unlike "the installed cordon does not fall back to the build tree" "$out" "$CORDON_BUILD"
if id cordon-test >/dev/null 2>&1; then
    uws="$TEST_TMP/uws"
    mkdir -p "$uws" && echo user-hello >"$uws/hello.txt" && chown -R cordon-test "$uws"
    out=$(cd / && runuser -u cordon-test -- env -i PATH=/usr/bin:/bin HOME=/tmp \
        sh -c "cd '$uws' && '$prefix/bin/cordon' run -- cat hello.txt" 2>&1)
    like "installed cordon run works for an unprivileged user" "$out" "user-hello"
fi

make -C "$CORDON_SRC" uninstall BUILDDIR="$build" PREFIX="$prefix" >"$TEST_TMP/uninstall.log" 2>&1
is "make uninstall exits 0" "$?" 0 || tail -20 "$TEST_TMP/uninstall.log" >&2
left=$(find "$prefix" -mindepth 1 \( -name '*cordon*' -o -type f \) | head -5)
is "make uninstall leaves nothing of cordon" "$left" ""

# DESTDIR staging: below DESTDIR+PREFIX only.
dest="$TEST_TMP/dest"
make -C "$CORDON_SRC" install BUILDDIR="$build" PREFIX=/usr DESTDIR="$dest" \
    >"$TEST_TMP/install2.log" 2>&1
is "make install DESTDIR=... exits 0" "$?" 0 || tail -20 "$TEST_TMP/install2.log" >&2
is "DESTDIR: the binary is staged" "$([ -f "$dest/usr/bin/cordon" ] && echo yes)" "yes"
is "DESTDIR: the agent is staged" \
    "$([ -f "$dest/usr/libexec/cordon/cordon-agent" ] && echo yes)" "yes"
is "DESTDIR: nothing written to the real /usr/libexec/cordon" \
    "$([ -e /usr/libexec/cordon ] && [ ! -e /usr/libexec/cordon/.preexisting ] &&
        find /usr/libexec/cordon -newer "$TEST_TMP/install.log" | head -1)" ""
make -C "$CORDON_SRC" uninstall BUILDDIR="$build" PREFIX=/usr DESTDIR="$dest" \
    >"$TEST_TMP/uninstall2.log" 2>&1
is "make uninstall DESTDIR=... exits 0" "$?" 0
is "DESTDIR: make uninstall leaves no file" "$(find "$dest" -type f | head -3)" ""

tap_done
