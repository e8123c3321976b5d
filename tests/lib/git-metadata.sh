# Git metadata attacks (security cases 56-62, docs/git-metadata.md), shared
# by the ns, vm and docker suites (sourced after tap.sh and cordon.sh). The
# caller sets GM_ARGS (cordon run options: the backend) and GM_GIT (1 when
# the sandbox has git: ns and vm; docker's test image has none). Each attack
# plays the sandboxed agent with plain shell, then the host user's ordinary
# next step (git status, git commit, git -C sub status, the next cordon run),
# and asserts that nothing planted ran and the host is unchanged.
: "${GM_ARGS:=}"
: "${GM_GIT:=1}"

gm_sent="$TEST_TMP/sentinels"
mkdir -p "$gm_sent"
chmod 777 "$gm_sent"
gm_git() { git -c protocol.file.allow=always -c init.defaultBranch=main "$@"; }

# A repository with a submodule (itself with a nested submodule) and a
# husky-style core.hooksPath in the workspace.
gm_make_repo() {
    local d=$1 lib="$TEST_TMP/lib-$RANDOM" inner="$TEST_TMP/inner-$RANDOM"
    mkdir -p "$d" "$lib" "$inner"
    gm_git -C "$inner" init -q && echo inner >"$inner/i" && gm_git -C "$inner" add i &&
        gm_git -C "$inner" -c user.name=t -c user.email=t@t commit -qm inner
    gm_git -C "$lib" init -q && echo lib >"$lib/l" && gm_git -C "$lib" add l &&
        gm_git -C "$lib" submodule -q add "$inner" inner &&
        gm_git -C "$lib" -c user.name=t -c user.email=t@t commit -qm lib
    gm_git -C "$d" init -q
    gm_git -C "$d" config user.name host && gm_git -C "$d" config user.email host@example.com
    echo one >"$d/file" && gm_git -C "$d" add file
    gm_git -C "$d" submodule -q add "$lib" sub
    gm_git -C "$d" submodule -q update --init --recursive
    gm_git -C "$d" commit -qm one
    gm_git -C "$d/sub" config user.name host && gm_git -C "$d/sub" config user.email host@example.com
    mkdir -p "$d/.husky" && gm_git -C "$d" config core.hooksPath .husky
    [ "$(id -u)" -eq 0 ] || return 0
    # The unprivileged suite runs as another user: git's safe.directory.
    :
}

# A fingerprint of what the host's git trusts: every file of every git
# directory except the data git writes in normal work.
gm_fingerprint() {
    local d=$1
    (cd "$d" && find . -path ./file -prune -o \( -path '*/.git/*' -o -path '*/modules/*' \
        -o -name .git -o -path './.husky*' \) -print 2>/dev/null |
        grep -Ev '/(objects|refs|logs)(/|$)|/(index|HEAD|ORIG_HEAD|FETCH_HEAD|COMMIT_EDITMSG|packed-refs)$' |
        sort | while read -r f; do
            if [ -f "$f" ]; then echo "$f $(sha256sum <"$f" | cut -c1-16)"; else echo "$f"; fi
        done)
}

