/* Direct mode's undo of the write and edit tools (docs/review.md, "Rewind
 * in direct mode"): before such a call the supervisor keeps the target
 * file's previous content in the session's state directory (undo/), after
 * it the file's new identity; `cordon rewind NAME --to N` puts the previous
 * contents back, newest first, refusing a file something else changed
 * since (unless forced). Host context, as the user: the workspace is
 * opened beneath its root fd, never through a symlink. */
#pragma once

#include "util/error.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#define UNDO_DIR "undo"
/* A previous content larger than this is not kept (that call cannot be
 * undone for that file; rewind says so). */
#define UNDO_FILE_MAX (16L << 20)
/* At most this many calls are kept (the oldest go). */
#define UNDO_CALLS_MAX 200
/* ... and at most this many bytes of previous contents (the oldest go):
 * the state directory may be on a tmpfs ($XDG_RUNTIME_DIR). */
#define UNDO_TOTAL_MAX (256L << 20)
/* At most this many calls of one session are in flight with a saved copy. */
#define UNDO_SLOTS 16

struct undo_slot {
    bool used;
    long long id; /* the call's id on the channel */
    char rel[4096];
    char pending[64]; /* undo/.pending-ID */
    bool existed, saved;
    bool concurrent; /* another call on the same file was in flight: its
                        "before" may be stale, so it is not kept */
    unsigned mode;
    long long before_ino, before_size, before_mtime_ns;
};

struct undo {
    int state_fd; /* the session's state directory (not owned) */
    int ws_fd;    /* the workspace's root, O_PATH (owned) */
    char *view_root, *view_cwd, *home;
    struct undo_slot slots[UNDO_SLOTS];
};

/* Session start, direct mode: WS_ROOT the host's root, VIEW_ROOT and
 * VIEW_CWD where it and the cwd appear inside the sandbox. */
int undo_init(struct undo *u, int state_fd, const char *ws_root, const char *view_root,
              const char *view_cwd, const char *home, struct cordon_error *err);
void undo_free(struct undo *u);
/* Before call ID of TOOL with ARGS is sent: keeps the previous content of
 * a write's or edit's target in the workspace. Failures only log. */
void undo_before(struct undo *u, long long id, const char *tool, json_t *args);
/* After call ID's result: records the file's new identity as call *RET_N
 * (0: nothing recorded). */
void undo_after(struct undo *u, long long id, long *ret_n);

/* `cordon rewind NAME --to N` in direct mode: undoes the recorded calls
 * after N, newest first. REPORT gets ("restored"|"removed"|"refused"|
 * "kept", path, why). Returns the number of refusals (>= 0), or -1 with
 * ERR set. */
int undo_rewind(const char *name, long to, bool force,
                void (*report)(void *ctx, const char *what, const char *path, const char *why),
                void *ctx, struct cordon_error *err);
/* True when NAME's state directory holds direct-mode undo records. */
bool undo_exists(const char *name);
