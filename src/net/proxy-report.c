/* The proxy's reports (see proxy-conn.h): each decision into the audit
 * logs, policy refusals to the supervisor (net/denial.h) and on stderr
 * unless cordon verify asked for quiet, and the supervisor's control
 * messages (rules the user allowed, quiet probe targets). Host context:
 * the proxy process. */
#include "net/audit.h"
#include "net/denial.h"
#include "net/proxy-conn.h"
#include "net/resolve-pool.h"
#include "util/cleanup.h"
#include "util/log.h"

#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <time.h>

static const char *kind_name(enum conn_kind k)
{
    switch (k) {
    case KIND_HTTP_CONNECT:
        return "http-connect";
    case KIND_HTTP:
        return "http";
    case KIND_SOCKS5:
        return "socks5";
    case KIND_PUBLISH:
        return "publish";
    default:
        return "unknown";
    }
}

/* cordon verify's probe targets: its refusals stay out of stderr and
 * results for a while (net_session_quiet). The oldest entry is reused. */
static void quiet_add(struct proxy *p, const char *target, int seconds)
{
    size_t slot = 0;
    for (size_t i = 1; i < ARRAY_SIZE(p->quiet); i++) {
        if (p->quiet[i].until < p->quiet[slot].until)
            slot = i;
    }
    snprintf(p->quiet[slot].target, sizeof(p->quiet[slot].target), "%s", target);
    p->quiet[slot].until = time(NULL) + (seconds > 0 && seconds <= 600 ? seconds : 60);
}

static bool quiet_match(const struct proxy *p, const struct conn *c)
{
    char target[NET_DENIAL_RULE_MAX];
    snprintf(target, sizeof(target), "%s:%d", c->host, c->port);
    time_t now = time(NULL);
    for (size_t i = 0; i < ARRAY_SIZE(p->quiet); i++) {
        if (p->quiet[i].until >= now && strcmp(p->quiet[i].target, target) == 0)
            return true;
    }
    return false;
}

/* A policy refusal, for the tool result of the call that made it
 * (net/denial.h). Failures to connect or resolve are not the policy's. */
static void report_denial(struct proxy *p, struct conn *c, const char *address, const char *reason)
{
    if (strncmp(reason, "denied:", 7) != 0 || c->kind == KIND_PUBLISH || quiet_match(p, c))
        return;
    net_denial_send(p->cfg->report_fd, kind_name(c->kind), c->host, c->port, address, reason);
}

void proxy_audit(struct proxy *p, struct conn *c, const char *address, bool allowed,
                 const char *reason)
{
    struct net_audit_record r = {
        .session = p->cfg->policy->session_name,
        .protocol = kind_name(c->kind),
        .host = c->host,
        .port = c->port,
        .address = address,
        .allowed = allowed,
        .reason = reason,
    };
    net_audit_write(p->cfg->audit_fd, &r);
    net_audit_write(p->cfg->session_audit_fd, &r);
    if (!allowed)
        report_denial(p, c, address, reason);
    if (!allowed && !quiet_match(p, c))
        log_warn("network: %s %s:%d refused: %s", kind_name(c->kind), c->host[0] ? c->host : "?",
                 c->port, reason);
}

/* Rules the user allowed for the rest of the session (MCP elicitation, the
 * pi dialog), from the supervisor: added to the allowlist, which in deny
 * mode starts empty (then the resolver workers start, on first need). A
 * closed supervisor end stops the watch. */
static void user_allows(struct proxy *p, const char *pattern)
{
    struct cordon_error err = {0};
    if (!p->resolver) {
        if (resolve_pool_start(p->cfg->policy->hosts_file, &p->resolver, &err) < 0) {
            log_warn("network: allowing %s: %s", pattern, err.message);
            return;
        }
        struct epoll_event rev = {.events = EPOLLIN, .data.u64 = TOKEN_RESOLVER};
        epoll_ctl(p->epoll_fd, EPOLL_CTL_ADD, resolve_pool_fd(p->resolver), &rev);
    }
    if (allowlist_add(p->cfg->allow, pattern, &err) < 0)
        log_warn("network: allowing %s: %s", pattern, err.message);
    else
        log_debug("network: %s allowed by the user for the rest of this session", pattern);
}

/* Messages from the supervisor (the sandbox cannot reach this socket). A
 * closed supervisor end stops the watch. */
void proxy_supervisor_control(struct proxy *p)
{
    struct net_control msg;
    int rc;
    while ((rc = net_control_receive(p->cfg->report_fd, &msg)) > 0) {
        if (msg.op == NET_CONTROL_ALLOW)
            user_allows(p, msg.text);
        else if (msg.op == NET_CONTROL_QUIET)
            quiet_add(p, msg.text, msg.seconds);
    }
    if (rc < 0)
        epoll_ctl(p->epoll_fd, EPOLL_CTL_DEL, p->cfg->report_fd, NULL);
}
