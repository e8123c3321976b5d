/* Bounded logs of QEMU's output. QEMU's `-serial file:` grows without
 * bound, and the guest decides what goes there: guest root is one privileged
 * container away by design (docs/vm-backend.md), and it can write to the
 * serial port forever, filling the host's disk through the state directory.
 * So QEMU writes its serial console and its stderr into pipes, and a small
 * keeper process of the supervisor's own (forked before QEMU, holding only
 * those pipes and the state directory) copies them into files that it
 * rotates at a cap: NAME holds the newest output (what an error message
 * quotes), NAME.1 the part before it, the rest is gone. A keeper that cannot
 * write drops the output; QEMU never blocks on it, because the keeper keeps
 * reading. Host context: the supervisor, then the keeper child (no
 * allocation after the fork, no stdio). */
#include "backend/vm/vm-log.h"
#include "util/cleanup.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

struct keeper_stream {
    int in;       /* the pipe's read end, -1 once at EOF */
    int out;      /* the current file, -1 when it could not be opened */
    size_t bytes; /* in the current file */
    const char *name;
    char rotated[256];
};

/* Child: opens NAME afresh (truncated), after moving the full one aside. */
static void keeper_rotate(int dirfd, struct keeper_stream *s)
{
    if (s->out >= 0) {
        close(s->out);
        renameat(dirfd, s->name, dirfd, s->rotated);
    }
    s->out = openat(dirfd, s->name, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
    s->bytes = 0;
}

/* Child: copies until every stream is at EOF. */
static void keeper_run(int dirfd, struct keeper_stream *streams, size_t file_max)
{
    static char buf[65536];
    for (;;) {
        struct pollfd p[VM_LOG_STREAMS];
        int open_streams = 0;
        for (int i = 0; i < VM_LOG_STREAMS; i++) {
            p[i] = (struct pollfd){.fd = streams[i].in, .events = POLLIN};
            open_streams += streams[i].in >= 0;
        }
        if (!open_streams)
            return;
        if (poll(p, VM_LOG_STREAMS, -1) < 0) {
            if (errno == EINTR)
                continue;
            return;
        }
        for (int i = 0; i < VM_LOG_STREAMS; i++) {
            struct keeper_stream *s = &streams[i];
            if (s->in < 0 || !(p[i].revents & (POLLIN | POLLHUP | POLLERR)))
                continue;
            ssize_t n = read(s->in, buf, sizeof(buf));
            if (n < 0 && errno == EINTR)
                continue;
            if (n <= 0) {
                close(s->in);
                s->in = -1;
                continue;
            }
            if (s->bytes >= file_max)
                keeper_rotate(dirfd, s);
            if (s->out >= 0) {
                for (ssize_t off = 0; off < n;) {
                    ssize_t w = write(s->out, buf + off, (size_t)(n - off));
                    if (w < 0 && errno == EINTR)
                        continue;
                    if (w <= 0)
                        break; /* a full disk drops output, never blocks QEMU */
                    off += w;
                }
            }
            s->bytes += (size_t)n;
        }
    }
}

int vm_log_keeper_start(const char *dir, const char *const names[VM_LOG_STREAMS], size_t file_max,
                        int ret_write_fds[VM_LOG_STREAMS], pid_t *ret_pid, struct cordon_error *err)
{
    _cleanup_close_ int dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
    if (dirfd < 0)
        return error_set(err, errno, "vm: logs: %s", dir);
    struct keeper_stream streams[VM_LOG_STREAMS];
    int pipes[VM_LOG_STREAMS][2];
    for (int i = 0; i < VM_LOG_STREAMS; i++) {
        streams[i] = (struct keeper_stream){.in = -1, .out = -1, .name = names[i]};
        if (snprintf(streams[i].rotated, sizeof(streams[i].rotated), "%s.1", names[i]) >=
                (int)sizeof(streams[i].rotated) ||
            strchr(names[i], '/'))
            return error_set(err, EINVAL, "vm: logs: bad name %s", names[i]);
        pipes[i][0] = pipes[i][1] = -1;
    }
    int rc = -1;
    for (int i = 0; i < VM_LOG_STREAMS; i++) {
        if (pipe2(pipes[i], O_CLOEXEC) < 0) {
            error_set(err, errno, "vm: logs: pipe");
            goto out;
        }
        /* Files exist (empty) before QEMU starts, as -serial file: made them. */
        streams[i].in = pipes[i][0];
        keeper_rotate(dirfd, &streams[i]);
        if (streams[i].out < 0) {
            error_set(err, errno, "vm: logs: %s/%s", dir, names[i]);
            goto out;
        }
    }
    pid_t pid = fork();
    if (pid < 0) {
        error_set(err, errno, "vm: logs: fork");
        goto out;
    }
    /* Without ret_pid the keeper is a grandchild, inherited by init (or a
     * subreaper): nothing of the supervisor's to reap. */
    if (pid == 0 && !ret_pid) {
        pid_t grandchild = fork();
        if (grandchild != 0)
            _exit(grandchild < 0 ? 1 : 0);
    }
    if (pid == 0) {
        /* Its own process group, so a terminal's ^C leaves it to read
         * what QEMU says while it stops. Only its pipes, files and the
         * directory stay open. */
        setpgid(0, 0);
        signal(SIGINT, SIG_IGN);
        signal(SIGHUP, SIG_IGN);
        signal(SIGPIPE, SIG_IGN);
        int null = open("/dev/null", O_RDWR | O_CLOEXEC);
        for (int fd = 0; fd < 3 && null >= 0; fd++)
            dup2(null, fd);
        for (int i = 0; i < VM_LOG_STREAMS; i++)
            close(pipes[i][1]);
        int keep[2 * VM_LOG_STREAMS + 1];
        int nkeep = 0;
        keep[nkeep++] = dirfd;
        for (int i = 0; i < VM_LOG_STREAMS; i++) {
            keep[nkeep++] = streams[i].in;
            keep[nkeep++] = streams[i].out;
        }
        /* Everything else goes, above all the session's lock: a keeper
         * holding its flock would keep the session "owned". The gaps
         * between the kept fds, in ascending order. */
        for (int i = 1; i < nkeep; i++)
            for (int j = i; j > 0 && keep[j - 1] > keep[j]; j--) {
                int t = keep[j];
                keep[j] = keep[j - 1];
                keep[j - 1] = t;
            }
        unsigned lo = 3;
        for (int k = 0; k < nkeep; k++) {
            if ((unsigned)keep[k] > lo)
                close_range(lo, (unsigned)keep[k] - 1, 0);
            if ((unsigned)keep[k] + 1 > lo)
                lo = (unsigned)keep[k] + 1;
        }
        close_range(lo, ~0u, 0);
        keeper_run(dirfd, streams, file_max);
        _exit(0);
    }
    if (!ret_pid) {
        int status;
        while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
            ;
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
            error_set(err, EAGAIN, "vm: logs: could not start the keeper");
            goto out;
        }
    }
    for (int i = 0; i < VM_LOG_STREAMS; i++) {
        ret_write_fds[i] = pipes[i][1];
        pipes[i][1] = -1;
    }
    if (ret_pid)
        *ret_pid = pid;
    rc = 0;
out:
    for (int i = 0; i < VM_LOG_STREAMS; i++) {
        if (pipes[i][0] >= 0)
            close(pipes[i][0]);
        if (pipes[i][1] >= 0)
            close(pipes[i][1]);
        if (streams[i].out >= 0)
            close(streams[i].out);
    }
    return rc;
}
