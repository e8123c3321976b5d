/* Review mode (docs/review.md): the agent's changes to the workspace live in
 * an overlay's upper layer in the session's state directory until the user
 * applies or discards them. This module prepares the layer at session start
 * and reads, applies and discards it afterwards (cordon changes, diff,
 * apply, discard, ls). Host context, as the user: the upper layer is written
 * by the sandbox and read only through fds, never following a symlink; the
 * workspace is written only beneath its root, never through a symlink. */
#pragma once

#include "util/error.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/types.h>
#include <time.h>

/* The state directory's subdirectory holding upper/, work/, the start stamp
 * and the protected list. */
#define REVIEW_DIR "review"
/* At most this many entries are read from an upper layer. */
#define REVIEW_MAX_ENTRIES 1000000
#define REVIEW_MAX_DEPTH   256

struct cordon_config;
/* Refuses what review mode cannot offer (before anything is created): the
 * vm and docker backends, a read-only workspace. */
struct backend_ops;
int review_check_config(const struct cordon_config *cfg, const struct backend_ops *backend,
                        struct cordon_error *err);

/* Session start (lifecycle, before the sandbox exists): creates the layer
 * under the state directory STATE_FD (kept from an earlier session of the
 * same name), records the protected paths PROTECTED (NULL-terminated,
 * workspace-relative) and returns the path of the review directory in
 * *RET_DIR (malloc'd). WS_ROOT is the workspace's canonical root. */
int review_prepare(int state_fd, const char *state_dir, const char *ws_root,
                   const char *const *protected_paths, char **ret_dir, struct cordon_error *err);

enum review_kind {
    REVIEW_ADDED,
    REVIEW_MODIFIED,
    REVIEW_DELETED,
    REVIEW_RENAMED,
    REVIEW_MODE,    /* only the permission bits changed */
    REVIEW_SKIPPED, /* a FIFO, socket or device: never applied */
};

struct review_change {
    enum review_kind kind;
    char *path;    /* workspace-relative */
    char *from;    /* REVIEW_RENAMED: the old path */
    char type;     /* 'f' file, 'l' symlink, 'd' directory: what the sandbox has ('-' deleted) */
    char old_type; /* what the host has ('-' nothing) */
    mode_t old_mode, new_mode;
    off_t old_size, new_size;
    dev_t host_dev; /* the host's entry when scanned (apply re-checks it) */
    ino_t host_ino;
    struct timespec host_ctime;
    bool conflict;       /* the host changed it since the session started */
    const char *refused; /* why apply never writes it (protected, git metadata), or NULL */
    char *link;          /* type 'l': the symlink's target (the sandbox's text) */
    ino_t upper_ino;     /* for hard links */
    nlink_t upper_nlink;
};

struct review {
    char name[128];
    int ws_fd;     /* the workspace root, O_PATH */
    int review_fd; /* state/NAME/review */
    int upper_fd;  /* review/upper */
    bool running;  /* the session's owner holds its lock */
    /* A running session is read from its last checkpoint, which the
     * sandbox cannot change (upper_fd is that checkpoint): as_of is its
     * call number, 0 when no call has ended yet (upper_fd is then the live
     * layer, for showing only). apply on a running session takes exactly
     * the checkpoint the user saw: expect_as_of must equal as_of. */
    long as_of;
    long expect_as_of;
    int lock_fd; /* held while a stopped session's layer is changed */
    struct timespec started;
    char **protected_paths;
    size_t nprotected;
    struct review_change *changes;
    size_t count;
};

/* Opens NAME's review layer; an error naming the reason when NAME is not a
 * review-mode session. */
int review_open(const char *name, struct review *r, struct cordon_error *err);
void review_close(struct review *r);

/* Reads the upper layer against the workspace into r->changes (sorted by
 * path). */
int review_scan(struct review *r, struct cordon_error *err);

/* True when change C is selected by PATHS (NULL or empty: all). */
bool review_selected(const struct review_change *c, char *const *paths, size_t npaths);

/* Opens the two sides of C for reading: the host's (or -1) and the
 * sandbox's (or -1). */
int review_open_sides(const struct review *r, const struct review_change *c, int *ret_host,
                      int *ret_sandbox, struct cordon_error *err);

/* Applies the selected changes. Prints one line per change to OUT through
 * the callback; returns the number of conflicts and refusals (>= 0), or -1
 * with ERR set when nothing could be done. */
int review_apply(struct review *r, char *const *paths, size_t npaths,
                 void (*report)(void *ctx, const char *what, const char *path, const char *why),
                 void *ctx, struct cordon_error *err);

/* Empties the upper layer. Refused while the session runs (the kernel's
 * overlay must not have its upper layer changed under it). */
int review_discard(struct review *r, struct cordon_error *err);

/* The number of pending changes of NAME, or -1 when NAME has no review
 * layer. */
long review_pending(const char *name);

/* ---- diff (review-diff.c) ---- */

/* Writes the unified diff of the selected changes (host: a/, sandbox: b/;
 * --stat's summary when STAT_ONLY) to OUT. -1 with ERR set when a change
 * could not be shown (the others still are). */
int review_diff(struct review *r, char *const *paths, size_t npaths, bool stat_only, bool color,
                FILE *out, struct cordon_error *err);
/* diff(1) of two fds (or /dev/null, for -1) to OUT_FD; 0 on exit 0 or 1. */
int review_run_diff(int host, int sandbox, const char *label_a, const char *label_b, bool color,
                    int out_fd);
/* True when the file's first 8000 bytes hold a NUL. */
bool review_looks_binary(int fd);

/* The one-letter status used by `cordon changes`. */
const char *review_kind_name(enum review_kind k);

/* ---- checkpoints (review-checkpoint.c) ---- */

/* At most this many checkpoints are kept per session (the oldest go). */
#define REVIEW_CHECKPOINTS_MAX 200

/* After a routed tool call (supervisor): checkpoint N of the layer under
 * the state directory STATE_FD; *RET_N is its number. */
int review_checkpoint(int state_fd, long *ret_n, struct cordon_error *err);
/* Checkpoint N's directory (a fd), -2 for N = 0 (before the first call),
 * or -1 with ERR set. */
int review_checkpoint_open(const struct review *r, long n, struct cordon_error *err);
/* After a rewind or a discard: the layer as it is now becomes the newest
 * checkpoint, which a running session is shown and applied as. */
void review_checkpoint_now(struct review *r);
/* The number of the last checkpoint (0: none yet). */
long review_checkpoint_last(const struct review *r);
/* What call N changed, against checkpoint N-1: FN gets 'A' added, 'M'
 * modified, 'D' deleted, 'U' back to the host's version, with the earlier
 * and later file open when they are regular files (else -1). */
int review_call_changes(const struct review *r, long n,
                        void (*fn)(void *ctx, char kind, const char *path, int old_fd, int new_fd),
                        void *ctx, struct cordon_error *err);
/* The layer as it was after call N (0: before the first call). Refused
 * while the session runs. */
int review_rewind(struct review *r, long n, struct cordon_error *err);
/* A new stopped session NEW_NAME (of backend, R's own) whose layer is a
 * copy of R's. */
int review_fork(struct review *r, const char *new_name, const char *workspace, const char *backend,
                struct cordon_error *err);
