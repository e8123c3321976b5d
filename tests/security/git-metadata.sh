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
tap_done
