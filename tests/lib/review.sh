# Review mode's fixtures (docs/review.md), sourced after tap.sh and
# cordon.sh by tests/integration/review.sh (ns) and review-core.sh (every
# other backend): the fingerprint of a tree, a workspace with every kind of
# entry, and the agent's script that changes each of them. Host context.

# tree_sum DIR: one hash of every entry below DIR but .git (name, mode,
# size, type, mtime) and of every file's content: equal only if nothing
# changed.
tree_sum() { (cd "$1" && find . -path ./.git -prune -o -print0 | sort -z |
    xargs -0 stat -c '%n %a %s %F %Y' 2>/dev/null; find . -path ./.git -prune -o -type f -print0 |
    sort -z | xargs -0 sha256sum) | sha256sum; }

# review_plant_ws DIR: the entries review_changes (below) changes: files,
# a tree to remove, a file to move over another, one to chmod, one to turn
# into a directory, a 3 MB file to rewrite, a symlink to retarget and a
# file the host will edit too (conflict.txt).
review_plant_ws() {
    mkdir -p "$1/gone/deep" "$1/sub"
    echo one >"$1/a.txt"
    echo deep >"$1/gone/deep/x"
    echo k >"$1/sub/k"
    echo old-target >"$1/over.txt"
    echo moved-content >"$1/src.txt"
    echo host >"$1/conflict.txt"
    printf '#!/bin/sh\n' >"$1/run.sh"
    echo was-file >"$1/typechange"
    head -c 3000000 /dev/urandom >"$1/big.bin"
    ln -s a.txt "$1/oldlink"
}

# review_changes: the start of the agent's script (bash, in the workspace):
# every kind of change to review_plant_ws's entries, and new ones (a file
# with NULs, hard links, a name with a newline and a bidi control, a deep
# directory).
review_changes='
set -e
echo two >> a.txt
rm -r gone
mv src.txt over.txt
chmod 755 run.sh
rm typechange; mkdir typechange; echo inside > typechange/f
ln -sfn over.txt oldlink
echo agent > conflict.txt
printf "a\0b\0c" > new.bin
head -c 2000000 /dev/urandom > big.bin
echo h > hl1; ln hl1 hl2
echo odd > "$(printf "odd name\nwith newline \xe2\x80\xae")"
mkdir -p newdir/x/y; echo leaf > newdir/x/y/z
rm -r sub; mkdir sub; echo fresh > sub/n
'
