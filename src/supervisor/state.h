/* Session state on the host (docs/design.md "Start-up, in order"): one directory per
 * sandbox under $XDG_RUNTIME_DIR/cordon/ (else $XDG_STATE_HOME/cordon/),
 * directories 0700, files 0600, holding the ownership lock (a JSON record),
 * the audit log and the status. Ownership is a non-blocking flock on the lock
 * file, taken before any sandbox mutation; there is no PID-based fallback.
 * Host context. */
#pragma once

#include "util/error.h"

#include <jansson.h>

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include <time.h>

#define STATE_NAME_MAX 100

struct state_owner {
    int lock_fd; /* holds the flock; -1 when not owned */
    int dir_fd;  /* the sandbox's state directory */
    char name[STATE_NAME_MAX + 1];
    char *dir; /* its path */
    char *audit_path;
    bool audit_capped; /* the audit log reached STATE_AUDIT_MAX; noted there */
    long checkpoint;   /* review mode: the last call's checkpoint, named by the next entry */
};

/* The audit log of one state directory grows to at most this (plus one
 * line saying so): the agent decides how many calls it makes. */
#define STATE_AUDIT_MAX (16u << 20)

/* The command line `cordon ls` shows is cut at this many bytes. */
#define STATE_COMMAND_MAX 512

/* The state root, created (0700) when missing. malloc'd. */
int state_root(char **ret_path, struct cordon_error *err);
/* The state root opened O_PATH (no symlink followed): a fd >= 0, or -1 with
 * ERR set. RET_PATH, when not NULL, gets the path (malloc'd). */
int state_root_open(char **ret_path, struct cordon_error *err);
/* The same, for session NAME: NAME is checked first (state_check_name), so
 * what is opened beneath the root is one directory of it. */
int state_root_for(const char *name, char **ret_path, struct cordon_error *err);

/* Validates a sandbox name: [A-Za-z0-9][A-Za-z0-9_.-]*, at most
 * STATE_NAME_MAX bytes (it becomes a directory and a cgroup name). */
int state_check_name(const char *name, struct cordon_error *err);

/* Takes ownership of NAME: creates its directory, locks it (busy: "another
 * process owns this session", errno EBUSY, nothing touched) and writes the
 * lock record. */
int state_acquire(const char *name, const char *workspace, const char *backend,
                  struct state_owner *out, struct cordon_error *err);
/* Records the sandbox's status ("running", "stopped") in the lock record. */
int state_set_status(struct state_owner *o, const char *status, pid_t sandbox_pid,
                     struct cordon_error *err);
/* Gives up ownership; with remove, deletes the directory first. */
void state_release(struct state_owner *o, bool remove);

/* Appends one JSON line to the session's audit log. */
void state_audit(struct state_owner *o, const char *tool, const char *target, const char *outcome,
                 double duration_ms, int exit_code);
/* The same with the call's arguments (NULL: none): kept whole up to
 * STATE_AUDIT_ARGS_MAX bytes of JSON, else the first that many as text
 * ("args_excerpt", with "args_bytes"): a write of a large file is not
 * copied into the log. */
#define STATE_AUDIT_ARGS_MAX 2048
void state_audit_call(struct state_owner *o, const char *tool, json_t *args, const char *target,
                      const char *outcome, double duration_ms, int exit_code);
/* The session's network decisions (the proxy appends them), beside its
 * audit log in the state directory. */
#define STATE_NETWORK_FILE "network.jsonl"
#define STATE_AUDIT_FILE   "audit.jsonl"
/* Under the state root: a removed session's two logs, kept for gc_hours. */
#define STATE_LOGS_DIR ".logs"

struct state_entry {
    char name[STATE_NAME_MAX + 1];
    char workspace[4096];
    char status[32]; /* from the record */
    char backend[16];
    bool locked; /* an owner holds it now */
    pid_t owner_pid;
    time_t started;
    char command[STATE_COMMAND_MAX]; /* the cordon command line that made it; "" if unknown */
};

/* Lists cordon's state directories (NULL-free array, count in *n). */
int state_list(struct state_entry **ret, size_t *n, struct cordon_error *err);
/* The entry of NAME; an error naming it when cordon made no such sandbox. */
int state_get(const char *name, struct state_entry *ret, struct cordon_error *err);
/* The state directory of NAME (FLAGS | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC
 * beneath the state root), its entry read into *RET first. The fd, or -1
 * with err filled. */
int state_dir_open(const char *name, int flags, struct state_entry *ret, struct cordon_error *err);
/* True when cordon made a sandbox named NAME (running or stopped). */
bool state_exists(const char *name);
/* Removes NAME unless another process owns it. */
int state_remove(const char *name, struct cordon_error *err);
/* Removes sandboxes that are not running, not `keep`, whose lock can be
 * taken and that are older than hours; returns how many. From the younger
 * ones that are not running it removes a stale control socket. */
int state_gc(double hours, const char *keep, size_t *removed, struct cordon_error *err);
