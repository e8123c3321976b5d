/* The proxy's event loop (see proxy.h). Host context: a child of the
 * supervisor, in the host's network namespace, reading untrusted bytes from
 * the sandbox. Every connection has two bounded buffers (NET_BUFFER_SIZE per
 * direction) for the hand-shake and, once relaying, two pipes (64 KiB, up
 * to RELAY_PIPE_MAX for bulk transfers); a full buffer or pipe stops
 * reading from its source, so a slow peer only slows its own connection.
 * The number of connections is bounded (NET_MAX_CONNECTIONS): at the bound
 * the listeners are paused. Half-closes travel through (EOF on one side
 * becomes shutdown(SHUT_WR) on the other once everything before it is
 * delivered). Name lookups run in the resolver workers; the loop never
 * blocks. */
#include "net/proxy.h"
#include "net/audit.h"
#include "net/denial.h"
#include "net/proxy-parse.h"
#include "net/resolve-pool.h"
#include "net/resolve.h"
#include "net/secrets.h"
#include "util/cleanup.h"
#include "util/log.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define HANDSHAKE_TIMEOUT_S 30 /* head, SOCKS negotiation and connect */
#define DRAIN_TIMEOUT_S     5  /* after a refusal, waiting for the client to close */
#define RESOLVE_TIMEOUT_S   10 /* one name lookup; then its worker is replaced */

/* Relay pipes start at the kernel's default (64 KiB) and grow to
 * RELAY_PIPE_MAX once a direction fills its pipe (a bulk transfer): fewer
 * splice calls, and fewer, larger ACKs to the sender, whose transmit work
 * on loopback runs in the context of whoever ACKs (the proxy). Measured on
 * a 100 MiB download: 64 KiB pipes cost the proxy about twice the CPU of
 * 1 MiB ones. All grown pipes of the proxy together stay under
 * RELAY_PIPE_BUDGET (pipe pages count against the user's pipe limit); past
 * it, or when the kernel refuses, a pipe keeps its default size. */
#define RELAY_PIPE_MAX    (1024 * 1024)
#define RELAY_PIPE_BUDGET (16 * 1024 * 1024)
/* Bytes one connection may move before the loop turns to the others. */
#define RELAY_TURN_MAX (1024 * 1024)

#define TOKEN_LISTENER (1ULL << 40)
#define TOKEN_TIMER    (1ULL << 41)
#define TOKEN_RESOLVER (1ULL << 42)
#define TOKEN_REPORT   (1ULL << 43) /* the supervisor: rules the user allowed */

enum conn_state {
    CONN_FREE,
    CONN_HEAD,          /* reading an HTTP head or the SOCKS greeting */
    CONN_SOCKS_REQUEST, /* greeting answered, reading the CONNECT request */
    CONN_RESOLVING,     /* the name is with a resolver worker */
    CONN_CONNECTING,
    CONN_UPSTREAM, /* connected to network.upstream_proxy, its CONNECT answer pending */
    CONN_RELAY,
    CONN_DRAIN, /* answer queued; flush it, then discard input until EOF */
};

enum conn_kind { KIND_UNKNOWN, KIND_HTTP_CONNECT, KIND_HTTP, KIND_SOCKS5, KIND_PUBLISH };

struct buffer {
    char data[NET_BUFFER_SIZE];
    size_t start, end;
};

/* Relayed bytes move socket -> pipe -> socket with splice(2): no copy
 * through user space. The buffers carry the hand-shake and whatever the
 * client sent with it; a direction switches to its pipe once its buffer is
 * empty. */
struct relay_pipe {
    int r, w;
    size_t fill, size;
    size_t grown; /* bytes added by relay_pipe_grow, counted in proxy.pipe_grown */
    /* A splice into the pipe said EAGAIN while the pipe held bytes: the
     * pipe may have run out of slots (fragments smaller than a page) with
     * the socket still readable, so the next drain retries the socket. */
    bool retry_read;
};

struct conn {
    enum conn_state state;
    enum conn_kind kind;
    int client, server;
    uint32_t client_events, server_events; /* registered with epoll */
    struct buffer *up;                     /* client -> server */
    struct buffer *down;                   /* server -> client */
    struct relay_pipe up_pipe, down_pipe;  /* in CONN_RELAY, when pipes were available */
    bool client_eof, server_eof, up_shut, down_shut;
    /* The server took no more of the upload (it answered and reset the
     * connection): the client's further bytes are read and dropped while
     * the answer reaches it, DRAIN_TIMEOUT_S at most (since). */
    bool up_dropped;
    /* In CONN_RELAY the sockets are edge-triggered: each flag says the
     * socket may be ready (an edge came, no EAGAIN since), so no syscall
     * is spent on a socket known to be empty or full. */
    bool client_readable, client_writable, server_readable, server_writable;
    bool queued; /* its turn ended with bytes still to move: pumped after the batch */
    /* Closed during the current batch of events: not reused before the
     * batch ends, so its stale events cannot reach a new connection. */
    bool closed_in_batch;
    time_t since;
    char host[PROXY_HOST_MAX + 1];
    int port;
    struct allow_addr addrs[RESOLVE_MAX];
    size_t addr_count, addr_next;
    uint64_t resolve_tag;  /* in CONN_RESOLVING: the lookup's (sequence << 16 | index) */
    size_t request_length; /* bytes of the request to drop once connected */
    size_t publish_index;
    /* Through network.upstream_proxy: connected to it, not to host:port. */
    bool via_upstream, upstream_ready;
    char *upstream_buf; /* its answer, UPSTREAM_ANSWER_MAX at most */
    size_t upstream_len;
    bool publish_v6; /* the published port's connect went on to [::1] */
};

#define UPSTREAM_ANSWER_MAX 4096

struct proxy {
    const struct proxy_config *cfg;
    int epoll_fd;
    struct conn conns[NET_MAX_CONNECTIONS];
    size_t active;
    bool listeners_paused;
    size_t pipe_grown;             /* bytes of grown pipes beyond the default, all connections */
    size_t queued;                 /* connections with conn.queued set */
    struct resolve_pool *resolver; /* NULL without the allowlist listener */
    uint64_t resolve_seq;
    struct {
        char target[NET_DENIAL_RULE_MAX]; /* host:port */
        time_t until;
    } quiet[16]; /* supervisor_control */
};

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

