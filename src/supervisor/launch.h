/* Turning "this workspace, these options" into an ns_spec: workspace
 * detection, environment, home, protected paths, git metadata, the agent
 * binary and the sandbox's name. Host context; shared by `cordon run`,
 * `cordon shell` and the session layer. */
#pragma once

#include "backend/ns/ns.h"
#include "supervisor/environ.h"
#include "supervisor/workspace.h"

#define LAUNCH_MAX_PROTECTED 64

struct launch_options {
    struct ns_limits limits;
    bool workspace_readonly;
    enum env_mode env_mode;
    const char *const *env_allow;
    const char *const *protected_paths; /* NULL: the built-in list */
};

struct launch {
    struct workspace ws;
    char **env;
    char *agent_path;
    char *home;
    char name[64];
    const char *protected_paths[LAUNCH_MAX_PROTECTED + 1];
    const char *git_dirs[3];
    struct ns_spec spec; /* argv, stdio and control_fd are the caller's to fill */
};

/* Built-in limits: generous for builds, tight enough that a runaway cannot
 * take the machine down. */
void launch_default_options(struct launch_options *o);
int launch_prepare(const struct launch_options *o, struct launch *l, struct cordon_error *err);
void launch_free(struct launch *l);
