/* "init" mode (vm-relay.h): the command of `cordon run` with its stdin and
 * stdout on the virtio console (hvc0), its stderr on its own port (or a
 * terminal of the guest's, vm-pty.c), control messages (stdin EOF,
 * signals, resizes, `cordon verify`'s probes) on the channel, and
 * {"t":"exit","status":N} when it is done. Guest context: the init, PID 1,
 * the guest's root; the command is its child, confined as the user
 * (vm-command.c). */
#include "backend/vm/guest/vm-relay.h"
#include "backend/vm/guest/vm-docker.h"
#include "backend/vm/guest/vm-guest.h"
#include "backend/vm/guest/vm-probe.h"
#include "backend/vm/guest/vm-pty.h"
#include "backend/vm/vm.h"
#include "proto/vm-frame.h"
#include "util/cleanup.h"
#include "util/clock.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

/* The relay's state between its steps. */
struct relay {
    const struct guest_command *c;
    int console, errport, sigfd;
    int in_w;          /* the command's stdin (a pipe, or the pty's master); -1 once closed */
    int outfd, errfd;  /* its stdout and stderr (one pty master's dup for both); -1 once done */
    struct vm_pty pty; /* with c->pty */
    pid_t child;
    char inbuf[16384]; /* read from the console, not yet written to in_w */
    size_t inlen, inoff;
    bool stdin_open;
    /* stdin-eof says how many bytes the host sent: the console and the
     * channel are separate ports, so the EOF can overtake the last input. */
    unsigned long long in_total;
    long long eof_after;
    int status; /* the command's, once reaped; else -1 */
    long long exited_at;
};

static ssize_t write_some(int fd, const char *buf, size_t len)
{
    ssize_t n;
    do {
        n = write(fd, buf, len);
    } while (n < 0 && errno == EINTR);
    return n;
}

static void write_all_blocking(int fd, const char *buf, size_t len)
{
    while (len > 0) {
        ssize_t n = write_some(fd, buf, len);
        if (n < 0 && errno == EAGAIN) {
            struct pollfd p = {fd, POLLOUT, 0};
            poll(&p, 1, 100);
            continue;
        }
        if (n <= 0)
            return;
        buf += n;
        len -= (size_t)n;
    }
}

/* hvc0 in raw mode, then stdin-ready on the channel. */
static int console_open(void)
{
    int console = open("/dev/hvc0", O_RDWR | O_NOCTTY | O_CLOEXEC);
    if (console < 0)
        guest_fail("open /dev/hvc0: %s", strerror(errno));
    struct termios t;
    if (tcgetattr(console, &t) == 0) {
        cfmakeraw(&t);
        tcsetattr(console, TCSANOW, &t);
    }
    /* Input the host sent before the line discipline was raw would have
     * been echoed back: the host relays stdin only after this message. */
    json_t *ready = json_pack("{s:s}", "t", "stdin-ready");
    if (!ready || vm_frame_write(guest_channel, ready) < 0)
        guest_fail("channel: %s", strerror(errno));
    json_decref(ready);
    return console;
}

/* The command's stdio (pipes, or the pty), SIGCHLD on a signalfd, then the
 * command forked. */
