/* Network policy of a sandbox (issue 8, docs/network.md): deny (loopback
 * only, the default), allowlist (no route out; a proxy run by cordon on the
 * host side is reachable inside on 127.0.0.1:NET_PROXY_PORT and checks every
 * destination), open (user-mode networking through pasta, the host's
 * loopback unreachable), and published ports in every mode. Host context
 * (the supervisor); the processes it starts are described in net.c. */
#pragma once

#include "net/secrets.h"
#include "net/tls.h"
#include "util/error.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define NET_PROXY_PORT      3128
#define NET_MAX_CONNECTIONS 256
#define NET_BUFFER_SIZE     (64 * 1024) /* per direction and connection */
#define NET_MAX_PUBLISH     32
#define NET_MAX_ALLOW       256
/* What git runs for ssh:// and git@host: URLs inside, in allowlist mode and
 * behind deny mode's refusing listener: ssh with cordon-agent's tunnel
 * through the proxy as its ProxyCommand (src/agent/connect.c). */
#define NET_SSH_PROXY_COMMAND "/run/cordon/agent connect %h %p"
#define NET_GIT_SSH_COMMAND   "ssh -o ProxyCommand='" NET_SSH_PROXY_COMMAND "'"

enum net_mode { NET_MODE_DENY, NET_MODE_ALLOWLIST, NET_MODE_OPEN };

struct net_publish {
    char bind[64]; /* host address to listen on; "127.0.0.1" by default */
    uint16_t host_port;
    uint16_t guest_port;
};

/* What configuration ([network]: mode, allow_hosts, publish_ports) or the
 * `cordon run` flags ask for. Strings are borrowed. */
struct net_policy {
    enum net_mode mode;
    const char *allow_hosts[NET_MAX_ALLOW];
    size_t allow_count;
    struct net_publish publish[NET_MAX_PUBLISH];
    size_t publish_count;
    /* network.host_services: ports of the host's 127.0.0.1 that the
     * sandbox reaches at its own 127.0.0.1 and the same port (ns: a
     * listener in its namespace; vm, docker: the forwarder inside carries
     * each connection to net_session.host_service_dir/PORT.sock). */
    uint16_t host_services[NET_MAX_PUBLISH];
    size_t host_service_count;
    const char *audit_log; /* JSON lines, appended; NULL: no file */
    /* The same records, for this session only: its state directory's
     * network.jsonl (`cordon log NAME`); NULL: none. */
    const char *session_audit_log;
    /* hosts(5)-style file the proxy resolves names from instead of DNS
     * (tests, air-gapped set-ups); NULL: the system resolver. */
    const char *hosts_file;
    const char *session_name; /* written into each audit record */
    /* [[secrets]]: placeholders inside, values put in by the proxy
     * (secrets.h); the values are read only in the proxy process. */
    struct net_secret secrets[NET_MAX_SECRETS];
    size_t secret_count;
    /* network.upstream_proxy ("host:port" or "http://host:port"; NULL:
     * none) and network.no_proxy (allow_hosts patterns reached directly). */
    const char *upstream_proxy;
    const char *no_proxy[NET_MAX_ALLOW];
    size_t no_proxy_count;
    /* deny mode with a refusing proxy: the proxy variables point at a
     * listener that refuses every request at once with the reason and
     * how to allow a host (ns backend), instead of clients retrying on
     * a missing route and DNS. The allowlist stays empty. */
    bool deny_reporter;
    /* TLS interception (tls.h), for the hosts of secrets and rules:
     * network.http_rules ("METHOD host/path"), network.ca_file (the CA
     * that upstream certificates are verified against; NULL: the host's
     * store), and tls_bundle: the host file the sandbox sees as
     * NET_CA_BUNDLE (the host's bundle; the proxy appends the session CA).
     * NULL: no interception on this backend. */
    const char *http_rules[NET_MAX_HTTP_RULES];
    size_t http_rule_count;
    const char *ca_file;
    const char *tls_bundle;
    /* Where a backend that starts the proxy itself (vm, docker) records
     * it: the launch's session, which the supervisor reads for a tool
     * result's refusal line and sends the user's allow rules on (set by
     * launch; NULL: the backend keeps its own). */
    struct net_session *session;
};

/* The system bundle as the sandbox sees it, with the session CA in. */
#define NET_CA_BUNDLE "/etc/ssl/certs/ca-certificates.crt"

/* Whether the policy intercepts TLS for some host (allowlist mode, a
 * secret or an HTTP rule). */
bool net_policy_intercepts(const struct net_policy *policy);

/* Running state of one session's network helpers. */
struct net_session {
    const struct net_policy *policy;
    pid_t proxy_pid; /* the proxy / port publisher, or -1 */
    pid_t pasta_pid; /* open mode, or -1 */
    /* The proxy's end of its readiness socket, which then carries its
     * refusal reports (net/denial.h); -1 without a proxy. */
    int report_fd;
    /* The proxy is forked but its readiness not read yet (report_fd is
     * then its readiness socket): net_wait_ready reads it. */
    bool starting;
    /* vm, docker: a directory (the user's only) where the proxy listens
     * on PORT.sock for each host service and connects each connection to
     * the host's 127.0.0.1:PORT; NULL: none (ns listens inside). Set
     * before the proxy starts. */
    const char *host_service_dir;
    /* ns, deny mode with nothing published (net_defers_proxy): the
     * refusing proxy is not forked at the start but on the sandbox's first
     * connection to it. Meanwhile pending_fd is its listener inside
     * (made by the sandbox's child, net_session_defer), which the event
     * loops poll (net_session_pending_fd); -1 otherwise. */
    bool defer;
    int pending_fd;
    /* The deferred proxy's logs (network.audit_log, the session's own),
     * opened at the start, so that a log it could not open still stops
     * the start and the proxy gets these files, not whatever their paths
     * name later; -1 when not configured. */
    int log_fds[2];
};