# The attack: plain shell, run inside the sandbox at the workspace root.
# $1 is the sentinel directory's path (a string inside: it exists only on
# the host). Every write is expected to fail or to land where the host's
# git never looks; errors are printed, never fatal.
gm_attack_script() {
    cat <<EOF
S=$1
evil() { printf '#!/bin/sh\ntouch %s/%s\n' "\$S" "\$1"; }
exec 2>&1
printf '[core]\n\tfsmonitor = "touch \$S/fsmonitor; false"\n\thooksPath = /tmp\n' >> .git/config
printf '[core]\n\tfsmonitor = "touch \$S/fsmonitor-sub; false"\n' >> .git/modules/sub/config
printf '[core]\n\tfsmonitor = "touch \$S/fsmonitor-inner; false"\n' >> .git/modules/sub/modules/inner/config
for h in pre-commit post-commit commit-msg post-checkout reference-transaction post-index-change; do
    evil hook-\$h > .git/hooks/\$h; chmod +x .git/hooks/\$h
    evil subhook-\$h > .git/modules/sub/hooks/\$h; chmod +x .git/modules/sub/hooks/\$h
    evil husky-\$h > .husky/\$h; chmod +x .husky/\$h
done
mkdir -p .git/evil-common .git/evil-common/hooks
printf '[core]\n\trepositoryformatversion = 1\n\tfsmonitor = "touch \$S/commondir; false"\n[extensions]\n\tworktreeConfig = true\n' > .git/evil-common/config
echo evil-common > .git/commondir
printf '[core]\n\tworktree = %s\n\tfsmonitor = "touch \$S/config-worktree; false"\n' "\$HOME/.ssh" > .git/config.worktree
echo evil-common > .git/modules/sub/commondir
echo "evil" > .git/config.lock; mv -f .git/config.lock .git/config
mv .git .git-old; mv .git/hooks .git/hooks-old; mv .git/modules .git/modules-old
mkdir -p .git/rebase-merge; echo "exec touch \$S/rebase-exec" > .git/rebase-merge/git-rebase-todo
echo onto > .git/rebase-merge/onto; echo refs/heads/main > .git/rebase-merge/head-name
mkdir -p .git/worktrees/planted; echo ../.. > .git/worktrees/planted/commondir
printf 'ref: ../../../../etc/passwd\n' > .git/HEAD
printf 'gitdir: ../planted-sub-git\n' > sub/.git
mkdir -p planted-sub-git/objects planted-sub-git/refs/heads planted-sub-git/hooks
echo 'ref: refs/heads/main' > planted-sub-git/HEAD
printf '[core]\n\trepositoryformatversion = 0\n\tfsmonitor = "touch \$S/planted-gitfile; false"\n' > planted-sub-git/config
mkdir -p deep/down
cp -r planted-sub-git deep/down/.git
sed -i 's/planted-gitfile/planted-dir/' deep/down/.git/config 2>/dev/null ||
    printf '[core]\n\tfsmonitor = "touch \$S/planted-dir; false"\n' > deep/down/.git/config
mkdir -p locked/lib frozen/lib
cp -r planted-sub-git locked/lib/.git; cp -r planted-sub-git frozen/lib/.git
printf '[core]\n\tfsmonitor = "touch \$S/planted-locked; false"\n' > locked/lib/.git/config
printf '[core]\n\tfsmonitor = "touch \$S/planted-frozen; false"\n' > frozen/lib/.git/config
chmod 111 locked; chmod 555 frozen/lib
mkdir -p .vscode .idea; printf '{"tasks":[{"runOptions":{"runOn":"folderOpen"},"command":"touch \$S/vscode"}]}' > .vscode/tasks.json
echo "touch \$S/envrc" > .envrc
echo attack-done
EOF
}

# The host user's ordinary next steps in the repository.
gm_host_steps() {
    local d=$1
    (cd "$d" && gm_git status >/dev/null 2>&1
        gm_git -c user.name=h -c user.email=h@h commit -q --allow-empty -m host-step >/dev/null 2>&1
        gm_git -C sub status >/dev/null 2>&1
        gm_git -C sub -c user.name=h -c user.email=h@h commit -q --allow-empty -m sub-step >/dev/null 2>&1
        gm_git -C sub/inner status >/dev/null 2>&1
        gm_git -C deep/down status >/dev/null 2>&1
        gm_git -C locked/lib status >/dev/null 2>&1
        gm_git -C frozen/lib status >/dev/null 2>&1
        true)
}

