/* The sandbox's init for `cordon run` and `cordon shell`: PID 1 runs the
 * command in a session of its own, forwards signals to its process group,
 * reaps every orphan, and exits with the command's status (128+signal when
 * it was killed). With --pty the terminal is made here, on the sandbox's own
 * devpts, and its master end is sent to the supervisor over fd 3.
 *
 * Runs inside the sandbox, unprivileged, under seccomp: either in
 * cordon-agent (`cordon-agent init ...`), or directly in the namespace
 * backend's child after its set-up (no exec of a second binary at start).
 * In the latter case it runs between clone() and the command's exec: no
 * allocation, no stdio. */
#include "agent/init.h"
#include "net/fdpass.h"
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

void agent_init_run(int argc, char **argv, char *const *envp)
{
    struct init_options o = {0};
    parse_init(argc, argv, &o);

    /* Nobody inside may read our memory or open /proc/1/exe. */
    prctl(PR_SET_DUMPABLE, 0);
    prctl(PR_SET_NAME, "cordon-init");

    char slave[128] = "";
    if (o.pty) {
        int master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
        if (master < 0 || grantpt(master) < 0 || unlockpt(master) < 0 ||
            ptsname_r(master, slave, sizeof(slave)) != 0)
            agent_fail("creating a terminal: %s", strerror(errno));
        if (fdpass_send(CONTROL_FD, "T", 1, master) < 0)
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
        exec_command(&o, o.pty ? slave : NULL, envp);
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
