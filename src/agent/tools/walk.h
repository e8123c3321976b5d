/* Directory walks for find and grep, with the ignore semantics of fd and
 * ripgrep. Depth first, each directory's entries in byte order of their
 * names: the order `rg --sort path` prints and fd's sorted output has, and
 * one that is deterministic. Directory symlinks are never followed (so no
 * loops), the depth and the number of entries per directory are bounded, and
 * unreadable directories are skipped. Sandbox or host context. */
#pragma once

#include "agent/tools/ignore.h"
#include "util/error.h"

#include <stdbool.h>
#include <stddef.h>

#define WALK_MAX_DEPTH        256
#define WALK_MAX_DIR_ENTRIES  (1u << 20)
#define WALK_IGNORE_FILE_MAX  (1u << 20) /* bytes read from one ignore file */
#define WALK_IGNORE_RULES_MAX 100000

enum walk_type { WALK_FILE, WALK_DIR, WALK_SYMLINK, WALK_OTHER };

struct walk_entry {
    const char *path; /* root + "/" + rel */
    const char *rel;  /* relative to the walk root */
    const char *name; /* last component */
    enum walk_type type;
    int dirfd; /* the containing directory, for openat(dirfd, name) */
};

/* Returns <0 to abort the walk (err filled), 0 to go on, 1 to stop. */
typedef int (*walk_visit_fn)(void *ctx, const struct walk_entry *entry, struct cordon_error *err);

struct walk_options {
    /* ripgrep: .gitignore and .git/info/exclude only count when a .git exists
     * in the directory or an ancestor. fd --no-require-git: always. */
    bool require_git;
    /* The tool's own ignore file: ".rgignore" or ".fdignore". */
    const char *custom_ignore_name;
    /* fd 9+: entries named ".git" are left out (an implicit "!.git"). */
    bool exclude_dot_git;
    /* rg --glob: consulted before the ignore files. The override root is
     * override_base: entries under it are matched by their path relative
     * to it, others by their absolute path (as ripgrep does with its
     * working directory). */
    const struct ignore_rules *overrides;
    const char *override_base;
    /* The root, opened already (an approved host call's pinned directory,
     * pin.h): walked from this fd (duplicated), not reopened by its path. */
    bool have_root_fd;
    int root_fd;
    walk_visit_fn visit;
    /* A directory that could not be opened (ripgrep reports it, fd does
     * not); optional. */
    void (*on_error)(void *ctx, const char *path, int errnum);
    void *ctx;
};

/* Walks below root (absolute, a directory; root itself is not visited).
 * Returns <0 on failure (err), 0 when done or stopped. */
int walk_tree(const char *root, const struct walk_options *options, struct cordon_error *err);
