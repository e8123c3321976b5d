/* The sandbox's init for `cordon run` and `cordon shell`: PID 1 runs the
 * command in a session of its own, forwards signals to its process group,
 * reaps every orphan, and exits with the command's status (128+signal when
 * it was killed). With --pty the terminal is made here, on the sandbox's own
 * devpts, and its master end is sent to the supervisor over fd 3. With
 * --control it also runs `cordon-agent probe` when the supervisor asks on
 * fd 3 (`cordon verify NAME`, init.h): a sibling of the command, started
 * here so that it is under exactly the sandbox's restrictions, killed when
 * it outlives INIT_PROBE_TIMEOUT_MS, holding none of init's descriptors.
 *
 * Runs inside the sandbox, unprivileged, under seccomp: either in
 * cordon-agent (`cordon-agent init ...`), or directly in the namespace
 * backend's child after its set-up (no exec of a second binary at start).
 * In the latter case it runs between clone() and the command's exec: no
 * allocation, no stdio. */
#include "agent/init.h"
#include "agent/path-prune.h"
#include "agent/probe-io.h"
#include "proto/init-channel.h"
#include "net/fdpass.h"
#include "util/error.h"
#include "util/fs.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#define CONTROL_FD INIT_CONTROL_FD

extern char **environ;

static const int forwarded_signals[] = {SIGINT,  SIGTERM, SIGHUP,   SIGQUIT,
                                        SIGUSR1, SIGUSR2, SIGWINCH, SIGCONT};

static void agent_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

static void agent_fail(const char *fmt, ...)
{
    /* A stack buffer and write(2): this also runs in the sandbox's child
     * between clone() and the command's exec, where stdio is off limits. */
    char msg[1024] = "cordon: ";
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg + 8, sizeof(msg) - 9, fmt, ap);
    va_end(ap);
    size_t n = strlen(msg);
    msg[n++] = '\n';
    ssize_t w = write(2, msg, n);
    (void)w;
    _exit(CORDON_EXIT_FAILURE);
}

struct init_options {
    bool pty;
    bool ctty; /* stdin is the terminal already (docker run -t): the command's */
    bool control;
    long memory_mib;
    char **argv;
};

static void parse_init(int argc, char **argv, struct init_options *o)
{
    int i = 2;
    for (; i < argc; i++) {
        if (strcmp(argv[i], "--") == 0) {
            i++;
            break;
        } else if (strcmp(argv[i], "--pty") == 0) {
            o->pty = true;
        } else if (strcmp(argv[i], "--ctty") == 0) {
            o->ctty = true;
        } else if (strcmp(argv[i], "--control") == 0) {
            o->control = true;
        } else if (strcmp(argv[i], "--memory-mib") == 0 && i + 1 < argc) {
            o->memory_mib = strtol(argv[++i], NULL, 10);
        } else {
            agent_fail("agent: unknown option %s", argv[i]);
        }
    }
    if (i >= argc)
        agent_fail("agent: no command given");
    o->argv = argv + i;
}

/* In the forked child: a session of its own, the terminal (if any) as its
 * controlling tty, per-command limits, then exec. */
static void exec_command(const struct init_options *o, const char *slave, char *const *envp)
{
    sigset_t none;
    sigemptyset(&none);
    for (size_t i = 0; i < sizeof(forwarded_signals) / sizeof(forwarded_signals[0]); i++)
        signal(forwarded_signals[i], SIG_DFL);
    sigprocmask(SIG_SETMASK, &none, NULL);
    if (setsid() < 0)
        agent_fail("setsid: %s", strerror(errno));
    if (slave) {
        int fd = open(slave, O_RDWR);
        if (fd < 0)
            agent_fail("open %s: %s", slave, strerror(errno));
        if (ioctl(fd, TIOCSCTTY, 0) < 0)
            agent_fail("TIOCSCTTY: %s", strerror(errno));
        for (int i = 0; i < 3; i++)
            dup2(fd, i);
        if (fd > 2)
            close(fd);
    } else if (o->ctty && ioctl(0, TIOCSCTTY, 0) < 0) {
        agent_fail("TIOCSCTTY: %s", strerror(errno));
    }
    close(CONTROL_FD);
    if (o->memory_mib > 0) {
        rlim_t bytes = (rlim_t)o->memory_mib << 20;
        struct rlimit rl = {bytes, bytes};
        setrlimit(RLIMIT_AS, &rl);
    }
    /* PATH lookup and the command's environment are the sandbox's, not
     * whatever this process inherited. */
    if (envp)
        environ = (char **)envp;
    execvp(o->argv[0], o->argv);
    int e = errno;
    char msg[512];
    int n = snprintf(msg, sizeof(msg), "cordon: %s: %s\n", o->argv[0], strerrordesc_np(e));
    ssize_t w = write(2, msg, n > 0 && (size_t)n < sizeof(msg) ? (size_t)n : 0);
    (void)w;
    _exit(e == ENOENT ? CORDON_EXIT_NOT_FOUND : CORDON_EXIT_CANNOT_EXEC);
}

