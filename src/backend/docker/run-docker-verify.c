/* `cordon verify NAME` for a docker `cordon run`/`cordon shell` session
 * (run-docker-verify.h). Host context, unprivileged supervisor, inside
 * run-docker.c's single poll loop. The host-side evidence is the
 * container's PID 1 (the agent's init, found with `docker inspect`), as for
 * `cordon verify --backend docker`; the probe is `docker exec` of the
 * agent's probe mode in that container, under the same --confine, user and
 * environment as the command (docs/docker-backend.md says why an exec'd
 * process is no way around the container). Its output is bounded
 * (INIT_PROBE_OUTPUT_MAX), it is killed after INIT_PROBE_TIMEOUT_MS, and
 * the rows are judged by supervisor/verify.c as an ns session's probe.
 * One audit at a time. */
#include "backend/docker/run-docker-verify.h"
#include "proto/init-channel.h"
#include "backend/docker/docker.h"
#include "supervisor/control.h"
#include "supervisor/verify.h"
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

struct docker_verify {
    struct control *ctl;
    const struct launch *l;
    struct sandbox *sb;
    const char *state_dir;
    bool shell;
    /* The audit in flight. */
    struct verify_run *run;
    uint64_t conn;
    pid_t pid; /* the `docker exec` CLI, or -1 */
    int pidfd;
    int in, out; /* its stdin (the request), its stdout and stderr */
    char *request;
    size_t request_len, request_sent;
    char *output;
    size_t output_len;
    bool output_cut;
    long long deadline_ms;
};

static void close_fd(int *fd)
{
    if (*fd >= 0)
        close(*fd);
    *fd = -1;
}

int docker_verify_open(const struct launch *l, struct lifecycle *lc, struct sandbox *sb, bool shell,
                       struct docker_verify **out, struct cordon_error *err)
{
    struct docker_verify *v = calloc(1, sizeof(*v));
    if (!v)
        return error_set(err, ENOMEM, "control socket");
    *v = (struct docker_verify){.l = l,
                                .sb = sb,
                                .state_dir = lc->owner.dir,
                                .shell = shell,
                                .pid = -1,
                                .pidfd = -1,
                                .in = -1,
                                .out = -1};
    if (control_open(lc->owner.dir_fd, l->name, &v->ctl, err) < 0) {
        free(v);
        return -1;
    }
    *out = v;
    return 0;
}

void docker_verify_poll(const struct docker_verify *v, struct pollfd *fds)
{
    for (int i = 0; i < DOCKER_VERIFY_NFDS; i++)
        fds[i] = (struct pollfd){-1, 0, 0};
    if (!v)
        return;
    fds[0] = (struct pollfd){control_fd(v->ctl), POLLIN, 0};
    fds[1] = (struct pollfd){v->in, POLLOUT, 0};
    fds[2] = (struct pollfd){v->out, POLLIN, 0};
    /* The CLI's end counts once its output is read to the end. */
    fds[3] = (struct pollfd){v->out < 0 ? v->pidfd : -1, POLLIN, 0};
}

int docker_verify_timeout_ms(const struct docker_verify *v)
{
    if (!v || !v->run)
        return -1;
    long long left = v->deadline_ms - clock_now_ms();
    return left > 0 ? (int)left : 0;
}

/* Kills the probe's CLI (its own process group) and reaps it; returns its
 * wait status as "exit N"/"signal N" in end. */
static void probe_reap(struct docker_verify *v, bool kill_it, char *end, size_t size)
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

static void audit_end(struct docker_verify *v)
{
    char end[64];
    if (v->pid > 0)
        probe_reap(v, true, end, sizeof(end));
    verify_free(v->run);
    v->run = NULL;
    v->conn = 0;
    free(v->request);
    v->request = NULL;
    v->request_len = v->request_sent = 0;
    free(v->output);
    v->output = NULL;
    v->output_len = 0;
    v->output_cut = false;
}

static void audit_fail(struct docker_verify *v, const char *why)
{
    if (!v->run)
        return;
    control_reply_error(v->ctl, v->conn,
                        "sandbox %s: %s before the audit ended: nothing was audited", v->l->name,
                        why);
    audit_end(v);
}