static size_t buffer_used(const struct buffer *b)
{
    return b->end - b->start;
}

static size_t buffer_room(struct buffer *b)
{
    if (b->start == b->end)
        b->start = b->end = 0;
    if (b->end == sizeof(b->data) && b->start > 0) {
        memmove(b->data, b->data + b->start, b->end - b->start);
        b->end -= b->start;
        b->start = 0;
    }
    return sizeof(b->data) - b->end;
}

static void buffer_put(struct buffer *b, const void *data, size_t len)
{
    if (len > buffer_room(b))
        len = buffer_room(b);
    memcpy(b->data + b->end, data, len);
    b->end += len;
}

static void buffer_drop(struct buffer *b, size_t len)
{
    b->start += len < buffer_used(b) ? len : buffer_used(b);
}

static void conn_reset(struct conn *c, bool closed_in_batch)
{
    *c = (struct conn){.state = CONN_FREE,
                       .client = -1,
                       .server = -1,
                       .up_pipe = {-1, -1, 0, 0, 0, false},
                       .down_pipe = {-1, -1, 0, 0, 0, false},
                       .closed_in_batch = closed_in_batch};
}

static size_t flow_pending(struct buffer *b, const struct relay_pipe *pp)
{
    return buffer_used(b) + pp->fill;
}

static size_t flow_room(struct buffer *b, const struct relay_pipe *pp)
{
    if (pp->r >= 0 && buffer_used(b) == 0)
        return pp->size - pp->fill;
    return buffer_room(b);
}

static uint64_t conn_token(const struct proxy *p, const struct conn *c, int side)
{
    return (uint64_t)(c - p->conns) << 1 | (uint64_t)side;
}

static void epoll_set(struct proxy *p, int fd, uint32_t *registered, uint32_t want, uint64_t token)
{
    if (fd < 0 || *registered == want)
        return;
    struct epoll_event ev = {.events = want, .data.u64 = token};
    epoll_ctl(p->epoll_fd, EPOLL_CTL_MOD, fd, &ev);
    *registered = want;
}

static void listeners_set(struct proxy *p, bool paused)
{
    if (p->listeners_paused == paused)
        return;
    p->listeners_paused = paused;
    const struct proxy_config *cfg = p->cfg;
    for (size_t i = 0; i <= cfg->publish_count; i++) {
        int fd = i == 0 ? cfg->sandbox_listener : cfg->publish[i - 1].fd;
        if (fd < 0)
            continue;
        struct epoll_event ev = {.events = paused ? 0 : EPOLLIN, .data.u64 = TOKEN_LISTENER | i};
        epoll_ctl(p->epoll_fd, EPOLL_CTL_MOD, fd, &ev);
    }
}

static void conn_close(struct proxy *p, struct conn *c)
{
    if (c->client >= 0)
        close(c->client);
    if (c->server >= 0)
        close(c->server);
    free(c->up);
    free(c->down);
    free(c->upstream_buf);
    p->pipe_grown -= c->up_pipe.grown + c->down_pipe.grown;
    int pipes[4] = {c->up_pipe.r, c->up_pipe.w, c->down_pipe.r, c->down_pipe.w};
    for (size_t i = 0; i < ARRAY_SIZE(pipes); i++) {
        if (pipes[i] >= 0)
            close(pipes[i]);
    }
    if (c->queued)
        p->queued--;
    if (c->state == CONN_RESOLVING)
        resolve_pool_cancel(p->resolver, c->resolve_tag);
    conn_reset(c, true);
    p->active--;
    listeners_set(p, false);
}

/* Recomputes what each side waits for. */
static void conn_update(struct proxy *p, struct conn *c)
{
    uint32_t client = 0, server = 0;
    switch (c->state) {
    case CONN_FREE:
    case CONN_RELAY: /* edge-triggered, registered once: see relay_start */
        return;
    case CONN_HEAD:
    case CONN_SOCKS_REQUEST:
        /* A head never exceeds PROXY_HEAD_MAX: keep the rest of the
         * buffer for the rewritten head. */
        if (buffer_used(c->up) < PROXY_HEAD_MAX)
            client |= EPOLLIN;
        break;
    case CONN_RESOLVING:
        break;
    case CONN_CONNECTING:
        server |= EPOLLOUT;
        break;
    case CONN_UPSTREAM:
        server |= EPOLLIN;
        break;
    case CONN_DRAIN:
        if (buffer_used(c->down) == 0)
            client |= EPOLLIN;
        break;
    }
    if (flow_pending(c->down, &c->down_pipe) > 0)
        client |= EPOLLOUT;
    epoll_set(p, c->client, &c->client_events, client, conn_token(p, c, 0));
    epoll_set(p, c->server, &c->server_events, server, conn_token(p, c, 1));
}

static bool publish_retry_v6(struct proxy *p, struct conn *c);
static bool quiet_match(const struct proxy *p, const struct conn *c);
static void publish_failed(struct proxy *p, struct conn *c, int soerr);

/* A policy refusal, for the tool result of the call that made it
 * (net/denial.h). Failures to connect or resolve are not the policy's. */
static void report_denial(struct proxy *p, struct conn *c, const char *address, const char *reason)
{
    if (strncmp(reason, "denied:", 7) != 0 || c->kind == KIND_PUBLISH || quiet_match(p, c))
        return;
    net_denial_send(p->cfg->report_fd, kind_name(c->kind), c->host, c->port, address, reason);
}

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

static void audit(struct proxy *p, struct conn *c, const char *address, bool allowed,
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

static void conn_refuse(struct conn *c, int http_status, int socks_code, const char *reason)
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
static void conn_connect_next(struct proxy *p, struct conn *c)
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
            audit(p, c, text, true, d.reason);
        } else if (!first_denial.reason[0]) {
            first_denial = ad;
            audit(p, c, text, false, ad.reason);
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
        audit(p, c, NULL, false, d.reason);
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
                audit(p, c, NULL, false, ad.reason);
                conn_refuse(c, 403, SOCKS5_REPLY_NOT_ALLOWED, ad.reason);
                return;
            }
            char reason[sizeof(d.reason) + 400];
            snprintf(reason, sizeof(reason), "%s, through the upstream proxy %s", d.reason,
                     p->cfg->upstream_text);
            audit(p, c, p->cfg->upstream_text, true, reason);
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
        audit(p, c, NULL, false, err.message);
        conn_refuse(c, 502, SOCKS5_REPLY_GENERAL_FAILURE, err.message);
        return;
    }
    c->state = CONN_RESOLVING;
    c->since = time(NULL);
}