/* --- the probe (--control) --- */

/* Static: this may run in the set-up child, where nothing is allocated. */
static struct {
    char request[INIT_PROBE_REQUEST_MAX];
    size_t request_len;
    bool request_too_long;
    char output[INIT_PROBE_OUTPUT_MAX];
    struct probe_io io;
    int exec_fd;   /* EOF once it has exec'd (or died): -1 after */
    bool released; /* 'W' came: feed it */
    int status;
    /* The answer being sent: output[sent..] then the 'X' frame. */
    bool answering;
    size_t sent;
    char end[128];
} probe = {.io = PROBE_IO_INIT, .exec_fd = -1};

/* The probe's child side: stdin and stdout/stderr on the pipes, nothing
 * else of init's (fd 3 is not CLOEXEC: it was dup2'ed there), then the
 * agent's probe mode. CTX: the environment. */
static void exec_probe(int in, int out, void *ctx)
{
    char *const *envp = ctx;
    sigset_t none;
    sigemptyset(&none);
    for (size_t i = 0; i < sizeof(forwarded_signals) / sizeof(forwarded_signals[0]); i++)
        signal(forwarded_signals[i], SIG_DFL);
    sigprocmask(SIG_SETMASK, &none, NULL);
    setsid(); /* a group of its own: a timeout kills all it started */
    if (dup2(in, 0) < 0 || dup2(out, 1) < 0 || dup2(out, 2) < 0)
        _exit(CORDON_EXIT_FAILURE);
    close(CONTROL_FD);
    /* The sandbox's rlimits and cgroups are inherited; the command's own
     * RLIMIT_AS (--memory-mib) is not applied: the probe is cordon's code,
     * and a sanitizer build reserves more address space than any limit (the
     * MCP agent's probe has none either). */
    char *argv[] = {"cordon-agent", "probe", NULL};
    execve(NS_AGENT_VIEW_PATH, argv, envp ? envp : environ);
    char msg[256];
    int n = snprintf(msg, sizeof(msg), "cordon-init: exec %s: %s\n", NS_AGENT_VIEW_PATH,
                     strerrordesc_np(errno));
    ssize_t w = write(2, msg, n > 0 && (size_t)n < sizeof(msg) ? (size_t)n : 0);
    (void)w;
    _exit(CORDON_EXIT_CANNOT_EXEC);
}

static void probe_answer_now(const char *end)
{
    snprintf(probe.end, sizeof(probe.end), "%s", end);
    probe.answering = true;
    probe.sent = 0;
}

static void probe_start(char *const *envp)
{
    probe.released = false;
    probe.io.output = probe.output;
    probe.io.output_len = 0; /* an error answer carries no output */
    if (probe.request_too_long) {
        probe_answer_now("error: the probe's request is too long");
        return;
    }
    /* Its write end closes with the probe's exec (CLOEXEC). */
    int ex[2];
    if (pipe2(ex, O_CLOEXEC) < 0) {
        probe_answer_now("error: pipe failed");
        return;
    }
    const char *failed =
        probe_io_spawn(&probe.io, probe.request, probe.request_len, exec_probe, (void *)envp);
    close(ex[1]);
    if (failed) {
        close(ex[0]);
        probe_answer_now(failed);
        return;
    }
    probe.exec_fd = ex[0];
}

/* The probe has exec'd (its write end of exec_fd closed with it): only now
 * is its /proc its own, readable by the host (before exec it was a copy of
 * init, which the host may not read). The host reads it through a pidfd
 * while the probe waits for its stdin (its pid here means nothing on the
 * host). */
