/* `cordon run` on the vm backend: boots the microVM with the agent's "init"
 * mode and relays the command's stdio (stdin/stdout on the guest's virtio
 * console hvc0, stderr on its own virtio-serial port); control travels on
 * the channel as frames: stdin EOF and signals to the guest, the exit status
 * back. With a pty (`cordon shell` on a terminal, `--pty`) the command has a
 * terminal of the guest's (agent/vm-pty.c): the host's terminal is raw while
 * the relay runs, its size goes in the boot spec and in "resize" frames, and
 * all the command's output comes back on the console. The loop is the
 * shared relay's (backend/relay.h); `cordon verify NAME`'s probe travels as
 * frames on the channel (proto/vm-probe-frame.h) to the guest's init.
 * Everything the guest sends is untrusted. Host context, unprivileged
 * supervisor. */
#include "backend/backend.h"
#include "proto/vm-frame.h"
#include "backend/vm/vm.h"
#include "backend/relay.h"
#include "backend/run.h"
#include "proto/init-channel.h"
#include "proto/vm-probe-frame.h"
#include "supervisor/lifecycle.h"
#include "util/term.h"
#include "util/cleanup.h"
#include "util/log.h"
#include "util/clock.h"
#include "util/fs.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* After the guest reported its exit, QEMU gets this long to power off. */
#define VM_POWEROFF_GRACE_MS 5000

static void send_message(int channel, json_t *m)
{
    if (m && vm_frame_write(channel, m) < 0)
        log_debug("vm: channel write: %s", strerror(errno));
    json_decref(m);
}

struct vm_relay {
    struct sandbox *sb;
    int channel;
    bool pty;              /* the command has a terminal in the guest */
    struct term_raw *term; /* the host's, raw while the command runs */
    int status;            /* -1 until the guest reports */
    /* `cordon verify NAME`'s probe: the last request's id (the guest
     * echoes it) and its answer as it comes. */
    json_int_t probe_id;
    struct vm_probe_answer answer;
};

/* The probe's request to the guest's init (verify-server.h). */
static int probe_start(struct verify_server *vs, void *ctx, const char *request, size_t len,
                       struct cordon_error *err)
{
    (void)vs;
    (void)len;
    struct vm_relay *v = ctx;
    v->probe_id++;
    json_t *m = vm_probe_request_new(v->probe_id, request);
    /* The guest reads its channel from a loop that never blocks on the
     * probe: a write that fails means the guest is gone. */
    int rc = m ? vm_frame_write(v->channel, m) : -1;
    json_decref(m);
    if (rc < 0)
        return error_set(err, 0, "the guest's init does not take the probe's request");
    vm_probe_answer_start(&v->answer, v->probe_id);
    return 0;
}

static void probe_end(struct verify_server *vs, void *ctx)
{
    (void)vs;
    struct vm_relay *v = ctx;
    vm_probe_answer_clear(&v->answer);
}

static const struct verify_server_ops vm_verify_ops = {
    .probe_via = "the probe, a child of the guest's init",
    .init_name = "the guest's init",
    .deadline_ms = INIT_PROBE_TIMEOUT_MS + VERIFY_SERVER_GRACE_MS,
    .start = probe_start,
    .end = probe_end};

/* A frame from the guest (untrusted): true when it was the probe's
 * (consumed here, whether or not it matched the audit in flight). */
static bool probe_frame(struct vm_relay *v, struct verify_server *vs, const json_t *m)
{
    struct vm_probe_answer idle = {0};
    enum vm_probe_frame kind = vm_probe_answer_take(verify_server_busy(vs) ? &v->answer : &idle, m);
    if (kind != VM_PROBE_FRAME_END)
        return kind != VM_PROBE_FRAME_OTHER;
    /* The guest says so itself when it cut the output; one that sent more
     * than it may has its excess dropped here, and that is said too. */
    char end[VM_PROBE_END_MAX + 64];
    snprintf(end, sizeof(end), "%s%s", v->answer.end,
             v->answer.output_cut ? " (more output than the guest may send: dropped)" : "");
    verify_server_answer(vs, v->answer.output, end);
    return true;
}

/* The host terminal's new size (SIGWINCH) for the guest's pty. */
static void send_resize(struct vm_relay *v)
{
    unsigned short rows, cols;
    if (!v->pty || v->channel < 0 || !term_size(0, &rows, &cols))
        return;
    json_t *m = vm_frame_winsize_pack(rows, cols);
    if (m)
        json_object_set_new(m, "t", json_string("resize"));
    send_message(v->channel, m);
}

static void vm_resize(struct relay *r, void *ctx)
{
    (void)r;
    send_resize(ctx);
}

static void vm_signal(struct relay *r, void *ctx, const struct signalfd_siginfo *si)
{
    (void)r;
    struct vm_relay *v = ctx;
    if (si->ssi_signo != SIGPIPE)
        send_message(v->channel,
                     json_pack("{s:s,s:i}", "t", "signal", "signal", (int)si->ssi_signo));
}

