/* Workspace detection (DESIGN.md "The sandbox view"): inside a git worktree the
 * worktree root, else the current directory; unsafe roots refused. Host
 * context, unprivileged. */
#pragma once

#include "util/error.h"

#include <stdbool.h>

struct workspace {
    char *root;      /* canonical (realpath) root */
    char *view_root; /* lexical root: where it appears inside the sandbox */
    char *cwd;       /* canonical cwd */
    char *view_cwd;  /* lexical cwd inside the sandbox */
    bool is_git;
    /* Git metadata directories outside the root (linked worktrees and
     * submodules keep theirs in the main repository's .git); NULL if none. */
    char *git_dir;        /* canonical --absolute-git-dir */
    char *git_common_dir; /* canonical --git-common-dir */
};

/* Detects the workspace for cwd (NULL: the process's cwd). Fails closed on any
 * git failure other than "not a git repository", and on unsafe roots. */
int workspace_detect(const char *cwd, struct workspace *out, struct cordon_error *err);
void workspace_free(struct workspace *ws);

/* Refuses roots that are or overlap "/", system directories, or that are the
 * home directory itself or one of its ancestors. */
int workspace_check_safe(const char *root, const char *home, struct cordon_error *err);
