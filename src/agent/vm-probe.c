/* The probe of `cordon verify NAME` for a vm `cordon run`/`cordon shell`
 * session, run by the guest's init (vm-probe.h). Guest context: PID 1,
 * root in the guest, inside run mode's relay loop, which must never block
 * on the probe: its pipes are non-blocking and the answer goes out on the
 * channel only as poll says there is room. The probe itself is a sibling
 * of the command, started as the command is (the caller's exec step:
 * identity, rlimits, Landlock, seccomp), in a process group of its own so
 * that a timeout kills all it started. Frames from the host are checked
 * input: a request's type and size are checked before anything runs. */
#include "agent/vm-probe.h"
#include "agent/init.h"
#include "agent/protocol.h"
#include "backend/vm/vm-probe-frame.h"
#include "util/cleanup.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* An answer is at most INIT_PROBE_OUTPUT_MAX of output in frames; error
 * answers to requests that came while busy are tiny. Past this much
 * unsent, a host that sends without reading gets no more answers. */
#define PENDING_MAX (4 * INIT_PROBE_OUTPUT_MAX)

static struct {
    int channel;
    vm_probe_exec_fn exec;
    const void *exec_ctx;
    json_int_t id; /* the request being served */
    pid_t pid;     /* 0: no probe runs */
    int in_fd;     /* its stdin's write end until fed, else -1 */
    int out_fd;    /* its stdout and stderr's read end until EOF, else -1 */
    char *request;
    size_t request_len, in_done;
    char *output;
    size_t output_len;
    bool output_cut;
    long long deadline_ms;
    bool timed_out;
    struct frame_writer answer; /* frames not yet on the channel */
} probe = {.channel = -1, .in_fd = -1, .out_fd = -1};

static long long probe_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void close_fd(int *fd)
{
    if (*fd >= 0)
        close(*fd);
    *fd = -1;
}

void vm_probe_setup(int channel, vm_probe_exec_fn exec, const void *ctx)
{
    probe.channel = channel;
    probe.exec = exec;
    probe.exec_ctx = ctx;
}

/* The channel stays a blocking fd for the relay's other frames; only the
 * answer's writes must not wait. */
static void flush_answer(void)
{
    if (!frame_writer_pending(&probe.answer))
        return;
    int flags = fcntl(probe.channel, F_GETFL);
    if (flags < 0)
        return;
    fcntl(probe.channel, F_SETFL, flags | O_NONBLOCK);
    struct cordon_error err;
    if (frame_writer_flush(&probe.answer, probe.channel, &err) < 0)
        frame_writer_free(&probe.answer); /* the host is gone: nobody to answer */
    fcntl(probe.channel, F_SETFL, flags);
}

static void queue_end(json_int_t id, const char *end)
{
    struct cordon_error err;
    /* A host that sends requests without reading the answers gets no more. */
    if (probe.answer.len - probe.answer.start < PENDING_MAX)
        vm_probe_answer_queue(&probe.answer, id, "", 0, end, &err);
}

/* The forked child: its stdio on the pipes, then the caller's exec step.
 * Between fork and exec: no allocation. */
static void exec_probe_child(int in, int out) __attribute__((noreturn));

static void exec_probe_child(int in, int out)
{
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    setsid(); /* a group of its own: a timeout kills all it started */
    if (dup2(in, 0) < 0 || dup2(out, 1) < 0 || dup2(out, 2) < 0)
        _exit(CORDON_EXIT_FAILURE);
    probe.exec(probe.exec_ctx);
    _exit(CORDON_EXIT_CANNOT_EXEC);
}

static const char *start(const char *request, size_t len)
{
    if (!probe.exec)
        return "error: the guest cannot run the probe";
    if (!probe.output) {
        probe.output = malloc(INIT_PROBE_OUTPUT_MAX);
        if (!probe.output)
            return "error: out of memory";
    }
    free(probe.request);
    probe.request = malloc(len ? len : 1);
    if (!probe.request)
        return "error: out of memory";
    memcpy(probe.request, request, len);
    probe.request_len = len;
    probe.in_done = 0;
    probe.output_len = 0;
    probe.output_cut = false;
    probe.timed_out = false;
    int in[2], out[2];
    if (pipe2(in, O_CLOEXEC) < 0)
        return "error: pipe failed";
    if (pipe2(out, O_CLOEXEC) < 0) {
        close(in[0]);
        close(in[1]);
        return "error: pipe failed";
    }
    pid_t pid = fork();
    if (pid == 0)
        exec_probe_child(in[0], out[1]);
    close(in[0]);
    close(out[1]);
    if (pid < 0) {
        close(in[1]);
        close(out[0]);
        return "error: fork failed";
    }
    fcntl(in[1], F_SETFL, O_NONBLOCK);
    fcntl(out[0], F_SETFL, O_NONBLOCK);
    probe.pid = pid;
    probe.in_fd = in[1];
    probe.out_fd = out[0];
    probe.deadline_ms = probe_now_ms() + INIT_PROBE_TIMEOUT_MS;
    return NULL;
}