static void vm_stdin_eof(struct relay *r, void *ctx, uint64_t bytes)
{
    (void)r;
    struct vm_relay *v = ctx;
    /* The count lets the guest wait for input still in flight on the
     * console port (another port than the channel). A terminal's input has
     * no end (as on the ns backend). */
    if (!v->pty)
        send_message(v->channel,
                     json_pack("{s:s,s:I}", "t", "stdin-eof", "bytes", (json_int_t)bytes));
}

static bool vm_channel(struct relay *r, void *ctx)
{
    struct vm_relay *v = ctx;
    struct verify_server *vs = relay_verify(r);
    json_t *m = vm_frame_read(v->channel, 2000);
    const char *t = json_string_value(json_object_get(m, "t"));
    bool open = true;
    if (probe_frame(v, vs, m)) {
        /* the probe's answer (cordon verify NAME) */
    } else if (t && strcmp(t, "stdin-ready") == 0) {
        relay_input_ready(r);
    } else if (t && strcmp(t, "exit") == 0) {
        /* The command is gone: what is printed from here (the guest's last
         * output, --debug lines) reads as cooked. */
        term_raw_restore(v->term);
        v->status = (int)json_integer_value(json_object_get(m, "status"));
        json_t *d = json_object_get(m, "docker");
        const char *state = json_string_value(json_object_get(d, "state"));
        const char *reason = json_string_value(json_object_get(d, "reason"));
        if (state)
            log_debug("vm: docker at exit: %s%s%s", state, reason && reason[0] ? ": " : "",
                      reason ? reason : "");
        relay_exit_reported(r, v->status);
        verify_server_exited(vs, v->status);
    } else if (t && strcmp(t, "error") == 0) {
        term_raw_restore(v->term);
        log_error("vm: %s", json_string_value(json_object_get(m, "message")));
        v->status = CORDON_EXIT_FAILURE;
        relay_exit_reported(r, v->status);
        verify_server_gone(vs, "the guest's init failed");
    } else if (!m) {
        v->channel = -1; /* closed: QEMU is going */
        verify_server_gone(vs, "the guest closed its channel");
        open = false;
    }
    json_decref(m);
    return open;
}

/* QEMU is gone; the relay drains the console and the stderr port after. */
static int vm_exited(struct relay *r, void *ctx)
{
    struct vm_relay *v = ctx;
    term_raw_restore(v->term);
    verify_server_gone(relay_verify(r), "the guest stopped");
    if (v->status < 0) {
        log_error("vm: the guest stopped without reporting an exit status");
        return CORDON_EXIT_FAILURE;
    }
    return v->status;
}

static const struct relay_ops vm_relay_ops = {.signal = vm_signal,
                                              .resize = vm_resize,
                                              .stdin_eof = vm_stdin_eof,
                                              .channel = vm_channel,
                                              .exited = vm_exited};

static int vm_run_start(struct backend_run *r, struct cordon_error *err)
{
    long long t0 = clock_now_ms();
    if (vm_sandbox_start(r->l, r->agent_argv, &r->sb, err) < 0)
        return -1;
    log_debug("vm: booted in %lld ms: %s", clock_now_ms() - t0, r->sb.description);
    return 0;
}

static void vm_run_attach(struct backend_run *r, struct relay_spec *spec)
{
    struct vm_relay *v = r->ctx;
    *v = (struct vm_relay){.sb = &r->sb,
                           .channel = r->sb.channel_fd,
                           .pty = r->l->pty,
                           .term = &r->term,
                           .status = -1};
    /* `cordon verify NAME`: the host-side evidence is QEMU's, as for a vm
     * `cordon mcp` session; the probe is the guest init's child. */
    spec->input = spec->output = vm_sandbox_console_fd(&r->sb);
    spec->input_gated = true; /* until the guest's console is raw */
    spec->errors = vm_sandbox_stderr_fd(&r->sb);
    spec->channel = r->sb.channel_fd;
    spec->exit_grace_ms = VM_POWEROFF_GRACE_MS;
    spec->verify.agent_pidfd = r->sb.pidfd;
    spec->verify.ops = &vm_verify_ops;
    spec->verify.ctx = v;
    /* Raw from here: the guest's line discipline handles the keys (^C is a
     * byte for the pty, which signals the foreground job). Every return of
     * the relay comes back here: the signals it handles are blocked. */
    if (r->l->pty)
        term_raw_enter(&r->term, 0);
    /* A resize during the boot is not in the spec: send the size now. */
    send_resize(v);
}

/* A cordon killed with SIGKILL instead: the watchdog kills QEMU and removes
 * the state. */
static void vm_run_teardown(struct backend_run *r)
{
    struct vm_relay *v = r->ctx;
    term_raw_restore(&r->term);
    vm_backend_ops.stop(&r->sb);
    vm_probe_answer_clear(&v->answer);
}

/* relay, resize, start, attach, teardown (backend/run.h) */
static const struct backend_run_ops vm_run_ops = {&vm_relay_ops, true, vm_run_start, vm_run_attach,
                                                  vm_run_teardown};

int vm_run(struct launch *l, struct lifecycle *lc, char **agent_argv, bool shell)
{
    struct vm_relay v = {.channel = -1, .status = -1};
    return backend_run(&vm_run_ops, &v, l, lc, agent_argv, shell);
}
