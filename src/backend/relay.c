/* The run-mode relay (relay.h): one single-threaded poll loop for every
 * backend's `cordon run`/`cordon shell`. Host context, unprivileged
 * supervisor. Writes to the user's terminal or pipes block (fs_write_all):
 * the command's output is not to be dropped, and a reader that stopped
 * reading stops the relay as it would stop the command. */
#include "backend/relay.h"
#include "util/cleanup.h"
#include "util/clock.h"
#include "util/fs.h"
#include "util/log.h"

#include <errno.h>
#include <poll.h>
#include <string.h>
#include <unistd.h>

/* How long the output fds may stay silent while they are drained after the
 * holder ended (what remains is in flight, or held by a straggler). */
#define RELAY_DRAIN_MS 50

struct relay {
    struct relay_spec spec;
    struct verify_server *verify;
    bool stdin_open;
    bool input_ready;
    uint64_t stdin_bytes;
    bool output_open, errors_open, channel_open;
    int status;            /* reported by the sandbox, or -1 */
    long long reported_at; /* when */
};

/* The slots of the poll set. */
enum {
    SLOT_SIGNALS,
    SLOT_HOLDER,
    SLOT_STDIN,
    SLOT_OUTPUT,
    SLOT_ERRORS,
    SLOT_CHANNEL,
    SLOT_NET, /* the deferred refusing proxy's listener (net.h) */
    SLOT_VERIFY,
    SLOT_COUNT = SLOT_VERIFY + VERIFY_SERVER_NFDS,
};

int relay_signals_open(bool resize)
{
    sigset_t mask;
    sigemptyset(&mask);
    backend_relayed_signals(&mask);
    sigaddset(&mask, SIGPIPE);
    if (resize)
        sigaddset(&mask, SIGWINCH);
    sigprocmask(SIG_BLOCK, &mask, NULL);
    return signalfd(-1, &mask, SFD_CLOEXEC);
}

struct relay_spec relay_spec_init(const struct relay_ops *ops, void *ctx, struct sandbox *sb,
                                  struct launch *l, struct lifecycle *lc, bool shell, int sigfd)
{
    return (struct relay_spec){.ops = ops,
                               .ctx = ctx,
                               .sb = sb,
                               .l = l,
                               .lc = lc,
                               .shell = shell,
                               .sigfd = sigfd,
                               .input = -1,
                               .output = -1,
                               .errors = -1,
                               .channel = -1,
                               .verify = {.agent_pidfd = -1}};
}

int relay_exit_status(const siginfo_t *si)
{
    if (si->si_code == CLD_EXITED)
        return si->si_status;
    return 128 + si->si_status;
}

int relay_timeout_min(int a_ms, int b_ms)
{
    if (a_ms < 0)
        return b_ms;
    if (b_ms < 0)
        return a_ms;
    return a_ms < b_ms ? a_ms : b_ms;
}

struct verify_server *relay_verify(struct relay *r)
{
    return r->verify;
}

void relay_input_ready(struct relay *r)
{
    r->input_ready = true;
}

void relay_exit_reported(struct relay *r, int status)
{
    r->status = status;
    r->reported_at = clock_now_ms();
}

int relay_reap(struct relay *r, siginfo_t *si)
{
    *si = (siginfo_t){0};
    return waitid(P_PIDFD, (id_t)r->spec.sb->pidfd, si, WEXITED);
}

/* Copies what is readable now; false at EOF or on an error. */
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

/* What fd still holds once the holder is gone: EOF, EIO (no pty slave
 * left) or silence ends it. */
static void drain(int fd, int to)
{
    while (fd >= 0) {
        struct pollfd p = {fd, POLLIN, 0};
        if (poll(&p, 1, RELAY_DRAIN_MS) <= 0 || !pump(fd, to))
            break;
    }
}

static void on_signal(struct relay *r)
{
    struct signalfd_siginfo si;
    if (read(r->spec.sigfd, &si, sizeof(si)) != sizeof(si))
        return;
    if (si.ssi_signo == SIGWINCH) {
        if (r->spec.ops->resize)
            r->spec.ops->resize(r, r->spec.ctx);
        return;
    }
    r->spec.ops->signal(r, r->spec.ctx, &si);
}

static void on_stdin(struct relay *r)
{
    char buf[16384];
    ssize_t n = read(0, buf, sizeof(buf));
    if (n > 0) {
        /* The write below may block until the sandbox reads; a sandbox
         * waiting on the deferred proxy meanwhile would wait for this loop
         * forever: the proxy starts first. */
        net_session_start_pending(&r->spec.l->net_session);
        fs_write_all(r->spec.input, buf, (size_t)n);
        r->stdin_bytes += (uint64_t)n;
    } else if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
        r->stdin_open = false;
        if (r->spec.ops->stdin_eof)
            r->spec.ops->stdin_eof(r, r->spec.ctx, r->stdin_bytes);
    }
}

