/* The probe of `cordon verify NAME` for a vm `cordon run`/`cordon shell`
 * session, run by the guest's init (vm-probe.h). Guest context: PID 1,
 * root in the guest, inside run mode's relay loop, which must never block
 * on the probe: its pipes are non-blocking and the answer goes out on the
 * channel only as poll says there is room. The probe itself is a sibling
 * of the command, started as the command is (the caller's exec step:
 * identity, rlimits, Landlock, seccomp), in a process group of its own so
 * that a timeout kills all it started. Frames from the host are checked
 * input: a request's type and size are checked before anything runs. */
#include "backend/vm/guest/vm-probe.h"
#include "proto/init-channel.h"
#include "agent/probe-io.h"
#include "proto/protocol.h"
#include "proto/vm-probe-frame.h"
#include "util/cleanup.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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
    struct probe_io io;
    char *request; /* the request's copy, fed to the probe's stdin */
    char *output;
    struct frame_writer answer; /* frames not yet on the channel */
} probe = {.channel = -1, .io = PROBE_IO_INIT};

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
static void exec_probe_child(int in, int out, void *ctx)
{
    (void)ctx;
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
        probe.io.output = probe.output;
    }
    free(probe.request);
    probe.request = malloc(len ? len : 1);
    if (!probe.request)
        return "error: out of memory";
    memcpy(probe.request, request, len);
    return probe_io_spawn(&probe.io, probe.request, len, exec_probe_child, NULL);
}

void vm_probe_request(const json_t *msg)
{
    json_int_t id;
    const char *request = NULL, *why = NULL;
    size_t len = 0;
    if (vm_probe_request_check(msg, &id, &request, &len, &why) < 0) {
        queue_end(id, why);
    } else if (probe.io.pid > 0 || frame_writer_pending(&probe.answer)) {
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
    bool feeding = probe.io.in_fd >= 0 && probe.io.in_done < probe.io.request_len;
    p[0] = (struct pollfd){feeding ? probe.io.in_fd : -1, POLLOUT, 0};
    p[1] = (struct pollfd){probe.io.out_fd, POLLIN, 0};
    p[2] = (struct pollfd){frame_writer_pending(&probe.answer) ? probe.channel : -1, POLLOUT, 0};
}

int vm_probe_timeout_ms(void)
{
    return probe_io_timeout_ms(&probe.io);
}

void vm_probe_events(const struct pollfd *p)
{
    probe_io_check_deadline(&probe.io);
    if (p[1].fd >= 0 && p[1].revents)
        probe_io_read(&probe.io);
    if (p[0].fd >= 0 && p[0].revents)
        probe_io_write(&probe.io);
    if (p[2].fd >= 0 && p[2].revents)
        flush_answer();
}

bool vm_probe_reaped(pid_t pid, int status)
{
    if (probe.io.pid <= 0 || pid != probe.io.pid)
        return false;
    char end[128];
    probe_io_reaped(&probe.io, status, end, sizeof(end));
    struct cordon_error err;
    vm_probe_answer_queue(&probe.answer, probe.id, probe.output, probe.io.output_len, end, &err);
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
    probe_io_kill(&probe.io);
    probe_io_close(&probe.io);
    vm_probe_flush();
    frame_writer_free(&probe.answer);
}
