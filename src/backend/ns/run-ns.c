/* `cordon run` and `cordon shell` on the ns backend (the backend's run
 * operation): a single-threaded loop over a signalfd, the sandbox's pidfd,
 * for a shell on a terminal the pty relay, and the session's control
 * socket (`cordon verify NAME`), whose probe the sandbox's init runs when
 * asked over its channel (proto/init-channel.h). Host context, unprivileged
 * supervisor. */
#include "backend/ns/ns.h"
#include "net/fdpass.h"
#include "proto/init-channel.h"
#include "supervisor/control.h"
#include "supervisor/launch.h"
#include "supervisor/lifecycle.h"
#include "supervisor/verify.h"
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

struct supervise {
    struct ns_sandbox *sb;
    int sigfd;
    int master;          /* pty master, or -1 */
    int chan;            /* init's request channel (SOCK_SEQPACKET), or -1 */
    struct control *ctl; /* the control socket, or NULL */
    const struct launch *l;
    const char *state_dir;
    bool shell;
    /* The verify in flight (one at a time): init runs its probe. */
    struct verify_run *verify;
    uint64_t verify_conn;
    char *out;
    size_t out_len;
};

static int exit_status_of(const siginfo_t *si)
{
    if (si->si_code == CLD_EXITED)
        return si->si_status;
    return 128 + si->si_status;
}

static void verify_end(struct supervise *s)
{
    verify_free(s->verify);
    s->verify = NULL;
    s->verify_conn = 0;
    free(s->out);
    s->out = NULL;
    s->out_len = 0;
}

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

/* `cordon verify NAME` asks: the host side now, the probe through init. */
static void start_verify(struct supervise *s, uint64_t conn)
{
    if (s->verify) {
        control_reply_error(s->ctl, conn, "a verify of this session is already running");
        return;
    }
    if (s->chan < 0) {
        control_reply_error(s->ctl, conn,
                            "the sandbox's init does not answer (its channel is closed)");
        return;
    }
    struct verify_target t = {.name = s->l->name,
                              .l = s->l,
                              .agent_pidfd = -1,
                              .state_dir = s->state_dir,
                              .pid1_comm = "cordon-init",
                              .probe_via = "the probe, a child of the sandbox's init"};
    struct cordon_error err = {0};
    _cleanup_free_ char *request = NULL;
    if (verify_prepare_target(&t, &s->verify, &request, &err) < 0) {
        control_reply_error(s->ctl, conn, "%s", err.message);
        return;
    }
    s->verify_conn = conn;
    size_t len = strlen(request);
    if (len > INIT_PROBE_REQUEST_MAX) {
        control_reply_error(s->ctl, conn, "the probe's request is longer than %d bytes",
                            INIT_PROBE_REQUEST_MAX);
        verify_end(s);
        return;
    }
    for (size_t off = 0; off < len; off += INIT_FRAME_MAX - 1) {
        size_t piece = len - off < INIT_FRAME_MAX - 1 ? len - off : INIT_FRAME_MAX - 1;
        if (chan_send(s->chan, off == 0 ? 'B' : 'R', request + off, piece) < 0) {
            control_reply_error(s->ctl, conn,
                                "the sandbox's init does not take the probe's request");
            verify_end(s);
            return;
        }
    }
    if (chan_send(s->chan, 'G', "", 0) < 0) {
        control_reply_error(s->ctl, conn, "the sandbox's init does not take the probe's request");
        verify_end(s);
    }
}

static void on_control_request(void *ctx, uint64_t conn, const char *op)
{
    struct supervise *s = ctx;
    if (control_run_request(s->ctl, conn, op, s->l->name, s->shell, s->sb->pid, s->verify != NULL))
        start_verify(s, conn);
}

/* The probe ended ("exit N", "signal N", "timeout" or an error, from
 * init): judged as sandbox_verify judges the bash tool's output. */
static void finish_verify(struct supervise *s, const char *end)
{
    json_t *report = verify_finish_init_probe(s->verify, s->out ? s->out : "", end);
    control_reply(s->ctl, s->verify_conn, json_pack("{s:b, s:o}", "ok", 1, "report", report));
    verify_end(s);
}

