/* The command the boot spec describes (the agent, or the command of
 * `cordon run`), and how every process started for the user is confined
 * and executed. Guest context: the init (PID 1, the guest's root) fills it;
 * guest_confine_user and the exec functions run in a forked child or in
 * the init just before it becomes the agent. */
#pragma once

#include "util/error.h"

#include <jansson.h>
#include <stdbool.h>
#include <sys/types.h>

struct guest_command {
    char **argv;
    char **env;
    const char *cwd;
    uid_t uid;
    gid_t gid;
    json_t *rlimits;
    const char *home;
    const char *workspace;
    bool workspace_readonly;
    json_t *shares;  /* the boot spec's: the writable ones stay writable */
    bool no_seccomp; /* debug builds' test hook only */
    bool pty;        /* "init --pty": a terminal of the guest (vm-pty.c) */
    json_t *winsize; /* the boot spec's: the terminal's first size */
};

/* No capability, no_new_privs, Landlock and the seccomp filter, as the ns
 * sandbox's processes have; -1 with err filled. No allocation. */
int guest_confine_user(const struct guest_command *c, struct cordon_error *err);
/* The limits the ns backend applies to its sandbox (the boot spec's
 * "rlimits"). */
void guest_apply_limits(json_t *rlimits);
/* In the forked child: stdio (the pipes, or slave as the controlling
 * terminal), confined, then c->argv exec'd. Never returns. */
void guest_exec_command(const struct guest_command *c, int in, int out, int errfd,
                        const char *slave) __attribute__((noreturn));
/* The probe of `cordon verify NAME` in its forked child (ctx is the
 * struct guest_command): confined as the command, then the agent's probe
 * mode. Never returns. */
void guest_exec_probe(const void *ctx);
