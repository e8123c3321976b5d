/* `cordon run` and `cordon shell` on the ns backend (the backend's run
 * operation): starts the sandbox, then hands the shared relay
 * (backend/relay.h) what is ns's own: signals go to the sandbox's init, a
 * terminal is the pty master init passed over its channel, and `cordon
 * verify NAME`'s probe is run by init when asked over that channel
 * (proto/init-channel.h). Host context, unprivileged supervisor. */
#include "backend/ns/ns.h"
#include "net/fdpass.h"
#include "proto/init-channel.h"
#include "backend/relay.h"
#include "backend/run.h"
#include "supervisor/launch.h"
#include "supervisor/lifecycle.h"
#include "util/cleanup.h"
#include "util/fs.h"
#include "util/log.h"
#include "util/term.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

static int recv_fd(int sock)
{
    char byte;
    int fd = -1;
    return fdpass_recv(sock, &byte, 1, &fd) < 0 ? -1 : fd;
}

static void copy_winsize(int from, int to)
{
    struct winsize ws;
    if (ioctl(from, TIOCGWINSZ, &ws) == 0)
        ioctl(to, TIOCSWINSZ, &ws);
}

struct ns_relay {
    struct ns_sandbox *sb;
    int master;  /* pty master, or -1 */
    int chan;    /* init's request channel (SOCK_SEQPACKET), or -1 */
    bool reaped; /* init was waited for */
};

/* One frame to init, waiting a little for room: init drains its channel
 * from a loop that never blocks, so a full channel means it is gone. */
static int chan_send(int fd, char type, const char *data, size_t len)
{
    char frame[INIT_FRAME_MAX];
    frame[0] = type;
    memcpy(frame + 1, data, len);
    for (int waited = 0;;) {
        ssize_t n = send(fd, frame, len + 1, MSG_DONTWAIT | MSG_NOSIGNAL);
        if (n == (ssize_t)(len + 1))
            return 0;
        if (n < 0 && errno == EINTR)
            continue;
        if (n >= 0 || errno != EAGAIN || waited >= 5000)
            return -1;
        struct pollfd p = {fd, POLLOUT, 0};
        poll(&p, 1, 100);
        waited += 100;
    }
}

/* `cordon verify NAME` asks (verify-server.h): the request to init in
 * pieces, then 'G' starts the probe. */
static int probe_start(struct verify_server *vs, void *ctx, const char *request, size_t len,
                       struct cordon_error *err)
{
    (void)vs;
    struct ns_relay *s = ctx;
    for (size_t off = 0; off < len; off += INIT_FRAME_MAX - 1) {
        size_t piece = len - off < INIT_FRAME_MAX - 1 ? len - off : INIT_FRAME_MAX - 1;
        if (chan_send(s->chan, off == 0 ? 'B' : 'R', request + off, piece) < 0)
            return error_set(err, 0, "the sandbox's init does not take the probe's request");
    }
    if (chan_send(s->chan, 'G', "", 0) < 0)
        return error_set(err, 0, "the sandbox's init does not take the probe's request");
    return 0;
}

static const struct verify_server_ops ns_verify_ops = {
    .probe_via = "the probe, a child of the sandbox's init",
    .init_name = "the sandbox's init",
    .deadline_ms = INIT_PROBE_TIMEOUT_MS + VERIFY_SERVER_GRACE_MS,
    .start = probe_start};

/* A frame from init; false when the channel is gone. */
static bool chan_frame(struct ns_relay *s, struct verify_server *vs)
{
    char frame[INIT_FRAME_MAX + 1];
    int fd;
    ssize_t n = fdpass_recv_one(s->chan, frame, INIT_FRAME_MAX, MSG_DONTWAIT, &fd, NULL);
    if (n < 0)
        return errno == EAGAIN || errno == EINTR;
    _cleanup_close_ int pidfd = fd;
    if (n == 0)
        return false;
    frame[n] = '\0';
    if (!verify_server_busy(vs))
        return true; /* the answer to a verify given up on */
    if (frame[0] == 'S') {
        /* The probe waits for its stdin: read its /proc now, then let it
         * go on. */
        verify_server_set_agent(vs, pidfd);
        chan_send(s->chan, 'W', "", 0);
    } else if (frame[0] == 'O') {
        verify_server_output(vs, frame + 1, (size_t)n - 1);
    } else if (frame[0] == 'X') {
        verify_server_finish(vs, frame + 1);
    }
    return true;
}

static void ns_signal(struct relay *r, void *ctx, const struct signalfd_siginfo *si)
{
    (void)r;
    struct ns_relay *s = ctx;
    /* To the sandbox's init, which passes it on to the command's process
     * group. */
    kill(s->sb->pid, (int)si->ssi_signo);
}

static void ns_resize(struct relay *r, void *ctx)
{
    (void)r;
    struct ns_relay *s = ctx;
    if (s->master >= 0)
        copy_winsize(0, s->master);
}

