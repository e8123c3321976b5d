#!/bin/sh
# Prints the git commit cordon is built from: the work tree's HEAD (with
# "-dirty" when it has changes), else the one `git archive` wrote into
# COMMIT (export-subst, .gitattributes), else "unknown". Called by meson.
src=${1:-.}
if command -v git >/dev/null 2>&1 && git -C "$src" rev-parse --git-dir >/dev/null 2>&1; then
    commit=$(git -C "$src" rev-parse --short=12 HEAD 2>/dev/null) || commit=
    if [ -n "$commit" ]; then
        git -C "$src" diff --quiet HEAD -- 2>/dev/null || commit="$commit-dirty"
        echo "$commit"
        exit 0
    fi
fi
if [ -f "$src/COMMIT" ]; then
    commit=$(cut -c1-12 "$src/COMMIT")
    case $commit in
        *Format*|"") ;;
        *) echo "$commit"; exit 0 ;;
    esac
fi
echo unknown
