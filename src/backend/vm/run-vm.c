/* `cordon run` on the vm backend: boots the microVM with the agent's "init"
 * mode and relays the command's stdio (stdin/stdout on the guest's virtio
 * console hvc0, stderr on its own virtio-serial port); control travels on
 * the channel as frames: stdin EOF and signals to the guest, the exit status
 * back. With a pty (`cordon shell` on a terminal, `--pty`) the command has a
 * terminal of the guest's (agent/vm-pty.c): the host's terminal is raw while
 * the relay runs, its size goes in the boot spec and in "resize" frames, and
 * all the command's output comes back on the console. Host context,
 * unprivileged supervisor, one poll loop. */
#include "backend/backend.h"
#include "proto/vm-frame.h"
#include "backend/vm/vm.h"
#include "backend/vm/run-vm-verify.h"
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

/* Copies what is readable now; returns false at EOF or error. */
static bool pump(int from, int to)
{
    char buf[16384];
    ssize_t n = read(from, buf, sizeof(buf));
    if (n > 0) {
        fs_write_all(to, buf, (size_t)n);
        return true;
    }
    return n < 0 && (errno == EINTR || errno == EAGAIN);
}

static void send_message(int channel, json_t *m)
{
    if (m && vm_frame_write(channel, m) < 0)
        log_debug("vm: channel write: %s", strerror(errno));
    json_decref(m);
}

struct relay {
    struct sandbox *sb;
    int sigfd;
    int console, errport, channel;
    bool stdin_open;
    bool pty;               /* the command has a terminal in the guest */
    struct term_raw *term;  /* the host's, raw while the command runs */
    bool stdin_ready;       /* the guest's console is raw: input may flow */
    json_int_t stdin_bytes; /* written to the console so far */
    int status;             /* -1 until the guest reports */
    /* The session's control socket and its audit in flight, or NULL. */
    struct vm_verify *verify;
    struct gitguard *git; /* the session's git metadata, synced while it runs */
};

/* Drains the output streams once QEMU is gone (EOF ends each). */
static void drain(struct relay *r)
{
    fcntl(r->console, F_SETFL, O_NONBLOCK);
    fcntl(r->errport, F_SETFL, O_NONBLOCK);
    while (pump(r->console, 1)) {
        struct pollfd p = {r->console, POLLIN, 0};
        if (poll(&p, 1, 20) <= 0)
            break;
    }
    while (pump(r->errport, 2)) {
        struct pollfd p = {r->errport, POLLIN, 0};
        if (poll(&p, 1, 20) <= 0)
            break;
    }
}

/* The host terminal's new size (SIGWINCH) for the guest's pty. */
static void send_resize(struct relay *r)
{
    unsigned short rows, cols;
    if (!r->pty || r->channel < 0 || !term_size(0, &rows, &cols))
        return;
    json_t *m = vm_frame_winsize_pack(rows, cols);
    if (m)
        json_object_set_new(m, "t", json_string("resize"));
    send_message(r->channel, m);
}

