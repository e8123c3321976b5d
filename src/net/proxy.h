/* The allowlist proxy and port publisher: one epoll loop (name lookups
 * run in its resolver worker processes, see resolve-pool.h), in a
 * child process of the supervisor that stays in the host's network
 * namespace. It accepts on a listener that lives inside the sandbox
 * (127.0.0.1:NET_PROXY_PORT there), speaks HTTP CONNECT, plain HTTP
 * forwarding and SOCKS5 on that one port (told apart by the first byte),
 * resolves names itself and connects from the host only when the
 * allowlist permits. Published ports: it accepts on the host and connects
 * into the sandbox with sockets from the namespace factory. Host context;
 * the docker backend's agent also runs the loop inside the container, with
 * one "published" listener and no allowlist, as a plain relay. */
#pragma once

#include "net/allowlist.h"
#include "net/net.h"
#include "net/netns-factory.h"
#include "net/resolve.h"
#include "net/tls.h"

struct proxy_publish {
    int fd; /* host listener */
    uint16_t guest_port;
    /* Non-empty: each connection goes to this unix socket instead of
     * guest_port (the docker backend's forwarder inside the container,
     * which relays 127.0.0.1:NET_PROXY_PORT to the host's proxy socket).
     * Without a factory, guest_port is reached in this process's own
     * network namespace. */
    char connect_path[108];
    /* A host service (network.host_services): fd listens inside the
     * sandbox, and each connection goes to the host's 127.0.0.1:guest_port
     * from the proxy's own (the host's) network namespace. */
    bool to_host;
    char text[96];
};

struct proxy_config {
    const struct net_policy *policy;
    struct allowlist *allow;
    int sandbox_listener; /* -1: no allowlist proxy */
    struct proxy_publish publish[NET_MAX_PUBLISH];
    size_t publish_count;
    struct netns_factory *factory;
    int audit_fd;
    /* Loaded secrets (secrets.h): substituted into plain HTTP request heads
     * to their hosts, refused elsewhere. */
    const struct proxy_secret *secrets;
    size_t secret_count;
    /* network.upstream_proxy: allowed connections (except to no_proxy) are
     * a CONNECT through it; the name goes on unresolved. */
    bool upstream;
    char upstream_text[300];
    struct allow_addr upstream_addrs[RESOLVE_MAX];
    size_t upstream_count;
    int upstream_port;
    struct allowlist *no_proxy;
    int session_audit_fd; /* the session's own network log, or -1 */
    int report_fd;        /* refusal reports to the supervisor (net/denial.h), or -1 */
    /* TLS interception (tls.h): NULL when no secret or rule asks for it.
     * CONNECT and SOCKS5 tunnels to the hosts tls_wants() names are
     * handed to it once connected; all others stay spliced tunnels. */
    struct tls_state *tls;
    const struct tls_config *tls_cfg;
};

/* Runs the loop until a fatal error; returns -1 with err filled. */
int proxy_run(const struct proxy_config *cfg, struct cordon_error *err);