/* Finished lookups: each goes on with its connection, unless that
 * connection ended or timed out meanwhile (its tag no longer matches). */
static void resolver_results(struct proxy *p)
{
    struct resolve_result r;
    while (resolve_pool_next(p->resolver, &r)) {
        struct conn *c = &p->conns[r.tag & 0xffff];
        if (c->state != CONN_RESOLVING || c->resolve_tag != r.tag)
            continue;
        if (r.err.message[0]) {
            audit(p, c, NULL, false, r.err.message);
            conn_refuse(c, 502, SOCKS5_REPLY_HOST_UNREACHABLE, r.err.message);
        } else {
            conn_resolved(p, c, r.addrs, r.count);
        }
        if (c->state != CONN_FREE)
            conn_update(p, c);
    }
}

static void relay_start(struct proxy *p, struct conn *c);

static size_t pipe_size(int reported)
{
    return reported > 0 ? (size_t)reported : 4096;
}

/* Connected to the upstream proxy: ask it for the destination. */
static void upstream_start(struct proxy *p, struct conn *c)
{
    char request[PROXY_HOST_MAX + 128];
    bool v6 = strchr(c->host, ':') != NULL;
    int n =
        snprintf(request, sizeof(request), "CONNECT %s%s%s:%d HTTP/1.1\r\nHost: %s%s%s:%d\r\n\r\n",
                 v6 ? "[" : "", c->host, v6 ? "]" : "", c->port, v6 ? "[" : "", c->host,
                 v6 ? "]" : "", c->port);
    c->upstream_buf = malloc(UPSTREAM_ANSWER_MAX);
    /* A fresh socket's send buffer takes the whole request or fails. */
    if (!c->upstream_buf || send(c->server, request, (size_t)n, MSG_NOSIGNAL) != n) {
        char reason[400];
        snprintf(reason, sizeof(reason), "the upstream proxy %s closed the connection",
                 p->cfg->upstream_text);
        audit(p, c, NULL, false, reason);
        conn_refuse(c, 502, SOCKS5_REPLY_GENERAL_FAILURE, reason);
        return;
    }
    c->upstream_len = 0;
    c->state = CONN_UPSTREAM;
    c->since = time(NULL);
}

static void conn_established(struct proxy *p, struct conn *c);

/* The upstream proxy's answer: 2xx opens the tunnel, anything else is
 * refused with its status line. */
static void upstream_read(struct proxy *p, struct conn *c)
{
    ssize_t n = read(c->server, c->upstream_buf + c->upstream_len,
                     UPSTREAM_ANSWER_MAX - 1 - c->upstream_len);
    if (n < 0 && (errno == EAGAIN || errno == EINTR))
        return;
    char reason[PROXY_HOST_MAX + 600];
    if (n <= 0) {
        snprintf(reason, sizeof(reason), "the upstream proxy %s closed the connection",
                 p->cfg->upstream_text);
        goto refuse;
    }
    c->upstream_len += (size_t)n;
    c->upstream_buf[c->upstream_len] = '\0';
    char *end = strstr(c->upstream_buf, "\r\n\r\n");
    if (!end) {
        if (c->upstream_len < UPSTREAM_ANSWER_MAX - 1)
            return;
        snprintf(reason, sizeof(reason), "the upstream proxy %s sent an overlong answer",
                 p->cfg->upstream_text);
        goto refuse;
    }
    if (strncmp(c->upstream_buf, "HTTP/1.", 7) != 0 || c->upstream_buf[8] != ' ' ||
        c->upstream_buf[9] != '2') {
        size_t line = strcspn(c->upstream_buf, "\r\n");
        snprintf(reason, sizeof(reason), "the upstream proxy %s refused CONNECT %s:%d: %.*s",
                 p->cfg->upstream_text, c->host, c->port, (int)(line > 200 ? 200 : line),
                 c->upstream_buf);
        goto refuse;
    }
    /* Bytes after the answer are the destination's (a server that speaks
     * first): kept for the client, after cordon's own reply. */
    size_t head = (size_t)(end + 4 - c->upstream_buf);
    memmove(c->upstream_buf, c->upstream_buf + head, c->upstream_len - head);
    c->upstream_len -= head;
    c->upstream_ready = true;
    epoll_set(p, c->server, &c->server_events, 0, conn_token(p, c, 1));
    conn_established(p, c);
    return;
refuse:
    epoll_ctl(p->epoll_fd, EPOLL_CTL_DEL, c->server, NULL);
    close(c->server);
    c->server = -1;
    c->server_events = 0;
    audit(p, c, NULL, false, reason);
    conn_refuse(c, 502, SOCKS5_REPLY_GENERAL_FAILURE, reason);
}

/* The connect finished: answer the client and start relaying. */
/* A tunnel to a host that secrets or rules name: answer the client and
 * hand both sockets to the interception thread (tls.c). */
