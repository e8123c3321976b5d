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
 * blocks. This file holds the loop and the connection table; the steps of
 * a connection are in proxy-decide.c, proxy-tunnel.c, proxy-relay.c,
 * proxy-publish.c and proxy-report.c (proxy-conn.h). */
#include "net/proxy.h"
#include "net/audit.h"
#include "net/proxy-conn.h"
#include "net/resolve-pool.h"
#include "util/cleanup.h"
#include "util/log.h"

#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <unistd.h>

static void conn_reset(struct conn *c, bool closed_in_batch)
{
    *c = (struct conn){.state = CONN_FREE,
                       .client = -1,
                       .server = -1,
                       .up_pipe = {-1, -1, 0, 0, 0, false},
                       .down_pipe = {-1, -1, 0, 0, 0, false},
                       .closed_in_batch = closed_in_batch};
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

void proxy_epoll_set(struct proxy *p, int fd, uint32_t *registered, uint32_t want, uint64_t token)
{
    if (fd < 0 || *registered == want)
        return;
    struct epoll_event ev = {.events = want, .data.u64 = token};
    epoll_ctl(p->epoll_fd, EPOLL_CTL_MOD, fd, &ev);
    *registered = want;
}

void conn_close(struct proxy *p, struct conn *c)
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
void conn_update(struct proxy *p, struct conn *c)
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
    proxy_epoll_set(p, c->client, &c->client_events, client, conn_token(p, c, 0));
    proxy_epoll_set(p, c->server, &c->server_events, server, conn_token(p, c, 1));
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
            ssize_t n = buffer_read_into(c->client, c->up, PROXY_HEAD_MAX - buffer_used(c->up));
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
        if (i >= p->slots)
            p->slots = i + 1;
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
    for (size_t i = 0; i < p->slots; i++) {
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
            proxy_audit(p, c, NULL, false, reason);
            conn_refuse(c, 504, SOCKS5_REPLY_HOST_UNREACHABLE, reason);
            conn_update(p, c);
            continue;
        }
        if (c->state == CONN_CONNECTING && c->kind != KIND_PUBLISH) {
            char reason[PROXY_HOST_MAX + 64];
            snprintf(reason, sizeof(reason), "connecting to %s:%d timed out", c->host, c->port);
            proxy_audit(p, c, NULL, false, reason);
        }
        conn_close(p, c);
    }
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
    /* The slots stay calloc's zeros (CONN_FREE) until conn_new takes one:
     * a refusing proxy that never sees a connection faults in none of
     * their pages. */
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
                proxy_supervisor_control(p);
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
        for (size_t i = 0; i < p->slots && p->queued > 0; i++) {
            struct conn *c = &p->conns[i];
            if (!c->queued)
                continue;
            c->queued = false;
            p->queued--;
            relay_pump(p, c);
        }
        for (size_t i = 0; i < p->slots; i++)
            p->conns[i].closed_in_batch = false;
    }
}
