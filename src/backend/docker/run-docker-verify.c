/* `cordon verify NAME`'s probe for a docker `cordon run`/`cordon shell`
 * session (run-docker-verify.h). Host context, unprivileged supervisor,
 * inside the relay's single poll loop. The host-side evidence is the
 * container's PID 1 (the agent's init, found with `docker inspect`), as for
 * `cordon verify --backend docker`; the probe is `docker exec` of the
 * agent's probe mode in that container, under the same --confine, user and
 * environment as the command (docs/docker-backend.md says why an exec'd
 * process is no way around the container). Its output is bounded
 * (INIT_PROBE_OUTPUT_MAX, verify-server.c), it is killed after
 * INIT_PROBE_TIMEOUT_MS, and the rows are judged by supervisor/verify.c as
 * an ns session's probe. */
#include "backend/docker/run-docker-verify.h"
#include "proto/init-channel.h"
#include "backend/docker/docker.h"
#include "util/cleanup.h"
#include "util/clock.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static void close_fd(int *fd)
{
    if (*fd >= 0)
        close(*fd);
    *fd = -1;
}

/* Kills the probe's CLI (its own process group) and reaps it; returns its
 * wait status as "exit N"/"signal N" in end. */
static void probe_reap(struct docker_probe *v, bool kill_it, char *end, size_t size)
{
    snprintf(end, size, "error: the probe's docker exec was not started");
    if (v->pid > 0) {
        if (kill_it)
            kill(-v->pid, SIGKILL);
        siginfo_t si = {0};
        int rc;
        while ((rc = waitid(P_PID, (id_t)v->pid, &si, WEXITED)) < 0 && errno == EINTR)
            ;
        if (rc == 0 && si.si_code == CLD_EXITED)
            snprintf(end, size, "exit %d", si.si_status);
        else if (rc == 0)
            snprintf(end, size, "signal %d", si.si_status);
    }
    v->pid = -1;
    close_fd(&v->pidfd);
    close_fd(&v->in);
    close_fd(&v->out);
}

static void probe_end(struct verify_server *vs, void *ctx)
{
    (void)vs;
    struct docker_probe *v = ctx;
    char end[64];
    probe_reap(v, true, end, sizeof(end));
    free(v->request);
    v->request = NULL;
    v->request_len = v->request_sent = 0;
}

/* The host-side evidence is the container's PID 1, named by the daemon. */
static int probe_agent_pidfd(void *ctx, struct cordon_error *err)
{
    struct docker_probe *v = ctx;
    int agent = docker_sandbox_agent_pidfd(v->sb);
    if (agent < 0)
        return error_set(err, 0, "sandbox %s: the daemon does not name the container's process",
                         v->l->name);
    return agent;
}

static int probe_start(struct verify_server *vs, void *ctx, const char *request, size_t len,
                       struct cordon_error *err)
{
    (void)vs;
    struct docker_probe *v = ctx;
    v->request = strdup(request);
    if (!v->request)
        return error_set(err, ENOMEM, "the probe's request");
    v->request_len = len;
    int in[2] = {-1, -1}, out[2] = {-1, -1};
    if (pipe2(in, O_CLOEXEC) < 0 || pipe2(out, O_CLOEXEC) < 0) {
        int e = errno;
        close_fd(&in[0]);
        close_fd(&in[1]);
        return error_set(err, e, "pipe");
    }
    v->pid = docker_sandbox_exec_probe(v->sb, v->l, in[0], out[1], err);
    close(in[0]);
    close(out[1]);
    v->in = in[1];
    v->out = out[0];
    if (v->pid < 0)
        return -1;
    v->pidfd = (int)syscall(SYS_pidfd_open, v->pid, 0);
    fcntl(v->in, F_SETFL, O_NONBLOCK);
    fcntl(v->out, F_SETFL, O_NONBLOCK);
    return 0;
}

static void probe_poll(struct verify_server *vs, void *ctx, struct pollfd *fds)
{
    (void)vs;
    struct docker_probe *v = ctx;
    fds[0] = (struct pollfd){v->in, POLLOUT, 0};
    fds[1] = (struct pollfd){v->out, POLLIN, 0};
    /* The CLI's end counts once its output is read to the end. */
    fds[2] = (struct pollfd){v->out < 0 ? v->pidfd : -1, POLLIN, 0};
}

static void probe_write(struct docker_probe *v)
{
    while (v->request_sent < v->request_len) {
        ssize_t n = write(v->in, v->request + v->request_sent, v->request_len - v->request_sent);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && errno == EAGAIN)
            return;
        if (n <= 0)
            break; /* EPIPE: it stopped reading; its end tells the rest */
        v->request_sent += (size_t)n;
    }
    close_fd(&v->in);
}

static void probe_read(struct docker_probe *v, struct verify_server *vs)
{
    char buf[16384];
    for (;;) {
        ssize_t n = read(v->out, buf, sizeof(buf));
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && errno == EAGAIN)
            return;
        if (n <= 0) {
            close_fd(&v->out);
            return;
        }
        verify_server_output(vs, buf, (size_t)n);
    }
}

static void probe_finish(struct docker_probe *v, struct verify_server *vs, bool timed_out)
{
    char end[128];
    probe_reap(v, timed_out, end, sizeof(end));
    verify_server_finish(vs, timed_out ? "timeout" : end);
}

static void probe_handle(struct verify_server *vs, void *ctx, const struct pollfd *fds)
{
    struct docker_probe *v = ctx;
    if (fds[0].fd >= 0 && fds[0].fd == v->in && fds[0].revents)
        probe_write(v);
    if (fds[1].fd >= 0 && fds[1].fd == v->out && fds[1].revents)
        probe_read(v, vs);
    if (v->out < 0 && fds[2].fd >= 0 && fds[2].revents)
        probe_finish(v, vs, false);
}

/* At its deadline the probe is killed and judged as timed out. */
static void probe_overdue(struct verify_server *vs, void *ctx)
{
    probe_finish(ctx, vs, true);
}

const struct verify_server_ops docker_verify_ops = {
    .probe_via = "the probe, `docker exec` of the agent in the container",
    .deadline_ms = INIT_PROBE_TIMEOUT_MS, /* the probe is killed then: its end says "timeout" */
    .start = probe_start,
    .end = probe_end,
    .poll = probe_poll,
    .handle = probe_handle,
    .overdue = probe_overdue,
    .agent_pidfd = probe_agent_pidfd};
