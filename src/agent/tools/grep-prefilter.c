/* The grep tool's parallel prefilter (grep.c): worker threads that read
 * walked files ahead of the search and skip those that cannot match.
 * Sandbox (cordon-agent) or host context. */
#define PCRE2_CODE_UNIT_WIDTH 8
#include "agent/tools/grep-internal.h"
#include "agent/tools/args.h"
#include "agent/tools/js.h"
#include "agent/tools/ignore.h"
#include "agent/tools/path.h"
#include "agent/tools/pin.h"
#include "agent/tools/registry.h"
#include "agent/tools/rxsyntax.h"
#include "agent/tools/truncate.h"
#include "agent/tools/walk.h"
#include "util/cleanup.h"
#include "util/fs.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <math.h>
#include <pcre2.h>
#include <pthread.h>
#include <sched.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <utf8proc.h>

/* The parallel prefilter (a walk of a directory with a pattern the block
 * search can take). The walk and every search that can report a match stay
 * on the calling thread, in the walk's order: output, limits and errors are
 * exactly those of the sequential search. Worker threads only read files
 * ahead of it and run the multi-line pattern over each whole file; a file
 * where it finds nothing has no matching line (block_search_safe), so the
 * calling thread skips it without opening it. Anything else (a match, a NUL,
 * an error, a file too large or not regular) is searched as before. */

#define PF_WINDOW     4096        /* files walked ahead of the search */
#define PF_FILE_MAX   (4u << 20)  /* larger files are left to the search */
#define PF_BATCH      16          /* files a worker takes at once, at most */
#define PF_READ_FIRST (64u << 10) /* a worker's first buffer */
#define PF_HELD_MAX   (64u << 20) /* copies waiting for the search, at most */

/* PF_COPY: read whole, no NUL, a possible match: the worker's copy goes to
 * the search (search_buffer), which neither reopens nor rereads it. */
enum pf_state { PF_PENDING, PF_RUNNING, PF_CLEAN, PF_SEARCH, PF_COPY, PF_DIR_ERROR };

struct pf_job {
    char *abs;     /* the path as the walk gave it */
    int dir_errno; /* PF_DIR_ERROR: a directory the walk could not open */
    size_t rel_at; /* offset of the path relative to the walk root in abs */
    char *display;
    enum pf_state state;
    char *data; /* PF_COPY: the file's bytes */
    size_t len;
};

static struct pf_job *pf_job(struct prefilter *pf, size_t i)
{
    return &pf->jobs[i - pf->base];
}

/* Opens a walked file below the walk root: no symlink anywhere, as the walk
 * itself never follows one. */
static int pf_open(int root_fd, const char *rel)
{
    return fs_openat2(root_fd, rel, O_RDONLY | O_NONBLOCK | O_NOCTTY,
                      RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS);
}

/* Bytes roughly from the most to the least common in source code and
 * prose; a byte not listed is rarer than all of them. */
static const char common_bytes[] = " e\nt\tarisonlcdu_pm(),;.hf=g\"-b>/y*0w1:xv'{}k[]2<#3&+";

static size_t byte_rank(char c)
{
    const char *at = c ? strchr(common_bytes, c) : NULL;
    return at ? (size_t)(at - common_bytes) + 1 : sizeof(common_bytes);
}

/* The needle's byte least likely in text (the last of the rarest). */
size_t rare_index(const char *needle, size_t len)
{
    size_t best = 0, best_rank = 0;
    for (size_t i = 0; i < len; i++) {
        size_t rank = byte_rank(needle[i]);
        if (rank >= best_rank) {
            best = i;
            best_rank = rank;
        }
    }
    return best;
}

/* A second position for the pair search: the rarest byte other than the
 * first's (a different byte where there is one), or first itself for a
 * one-byte needle (no pair). */
size_t rare_index2(const char *needle, size_t len, size_t first)
{
    size_t best = first;
    size_t best_rank = 0;
    for (int other_byte = 1; other_byte >= 0; other_byte--) {
        for (size_t i = 0; i < len; i++) {
            if (i == first || (other_byte && needle[i] == needle[first]))
                continue;
            size_t rank = byte_rank(needle[i]);
            if (rank >= best_rank) {
                best = i;
                best_rank = rank;
            }
        }
        if (best_rank)
            break;
    }
    return best;
}

#ifdef __SSE2__
/* The needle's two rare bytes compared at their offsets 16 starting
 * places at a time; memcmp only where both agree. */
