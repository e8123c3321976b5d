/* The proxy's resolver workers (see resolve-pool.h). The table and the
 * dispatch run in the proxy process (host context, single-threaded); each
 * worker is a child of the proxy that holds only its socket, answers one
 * lookup at a time and dies with the proxy. Requests and results travel as
 * whole SOCK_SEQPACKET messages. */
#include "net/resolve-pool.h"
#include "net/proxy-parse.h"
#include "util/cleanup.h"
#include "util/proc.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

enum job_state { JOB_FREE, JOB_QUEUED, JOB_RUNNING };

struct resolve_request {
    uint64_t tag;
    char host[PROXY_HOST_MAX + 1];
};

struct job {
    enum job_state state;
    uint64_t seq; /* submission order: queued jobs run oldest first */
    struct resolve_request request;
};

struct worker {
    pid_t pid; /* -1: not running (a fork failed); respawned on demand */
    int sock;
    struct job *job; /* running on this worker, or NULL when idle */
};

struct resolve_pool {
    const char *hosts_file;
    int epoll_fd;
    uint64_t next_seq;
    struct worker workers[RESOLVE_POOL_WORKERS];
    struct job jobs[RESOLVE_POOL_JOBS];
};

/* Worker process: answers requests until the proxy closes the socket or
 * dies. Never returns. */
static void worker_main(int sock, const char *hosts_file)
{
    for (;;) {
        struct resolve_request req;
        ssize_t n = recv(sock, &req, sizeof(req), 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n != (ssize_t)sizeof(req))
            _exit(0);
        req.host[sizeof(req.host) - 1] = '\0';
        struct resolve_result r = {.tag = req.tag};
        net_resolve(req.host, hosts_file, r.addrs, &r.count, &r.err);
        if (send(sock, &r, sizeof(r), MSG_NOSIGNAL) != (ssize_t)sizeof(r))
            _exit(0);
    }
}

static int worker_spawn(struct resolve_pool *pool, struct worker *w, struct cordon_error *err)
{
    int sv[2];
    pid_t pid = proc_fork_tied(sv, SOCK_SEQPACKET, "resolver", err);
    if (pid < 0)
        return -1;
    if (pid == 0) {
        /* Only the socket (and stderr) stays: the proxy's connections,
         * listeners and audit log are not the worker's business. */
        signal(SIGTERM, SIG_DFL);
        if (dup2(sv[1], 3) < 0)
            _exit(0);
        close_range(4, ~0U, 0);
        worker_main(3, pool->hosts_file);
    }
    close(sv[1]);
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = w};
    if (epoll_ctl(pool->epoll_fd, EPOLL_CTL_ADD, sv[0], &ev) < 0) {
        int e = errno;
        close(sv[0]);
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
        return error_set(err, e, "resolver: epoll_ctl");
    }
    *w = (struct worker){.pid = pid, .sock = sv[0], .job = NULL};
    return 0;
}

/* Ends a worker, whatever it is doing (a lookup that may never return). */
static void worker_kill(struct resolve_pool *pool, struct worker *w)
{
    if (w->pid <= 0)
        return;
    epoll_ctl(pool->epoll_fd, EPOLL_CTL_DEL, w->sock, NULL);
    close(w->sock);
    kill(w->pid, SIGKILL);
    while (waitpid(w->pid, NULL, 0) < 0 && errno == EINTR)
        ;
    *w = (struct worker){.pid = -1, .sock = -1, .job = NULL};
}

/* The oldest queued job, or NULL. */
static struct job *oldest_queued(struct resolve_pool *pool)
{
    struct job *best = NULL;
    for (size_t i = 0; i < RESOLVE_POOL_JOBS; i++) {
        struct job *j = &pool->jobs[i];
        if (j->state == JOB_QUEUED && (!best || j->seq < best->seq))
            best = j;
    }
    return best;
}

/* Hands queued jobs to idle workers, starting workers that are missing. */
static void dispatch(struct resolve_pool *pool)
{
    for (size_t i = 0; i < RESOLVE_POOL_WORKERS; i++) {
        struct worker *w = &pool->workers[i];
        if (w->job)
            continue;
        struct job *j = oldest_queued(pool);
        if (!j)
            return;
        struct cordon_error err = {0};
        if (w->pid <= 0 && worker_spawn(pool, w, &err) < 0)
            continue; /* the job waits; the proxy's timeout ends it */
        if (send(w->sock, &j->request, sizeof(j->request), MSG_NOSIGNAL | MSG_DONTWAIT) !=
            (ssize_t)sizeof(j->request)) {
            worker_kill(pool, w);
            continue;
        }
        j->state = JOB_RUNNING;
        w->job = j;
    }
}