static void poll_set(struct relay *r, struct pollfd *p)
{
    bool stdin_flows = r->stdin_open && (!r->spec.input_gated || r->input_ready);
    bool channel = r->channel_open && r->status < 0;
    p[SLOT_SIGNALS] = (struct pollfd){r->spec.sigfd, POLLIN, 0};
    p[SLOT_HOLDER] = (struct pollfd){r->spec.sb->pidfd, POLLIN, 0};
    p[SLOT_STDIN] = (struct pollfd){stdin_flows ? 0 : -1, POLLIN, 0};
    p[SLOT_OUTPUT] = (struct pollfd){r->output_open ? r->spec.output : -1, POLLIN, 0};
    p[SLOT_ERRORS] = (struct pollfd){r->errors_open ? r->spec.errors : -1, POLLIN, 0};
    p[SLOT_CHANNEL] = (struct pollfd){channel ? r->spec.channel : -1, POLLIN, 0};
    p[SLOT_NET] = (struct pollfd){net_session_pending_fd(&r->spec.l->net_session), POLLIN, 0};
    verify_server_poll(r->verify, p + SLOT_VERIFY);
}

/* The poll timeout: the verify server's deadline, the grace after a
 * reported exit (0 when it passed), the git sync's. */
static int loop_timeout(const struct relay *r, bool *grace_over)
{
    int timeout = verify_server_timeout_ms(r->verify);
    *grace_over = false;
    if (r->status >= 0) {
        long long left = r->reported_at + r->spec.exit_grace_ms - clock_now_ms();
        if (left <= 0)
            *grace_over = true;
        timeout = relay_timeout_min(timeout, left > 0 ? (int)left : 0);
    }
    return gitguard_poll_timeout(r->spec.l->git, timeout);
}

#define READY(slot) (p[slot].revents & (POLLIN | POLLHUP | POLLERR))

static int relay_loop(struct relay *r)
{
    for (;;) {
        struct pollfd p[SLOT_COUNT];
        poll_set(r, p);
        bool grace_over;
        int timeout = loop_timeout(r, &grace_over);
        if (grace_over) {
            log_debug("the sandbox reported its exit but did not end; stopping it");
            return r->status;
        }
        if (poll(p, SLOT_COUNT, timeout) < 0) {
            if (errno == EINTR)
                continue;
            return CORDON_EXIT_FAILURE;
        }
        gitguard_sync_if_due(r->spec.l->git);
        verify_server_handle(r->verify, p + SLOT_VERIFY);
        if (p[SLOT_SIGNALS].revents & POLLIN)
            on_signal(r);
        if (READY(SLOT_OUTPUT) && !pump(r->spec.output, 1))
            r->output_open = false; /* EIO: every slave end is closed */
        if (READY(SLOT_ERRORS) && !pump(r->spec.errors, 2))
            r->errors_open = false;
        if (READY(SLOT_STDIN))
            on_stdin(r);
        if (p[SLOT_NET].revents)
            net_session_start_pending(&r->spec.l->net_session);
        if (READY(SLOT_CHANNEL) && !r->spec.ops->channel(r, r->spec.ctx))
            r->channel_open = false;
        if (p[SLOT_HOLDER].revents & POLLIN) {
            int status = r->spec.ops->exited(r, r->spec.ctx);
            verify_server_exited(r->verify, status);
            drain(r->spec.output, 1);
            drain(r->spec.errors, 2);
            return status;
        }
    }
}

int relay_run(const struct relay_spec *spec)
{
    struct relay r = {.spec = *spec,
                      .stdin_open = spec->input >= 0,
                      .output_open = spec->output >= 0,
                      .errors_open = spec->errors >= 0,
                      .channel_open = spec->channel >= 0 && spec->ops->channel,
                      .status = -1};
    if (spec->verify.ops) {
        struct verify_server_spec vs = spec->verify;
        vs.l = spec->l;
        vs.sb = spec->sb;
        vs.state_dir = spec->lc->owner.dir;
        vs.state_dir_fd = spec->lc->owner.dir_fd;
        vs.shell = spec->shell;
        struct cordon_error err = {0};
        /* After the lock and the sandbox: `cordon verify NAME` reaches this
         * session through it. */
        if (verify_server_open(&vs, &r.verify, &err) < 0) {
            r.verify = NULL;
            log_warn("%s: `cordon verify %s` will not reach this session", err.message,
                     spec->l->name);
        }
    }
    int status = relay_loop(&r);
    /* The socket goes with the sandbox it speaks for. */
    verify_server_close(r.verify);
    return status;
}