static bool ns_channel(struct relay *r, void *ctx)
{
    struct ns_relay *s = ctx;
    if (chan_frame(s, relay_verify(r)))
        return true;
    /* init closes its channel when it exits: then the answer names the
     * command's status (relay.c, after ns_exited). */
    struct pollfd p = {s->sb->pidfd, POLLIN, 0};
    bool exited = poll(&p, 1, 1000) == 1;
    close(s->chan);
    s->chan = -1;
    if (!exited)
        verify_server_gone(relay_verify(r), "the sandbox's init closed its channel");
    return false;
}

static int ns_exited(struct relay *r, void *ctx)
{
    struct ns_relay *s = ctx;
    siginfo_t si;
    s->reaped = relay_reap(r, &si) == 0;
    int status = s->reaped ? relay_exit_status(&si) : CORDON_EXIT_FAILURE;
    /* What init said before it exited still counts. */
    struct verify_server *vs = relay_verify(r);
    while (s->chan >= 0 && verify_server_busy(vs)) {
        struct pollfd p = {s->chan, POLLIN, 0};
        if (poll(&p, 1, 0) <= 0 || !chan_frame(s, vs))
            break;
    }
    return status;
}

static const struct relay_ops ns_relay_ops = {
    .signal = ns_signal, .resize = ns_resize, .channel = ns_channel, .exited = ns_exited};

/* The run's own state, beside the relay's. */
struct ns_run {
    struct ns_relay relay;
    struct ns_sandbox ns;
    bool started;   /* ns holds a sandbox until teardown */
    int control[2]; /* init's channel: ours, and init's end until it started */
};

static int ns_run_start(struct backend_run *r, struct cordon_error *err)
{
    struct ns_run *n = r->ctx;
    struct launch *l = r->l;
    l->spec.argv = r->agent_argv;
    l->spec.init_in_process = true;
    /* init's channel: the terminal's master (--pty), then the probe's
     * requests and answers (proto/init-channel.h). */
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, n->control) < 0)
        return error_set(err, errno, "socketpair");
    l->spec.control_fd = n->control[1];
    int rc = ns_sandbox_start(&l->spec, &n->ns, err);
    close(n->control[1]);
    n->control[1] = -1;
    if (rc < 0)
        return -1;
    n->started = true;
    log_debug("sandbox %s started (pid %d); limits: %s", l->name, n->ns.pid, n->ns.limits_applied);
    r->sb = (struct sandbox){.ops = &ns_backend_ops,
                             .pid = n->ns.pid,
                             .pidfd = n->ns.pidfd,
                             .channel_fd = -1,
                             .priv = &n->ns};
    return 0;
}

static void ns_run_attach(struct backend_run *r, struct relay_spec *spec)
{
    struct ns_run *n = r->ctx;
    struct ns_relay *s = &n->relay;
    if (r->l->pty) {
        s->master = recv_fd(n->control[0]);
        if (s->master >= 0) {
            copy_winsize(0, s->master);
            term_raw_enter(&r->term, 0);
        }
    }
    s->chan = TAKE_FD(n->control[0]);
    spec->ctx = s;
    spec->input = spec->output = s->master;
    spec->channel = s->chan;
    /* The host-side evidence is the probe's own, sent by init ('S'). */
    spec->verify.ops = &ns_verify_ops;
    spec->verify.ctx = s;
}

static void ns_run_teardown(struct backend_run *r)
{
    struct ns_run *n = r->ctx;
    struct ns_relay *s = &n->relay;
    for (int i = 0; i < 2; i++) {
        if (n->control[i] >= 0)
            close(n->control[i]);
    }
    if (s->chan >= 0)
        close(s->chan);
    term_raw_restore(&r->term);
    if (s->master >= 0)
        close(s->master);
    if (n->started) {
        /* Not reaped by the relay (a failure before or in it): init and
         * everything in its namespaces go now. */
        if (!s->reaped) {
            kill(n->ns.pid, SIGKILL);
            waitid(P_PIDFD, (id_t)n->ns.pidfd, NULL, WEXITED);
        }
        pid_t guard;
        ns_sandbox_release_async(&n->ns, &guard);
        lifecycle_reap_later(r->lc, guard);
    }
    /* The proxy dies while the session's end goes on (the git guard's
     * look, the trust guard); lifecycle_end reaps it before the state is
     * released. */
    if (r->l->net_session.policy)
        net_session_kill(&r->l->net_session);
}

/* relay, resize, start, attach, teardown (backend/run.h) */
static const struct backend_run_ops ns_run_ops = {&ns_relay_ops, true, ns_run_start, ns_run_attach,
                                                  ns_run_teardown};

int ns_run(struct launch *l, struct lifecycle *lc, char **agent_argv, bool shell)
{
    struct ns_run n = {.relay = {.sb = &n.ns, .master = -1, .chan = -1}, .control = {-1, -1}};
    return backend_run(&ns_run_ops, &n, l, lc, agent_argv, shell);
}