static void conn_intercept(struct proxy *p, struct conn *c)
{
    char reason[PROXY_HOST_MAX + 300];
    if (buffer_used(c->up) > c->request_length || (c->upstream_buf && c->upstream_len > 0)) {
        snprintf(reason, sizeof(reason),
                 "bytes sent before the tunnel to %s:%d was established (refused: it is "
                 "intercepted)",
                 c->host, c->port);
        audit(p, c, NULL, false, reason);
        conn_close(p, c);
        return;
    }
    static const char http_ok[] = "HTTP/1.1 200 Connection established\r\n\r\n";
    static const uint8_t socks_ok[10] = {5, 0, 0, 1, 0, 0, 0, 0, 0, 0};
    const void *ok = c->kind == KIND_SOCKS5 ? (const void *)socks_ok : (const void *)http_ok;
    size_t ok_len = c->kind == KIND_SOCKS5 ? sizeof(socks_ok) : sizeof(http_ok) - 1;
    /* A fresh socket's send buffer takes the whole answer or fails. */
    if (send(c->client, ok, ok_len, MSG_NOSIGNAL) != (ssize_t)ok_len) {
        conn_close(p, c);
        return;
    }
    epoll_ctl(p->epoll_fd, EPOLL_CTL_DEL, c->client, NULL);
    epoll_ctl(p->epoll_fd, EPOLL_CTL_DEL, c->server, NULL);
    /* TLS records are small writes: no Nagle delay on either side. */
    int one = 1;
    setsockopt(c->server, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    struct cordon_error err = {0};
    if (tls_intercept(p->cfg->tls, c->client, c->server, c->host, c->port, &err) < 0) {
        audit(p, c, NULL, false, err.message);
        conn_close(p, c);
        return;
    }
    c->client = c->server = -1;
    conn_close(p, c);
}

static void conn_established(struct proxy *p, struct conn *c)
{
    if (c->via_upstream && !c->upstream_ready) {
        upstream_start(p, c);
        return;
    }
    if (p->cfg->tls && (c->kind == KIND_HTTP_CONNECT || c->kind == KIND_SOCKS5) &&
        tls_wants(p->cfg->tls_cfg, c->host, c->port)) {
        conn_intercept(p, c);
        return;
    }
    c->state = CONN_RELAY;
    c->since = time(NULL);
    /* Without pipes (fd limit) the buffers relay; slower, same result. */
    int up[2], down[2];
    if (pipe2(up, O_NONBLOCK | O_CLOEXEC) == 0) {
        if (pipe2(down, O_NONBLOCK | O_CLOEXEC) == 0) {
            /* Smaller than the default when the user is over the pipe
             * page limit (fs.pipe-user-pages-soft). */
            int up_size = fcntl(up[1], F_GETPIPE_SZ);
            int down_size = fcntl(down[1], F_GETPIPE_SZ);
            c->up_pipe = (struct relay_pipe){up[0], up[1], 0, pipe_size(up_size), 0, false};
            c->down_pipe = (struct relay_pipe){down[0], down[1], 0, pipe_size(down_size), 0, false};
        } else {
            close(up[0]);
            close(up[1]);
        }
    }
    int one = 1;
    setsockopt(c->server, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    switch (c->kind) {
    case KIND_HTTP_CONNECT: {
        static const char ok[] = "HTTP/1.1 200 Connection established\r\n\r\n";
        buffer_drop(c->up, c->request_length);
        buffer_put(c->down, ok, sizeof(ok) - 1);
        break;
    }
    case KIND_SOCKS5: {
        static const uint8_t ok[10] = {5, 0, 0, 1, 0, 0, 0, 0, 0, 0};
        buffer_drop(c->up, c->request_length);
        buffer_put(c->down, ok, sizeof(ok));
        break;
    }
    case KIND_HTTP: {
        /* Replace the proxy-form head with the origin-form one; the
         * body bytes already read follow it. */
        struct http_request *req = malloc(sizeof(*req));
        if (!req || http_parse_request(c->up->data + c->up->start, buffer_used(c->up), req) !=
                        PROXY_PARSE_DONE) {
            free(req);
            conn_close(p, c);
            return;
        }
        size_t rest = buffer_used(c->up) - req->head_length;
        const char *head = req->rewritten;
        size_t head_length = req->rewritten_length;
        char *filled = NULL;
        if (p->cfg->secret_count > 0) {
            /* conn_parse checked this head: no leak, and it fits. */
            char reason[512];
            filled = malloc(NET_BUFFER_SIZE);
            size_t n = 0;
            if (!filled ||
                secrets_apply(p->cfg->secrets, p->cfg->secret_count, c->host, c->port, true,
                              req->rewritten, req->rewritten_length, filled, NET_BUFFER_SIZE - rest,
                              &n, reason, sizeof(reason)) > SECRETS_SUBST) {
                free(filled);
                free(req);
                conn_close(p, c);
                return;
            }
            if (n > 0) {
                head = filled;
                head_length = n;
            }
        }
        memmove(c->up->data + head_length, c->up->data + c->up->start + req->head_length, rest);
        memcpy(c->up->data, head, head_length);
        c->up->start = 0;
        c->up->end = head_length + rest;
        if (filled) {
            explicit_bzero(filled, head_length);
            free(filled);
        }
        free(req);
        break;
    }
    default:
        break;
    }
    if (c->upstream_buf) {
        buffer_put(c->down, c->upstream_buf, c->upstream_len);
        free(c->upstream_buf);
        c->upstream_buf = NULL;
    }
    relay_start(p, c);
}

static void conn_parse(struct proxy *p, struct conn *c)
{
    const uint8_t *data = (const uint8_t *)c->up->data + c->up->start;
    size_t len = buffer_used(c->up);
    if (len == 0)
        return;
    if (c->state == CONN_HEAD && c->kind == KIND_UNKNOWN)
        c->kind = data[0] == 5 ? KIND_SOCKS5 : KIND_HTTP;
    if (c->kind == KIND_SOCKS5 && c->state == CONN_HEAD) {
        size_t used = 0;
        const char *error = NULL;
        enum proxy_parse_result r = socks5_parse_greeting(data, len, &used, &error);
        if (r == PROXY_PARSE_INCOMPLETE)
            return;
        if (r == PROXY_PARSE_ERROR) {
            const uint8_t no_method[2] = {5, 0xff};
            buffer_put(c->down, no_method, 2);
            audit(p, c, NULL, false, error);
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
    if (c->kind == KIND_SOCKS5) {
        struct socks5_request req;
        enum proxy_parse_result r = socks5_parse_request(data, len, &req);
        if (r == PROXY_PARSE_INCOMPLETE)
            return;
        snprintf(c->host, sizeof(c->host), "%s", req.host);
        c->port = req.port;
        if (r == PROXY_PARSE_ERROR) {
            audit(p, c, NULL, false, req.error);
            conn_refuse_socks(c, req.reply);
            return;
        }
        c->request_length = req.length;
        conn_decide(p, c);
        return;
    }
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
        audit(p, c, NULL, false, req->error);
        conn_refuse_http(c, req->status, req->error);
        free(req);
        return;
    }
    c->kind = req->is_connect ? KIND_HTTP_CONNECT : KIND_HTTP;
    c->request_length = req->head_length;
    if (c->kind == KIND_HTTP && p->cfg->tls_cfg) {
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
            audit(p, c, NULL, false, reason);
            conn_refuse_http(c, 403, reason);
            free(req);
            return;
        }
    }
    if (c->kind == KIND_HTTP && p->cfg->secret_count > 0) {
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
            audit(p, c, NULL, false, reason);
            conn_refuse_http(c, v == SECRETS_LEAK ? 403 : 431, reason);
            free(req);
            return;
        }
    }
    free(req);
    conn_decide(p, c);
}

/* Reads from FD into B; returns bytes read, 0 at EOF, -1 on error, -2 when
 * nothing was there. */
static ssize_t read_into(int fd, struct buffer *b, size_t max)
{
    size_t room = buffer_room(b);
    if (room > max)
        room = max;
    if (room == 0)
        return -2;
    ssize_t n = read(fd, b->data + b->end, room);
    if (n < 0)
        return errno == EAGAIN || errno == EINTR ? -2 : -1;
    b->end += (size_t)n;
    return n;
}

/* Sends from B; returns bytes sent, -1 on error, -2 when the socket is
 * full. */
static ssize_t write_from(int fd, struct buffer *b)
{
    if (buffer_used(b) == 0)
        return 0;
    ssize_t n = send(fd, b->data + b->start, buffer_used(b), MSG_NOSIGNAL);
    if (n < 0)
        return errno == EAGAIN || errno == EINTR ? -2 : -1;
    buffer_drop(b, (size_t)n);
    return n;
}

/* Like read_into, through the pipe when the direction has switched to it. */
static ssize_t flow_read(int fd, struct buffer *b, struct relay_pipe *pp, size_t max)
{
    if (pp->r < 0 || buffer_used(b) > 0)
        return read_into(fd, b, max);
    size_t room = pp->size - pp->fill;
    if (room == 0)
        return -2;
    ssize_t n = splice(fd, NULL, pp->w, NULL, room, SPLICE_F_NONBLOCK | SPLICE_F_MOVE);
    if (n < 0) {
        if (errno != EAGAIN && errno != EINTR)
            return -1;
        pp->retry_read = pp->fill > 0;
        return -2;
    }
    pp->fill += (size_t)n;
    return n;
}

/* Like write_from, out of the pipe once the buffer is empty. */
static ssize_t flow_write(int fd, struct buffer *b, struct relay_pipe *pp)
{
    if (buffer_used(b) > 0)
        return write_from(fd, b);
    if (pp->fill == 0)
        return 0;
    ssize_t n = splice(pp->r, NULL, fd, NULL, pp->fill, SPLICE_F_NONBLOCK | SPLICE_F_MOVE);
    if (n < 0)
        return errno == EAGAIN || errno == EINTR ? -2 : -1;
    pp->fill -= (size_t)n;
    return n;
}

/* A full pipe means a bulk transfer: give it more room while the budget
 * lasts. F_SETPIPE_SZ may fail (the user's pipe page limit): the pipe then
 * keeps its size. */
static void relay_pipe_grow(struct proxy *p, struct relay_pipe *pp)
{
    if (pp->size >= RELAY_PIPE_MAX || p->pipe_grown + RELAY_PIPE_MAX - pp->size > RELAY_PIPE_BUDGET)
        return;
    int size = fcntl(pp->w, F_SETPIPE_SZ, RELAY_PIPE_MAX);
    if (size <= (int)pp->size)
        return;
    p->pipe_grown += (size_t)size - pp->size;
    pp->grown += (size_t)size - pp->size;
    pp->size = (size_t)size;
}

/* Moves what it can in one direction. Returns 1 when something moved
 * (or EOF was seen), 0 when both ends are blocked, -1 on an error of the
 * source, -2 on one of the destination. */
static int relay_direction(struct proxy *p, int src, bool *src_readable, bool *src_eof, int dst,
                           bool *dst_writable, struct buffer *b, struct relay_pipe *pp,
                           size_t *moved)
{
    int progress = 0;
    /* A stalled direction (pipe full, destination not draining) stops
     * reading from its source: TCP pushes back on that peer alone. */
    if (!*src_eof && *src_readable && flow_room(b, pp) > 0) {
        ssize_t n = flow_read(src, b, pp, NET_BUFFER_SIZE);
        if (n == -1)
            return -1;
        if (n == -2) {
            *src_readable = false;
        } else {
            progress = 1;
            *moved += (size_t)n;
            if (n == 0)
                *src_eof = true;
            else if (pp->r >= 0 && pp->fill == pp->size)
                relay_pipe_grow(p, pp);
        }
    }
    if (*dst_writable && flow_pending(b, pp) > 0) {
        ssize_t n = flow_write(dst, b, pp);
        if (n == -1)
            return -2;
        if (n == -2) {
            *dst_writable = false;
        } else if (n > 0) {
            progress = 1;
            if (pp->retry_read) {
                pp->retry_read = false;
                *src_readable = true;
            }
        }
    }
    return progress;
}

/* Relays both directions until the sockets block or the connection has
 * had its turn (then it waits in the ready list: no edge would come for
 * bytes already there). Passes half-closes on and ends the connection
 * when both directions are done. */
/* The client's bytes after the server stopped taking them: read and
 * dropped, so that closing does not reset the connection under an answer
 * the client has yet to read. */
static int relay_drop_up(struct conn *c, size_t *moved)
{
    if (c->client_eof || !c->client_readable)
        return 0;
    char scratch[16384];
    ssize_t n = read(c->client, scratch, sizeof(scratch));
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
        c->client_readable = false;
        return 0;
    }
    if (n <= 0)
        c->client_eof = true;
    else
        *moved += (size_t)n;
    return 1;
}

