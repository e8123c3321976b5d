#!/usr/bin/env bash
# Workspace detection trusts nothing a sandbox could have written (issue 14,
# vectors 1, 3 and 8; docs/workspace.md). Each case plays the agent first:
# it plants git metadata from inside a `cordon run` where it can, and the
# same files are also planted from here (a stand-in for "written by any
# means", since protection inside the sandbox may stop some of the writes).
# Then the host user's ordinary next step, `cordon run` in the same
# directory, must refuse (125, naming what was wrong) or run in the right
# root, and never expose ~/.ssh or another repository.
. "$CORDON_SRC/tests/lib/tap.sh"
. "$CORDON_SRC/tests/lib/cordon.sh"

fh=$(new_ws home)
mkdir -p "$fh/.ssh" "$fh/.aws" "$fh/.config/x" "$fh/.local/share/keyrings"
echo PRIVATE-KEY-SENTINEL > "$fh/.ssh/id_ed25519"
ssh_dir="$fh/.ssh"
gitc=(git -c user.name=t -c user.email=t@e -c init.defaultBranch=main -c protocol.file.allow=always)

# A repository outside every workspace, with a secret in its history.
other=$(new_ws other)
in_ws "$other" "${gitc[@]}" init -q
echo OTHER-REPO-SECRET > "$other/secret"
in_ws "$other" "${gitc[@]}" add secret
in_ws "$other" "${gitc[@]}" commit -qm secret

new_repo() { # new_repo NAME: a fresh repository with one commit
    local d
    d=$(new_ws "$1")
    in_ws "$d" "${gitc[@]}" init -q
    echo a > "$d/a"
    in_ws "$d" "${gitc[@]}" add a
    in_ws "$d" "${gitc[@]}" commit -qm first
    echo "$d"
}

# agent DIR SCRIPT: the sandboxed agent's session in DIR (its writes may be
# refused inside; what it achieved is what the next run meets).
agent() {
    (cd "$1" && PWD="$1" HOME="$fh" "$CORDON" run -- sh -c "$2" >/dev/null 2>&1 </dev/null)
}

# next_run DIR [ENV...]: the user's next `cordon run` in DIR; the agent in it
# tries to read the key, extend authorized_keys and read the other repository.
next_run() {
    local d=$1; shift
    out=$(cd "$d" && env PWD="$d" HOME="$fh" "$@" "$CORDON" run -- sh -c "
        cat '$ssh_dir/id_ed25519' 2>/dev/null
        echo evil >> '$ssh_dir/authorized_keys' 2>/dev/null
        git log -p --all 2>/dev/null | grep -a OTHER-REPO-SECRET
        cat '$other/secret' 2>/dev/null
        echo \"root=\$(pwd)\"" 2>&1 </dev/null)
    rc=$?
}

no_leak() {
    unlike "$1: the private key is not read" "$out" "PRIVATE-KEY-SENTINEL"
    unlike "$1: the other repository is not read" "$out" "OTHER-REPO-SECRET"
    ok "$1: ~/.ssh is unchanged on the host" test ! -e "$ssh_dir/authorized_keys"
    rm -f "$ssh_dir/authorized_keys" # each case on its own
}

# refused DESC REGEX: 125, and the message names what was wrong.
refused() {
    is "$1: the next run refuses (125)" "$rc" 125
    like "$1: the refusal says why" "$out" "$2"
    no_leak "$1"
}

# contained DESC DIR: refused (125), or ran with DIR as its workspace.
contained() {
    if [ "$rc" -eq 125 ]; then
        like "$1: refused with a reason naming the git metadata" "$out" "cordon: error: workspace: $2/\\.git"
    else
        like "$1: runs in the right root" "$out" "root=$2\$"
    fi
    no_leak "$1"
}

# --- 1. A new .git/config with core.worktree in a non-git workspace ---
ws=$(new_ws nongit-agent)
agent "$ws" "mkdir -p .git && printf '[core]\n\tworktree = $ssh_dir\n' > .git/config"
next_run "$ws"
contained "non-git workspace, agent plants .git/config" "$ws"

