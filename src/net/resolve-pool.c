/* The proxy's resolver threads (see resolve-pool.h). Host context: threads
 * of the proxy process; they touch only the job table (under the mutex)
 * and the eventfd, never the proxy's connections. */
#include "net/resolve-pool.h"
#include "net/proxy-parse.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

enum job_state { JOB_FREE, JOB_QUEUED, JOB_RUNNING, JOB_DONE };

struct job {
    enum job_state state;
    bool cancelled; /* running when cancelled: drop the result */
    uint64_t seq;   /* submission order: queued jobs run oldest first */
    char host[PROXY_HOST_MAX + 1];
    struct resolve_result result;
};

struct resolve_pool {
    const char *hosts_file;
    int event_fd;
    pthread_mutex_t lock;
    pthread_cond_t work;
    bool stopping;
    uint64_t next_seq;
    size_t queued;
    pthread_t threads[RESOLVE_POOL_THREADS];
    size_t thread_count;
    struct job jobs[RESOLVE_POOL_JOBS];
};

/* The oldest queued job, or NULL. Called with the lock held. */
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

static void *worker(void *arg)
{
    struct resolve_pool *pool = arg;
    pthread_mutex_lock(&pool->lock);
    for (;;) {
        while (!pool->stopping && pool->queued == 0)
            pthread_cond_wait(&pool->work, &pool->lock);
        if (pool->stopping)
            break;
        struct job *j = oldest_queued(pool);
        j->state = JOB_RUNNING;
        pool->queued--;
        char host[sizeof(j->host)];
        memcpy(host, j->host, sizeof(host));
        pthread_mutex_unlock(&pool->lock);

        struct resolve_result r = {0};
        net_resolve(host, pool->hosts_file, r.addrs, &r.count, &r.err);

        pthread_mutex_lock(&pool->lock);
        if (j->cancelled) {
            j->state = JOB_FREE;
            continue;
        }
        r.tag = j->result.tag;
        j->result = r;
        j->state = JOB_DONE;
        uint64_t one = 1;
        ssize_t w = write(pool->event_fd, &one, sizeof(one));
        (void)w; /* the counter cannot overflow at this rate */
    }
    pthread_mutex_unlock(&pool->lock);
    return NULL;
}

int resolve_pool_start(const char *hosts_file, struct resolve_pool **out, struct cordon_error *err)
{
    struct resolve_pool *pool = calloc(1, sizeof(*pool));
    if (!pool)
        return error_set(err, ENOMEM, "resolver");
    pool->hosts_file = hosts_file;
    pool->event_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (pool->event_fd < 0) {
        int e = errno;
        free(pool);
        return error_set(err, e, "resolver: eventfd");
    }
    pthread_mutex_init(&pool->lock, NULL);
    pthread_cond_init(&pool->work, NULL);
    /* Signals (SIGTERM at the end of the session) go to the loop's thread. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int r = 0;
    for (size_t i = 0; i < RESOLVE_POOL_THREADS && r == 0; i++) {
        r = pthread_create(&pool->threads[i], NULL, worker, pool);
        if (r == 0)
            pool->thread_count++;
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (pool->thread_count == 0) {
        resolve_pool_stop(pool);
        return error_set(err, r, "resolver: starting threads");
    }
    *out = pool;
    return 0;
}

int resolve_pool_fd(const struct resolve_pool *pool)
{
    return pool->event_fd;
}

int resolve_pool_submit(struct resolve_pool *pool, uint64_t tag, const char *host,
                        struct cordon_error *err)
{
    if (strlen(host) >= sizeof(pool->jobs[0].host))
        return error_set(err, ENAMETOOLONG, "resolving %s", host);
    pthread_mutex_lock(&pool->lock);
    struct job *j = NULL;
    for (size_t i = 0; i < RESOLVE_POOL_JOBS && !j; i++) {
        if (pool->jobs[i].state == JOB_FREE)
            j = &pool->jobs[i];
    }
    if (!j) {
        pthread_mutex_unlock(&pool->lock);
        return error_set(err, EAGAIN, "resolving %s: too many lookups in flight", host);
    }
    *j = (struct job){.state = JOB_QUEUED, .seq = pool->next_seq++};
    snprintf(j->host, sizeof(j->host), "%s", host);
    j->result.tag = tag;
    pool->queued++;
    pthread_cond_signal(&pool->work);
    pthread_mutex_unlock(&pool->lock);
    return 0;
}

void resolve_pool_cancel(struct resolve_pool *pool, uint64_t tag)
{
    pthread_mutex_lock(&pool->lock);
    for (size_t i = 0; i < RESOLVE_POOL_JOBS; i++) {
        struct job *j = &pool->jobs[i];
        if (j->state == JOB_FREE || j->cancelled || j->result.tag != tag)
            continue;
        if (j->state == JOB_QUEUED)
            pool->queued--;
        if (j->state == JOB_RUNNING)
            j->cancelled = true;
        else
            j->state = JOB_FREE;
    }
    pthread_mutex_unlock(&pool->lock);
}

bool resolve_pool_next(struct resolve_pool *pool, struct resolve_result *out)
{
    pthread_mutex_lock(&pool->lock);
    struct job *j = NULL;
    for (size_t i = 0; i < RESOLVE_POOL_JOBS && !j; i++) {
        if (pool->jobs[i].state == JOB_DONE)
            j = &pool->jobs[i];
    }
    if (j) {
        *out = j->result;
        j->state = JOB_FREE;
    } else {
        /* Drained: reset the eventfd under the lock, so that a result
         * finished after this point is announced again. */
        uint64_t count;
        ssize_t r = read(pool->event_fd, &count, sizeof(count));
        (void)r;
    }
    pthread_mutex_unlock(&pool->lock);
    return j != NULL;
}

void resolve_pool_stop(struct resolve_pool *pool)
{
    if (!pool)
        return;
    pthread_mutex_lock(&pool->lock);
    pool->stopping = true;
    pthread_cond_broadcast(&pool->work);
    pthread_mutex_unlock(&pool->lock);
    for (size_t i = 0; i < pool->thread_count; i++)
        pthread_join(pool->threads[i], NULL);
    pthread_cond_destroy(&pool->work);
    pthread_mutex_destroy(&pool->lock);
    close(pool->event_fd);
    free(pool);
}