static const char *pair_find(const char *hay, size_t len, const char *needle, size_t nlen,
                             size_t i1, size_t i2)
{
    const __m128i b1 = _mm_set1_epi8(needle[i1]), b2 = _mm_set1_epi8(needle[i2]);
    const size_t last = len - nlen; /* the last starting place */
    size_t p = 0, misses = 0;
    /* p + 15 <= last: both loads end before hay + len (i1, i2 < nlen). */
    for (; last >= 15 && p <= last - 15; p += 16) {
        __m128i x = _mm_loadu_si128((const __m128i *)(const void *)(hay + p + i1));
        __m128i y = _mm_loadu_si128((const __m128i *)(const void *)(hay + p + i2));
        unsigned mask = (unsigned)_mm_movemask_epi8(
            _mm_and_si128(_mm_cmpeq_epi8(x, b1), _mm_cmpeq_epi8(y, b2)));
        while (mask) {
            size_t at = p + (size_t)__builtin_ctz(mask);
            if (memcmp(hay + at, needle, nlen) == 0)
                return hay + at;
            mask &= mask - 1;
            /* both bytes common here (a needle of one repeated byte):
             * memmem is linear whatever the subject */
            if (++misses > 64 && misses > at / 16)
                return memmem(hay + at + 1, len - at - 1, needle, nlen);
        }
    }
    for (; p <= last; p++)
        if (hay[p + i1] == needle[i1] && hay[p + i2] == needle[i2] &&
            memcmp(hay + p, needle, nlen) == 0)
            return hay + p;
    return NULL;
}
#endif

/* memmem for the prefilter and the search. With SSE2 (every x86-64) and a
 * needle of two bytes or more: the pair search on its two rarest bytes
 * (ripgrep's approach; `x` and `_` in "xstrdup_or_null" rule out nearly
 * every place in C where `x` alone would stop). Otherwise memchr on the
 * rare byte, and memmem for the rest of a subject where that byte turns
 * out common. */
const char *needle_find(const char *hay, size_t len, const char *needle, size_t nlen, size_t rare,
                        size_t rare2)
{
    if (nlen == 0 || len < nlen)
        return nlen == 0 ? hay : NULL;
#ifdef __SSE2__
    if (nlen >= 2 && rare2 != rare && rare < nlen && rare2 < nlen)
        return pair_find(hay, len, needle, nlen, rare, rare2);
#else
    (void)rare2;
#endif
    const unsigned char c = (unsigned char)needle[rare];
    const char *p = hay + rare;
    const char *last = hay + (len - nlen) + rare; /* the last place the rare byte may be */
    size_t misses = 0;
    while (p <= last) {
        const char *q = memchr(p, c, (size_t)(last - p) + 1);
        if (!q)
            return NULL;
        if (memcmp(q - rare, needle, nlen) == 0)
            return q - rare;
        p = q + 1;
        /* more than one false candidate per 256 bytes: memmem does better */
        if (++misses > 32 && misses > (size_t)(p - hay) / 256) {
            const char *from = p - rare;
            return memmem(from, (size_t)(hay + len - from), needle, nlen);
        }
    }
    return NULL;
}

/* PF_CLEAN when the whole file was read and holds no match and no NUL.
 * The walk listed it as a regular file; it is read to its end into the
 * worker's buffer (grown to PF_FILE_MAX at most) without an fstat: one
 * system call fewer a file. Whatever is not a plain readable file of at
 * most PF_FILE_MAX bytes by now (a FIFO swapped in answers EAGAIN) is left
 * to the search. */