static void probe_execed(void)
{
    fs_close(&probe.exec_fd);
    int pidfd = (int)syscall(SYS_pidfd_open, probe.io.pid, 0);
    int rc = fdpass_send(CONTROL_FD, "S", 1, pidfd);
    if (pidfd >= 0)
        close(pidfd);
    if (rc < 0)
        probe.released = true; /* nobody to wait for */
}

/* After the probe was reaped: the rest of its output, then the answer. */
static void probe_finish(void)
{
    fs_close(&probe.exec_fd);
    char end[128];
    probe_io_reaped(&probe.io, probe.status, end, sizeof(end));
    probe_answer_now(end);
}

/* Sends what it can of the answer without blocking; false when the
 * channel is gone. */
static bool probe_send_answer(void)
{
    char frame[INIT_FRAME_MAX];
    while (probe.answering) {
        size_t len;
        bool last = probe.sent >= probe.io.output_len;
        if (last) {
            frame[0] = 'X';
            len = strlen(probe.end);
            memcpy(frame + 1, probe.end, len);
        } else {
            frame[0] = 'O';
            len = probe.io.output_len - probe.sent;
            if (len > sizeof(frame) - 1)
                len = sizeof(frame) - 1;
            memcpy(frame + 1, probe.output + probe.sent, len);
        }
        ssize_t n = send(CONTROL_FD, frame, len + 1, MSG_DONTWAIT | MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && errno == EAGAIN)
            return true;
        if (n < 0)
            return false;
        if (last) {
            probe.answering = false;
            probe.request_len = 0;
            probe.request_too_long = false;
        } else {
            probe.sent += len;
        }
    }
    return true;
}

/* One frame from the supervisor; false when the channel is gone. */
static bool control_frame(const struct init_options *o, char *const *envp)
{
    char frame[INIT_FRAME_MAX];
    ssize_t n = recv(CONTROL_FD, frame, sizeof(frame), MSG_DONTWAIT);
    if (n < 0)
        return errno == EAGAIN || errno == EINTR;
    if (n == 0)
        return false;
    bool busy = probe.io.pid > 0 || probe.answering;
    switch (frame[0]) {
    case 'B':
        if (busy)
            break;
        /* A new request: nothing of one that was never started stays. */
        probe.request_len = 0;
        probe.request_too_long = false;
        /* fall through */
    case 'R':
        if (busy)
            break;
        if ((size_t)n - 1 > sizeof(probe.request) - probe.request_len) {
            probe.request_too_long = true;
            break;
        }
        memcpy(probe.request + probe.request_len, frame + 1, (size_t)n - 1);
        probe.request_len += (size_t)n - 1;
        break;
    case 'G':
        if (!busy)
            probe_start(envp);
        break;
    case 'W':
        if (probe.io.pid > 0)
            probe.released = true;
        break;
    default:
        break; /* not ours to understand */
    }
    return true;
}

/* The command's terminal: with --pty a new one, whose master goes to
 * cordon (slave: its name); with --ctty the one the runtime made ours,
 * let go so the command's session can take it. */
static void init_terminal(const struct init_options *o, char *slave, size_t size)
{
    if (o->pty) {
        int master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
        if (master < 0 || grantpt(master) < 0 || unlockpt(master) < 0 ||
            ptsname_r(master, slave, size) != 0)
            agent_fail("creating a terminal: %s", strerror(errno));
        if (fdpass_send(CONTROL_FD, "T", 1, master) < 0)
            agent_fail("sending the terminal to cordon: %s", strerror(errno));
        close(master);
    }
    if (o->ctty && isatty(0)) {
        /* The runtime made the terminal ours (PID 1's session); the command
         * runs in a session of its own, which can take it as its controlling
         * terminal only once this session has let it go. Giving it up sends
         * SIGHUP to our own group: nothing to act on. */
        signal(SIGHUP, SIG_IGN);
        ioctl(0, TIOCNOTTY);
        signal(SIGHUP, SIG_DFL);
    }
}

/* SIGCHLD and the forwarded signals blocked (into mask, waited for), and
 * SIGPIPE: a probe that leaves before reading its stdin must not end init
 * (the children unblock everything before exec). */
static void init_block_signals(sigset_t *mask)
{
    sigemptyset(mask);
    sigaddset(mask, SIGCHLD);
    for (size_t i = 0; i < sizeof(forwarded_signals) / sizeof(forwarded_signals[0]); i++)
        sigaddset(mask, forwarded_signals[i]);
    sigprocmask(SIG_BLOCK, mask, NULL);
    sigset_t pipe_mask;
    sigemptyset(&pipe_mask);
    sigaddset(&pipe_mask, SIGPIPE);
    sigprocmask(SIG_BLOCK, &pipe_mask, NULL);
}

