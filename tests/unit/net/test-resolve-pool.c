/* Unit tests for the proxy's resolver threads: results come back tagged,
 * errors say what was not found, a cancelled lookup never reports, and a
 * full job table refuses instead of growing, and giving up on a hanging
 * lookup frees its worker. Names come from hosts files written here; a
 * FIFO with no writer stands in for a DNS server that does not answer. */
#include "net/resolve-pool.h"
#include "tap.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static char dir[] = "/tmp/cordon-test-resolve.XXXXXX";

/* Waits up to TIMEOUT_MS for the next result. */
static bool next_result(struct resolve_pool *pool, struct resolve_result *r, int timeout_ms)
{
    for (;;) {
        if (resolve_pool_next(pool, r))
            return true;
        struct pollfd pfd = {.fd = resolve_pool_fd(pool), .events = POLLIN};
        if (poll(&pfd, 1, timeout_ms) <= 0)
            return false;
    }
}

static void test_results(void)
{
    char hosts[128];
    snprintf(hosts, sizeof(hosts), "%s/hosts", dir);
    FILE *f = fopen(hosts, "we");
    fputs("# test\n192.0.2.7 a.test other.test\n2001:db8::1 a.test\n", f);
    fclose(f);
    struct resolve_pool *pool = NULL;
    struct cordon_error err = {0};
    ok(resolve_pool_start(hosts, &pool, &err) == 0, "pool starts: %s", err.message);
    ok(resolve_pool_submit(pool, 1, "a.test", &err) == 0, "submit a name");
    ok(resolve_pool_submit(pool, 2, "missing.test", &err) == 0, "submit an unknown name");
    ok(resolve_pool_submit(pool, 3, "gone.test", &err) == 0, "submit one to cancel");
    resolve_pool_cancel(pool, 3);
    ok(resolve_pool_submit(pool, 4, "198.51.100.1", &err) == 0, "submit an address literal");
    bool seen[5] = {0};
    struct resolve_result r;
    for (int i = 0; i < 3 && next_result(pool, &r, 5000); i++) {
        if (r.tag >= 5 || seen[r.tag])
            break;
        seen[r.tag] = true;
        char a[64] = "", b[64] = "";
        if (r.count > 0)
            allow_addr_format(&r.addrs[0], a, sizeof(a));
        if (r.count > 1)
            allow_addr_format(&r.addrs[1], b, sizeof(b));
        if (r.tag == 1) {
            is_int(r.count, 2, "a.test: two addresses");
            is_str(a, "192.0.2.7", "... the IPv4 one first (file order)");
            is_str(b, "2001:db8::1", "... then the IPv6 one");
        } else if (r.tag == 2) {
            ok(strstr(r.err.message, "missing.test: not found in") != NULL,
               "an unknown name says where it was looked for: %s", r.err.message);
        } else if (r.tag == 4) {
            ok(r.count == 1 && strcmp(a, "198.51.100.1") == 0, "a literal is its own address");
        }
    }
    ok(seen[1] && seen[2] && seen[4], "every lookup reported");
    ok(!next_result(pool, &r, 300), "the cancelled lookup never reports");
    resolve_pool_stop(pool);
}

/* A FIFO with no writer as the hosts file: opening it blocks, like
 * getaddrinfo waiting on a DNS server that does not answer. Each open of a
 * writer lets the waiting workers in, and its close gives them EOF (not
 * found). */
static void release(const char *fifo)
{
    int w = open(fifo, O_WRONLY | O_NONBLOCK | O_CLOEXEC);
    if (w >= 0)
        close(w);
}

