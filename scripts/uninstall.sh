#!/bin/sh
# `make uninstall`: removes what `meson install` put under DESTDIR+PREFIX for
# the build directory $1 (the list is meson's own: `meson introspect
# --installed`), then cordon's own directories when they are empty.
set -eu
build=${1:?usage: uninstall.sh BUILDDIR}
meson introspect --installed "$build" | python3 -c '
import json, os, sys
destdir = os.environ.get("DESTDIR", "")
installed = json.load(sys.stdin)
paths = set()
for src, dst in installed.items():
    if os.path.isdir(src):  # install_subdir: the files of the source tree
        for d, _, files in os.walk(src):
            for f in files:
                paths.add(os.path.join(dst, os.path.relpath(os.path.join(d, f), src)))
    else:
        paths.add(dst)
paths = sorted(paths, key=len, reverse=True)
dirs = set()
for p in paths:
    full = destdir + p
    if os.path.lexists(full) and not os.path.isdir(full):
        os.unlink(full)
        print("removed", full)
    d = os.path.dirname(p)
    while "cordon" in d:
        dirs.add(d)
        d = os.path.dirname(d)
for d in sorted(dirs, key=len, reverse=True):
    try:
        os.rmdir(destdir + d)
    except OSError:
        pass
'