gm_case_repo() {
    local repo fp_before fp_after
    repo=$(new_ws gm-repo)
    gm_make_repo "$repo"
    fp_before=$(gm_fingerprint "$repo")
    head_before=$(cat "$repo/.git/HEAD")
    cordon_run "$repo" $GM_ARGS -- bash -c "$(gm_attack_script "$gm_sent")"
    like "case 56-62: the attack ran in the sandbox" "$out" "attack-done"
    like "case 56: .git/config is read-only inside" "$out" ".git/config: Read-only file system"
    unlike "case 57: a submodule's config on the host is unchanged (the sandbox wrote its own copy)" \
        "$(cat "$repo/.git/modules/sub/config")" "fsmonitor"
    unlike "case 57: a nested submodule's config on the host is unchanged" \
        "$(cat "$repo/.git/modules/sub/modules/inner/config")" "fsmonitor"
    like "case 62: a submodule's gitfile is read-only inside" "$out" "sub/.git: Read-only file system"
    like "case 57: a submodule's hooks are read-only inside" "$out" "modules/sub/hooks/pre-commit: Read-only file system"
    like "case 60: the core.hooksPath directory in the workspace is read-only" "$out" ".husky/pre-commit: Read-only file system"
    like "case 59: renaming a lock file over .git/config is refused" "$out" \
        "(config.lock' to '.git/config'|can't rename '.git/config.lock'): (Device or resource busy|Resource busy|Read-only file system)"
    like "case 7: renaming .git is refused" "$out" \
        "(cannot move '.git' to '.git-old'|can't rename '.git'): (Device or resource busy|Resource busy)"
    like "cordon says the session moved planted files aside" "$out" "cordon moved .*deep/down/.git"
    is "case 56: .git/HEAD on the host is still the branch" "$(cat "$repo/.git/HEAD")" "$head_before"
    ok "case 56: no commondir on the host" test ! -e "$repo/.git/commondir"
    ok "case 56: no config.worktree on the host" test ! -e "$repo/.git/config.worktree"
    ok "case 57: no commondir in the submodule's git dir" test ! -e "$repo/.git/modules/sub/commondir"
    ok "rebase state stays the sandbox's" test ! -e "$repo/.git/rebase-merge"
    ok "no planted worktree admin dir" test ! -e "$repo/.git/worktrees/planted"
    ok "case 61: .vscode moved aside" test ! -e "$repo/.vscode"
    ok "case 61: .idea moved aside" test ! -e "$repo/.idea"
    ok "case 61: .envrc moved aside" test ! -e "$repo/.envrc"
    ok "case 62: the planted repository moved aside" test ! -e "$repo/deep/down/.git"
    ok "case 62: one below a directory the sandbox made unreadable (chmod 111) moved aside too" \
        test ! -e "$repo/locked/lib/.git"
    ok "case 62: one in a directory the sandbox made read-only (chmod 555) moved aside too" \
        test ! -e "$repo/frozen/lib/.git"
    gm_host_steps "$repo"
    fp_after=$(gm_fingerprint "$repo" | grep -v cordon-quarantine)
    is "cases 56-60: what the host's git trusts is unchanged" "$fp_after" "$fp_before"
    is "cases 56-62: nothing planted ran on the host (git status, commit, git -C sub)" \
        "$(ls -A "$gm_sent")" ""
    like "the host's git still works: the host's commit landed" \
        "$(git -C "$repo" log --format=%s -1 2>&1)" "host-step"
    # The next session: the same workspace, nothing outside it.
    cordon_run "$repo" $GM_ARGS -- bash -c 'pwd; ls "$HOME/.ssh" 2>&1; true'
    like "case 56: the next session starts in the same workspace" "$out" "^$repo"
    rm -rf "$gm_sent"/*
    chmod -R u+rwx "$repo" 2>/dev/null || true # what the attack's chmod left, for the clean-up
}

# Git keeps working inside (ns and vm: docker's image has no git).
gm_case_git_works() {
    local repo
    repo=$(new_ws gm-works)
    gm_make_repo "$repo"
    gm_git -C "$repo" config --unset core.hooksPath
    cordon_run "$repo" $GM_ARGS -- bash -c '
        exec 2>&1
        git config user.name agent 2>/dev/null; export GIT_AUTHOR_NAME=agent GIT_AUTHOR_EMAIL=a@a GIT_COMMITTER_NAME=agent GIT_COMMITTER_EMAIL=a@a
        echo two >> file && git add file && git commit -qm agent-one
        git branch topic && git checkout -q topic && echo t > t && git add t && git commit -qm agent-topic
        git switch -q main && echo s >> file && git stash -q && git stash pop -q && git checkout -q file
        git merge -q --no-edit topic
        git checkout -qb rebased HEAD~1 && echo r > r && git add r && git commit -qm agent-r && git rebase -q main && git switch -q main
        git worktree add -q wt-inside topic-wt 2>/dev/null || git worktree add -q -b topic-wt wt-inside
        git -C wt-inside log --oneline -1 >/dev/null && git worktree remove wt-inside
        git submodule -q update && git -C sub log --oneline -1 >/dev/null
        git init -q --bare ../remote.git 2>/dev/null; git clone -q --bare . /tmp/remote.git && git fetch -q /tmp/remote.git main
        git status --short | head -5
        echo works-done'
    like "git works inside: status, add, commit, branch, checkout, switch, stash, merge, rebase, worktree, submodule update, fetch" "$out" "works-done"
    unlike "git works inside: no error" "$out" "fatal|error:"
    like "the agent's commits are the host's history" "$(git -C "$repo" log --format=%s main 2>&1)" "agent-one"
    like "the agent's branch is on the host" "$(git -C "$repo" branch 2>&1)" "rebased"
    is "the host's index matches the agent's commit (git status clean)" \
        "$(git -C "$repo" status --short --untracked-files=no 2>&1)" ""
}

# Case 59: the host's git replaces .git/config by renaming a lock file over
# it during the session; the new file is protected too.
gm_case_host_rename() {
    local repo
    repo=$(new_ws gm-rename)
    gm_make_repo "$repo"
    (cd "$repo" && PWD="$repo" "$CORDON" run $GM_ARGS -- sh -c '
        i=0; while [ ! -e go ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i+1)); done
        printf "[core]\n\tfsmonitor = \"touch '"$gm_sent"'/after-rename; false\"\n" >> .git/config 2>&1
        cat .git/config | grep -c "url = /renamed"' >"$TEST_TMP/rename.out" 2>&1) &
    local pid=$!
    sleep 1
    gm_git -C "$repo" remote add renamed /renamed
    touch "$repo/go"
    wait "$pid"
    like "case 59: the sandbox's write after the host's rename is refused" \
        "$(cat "$TEST_TMP/rename.out")" "Read-only file system"
    gm_host_steps "$repo"
    unlike "case 59: the host's config has no planted key" "$(cat "$repo/.git/config")" "fsmonitor"
    like "case 59: the host's change is kept" "$(cat "$repo/.git/config")" "url = /renamed"
    is "case 59: nothing ran on the host" "$(ls -A "$gm_sent")" ""
}

# Case 58: a linked worktree; the main repository's git dir is host-owned.
gm_case_linked_worktree() {
    local main wt
    main=$(new_ws gm-main)
    gm_git -C "$main" init -q && echo m >"$main/m" && gm_git -C "$main" add m &&
        gm_git -C "$main" -c user.name=h -c user.email=h@h commit -qm main
    gm_git -C "$main" worktree add -q -b wtb "$TEST_TMP/gm-wt"
    gm_git -C "$main" worktree add -q -b other "$TEST_TMP/gm-other"
    wt="$TEST_TMP/gm-wt"
    local fp_before main_head
    fp_before=$(cd "$main/.git" && find . -name config -o -name commondir -o -name gitdir -o -path './hooks*' | sort | xargs sha256sum 2>/dev/null)
    main_head=$(cat "$main/.git/HEAD")
    cordon_run "$wt" $GM_ARGS -- sh -c "
        exec 2>&1
        C=$main/.git
        printf '[core]\n\tfsmonitor = \"touch $gm_sent/main-config; false\"\n' >> \$C/config
        printf '#!/bin/sh\ntouch $gm_sent/main-hook\n' > \$C/hooks/post-commit
        echo /tmp > \$C/worktrees/gm-other/commondir
        echo /tmp/x/.git > \$C/worktrees/gm-other/gitdir
        echo 'ref: refs/heads/wtb' > \$C/HEAD
        printf '[core]\n\tfsmonitor = \"touch $gm_sent/wt-config; false\"\n' > \$C/worktrees/gm-wt/config.worktree
        echo /tmp > \$C/worktrees/gm-wt/commondir
        if command -v git >/dev/null; then
            git -c user.name=a -c user.email=a@a commit -q --allow-empty -m in-worktree && echo committed
        fi
        echo wt-done"
    like "case 58: the attack ran" "$out" "wt-done"
    like "case 58: the main repository's config is read-only" "$out" "config: Read-only file system"
    if [ "$GM_GIT" = 1 ]; then
        like "case 58: git commits inside a linked worktree" "$out" "committed"
        like "case 58: the commit is on the host's branch" "$(git -C "$wt" log --format=%s -1)" "in-worktree"
    fi
    is "case 58: the main checkout's HEAD is unchanged" "$(cat "$main/.git/HEAD")" "$main_head"
    (cd "$main" && git status >/dev/null 2>&1; git -c user.name=h -c user.email=h@h commit -q --allow-empty -m m2 2>/dev/null)
    (cd "$wt" && git status >/dev/null 2>&1)
    (cd "$TEST_TMP/gm-other" && git status >/dev/null 2>&1)
    is "case 58: config, hooks and worktree admin files of the main repository unchanged" \
        "$(cd "$main/.git" && find . -name config -o -name commondir -o -name gitdir -o -path './hooks*' | sort | xargs sha256sum 2>/dev/null)" "$fp_before"
    is "case 58: nothing ran on the host" "$(ls -A "$gm_sent")" ""
}

# Case 61 in a non-git workspace: a new .git with core.worktree, the next
# session's workspace detection and the host's git.
gm_case_nongit() {
    local ws fakehome
    ws=$(new_ws gm-plain)
    fakehome=$(new_ws gm-home)
    mkdir -p "$fakehome/.ssh" && echo PRIVATE-KEY >"$fakehome/.ssh/id_ed25519"
    out=$(cd "$ws" && PWD="$ws" HOME="$fakehome" "$CORDON" run $GM_ARGS -- sh -c "
        mkdir -p .git/objects .git/refs/heads .git/hooks
        echo 'ref: refs/heads/main' > .git/HEAD
        printf '[core]\n\trepositoryformatversion = 0\n\tworktree = $fakehome/.ssh\n\tfsmonitor = \"touch $gm_sent/nongit; false\"\n' > .git/config
        echo planted" 2>&1)
    like "case 61: the sandbox made .git" "$out" "planted"
    like "case 61: cordon says it moved .git aside" "$out" "cordon moved .*/.git"
    ok "case 61: no .git left for the host" test ! -e "$ws/.git"
    (cd "$ws" && git status >/dev/null 2>&1)
    out=$(cd "$ws" && PWD="$ws" HOME="$fakehome" "$CORDON" run $GM_ARGS -- sh -c 'pwd; cat '"$fakehome"'/.ssh/id_ed25519 2>&1; true' 2>&1)
    like "case 56: the next session's workspace is the same directory" "$out" "^$ws"
    unlike "case 56: the next session cannot read ~/.ssh" "$out" "PRIVATE-KEY"
    is "case 61: nothing ran on the host" "$(ls -A "$gm_sent")" ""
}
