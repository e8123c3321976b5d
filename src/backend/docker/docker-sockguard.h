/* The socket guard's hand-over on the docker backend
 * (docker-sockguard.c). Host context, supervisor. */
#pragma once

#include "supervisor/launch.h"
#include "util/error.h"

#include <sys/types.h>

/* Binds <state_dir>/guard.sock (0600), before the container exists. */
int docker_guard_listen(const char *state_dir, int *ret_fd, struct cordon_error *err);

/* Accepts the agent's one connection, takes its listener and sock_diag
 * socket and starts the guard (*ret_guard). Fails when the CLI
 * (cli_pidfd) ends first or after a minute. */
int docker_guard_accept(int listen_fd, int cli_pidfd, const struct launch *l, const char *state_dir,
                        pid_t *ret_guard, struct cordon_error *err);
