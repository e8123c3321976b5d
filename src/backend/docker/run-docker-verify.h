/* How `cordon verify NAME`'s probe reaches a docker `cordon run`/`cordon
 * shell` session (run-docker-verify.c): `docker exec` of the agent's probe
 * mode in the container, as hooks of the shared verify server
 * (backend/verify-server.h). Host context, unprivileged supervisor, driven
 * by the relay's loop (backend/relay.h). */
#pragma once

#include "backend/backend.h"
#include "backend/verify-server.h"
#include "supervisor/launch.h"

#include <sys/types.h>

/* The probe in flight; ctx of docker_verify_ops. */
struct docker_probe {
    const struct launch *l;
    struct sandbox *sb;
    pid_t pid; /* the `docker exec` CLI, or -1 */
    int pidfd;
    int in, out; /* its stdin (the request), its stdout and stderr */
    char *request;
    size_t request_len, request_sent;
};

/* A docker_probe before any audit. */
#define DOCKER_PROBE_INIT(launch, sandbox)                                                         \
    ((struct docker_probe){                                                                        \
        .l = (launch), .sb = (sandbox), .pid = -1, .pidfd = -1, .in = -1, .out = -1})

extern const struct verify_server_ops docker_verify_ops;