static void relay_pump(struct proxy *p, struct conn *c)
{
    size_t moved = 0;
    int up = 1, down = 1;
    while ((up > 0 || down > 0) && moved < RELAY_TURN_MAX) {
        up = c->up_dropped
                 ? relay_drop_up(c, &moved)
                 : relay_direction(p, c->client, &c->client_readable, &c->client_eof, c->server,
                                   &c->server_writable, c->up, &c->up_pipe, &moved);
        size_t before_down = moved;
        down = relay_direction(p, c->server, &c->server_readable, &c->server_eof, c->client,
                               &c->client_writable, c->down, &c->down_pipe, &moved);
        /* After a dropped upload the drain timeout counts from the answer's
         * last bytes: a long answer still streaming is not cut off. */
        if (c->up_dropped && moved > before_down)
            c->since = time(NULL);
        /* A server that answers an upload early (413) and closes resets
         * the connection: writing to it fails, and reading gives what it
         * sent, then the reset. Its answer still goes to the client, which
         * waits for it while it sends. */
        if (up == -2) {
            c->up_dropped = c->up_shut = true;
            c->since = time(NULL);
            up = 1;
        }
        if (down == -1) {
            c->server_eof = true;
            down = 1;
        }
        if (up < 0 || down < 0) {
            conn_close(p, c);
            return;
        }
    }
    /* Pass half-closes on once everything before them is delivered. */
    if (c->client_eof && !c->up_shut && flow_pending(c->up, &c->up_pipe) == 0) {
        shutdown(c->server, SHUT_WR);
        c->up_shut = true;
    }
    if (c->server_eof && !c->down_shut && flow_pending(c->down, &c->down_pipe) == 0) {
        shutdown(c->client, SHUT_WR);
        c->down_shut = true;
    }
    /* After a dropped upload, the client closes once it has the answer. */
    if (c->up_shut && c->down_shut && (!c->up_dropped || c->client_eof)) {
        conn_close(p, c);
        return;
    }
    if ((up > 0 || down > 0) && !c->queued) {
        c->queued = true;
        p->queued++;
    }
}

