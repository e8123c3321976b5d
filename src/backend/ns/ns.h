/* The namespace backend (docs/design.md "The sandbox's view"): user,
 * mount, PID, network, IPC, UTS and cgroup namespaces, pivot_root into a
 * constructed view, seccomp, no_new_privs, no capabilities, rlimits/cgroups,
 * Landlock where the kernel has it. Host context (supervisor), except the
 * functions named *_in_child, which run between clone() and exec. */
#pragma once

#include "backend/backend.h"
#include "backend/spec.h"
#include "util/error.h"

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

struct ns_sandbox {
    pid_t pid; /* host pid of the sandbox's PID 1 (cordon-agent) */
    int pidfd; /* pidfd of that process */
    char *cgroup_paths[4];
    char limits_applied[256]; /* human-readable: which mechanism enforces what */
    pid_t sock_guard_pid;     /* the socket guard (sock-guard.h), or <= 0 */
};

/* Probes what this kernel offers; prints findings with log_debug. */
void ns_probe_report(void);

/* The backend's table entry (ns-backend.c); its struct sandbox's priv is
 * the struct ns_sandbox. */
extern const struct backend_ops ns_backend_ops;
struct launch;
struct lifecycle;
/* Run mode (run-ns.c): the backend's run operation. */
int ns_run(struct launch *l, struct lifecycle *lc, char **agent_argv, bool shell);

/* Builds and starts the sandbox; on success the agent is running as PID 1.
 * Any setup failure is reported with the step, path and errno, and nothing
 * runs. */
int ns_sandbox_start(const struct ns_spec *spec, struct ns_sandbox *sb, struct cordon_error *err);
/* Releases host-side resources (cgroups, pidfd) once the sandbox has exited. */
void ns_sandbox_release(struct ns_sandbox *sb);
/* The same, but the socket guard is killed, not waited for: its pid goes to
 * *guard (or -1) for the caller to reap once its own end is done. Its exit
 * tears the view down (the mount namespace it holds, sock-guard.h). */
void ns_sandbox_release_async(struct ns_sandbox *sb, pid_t *guard);

/* --- internal interfaces between the backend's files --- */
