/* File helpers shared by the tools: Node-style error messages, the atomic
 * replacement of a file's content, and the per-path mutation lock. Sandbox
 * (cordon-agent) or host context. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

/* Node's `CODE: description, syscall 'path'` for errnum ("ENOENT: no such
 * file or directory, access '/x'"). Writes into buf and returns it. */
const char *tool_node_error(int errnum, const char *syscall, const char *path, char *buf,
                            size_t buflen);
/* Node's error code name for errnum ("ENOENT"); "EIO" style fallback. */
const char *tool_errno_name(int errnum);
/* In the sandbox (not a host helper), a read-only file is one cordon keeps
 * host-owned: errors then say so. */
void tool_set_sandboxed(bool sandboxed);
/* The sentence cordon adds to an error for errnum ("" when none). */
const char *tool_refusal_hint(int errnum);

/* Writes data to path as fs.writeFile would, but atomically for a regular
 * file: a temporary file in the same directory, fsync, rename, keeping the
 * old file's mode (and owner when permitted). A symlink is followed (its
 * target is replaced). A FIFO or device is written in place, never blocking
 * on open. A failed write leaves the old file intact. On failure returns -1
 * with errno set and *syscall naming the failing step for the message. */
int tool_write_file(const char *path, const char *data, size_t len, const char **syscall);
/* The same for name in the directory dirfd (an approved host call, pin.h),
 * where no symlink is followed at all: an existing name is opened with
 * RESOLVE_NO_SYMLINKS (a symlink there fails with ELOOP), a new content is
 * renamed over the name in dirfd itself. */
int tool_write_file_at(int dirfd, const char *name, const char *data, size_t len,
                       const char **syscall);

/* mkdir -p of dir (fs.mkdir recursive). -1 with errno and *failed_path (a
 * malloc'd component path, or NULL) on failure. */
int tool_mkdir_parents(const char *dir, char **failed_path);

/* Serialises mutations of one file. The lock is an flock() on a per-path
 * lock file in /tmp (named by a hash of the canonical path), so calls in
 * flight in several threads or processes wait for each other; within one
 * process each call opens its own lock fd, and flock() locks are per open
 * file description, so two calls in one process serialise as well.
 * Returns an fd to pass to tool_unlock_path(), or -1 (then run unlocked). */
int tool_lock_path(const char *path);
void tool_unlock_path(int fd);
