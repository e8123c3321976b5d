/* What the two halves of the git metadata guard share: gitguard.c (the
 * plan, before the start) and gitguard-sync.c (the sync while the sandbox
 * runs, and the end). Host context, unprivileged supervisor; every path
 * below a git directory is walked by fd (gitguard.c's opening comment). */
#pragma once

#include "supervisor/gitguard.h"

#include <dirent.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/stat.h>
#include <sys/types.h>

/* Bounds on what the sandbox can make the host copy. */
#define GITGUARD_INDEX_MAX   ((off_t)2 << 30)
#define GITGUARD_FILE_MAX    ((off_t)256 << 20)
#define GITGUARD_COPY_MAX    ((off_t)512 << 20) /* a copied tree (worktrees/, rebase-merge/) */
#define GITGUARD_ENTRIES_MAX 100000
#define GITGUARD_DEPTH_MAX   16
#define GITGUARD_WALK_MAX    4000000

/* At the workspace root, what the host's tools trust on sight. */
extern const char *const gitguard_root_trusted[];
extern const size_t gitguard_root_trusted_count;

/* NAME below dirfd, neither through a symlink nor out of dirfd. */
int gitguard_open_beneath(int dirfd, const char *name, int flags);
/* A directory stream over a duplicate of dirfd (the caller keeps dirfd). */
DIR *gitguard_opendir_dup(int dirfd);
/* What a file is now (its identity and times), to notice a change. */
struct gitguard_stamp gitguard_stamp_at(int dirfd, const char *name);
bool gitguard_stamp_same(const struct gitguard_stamp *a, const struct gitguard_stamp *b);
/* Copies at most max bytes from in to out: 0, or -1 with errno (EFBIG past
 * max). */
int gitguard_copy_data(int in, int out, off_t max);
/* A regular file below dirfd for reading, st filled: the fd, or -1. */
int gitguard_open_regular(int dirfd, const char *name, struct stat *st);
/* malloc'd, NULL when out of memory. */
char *gitguard_str_printf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Whether path is dir or below it. */
bool gitguard_path_under(const char *path, const char *dir);
/* Reads the one line of a gitdir/commondir-style file (bounded). */
int gitguard_read_line_at(int dirfd, const char *name, char *buf, size_t size);
/* dir/rel canonicalised (rel may be absolute); malloc'd. */
char *gitguard_resolve_from(const char *dir, const char *rel);
