/* A proxy connection whose destination is connected (see proxy-conn.h):
 * the CONNECT through network.upstream_proxy and its answer, the hand-over
 * of intercepted tunnels to tls.c, and the answer to the client (or the
 * plain HTTP head rewritten, secrets in) before relaying starts. Host
 * context: the proxy process. */
#include "net/proxy-conn.h"
#include "net/secrets.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

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
        proxy_audit(p, c, NULL, false, reason);
        conn_refuse(c, 502, SOCKS5_REPLY_GENERAL_FAILURE, reason);
        return;
    }
    c->upstream_len = 0;
    c->state = CONN_UPSTREAM;
    c->since = time(NULL);
}

/* The upstream proxy's answer: 2xx opens the tunnel, anything else is
 * refused with its status line. */
void upstream_read(struct proxy *p, struct conn *c)
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
    proxy_epoll_set(p, c->server, &c->server_events, 0, conn_token(p, c, 1));
    conn_established(p, c);
    return;
refuse:
    epoll_ctl(p->epoll_fd, EPOLL_CTL_DEL, c->server, NULL);
    close(c->server);
    c->server = -1;
    c->server_events = 0;
    proxy_audit(p, c, NULL, false, reason);
    conn_refuse(c, 502, SOCKS5_REPLY_GENERAL_FAILURE, reason);
}

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
        proxy_audit(p, c, NULL, false, reason);
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
        proxy_audit(p, c, NULL, false, err.message);
        conn_close(p, c);
        return;
    }
    c->client = c->server = -1;
    conn_close(p, c);
}

/* Without pipes (fd limit) the buffers relay; slower, same result. */
static void conn_open_pipes(struct conn *c)
{
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
}

/* Replaces the proxy-form head with the origin-form one (the secrets'
 * values in); the body bytes already read follow it. -1: the connection
 * is to be closed. */
static int conn_rewrite_head(struct proxy *p, struct conn *c)
{
    struct http_request *req = malloc(sizeof(*req));
    if (!req || http_parse_request(c->up->data + c->up->start, buffer_used(c->up), req) !=
                    PROXY_PARSE_DONE) {
        free(req);
        return -1;
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
                          req->rewritten, req->rewritten_length, filled, NET_BUFFER_SIZE - rest, &n,
                          reason, sizeof(reason)) > SECRETS_SUBST) {
            free(filled);
            free(req);
            return -1;
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
    return 0;
}

/* The connect finished: answer the client and start relaying. */
void conn_established(struct proxy *p, struct conn *c)
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
    conn_open_pipes(c);
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
    case KIND_HTTP:
        if (conn_rewrite_head(p, c) < 0) {
            conn_close(p, c);
            return;
        }
        break;
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
