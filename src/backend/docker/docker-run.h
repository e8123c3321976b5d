/* The `docker run` command line of the docker backend (docker-run.c).
 * Host context, supervisor. */
#pragma once

#include "supervisor/launch.h"
#include "util/error.h"

#include <stdbool.h>
#include <stddef.h>

/* Where the agent is bind-mounted (read-only) in the container: where the
 * other backends show it too (`cordon verify` runs it there as the probe). */
#define DOCKER_AGENT_PATH "/run/cordon/agent"
/* The host's allowlist proxy socket (<state>/proxy.sock), bound read-only
 * into the container (connect still works); the agent's forwarder relays
 * 127.0.0.1:NET_PROXY_PORT to it. */
#define DOCKER_PROXY_SOCKET "proxy.sock"
#define DOCKER_PROXY_PATH   "/run/cordon/proxy.sock"
/* Published ports: <state>/pub (the user's, 0700) bound writable at
 * /run/cordon/pub, where the agent's forwarder listens on i.sock for the
 * host's published port i. */
#define DOCKER_PUBLISH_DIR "pub"
/* The socket guard's hand-over (docker-sockguard.c): <state>/guard.sock,
 * bound read-only; the container's PID 1 connects once, before it runs
 * anything of the sandbox's. */
#define DOCKER_GUARD_SOCKET "guard.sock"
#define DOCKER_GUARD_PATH   "/run/cordon/guard.sock"
#define DOCKER_PUBLISH_PATH "/run/cordon/pub"
/* network.host_services: <state>/hs (the user's, 0700), where the host's
 * proxy listens on PORT.sock for each service, bound read-only at
 * /run/cordon/hs; the agent's forwarder relays 127.0.0.1:PORT to it. */
#define DOCKER_HOST_SERVICE_DIR  "hs"
#define DOCKER_HOST_SERVICE_PATH "/run/cordon/hs"

/* A growing, NULL-terminated argv of malloc'd strings. */
struct docker_args {
    char **v;
    size_t n, cap;
};

int docker_args_add(struct docker_args *a, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void docker_args_free(struct docker_args *a);

/* Whether the container gets the proxy socket: allowlist mode, and deny
 * mode's refusing proxy (net_deny_reporter). */
bool docker_net_has_proxy(const struct net_policy *policy);

/* `CLI run -i --rm ... IMAGE --confine ... -- AGENT_ARGV[1..]` for the
 * session called name, its env file in state_dir; serve: the agent's
 * "serve" gets "--stdio". Every host path is checked (no symlink on the
 * way) right before; a protected path reached through one refuses.
 * With docker_net_has_proxy: state_dir/DOCKER_PROXY_SOCKET must exist (the proxy's);
 * published ports: state_dir/DOCKER_PUBLISH_DIR; host services:
 * state_dir/DOCKER_HOST_SERVICE_DIR. */
int docker_run_argv(const struct launch *l, const char *cli, const char *name,
                    const char *state_dir, char *const *agent_argv, bool serve,
                    struct docker_args *a, struct cordon_error *err);

/* "--confine --writable PATH ...": the agent's own confinement of its
 * mode (Landlock, cordon's seccomp filter), the same for the container's
 * PID 1 and for the probe the supervisor runs in it with `docker exec`;
 * the caller adds what else it wants of --confine, then "--". */
int docker_confine_argv(const struct launch *l, struct docker_args *a, struct cordon_error *err);
