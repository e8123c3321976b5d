/* Name resolution off the proxy's event loop: a few threads run the
 * blocking net_resolve() (getaddrinfo or the hosts file) so that one slow
 * DNS answer stalls only the connection that asked. Jobs and results go
 * through a bounded table; a result is announced on an eventfd that the
 * loop polls. The loop, not the pool, enforces the timeout per lookup (a
 * thread stuck in getaddrinfo cannot be interrupted; its result is dropped
 * when it comes). Host context (the proxy process). */
#pragma once

#include "net/net.h"
#include "net/resolve.h"

#include <stdbool.h>
#include <stdint.h>

#define RESOLVE_POOL_THREADS 4
/* Lookups queued or running at once; one per proxy connection at most,
 * plus the threads that may still be stuck on abandoned ones. */
#define RESOLVE_POOL_JOBS (NET_MAX_CONNECTIONS + RESOLVE_POOL_THREADS)

struct resolve_pool;

struct resolve_result {
    uint64_t tag; /* the caller's, from resolve_pool_submit */
    struct allow_addr addrs[RESOLVE_MAX];
    size_t count;
    struct cordon_error err; /* message empty: resolved */
};

/* Starts the threads; HOSTS_FILE as for net_resolve (borrowed). */
int resolve_pool_start(const char *hosts_file, struct resolve_pool **out, struct cordon_error *err);
/* Readable (eventfd) when results wait for resolve_pool_next. */
int resolve_pool_fd(const struct resolve_pool *pool);
/* Queues a lookup of HOST; fails (EAGAIN) when the table is full. */
int resolve_pool_submit(struct resolve_pool *pool, uint64_t tag, const char *host,
                        struct cordon_error *err);
/* Forgets the lookup TAG: a queued one never runs, a running one's result
 * is dropped. */
void resolve_pool_cancel(struct resolve_pool *pool, uint64_t tag);
/* Stops the threads, waiting for running lookups to return, and frees the
 * pool (tests; the proxy exits instead, which ends stuck lookups too). */
void resolve_pool_stop(struct resolve_pool *pool);
/* Takes one finished lookup; false when none is left. Clears the eventfd
 * once it has returned false. */
bool resolve_pool_next(struct resolve_pool *pool, struct resolve_result *out);
