#!/bin/sh
# `make uninstall`: removes what `meson install` put under DESTDIR+PREFIX for
# the build directory $1 (the list is meson's own: `meson introspect
# --installed`), then cordon's own directories when they are empty.
set -eu
build=${1:?usage: uninstall.sh BUILDDIR}
meson introspect --installed "$build" | python3 -c '
import json, os, sys
destdir = os.environ.get("DESTDIR", "")
paths = sorted(set(json.load(sys.stdin).values()), key=len, reverse=True)
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