static enum pf_state pf_check(struct prefilter *pf, const char *rel, char **buf, size_t *cap,
                              size_t *got, pcre2_match_data *md)
{
    _cleanup_close_ int fd = pf_open(pf->root_fd, rel);
    if (fd < 0)
        return PF_SEARCH;
    size_t len = 0;
    for (;;) {
        if (len == *cap) {
            if (*cap > PF_FILE_MAX)
                return PF_SEARCH;
            size_t grown = *cap ? *cap * 2 : PF_READ_FIRST;
            if (grown > PF_FILE_MAX + 1)
                grown = PF_FILE_MAX + 1;
            char *p = realloc(*buf, grown);
            if (!p)
                return PF_SEARCH;
            *buf = p;
            *cap = grown;
        }
        ssize_t n = read(fd, *buf + len, *cap - len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return PF_SEARCH;
        if (n == 0)
            break;
        len += (size_t)n;
    }
    /* Without the needle there is no match, binary or not (the search
     * would print nothing for it either way): one pass over the file. */
    if (pf->g->needle_len && !needle_find(*buf, len, pf->g->needle, pf->g->needle_len,
                                          pf->g->needle_rare, pf->g->needle_rare2))
        return PF_CLEAN;
    if (memchr(*buf, '\0', len))
        return PF_SEARCH;
    int rc = pcre2_match(pf->g->block_re, (PCRE2_SPTR)*buf, len, 0, 0, md, pf->g->mctx);
    if (rc == PCRE2_ERROR_NOMATCH)
        return PF_CLEAN;
    *got = len;
    return PF_COPY;
}

/* A copy of a worker's buffer for the search, its bytes counted against
 * PF_HELD_MAX before it is made (so no batch of workers goes over it);
 * false when there is no room or no memory. */
static bool pf_copy(struct prefilter *pf, const char *buf, size_t len, char **out)
{
    pthread_mutex_lock(&pf->mu);
    bool room = pf->held + len <= PF_HELD_MAX;
    if (room)
        pf->held += len;
    pthread_mutex_unlock(&pf->mu);
    *out = room ? malloc(len ? len : 1) : NULL;
    if (*out) {
        memcpy(*out, buf, len);
        return true;
    }
    if (room) {
        pthread_mutex_lock(&pf->mu);
        pf->held -= len;
        pthread_mutex_unlock(&pf->mu);
    }
    return false;
}

static void *pf_worker(void *arg)
{
    struct prefilter *pf = arg;
    pcre2_match_data *md = pcre2_match_data_create(1, NULL);
    char *buf = NULL;
    size_t cap = 0;
    size_t taken[PF_BATCH];
    const char *rel[PF_BATCH];
    enum pf_state done[PF_BATCH];
    char *copy[PF_BATCH];
    size_t copy_len[PF_BATCH];
    pthread_mutex_lock(&pf->mu);
    for (;;) {
        if (pf->next < pf->head)
            pf->next = pf->head;
        while (pf->next < pf->count && pf_job(pf, pf->next)->state != PF_PENDING)
            pf->next++;
        if (pf->next >= pf->count) {
            if (pf->closing)
                break;
            pf->idle++;
            pthread_cond_wait(&pf->work_cv, &pf->mu);
            pf->idle--;
            continue;
        }
        /* A share of what is queued, up to PF_BATCH: one lock and one
         * wake-up per batch, not per file, and work left for the others. */
        size_t share = (pf->count - pf->next) / (size_t)pf->planned;
        size_t n = 0, want = share < 1 ? 1 : share > PF_BATCH ? PF_BATCH : share;
        while (n < want && pf->next < pf->count) {
            struct pf_job *job = pf_job(pf, pf->next);
            if (job->state == PF_PENDING) {
                job->state = PF_RUNNING;
                taken[n] = pf->next;
                rel[n++] = job->abs + job->rel_at; /* not freed while running */
            }
            pf->next++;
        }
        pthread_mutex_unlock(&pf->mu);
        for (size_t k = 0; k < n; k++) {
            copy[k] = NULL;
            copy_len[k] = 0;
            done[k] = md ? pf_check(pf, rel[k], &buf, &cap, &copy_len[k], md) : PF_SEARCH;
            if (done[k] == PF_COPY && !pf_copy(pf, buf, copy_len[k], &copy[k]))
                done[k] = PF_SEARCH; /* over the bound or out of memory: reread */
        }
        pthread_mutex_lock(&pf->mu);
        for (size_t k = 0; k < n; k++) {
            struct pf_job *job = pf_job(pf, taken[k]);
            if (done[k] == PF_COPY) {
                job->data = copy[k];
                job->len = copy_len[k];
            }
            job->state = done[k];
        }
        if (pf->head_waiting)
            pthread_cond_signal(&pf->done_cv);
    }
    pthread_mutex_unlock(&pf->mu);
    free(buf);
    pcre2_match_data_free(md);
    return NULL;
}

/* Searches the job at the head (the calling thread). Returns what
 * search_opened returns. */
static int pf_search(struct prefilter *pf, struct pf_job *job)
{
    struct grep_state *g = pf->g;
    _cleanup_close_ int fd = pf_open(pf->root_fd, job->abs + job->rel_at);
    if (fd < 0) {
        record_error(g, job->abs, errno);
        return 0;
    }
    return search_opened(g, fd, job->abs, job->display, false);
}

/* Searches jobs at the head in order while they are decided; with wait,
 * until every job is done. The calling thread takes a job no worker has
 * started. Returns <0 (out of memory), 0, or 1 (stop: the limit). */
int pf_drain(struct prefilter *pf, bool wait)
{
    pthread_mutex_lock(&pf->mu);
    int ret = 0;
    if (wait && pf->idle)
        pthread_cond_broadcast(&pf->work_cv); /* the last, short batch */
    while (pf->head < pf->count) {
        struct pf_job *job = pf_job(pf, pf->head);
        bool behind = wait || pf->count - pf->head >= PF_WINDOW;
        if (job->state == PF_RUNNING || (job->state == PF_PENDING && !behind)) {
            if (!behind)
                break; /* walk on: the workers catch up */
            pf->head_waiting = true;
            pthread_cond_wait(&pf->done_cv, &pf->mu);
            pf->head_waiting = false;
            continue;
        }
        enum pf_state state = job->state; /* pending: searched here */
        struct pf_job taken = *job;
        *job = (struct pf_job){.state = PF_SEARCH};
        pf->head++;
        pf->held -= taken.len;
        pthread_mutex_unlock(&pf->mu);
        int r = 0;
        if (state == PF_DIR_ERROR)
            grep_dir_error(pf->g, taken.abs, taken.dir_errno);
        else if (state == PF_COPY)
            r = search_buffer(pf->g, taken.data, taken.len, taken.abs, taken.display);
        else if (state != PF_CLEAN)
            r = pf_search(pf, &taken);
        free(taken.data);
        free(taken.abs);
        free(taken.display);
        pthread_mutex_lock(&pf->mu);
        if (r != 0) {
            ret = r;
            break;
        }
    }
    pthread_mutex_unlock(&pf->mu);
    return ret;
}

/* Queues a walked file (e) or a directory error (path, dir_errno). */
int pf_push(struct prefilter *pf, const struct walk_entry *e, char *display, const char *path,
            int dir_errno)
{
    char *abs = strdup(e ? e->path : path);
    if (!abs) {
        free(display);
        return -1;
    }
    pthread_mutex_lock(&pf->mu);
    if (pf->head > PF_WINDOW && pf->head - pf->base >= (pf->count - pf->base) / 2) {
        /* Drop the searched jobs from the front. */
        memmove(pf->jobs, pf_job(pf, pf->head), (pf->count - pf->head) * sizeof(*pf->jobs));
        pf->base = pf->head;
    }
    if (pf->count - pf->base == pf->cap) {
        size_t cap = pf->cap ? pf->cap * 2 : 256;
        struct pf_job *p = realloc(pf->jobs, cap * sizeof(*p));
        if (!p) {
            pthread_mutex_unlock(&pf->mu);
            free(abs);
            free(display);
            return -1;
        }
        pf->jobs = p;
        pf->cap = cap;
    }
    pf->jobs[pf->count - pf->base] = (struct pf_job){
        .abs = abs,
        .dir_errno = dir_errno,
        .rel_at = e ? (size_t)(e->rel - e->path) : 0,
        .display = display,
        .state = e ? PF_PENDING : PF_DIR_ERROR,
    };
    pf->count++;
    /* An idle worker is woken once a batch is queued (or by pf_drain at the
     * end), not for every file. */
    if (pf->idle && pf->count - pf->next >= PF_BATCH)
        pthread_cond_signal(&pf->work_cv);
    pthread_mutex_unlock(&pf->mu);
    return 0;
}

static int pf_cpus(void)
{
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof(set), &set) < 0)
        return 1;
    return CPU_COUNT(&set);
}