int resolve_pool_start(const char *hosts_file, struct resolve_pool **out, struct cordon_error *err)
{
    struct resolve_pool *pool = calloc(1, sizeof(*pool));
    if (!pool)
        return error_set(err, ENOMEM, "resolver");
    pool->hosts_file = hosts_file;
    for (size_t i = 0; i < RESOLVE_POOL_WORKERS; i++)
        pool->workers[i] = (struct worker){.pid = -1, .sock = -1, .job = NULL};
    pool->epoll_fd = epoll_create1(EPOLL_CLOEXEC);
    if (pool->epoll_fd < 0) {
        int e = errno;
        free(pool);
        return error_set(err, e, "resolver: epoll_create1");
    }
    for (size_t i = 0; i < RESOLVE_POOL_WORKERS; i++) {
        if (worker_spawn(pool, &pool->workers[i], err) < 0) {
            resolve_pool_stop(pool);
            return -1;
        }
    }
    *out = pool;
    return 0;
}

int resolve_pool_fd(const struct resolve_pool *pool)
{
    return pool->epoll_fd;
}

int resolve_pool_submit(struct resolve_pool *pool, uint64_t tag, const char *host,
                        struct cordon_error *err)
{
    if (strlen(host) >= sizeof(pool->jobs[0].request.host))
        return error_set(err, ENAMETOOLONG, "resolving %s", host);
    struct job *j = NULL;
    for (size_t i = 0; i < RESOLVE_POOL_JOBS && !j; i++) {
        if (pool->jobs[i].state == JOB_FREE)
            j = &pool->jobs[i];
    }
    if (!j)
        return error_set(err, EAGAIN, "resolving %s: too many lookups in flight", host);
    *j = (struct job){.state = JOB_QUEUED, .seq = pool->next_seq++};
    j->request.tag = tag;
    snprintf(j->request.host, sizeof(j->request.host), "%s", host);
    dispatch(pool);
    return 0;
}

void resolve_pool_cancel(struct resolve_pool *pool, uint64_t tag)
{
    for (size_t i = 0; i < RESOLVE_POOL_JOBS; i++) {
        struct job *j = &pool->jobs[i];
        if (j->state == JOB_FREE || j->request.tag != tag)
            continue;
        if (j->state == JOB_RUNNING) {
            for (size_t k = 0; k < RESOLVE_POOL_WORKERS; k++) {
                if (pool->workers[k].job == j)
                    worker_kill(pool, &pool->workers[k]);
            }
        }
        j->state = JOB_FREE;
    }
    dispatch(pool);
}

bool resolve_pool_next(struct resolve_pool *pool, struct resolve_result *out)
{
    for (size_t i = 0; i < RESOLVE_POOL_WORKERS; i++) {
        struct worker *w = &pool->workers[i];
        if (w->pid <= 0)
            continue;
        ssize_t n = recv(w->sock, out, sizeof(*out), MSG_DONTWAIT);
        if (n < 0 && (errno == EAGAIN || errno == EINTR))
            continue;
        struct job *j = w->job;
        if (n == (ssize_t)sizeof(*out) && j && out->tag == j->request.tag) {
            j->state = JOB_FREE;
            w->job = NULL;
            dispatch(pool);
            return true;
        }
        /* EOF, a short message or an answer nobody asked for: the worker
         * is gone or confused. Its lookup fails; a new worker takes over. */
        worker_kill(pool, w);
        if (j) {
            *out = (struct resolve_result){.tag = j->request.tag};
            error_set(&out->err, 0, "resolving %s: the resolver process ended", j->request.host);
            j->state = JOB_FREE;
        }
        dispatch(pool);
        if (j)
            return true;
    }
    return false;
}

void resolve_pool_stop(struct resolve_pool *pool)
{
    if (!pool)
        return;
    for (size_t i = 0; i < RESOLVE_POOL_WORKERS; i++)
        worker_kill(pool, &pool->workers[i]);
    if (pool->epoll_fd >= 0)
        close(pool->epoll_fd);
    free(pool);
}
