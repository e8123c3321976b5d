/* `cordon verify NAME` for a `cordon run`/`cordon shell` session, on any
 * backend (verify-server.c): the session's control socket and the one
 * audit in flight. The backend gives only how its probe travels (ns: the
 * init channel's frames, vm: the guest channel's frames, docker: `docker
 * exec`) as a table of hooks; the refusals, the deadline, the bounded
 * output and the answers are here, once. Host context, unprivileged
 * supervisor, driven by the relay's poll loop (backend/relay.h); nothing
 * here waits for the sandbox. */
#pragma once

#include "backend/backend.h"
#include "supervisor/launch.h"

#include <poll.h>
#include <stdbool.h>
#include <stddef.h>

/* How many pollfd a backend's probe may wait on. */
#define VERIFY_SERVER_PROBE_FDS 3
/* How many pollfd verify_server_poll() fills: the control socket's, then
 * the probe's. */
#define VERIFY_SERVER_NFDS (1 + VERIFY_SERVER_PROBE_FDS)
/* An answer the sandbox's init still owes this long after the probe's own
 * deadline (INIT_PROBE_TIMEOUT_MS) is given up on. */
#define VERIFY_SERVER_GRACE_MS 15000

struct verify_server;

/* The backend's facts: how its probe travels (ctx is
 * verify_server_spec.ctx) and what the answers name. */
struct verify_server_ops {
    const char *probe_via; /* "the probe, a child of the sandbox's init" */
    const char *init_name; /* "the guest's init"; NULL: no channel to it */
    int deadline_ms;       /* from the request sent; 0: none */
    /* Sends the probe's request (len <= INIT_PROBE_REQUEST_MAX bytes) to
     * the sandbox. <0 with err: the audit is answered err's message. */
    int (*start)(struct verify_server *vs, void *ctx, const char *request, size_t len,
                 struct cordon_error *err);
    /* Optional. The audit ended (answered or given up): stop the probe,
     * drop what was kept of it. */
    void (*end)(struct verify_server *vs, void *ctx);
    /* Optional. Fills fds[0..VERIFY_SERVER_PROBE_FDS) (they come as fd -1). */
    void (*poll)(struct verify_server *vs, void *ctx, struct pollfd *fds);
    /* Optional. After every poll, with the same fds, while an audit runs. */
    void (*handle)(struct verify_server *vs, void *ctx, const struct pollfd *fds);
    /* Optional. The audit's deadline passed; NULL: it ends without a
     * report ("<init> did not answer within N s"). */
    void (*overdue)(struct verify_server *vs, void *ctx);
    /* Optional. When the audit starts: the pidfd whose /proc is the host's
     * evidence (owned by the backend), or -1 with err to refuse the audit.
     * NULL: verify_server_spec.agent_pidfd. */
    int (*agent_pidfd)(void *ctx, struct cordon_error *err);
};

struct verify_server_spec {
    const struct launch *l;   /* borrowed for the session */
    const struct sandbox *sb; /* its pid answers "status" */
    const char *state_dir;    /* the session's, with its lock */
    int state_dir_fd;         /* where the control socket is bound */
    bool shell;               /* "shell" or "run" in "status" */
    int agent_pidfd;          /* -1: given later, verify_server_set_agent() */
    const struct verify_server_ops *ops;
    void *ctx;
};

/* Listens on the session's control socket. */
int verify_server_open(const struct verify_server_spec *spec, struct verify_server **out,
                       struct cordon_error *err);
/* Fills fds[0..VERIFY_SERVER_NFDS) (all -1 when vs is NULL). */
void verify_server_poll(struct verify_server *vs, struct pollfd *fds);
/* How long the loop may sleep before verify_server_handle() must run, or -1. */
int verify_server_timeout_ms(const struct verify_server *vs);
/* After every poll, with the same fds: the probe's hooks, the deadline,
 * then the control socket's requests. Never blocks on a peer. */
void verify_server_handle(struct verify_server *vs, const struct pollfd *fds);
/* Whether an audit is in flight (false for NULL). */
bool verify_server_busy(const struct verify_server *vs);

/* --- the backend's hooks report what the probe did --- */
/* The host's facts of the process behind pidfd (borrowed), for an audit
 * started with agent_pidfd -1. */
void verify_server_set_agent(struct verify_server *vs, int pidfd);
/* Output of the probe, kept up to INIT_PROBE_OUTPUT_MAX (the rest is
 * dropped, and verify_server_finish says so). */
void verify_server_output(struct verify_server *vs, const char *data, size_t len);
/* The probe ended (end: "exit N", "signal N", "timeout" or an error):
 * the output kept is judged and answered. */
void verify_server_finish(struct verify_server *vs, const char *end);
/* The same with output the backend kept itself. */
void verify_server_answer(struct verify_server *vs, const char *output, const char *end);
/* The audit in flight ends without a report: "sandbox NAME: WHY before the
 * audit ended: nothing was audited". */
void verify_server_fail(struct verify_server *vs, const char *why);

/* --- the relay reports the sandbox's state --- */
/* The command exited: an audit in flight is answered that nothing was
 * audited, and so is any later one. */
void verify_server_exited(struct verify_server *vs, int status);
/* The init's channel closed or failed (why: "the guest ..."): an audit in
 * flight ends, a later one is refused. */
void verify_server_gone(struct verify_server *vs, const char *why);
/* Removes the socket, ends a probe still running. NULL is fine. */
void verify_server_close(struct verify_server *vs);