/* Starts the workers; false when there would be none (one CPU, no threads
 * allowed by the limits): the caller searches sequentially. */
bool pf_start(struct prefilter *pf, struct grep_state *g, int root_fd)
{
    int want = pf_cpus();
    if (want < 2 || !g->block_re)
        return false;
    if (want > PF_WORKERS_MAX)
        want = PF_WORKERS_MAX;
    *pf = (struct prefilter){.g = g, .root_fd = root_fd, .planned = want};
    pthread_mutex_init(&pf->mu, NULL);
    pthread_cond_init(&pf->work_cv, NULL);
    pthread_cond_init(&pf->done_cv, NULL);
    while (pf->nthreads < want &&
           pthread_create(&pf->threads[pf->nthreads], NULL, pf_worker, pf) == 0)
        pf->nthreads++;
    if (pf->nthreads > 0)
        return true;
    pthread_cond_destroy(&pf->done_cv);
    pthread_cond_destroy(&pf->work_cv);
    pthread_mutex_destroy(&pf->mu);
    return false;
}

void pf_stop(struct prefilter *pf)
{
    pthread_mutex_lock(&pf->mu);
    pf->closing = true;
    pf->head = pf->count; /* workers start nothing more */
    pthread_cond_broadcast(&pf->work_cv);
    pthread_mutex_unlock(&pf->mu);
    for (int i = 0; i < pf->nthreads; i++)
        pthread_join(pf->threads[i], NULL);
    for (size_t i = pf->base; i < pf->count; i++) {
        free(pf_job(pf, i)->abs);
        free(pf_job(pf, i)->display);
        free(pf_job(pf, i)->data);
    }
    free(pf->jobs);
    pthread_cond_destroy(&pf->done_cv);
    pthread_cond_destroy(&pf->work_cv);
    pthread_mutex_destroy(&pf->mu);
}
