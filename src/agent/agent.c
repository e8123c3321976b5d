/* cordon-agent: the sandbox's PID 1. Runs inside the sandbox, unprivileged,
 * under the seccomp filter, executed from a sealed memfd.
 *
 *   cordon-agent init [--pty] [--memory-mib N] -- CMD [ARG...]
 *     runs CMD in a session of its own, forwards signals to its process
 *     group, reaps every orphan, and exits with CMD's status (128+signal when
 *     it was killed). With --pty, the terminal is made here, on the sandbox's
 *     own devpts, and its master end is sent to the supervisor over fd 3.
 *
 *   cordon-agent serve
 *     serves the seven tools over the agent protocol on fd 3
 *     (docs/agent-protocol.md), reaping orphans as init.
 *
 *   cordon-agent probe
 *     run by `cordon verify` through the bash tool: observations of the
 *     sandbox from inside (probe.c). */
#include "agent/probe.h"
#include "agent/serve.h"
#include "util/error.h"

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
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#define CONTROL_FD 3

static const int forwarded_signals[] = {SIGINT,  SIGTERM, SIGHUP,   SIGQUIT,
                                        SIGUSR1, SIGUSR2, SIGWINCH, SIGCONT};

static void agent_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

static void agent_fail(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("cordon: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    _exit(CORDON_EXIT_FAILURE);
}

static int send_fd(int sock, int fd)
{
    char byte = 'T';
    struct iovec iov = {&byte, 1};
    union {
        char buf[CMSG_SPACE(sizeof(int))];
        struct cmsghdr align;
    } u;
    memset(&u, 0, sizeof(u));
    struct msghdr msg = {
        .msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf, .msg_controllen = sizeof(u.buf)};
    struct cmsghdr *cm = CMSG_FIRSTHDR(&msg);
    cm->cmsg_level = SOL_SOCKET;
    cm->cmsg_type = SCM_RIGHTS;
    cm->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(cm), &fd, sizeof(int));
    return sendmsg(sock, &msg, MSG_NOSIGNAL) == 1 ? 0 : -1;
}

struct init_options {
    bool pty;
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
static void exec_command(const struct init_options *o, const char *slave)
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
    }
    close(CONTROL_FD);
    if (o->memory_mib > 0) {
        rlim_t bytes = (rlim_t)o->memory_mib << 20;
        struct rlimit rl = {bytes, bytes};
        setrlimit(RLIMIT_AS, &rl);
    }
    execvp(o->argv[0], o->argv);
    int e = errno;
    fprintf(stderr, "cordon: %s: %s\n", o->argv[0], strerror(e));
    _exit(e == ENOENT ? CORDON_EXIT_NOT_FOUND : CORDON_EXIT_CANNOT_EXEC);
}

static int run_init(int argc, char **argv)
{
    struct init_options o = {0};
    parse_init(argc, argv, &o);

    /* Nobody inside may read our memory or open /proc/1/exe. */
    prctl(PR_SET_DUMPABLE, 0);

    char slave[128] = "";
    if (o.pty) {
        int master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
        if (master < 0 || grantpt(master) < 0 || unlockpt(master) < 0 ||
            ptsname_r(master, slave, sizeof(slave)) != 0)
            agent_fail("creating a terminal: %s", strerror(errno));
        if (send_fd(CONTROL_FD, master) < 0)
            agent_fail("sending the terminal to cordon: %s", strerror(errno));
        close(master);
    }

    sigset_t mask;
    sigemptyset(&mask);
    sigaddset(&mask, SIGCHLD);
    for (size_t i = 0; i < sizeof(forwarded_signals) / sizeof(forwarded_signals[0]); i++)
        sigaddset(&mask, forwarded_signals[i]);
    sigprocmask(SIG_BLOCK, &mask, NULL);

    pid_t child = fork();
    if (child < 0)
        agent_fail("fork: %s", strerror(errno));
    if (child == 0)
        exec_command(&o, o.pty ? slave : NULL);
    close(CONTROL_FD);

    for (;;) {
        siginfo_t si;
        int sig = sigwaitinfo(&mask, &si);
        if (sig < 0)
            continue;
        if (sig != SIGCHLD) {
            /* The command leads its own session and process group. */
            kill(-child, sig);
            continue;
        }
        int status;
        pid_t pid;
        while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
            if (pid != child)
                continue; /* an orphan: reaped, nothing else to do */
            /* _exit: the sanitizers' exit-time leak scan would need ptrace,
             * which the sandbox forbids. Everything else in the PID
             * namespace is killed by the kernel when PID 1 exits. */
            if (WIFEXITED(status))
                _exit(WEXITSTATUS(status));
            _exit(128 + WTERMSIG(status));
        }
    }
}

int main(int argc, char **argv)
{
    /* Executed from a memfd, the kernel names us "memfd:cordon-ag". */
    prctl(PR_SET_NAME, "cordon-agent");
    if (argc >= 2 && strcmp(argv[1], "init") == 0)
        return run_init(argc, argv);
    if (argc >= 2 && strcmp(argv[1], "serve") == 0) {
        prctl(PR_SET_DUMPABLE, 0);
        int rc = agent_serve(CONTROL_FD);
        /* As PID 1, leaving ends the sandbox; _exit skips the sanitizers'
         * exit-time leak scan, which would need ptrace. */
        fflush(NULL);
        _exit(rc);
    }
    if (argc >= 2 && strcmp(argv[1], "probe") == 0) {
        /* Under seccomp the leak checker's exit-time ptrace is refused. */
        int rc = agent_probe();
        fflush(NULL);
        _exit(rc);
    }
    fprintf(stderr, "usage: cordon-agent init [--pty] [--memory-mib N] -- CMD [ARG...]\n"
                    "       cordon-agent serve   (agent protocol on fd 3)\n"
                    "       cordon-agent probe   (cordon verify's probe; JSON on stdin)\n");
    return CORDON_EXIT_FAILURE;
}
