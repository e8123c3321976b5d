/* `cordon run -- CMD...` and `cordon shell`: one command in a fresh sandbox of
 * the current workspace. Host context, unprivileged supervisor: a
 * single-threaded loop over a signalfd, the sandbox's pidfd and, for a shell
 * on a terminal, the pty relay. */
#include "backend/ns/ns.h"
#include "cli/commands.h"
#include "net/net.h"
#include "supervisor/launch.h"
#include "util/cleanup.h"
#include "util/log.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

static const int relayed_signals[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2};

static void usage(FILE *out, bool shell)
{
    if (shell)
        fprintf(out, "usage: cordon shell [OPTIONS]\n\n"
                     "Starts an interactive bash in a sandbox of the current workspace. On a\n"
                     "terminal it gets a terminal of its own; otherwise it reads commands from\n"
                     "stdin (echo 'ls; id' | cordon shell).\n\n");
    else
        fprintf(out, "usage: cordon run [OPTIONS] [--] CMD [ARG...]\n\n"
                     "Runs CMD in a sandbox of the current workspace and exits with its status.\n"
                     "cordon's own failures exit with 125; 126/127 mean the command could not\n"
                     "be executed / was not found inside the sandbox.\n\n");
    fprintf(out, "options:\n"
                 "  --pids N          processes in the sandbox (default 2048, 0 = unlimited)\n"
                 "  --memory MIB      memory (default 8192 MiB)\n"
                 "  --file-size MIB   largest file a process may write (default 16384 MiB)\n"
                 "  --open-files N    open files per process (default 4096)\n"
                 "  --cpu-seconds N   CPU time per process (default unlimited)\n"
                 "  --cpus N          CPU quota in cores, where a cgroup can be made\n"
                 "  --readonly        mount the workspace read-only\n"
                 "  --pty / --no-pty  force or refuse a terminal (default: when stdin is one)\n"
                 "  --backend NAME    ns (default) or vm (a QEMU microVM); also CORDON_BACKEND\n"
                 "  --network MODE    deny (default: loopback only), allowlist (through\n"
                 "                    cordon's checking proxy), open (full outbound access)\n"
                 "  --allow-host PAT  allowlist entry, repeatable: host.name, *.domain\n"
                 "                    (subdomains only), 1.2.3.4, 10.0.0.0/8, [2001:db8::/32],\n"
                 "                    each with an optional :PORT\n"
                 "  --publish [BIND:]HOST:GUEST  make the sandbox's 127.0.0.1:GUEST reachable\n"
                 "                    from the host at BIND:HOST (default 127.0.0.1), repeatable\n"
                 "  --net-audit-log FILE  network decisions as JSON lines (default\n"
                 "                    $XDG_STATE_HOME/cordon/network-audit.jsonl)\n"
                 "  --net-hosts-file FILE  the proxy resolves names only from FILE (hosts(5)\n"
                 "                    format), never DNS\n"
                 "  -h, --help        this text\n");
}

static int parse_long(const char *opt, const char *value, long *out)
{
    char *end;
    errno = 0;
    long v = strtol(value, &end, 10);
    if (errno || *end || v < 0) {
        fprintf(stderr, "cordon: %s: expected a non-negative integer, got '%s'\n", opt, value);
        return -1;
    }
    *out = v;
    return 0;
}

/* $XDG_STATE_HOME/cordon/network-audit.jsonl (~/.local/state when unset);
 * NULL when no such place can be made (the proxy then keeps no file). */
static char *default_audit_log_path(void)
{
    const char *state = getenv("XDG_STATE_HOME");
    const char *home = getenv("HOME");
    char dir[4096];
    if (state && state[0] == '/')
        snprintf(dir, sizeof(dir), "%s/cordon", state);
    else if (home && home[0] == '/')
        snprintf(dir, sizeof(dir), "%s/.local/state/cordon", home);
    else
        return NULL;
    for (char *p = dir + 1; *p; p++) {
        if (*p == '/') {
            *p = '\0';
            mkdir(dir, 0700);
            *p = '/';
        }
    }
    if (mkdir(dir, 0700) < 0 && errno != EEXIST)
        return NULL;
    char *path;
    if (asprintf(&path, "%s/network-audit.jsonl", dir) < 0)
        return NULL;
    return path;
}

