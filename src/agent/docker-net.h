/* The docker backend's network forwarder, inside the container (docker-net.c).
 * Sandbox context: a child of the confined agent. */
#pragma once

#include "util/error.h"

#include <stddef.h>
#include <stdint.h>

/* Makes the listeners, then forks a child that relays their connections
 * and dies with the agent; the listeners exist before it returns, so the
 * command or the first tool call finds them up.
 * proxy_socket (or NULL): 127.0.0.1:NET_PROXY_PORT is relayed to that unix
 * socket (the host's allowlist proxy, bind-mounted into the container).
 * publish_dir (or NULL): publish_dir/i.sock is made for each ports[i] and
 * relayed to 127.0.0.1:ports[i] here (the host's published port i). */
int agent_forward_start(const char *proxy_socket, const char *publish_dir, const uint16_t *ports,
                        size_t nports, struct cordon_error *err);
