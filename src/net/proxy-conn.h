/* The allowlist proxy's connection table, shared by the files of its
 * event loop (proxy.c, and proxy-decide.c, proxy-tunnel.c, proxy-relay.c,
 * proxy-publish.c, proxy-report.c): the connection states, the two bounded
 * buffers and relay pipes of each connection, and the steps one file hands
 * a connection to another with. Internal to src/net/; the public interface
 * is proxy.h. Host context: the proxy process, one thread (the event loop);
 * the bytes in the buffers are the sandbox's. */
#pragma once

#include "net/denial.h"
#include "net/proxy-parse.h"
#include "net/proxy.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/types.h>
#include <time.h>

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
    size_t slots; /* conns[0, slots) have been taken at least once; the rest are zero */
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

static inline size_t buffer_used(const struct buffer *b)
{
    return b->end - b->start;
}

static inline size_t buffer_room(struct buffer *b)
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

static inline void buffer_put(struct buffer *b, const void *data, size_t len)
{
    if (len > buffer_room(b))
        len = buffer_room(b);
    memcpy(b->data + b->end, data, len);
    b->end += len;
}

static inline void buffer_drop(struct buffer *b, size_t len)
{
    b->start += len < buffer_used(b) ? len : buffer_used(b);
}

static inline size_t flow_pending(struct buffer *b, const struct relay_pipe *pp)
{
    return buffer_used(b) + pp->fill;
}

static inline size_t flow_room(struct buffer *b, const struct relay_pipe *pp)
{
    if (pp->r >= 0 && buffer_used(b) == 0)
        return pp->size - pp->fill;
    return buffer_room(b);
}

static inline uint64_t conn_token(const struct proxy *p, const struct conn *c, int side)
{
    return (uint64_t)(c - p->conns) << 1 | (uint64_t)side;
}

/* proxy.c: the loop and the connection table. */
void conn_close(struct proxy *p, struct conn *c);
void conn_update(struct proxy *p, struct conn *c);
void proxy_epoll_set(struct proxy *p, int fd, uint32_t *registered, uint32_t want, uint64_t token);

/* proxy-report.c: the audit logs, refusal reports and warnings; the
 * supervisor's control messages. */
void proxy_audit(struct proxy *p, struct conn *c, const char *address, bool allowed,
                 const char *reason);
void proxy_supervisor_control(struct proxy *p);

/* proxy-decide.c: reading the request, the allowlist decision, the
 * connect to the destination. */
void conn_parse(struct proxy *p, struct conn *c);
void conn_refuse(struct conn *c, int http_status, int socks_code, const char *reason);
void conn_connect_next(struct proxy *p, struct conn *c);
void resolver_results(struct proxy *p);

/* proxy-tunnel.c: the connection is made (through the upstream proxy,
 * handed to TLS interception, or the request rewritten for relaying). */
void conn_established(struct proxy *p, struct conn *c);
void upstream_read(struct proxy *p, struct conn *c);

/* proxy-relay.c: moving bytes between the two sockets. */
ssize_t buffer_read_into(int fd, struct buffer *b, size_t max);
ssize_t flow_write(int fd, struct buffer *b, struct relay_pipe *pp);
void relay_start(struct proxy *p, struct conn *c);
void relay_pump(struct proxy *p, struct conn *c);
void relay_event(struct proxy *p, struct conn *c, int side, uint32_t events);

/* proxy-publish.c: published ports and host services. */
void publish_start(struct proxy *p, struct conn *c, size_t index);
bool publish_retry_v6(struct proxy *p, struct conn *c);
void publish_failed(struct proxy *p, struct conn *c, int soerr);