/* One round of the loop with a control channel: the channel, the probe's
 * pipes and the signalfd. Returns the signal that arrived, or 0. */
static int init_poll_channel(const struct init_options *o, char *const *envp, int *sigfd,
                             bool *control)
{
    struct pollfd fds[5] = {
        {*sigfd, POLLIN, 0},
        {CONTROL_FD, (short)(POLLIN | (probe.answering ? POLLOUT : 0)), 0},
        {probe.released ? probe.io.in_fd : -1, POLLOUT, 0},
        {probe.io.out_fd, POLLIN, 0},
        {probe.exec_fd, POLLIN, 0},
    };
    int n = poll(fds, 5, probe_io_timeout_ms(&probe.io));
    if (n < 0)
        return 0;
    probe_io_check_deadline(&probe.io);
    if (fds[4].revents && probe.io.pid > 0)
        probe_execed();
    if (fds[3].revents)
        probe_io_read(&probe.io);
    if (fds[2].revents)
        probe_io_write(&probe.io);
    if ((fds[1].revents & POLLIN) && !control_frame(o, envp))
        fds[1].revents |= POLLHUP;
    if ((fds[1].revents & POLLOUT) && !probe_send_answer())
        fds[1].revents |= POLLHUP;
    if (fds[1].revents & (POLLHUP | POLLERR | POLLNVAL)) {
        /* The supervisor is gone (it takes the sandbox with it): only the
         * command matters now. */
        probe.answering = false;
        close(CONTROL_FD);
        *control = false;
        fs_close(sigfd);
        probe_io_kill(&probe.io);
        return 0;
    }
    if (!(fds[0].revents & POLLIN))
        return 0;
    struct signalfd_siginfo si;
    if (read(*sigfd, &si, sizeof(si)) != sizeof(si))
        return 0;
    return (int)si.ssi_signo;
}

/* After SIGCHLD: the probe's status kept, orphans reaped; init exits with
 * the command's status when it is done. */
static void init_reap(pid_t child, bool control)
{
    int status;
    pid_t pid;
    while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
        if (pid == probe.io.pid && probe.io.pid > 0) {
            probe.status = status;
            if (control) {
                probe_finish();
                probe_send_answer();
            } else {
                probe.io.pid = 0;
            }
            continue;
        }
        if (pid != child)
            continue; /* an orphan: reaped, nothing else to do */
        /* _exit: the sanitizers' exit-time leak scan would need ptrace,
         * which the sandbox forbids. Everything else in the PID namespace
         * is killed by the kernel when PID 1 exits. */
        if (WIFEXITED(status))
            _exit(WEXITSTATUS(status));
        _exit(128 + WTERMSIG(status));
    }
}

void agent_init_run(int argc, char **argv, char *const *envp)
{
    struct init_options o = {0};
    parse_init(argc, argv, &o);

    /* Nobody inside may read our memory or open /proc/1/exe. */
    prctl(PR_SET_DUMPABLE, 0);
    prctl(PR_SET_NAME, "cordon-init");
    agent_path_prune(envp ? (char **)envp : environ);

    char slave[128] = "";
    init_terminal(&o, slave, sizeof(slave));
    sigset_t mask;
    init_block_signals(&mask);

    pid_t child = fork();
    if (child < 0)
        agent_fail("fork: %s", strerror(errno));
    if (child == 0)
        exec_command(&o, o.pty ? slave : NULL, envp);
    bool control = o.control;
    if (!control)
        close(CONTROL_FD);
    /* Without a channel, signals are all there is to wait for. */
    int sigfd = control ? signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK) : -1;
    if (control && sigfd < 0) {
        close(CONTROL_FD);
        control = false;
    }

    for (;;) {
        int sig = 0;
        if (!control) {
            siginfo_t si;
            sig = sigwaitinfo(&mask, &si);
        } else {
            sig = init_poll_channel(&o, envp, &sigfd, &control);
        }
        if (sig <= 0)
            continue;
        if (sig != SIGCHLD) {
            /* The command leads its own session and process group. */
            kill(-child, sig);
            continue;
        }
        init_reap(child, control);
    }
}