ws=$(new_ws nongit-direct)
mkdir "$ws/.git"
printf '[core]\n\tworktree = %s\n' "$ssh_dir" > "$ws/.git/config"
next_run "$ws"
refused "non-git workspace, a .git holding only a config" "$ws/.git is a directory but not a git repository"

# ... and in a real repository (what the agent's git init + git config makes)
ws=$(new_repo repo-worktree)
agent "$ws" "git config core.worktree '$ssh_dir'"
next_run "$ws"
contained "repository, agent sets core.worktree" "$ws"
git -C "$ws" config core.worktree "$ssh_dir"
next_run "$ws"
refused "repository with core.worktree = ~/.ssh in .git/config" "$ws/.git/config sets core.worktree = $ssh_dir"
git -C "$ws" config core.worktree "$TEST_TMP"
next_run "$ws"
refused "repository with core.worktree naming a parent" "core.worktree = $TEST_TMP"
git -C "$ws" config core.worktree ..
next_run "$ws"
is "core.worktree naming the root itself (relative) is accepted" "$rc" 0
like "... and the root is the repository" "$out" "root=$ws\$"

# --- 2. .git/commondir in a plain repository, pointing at a git dir the
#        agent made, with extensions.worktreeConfig and a config.worktree ---
plant_commondir='mkdir -p evil/objects evil/refs && echo "ref: refs/heads/main" > evil/HEAD &&
printf "[core]\n\trepositoryformatversion = 1\n[extensions]\n\tworktreeConfig = true\n" > evil/config &&
echo ../evil > .git/commondir'
ws=$(new_repo commondir-agent)
agent "$ws" "$plant_commondir; printf '[core]\n\tworktree = $ssh_dir\n' > .git/config.worktree"
next_run "$ws"
contained "agent plants .git/commondir and config.worktree" "$ws"

ws=$(new_repo commondir-direct)
(cd "$ws" && sh -c "$plant_commondir")
printf '[core]\n\tworktree = %s\n' "$ssh_dir" > "$ws/.git/config.worktree"
next_run "$ws"
refused "a plain repository with .git/commondir" "$ws/.git/commondir exists"

# --- 3. extensions.worktreeConfig + .git/config.worktree with core.worktree ---
ws=$(new_repo worktreeconfig)
agent "$ws" "printf '[core]\n\tworktree = $ssh_dir\n' > .git/config.worktree"
next_run "$ws"
contained "agent writes .git/config.worktree" "$ws"
git -C "$ws" config extensions.worktreeConfig true
printf '[core]\n\tworktree = %s\n' "$ssh_dir" > "$ws/.git/config.worktree"
next_run "$ws"
refused "worktreeConfig with core.worktree in config.worktree" "$ws/.git/config.worktree sets core.worktree"

# --- 4. A .git symlink to another repository ---
ws=$(new_ws symlink-agent)
agent "$ws" "ln -s '$other/.git' .git"
next_run "$ws"
contained "agent plants a .git symlink" "$ws"
ws=$(new_ws symlink-direct)
ln -s "$other/.git" "$ws/.git"
next_run "$ws"
refused "a .git symlink" "$ws/.git is a symbolic link"

# --- 5. A gitfile naming another repository's git dir ---
ws=$(new_ws gitfile-agent)
agent "$ws" "printf 'gitdir: $other/.git\n' > .git"
next_run "$ws"
contained "agent plants a gitfile to another repository" "$ws"
ws=$(new_ws gitfile-direct)
printf 'gitdir: %s\n' "$other/.git" > "$ws/.git"
next_run "$ws"
refused "a gitfile to another repository's git dir" "neither a submodule's git directory"
mkdir -p "$ws/sub"
next_run "$ws/sub"
refused "... also from a subdirectory" "$ws/.git names the git directory $other/.git"

