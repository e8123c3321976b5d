/* The proxy's decision for a request (see proxy-conn.h): the HTTP head
 * or SOCKS5 request read from the sandbox, the refusals that need no
 * lookup (deny mode, http_rules hosts in cleartext, secrets bound for
 * another host), the allowlist on the name and then on every address it
 * resolves to, and the non-blocking connect to the addresses that passed.
 * Host context: the proxy process; every byte parsed is the sandbox's. */
#include "net/denial.h"
#include "net/proxy-conn.h"
#include "net/resolve-pool.h"
#include "net/secrets.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

/* Deny mode's listener refuses everything, naming the mode and the way
 * out; whatever the (empty) allowlist said. */
static void deny_mode_decision(struct proxy *p, const struct conn *c, struct allow_decision *d)
{
    /* Only what the user allowed for this session passes (user_allows). */
    if (p->cfg->policy->mode != NET_MODE_DENY || d->allowed)
        return;
    d->allowed = false;
    bool plain = net_denial_plain_host(c->host);
    snprintf(d->reason, sizeof(d->reason),
             "denied: network.mode is \"deny\" (this sandbox has no network); a host is "
             "allowed with network.mode = \"allowlist\" and network.allow_hosts = [\"%s\"] "
             "(cordon --network allowlist --allow-host %s)",
             plain ? c->host : "HOST", plain ? c->host : "HOST");
}

/* Queues an answer and ends the connection once it is sent. */
static void conn_refuse_http(struct conn *c, int status, const char *reason)
{
    char head[300], body[700];
    size_t hlen = 0, blen = 0;
    http_refusal_format(status, reason, head, sizeof(head), &hlen, body, sizeof(body), &blen);
    buffer_put(c->down, head, hlen);
    buffer_put(c->down, body, blen);
    c->state = CONN_DRAIN;
    c->since = time(NULL);
}

static void conn_refuse_socks(struct conn *c, int code)
{
    const uint8_t reply[10] = {5, (uint8_t)code, 0, 1, 0, 0, 0, 0, 0, 0};
    buffer_put(c->down, reply, sizeof(reply));
    c->state = CONN_DRAIN;
    c->since = time(NULL);
}

void conn_refuse(struct conn *c, int http_status, int socks_code, const char *reason)
{
    if (c->kind == KIND_SOCKS5)
        conn_refuse_socks(c, socks_code);
    else if (c->kind == KIND_PUBLISH)
        c->state = CONN_DRAIN;
    else
        conn_refuse_http(c, http_status, reason);
}

static socklen_t addr_to_sockaddr(const struct allow_addr *a, int port, struct sockaddr_storage *ss)
{
    memset(ss, 0, sizeof(*ss));
    if (allow_addr_is_v4(a)) {
        struct sockaddr_in *in = (struct sockaddr_in *)ss;
        in->sin_family = AF_INET;
        in->sin_port = htons((uint16_t)port);
        memcpy(&in->sin_addr, a->bytes + 12, 4);
        return sizeof(*in);
    }
    struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)ss;
    in6->sin6_family = AF_INET6;
    in6->sin6_port = htons((uint16_t)port);
    memcpy(&in6->sin6_addr, a->bytes, 16);
    return sizeof(*in6);
}

/* Starts a non-blocking connect to the next candidate address; on
 * immediate failures moves on to the next one. */
void conn_connect_next(struct proxy *p, struct conn *c)
{
    while (c->addr_next < c->addr_count) {
        const struct allow_addr *a = &c->addrs[c->addr_next++];
        struct sockaddr_storage ss;
        socklen_t len = addr_to_sockaddr(a, c->via_upstream ? p->cfg->upstream_port : c->port, &ss);
        int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (fd < 0)
            continue;
        if (connect(fd, (struct sockaddr *)&ss, len) < 0 && errno != EINPROGRESS) {
            close(fd);
            continue;
        }
        c->server = fd;
        c->server_events = EPOLLOUT;
        struct epoll_event ev = {.events = EPOLLOUT, .data.u64 = conn_token(p, c, 1)};
        epoll_ctl(p->epoll_fd, EPOLL_CTL_ADD, fd, &ev);
        c->state = CONN_CONNECTING;
        return;
    }
    char reason[PROXY_HOST_MAX + 400];
    if (c->via_upstream)
        snprintf(reason, sizeof(reason), "could not connect to the upstream proxy %s",
                 p->cfg->upstream_text);
    else
        snprintf(reason, sizeof(reason), "could not connect to %s:%d", c->host, c->port);
    conn_refuse(c, 502, SOCKS5_REPLY_CONNECTION_REFUSED, reason);
}

/* The address check for a resolved (or literal) destination: only
 * addresses that pass are connected to, so the address checked is the
 * address used (no second lookup). */
