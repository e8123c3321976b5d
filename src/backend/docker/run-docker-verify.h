/* `cordon verify NAME` for a `cordon run`/`cordon shell` session on the
 * docker backend (run-docker-verify.c): the session's control socket and
 * the audit in flight, its probe a `docker exec` in the container. Host
 * context, unprivileged supervisor, driven by run-docker.c's loop. */
#pragma once

#include "backend/backend.h"
#include "supervisor/launch.h"
#include "supervisor/lifecycle.h"

#include <poll.h>
#include <stdbool.h>

/* How many pollfd docker_verify_poll() fills. */
#define DOCKER_VERIFY_NFDS 4

struct docker_verify;

/* Listens on the session's control socket (<state dir>/control). l, lc and
 * sb are borrowed for the session's lifetime. */
int docker_verify_open(const struct launch *l, struct lifecycle *lc, struct sandbox *sb, bool shell,
                       struct docker_verify **out, struct cordon_error *err);
/* Fills fds[0..DOCKER_VERIFY_NFDS) (fd -1 where nothing is to wait for;
 * all -1 when v is NULL). */
void docker_verify_poll(const struct docker_verify *v, struct pollfd *fds);
/* How long the loop may sleep before docker_verify_handle() must run, or -1. */
int docker_verify_timeout_ms(const struct docker_verify *v);
/* After every poll, with the same fds: requests, the probe's input, output
 * and end, its deadline. Never blocks on a peer. */
void docker_verify_handle(struct docker_verify *v, const struct pollfd *fds);
/* The command exited (the container with it): an audit in flight is
 * answered that nothing was audited. */
void docker_verify_exited(struct docker_verify *v, int status);
/* Removes the socket, ends a probe still running. NULL is fine. */
void docker_verify_close(struct docker_verify *v);
