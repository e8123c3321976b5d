/* Refusal reports from the proxy to the supervisor (see denial.h). Host
 * context: net_denial_send runs in the proxy, the rest in the supervisor. */
#include "net/denial.h"
#include "util/error.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#define DENIALS_PER_TAKE 64 /* records read per result; the rest wait for the next */

void net_denial_send(int fd, const char *protocol, const char *host, int port, const char *address,
                     const char *reason)
{
    if (fd < 0)
        return;
    struct net_denial d = {.port = port};
    snprintf(d.protocol, sizeof(d.protocol), "%s", protocol ? protocol : "");
    snprintf(d.host, sizeof(d.host), "%s", host ? host : "");
    snprintf(d.address, sizeof(d.address), "%s", address ? address : "");
    snprintf(d.reason, sizeof(d.reason), "%s", reason ? reason : "");
    ssize_t n = send(fd, &d, sizeof(d), MSG_DONTWAIT | MSG_NOSIGNAL);
    (void)n;
}

/* A host name or address the user could paste into allow_hosts: letters,
 * digits, '.', '-', '_', ':' (IPv6) only, so that the suggested line is
 * what it looks like (no quote, no control character from the sandbox). */
bool net_denial_plain_host(const char *s)
{
    if (!s[0])
        return false;
    for (const char *p = s; *p; p++) {
        char c = *p;
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '.' || c == '-' || c == '_' || c == ':'))
            return false;
    }
    return true;
}

/* The sandbox's text shown to the user: printable ASCII, '?' otherwise. */
static void printable(const char *in, char *out, size_t size)
{
    size_t i = 0;
    for (; in[i] && i + 1 < size; i++)
        out[i] = (in[i] >= 0x20 && in[i] < 0x7f) ? in[i] : '?';
    out[i] = '\0';
}

size_t net_denial_rules(const struct net_denial *d, char rules[2][NET_DENIAL_RULE_MAX])
{
    if (!net_denial_plain_host(d->host))
        return 0;
    bool v6 = strchr(d->host, ':') != NULL;
    /* A port-only rule refused it: the rule with this port. */
    /* An address literal: that port only (it may be the host's loopback
     * or a private address, whose other ports stay closed). */
    struct in6_addr probe;
    bool literal =
        inet_pton(AF_INET, d->host, &probe) == 1 || inet_pton(AF_INET6, d->host, &probe) == 1;
    if (literal || strstr(d->reason, "allows port"))
        snprintf(rules[0], NET_DENIAL_RULE_MAX, "%s%s%s:%d", v6 ? "[" : "", d->host, v6 ? "]" : "",
                 d->port);
    else
        snprintf(rules[0], NET_DENIAL_RULE_MAX, "%s", d->host);
    /* A protected address (loopback, private) only with the port asked
     * for: the rest of that host's ports stay closed. */
    if (d->address[0] && net_denial_plain_host(d->address) && strcmp(d->address, d->host) != 0) {
        bool a6 = strchr(d->address, ':') != NULL;
        snprintf(rules[1], NET_DENIAL_RULE_MAX, "%s%s%s:%d", a6 ? "[" : "", d->address,
                 a6 ? "]" : "", d->port);
        return 2;
    }
    return 1;
}

static int control_send(int fd, char op, const char *text, int seconds)
{
    struct net_control msg = {.op = op, .seconds = seconds};
    if (strlen(text) >= sizeof(msg.text)) {
        errno = ENAMETOOLONG;
        return -1;
    }
    memcpy(msg.text, text, strlen(text));
    if (send(fd, &msg, sizeof(msg), MSG_DONTWAIT | MSG_NOSIGNAL) != (ssize_t)sizeof(msg))
        return -1;
    return 0;
}

int net_session_allow(struct net_session *s, const char *pattern, struct cordon_error *err)
{
    net_session_start_pending(s);
    if (!s->policy || s->report_fd < 0 || s->proxy_pid <= 0)
        return error_set(err, ENOTCONN, "network: no proxy runs for this session");
    if (control_send(s->report_fd, NET_CONTROL_ALLOW, pattern, 0) < 0)
        return error_set(err, errno, "network: telling the proxy to allow %.300s", pattern);
    return 0;
}