static void conn_resolved(struct proxy *p, struct conn *c, const struct allow_addr *resolved,
                          size_t count)
{
    const struct proxy_config *cfg = p->cfg;
    /* The name passed before the lookup; asked again for the rule's text. */
    struct allow_decision d;
    allowlist_check_request(cfg->allow, c->host, c->port, &d);
    c->addr_count = 0;
    c->addr_next = 0;
    struct allow_decision first_denial = {0};
    for (size_t i = 0; i < count; i++) {
        struct allow_decision ad;
        allowlist_check_address(cfg->allow, &resolved[i], c->port, &ad);
        char text[INET6_ADDRSTRLEN];
        allow_addr_format(&resolved[i], text, sizeof(text));
        if (ad.allowed) {
            c->addrs[c->addr_count++] = resolved[i];
            proxy_audit(p, c, text, true, d.reason);
        } else if (!first_denial.reason[0]) {
            first_denial = ad;
            proxy_audit(p, c, text, false, ad.reason);
        }
    }
    if (c->addr_count == 0) {
        conn_refuse(c, 403, SOCKS5_REPLY_NOT_ALLOWED, first_denial.reason);
        return;
    }
    conn_connect_next(p, c);
}

/* The policy decision for a parsed request: the name first, then (once
 * resolved) every address. Names go to the resolver workers, so a slow
 * DNS server stalls only this connection; address literals need no
 * lookup. */
static void conn_decide(struct proxy *p, struct conn *c)
{
    struct allow_decision d;
    allowlist_check_request(p->cfg->allow, c->host, c->port, &d);
    deny_mode_decision(p, c, &d);
    if (!d.allowed) {
        proxy_audit(p, c, NULL, false, d.reason);
        conn_refuse(c, 403, SOCKS5_REPLY_NOT_ALLOWED, d.reason);
        return;
    }
    struct allow_addr literal;
    bool is_literal = allow_addr_parse(c->host, &literal);
    if (p->cfg->upstream) {
        struct allow_decision direct = {0};
        allowlist_check_request(p->cfg->no_proxy, c->host, c->port, &direct);
        if (!direct.allowed) {
            /* Chained: the upstream proxy resolves the name; an address
             * literal still passes the protected-range check here. */
            struct allow_decision ad = {.allowed = true};
            if (is_literal)
                allowlist_check_address(p->cfg->allow, &literal, c->port, &ad);
            if (!ad.allowed) {
                proxy_audit(p, c, NULL, false, ad.reason);
                conn_refuse(c, 403, SOCKS5_REPLY_NOT_ALLOWED, ad.reason);
                return;
            }
            char reason[sizeof(d.reason) + 400];
            snprintf(reason, sizeof(reason), "%s, through the upstream proxy %s", d.reason,
                     p->cfg->upstream_text);
            proxy_audit(p, c, p->cfg->upstream_text, true, reason);
            c->via_upstream = true;
            memcpy(c->addrs, p->cfg->upstream_addrs, sizeof(c->addrs));
            c->addr_count = p->cfg->upstream_count;
            c->addr_next = 0;
            conn_connect_next(p, c);
            return;
        }
    }
    if (is_literal) {
        conn_resolved(p, c, &literal, 1);
        return;
    }
    struct cordon_error err = {0};
    c->resolve_tag = ++p->resolve_seq << 16 | (uint64_t)(c - p->conns);
    if (resolve_pool_submit(p->resolver, c->resolve_tag, c->host, &err) < 0) {
        proxy_audit(p, c, NULL, false, err.message);
        conn_refuse(c, 502, SOCKS5_REPLY_GENERAL_FAILURE, err.message);
        return;
    }
    c->state = CONN_RESOLVING;
    c->since = time(NULL);
}

/* Finished lookups: each goes on with its connection, unless that
 * connection ended or timed out meanwhile (its tag no longer matches). */
void resolver_results(struct proxy *p)
{
    struct resolve_result r;
    while (resolve_pool_next(p->resolver, &r)) {
        struct conn *c = &p->conns[r.tag & 0xffff];
        if (c->state != CONN_RESOLVING || c->resolve_tag != r.tag)
            continue;
        if (r.err.message[0]) {
            proxy_audit(p, c, NULL, false, r.err.message);
            conn_refuse(c, 502, SOCKS5_REPLY_HOST_UNREACHABLE, r.err.message);
        } else {
            conn_resolved(p, c, r.addrs, r.count);
        }
        if (c->state != CONN_FREE)
            conn_update(p, c);
    }
}

