/* Resource limits: cgroups where cordon may create one (root with cgroup v1
 * controllers, or a delegated cgroup v2 subtree), rlimits always. Host side
 * prepares; the child applies rlimits before exec. */
#pragma once

#include "backend/ns/ns.h"

#include <sys/resource.h>

struct ns_rlimit {
    int resource;
    struct rlimit value;
};

struct ns_rlimits {
    struct ns_rlimit items[8];
    int count;
};

/* Chooses rlimits for spec->limits. RLIMIT_AS is not set here: it would count
 * the sanitizer runtime's reservations against the agent; the agent applies
 * the memory limit to each command it starts instead (--memory-mib). */
void ns_limits_prepare(const struct sandbox_limits *limits, struct ns_rlimits *out);

/* The cgroups a v1 host's child joins itself, and whether a v2 cgroup
 * waits for the parent to move the child. */
struct ns_cgroup_join {
    int fds[3];          /* the v1 tasks files, opened by the host (CLOEXEC) */
    const char *dirs[3]; /* their directories, for the child's errors */
    int count;
    bool v2;
};

/* Before clone: creates cgroups for the sandbox and writes their limits;
 * records which mechanism applies in sb->limits_applied. Failure to create
 * a cgroup is not an error (rlimits still apply); failure to enforce one
 * that was created is. */
int ns_cgroups_prepare(const struct ns_spec *spec, struct ns_sandbox *sb,
                       struct ns_cgroup_join *join, struct cordon_error *err);
/* After clone, host: moves pid into a v2 cgroup (v1: nothing to do). */
int ns_cgroups_attach(const struct ns_cgroup_join *join, pid_t pid, struct ns_sandbox *sb,
                      struct cordon_error *err);
/* Child, first thing, while it has one thread: joins the v1 cgroups. Any
 * failure fails the start. */
int ns_cgroups_join_in_child(const struct ns_cgroup_join *join, struct cordon_error *err);
/* Host, after clone: closes its copies of the tasks files. */
void ns_cgroups_join_close(struct ns_cgroup_join *join);
void ns_cgroups_remove(struct ns_sandbox *sb);

/* Child: applies the prepared rlimits. No allocation. */
int ns_limits_apply_in_child(const struct ns_rlimits *rl, struct cordon_error *err);