/* A frame from init; false when the channel is gone. */
static bool chan_frame(struct supervise *s)
{
    char frame[INIT_FRAME_MAX + 1];
    struct iovec iov = {frame, INIT_FRAME_MAX};
    union {
        char buf[CMSG_SPACE(sizeof(int))];
        struct cmsghdr align;
    } u;
    struct msghdr msg = {
        .msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf, .msg_controllen = sizeof(u.buf)};
    ssize_t n = recvmsg(s->chan, &msg, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
    if (n < 0)
        return errno == EAGAIN || errno == EINTR;
    int fd = -1;
    for (struct cmsghdr *c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
        if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS &&
            c->cmsg_len == CMSG_LEN(sizeof(int)))
            memcpy(&fd, CMSG_DATA(c), sizeof(int));
    }
    _cleanup_close_ int pidfd = fd;
    if (n == 0)
        return false;
    frame[n] = '\0';
    if (!s->verify)
        return true; /* the answer to a verify given up on */
    if (frame[0] == 'S') {
        /* The probe waits for its stdin: read its /proc now, then let it
         * go on. */
        verify_set_agent(s->verify, pidfd);
        chan_send(s->chan, 'W', "", 0);
    } else if (frame[0] == 'O') {
        size_t len = (size_t)n - 1;
        if (s->out_len + len > INIT_PROBE_OUTPUT_MAX)
            return true;
        char *grown = realloc(s->out, s->out_len + len + 1);
        if (!grown)
            return true;
        s->out = grown;
        memcpy(s->out + s->out_len, frame + 1, len);
        s->out_len += len;
        s->out[s->out_len] = '\0';
    } else if (frame[0] == 'X') {
        finish_verify(s, frame + 1);
    }
    return true;
}

static void chan_gone(struct supervise *s, const char *why)
{
    if (s->chan >= 0)
        close(s->chan);
    s->chan = -1;
    if (s->verify) {
        control_reply_error(s->ctl, s->verify_conn,
                            "sandbox %s: %s before the audit ended: nothing was "
                            "audited",
                            s->l->name, why);
        verify_end(s);
    }
}

/* Runs until the sandbox's PID 1 exits; returns the exit status to use. */
static int supervise_loop(struct supervise *s)
{
    bool stdin_open = s->master >= 0;
    char buf[16384];
    for (;;) {
        struct pollfd fds[6] = {
            {s->sigfd, POLLIN, 0},  {s->sb->pidfd, POLLIN, 0},
            {s->master, POLLIN, 0}, {stdin_open ? 0 : -1, POLLIN, 0},
            {s->chan, POLLIN, 0},   {s->ctl ? control_fd(s->ctl) : -1, POLLIN, 0},
        };
        if (poll(fds, 6, gitguard_poll_timeout(s->l->git, -1)) < 0) {
            if (errno == EINTR)
                continue;
            return CORDON_EXIT_FAILURE;
        }
        gitguard_sync_if_due(s->l->git);
        if (fds[0].revents & POLLIN) {
            struct signalfd_siginfo si;
            if (read(s->sigfd, &si, sizeof(si)) == sizeof(si)) {
                if (si.ssi_signo == SIGWINCH) {
                    if (s->master >= 0)
                        copy_winsize(0, s->master);
                } else {
                    /* To the sandbox's init, which passes it on to the
                     * command's process group. */
                    kill(s->sb->pid, (int)si.ssi_signo);
                }
            }
        }
        if (fds[2].revents & (POLLIN | POLLHUP | POLLERR)) {
            ssize_t n = read(s->master, buf, sizeof(buf));
            if (n > 0)
                fs_write_all(1, buf, (size_t)n);
            else if (n < 0 && errno != EAGAIN && errno != EINTR)
                s->master = -1; /* EIO: every slave end is closed */
        }
        if (fds[3].revents & (POLLIN | POLLHUP | POLLERR)) {
            ssize_t n = read(0, buf, sizeof(buf));
            if (n > 0)
                fs_write_all(s->master, buf, (size_t)n);
            else if (n == 0 || (errno != EAGAIN && errno != EINTR))
                stdin_open = false;
        }
        if ((fds[4].revents & (POLLIN | POLLHUP | POLLERR)) && !chan_frame(s)) {
            /* init closes its channel when it exits: then the answer
             * names the command's status, below. */
            struct pollfd p = {s->sb->pidfd, POLLIN, 0};
            if (poll(&p, 1, 1000) == 1) {
                close(s->chan);
                s->chan = -1;
                fds[1].revents |= POLLIN;
            } else {
                chan_gone(s, "the sandbox's init closed its channel");
            }
        }
        if (fds[5].revents & POLLIN)
            control_dispatch(s->ctl, on_control_request, s);
        if (fds[1].revents & POLLIN) {
            siginfo_t si = {0};
            if (waitid(P_PIDFD, (id_t)s->sb->pidfd, &si, WEXITED) < 0)
                return CORDON_EXIT_FAILURE;
            /* What init said before it exited still counts. */
            while (s->chan >= 0 && s->verify) {
                struct pollfd p = {s->chan, POLLIN, 0};
                if (poll(&p, 1, 0) <= 0 || !chan_frame(s))
                    break;
            }
            if (s->verify) {
                char why[128];
                snprintf(why, sizeof(why), "its command exited (status %d)", exit_status_of(&si));
                chan_gone(s, why);
            }
            /* Drain what the terminal still holds. */
            while (s->master >= 0) {
                struct pollfd p = {s->master, POLLIN, 0};
                if (poll(&p, 1, 50) <= 0)
                    break;
                ssize_t n = read(s->master, buf, sizeof(buf));
                if (n <= 0)
                    break;
                fs_write_all(1, buf, (size_t)n);
            }
            return exit_status_of(&si);
        }
    }
}