static int relay_loop(struct relay *r)
{
    long long reported_at = 0;
    for (;;) {
        struct pollfd p[7] = {
            {r->sigfd, POLLIN, 0},
            {r->sb->pidfd, POLLIN, 0},
            {r->stdin_open && r->stdin_ready ? 0 : -1, POLLIN, 0},
            {r->console, POLLIN, 0},
            {r->errport, POLLIN, 0},
            {r->status < 0 ? r->channel : -1, POLLIN, 0},
            {vm_verify_fd(r->verify), POLLIN, 0},
        };
        int timeout = vm_verify_timeout_ms(r->verify);
        if (r->status >= 0) {
            long long left = reported_at + VM_POWEROFF_GRACE_MS - clock_now_ms();
            if (left <= 0) {
                log_debug("vm: the guest did not power off; stopping QEMU");
                return r->status;
            }
            if (timeout < 0 || left < timeout)
                timeout = (int)left;
        }
        if (poll(p, 7, gitguard_poll_timeout(r->git, timeout)) < 0) {
            if (errno == EINTR)
                continue;
            return CORDON_EXIT_FAILURE;
        }
        gitguard_sync_if_due(r->git);
        if (p[6].revents & POLLIN)
            vm_verify_dispatch(r->verify);
        vm_verify_tick(r->verify);
        if (p[0].revents & POLLIN) {
            struct signalfd_siginfo si = {0};
            if (read(r->sigfd, &si, sizeof(si)) != sizeof(si))
                si.ssi_signo = 0;
            if (si.ssi_signo == SIGWINCH)
                send_resize(r);
            else if (si.ssi_signo != 0 && si.ssi_signo != SIGPIPE)
                send_message(r->channel,
                             json_pack("{s:s,s:i}", "t", "signal", "signal", (int)si.ssi_signo));
        }
        if (p[2].revents & (POLLIN | POLLHUP | POLLERR)) {
            char buf[16384];
            ssize_t n = read(0, buf, sizeof(buf));
            if (n > 0) {
                fs_write_all(r->console, buf, (size_t)n);
                r->stdin_bytes += (json_int_t)n;
            } else if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
                r->stdin_open = false;
                /* The count lets the guest wait for input still in flight
                 * on the console port (another port than the channel). A
                 * terminal's input has no end (as on the ns backend). */
                if (!r->pty)
                    send_message(r->channel,
                                 json_pack("{s:s,s:I}", "t", "stdin-eof", "bytes", r->stdin_bytes));
            }
        }
        if (p[3].revents & (POLLIN | POLLHUP | POLLERR))
            pump(r->console, 1);
        if (p[4].revents & (POLLIN | POLLHUP | POLLERR))
            pump(r->errport, 2);
        if (p[5].revents & (POLLIN | POLLHUP | POLLERR)) {
            json_t *m = vm_frame_read(r->channel, 2000);
            const char *t = json_string_value(json_object_get(m, "t"));
            if (vm_verify_frame(r->verify, m)) {
                /* the probe's answer (cordon verify NAME) */
            } else if (t && strcmp(t, "stdin-ready") == 0) {
                r->stdin_ready = true;
            } else if (t && strcmp(t, "exit") == 0) {
                /* The command is gone: what is printed from here (the
                 * guest's last output, --debug lines) reads as cooked. */
                term_raw_restore(r->term);
                r->status = (int)json_integer_value(json_object_get(m, "status"));
                json_t *d = json_object_get(m, "docker");
                const char *state = json_string_value(json_object_get(d, "state"));
                const char *reason = json_string_value(json_object_get(d, "reason"));
                if (state)
                    log_debug("vm: docker at exit: %s%s%s", state, reason && reason[0] ? ": " : "",
                              reason ? reason : "");
                reported_at = clock_now_ms();
                vm_verify_exited(r->verify, r->status);
            } else if (t && strcmp(t, "error") == 0) {
                term_raw_restore(r->term);
                log_error("vm: %s", json_string_value(json_object_get(m, "message")));
                r->status = CORDON_EXIT_FAILURE;
                reported_at = clock_now_ms();
                vm_verify_gone(r->verify, "the guest's init failed");
            } else if (!m) {
                r->channel = -1; /* closed: QEMU is going */
                vm_verify_gone(r->verify, "the guest closed its channel");
            }
            json_decref(m);
        }
        if (p[1].revents & POLLIN) {
            term_raw_restore(r->term);
            drain(r);
            vm_verify_gone(r->verify, "the guest stopped");
            if (r->status < 0) {
                log_error("vm: the guest stopped without reporting an exit status");
                return CORDON_EXIT_FAILURE;
            }
            return r->status;
        }
    }
}

int vm_run(struct launch *l, struct lifecycle *lc, char **agent_argv, bool shell)
{
    const struct backend_ops *ops = &vm_backend_ops;
    sigset_t mask;
    sigemptyset(&mask);
    backend_relayed_signals(&mask);
    sigaddset(&mask, SIGPIPE);
    sigaddset(&mask, SIGWINCH);
    sigprocmask(SIG_BLOCK, &mask, NULL);
    _cleanup_close_ int sigfd = signalfd(-1, &mask, SFD_CLOEXEC);

    struct cordon_error err = {0};
    struct sandbox sb;
    long long t0 = clock_now_ms();
    if (vm_sandbox_start(l, agent_argv, &sb, &err) < 0) {
        log_error("%s", err.message);
        ops->stop(&sb);
        return CORDON_EXIT_FAILURE;
    }
    log_debug("vm: booted in %lld ms: %s", clock_now_ms() - t0, sb.description);
    /* `cordon verify NAME` reaches this session through its control
     * socket (run-vm-verify.c), which the relay loop serves: the audit's
     * probe is run by the guest's init. */
    struct vm_verify *verify = NULL;
    if (vm_verify_open(l, lc, &sb, sb.channel_fd, shell, &verify, &err) < 0)
        log_warn("%s: `cordon verify %s` will not reach this session", err.message, l->name);
    /* A cordon killed with SIGKILL: the watchdog kills QEMU and removes
     * the state. */
    if (lifecycle_started(lc, l, &sb, &err) < 0) {
        log_error("%s", err.message);
        vm_verify_close(verify);
        ops->stop(&sb);
        return CORDON_EXIT_FAILURE;
    }
    struct term_raw term = {.active = false};
    struct relay r = {
        .git = lc->git,
        .sb = &sb,
        .sigfd = sigfd,
        .console = vm_sandbox_console_fd(&sb),
        .errport = vm_sandbox_stderr_fd(&sb),
        .channel = sb.channel_fd,
        .stdin_open = true,
        .pty = l->pty,
        .term = &term,
        .status = -1,
        .verify = verify,
    };
    /* Raw from here: the guest's line discipline handles the keys (^C is a
     * byte for the pty, which signals the foreground job). Every return of
     * the loop comes back here: the signals it handles are blocked. */
    if (l->pty)
        term_raw_enter(&term, 0);
    /* A resize during the boot is not in the spec: send the size now. */
    send_resize(&r);
    int status = relay_loop(&r);
    term_raw_restore(&term);
    ops->stop(&sb);
    /* The socket goes with the sandbox it speaks for. */
    vm_verify_close(verify);
    return status;
}
