#!/usr/bin/env bash
# Git metadata is host-owned (security cases 56-62, docs/git-metadata.md) on
# the ns backend, as root and unprivileged: the attacks of
# tests/lib/git-metadata.sh, then the host user's next steps.
. "$CORDON_SRC/tests/lib/tap.sh"
. "$CORDON_SRC/tests/lib/cordon.sh"
. "$CORDON_SRC/tests/lib/git-metadata.sh"
if ! command -v git >/dev/null; then
    skip "git metadata" "git is not installed"
    tap_done
fi
gm_case_repo
gm_case_git_works
gm_case_host_rename
gm_case_linked_worktree
gm_case_nongit

# A config file the host's git includes may lie in the workspace: one the
# sandbox replaced by a FIFO does not hang the next start.
repo=$(new_ws gm-fifo)
gm_git -C "$repo" init -q
gm_git -C "$repo" config include.path ../.gitconfig-project
mkfifo "$repo/.gitconfig-project"
out=$(cd "$repo" && PWD="$repo" timeout 20 "$CORDON" run -- true 2>&1)
is "an included config that is a FIFO does not hang the start" "$?" 0

# Refusals say who refused: the agent's tools name cordon.
repo=$(new_ws gm-refusal)
gm_git -C "$repo" init -q
out=$(cd "$repo" && PWD="$repo" "$CORDON" tool bash '{"command":"git config user.name agent"}' 2>&1)
like "a refused git config names cordon (bash tool)" "$out" "cordon keeps it host-owned"
out=$(cd "$repo" && PWD="$repo" "$CORDON" tool write '{"path":".git/config","content":"x"}' 2>&1)
like "a refused write names cordon (write tool)" "$out" "EROFS: read-only file system, open .*cordon keeps this path read-only"
out=$(cd "$repo" && PWD="$repo" "$CORDON" tool bash '{"command":"echo ok"}' 2>&1)
unlike "a command that wrote nothing read-only gets no note" "$out" "cordon keeps"
tap_done