static void command_start(struct relay *r)
{
    const struct guest_command *c = r->c;
    int in[2], out[2], errp[2];
    r->pty = (struct vm_pty){.master = -1};
    if (c->pty) {
        /* The master takes the pipes' places: input is written to it, its
         * output (stdout and stderr alike) read from a second descriptor
         * (the loop closes each end on its own). */
        struct cordon_error err;
        if (vm_pty_open(&r->pty, c->winsize, c->uid, c->gid, &err) < 0)
            guest_fail("%s", err.message);
        in[0] = out[1] = errp[0] = errp[1] = -1;
        in[1] = r->pty.master;
        out[0] = fcntl(r->pty.master, F_DUPFD_CLOEXEC, 3);
        if (out[0] < 0)
            guest_fail("dup: %s", strerror(errno));
    } else if (pipe2(in, O_CLOEXEC) < 0 || pipe2(out, O_CLOEXEC) < 0 ||
               pipe2(errp, O_CLOEXEC) < 0) {
        guest_fail("pipe: %s", strerror(errno));
    }
    sigset_t mask;
    sigemptyset(&mask);
    sigaddset(&mask, SIGCHLD);
    sigprocmask(SIG_BLOCK, &mask, NULL);
    r->sigfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
    r->child = fork();
    if (r->child < 0)
        guest_fail("fork: %s", strerror(errno));
    if (r->child == 0)
        guest_exec_command(c, in[0], out[1], errp[1], c->pty ? r->pty.slave : NULL);
    if (!c->pty) {
        close(in[0]);
        close(out[1]);
        close(errp[1]);
    }
    fcntl(in[1], F_SETFL, O_NONBLOCK);
    r->in_w = in[1];
    r->outfd = out[0];
    r->errfd = errp[0];
}

/* Console input to the command's stdin: read while nothing is pending,
 * written as the command takes it. */
static void relay_stdin(struct relay *r, const struct pollfd *console, const struct pollfd *in)
{
    if (console->revents & POLLIN) {
        ssize_t n = read(r->console, r->inbuf, sizeof(r->inbuf));
        if (n > 0) {
            r->inlen = (size_t)n;
            r->inoff = 0;
            r->in_total += (unsigned long long)n;
        }
    }
    if (r->inlen > 0 && (in->revents & (POLLOUT | POLLERR))) {
        ssize_t n = write_some(r->in_w, r->inbuf + r->inoff, r->inlen);
        if (n > 0) {
            r->inoff += (size_t)n;
            r->inlen -= (size_t)n;
        } else if (n < 0 && errno != EAGAIN) {
            r->inlen = 0; /* the command closed its stdin */
        }
    }
}

/* The command's stdout to the console, its stderr to the stderr port. */
static void relay_output(struct relay *r, const struct pollfd *out, const struct pollfd *err)
{
    char buf[16384];
    if (out->revents & (POLLIN | POLLHUP | POLLERR)) {
        ssize_t n = read(r->outfd, buf, sizeof(buf));
        if (n > 0)
            write_all_blocking(r->console, buf, (size_t)n);
        else if (n == 0 || (errno != EINTR && errno != EAGAIN))
            close(r->outfd), r->outfd = -1; /* a pty's master: EIO, no slave left */
    }
    if (err->revents & (POLLIN | POLLHUP | POLLERR)) {
        ssize_t n = read(r->errfd, buf, sizeof(buf));
        if (n > 0)
            write_all_blocking(r->errport, buf, (size_t)n);
        else if (n == 0 || errno != EINTR)
            close(r->errfd), r->errfd = -1;
    }
}

/* One control frame from the host. */
static void relay_channel(struct relay *r)
{
    const struct guest_command *c = r->c;
    json_t *m = vm_frame_read(guest_channel, 1000);
    if (!m)
        guest_fail("the channel failed: %s", strerror(errno));
    const char *type = json_string_value(json_object_get(m, "t"));
    if (type && strcmp(type, "stdin-eof") == 0 && !c->pty) {
        /* (A terminal's input has no end: the master stays open,
         * as on the ns backend.) */
        json_t *bytes = json_object_get(m, "bytes");
        r->eof_after = json_is_integer(bytes) ? json_integer_value(bytes) : 0;
    } else if (type && strcmp(type, "probe") == 0) {
        vm_probe_request(m);
    } else if (type && strcmp(type, "signal") == 0) {
        int sig = (int)json_integer_value(json_object_get(m, "signal"));
        if (sig > 0 && sig < 65 && c->pty)
            vm_pty_signal(&r->pty, r->child, sig);
        else if (sig > 0 && sig < 65)
            kill(-r->child, sig);
    } else if (type && strcmp(type, "resize") == 0 && c->pty) {
        vm_pty_resize(&r->pty, m);
    }
    json_decref(m);
}

/* The host's stdin ended and all it sent has arrived: what was read is
 * still delivered, then the command's stdin is closed. */