/* The connection is established: from here on both sockets are
 * registered once, edge-triggered, for everything; no epoll_ctl() per
 * chunk. The readiness flags start optimistic (a wrong guess costs one
 * EAGAIN). */
static void relay_start(struct proxy *p, struct conn *c)
{
    const uint32_t events = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET;
    struct epoll_event ev = {.events = events, .data.u64 = conn_token(p, c, 0)};
    epoll_ctl(p->epoll_fd, EPOLL_CTL_MOD, c->client, &ev);
    ev.data.u64 = conn_token(p, c, 1);
    epoll_ctl(p->epoll_fd, EPOLL_CTL_MOD, c->server, &ev);
    c->client_events = c->server_events = events;
    c->client_readable = c->client_writable = true;
    c->server_readable = c->server_writable = true;
    relay_pump(p, c);
}

static void relay_event(struct proxy *p, struct conn *c, int side, uint32_t events)
{
    bool in = events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR);
    bool out = events & (EPOLLOUT | EPOLLHUP | EPOLLERR);
    if (side == 0) {
        c->client_readable |= in;
        c->client_writable |= out;
    } else {
        c->server_readable |= in;
        c->server_writable |= out;
    }
    if (!c->queued)
        relay_pump(p, c);
}

static void conn_event(struct proxy *p, struct conn *c, int side, uint32_t events)
{
    if (c->state == CONN_RELAY) {
        relay_event(p, c, side, events);
        return;
    }
    bool in = events & (EPOLLIN | EPOLLHUP | EPOLLERR);
    bool out = events & (EPOLLOUT | EPOLLHUP | EPOLLERR);
    if (side == 1 && c->state == CONN_CONNECTING) {
        int soerr = 0;
        socklen_t l = sizeof(soerr);
        if (getsockopt(c->server, SOL_SOCKET, SO_ERROR, &soerr, &l) < 0)
            soerr = errno;
        if (soerr == 0) {
            conn_established(p, c);
        } else {
            epoll_ctl(p->epoll_fd, EPOLL_CTL_DEL, c->server, NULL);
            close(c->server);
            c->server = -1;
            c->server_events = 0;
            if (c->kind != KIND_PUBLISH)
                conn_connect_next(p, c);
            else if (!publish_retry_v6(p, c))
                publish_failed(p, c, soerr);
        }
        if (c->state != CONN_FREE)
            conn_update(p, c);
        return;
    }
    if (side == 1 && c->state == CONN_UPSTREAM) {
        if (in)
            upstream_read(p, c);
        if (c->state != CONN_FREE && c->state != CONN_RELAY)
            conn_update(p, c);
        return;
    }
    /* The client gave up while its destination is looked up or connected
     * to: nothing is read in these states, so a hang-up would repeat. */
    if (side == 0 && (events & (EPOLLHUP | EPOLLERR)) &&
        (c->state == CONN_RESOLVING || c->state == CONN_CONNECTING || c->state == CONN_UPSTREAM)) {
        conn_close(p, c);
        return;
    }
    if (side == 0) {
        if (out && flow_write(c->client, c->down, &c->down_pipe) == -1) {
            conn_close(p, c);
            return;
        }
        if (in && c->state == CONN_DRAIN && buffer_used(c->down) == 0) {
            char discard[4096];
            ssize_t n = read(c->client, discard, sizeof(discard));
            if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
                conn_close(p, c);
                return;
            }
        } else if (in && (c->state == CONN_HEAD || c->state == CONN_SOCKS_REQUEST)) {
            /* A head never exceeds PROXY_HEAD_MAX, which leaves room in
             * the buffer for the rewritten head. */
            ssize_t n = read_into(c->client, c->up, PROXY_HEAD_MAX - buffer_used(c->up));
            if (n == -1 || n == 0) {
                conn_close(p, c);
                return;
            }
            if (n > 0)
                conn_parse(p, c);
            if (c->state == CONN_FREE || c->state == CONN_RELAY)
                return;
        }
    }
    if (c->state == CONN_DRAIN && buffer_used(c->down) == 0 && c->kind == KIND_PUBLISH) {
        conn_close(p, c);
        return;
    }
    if (c->state == CONN_DRAIN && buffer_used(c->down) == 0)
        shutdown(c->client, SHUT_WR);
    conn_update(p, c);
}

