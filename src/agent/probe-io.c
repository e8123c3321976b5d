/* The probe child's pipes, deadline and end (probe-io.h). Sandbox context:
 * PID 1 of an ns sandbox or of the vm guest. */
#include "agent/probe-io.h"
#include "proto/init-channel.h"
#include "util/clock.h"
#include "util/fs.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

const char *probe_io_spawn(struct probe_io *p, const char *request, size_t len,
                           probe_io_child_fn child, void *ctx)
{
    p->request = request;
    p->request_len = len;
    p->in_done = 0;
    p->output_len = 0;
    p->output_cut = false;
    p->timed_out = false;
    int in[2], out[2];
    if (pipe2(in, O_CLOEXEC) < 0)
        return "error: pipe failed";
    if (pipe2(out, O_CLOEXEC) < 0) {
        close(in[0]);
        close(in[1]);
        return "error: pipe failed";
    }
    pid_t pid = fork();
    if (pid == 0) {
        child(in[0], out[1], ctx);
        _exit(127);
    }
    close(in[0]);
    close(out[1]);
    if (pid < 0) {
        close(in[1]);
        close(out[0]);
        return "error: fork failed";
    }
    fcntl(in[1], F_SETFL, O_NONBLOCK);
    fcntl(out[0], F_SETFL, O_NONBLOCK);
    p->pid = pid;
    p->in_fd = in[1];
    p->out_fd = out[0];
    p->deadline_ms = clock_now_ms() + INIT_PROBE_TIMEOUT_MS;
    return NULL;
}

void probe_io_read(struct probe_io *p)
{
    while (p->out_fd >= 0) {
        char scratch[4096];
        char *dst = scratch;
        size_t room = sizeof(scratch);
        if (p->output_len < INIT_PROBE_OUTPUT_MAX) {
            dst = p->output + p->output_len;
            room = INIT_PROBE_OUTPUT_MAX - p->output_len;
        }
        ssize_t n = read(p->out_fd, dst, room);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && errno == EAGAIN)
            return;
        if (n <= 0) {
            fs_close(&p->out_fd);
            return;
        }
        if (dst == scratch)
            p->output_cut = true;
        else
            p->output_len += (size_t)n;
    }
}

void probe_io_write(struct probe_io *p)
{
    if (p->in_fd < 0)
        return;
    while (p->in_done < p->request_len) {
        ssize_t n = write(p->in_fd, p->request + p->in_done, p->request_len - p->in_done);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && errno == EAGAIN)
            return;
        if (n < 0)
            break; /* it left without reading all: its end says why */
        p->in_done += (size_t)n;
    }
    fs_close(&p->in_fd);
}

int probe_io_timeout_ms(const struct probe_io *p)
{
    if (p->pid <= 0 || p->timed_out)
        return -1;
    long long left = p->deadline_ms - clock_now_ms();
    return left > 0 ? (int)left : 0;
}

void probe_io_kill(const struct probe_io *p)
{
    if (p->pid <= 0)
        return;
    kill(-p->pid, SIGKILL);
    kill(p->pid, SIGKILL);
}

void probe_io_check_deadline(struct probe_io *p)
{
    if (p->pid > 0 && !p->timed_out && clock_now_ms() >= p->deadline_ms) {
        p->timed_out = true;
        probe_io_kill(p);
    }
}

void probe_io_reaped(struct probe_io *p, int status, char *end, size_t size)
{
    probe_io_read(p);
    /* A descendant may hold the pipe open: what is not there now is lost. */
    probe_io_close(p);
    if (p->timed_out)
        snprintf(end, size, "timeout");
    else if (WIFEXITED(status))
        snprintf(end, size, "exit %d", WEXITSTATUS(status));
    else
        snprintf(end, size, "signal %d", WTERMSIG(status));
    size_t used = strlen(end);
    if (p->output_cut && used < size)
        snprintf(end + used, size - used, " (output cut at %d bytes)", INIT_PROBE_OUTPUT_MAX);
    p->pid = 0;
}

void probe_io_close(struct probe_io *p)
{
    fs_close(&p->in_fd);
    fs_close(&p->out_fd);
}