# --- 6. A gitfile naming a linked worktree whose gitdir file points elsewhere ---
in_ws "$other" "${gitc[@]}" worktree add -q "$TEST_TMP/other-wt" -b other-wt 2>/dev/null
admin="$other/.git/worktrees/other-wt"
ws=$(new_ws linked-agent)
agent "$ws" "printf 'gitdir: $admin\n' > .git"
next_run "$ws"
contained "agent plants a gitfile to another repository's linked worktree" "$ws"
ws=$(new_ws linked-direct)
printf 'gitdir: %s\n' "$admin" > "$ws/.git"
next_run "$ws"
refused "a linked worktree whose gitdir file does not point back" "gitdir file points at $TEST_TMP/other-wt/.git, not back at $ws/.git"
# The real worktree still works; one whose commondir was re-pointed does not.
next_run "$TEST_TMP/other-wt"
is "the genuine linked worktree runs" "$rc" 0
like "... in its own root" "$out" "root=$TEST_TMP/other-wt\$"
cp "$admin/commondir" "$TEST_TMP/commondir.bak"
echo "$(new_repo decoy)/.git" > "$admin/commondir"
next_run "$TEST_TMP/other-wt"
refused "a linked worktree whose commondir was re-pointed" "a linked worktree's git directory lies in"
cp "$TEST_TMP/commondir.bak" "$admin/commondir"

# --- 7. A planted core.fsmonitor does not run during detection ---
ws=$(new_repo fsmonitor)
sentinel="$TEST_TMP/fsmonitor-ran"
printf '#!/bin/sh\ntouch %s\n' "$sentinel" > "$TEST_TMP/fsmonitor-hook"
chmod +x "$TEST_TMP/fsmonitor-hook"
git -C "$ws" config core.fsmonitor "$TEST_TMP/fsmonitor-hook"
git -C "$ws" config core.pager "touch $sentinel; cat"
cordon_run "$ws" -- true
is "repository with a planted core.fsmonitor: cordon runs" "$rc" 0
ok "... and detection did not run it" test ! -e "$sentinel"
out=$(cd "$ws" && PWD="$ws" GIT_DIR="$ws/.git" GIT_WORK_TREE="$ws" "$CORDON" run -- true 2>&1)
is "with GIT_DIR/GIT_WORK_TREE (host git asked): cordon runs" "$?" 0
ok "... and host git did not run the fsmonitor or the pager" test ! -e "$sentinel"
git -C "$ws" config --unset core.fsmonitor
git -C "$ws" config --unset core.pager

# --- 8. The user's own GIT_DIR does not let repository config pick the root ---
ws=$(new_repo gitdir-env)
git -C "$ws" config core.worktree "$ssh_dir"
next_run "$ws" GIT_DIR="$ws/.git"
refused "GIT_DIR set, core.worktree planted" "no GIT_WORK_TREE"
git -C "$ws" config --unset core.worktree
next_run "$ws" GIT_DIR="$ws/.git"
is "GIT_DIR alone, from the work tree's root: cordon runs" "$rc" 0
like "... in the current directory" "$out" "root=$ws\$"
echo '../commondir-target' > "$ws/.git/commondir"
mkdir -p "$ws/commondir-target"
git init -q --bare "$ws/commondir-target"
next_run "$ws" GIT_DIR="$ws/.git"
refused "GIT_DIR set, .git/commondir planted" "not in its worktrees/"
rm -rf "$ws/.git/commondir" "$ws/commondir-target"
mkdir -p "$ws/sub"
next_run "$ws/sub" GIT_DIR="$ws/.git" GIT_WORK_TREE="$ws"
is "GIT_DIR and GIT_WORK_TREE: cordon runs" "$rc" 0
like "... in GIT_WORK_TREE" "$out" "root=$ws/sub\$"

