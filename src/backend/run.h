/* The run operation's one sequence (run.c), for `cordon run` and `cordon
 * shell` on every backend: the relayed signals blocked, the sandbox started,
 * the lifecycle told (state, watchdog), the relay (backend/relay.h), and
 * one teardown on every way out. The backend gives what differs as hooks:
 * how its sandbox starts, what the relay gets from it, how it ends. Host
 * context, unprivileged supervisor. */
#pragma once

#include "backend/relay.h"
#include "util/term.h"

#include <stdbool.h>

/* One run, as the hooks see it. */
struct backend_run {
    struct launch *l;
    struct lifecycle *lc;
    char **agent_argv;    /* cordon-agent init ... -- CMD */
    struct sandbox sb;    /* what start() made (pid, pidfd -1 until then) */
    struct term_raw term; /* the host terminal: restored after teardown() */
    void *ctx;            /* the backend's own state, the relay hooks' ctx */
};

struct backend_run_ops {
    const struct relay_ops *relay;
    /* SIGWINCH is taken from the process for relay->resize. */
    bool resize;
    /* Starts the sandbox into r->sb; <0 with err filled when it did not
     * (teardown still runs: it releases what was made). */
    int (*start)(struct backend_run *r, struct cordon_error *err);
    /* Once the lifecycle knows the sandbox: the backend's part of the
     * relay's spec (its fds, the verify server's ops), and what must happen
     * just before the relay (the terminal made raw). */
    void (*attach)(struct backend_run *r, struct relay_spec *spec);
    /* After the relay, or after a failure at any step before it: ends the
     * sandbox if it still runs and releases everything start() made. */
    void (*teardown)(struct backend_run *r);
};

/* Runs the sequence; returns the exit status for the user (the command's,
 * or CORDON_EXIT_FAILURE when cordon failed: said on stderr). */
int backend_run(const struct backend_run_ops *ops, void *ctx, struct launch *l,
                struct lifecycle *lc, char **agent_argv, bool shell);