void vm_probe_request(const json_t *msg)
{
    json_int_t id;
    const char *request = NULL, *why = NULL;
    size_t len = 0;
    if (vm_probe_request_check(msg, &id, &request, &len, &why) < 0) {
        queue_end(id, why);
    } else if (probe.pid > 0 || frame_writer_pending(&probe.answer)) {
        queue_end(id, "error: a probe is already running");
    } else {
        probe.id = id;
        const char *failed = start(request, len);
        if (failed)
            queue_end(id, failed);
    }
    flush_answer();
}

void vm_probe_pollfds(struct pollfd *p)
{
    bool feeding = probe.in_fd >= 0 && probe.in_done < probe.request_len;
    p[0] = (struct pollfd){feeding ? probe.in_fd : -1, POLLOUT, 0};
    p[1] = (struct pollfd){probe.out_fd, POLLIN, 0};
    p[2] = (struct pollfd){frame_writer_pending(&probe.answer) ? probe.channel : -1, POLLOUT, 0};
}

int vm_probe_timeout_ms(void)
{
    if (probe.pid <= 0 || probe.timed_out)
        return -1;
    long long left = probe.deadline_ms - probe_now_ms();
    return left > 0 ? (int)left : 0;
}

/* Keeps the first INIT_PROBE_OUTPUT_MAX bytes; the rest is read away so
 * that the probe is never stuck on a full pipe. */
static void read_output(void)
{
    for (;;) {
        char scratch[4096];
        char *dst = scratch;
        size_t room = sizeof(scratch);
        if (probe.output_len < INIT_PROBE_OUTPUT_MAX) {
            dst = probe.output + probe.output_len;
            room = INIT_PROBE_OUTPUT_MAX - probe.output_len;
        }
        ssize_t n = read(probe.out_fd, dst, room);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && errno == EAGAIN)
            return;
        if (n <= 0) {
            close_fd(&probe.out_fd);
            return;
        }
        if (dst == scratch)
            probe.output_cut = true;
        else
            probe.output_len += (size_t)n;
    }
}

static void write_request(void)
{
    while (probe.in_done < probe.request_len) {
        ssize_t n =
            write(probe.in_fd, probe.request + probe.in_done, probe.request_len - probe.in_done);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && errno == EAGAIN)
            return;
        if (n < 0)
            break; /* it left without reading all: its end says why */
        probe.in_done += (size_t)n;
    }
    close_fd(&probe.in_fd);
}

static void kill_probe(void)
{
    if (probe.pid <= 0)
        return;
    kill(-probe.pid, SIGKILL);
    kill(probe.pid, SIGKILL);
}

void vm_probe_events(const struct pollfd *p)
{
    if (probe.pid > 0 && !probe.timed_out && probe_now_ms() >= probe.deadline_ms) {
        probe.timed_out = true;
        kill_probe();
    }
    if (p[1].fd >= 0 && p[1].revents)
        read_output();
    if (p[0].fd >= 0 && p[0].revents)
        write_request();
    if (p[2].fd >= 0 && p[2].revents)
        flush_answer();
}

bool vm_probe_reaped(pid_t pid, int status)
{
    if (probe.pid <= 0 || pid != probe.pid)
        return false;
    if (probe.out_fd >= 0)
        read_output();
    /* A descendant may hold the pipe open: what is not there now is lost. */
    close_fd(&probe.out_fd);
    close_fd(&probe.in_fd);
    char end[128];
    if (probe.timed_out)
        snprintf(end, sizeof(end), "timeout");
    else if (WIFEXITED(status))
        snprintf(end, sizeof(end), "exit %d", WEXITSTATUS(status));
    else
        snprintf(end, sizeof(end), "signal %d", WTERMSIG(status));
    if (probe.output_cut)
        snprintf(end + strlen(end), sizeof(end) - strlen(end), " (output cut at %d bytes)",
                 INIT_PROBE_OUTPUT_MAX);
    probe.pid = 0;
    struct cordon_error err;
    vm_probe_answer_queue(&probe.answer, probe.id, probe.output, probe.output_len, end, &err);
    flush_answer();
    return true;
}

void vm_probe_flush(void)
{
    struct cordon_error err;
    if (frame_writer_pending(&probe.answer) &&
        frame_writer_flush(&probe.answer, probe.channel, &err) < 0)
        frame_writer_free(&probe.answer);
}

void vm_probe_finish(void)
{
    kill_probe();
    close_fd(&probe.in_fd);
    close_fd(&probe.out_fd);
    vm_probe_flush();
    frame_writer_free(&probe.answer);
}