static void start_audit(struct docker_verify *v, uint64_t conn)
{
    if (v->run) {
        control_reply_error(v->ctl, conn, "a verify of this session is already running");
        return;
    }
    int agent = docker_sandbox_agent_pidfd(v->sb);
    if (agent < 0) {
        control_reply_error(v->ctl, conn,
                            "sandbox %s: the daemon does not name the container's process",
                            v->l->name);
        return;
    }
    struct verify_target t = {.name = v->l->name,
                              .l = v->l,
                              .agent_pidfd = agent,
                              .state_dir = v->state_dir,
                              .pid1_comm = "cordon-init",
                              .probe_via =
                                  "the probe, `docker exec` of the agent in the container"};
    struct cordon_error err = {0};
    if (verify_prepare_target(&t, &v->run, &v->request, &err) < 0) {
        v->run = NULL;
        control_reply_error(v->ctl, conn, "%s", err.message);
        return;
    }
    v->conn = conn;
    v->request_len = strlen(v->request);
    if (v->request_len > INIT_PROBE_REQUEST_MAX) {
        control_reply_error(v->ctl, conn, "the probe's request is longer than %d bytes",
                            INIT_PROBE_REQUEST_MAX);
        audit_end(v);
        return;
    }
    int in[2] = {-1, -1}, out[2] = {-1, -1};
    if (pipe2(in, O_CLOEXEC) < 0 || pipe2(out, O_CLOEXEC) < 0) {
        control_reply_error(v->ctl, conn, "pipe: %s", strerror(errno));
        close_fd(&in[0]);
        close_fd(&in[1]);
        audit_end(v);
        return;
    }
    v->pid = docker_sandbox_exec_probe(v->sb, v->l, in[0], out[1], &err);
    close(in[0]);
    close(out[1]);
    v->in = in[1];
    v->out = out[0];
    if (v->pid < 0) {
        control_reply_error(v->ctl, conn, "%s", err.message);
        audit_end(v);
        return;
    }
    v->pidfd = (int)syscall(SYS_pidfd_open, v->pid, 0);
    fcntl(v->in, F_SETFL, O_NONBLOCK);
    fcntl(v->out, F_SETFL, O_NONBLOCK);
    v->deadline_ms = clock_now_ms() + INIT_PROBE_TIMEOUT_MS;
}

static void on_request(void *ctx, uint64_t conn, const char *op)
{
    struct docker_verify *v = ctx;
    if (control_run_request(v->ctl, conn, op, v->l->name, v->shell, v->sb->pid, v->run != NULL))
        start_audit(v, conn);
}

static void probe_write(struct docker_verify *v)
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

static void probe_read(struct docker_verify *v)
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
        size_t keep = (size_t)n;
        if (v->output_len + keep > INIT_PROBE_OUTPUT_MAX) {
            keep = INIT_PROBE_OUTPUT_MAX - v->output_len;
            v->output_cut = true;
        }
        if (keep == 0)
            continue;
        char *grown = realloc(v->output, v->output_len + keep + 1);
        if (!grown) {
            v->output_cut = true;
            continue;
        }
        v->output = grown;
        memcpy(v->output + v->output_len, buf, keep);
        v->output_len += keep;
        v->output[v->output_len] = '\0';
    }
}

static void probe_finish(struct docker_verify *v, bool timed_out)
{
    char end[128];
    probe_reap(v, timed_out, end, sizeof(end));
    if (timed_out)
        snprintf(end, sizeof(end), "timeout");
    else if (v->output_cut)
        snprintf(end + strlen(end), sizeof(end) - strlen(end),
                 " (more than %d bytes of output: the rest dropped)", INIT_PROBE_OUTPUT_MAX);
    json_t *report = verify_finish_init_probe(v->run, v->output ? v->output : "", end);
    control_reply(v->ctl, v->conn, json_pack("{s:b, s:o}", "ok", 1, "report", report));
    audit_end(v);
}

void docker_verify_handle(struct docker_verify *v, const struct pollfd *fds)
{
    if (!v)
        return;
    if (v->run && fds[1].fd >= 0 && fds[1].fd == v->in && fds[1].revents)
        probe_write(v);
    if (v->run && fds[2].fd >= 0 && fds[2].fd == v->out && fds[2].revents)
        probe_read(v);
    if (v->run && v->out < 0 && fds[3].fd >= 0 && fds[3].revents)
        probe_finish(v, false);
    if (v->run && clock_now_ms() >= v->deadline_ms)
        probe_finish(v, true);
    if (fds[0].revents & POLLIN)
        control_dispatch(v->ctl, on_request, v);
}

void docker_verify_exited(struct docker_verify *v, int status)
{
    if (!v)
        return;
    char why[64];
    snprintf(why, sizeof(why), "its command exited (status %d)", status);
    audit_fail(v, why);
}

void docker_verify_close(struct docker_verify *v)
{
    if (!v)
        return;
    control_close(v->ctl);
    audit_end(v);
    free(v);
}
