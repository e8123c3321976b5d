/* Ending everything the host agent started. In the sandbox the agent is
 * PID 1 of its own PID namespace, so leaving ends every process in it; on
 * the host there is no such boundary, and a bash call's `sleep 1000 &` or
 * `nohup server &` would outlive the session. As a child subreaper the host
 * agent inherits those orphans, so at the end they are all its descendants:
 * found by walking /proc's parent links and killed. Host context, the
 * user's own process (cordon-agent serve --host), at teardown. */
#include "agent/reap.h"
#include "util/cleanup.h"
#include "util/clock.h"

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
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

struct proc_entry {
    pid_t pid;
    pid_t ppid;
    unsigned long long start_time; /* with pid, names one process for good */
    bool zombie;
    bool descendant;
};

int reap_become_subreaper(struct cordon_error *err)
{
    if (prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) < 0)
        return error_set(err, errno, "cannot become a child subreaper");
    return 0;
}

/* "pid (comm) S ppid ... starttime ...": comm may hold spaces and
 * parentheses, so the fields after it are found from the last ')'. */
static int read_stat(int proc_fd, const char *name, struct proc_entry *e)
{
    char path[64];
    snprintf(path, sizeof(path), "%s/stat", name);
    _cleanup_close_ int fd = openat(proc_fd, path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    char buf[1024];
    ssize_t n = read(fd, buf, sizeof(buf) - 1);
    if (n <= 0)
        return -1;
    buf[n] = '\0';
    char *close_paren = strrchr(buf, ')');
    char state;
    int ppid;
    unsigned long long start_time;
    /* Fields 3 and 4, then 22 (starttime). */
    if (!close_paren ||
        sscanf(close_paren + 1,
               " %c %d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d %*d %*d %llu",
               &state, &ppid, &start_time) != 3)
        return -1;
    e->pid = (pid_t)strtol(name, NULL, 10);
    e->ppid = (pid_t)ppid;
    e->start_time = start_time;
    e->zombie = state == 'Z' || state == 'X';
    e->descendant = false;
    return 0;
}

/* SIGKILL through a pidfd, after checking that the pid still names the
 * process the scan saw: a descendant reaped by its own parent since the
 * scan may have handed its pid to an unrelated process of the user's. */
static bool kill_exact(int proc_fd, const struct proc_entry *e)
{
    _cleanup_close_ int pidfd = (int)syscall(SYS_pidfd_open, e->pid, 0);
    if (pidfd < 0) /* gone; or no pidfds here (old kernel, fd limit): plain kill */
        return errno != ESRCH && kill(e->pid, SIGKILL) == 0;
    char name[16];
    snprintf(name, sizeof(name), "%d", (int)e->pid);
    struct proc_entry now;
    if (read_stat(proc_fd, name, &now) < 0 || now.start_time != e->start_time)
        return false;
    return syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, NULL, 0) == 0;
}

/* Every process on the system, with its parent. */
static int scan_proc(int proc_fd, struct proc_entry **out, size_t *count, struct cordon_error *err)
{
    int dir_fd = openat(proc_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    _cleanup_closedir_ DIR *dir = dir_fd >= 0 ? fdopendir(dir_fd) : NULL;
    if (!dir) {
        if (dir_fd >= 0)
            close(dir_fd);
        return error_set(err, errno, "cannot read /proc");
    }
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
 * is `self` or marked, until a pass adds none. */
static int mark_descendants(struct proc_entry *list, size_t n, pid_t self, struct cordon_error *err)
{
    _cleanup_free_ pid_t *marked = calloc(n ? n : 1, sizeof(*marked));
    size_t count = 0;
    if (!marked)
        return error_set(err, ENOMEM, "scanning /proc");
    for (bool changed = true; changed;) {
        changed = false;
        for (size_t i = 0; i < n; i++) {
            if (list[i].descendant)
                continue;
            bool parent_marked = list[i].ppid == self;
            for (size_t j = 0; j < count && !parent_marked; j++)
                parent_marked = marked[j] == list[i].ppid;
            if (parent_marked) {
                list[i].descendant = true;
                marked[count++] = list[i].pid;
                changed = true;
            }
        }
    }
    return 0;
}

static void reap_children(void)
{
    while (waitpid(-1, NULL, WNOHANG) > 0)
        ;
}

int reap_descendants(int timeout_ms, struct cordon_error *err)
{
    pid_t self = getpid();
    int64_t deadline = clock_now_ms() + timeout_ms;
    int killed = 0;
    for (;;) {
        reap_children();
        _cleanup_free_ struct proc_entry *list = NULL;
        size_t n = 0;
        _cleanup_close_ int proc_fd = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (proc_fd < 0)
            return error_set(err, errno, "cannot read /proc");
        if (scan_proc(proc_fd, &list, &n, err) < 0 || mark_descendants(list, n, self, err) < 0)
            return -1;
        size_t alive = 0;
        for (size_t i = 0; i < n; i++) {
            if (!list[i].descendant || list[i].zombie)
                continue;
            alive++;
            if (kill_exact(proc_fd, &list[i]))
                killed++;
        }
        if (alive == 0)
            return killed;
        if (clock_now_ms() >= deadline)
            return error_set(err, 0, "%zu processes started on the host are still running", alive);
        /* Let the kills land and the orphans move to us. */
        usleep(5000);
    }
}