# A core.worktree naming a longer sibling path, reached through a symlinked
# cwd (the lexical root is computed): refused cleanly, no read past the end
# of the cwd (issue 14, vector 8; the ASan build would report it).
ws=$(new_repo lex)
long="$TEST_TMP/a-much-longer-sibling-directory-name-than-the-workspace/deeper/still"
mkdir -p "$long"
git -C "$ws" config core.worktree "$long"
ln -s "$ws" "$TEST_TMP/lexlink"
out=$(cd "$TEST_TMP/lexlink" && PWD="$TEST_TMP/lexlink" HOME="$fh" "$CORDON" run -- pwd 2>&1 </dev/null)
rc=$?
is "core.worktree naming a sibling, symlinked cwd: refused (125)" "$rc" 125
like "... naming the setting" "$out" "sets core.worktree = $long"
unlike "... and no sanitizer report" "$out" "AddressSanitizer|runtime error"
git -C "$ws" config --unset core.worktree
out=$(cd "$TEST_TMP/lexlink" && PWD="$TEST_TMP/lexlink" HOME="$fh" "$CORDON" run -- pwd 2>&1 </dev/null)
is "without it the workspace appears at its lexical path" "$out" "$TEST_TMP/lexlink"

# --- 9. Other .git entries and git directories ---
ws=$(new_ws fifo)
mkfifo "$ws/.git"
next_run "$ws"
refused "a .git FIFO" "neither a directory nor a regular file"
ws=$(new_repo brokenconfig)
echo '[broken' >> "$ws/.git/config"
next_run "$ws"
refused "a .git/config git would reject" "bad config line [0-9]+ in $ws/.git/config"
ws=$(new_repo fifoconfig)
rm "$ws/.git/config"
mkfifo "$ws/.git/config"
out=$(cd "$ws" && PWD="$ws" HOME="$fh" timeout 30 "$CORDON" run -- true 2>&1 </dev/null)
rc=$?
is "a FIFO as .git/config: refused (125), detection does not hang" "$rc" 125
like "... naming it" "$out" "$ws/.git/config is not a regular file"
ws=$(new_repo symlinkconfig)
rm "$ws/.git/config"
ln -s "$ssh_dir/id_ed25519" "$ws/.git/config"
next_run "$ws"
refused "a .git/config symlink to the key" "$ws/.git/config is a symbolic link"
ws=$(new_repo hugeconfig)
head -c 2000000 /dev/zero | tr '\0' '#' >> "$ws/.git/config"
next_run "$ws"
refused "a 2 MB .git/config" "$ws/.git/config is larger than"
ws=$(new_repo fifohead)
rm "$ws/.git/HEAD"
mkfifo "$ws/.git/HEAD"
out=$(cd "$ws" && PWD="$ws" HOME="$fh" timeout 30 "$CORDON" run -- true 2>&1 </dev/null)
rc=$?
is "a FIFO as .git/HEAD: refused (125), detection does not hang" "$rc" 125
like "... naming it" "$out" "$ws/.git is a directory but not a git repository \\(no valid HEAD\\)"
bare=$(new_ws bare.git)
git init -q --bare "$bare"
next_run "$bare"
refused "a bare repository as the cwd" "$bare is itself a git directory"
ws=$(new_repo inside-git)
next_run "$ws/.git/refs"
refused "the cwd inside .git" "$ws/.git is itself a git directory"

# --- 10. Legitimate layouts are still detected ---
sep=$(new_ws separate-tree)
git init -q --separate-git-dir "$TEST_TMP/separate.git" "$sep"
mkdir -p "$sep/d"
next_run "$sep/d"
refused "--separate-git-dir without a back-pointer" "git --git-dir=$TEST_TMP/separate.git config core.worktree $sep"
git --git-dir="$TEST_TMP/separate.git" config core.worktree "$sep"
next_run "$sep/d"
is "--separate-git-dir naming its work tree: cordon runs" "$rc" 0
like "... in the work tree's root" "$out" "root=$sep/d\$"
sup=$(new_repo super)
subsrc=$(new_repo subsrc)
inner=$(new_repo innersrc)
in_ws "$subsrc" "${gitc[@]}" submodule add -q "$inner" inner 2>/dev/null
in_ws "$subsrc" "${gitc[@]}" commit -qm inner
in_ws "$sup" "${gitc[@]}" submodule add -q "$subsrc" mod 2>/dev/null
in_ws "$sup" "${gitc[@]}" submodule update -q --init --recursive 2>/dev/null
out=$(cd "$sup/mod/inner" && PWD="$sup/mod/inner" HOME="$fh" "$CORDON" run -- sh -c 'git rev-parse --show-toplevel; git status --short | wc -l' 2>&1)
is "a nested submodule is its own workspace and git works" "$out" "$sup/mod/inner
0"
git -C "$sup/mod" config core.worktree "$ssh_dir"
next_run "$sup/mod"
refused "a submodule whose core.worktree was re-pointed" "$sup/.git/modules/mod/config sets core.worktree"

