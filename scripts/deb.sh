#!/usr/bin/env bash
# `make deb`: builds the Debian package from the files git tracks (committed
# or not) in a copy under build-deb/, with dpkg-buildpackage, then runs
# lintian on it. Prints the path of the .deb on stdout. A package built from
# the same content is reused (the key is a hash of every tracked file and of
# the build's own inputs), so `make test` rebuilds it only after a change.
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
out=${CORDON_DEB_DIR:-$src/build-deb}
mkdir -p "$out"
cd "$src"
# tests/ and bench/ are not part of the package (meson -Dtests=false).
files() { git ls-files -z -- . ':!tests/' ':!bench/'; }
key=$( (files | xargs -0 sha256sum; dpkg-query -W debhelper lintian gcc meson) 2>/dev/null |
    sha256sum | cut -c1-16)
version=$(dpkg-parsechangelog -S Version)
arch=$(dpkg --print-architecture)
deb="$out/cordon_${version}_${arch}.deb"
if [ -f "$deb" ] && [ "$(cat "$out/key" 2>/dev/null)" = "$key" ]; then
    echo "$deb"
    exit 0
fi
rm -rf "$out/src" "$out"/*.deb "$out"/*.changes "$out"/*.buildinfo "$out/key"
mkdir -p "$out/src"
files | while IFS= read -r -d '' f; do
    [ -e "$f" ] && printf '%s\0' "$f"
done | tar --null -T - -cf - | tar -xf - -C "$out/src"
# No .git in the copy: the commit goes in COMMIT, as `git archive` writes it.
scripts/version.sh "$src" > "$out/src/COMMIT"
echo "deb: dpkg-buildpackage in $out/src" >&2
(cd "$out/src" && DEB_BUILD_OPTIONS="parallel=${CORDON_DEB_JOBS:-2} nocheck" \
    dpkg-buildpackage -b -us -uc >"$out/build.log" 2>&1) || {
    tail -n 40 "$out/build.log" >&2
    echo "deb: dpkg-buildpackage failed; the whole log is $out/build.log" >&2
    exit 1
}
changes=$(ls "$out"/cordon_"${version}"_*.changes)
echo "deb: lintian $changes" >&2
lintian --fail-on error,warning --info "$changes" >&2 || {
    echo "deb: lintian found errors or warnings without an override (debian/cordon.lintian-overrides)" >&2
    exit 1
}
rm -rf "$out/src"
echo "$key" > "$out/key"
echo "$deb"
