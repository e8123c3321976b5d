/* Helper processes that must not outlive the process that made them, and
 * ending a child for good. Host context (supervisor, proxy, backends). */
#pragma once

#include "util/error.h"

#include <sys/types.h>

/* A socketpair of TYPE (SOCK_CLOEXEC is added) in sv, then fork. In the
 * child: the parent-death signal is SIGKILL and the parent is checked to be
 * still alive (else _exit(127)); returns 0 with both ends open. In the
 * parent: returns the child's pid with both ends open (each side closes
 * the end it does not use). On failure both ends are closed, err names
 * WHAT, and -1 is returned. */
pid_t proc_fork_tied(int sv[2], int type, const char *what, struct cordon_error *err);

/* Ends the child PID for good: waits up to GRACE_MS for it to exit on its
 * own (through PIDFD; without a pidfd, or with 0, it does not wait), then
 * SIGKILLs it and reaps it, retrying after EINTR. PIDFD stays open. */
void proc_end(pid_t pid, int pidfd, int grace_ms);

/* A pipe (O_CLOEXEC) in p, then fork: the child's pid (0 in the child)
 * with both ends open, each side closing the end it does not use; -1 with
 * errno and no end open on failure. */
pid_t proc_fork_pipe(int p[2]);
