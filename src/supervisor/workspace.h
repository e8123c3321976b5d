/* Workspace detection (docs/design.md "The sandbox's view", docs/workspace.md):
 * inside a git work tree its root (the directory holding the .git entry, its
 * layout read and checked without host git), else the current directory;
 * unsafe roots refused. Host context, unprivileged. */
#pragma once

#include "util/error.h"

#include <stdbool.h>

struct workspace {
    char *root;      /* canonical (realpath) root */
    char *view_root; /* lexical root: where it appears inside the sandbox */
    char *cwd;       /* canonical cwd */
    char *view_cwd;  /* lexical cwd inside the sandbox */
    bool is_git;     /* root holds a .git entry cordon validated */
    /* Git metadata directories outside the root (linked worktrees and
     * submodules keep theirs in the main repository's .git); NULL if none,
     * or if inside the root (covered by its bind). */
    char *git_dir;        /* canonical git directory (what --absolute-git-dir names) */
    char *git_common_dir; /* canonical common directory (--git-common-dir) */
    /* The same two, set whenever is_git, inside the root or not: the layout
     * detection validated (read these rather than the .git entry again). */
    char *layout_git_dir;
    char *layout_common_dir;
};

/* Detects the workspace for cwd (NULL: the process's cwd). Fails closed on git
 * metadata it does not trust (a .git symlink, a commondir in a plain
 * repository, a core.worktree other than the root, a gitfile whose git
 * directory does not name this work tree back, ...), on any host git failure
 * other than "not a git repository" (host git runs only for the user's own
 * GIT_DIR/GIT_WORK_TREE/GIT_COMMON_DIR), and on unsafe roots. */
int workspace_detect(const char *cwd, struct workspace *out, struct cordon_error *err);
void workspace_free(struct workspace *ws);

/* Refuses ROOT when it is "/", a shared temporary directory (/tmp, /var/tmp,
 * /dev/shm, any sticky world-writable directory), overlaps a runtime
 * directory ($XDG_RUNTIME_DIR, /run/user/UID) or a system directory, is HOME
 * or one of its ancestors, or overlaps a credential directory of HOME (~/.ssh,
 * ~/.aws, ~/.gnupg, ~/.config, ...). HOME may be NULL. ROOT must exist: its
 * mode is checked through an fd. */
int workspace_check_safe(const char *root, const char *home, struct cordon_error *err);
