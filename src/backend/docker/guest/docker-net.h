/* The docker backend's network forwarder, inside the container (docker-net.c).
 * Sandbox context: a child of the confined agent. */
#pragma once

#include "util/error.h"

#include <stddef.h>
#include <stdint.h>

struct agent_forward {
    const char *proxy_socket; /* NULL: no allowlist */
    const char *publish_dir;  /* NULL: no published port */
    uint16_t ports[32];       /* NET_MAX_PUBLISH */
    size_t nports;
    /* network.host_services: 127.0.0.1:PORT relayed to
     * host_service_dir/PORT.sock (the host's proxy). */
    const char *host_service_dir;
    uint16_t services[32];
    size_t nservices;
};

/* Reads the leading --proxy-socket PATH, --publish-dir DIR,
 * --publish-port N, --host-service-dir DIR and --host-service N options into fwd; returns the index of the first other
 * argument (1 when there is none), or -1 when one is malformed. */
int agent_forward_parse(int argc, char **argv, struct agent_forward *fwd);

/* Makes the listeners, then forks a child that relays their connections
 * and dies with the agent; the listeners exist before it returns, so the
 * command or the first tool call finds them up. Nothing to do: 0.
 * proxy_socket: 127.0.0.1:NET_PROXY_PORT is relayed to that unix socket
 * (the host's allowlist proxy, bind-mounted into the container).
 * publish_dir: publish_dir/i.sock is made for each ports[i] and relayed to
 * 127.0.0.1:ports[i] here (the host's published port i).
 * services: 127.0.0.1:services[i] is relayed to
 * host_service_dir/services[i].sock (the host's proxy, which
 * connects to the host's own 127.0.0.1 at that port). */
int agent_forward_start(const struct agent_forward *fwd, struct cordon_error *err);
