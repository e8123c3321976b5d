/* What the files of review mode's layer share (review.c: session start,
 * opening, the paths apply never writes, discard; review-scan.c: the
 * listing of the sandbox's changes; review-apply.c: writing them into the
 * workspace; review-checkpoint.c: the copy of a file's data).
 * Internal to src/supervisor/. Host context, as the user. */
#pragma once

#include "supervisor/review.h"

#include <dirent.h>
#include <linux/openat2.h>
#include <stdbool.h>
#include <sys/stat.h>

#define RESOLVE_STRICT     (RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS)
#define PROTECTED_FILE     "protected"
#define STARTED_FILE       "started"
#define APPLIED_FILE       "applied"
#define APPLIED_MAX        (16u << 20)
#define TEMP_PREFIX        ".cordon-apply-"
#define RENAME_COMPARE_MAX 256

/* A directory stream over a duplicate of DIRFD, read from its start: the
 * directory is not opened again (reopening "." broke the checkpoint of a
 * root session's upper layer), so DIRFD must be open for reading. NULL with errno; ELOOP
 * when DEPTH (of DIRFD below the walk's root) passes REVIEW_MAX_DEPTH. */
DIR *review_opendir_dup(int dirfd, int depth);

/* The next entry of D but . and .., while *RC is 0 and each entry taken
 * off *BUDGET finds one left: NULL at the end, or with *RC -1 (EFBIG) when
 * the budget is spent. */
struct dirent *review_readdir(DIR *d, size_t *budget, int *rc);

/* Copies the rest of IN to OUT with read(2) and write(2), where
 * copy_file_range(2) cannot. 0, or -1 with errno. */
int review_copy_read_write(int in, int out);

/* The directory holding REL in the upper layer (beneath it, O_PATH, no
 * symlink), REL's last component in *BASE. The fd, or -1 with errno. */
int review_upper_parent(const struct review *r, const char *rel, const char **base);

char *read_small(int dirfd, const char *name, size_t max, size_t *len);
void changes_free(struct review *r);
bool is_under_path(const char *path, const char *dir);
const char *refused_reason(const struct review *r, const char *rel);
bool is_opaque(int dirfd, const char *name);
void remove_stale_temps(struct review *r);
