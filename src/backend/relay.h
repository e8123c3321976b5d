/* The run-mode relay of every backend (relay.c): `cordon run` and `cordon
 * shell` after the sandbox started. One poll loop over the relayed signals
 * (a signalfd), the pidfd of what holds the sandbox, the terminal or the
 * stdio streams, the channel to the sandbox's init, the session's control
 * socket with its verify server (backend/verify-server.h) and the git
 * metadata's sync timer. The backend gives what differs (where stdin goes,
 * what comes back, how a signal or a resize reaches the command, what its
 * channel says, how the exit status is had) as fds and hooks. Host
 * context, unprivileged supervisor. */
#pragma once

#include "backend/backend.h"
#include "backend/verify-server.h"
#include "supervisor/launch.h"
#include "supervisor/lifecycle.h"

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/signalfd.h>
#include <sys/wait.h>

struct relay;

struct relay_ops {
    /* A relayed signal (backend_relayed_signals(), SIGPIPE; SIGWINCH goes
     * to resize) for the sandbox's command. */
    void (*signal)(struct relay *r, void *ctx, const struct signalfd_siginfo *si);
    /* Optional. The host terminal's size changed. NULL: SIGWINCH is not
     * taken from the process (the docker CLI follows the terminal). */
    void (*resize)(struct relay *r, void *ctx);
    /* Optional. Stdin ended after bytes of it went to the input fd. */
    void (*stdin_eof)(struct relay *r, void *ctx, uint64_t bytes);
    /* Optional. The channel is readable; false when it is gone (it is not
     * polled again). */
    bool (*channel)(struct relay *r, void *ctx);
    /* The holder's pidfd is readable: returns the exit status for the
     * user. The output fds are drained after it. */
    int (*exited)(struct relay *r, void *ctx);
};

struct relay_spec {
    const struct relay_ops *ops;
    void *ctx;
    struct sandbox *sb;   /* pidfd: readable when the holder exited */
    struct launch *l;     /* name, git metadata */
    struct lifecycle *lc; /* the state directory (control socket) */
    bool shell;           /* the session's kind, for "status" */
    int sigfd;            /* from relay_signals_open() */
    int input;            /* where stdin goes, or -1: not read */
    bool input_gated;     /* stdin waits for relay_input_ready() */
    int output, errors;   /* copied to stdout and stderr, or -1 */
    int channel;          /* the init's, for ops->channel, or -1 */
    int exit_grace_ms;    /* after relay_exit_reported(): the holder's time to end */
    /* The session's verify server: the backend's part (l, sb, state_dir,
     * state_dir_fd and shell are filled in here); ops NULL: none. */
    struct verify_server_spec verify;
};

/* Blocks the relayed signals, SIGPIPE and (resize) SIGWINCH and returns a
 * signalfd for them, or -1. Called before the sandbox starts, so that none
 * is lost or kills the supervisor between its start and the relay. */
int relay_signals_open(bool resize);
/* A spec of the session's facts with nothing relayed (fds -1, no verify
 * server): the backend sets what it has. */
struct relay_spec relay_spec_init(const struct relay_ops *ops, void *ctx, struct sandbox *sb,
                                  struct launch *l, struct lifecycle *lc, bool shell, int sigfd);
/* Opens the verify server (a warning when it cannot: the session runs
 * without) and relays until the command ended; returns its exit status. */
int relay_run(const struct relay_spec *spec);

/* --- for the backend's hooks --- */
/* The session's verify server, or NULL. */
struct verify_server *relay_verify(struct relay *r);
/* Stdin may flow to the input fd now (input_gated). */
void relay_input_ready(struct relay *r);
/* The sandbox reported the command's exit status: the channel is not read
 * any more, and the relay returns status when the holder has not ended
 * within exit_grace_ms. */
void relay_exit_reported(struct relay *r, int status);
/* Reaps the holder (its pidfd readable) into *si; -1 when it cannot be
 * reaped. */
int relay_reap(struct relay *r, siginfo_t *si);

/* --- pure parts (unit-tested) --- */
/* The exit status for the user of a waitid() result. */
int relay_exit_status(const siginfo_t *si);
/* The poll timeout of the two deadlines (-1: none). */
int relay_timeout_min(int a_ms, int b_ms);