void net_session_quiet(const struct net_session *s, const char *host_port, int seconds)
{
    if (s->policy && s->report_fd >= 0 && s->proxy_pid > 0)
        control_send(s->report_fd, NET_CONTROL_QUIET, host_port, seconds);
}

int net_control_receive(int fd, struct net_control *msg)
{
    ssize_t n;
    do {
        n = recv(fd, msg, sizeof(*msg), MSG_DONTWAIT);
    } while (n < 0 && errno == EINTR);
    if (n == 0)
        return -1;
    if (n != (ssize_t)sizeof(*msg))
        return n < 0 && errno != EAGAIN ? -1 : 0;
    msg->text[sizeof(msg->text) - 1] = '\0';
    return 1;
}

void net_denial_line(const struct net_denial *d, enum net_mode mode, size_t more, char *line,
                     size_t size)
{
    char host[NET_DENIAL_HOST_MAX + 1], reason[NET_DENIAL_REASON_MAX + 1];
    printable(d->host, host, sizeof(host));
    printable(d->reason, reason, sizeof(reason));
    /* IPv6 literals need brackets before a port. */
    bool v6 = strchr(d->host, ':') != NULL;
    char target[NET_DENIAL_HOST_MAX + 16];
    snprintf(target, sizeof(target), "%s%s%s:%d", v6 ? "[" : "", host[0] ? host : "?",
             v6 ? "]" : "", d->port);
    /* What would allow it: the name (an address literal as itself); a
     * protected address the name resolved to needs its own rule too. */
    char allow[2 * NET_DENIAL_RULE_MAX + 16] = "", flags[2 * NET_DENIAL_RULE_MAX + 32] = "";
    char rules[2][NET_DENIAL_RULE_MAX];
    size_t nrules = net_denial_rules(d, rules);
    if (nrules == 2) {
        snprintf(allow, sizeof(allow), "\"%s\", \"%s\"", rules[0], rules[1]);
        snprintf(flags, sizeof(flags), "--allow-host %s --allow-host %s", rules[0], rules[1]);
    } else if (nrules == 1) {
        snprintf(allow, sizeof(allow), "\"%s\"", rules[0]);
        snprintf(flags, sizeof(flags), "--allow-host %s", rules[0]);
    }
    /* Deny mode's reason already says how; the line says it shorter. */
    if (mode == NET_MODE_DENY && strncmp(d->reason, "denied: network.mode is", 23) == 0)
        snprintf(reason, sizeof(reason), "network.mode is \"deny\" (this sandbox has no network)");
    char fix[sizeof(allow) + sizeof(flags) + 128] = "";
    if (allow[0] && mode == NET_MODE_DENY)
        snprintf(fix, sizeof(fix),
                 " To allow it: network.mode = \"allowlist\" and network.allow_hosts = [%s] "
                 "(cordon --network allowlist %s)",
                 allow, flags);
    else if (allow[0])
        snprintf(fix, sizeof(fix), " To allow it: network.allow_hosts = [%s] (cordon %s)", allow,
                 flags);
    char others[96] = "";
    if (more > 0)
        snprintf(others, sizeof(others), " (and %zu more refused)", more);
    snprintf(line, size, "[cordon] network: %s refused: %s.%s%s", target, reason, fix, others);
}

size_t net_denials_take(struct net_session *s, char *line, size_t size,
                        struct net_denial *first_out)
{
    line[0] = '\0';
    if (!s || !s->policy || s->report_fd < 0)
        return 0;
    struct net_denial first, d;
    size_t count = 0, others = 0;
    while (count < DENIALS_PER_TAKE) {
        ssize_t n = recv(s->report_fd, &d, sizeof(d), MSG_DONTWAIT);
        if (n < 0 && errno == EINTR)
            continue;
        if (n != (ssize_t)sizeof(d))
            break;
        d.protocol[sizeof(d.protocol) - 1] = '\0';
        d.host[sizeof(d.host) - 1] = '\0';
        d.address[sizeof(d.address) - 1] = '\0';
        d.reason[sizeof(d.reason) - 1] = '\0';
        if (count == 0)
            first = d;
        else if (strcmp(d.host, first.host) != 0 || d.port != first.port)
            others++; /* a client's retries of the same destination count once */
        count++;
    }
    if (count > 0) {
        net_denial_line(&first, s->policy->mode, others, line, size);
        if (first_out)
            *first_out = first;
    }
    return count;
}