int ns_run(struct launch *l, struct lifecycle *lc, char **agent_argv, bool shell)
{
    struct cordon_error err = {0};
    l->spec.argv = agent_argv;
    l->spec.init_in_process = true;

    /* init's channel: the terminal's master (--pty), then the probe's
     * requests and answers (proto/init-channel.h). */
    int control[2] = {-1, -1};
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, control) < 0) {
        log_error("socketpair: %s", strerror(errno));
        return CORDON_EXIT_FAILURE;
    }
    l->spec.control_fd = control[1];

    /* Signals become events on the loop, from before the sandbox exists, so
     * none is lost or kills the supervisor between start and supervise. */
    sigset_t mask;
    sigemptyset(&mask);
    backend_relayed_signals(&mask);
    sigaddset(&mask, SIGWINCH);
    sigaddset(&mask, SIGPIPE);
    sigprocmask(SIG_BLOCK, &mask, NULL);
    _cleanup_close_ int sigfd = signalfd(-1, &mask, SFD_CLOEXEC);

    struct ns_sandbox sb;
    int rc = ns_sandbox_start(&l->spec, &sb, &err);
    if (control[1] >= 0)
        close(control[1]);
    if (rc < 0) {
        log_error("%s", err.message);
        if (control[0] >= 0)
            close(control[0]);
        return CORDON_EXIT_FAILURE;
    }
    log_debug("sandbox %s started (pid %d); limits: %s", l->name, sb.pid, sb.limits_applied);
    struct sandbox wrap = {
        .ops = &ns_backend_ops, .pid = sb.pid, .pidfd = sb.pidfd, .channel_fd = -1, .priv = &sb};
    if (lifecycle_started(lc, l, &wrap, &err) < 0) {
        log_error("%s", err.message);
        kill(sb.pid, SIGKILL);
        waitid(P_PIDFD, (id_t)sb.pidfd, NULL, WEXITED);
        ns_sandbox_release(&sb);
        return CORDON_EXIT_FAILURE;
    }

    struct supervise s = {.sb = &sb,
                          .sigfd = sigfd,
                          .master = -1,
                          .chan = -1,
                          .l = l,
                          .state_dir = lc->owner.dir,
                          .shell = shell};
    struct term_raw term = {.active = false};
    if (l->pty) {
        s.master = recv_fd(control[0]);
        if (s.master >= 0) {
            copy_winsize(0, s.master);
            term_raw_enter(&term, 0);
        }
    }
    s.chan = TAKE_FD(control[0]);
    /* After the lock and the sandbox: `cordon verify NAME` reaches this
     * session through it. */
    if (control_open(lc->owner.dir_fd, l->name, &s.ctl, &err) < 0) {
        s.ctl = NULL;
        log_warn("%s: `cordon verify %s` will not reach this session", err.message, l->name);
    }
    int status = supervise_loop(&s);
    /* The socket goes with the sandbox it speaks for. */
    control_close(s.ctl);
    verify_end(&s);
    if (s.chan >= 0)
        close(s.chan);
    term_raw_restore(&term);
    if (s.master >= 0)
        close(s.master);
    ns_sandbox_release(&sb);
    if (l->net_session.policy) {
        net_session_stop(&l->net_session);
        l->net_session.policy = NULL;
    }
    return status;
}