static struct conn *conn_new(struct proxy *p, int client)
{
    for (size_t i = 0; i < NET_MAX_CONNECTIONS; i++) {
        struct conn *c = &p->conns[i];
        if (c->state != CONN_FREE || c->closed_in_batch)
            continue;
        conn_reset(c, false);
        c->state = CONN_HEAD;
        c->client = client;
        c->up = malloc(sizeof(*c->up));
        c->down = malloc(sizeof(*c->down));
        if (!c->up || !c->down) {
            free(c->up);
            free(c->down);
            conn_reset(c, false);
            return NULL;
        }
        c->up->start = c->up->end = c->down->start = c->down->end = 0;
        c->since = time(NULL);
        p->active++;
        if (p->active == NET_MAX_CONNECTIONS)
            listeners_set(p, true);
        struct epoll_event ev = {.events = 0, .data.u64 = conn_token(p, c, 0)};
        epoll_ctl(p->epoll_fd, EPOLL_CTL_ADD, client, &ev);
        return c;
    }
    return NULL;
}

static void publish_start(struct proxy *p, struct conn *c, size_t index)
{
    const struct proxy_publish *pub = &p->cfg->publish[index];
    c->kind = KIND_PUBLISH;
    c->publish_index = index;
    snprintf(c->host, sizeof(c->host), "127.0.0.1");
    c->port = pub->guest_port;
    struct cordon_error err = {0};
    bool to_unix = pub->connect_path[0] != '\0';
    int fd =
        to_unix || !p->cfg->factory || pub->to_host
            ? socket(to_unix ? AF_UNIX : AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0)
            : netns_factory_socket(p->cfg->factory, &err);
    if (fd < 0) {
        audit(p, c, NULL, false, err.message[0] ? err.message : strerror(errno));
        conn_close(p, c);
        return;
    }
    struct sockaddr_in sin = {.sin_family = AF_INET, .sin_port = htons(pub->guest_port)};
    sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    struct sockaddr_un sun = {.sun_family = AF_UNIX};
    /* The socket may sit in a directory the sandbox writes (docker's
     * published ports): connect to that very inode, never through a
     * symlink planted there to another socket of the host. */
    _cleanup_close_ int path_fd = -1;
    if (to_unix) {
        struct stat st;
        path_fd = open(pub->connect_path, O_PATH | O_NOFOLLOW | O_CLOEXEC);
        if (path_fd < 0 || fstat(path_fd, &st) < 0 || !S_ISSOCK(st.st_mode)) {
            audit(p, c, NULL, false, "nothing listens in the sandbox (no socket there)");
            close(fd);
            conn_close(p, c);
            return;
        }
        snprintf(sun.sun_path, sizeof(sun.sun_path), "/proc/self/fd/%d", path_fd);
    }
    struct sockaddr *sa = to_unix ? (struct sockaddr *)&sun : (struct sockaddr *)&sin;
    socklen_t salen = to_unix ? (socklen_t)sizeof(sun) : (socklen_t)sizeof(sin);
    /* A unix socket's backlog full says EAGAIN: refused like a closed port. */
    if (connect(fd, sa, salen) < 0 && errno != EINPROGRESS) {
        close(fd);
        conn_close(p, c);
        return;
    }
    audit(p, c, "127.0.0.1", true, pub->text);
    c->server = fd;
    c->server_events = EPOLLOUT;
    struct epoll_event ev = {.events = EPOLLOUT, .data.u64 = conn_token(p, c, 1)};
    epoll_ctl(p->epoll_fd, EPOLL_CTL_ADD, fd, &ev);
    c->state = CONN_CONNECTING;
}

/* A published port refused on the sandbox's 127.0.0.1: a server that
 * listens on ::1 only (Node's and Vite's "localhost" on many systems) is
 * reached there. True when that connect is under way. */
static bool publish_retry_v6(struct proxy *p, struct conn *c)
{
    const struct proxy_publish *pub = &p->cfg->publish[c->publish_index];
    if (c->publish_v6 || pub->connect_path[0] || pub->to_host || !p->cfg->factory ||
        p->cfg->factory->pid <= 0)
        return false;
    c->publish_v6 = true;
    struct cordon_error err = {0};
    int fd = netns_factory_socket6(p->cfg->factory, &err);
    if (fd < 0)
        return false;
    struct sockaddr_in6 sin6 = {.sin6_family = AF_INET6, .sin6_port = htons(pub->guest_port)};
    sin6.sin6_addr = in6addr_loopback;
    if (connect(fd, (struct sockaddr *)&sin6, sizeof(sin6)) < 0 && errno != EINPROGRESS) {
        close(fd);
        return false;
    }
    snprintf(c->host, sizeof(c->host), "::1");
    c->server = fd;
    c->server_events = EPOLLOUT;
    struct epoll_event ev = {.events = EPOLLOUT, .data.u64 = conn_token(p, c, 1)};
    epoll_ctl(p->epoll_fd, EPOLL_CTL_ADD, fd, &ev);
    return true;
}

/* Nothing took the published port's connection inside (or, for a host
 * service, on the host's loopback): said on cordon's
 * stderr (once per port, the audit log has each), not only an empty reply. */
static void publish_failed(struct proxy *p, struct conn *c, int soerr)
{
    static bool warned[NET_MAX_PUBLISH];
    const struct proxy_publish *pub = &p->cfg->publish[c->publish_index];
    char reason[400];
    if (pub->to_host)
        snprintf(reason, sizeof(reason), "%s: nothing accepts on the host's 127.0.0.1:%u (%s)",
                 pub->text, pub->guest_port, strerror(soerr));
    else
        snprintf(reason, sizeof(reason),
                 "%s: nothing accepts on the sandbox's 127.0.0.1:%u%s (%s); the server must "
                 "listen on 127.0.0.1, ::1 or any address inside",
                 pub->text, pub->guest_port, c->publish_v6 ? " or [::1]" : "", strerror(soerr));
    struct net_audit_record r = {
        .session = p->cfg->policy->session_name,
        .protocol = "publish",
        .host = c->host,
        .port = c->port,
        .allowed = false,
        .reason = reason,
    };
    net_audit_write(p->cfg->audit_fd, &r);
    net_audit_write(p->cfg->session_audit_fd, &r);
    if (c->publish_index < NET_MAX_PUBLISH && !warned[c->publish_index]) {
        warned[c->publish_index] = true;
        log_warn("network: %s", reason);
    }
    conn_close(p, c);
}