static void relay_stdin_eof(struct relay *r)
{
    if (!r->stdin_open || r->eof_after < 0 || r->in_total < (unsigned long long)r->eof_after)
        return;
    r->stdin_open = false;
    fcntl(r->in_w, F_SETFL, 0);
    if (r->inlen > 0)
        write_all_blocking(r->in_w, r->inbuf + r->inoff, r->inlen);
    r->inlen = 0;
    close(r->in_w);
    r->in_w = -1;
}

/* Children reaped: a probe's (vm-probe.c), or the command's status. */
static void relay_reap(struct relay *r)
{
    struct signalfd_siginfo si;
    while (read(r->sigfd, &si, sizeof(si)) == sizeof(si))
        ;
    int ws;
    pid_t pid;
    while ((pid = waitpid(-1, &ws, WNOHANG)) > 0) {
        if (vm_probe_reaped(pid, ws))
            continue;
        if (pid == r->child && r->status < 0) {
            r->status = WIFEXITED(ws) ? WEXITSTATUS(ws) : 128 + WTERMSIG(ws);
            r->exited_at = clock_now_ms();
        }
    }
}

/* Until the command has exited and its output is drained (or 500 ms
 * after its exit, for a grandchild that keeps the pipes). */
static void relay_loop(struct relay *r)
{
    for (;;) {
        if (r->status >= 0 &&
            ((r->outfd < 0 && r->errfd < 0) || clock_now_ms() - r->exited_at > 500))
            break;
        struct pollfd all[6 + VM_PROBE_POLLFDS] = {
            {r->stdin_open && r->inlen == 0 ? r->console : -1, POLLIN, 0},
            {r->stdin_open && r->inlen > 0 ? r->in_w : -1, POLLOUT, 0},
            {r->outfd, POLLIN, 0},
            {r->errfd, POLLIN, 0},
            {guest_channel, POLLIN, 0},
            {r->sigfd, POLLIN, 0},
        };
        vm_probe_pollfds(all + 6);
        int timeout = vm_probe_timeout_ms();
        if (r->status >= 0 && (timeout < 0 || timeout > 100))
            timeout = 100;
        if (poll(all, ARRAY_SIZE(all), timeout) < 0 && errno != EINTR)
            guest_fail("poll: %s", strerror(errno));
        vm_probe_events(all + 6);
        relay_stdin(r, &all[0], &all[1]);
        relay_output(r, &all[2], &all[3]);
        if (all[4].revents & POLLIN)
            relay_channel(r);
        relay_stdin_eof(r);
        if (all[5].revents & POLLIN)
            relay_reap(r);
    }
}

/* The exit report, with how the guest's Docker daemon fared; then off. */
static void relay_finish(const struct relay *r) __attribute__((noreturn));

static void relay_finish(const struct relay *r)
{
    tcdrain(r->console);
    vm_probe_finish();
    json_t *m = json_pack("{s:s,s:i}", "t", "exit", "status", r->status);
    /* How the guest's Docker daemon fared (started on first use, so only
     * known now), for `cordon --debug run`. */
    json_error_t jerr;
    json_t *docker = json_load_file(VM_DOCKER_STATUS, 0, &jerr);
    if (m && docker)
        json_object_set_new(m, "docker", docker);
    else
        json_decref(docker);
    if (m)
        vm_frame_write(guest_channel, m);
    json_decref(m);
    guest_poweroff();
}

void guest_run_relayed(const struct guest_command *c)
{
    static struct relay r;
    r = (struct relay){.c = c, .stdin_open = true, .eof_after = -1, .status = -1};
    r.console = console_open();
    r.errport = guest_open_port(VM_PORT_STDERR);
    /* `cordon verify NAME` sees PID 1 as on ns (the probe reads its comm). */
    prctl(PR_SET_NAME, "cordon-init");
    vm_probe_setup(guest_channel, guest_exec_probe, c);
    command_start(&r);
    relay_loop(&r);
    relay_finish(&r);
}
