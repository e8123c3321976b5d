/* Name resolution off the proxy's event loop: a few worker processes run
 * the blocking net_resolve() (getaddrinfo or the hosts file), one lookup
 * each at a time, so that one slow DNS answer stalls only the connection
 * that asked. Processes rather than threads (STYLE.md): the proxy stays
 * single-threaded, and a lookup that is given up on is ended by killing
 * its worker, which is replaced at once. Lookups wait in a bounded table;
 * the loop polls one fd for results and enforces the timeout per lookup.
 * Host context: the proxy process and its resolver children. */
#pragma once

#include "net/net.h"
#include "net/resolve.h"

#include <stdbool.h>
#include <stdint.h>

#define RESOLVE_POOL_WORKERS 4
/* Lookups queued or running at once: one per proxy connection at most. */
#define RESOLVE_POOL_JOBS NET_MAX_CONNECTIONS

struct resolve_pool;

struct resolve_result {
    uint64_t tag; /* the caller's, from resolve_pool_submit */
    struct allow_addr addrs[RESOLVE_MAX];
    size_t count;
    struct cordon_error err; /* message empty: resolved */
};

/* Forks the workers; HOSTS_FILE as for net_resolve (borrowed; the workers
 * get a copy of the memory it is in). */
int resolve_pool_start(const char *hosts_file, struct resolve_pool **out, struct cordon_error *err);
/* Readable when results wait for resolve_pool_next (an epoll fd over the
 * workers' sockets). */
int resolve_pool_fd(const struct resolve_pool *pool);
/* Queues a lookup of HOST; fails (EAGAIN) when the table is full. */
int resolve_pool_submit(struct resolve_pool *pool, uint64_t tag, const char *host,
                        struct cordon_error *err);
/* Forgets the lookup TAG: a queued one never runs; a running one's worker
 * is killed and replaced. */
void resolve_pool_cancel(struct resolve_pool *pool, uint64_t tag);
/* Takes one finished lookup; false when none is ready. */
bool resolve_pool_next(struct resolve_pool *pool, struct resolve_result *out);
/* Kills the workers and frees the pool; NULL is fine. */
void resolve_pool_stop(struct resolve_pool *pool);
