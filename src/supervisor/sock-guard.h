/* The socket guard (docs/sockets.md): a helper process of the supervisor,
 * on the host, that answers the sandbox's connect(), sendto() with an
 * address, sendmsg() and sendmmsg() through seccomp user notification. A
 * unix socket path is resolved by the guard in the caller's root and cwd;
 * the call goes through only when the socket file found there is bound by a
 * socket of the sandbox's own network namespace, or is one the user's
 * configuration names (sockets.allow); the guard then performs the call
 * itself on the caller's socket, to the inode it checked. Host context. */
#pragma once

#include "util/error.h"

#include <stddef.h>
#include <sys/types.h>

struct sock_guard_spec {
    int listener_fd; /* seccomp user-notification listener of the sandbox */
    int diag_fd;     /* NETLINK_SOCK_DIAG socket made in the sandbox's netns */
    /* The sandbox's user namespace (/proc/PID/ns/user of its PID 1), or -1:
     * the guard joins it when it is not the guard's own, so that it holds
     * no capability there (sock-guard.c, drop_privileges). */
    int userns_fd;
    /* An fd the guard keeps open, unused, until it exits, or -1: on ns
     * the sandbox's mount namespace, whose teardown (every mount of the
     * view) then runs in the guard's exit, beside the supervisor's end,
     * not in PID 1's, which the supervisor waits for. */
    int hold_fd;
    pid_t pid1;               /* the sandbox's PID 1, cordon's own code (host pid) */
    const char *workspace;    /* host path of the workspace root */
    const char *const *allow; /* sockets.allow: workspace-relative paths */
    size_t nallow;
    /* cordon's own host sockets the sandbox reaches by design (the docker
     * backend's allowlist proxy), by device and inode; may be NULL. */
    const dev_t *own_dev;
    const ino_t *own_ino;
    size_t nown;
};

/* Starts the guard. The caller keeps its copies of the fds and should close
 * the listener: while a copy stays open elsewhere the guard's exit would not
 * fail the sandbox's calls (ENOSYS) but leave them waiting. The guard dies
 * with the calling process (parent-death signal) and ends by itself once no
 * sandbox process is left. */
int sock_guard_start(const struct sock_guard_spec *spec, pid_t *ret_pid, struct cordon_error *err);

/* Stops and reaps a guard (pid <= 0: nothing). */
void sock_guard_stop(pid_t pid);

/* The start-time layer (docker backend, and a measurement for the docs):
 * walks the tree below root with fds, never following symlinks nor
 * crossing into other file systems, and returns 1 with the first socket's
 * workspace-relative path in found, 0 when there is none, -1 on error.
 * Entries named in allow (workspace-relative) are skipped. *visited counts
 * the entries looked at (may be NULL). */
/* The start-time layer as a refusal: a socket in the workspace (not in
 * sockets.allow) fails the start of BACKEND with its path and the reason. */
int sock_scan_refuse(const char *root, const char *const *allow, size_t nallow, const char *backend,
                     struct cordon_error *err);
int sock_scan_tree(const char *root, const char *const *allow, size_t nallow, char *found,
                   size_t found_size, size_t *visited, struct cordon_error *err);
