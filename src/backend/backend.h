/* The backend interface (DESIGN.md "Backends sit behind one interface"): a
 * table of operations chosen at run time by name. Host context (supervisor). */
#pragma once

#include "util/error.h"

#include <stddef.h>
#include <sys/types.h>

struct launch;

struct sandbox {
    const struct backend_ops *ops;
    pid_t pid;             /* the process that holds the sandbox (agent, or QEMU) */
    int pidfd;             /* pidfd of pid: readable when it has exited */
    int channel_fd;        /* connected to the agent's protocol stream */
    char description[128]; /* human-readable: "vm (tcg, 2 vCPU, 1024 MiB)" */
    void *priv;            /* the backend's own state */
};

struct backend_ops {
    const char *name;
    /* 0 when this backend can run here; otherwise says what is missing. */
    int (*probe)(struct cordon_error *err);
    /* Starts the sandbox with the agent running agent_argv and returns with
     * channel_fd connected to it. */
    int (*start)(const struct launch *l, char *const *agent_argv, struct sandbox *sb,
                 struct cordon_error *err);
    /* Stops the sandbox (if still running) and releases everything start()
     * made. Accepts a sandbox whose start() failed. */
    void (*stop)(struct sandbox *sb);
};

/* The backend called name, or NULL. */
const struct backend_ops *backend_lookup(const char *name);

/* ---- the host probe (backend/probe.h): what `cordon doctor` and backend =
 * "auto" ask each backend, by name ("ns", "vm", "docker"); NULL if none. ---- */
#include "backend/probe.h"
backend_host_probe_fn backend_probe_lookup(const char *name);