# A home that is a repository (dotfiles): below it, the home is the root and
# refused; GIT_CEILING_DIRECTORIES stops the walk as it stops git.
dh=$(new_ws dotfiles-home)
git init -q "$dh"
mkdir -p "$dh/proj"
out=$(cd "$dh/proj" && PWD="$dh/proj" HOME="$dh" "$CORDON" run -- pwd 2>&1 </dev/null)
like "dotfiles home: a directory below it resolves to the home, refused" "$out" "refusing the home directory"
out=$(cd "$dh/proj" && PWD="$dh/proj" HOME="$dh" GIT_CEILING_DIRECTORIES="$dh" "$CORDON" run -- pwd 2>&1 </dev/null)
is "... and with GIT_CEILING_DIRECTORIES=\$HOME it is its own workspace" "$out" "$dh/proj"

# --- 11. Refused roots (vector 3) ---
root_refused() { # root_refused DESC DIR REGEX [ENV...]
    local desc=$1 d=$2 re=$3; shift 3
    out=$(cd "$d" && env PWD="$d" HOME="$fh" "$@" "$CORDON" run -- true 2>&1 </dev/null)
    rc=$?
    is "$desc is refused (125)" "$rc" 125
    like "$desc: the refusal names the rule" "$out" "$re"
}
root_refused /tmp /tmp "refusing a shared temporary directory"
root_refused /var/tmp /var/tmp "refusing a shared temporary directory"
if [ -d /dev/shm ]; then
    root_refused /dev/shm /dev/shm "refusing a shared temporary directory"
else
    skip "/dev/shm is refused" "no /dev/shm"
fi
sticky=$(new_ws sticky)
chmod 1777 "$sticky"
root_refused "a sticky 1777 directory" "$sticky" "refusing a sticky world-writable directory \\(mode 1777\\)"
rt=$(new_ws runtime)
chmod 700 "$rt"
mkdir "$rt/app"
root_refused "XDG_RUNTIME_DIR" "$rt" "overlaps the runtime directory $rt \\(XDG_RUNTIME_DIR\\)" XDG_RUNTIME_DIR="$rt"
root_refused "a directory inside XDG_RUNTIME_DIR" "$rt/app" "runtime directory $rt" XDG_RUNTIME_DIR="$rt"
root_refused "~/.ssh" "$fh/.ssh" "refusing ~/.ssh \\($fh/.ssh\\), which holds the user's credentials"
root_refused "~/.config/x" "$fh/.config/x" "refusing ~/.config"
root_refused "~/.aws" "$fh/.aws" "refusing ~/.aws"
root_refused "~/.local (it contains ~/.local/share/keyrings)" "$fh/.local" "contains ~/.local/share/keyrings"
ln -s "$fh/.ssh" "$TEST_TMP/innocent"
root_refused "~/.ssh reached through a symlink" "$TEST_TMP/innocent" "refusing ~/.ssh"
# A repository inside ~/.config: the root rule holds for git roots too.
git init -q "$fh/.config/x"
mkdir -p "$fh/.config/x/d"
root_refused "a repository inside ~/.config" "$fh/.config/x/d" "workspace $fh/.config/x: refusing ~/.config"
# Project directories below /tmp stay allowed (tests live there).
ws=$(new_ws plain)
cordon_run "$ws" -- true
is "a project directory below /tmp is still a workspace" "$rc" 0

tap_done
