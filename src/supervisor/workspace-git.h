/* Git layout discovery for workspace detection (docs/workspace.md). Reads the
 * .git entry, gitfiles, commondir, gitdir and the [core] of config files
 * itself, with directory fds and O_NOFOLLOW, never running host git in the
 * normal case. Everything it reads may have been written by an earlier
 * sandbox, so it validates instead of trusting. Host context, unprivileged,
 * before any sandbox exists. */
#pragma once

#include "util/error.h"

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>

struct ws_git_layout {
    char *root;       /* canonical work tree root (holds the .git entry); NULL: no repository */
    char *git_dir;    /* canonical git directory */
    char *common_dir; /* canonical common directory (the git directory unless linked) */
};

/* Walks up from the canonical directory CWD to the first .git entry (as git
 * does, honouring GIT_CEILING_DIRECTORIES and stopping at a filesystem
 * boundary unless GIT_DISCOVERY_ACROSS_FILESYSTEM is true) and validates the
 * layout it names. No repository: 0 with out->root NULL. A layout cordon does
 * not trust: -1 with the reason. */
int ws_git_discover(const char *cwd, struct ws_git_layout *out, struct cordon_error *err);

/* True when GIT_DIR, GIT_WORK_TREE or GIT_COMMON_DIR is set: the host user
 * chose the layout, and ws_git_from_env() asks host git for it. */
bool ws_git_env_set(void);

/* Runs host git rev-parse in CWD with a configuration that cannot execute
 * anything and checks its answer against the environment and the on-disk
 * layout. "Not a git repository" or no git: 0 with out->root NULL. */
int ws_git_from_env(const char *cwd, struct ws_git_layout *out, struct cordon_error *err);

void ws_git_layout_free(struct ws_git_layout *l);

/* KEY's value from host git run in DIR (NULL: "/"): FILE NULL, the user's
 * global configuration (includes followed: they are the user's files, and
 * includeIf "gitdir:" matches DIR's repository); else only FILE, includes
 * not followed. Not set, or no git: 0 with *found false. Host context. */
int ws_git_config_get(const char *dir, const char *file, const char *key, char *out, size_t outlen,
                      bool *found, struct cordon_error *err);
/* As ws_git_config_get for every key matching the extended regular
 * expression REGEXP, in one git process: OUT gets git's --null
 * --get-regexp list ("key\nvalue\0" per entry, "key\0" for a key without
 * a value; keys in lower case, in file order), *LEN its length (0: none
 * matched, or no git). */
int ws_git_config_list(const char *dir, const char *file, const char *regexp, char *out,
                       size_t outlen, size_t *len, struct cordon_error *err);

/* What workspace detection reads from a git config file: [core] worktree and
 * bare, [extensions] worktreeConfig. Exposed for the unit tests. */
struct ws_git_core {
    bool worktree_set;
    int worktree_line;
    char worktree[PATH_MAX];
    int bare;             /* -1 unset, else 0 or 1 */
    bool worktree_config; /* extensions.worktreeConfig */
};

/* Parses TEXT (LEN bytes, the contents of FILE) with git's config syntax and
 * fills CORE (later settings win, as in git). A line git would reject is an
 * error naming FILE and the line. Includes are not followed: git does not
 * follow them either when it reads core.worktree to find the work tree. */
int ws_git_config_scan(const char *text, size_t len, const char *file, struct ws_git_core *core,
                       struct cordon_error *err);

/* Shared by workspace-git.c and workspace-gitenv.c. */
bool ws_path_under(const char *path, const char *dir); /* PATH is DIR or below it */
void ws_path_join(char *buf, size_t cap, const char *dir, const char *name); /* DIR/NAME */
/* PATH made absolute against BASE; -1 if it does not fit. */
int ws_path_resolve(const char *base, const char *path, char *buf, size_t cap);
/* Fills OUT with copies of the three paths. */
int ws_git_layout_set(struct ws_git_layout *out, const char *root, const char *git_dir,
                      const char *common_dir, struct cordon_error *err);
