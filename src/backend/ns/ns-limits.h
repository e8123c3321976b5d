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

/* Creates cgroups for the sandbox and moves pid into them; records which
 * mechanism applies in sb->limits_applied. Failure to create a cgroup is not
 * an error (rlimits still apply); failure to enforce one that was created is. */
int ns_cgroups_attach(const struct ns_spec *spec, pid_t pid, struct ns_sandbox *sb,
                      struct cordon_error *err);
void ns_cgroups_remove(struct ns_sandbox *sb);

/* Child: applies the prepared rlimits. No allocation. */
int ns_limits_apply_in_child(const struct ns_rlimits *rl, struct cordon_error *err);
