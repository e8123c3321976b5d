/* Ending everything the host agent started. In the sandbox the agent is
 * PID 1 of its own PID namespace, so leaving ends every process in it; on
 * the host there is no such boundary, and a bash call's `sleep 1000 &` or
 * `nohup server &` would outlive the session. As a child subreaper the host
 * agent inherits those orphans, so at the end they are all its descendants:
 * found by walking /proc's parent links and killed. Host context, the
 * user's own process (cordon-agent serve --host), at teardown. */
#include "agent/reap.h"
#include "util/cleanup.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

struct proc_entry {
    pid_t pid;
    pid_t ppid;
    bool zombie;
    bool descendant;
};

int reap_become_subreaper(struct cordon_error *err)
{
    if (prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) < 0)
        return error_set(err, errno, "cannot become a child subreaper");
    return 0;
}

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* "pid (comm) S ppid ...": comm may hold spaces and parentheses, so the
 * fields after it are found from the last ')'. */
static int read_stat(int proc_fd, const char *name, struct proc_entry *e)
{
    char path[64];
    snprintf(path, sizeof(path), "%s/stat", name);
    _cleanup_close_ int fd = openat(proc_fd, path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    char buf[512];
    ssize_t n = read(fd, buf, sizeof(buf) - 1);
    if (n <= 0)
        return -1;
    buf[n] = '\0';
    char *close_paren = strrchr(buf, ')');
    char state;
    int ppid;
    if (!close_paren || sscanf(close_paren + 1, " %c %d", &state, &ppid) != 2)
        return -1;
    e->pid = (pid_t)atoi(name);
    e->ppid = (pid_t)ppid;
    e->zombie = state == 'Z' || state == 'X';
    e->descendant = false;
    return 0;
}

/* Every process on the system, with its parent. */
static int scan_proc(struct proc_entry **out, size_t *count, struct cordon_error *err)
{
    _cleanup_closedir_ DIR *dir = opendir("/proc");
    if (!dir)
        return error_set(err, errno, "cannot read /proc");
    int proc_fd = dirfd(dir);
    struct proc_entry *list = NULL;
    size_t n = 0, cap = 0;
    struct dirent *d;
    while ((d = readdir(dir))) {
        if (!isdigit((unsigned char)d->d_name[0]))
            continue;
        if (n == cap) {
            size_t ncap = cap ? cap * 2 : 256;
            struct proc_entry *grown = realloc(list, ncap * sizeof(*list));
            if (!grown) {
                free(list);
                return error_set(err, ENOMEM, "scanning /proc");
            }
            list = grown;
            cap = ncap;
        }
        /* A process that ended since readdir is simply not there. */
        if (read_stat(proc_fd, d->d_name, &list[n]) == 0)
            n++;
    }
    *out = list;
    *count = n;
    return 0;
}

/* Marks the descendants of `self`: a pass adds every process whose parent
 * is marked, until a pass adds none. */
static void mark_descendants(struct proc_entry *list, size_t n, pid_t self)
{
    for (bool changed = true; changed;) {
        changed = false;
        for (size_t i = 0; i < n; i++) {
            if (list[i].descendant)
                continue;
            bool parent_marked = list[i].ppid == self;
            for (size_t j = 0; j < n && !parent_marked; j++)
                parent_marked = list[j].descendant && list[j].pid == list[i].ppid;
            if (parent_marked) {
                list[i].descendant = true;
                changed = true;
            }
        }
    }
}

static void reap_children(void)
{
    while (waitpid(-1, NULL, WNOHANG) > 0)
        ;
}

int reap_descendants(int timeout_ms, struct cordon_error *err)
{
    pid_t self = getpid();
    int64_t deadline = now_ms() + timeout_ms;
    int killed = 0;
    for (;;) {
        reap_children();
        _cleanup_free_ struct proc_entry *list = NULL;
        size_t n = 0;
        if (scan_proc(&list, &n, err) < 0)
            return -1;
        mark_descendants(list, n, self);
        size_t alive = 0;
        for (size_t i = 0; i < n; i++) {
            if (!list[i].descendant || list[i].zombie)
                continue;
            alive++;
            if (kill(list[i].pid, SIGKILL) == 0)
                killed++;
        }
        if (alive == 0)
            return killed;
        if (now_ms() >= deadline)
            return error_set(err, 0, "%zu processes started on the host are still running", alive);
        /* Let the kills land and the orphans move to us. */
        usleep(5000);
    }
}