static int recv_fd(int sock)
{
    char byte;
    struct iovec iov = {&byte, 1};
    union {
        char buf[CMSG_SPACE(sizeof(int))];
        struct cmsghdr align;
    } u;
    struct msghdr msg = {
        .msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf, .msg_controllen = sizeof(u.buf)};
    ssize_t n;
    do {
        n = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC);
    } while (n < 0 && errno == EINTR);
    if (n <= 0)
        return -1;
    struct cmsghdr *cm = CMSG_FIRSTHDR(&msg);
    if (!cm || cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS ||
        cm->cmsg_len != CMSG_LEN(sizeof(int)))
        return -1;
    int fd;
    memcpy(&fd, CMSG_DATA(cm), sizeof(int));
    return fd;
}

static int write_all(int fd, const char *buf, size_t len)
{
    while (len > 0) {
        ssize_t n = write(fd, buf, len);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            if (errno == EAGAIN) {
                struct pollfd p = {fd, POLLOUT, 0};
                poll(&p, 1, -1);
                continue;
            }
            return -1;
        }
        buf += n;
        len -= (size_t)n;
    }
    return 0;
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
    int master; /* pty master, or -1 */
};

static int exit_status_of(const siginfo_t *si)
{
    if (si->si_code == CLD_EXITED)
        return si->si_status;
    return 128 + si->si_status;
}

/* Runs until the sandbox's PID 1 exits; returns the exit status to use. */
static int supervise_loop(struct supervise *s)
{
    bool stdin_open = s->master >= 0;
    char buf[16384];
    for (;;) {
        struct pollfd fds[4] = {
            {s->sigfd, POLLIN, 0},
            {s->sb->pidfd, POLLIN, 0},
            {s->master, POLLIN, 0},
            {stdin_open ? 0 : -1, POLLIN, 0},
        };
        if (poll(fds, 4, -1) < 0) {
            if (errno == EINTR)
                continue;
            return CORDON_EXIT_FAILURE;
        }
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
                write_all(1, buf, (size_t)n);
            else if (n < 0 && errno != EAGAIN && errno != EINTR)
                s->master = -1; /* EIO: every slave end is closed */
        }
        if (fds[3].revents & (POLLIN | POLLHUP | POLLERR)) {
            ssize_t n = read(0, buf, sizeof(buf));
            if (n > 0)
                write_all(s->master, buf, (size_t)n);
            else if (n == 0 || (errno != EAGAIN && errno != EINTR))
                stdin_open = false;
        }
        if (fds[1].revents & POLLIN) {
            siginfo_t si = {0};
            if (waitid(P_PIDFD, (id_t)s->sb->pidfd, &si, WEXITED) < 0)
                return CORDON_EXIT_FAILURE;
            /* Drain what the terminal still holds. */
            while (s->master >= 0) {
                struct pollfd p = {s->master, POLLIN, 0};
                if (poll(&p, 1, 50) <= 0)
                    break;
                ssize_t n = read(s->master, buf, sizeof(buf));
                if (n <= 0)
                    break;
                write_all(1, buf, (size_t)n);
            }
            return exit_status_of(&si);
        }
    }
}