/* A SOCKS5 client: the greeting, then the CONNECT request. */
static void conn_parse_socks(struct proxy *p, struct conn *c, const uint8_t *data, size_t len)
{
    if (c->state == CONN_HEAD) {
        size_t used = 0;
        const char *error = NULL;
        enum proxy_parse_result r = socks5_parse_greeting(data, len, &used, &error);
        if (r == PROXY_PARSE_INCOMPLETE)
            return;
        if (r == PROXY_PARSE_ERROR) {
            const uint8_t no_method[2] = {5, 0xff};
            buffer_put(c->down, no_method, 2);
            proxy_audit(p, c, NULL, false, error);
            c->state = CONN_DRAIN;
            return;
        }
        buffer_drop(c->up, used);
        const uint8_t no_auth[2] = {5, 0};
        buffer_put(c->down, no_auth, 2);
        c->state = CONN_SOCKS_REQUEST;
        data = (const uint8_t *)c->up->data + c->up->start;
        len = buffer_used(c->up);
    }
    struct socks5_request req;
    enum proxy_parse_result r = socks5_parse_request(data, len, &req);
    if (r == PROXY_PARSE_INCOMPLETE)
        return;
    snprintf(c->host, sizeof(c->host), "%s", req.host);
    c->port = req.port;
    if (r == PROXY_PARSE_ERROR) {
        proxy_audit(p, c, NULL, false, req.error);
        conn_refuse_socks(c, req.reply);
        return;
    }
    c->request_length = req.length;
    conn_decide(p, c);
}

/* A plain HTTP request (REQ, LEN bytes read with it) that no connection
 * may carry: true when it is refused (the answer queued). */
static bool http_refused_early(struct proxy *p, struct conn *c, const struct http_request *req,
                               size_t len)
{
    if (p->cfg->tls_cfg) {
        /* Method and path rules are checked inside TLS only: a cleartext
         * request to a host that has rules is refused. */
        const struct tls_config *tc = p->cfg->tls_cfg;
        for (size_t i = 0; i < tc->rule_count; i++) {
            struct allow_decision rd;
            allowlist_check_request(&tc->rules[i].host, c->host, c->port, &rd);
            if (!rd.allowed)
                continue;
            char reason[900];
            snprintf(reason, sizeof(reason),
                     "a cleartext request to %s, which has network.http_rules (\"%.300s\"): "
                     "use https://",
                     c->host, tc->rules[i].text);
            proxy_audit(p, c, NULL, false, reason);
            conn_refuse_http(c, 403, reason);
            return true;
        }
    }
    if (p->cfg->secret_count > 0) {
        /* Decided before any connection is made: a placeholder bound for
         * another host never leaves, and a head that would not fit once
         * the values are in is refused here rather than cut later. */
        char reason[512];
        size_t rest = len - req->head_length, out_length = 0;
        char *scratch = malloc(NET_BUFFER_SIZE);
        enum secrets_verdict v =
            scratch ? secrets_apply(p->cfg->secrets, p->cfg->secret_count, c->host, c->port, true,
                                    req->rewritten, req->rewritten_length, scratch,
                                    NET_BUFFER_SIZE - rest, &out_length, reason, sizeof(reason))
                    : SECRETS_TOOBIG;
        if (scratch) {
            explicit_bzero(scratch, out_length);
            free(scratch);
        } else {
            snprintf(reason, sizeof(reason), "out of memory");
        }
        if (v == SECRETS_LEAK || v == SECRETS_TOOBIG) {
            proxy_audit(p, c, NULL, false, reason);
            conn_refuse_http(c, v == SECRETS_LEAK ? 403 : 431, reason);
            return true;
        }
    }
    return false;
}

/* An HTTP client: a CONNECT or an absolute-form request head. */
static void conn_parse_http(struct proxy *p, struct conn *c, const uint8_t *data, size_t len)
{
    struct http_request *req = malloc(sizeof(*req));
    if (!req) {
        conn_close(p, c);
        return;
    }
    enum proxy_parse_result r = http_parse_request((const char *)data, len, req);
    if (r == PROXY_PARSE_INCOMPLETE) {
        free(req);
        return;
    }
    snprintf(c->host, sizeof(c->host), "%s", req->host);
    c->port = req->port;
    if (r == PROXY_PARSE_ERROR) {
        proxy_audit(p, c, NULL, false, req->error);
        conn_refuse_http(c, req->status, req->error);
        free(req);
        return;
    }
    c->kind = req->is_connect ? KIND_HTTP_CONNECT : KIND_HTTP;
    c->request_length = req->head_length;
    if (c->kind == KIND_HTTP && http_refused_early(p, c, req, len)) {
        free(req);
        return;
    }
    free(req);
    conn_decide(p, c);
}

/* The client's first bytes: SOCKS5 starts with its version (5), HTTP
 * with a method. */
void conn_parse(struct proxy *p, struct conn *c)
{
    const uint8_t *data = (const uint8_t *)c->up->data + c->up->start;
    size_t len = buffer_used(c->up);
    if (len == 0)
        return;
    if (c->state == CONN_HEAD && c->kind == KIND_UNKNOWN)
        c->kind = data[0] == 5 ? KIND_SOCKS5 : KIND_HTTP;
    if (c->kind == KIND_SOCKS5)
        conn_parse_socks(p, c, data, len);
    else
        conn_parse_http(p, c, data, len);
}
