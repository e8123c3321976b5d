/* A GET on the Docker Engine API over its unix socket (docker-api.c): the
 * start-time queries without a docker CLI process each (40-50 ms of Go
 * start-up apiece). Host context. */
#pragma once

#include "util/error.h"

#include <stddef.h>

/* GET PATH from the daemon listening on SOCKET (a path), at most
 * TIMEOUT_MS. On 0: *STATUS the HTTP status, *BODY (heap, NUL-terminated,
 * at most DOCKER_API_BODY_MAX bytes) the body. -1: no answer (connect,
 * timeout, a malformed or oversized response), err says which. */
#define DOCKER_API_BODY_MAX (1024 * 1024)
int docker_api_get(const char *socket_path, const char *path, int timeout_ms, int *status,
                   char **body, struct cordon_error *err);
