/* The docker backend's network forwarder, inside the container (docker-net.c).
 * Sandbox context: a child of the confined agent. */
#pragma once

#include "util/error.h"

#include <stdint.h>

/* Listens on 127.0.0.1:port (bound before it returns: the command or the
 * first tool call finds it up) and forks a child that relays each
 * connection to the unix socket at path (the host's allowlist proxy,
 * bind-mounted into the container). The child dies with the agent. */
int agent_forward_start(const char *path, uint16_t port, struct cordon_error *err);