/* The socket the proxy listens on for host service PORT in DIR. */
int net_host_service_path(const char *dir, uint16_t port, char *buf, size_t size);

/* Parses "deny", "allowlist", "open". */
int net_mode_parse(const char *text, enum net_mode *mode, struct cordon_error *err);
const char *net_mode_name(enum net_mode mode);
/* Parses "[BIND:]HOST:GUEST" ("[::1]:8080:80" for IPv6). */
int net_publish_parse(const char *text, struct net_publish *out, struct cordon_error *err);
/* Checks the policy before anything starts (patterns, addresses, ports). */
int net_policy_validate(const struct net_policy *policy, struct cordon_error *err);

/* Deny mode with its refusing proxy (deny_reporter). */
bool net_deny_reporter(const struct net_policy *policy);
/* Deny mode with its refusing proxy and nothing else for a proxy to do (no
 * published port, no host service): the proxy may wait for its first
 * connection (net_session.defer). */
bool net_defers_proxy(const struct net_policy *policy);
/* ns backend (spec.h on_deny_listener): takes the refusing proxy's
 * listener inside the sandbox (ctx: the net_session). */
void net_session_defer(int fd, void *ctx);
/* The deferred proxy's listener to poll for POLLIN, or -1 (no deferred
 * proxy, or started). Every loop that waits while the sandbox runs polls
 * it and calls net_session_start_pending when it is readable. */
int net_session_pending_fd(const struct net_session *s);
/* Starts the deferred proxy on its listener (its first connection waits
 * in the listener's backlog meanwhile), and gives the listener to it. A
 * proxy that cannot start is reported and its listener closed: the
 * sandbox's connections are then refused by the kernel, without cordon's
 * explanation. Nothing when no proxy is deferred. */
void net_session_start_pending(struct net_session *s);
/* True when the sandbox's ssh goes through the proxy (GIT_SSH_COMMAND and
 * the view's /etc/ssh/ssh_config, docs/ssh.md): where the proxy variables
 * are set. */
bool net_ssh_proxied(const struct net_policy *policy);
/* Adds the proxy variables to a NULL-terminated, malloc'd environment
 * (allowlist mode, and deny mode with deny_reporter; nothing otherwise),
 * and each secret's placeholder as its variable, removing whatever the
 * environment held under that name or the name of an env: source. */
int net_env_add(const struct net_policy *policy, char ***envp, struct cordon_error *err);

void net_session_init(struct net_session *s, const struct net_policy *policy);
/* The ns backend's on_namespaces_ready hook (ctx: struct net_session *):
 * starts pasta and forks the proxy, which readies itself while the
 * sandbox's child builds its view; returns without waiting for the proxy. */
int net_on_namespaces_ready(pid_t sandbox_pid, void *ctx, struct cordon_error *err);
/* The ns backend's on_before_exec hook (ctx: struct net_session *): waits
 * for the proxy forked by net_on_namespaces_ready to be ready (its
 * listeners inside the sandbox exist), before the command may run. */
int net_wait_ready(void *ctx, struct cordon_error *err);
/* The vm backend's proxy: the same process and checks, accepting on
 * LISTENER (a listening socket on the host; the guest reaches it through
 * the vm's port relay). Returns once it is ready. */
int net_start_proxy_on(struct net_session *s, int listener, struct cordon_error *err);
/* The docker backend's: LISTENER as above (or -1: no allowlist), and each
 * published port i listened for on the host and carried to the unix socket
 * publish_dir/i.sock, where the container's forwarder accepts (a path the
 * sandbox can write: the proxy connects only to a socket, never through a
 * symlink). Returns once it is ready. */
int net_start_proxy_unix(struct net_session *s, int listener, const char *publish_dir,
                         struct cordon_error *err);
/* A host listener for a published port (non-blocking, SO_REUSEADDR). */
int net_publish_listen(const struct net_publish *pub, struct cordon_error *err);
/* Stops and reaps the helpers. */
void net_session_stop(struct net_session *s);
/* Sends the helpers their end without waiting, so that their exit overlaps
 * the rest of a session's teardown; lifecycle_end reaps them
 * (net_session_reap) before the name is released, net_session_stop
 * otherwise: a session never outlives itself. */
void net_session_kill(struct net_session *s);
/* Waits for the helpers net_session_kill ended (SIGKILL to any still
 * there); the session stays usable for net_session_stop. */
void net_session_reap(struct net_session *s);
/* The session CA's certificate (PEM, malloc'd) once the proxy of a policy
 * with tls_bundle is ready: the last certificate of that bundle, which the
 * proxy appended (vm: the boot spec carries it to the guest). */
char *net_session_ca_pem(const struct net_policy *policy, struct cordon_error *err);