static int run_common(int argc, char **argv, bool shell)
{
    static const struct option longopts[] = {
        {"pids", required_argument, NULL, 'p'},
        {"memory", required_argument, NULL, 'm'},
        {"file-size", required_argument, NULL, 'f'},
        {"open-files", required_argument, NULL, 'n'},
        {"cpu-seconds", required_argument, NULL, 'c'},
        {"cpus", required_argument, NULL, 'C'},
        {"readonly", no_argument, NULL, 'r'},
        {"pty", no_argument, NULL, 'P'},
        {"no-pty", no_argument, NULL, 'N'},
        {"network", required_argument, NULL, 'w'},
        {"allow-host", required_argument, NULL, 'A'},
        {"publish", required_argument, NULL, 'B'},
        {"net-audit-log", required_argument, NULL, 'L'},
        {"net-hosts-file", required_argument, NULL, 'H'},
        {"backend", required_argument, NULL, 'K'},
        {"help", no_argument, NULL, 'h'},
        {0},
    };
    struct launch_options opts;
    launch_default_options(&opts);
    struct net_policy net = {.mode = NET_MODE_DENY};
    struct cordon_error net_err = {0};
    int want_pty = -1;
    const char *backend = getenv("CORDON_BACKEND");
    optind = 1;
    int c;
    while ((c = getopt_long(argc, argv, "+h", longopts, NULL)) != -1) {
        long v = 0;
        switch (c) {
        case 'p':
            if (parse_long("--pids", optarg, &v) < 0)
                return CORDON_EXIT_FAILURE;
            opts.limits.pids = v;
            break;
        case 'm':
            if (parse_long("--memory", optarg, &v) < 0)
                return CORDON_EXIT_FAILURE;
            opts.limits.memory_mib = v;
            break;
        case 'f':
            if (parse_long("--file-size", optarg, &v) < 0)
                return CORDON_EXIT_FAILURE;
            opts.limits.file_size_mib = v;
            break;
        case 'n':
            if (parse_long("--open-files", optarg, &v) < 0)
                return CORDON_EXIT_FAILURE;
            opts.limits.open_files = v;
            break;
        case 'c':
            if (parse_long("--cpu-seconds", optarg, &v) < 0)
                return CORDON_EXIT_FAILURE;
            opts.limits.cpu_seconds = v;
            break;
        case 'C': {
            char *end;
            double d = strtod(optarg, &end);
            if (*end || d < 0) {
                fprintf(stderr, "cordon: --cpus: expected a number, got '%s'\n", optarg);
                return CORDON_EXIT_FAILURE;
            }
            opts.limits.cpus = d;
            break;
        }
        case 'r':
            opts.workspace_readonly = true;
            break;
        case 'P':
            want_pty = 1;
            break;
        case 'N':
            want_pty = 0;
            break;
        case 'w':
            if (net_mode_parse(optarg, &net.mode, &net_err) < 0) {
                fprintf(stderr, "cordon: --network: %s\n", net_err.message);
                return CORDON_EXIT_FAILURE;
            }
            break;
        case 'A':
            if (net.allow_count == NET_MAX_ALLOW) {
                fprintf(stderr, "cordon: --allow-host: at most %d entries\n", NET_MAX_ALLOW);
                return CORDON_EXIT_FAILURE;
            }
            net.allow_hosts[net.allow_count++] = optarg;
            break;
        case 'B':
            if (net.publish_count == NET_MAX_PUBLISH) {
                fprintf(stderr, "cordon: --publish: at most %d ports\n", NET_MAX_PUBLISH);
                return CORDON_EXIT_FAILURE;
            }
            if (net_publish_parse(optarg, &net.publish[net.publish_count++], &net_err) < 0) {
                fprintf(stderr, "cordon: --publish: %s\n", net_err.message);
                return CORDON_EXIT_FAILURE;
            }
            break;
        case 'L':
            net.audit_log = optarg;
            break;
        case 'H':
            net.hosts_file = optarg;
            break;
        case 'K':
            backend = optarg;
            break;
        case 'h':
            usage(stdout, shell);
            return 0;
        default:
            usage(stderr, shell);
            return CORDON_EXIT_FAILURE;
        }
    }
    char **cmd = argv + optind;
    char *shell_argv[] = {"/bin/bash", NULL};
    if (shell) {
        if (optind < argc) {
            fprintf(stderr, "cordon: shell: unexpected argument '%s'\n", argv[optind]);
            return CORDON_EXIT_FAILURE;
        }
        cmd = shell_argv;
    } else if (optind >= argc) {
        fprintf(stderr, "cordon: run: no command given\n");
        usage(stderr, false);
        return CORDON_EXIT_FAILURE;
    }
    if (backend && strcmp(backend, "ns") != 0 && strcmp(backend, "vm") != 0) {
        fprintf(stderr, "cordon: --backend: unknown backend '%s' (ns, vm)\n", backend);
        return CORDON_EXIT_FAILURE;
    }
    bool vm = backend && strcmp(backend, "vm") == 0;
    if (vm && want_pty == 1) {
        fprintf(stderr, "cordon: --pty is not available on the vm backend yet\n");
        return CORDON_EXIT_FAILURE;
    }
    if (vm && (net.mode != NET_MODE_DENY || net.publish_count > 0)) {
        fprintf(stderr, "cordon: the vm backend has no network yet: only --network deny, "
                        "no --publish\n");
        return CORDON_EXIT_FAILURE;
    }
    bool pty = !vm && (want_pty == 1 || (want_pty == -1 && shell && isatty(0) && isatty(1)));

    struct cordon_error err = {0};
    struct launch l;
    if (launch_prepare(&opts, &l, &err) < 0) {
        log_error("%s", err.message);
        return CORDON_EXIT_FAILURE;
    }
    if (!vm)
        ns_probe_report();

    _cleanup_free_ char *default_audit = NULL;
    if (!net.audit_log && net.mode == NET_MODE_ALLOWLIST)
        net.audit_log = default_audit = default_audit_log_path();
    net.session_name = l.name;
    if (net_policy_validate(&net, &err) < 0 || net_env_add(&net, &l.env, &err) < 0) {
        log_error("%s", err.message);
        launch_free(&l);
        return CORDON_EXIT_FAILURE;
    }
    l.spec.envp = l.env;
    struct net_session net_session;
    net_session_init(&net_session, &net);
    l.spec.on_namespaces_ready = net_on_namespaces_ready;
    l.spec.on_namespaces_ready_ctx = &net_session;

    /* argv for the agent: init [--pty] [--memory-mib N] -- CMD... */
    size_t ncmd = 0;
    while (cmd[ncmd])
        ncmd++;
    _cleanup_free_ char **agent_argv = calloc(ncmd + 8, sizeof(char *));
    char memory[32];
    snprintf(memory, sizeof(memory), "%ld", opts.limits.memory_mib);
    size_t a = 0;
    agent_argv[a++] = "cordon-agent";
    agent_argv[a++] = "init";
    if (pty)
        agent_argv[a++] = "--pty";
    agent_argv[a++] = "--memory-mib";
    agent_argv[a++] = memory;
    agent_argv[a++] = "--";
    for (size_t i = 0; i < ncmd; i++)
        agent_argv[a++] = cmd[i];
    agent_argv[a] = NULL;
    l.spec.argv = agent_argv;
    if (vm) {
        int status = cli_run_vm(&l, agent_argv);
        launch_free(&l);
        return status;
    }

    int control[2] = {-1, -1};
    if (pty && socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, control) < 0) {
        log_error("socketpair: %s", strerror(errno));
        launch_free(&l);
        return CORDON_EXIT_FAILURE;
    }
    l.spec.control_fd = control[1];

    /* Signals become events on the loop, from before the sandbox exists, so
     * none is lost or kills the supervisor between start and supervise. */
    sigset_t mask;
    sigemptyset(&mask);
    for (size_t i = 0; i < sizeof(relayed_signals) / sizeof(relayed_signals[0]); i++)
        sigaddset(&mask, relayed_signals[i]);
    sigaddset(&mask, SIGWINCH);
    sigaddset(&mask, SIGPIPE);
    sigprocmask(SIG_BLOCK, &mask, NULL);
    _cleanup_close_ int sigfd = signalfd(-1, &mask, SFD_CLOEXEC);

    struct ns_sandbox sb;
    int rc = ns_sandbox_start(&l.spec, &sb, &err);
    if (control[1] >= 0)
        close(control[1]);
    if (rc < 0) {
        net_session_stop(&net_session);
        log_error("%s", err.message);
        if (control[0] >= 0)
            close(control[0]);
        launch_free(&l);
        return CORDON_EXIT_FAILURE;
    }
    log_debug("sandbox %s started (pid %d); limits: %s", l.name, sb.pid, sb.limits_applied);

    struct supervise s = {.sb = &sb, .sigfd = sigfd, .master = -1};
    struct termios saved;
    bool restore = false;
    if (pty) {
        s.master = recv_fd(control[0]);
        if (s.master >= 0) {
            copy_winsize(0, s.master);
            if (tcgetattr(0, &saved) == 0) {
                struct termios raw = saved;
                cfmakeraw(&raw);
                restore = tcsetattr(0, TCSANOW, &raw) == 0;
            }
        }
    }
    if (control[0] >= 0)
        close(control[0]);
    int status = supervise_loop(&s);
    net_session_stop(&net_session);
    if (restore)
        tcsetattr(0, TCSANOW, &saved);
    if (s.master >= 0)
        close(s.master);
    ns_sandbox_release(&sb);
    launch_free(&l);
    return status;
}

int cmd_run(int argc, char **argv)
{
    return run_common(argc, argv, false);
}

int cmd_shell(int argc, char **argv)
{
    return run_common(argc, argv, true);
}