static void test_full_table(const char *fifo)
{
    struct resolve_pool *pool = NULL;
    struct cordon_error err = {0};
    ok(resolve_pool_start(fifo, &pool, &err) == 0, "pool starts: %s", err.message);
    int accepted = 0;
    for (uint64_t i = 0; i < RESOLVE_POOL_JOBS; i++)
        accepted += resolve_pool_submit(pool, i, "hang.test", &err) == 0;
    is_int(accepted, RESOLVE_POOL_JOBS, "the table takes %d lookups", RESOLVE_POOL_JOBS);
    err = (struct cordon_error){0};
    ok(resolve_pool_submit(pool, 9999, "one-more.test", &err) < 0 && err.errnum == EAGAIN &&
           strstr(err.message, "too many lookups in flight"),
       "one more is refused, not queued: %s", err.message);
    struct resolve_result r;
    ok(!next_result(pool, &r, 200), "nothing finished while the resolver hangs");
    int done = 0;
    struct timespec start, now;
    clock_gettime(CLOCK_MONOTONIC, &start);
    do {
        release(fifo);
        while (next_result(pool, &r, 10))
            done += strstr(r.err.message, "hang.test: not found") != NULL;
        clock_gettime(CLOCK_MONOTONIC, &now);
    } while (done < RESOLVE_POOL_JOBS && now.tv_sec - start.tv_sec < 20);
    is_int(done, RESOLVE_POOL_JOBS, "once the resolver answers, every lookup reports");
    ok(resolve_pool_submit(pool, 10000, "again.test", &err) == 0, "the table has room again");
    resolve_pool_stop(pool); /* kills the worker still waiting on the FIFO */
}

/* This process's children, as /proc lists them ("" if it cannot). */
static void children(char *out, size_t size)
{
    char path[64];
    snprintf(path, sizeof(path), "/proc/self/task/%d/children", (int)getpid());
    out[0] = '\0';
    FILE *f = fopen(path, "re");
    if (!f)
        return;
    if (!fgets(out, (int)size, f))
        out[0] = '\0';
    fclose(f);
}

static void test_cancel_running(const char *fifo)
{
    struct resolve_pool *pool = NULL;
    struct cordon_error err = {0};
    ok(resolve_pool_start(fifo, &pool, &err) == 0, "pool starts: %s", err.message);
    for (uint64_t tag = 1; tag <= RESOLVE_POOL_WORKERS + 1; tag++)
        resolve_pool_submit(pool, tag, "hang.test", &err);
    /* Every worker hangs; the last lookup waits for one of them. Giving
     * up on the hanging ones replaces their workers, and the waiting
     * lookup runs. */
    char before[256], after[256];
    children(before, sizeof(before));
    for (uint64_t tag = 1; tag <= RESOLVE_POOL_WORKERS; tag++)
        resolve_pool_cancel(pool, tag);
    children(after, sizeof(after));
    int kept = 0, old_count = 0;
    char copy[256], *save = NULL;
    snprintf(copy, sizeof(copy), "%s", before);
    for (char *pid = strtok_r(copy, " \n", &save); pid; pid = strtok_r(NULL, " \n", &save)) {
        char word[32];
        snprintf(word, sizeof(word), " %s ", pid);
        char padded[260];
        snprintf(padded, sizeof(padded), " %s", after);
        kept += strstr(padded, word) != NULL;
        old_count++;
    }
    ok(old_count == RESOLVE_POOL_WORKERS && kept == 0 && after[0],
       "the hanging workers are gone, a new one runs the waiting lookup (%s-> %s)", before, after);
    uint64_t got = 0;
    int reports = 0;
    struct resolve_result r;
    for (int i = 0; i < 100 && reports == 0; i++) {
        release(fifo);
        while (next_result(pool, &r, 20)) {
            got = r.tag;
            reports++;
        }
    }
    is_int(reports, 1, "one report after cancelling the running lookups");
    is_int(got, RESOLVE_POOL_WORKERS + 1, "... for the lookup that was waiting");
    resolve_pool_stop(pool);
}

int main(void)
{
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    test_results();
    char fifo[128];
    snprintf(fifo, sizeof(fifo), "%s/fifo", dir);
    ok(mkfifo(fifo, 0600) == 0, "a FIFO as the hosts file");
    test_full_table(fifo);
    test_cancel_running(fifo);
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    if (system(cmd) != 0)
        tap_diag("could not remove %s", dir);
    return tap_done();
}