static void accept_on(struct proxy *p, size_t index)
{
    const struct proxy_config *cfg = p->cfg;
    int lfd = index == 0 ? cfg->sandbox_listener : cfg->publish[index - 1].fd;
    while (!p->listeners_paused) {
        int fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0)
            return; /* EAGAIN, or a transient error: epoll says when to retry */
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        struct conn *c = conn_new(p, fd);
        if (!c) {
            close(fd);
            return;
        }
        if (index > 0)
            publish_start(p, c, index - 1);
        if (c->state != CONN_FREE)
            conn_update(p, c);
    }
}

static void sweep_timeouts(struct proxy *p)
{
    time_t now = time(NULL);
    for (size_t i = 0; i < NET_MAX_CONNECTIONS; i++) {
        struct conn *c = &p->conns[i];
        if (c->state == CONN_FREE || (c->state == CONN_RELAY && !c->up_dropped))
            continue;
        time_t limit = c->state == CONN_DRAIN || c->up_dropped ? DRAIN_TIMEOUT_S
                       : c->state == CONN_RESOLVING            ? RESOLVE_TIMEOUT_S
                                                               : HANDSHAKE_TIMEOUT_S;
        if (now - c->since <= limit)
            continue;
        if (c->state == CONN_RESOLVING) {
            char reason[PROXY_HOST_MAX + 64];
            snprintf(reason, sizeof(reason), "resolving %s timed out after %d s", c->host,
                     RESOLVE_TIMEOUT_S);
            resolve_pool_cancel(p->resolver, c->resolve_tag);
            audit(p, c, NULL, false, reason);
            conn_refuse(c, 504, SOCKS5_REPLY_HOST_UNREACHABLE, reason);
            conn_update(p, c);
            continue;
        }
        if (c->state == CONN_CONNECTING && c->kind != KIND_PUBLISH) {
            char reason[PROXY_HOST_MAX + 64];
            snprintf(reason, sizeof(reason), "connecting to %s:%d timed out", c->host, c->port);
            audit(p, c, NULL, false, reason);
        }
        conn_close(p, c);
    }
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

/* Messages from the supervisor (the sandbox cannot reach this socket). A
 * closed supervisor end stops the watch. */
static void supervisor_control(struct proxy *p)
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

int proxy_run(const struct proxy_config *cfg, struct cordon_error *err)
{
    _cleanup_free_ struct proxy *p = calloc(1, sizeof(*p));
    if (!p)
        return error_set(err, ENOMEM, "proxy");
    p->cfg = cfg;
    /* Up to six fds per connection (two sockets, two pipes). */
    struct rlimit nofile;
    if (getrlimit(RLIMIT_NOFILE, &nofile) == 0 && nofile.rlim_cur < nofile.rlim_max) {
        nofile.rlim_cur = nofile.rlim_max;
        setrlimit(RLIMIT_NOFILE, &nofile);
    }
    for (size_t i = 0; i < NET_MAX_CONNECTIONS; i++)
        conn_reset(&p->conns[i], false);
    _cleanup_close_ int epfd = epoll_create1(EPOLL_CLOEXEC);
    if (epfd < 0)
        return error_set(err, errno, "proxy: epoll_create1");
    p->epoll_fd = epfd;
    for (size_t i = 0; i <= cfg->publish_count; i++) {
        int fd = i == 0 ? cfg->sandbox_listener : cfg->publish[i - 1].fd;
        if (fd < 0)
            continue;
        struct epoll_event ev = {.events = EPOLLIN, .data.u64 = TOKEN_LISTENER | i};
        if (epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev) < 0)
            return error_set(err, errno, "proxy: epoll_ctl");
    }
    _cleanup_close_ int timer = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    if (timer < 0)
        return error_set(err, errno, "proxy: timerfd_create");
    /* Deny mode's listener refuses before any lookup. */
    if (cfg->sandbox_listener >= 0 && cfg->policy->mode != NET_MODE_DENY) {
        if (resolve_pool_start(cfg->policy->hosts_file, &p->resolver, err) < 0)
            return -1;
        struct epoll_event rev = {.events = EPOLLIN, .data.u64 = TOKEN_RESOLVER};
        if (epoll_ctl(epfd, EPOLL_CTL_ADD, resolve_pool_fd(p->resolver), &rev) < 0)
            return error_set(err, errno, "proxy: epoll_ctl");
    }
    if (cfg->report_fd >= 0) {
        struct epoll_event aev = {.events = EPOLLIN, .data.u64 = TOKEN_REPORT};
        epoll_ctl(epfd, EPOLL_CTL_ADD, cfg->report_fd, &aev);
    }
    struct itimerspec every_second = {{1, 0}, {1, 0}};
    timerfd_settime(timer, 0, &every_second, NULL);
    struct epoll_event tev = {.events = EPOLLIN, .data.u64 = TOKEN_TIMER};
    epoll_ctl(epfd, EPOLL_CTL_ADD, timer, &tev);

    struct epoll_event events[64];
    for (;;) {
        /* Queued connections have bytes waiting: poll, do not sleep. */
        int n = epoll_wait(epfd, events, ARRAY_SIZE(events), p->queued > 0 ? 0 : -1);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return error_set(err, errno, "proxy: epoll_wait");
        }
        for (int i = 0; i < n; i++) {
            uint64_t token = events[i].data.u64;
            if (token & TOKEN_TIMER) {
                uint64_t ticks;
                ssize_t r = read(timer, &ticks, sizeof(ticks));
                (void)r;
                sweep_timeouts(p);
            } else if (token & TOKEN_RESOLVER) {
                resolver_results(p);
            } else if (token & TOKEN_REPORT) {
                supervisor_control(p);
            } else if (token & TOKEN_LISTENER) {
                accept_on(p, (size_t)(token & 0xffff));
            } else {
                struct conn *c = &p->conns[token >> 1];
                int side = (int)(token & 1);
                /* A connection closed earlier in this batch may already
                 * hold a new client: its fds differ, epoll drops the
                 * stale events with the closed fds. */
                if (c->state != CONN_FREE)
                    conn_event(p, c, side, events[i].events);
            }
        }
        for (size_t i = 0; i < NET_MAX_CONNECTIONS && p->queued > 0; i++) {
            struct conn *c = &p->conns[i];
            if (!c->queued)
                continue;
            c->queued = false;
            p->queued--;
            relay_pump(p, c);
        }
        for (size_t i = 0; i < NET_MAX_CONNECTIONS; i++)
            p->conns[i].closed_in_batch = false;
    }
}
