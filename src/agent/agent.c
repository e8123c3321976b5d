/* cordon-agent: the sandbox's PID 1. Runs inside the sandbox, unprivileged,
 * under the seccomp filter, executed from a sealed memfd.
 *
 *   cordon-agent init [--pty | --ctty] [--control] [--memory-mib N] -- CMD [ARG...]
 *     runs CMD in a session of its own, forwards signals to its process
 *     group, reaps every orphan, and exits with CMD's status (128+signal when
 *     it was killed). With --pty, the terminal is made here, on the sandbox's
 *     own devpts, and its master end is sent to the supervisor over fd 3.
 *     With --ctty, stdin is a terminal already (the docker backend's
 *     `docker run -t`): it becomes CMD's controlling terminal.
 *
 *   cordon-agent serve [--host | --stdio]
 *     serves the seven tools over the agent protocol on fd 3 (--stdio: read
 *     from stdin, written to stdout, the docker backend's `docker run -i`)
 *     (docs/agent-protocol.md), reaping orphans as init. With --host (host
 *     execution, no sandbox) it is a child subreaper and kills every process
 *     its calls left behind when it ends.
 *
 *   cordon-agent probe
 *     run by `cordon verify` through the bash tool (or by init, --control,
 *     init.h): observations of the sandbox from inside (probe.c).
 *
 *   cordon-agent connect HOST PORT
 *     ssh's ProxyCommand in the sandbox (GIT_SSH_COMMAND, docs/ssh.md): a
 *     CONNECT tunnel to HOST:PORT through cordon's proxy on 127.0.0.1:3128,
 *     relayed on stdin/stdout (connect.c). No confinement of its own: it
 *     runs as a program of the sandbox.
 *
 *   cordon-agent [--sock-guard PATH] [--proxy-socket PATH] [--publish-dir DIR]
 *                [--publish-port N]... --confine [--chdir DIR] [--writable PATH]... -- MODE ...
 *     confines itself first, as the ns backend confines its sandbox
 *     (Landlock: everything readable, only the PATHs writable, when the
 *     kernel has it; then cordon's own seccomp filter), then MODE as above.
 *     The docker backend's containers start so: Docker's profile and
 *     mounts stay, and the kernel applies both. --proxy-socket,
 *     --publish-dir and --publish-port (before --confine): once confined,
 *     starts the network's forwarder (docker-net.c) before MODE. */
#include "backend/docker/guest/docker-net.h"
#include "agent/connect.h"
#include "agent/init.h"
#include "agent/probe.h"
#include "agent/serve.h"
#include "backend/vm/guest/vm-init.h"
#include "confine/landlock.h"
#include "confine/seccomp-filter.h"
#include "confine/seccomp-notify.h"
#include "config.h"
#include "util/error.h"

#include <errno.h>
#include <linux/seccomp.h>
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
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#define CONTROL_FD 3

#define AGENT_MAX_WRITABLE 64

/* --sock-guard PATH (the docker backend's PID 1): the socket guard's filter
 * on top, its listener handed to the supervisor over PATH before anything
 * else runs (docs/sockets.md, backend/docker/docker-sockguard.c). */
static void hand_over_to_sock_guard(const char *path)
{
    struct cordon_error err = {0};
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0 ||
        snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path) >= (int)sizeof(sa.sun_path) ||
        connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
        fprintf(stderr, "cordon-agent: the socket guard at %s: %s\n", path, strerror(errno));
        _exit(CORDON_EXIT_FAILURE);
    }
    if (ns_sock_guard_handoff_in_child(fd, &err) < 0) {
        fprintf(stderr, "cordon-agent: %s\n", err.message);
        _exit(CORDON_EXIT_FAILURE);
    }
    close(fd);
}

/* Landlock, then the ns backend's seccomp filter, on this process and so
 * on everything it starts (no_new_privs first: the container has it
 * already). A kernel or profile without Landlock leaves the mounts as the
 * filesystem boundary, as on ns (`cordon verify` says so); any other
 * failure ends the agent before it serves anything. */
static void confine_self(const char *const *writable, const char *sock_guard)
{
    struct cordon_error err = {0};
    /* The container must hold no capability (--cap-drop ALL): one that
     * does is not the sandbox asked for. */
    FILE *status = fopen("/proc/self/status", "re");
    char line[256];
    bool capable = !status;
    while (status && fgets(line, sizeof(line), status)) {
        char name[16], hex[32];
        if (sscanf(line, "Cap%15[^:]: %31s", name, hex) == 2 && strcmp(name, "Inh") != 0 &&
            strspn(hex, "0") != strlen(hex))
            capable = true;
    }
    if (status)
        fclose(status);
    if (capable) {
        fprintf(stderr, "cordon-agent: the sandbox holds capabilities (or /proc/self/status is "
                        "unreadable): refusing to run in it\n");
        _exit(CORDON_EXIT_FAILURE);
    }
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0) {
        fprintf(stderr, "cordon-agent: no_new_privs: %s\n", strerror(errno));
        _exit(CORDON_EXIT_FAILURE);
    }
    int abi = ns_landlock_abi();
    if (abi > 0 && ns_landlock_apply_in_child(abi, writable, &err) < 0) {
        fprintf(stderr, "cordon-agent: %s\n", err.message);
        _exit(CORDON_EXIT_FAILURE);
    }
    if (CORDON_UNSAFE_NO_SECCOMP)
        return;
    struct sock_fprog prog;
    ns_seccomp_program(&prog);
    if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) < 0) {
        fprintf(stderr, "cordon-agent: loading the seccomp filter: %s; run `cordon doctor`\n",
                strerror(errno));
        _exit(CORDON_EXIT_FAILURE);
    }
    if (sock_guard)
        hand_over_to_sock_guard(sock_guard);
}

int main(int argc, char **argv)
{
    if (vm_init_is_guest(argc, argv))
        return vm_init_main(argc, argv);
    /* The docker backend's PID 1 only: never a `docker exec` of the agent. */
    const char *sock_guard = NULL;
    if (argc >= 3 && strcmp(argv[1], "--sock-guard") == 0) {
        sock_guard = argv[2];
        argv[2] = argv[0];
        argv += 2;
        argc -= 2;
    }
    /* The docker backend's network forwarder: its options come first and
     * need --confine after them (it starts once the agent is confined). */
    struct agent_forward fwd = {0};
    int first = agent_forward_parse(argc, argv, &fwd);
    if (first < 0 || (first > 1 && (first >= argc || strcmp(argv[first], "--confine") != 0))) {
        fprintf(stderr, "cordon-agent: [--proxy-socket PATH] [--publish-dir DIR] "
                        "[--publish-port N]... [--host-service-dir DIR] [--host-service N]... "
                        "--confine ...\n");
        return CORDON_EXIT_FAILURE;
    }
    argv[first - 1] = argv[0];
    argv += first - 1;
    argc -= first - 1;
    if (argc >= 2 && strcmp(argv[1], "--confine") == 0) {
        const char *writable[AGENT_MAX_WRITABLE + 1];
        const char *dir = NULL;
        size_t n = 0;
        int i = 2;
        if (i + 1 < argc && strcmp(argv[i], "--chdir") == 0) {
            dir = argv[i + 1];
            i += 2;
        }
        for (; i + 1 < argc && strcmp(argv[i], "--writable") == 0 && n < AGENT_MAX_WRITABLE; i += 2)
            writable[n++] = argv[i + 1];
        writable[n] = NULL;
        if (i >= argc || strcmp(argv[i], "--") != 0) {
            fprintf(stderr,
                    "cordon-agent: --confine [--chdir DIR] [--writable PATH]... -- MODE ...\n");
            return CORDON_EXIT_FAILURE;
        }
        /* The docker backend's cwd: docker's --workdir would create it in
         * the image's root before the tmpfs over /tmp is mounted, and the
         * tmpfs would then take that directory's 0755 instead of 1777. */
        if (dir && chdir(dir) < 0) {
            fprintf(stderr, "cordon-agent: chdir %s: %s\n", dir, strerror(errno));
            return CORDON_EXIT_FAILURE;
        }
        confine_self(writable, sock_guard);
        struct cordon_error err = {0};
        if (agent_forward_start(&fwd, &err) < 0) {
            fprintf(stderr, "cordon-agent: %s\n", err.message);
            return CORDON_EXIT_FAILURE;
        }
        argv[i] = argv[0];
        argv += i;
        argc -= i;
    }
    /* Executed from a memfd, the kernel names us "memfd:cordon-ag". */
    prctl(PR_SET_NAME, "cordon-agent");
    if (argc >= 2 && strcmp(argv[1], "init") == 0)
        agent_init_run(argc, argv, NULL);
    if (argc >= 2 && strcmp(argv[1], "serve") == 0) {
        prctl(PR_SET_DUMPABLE, 0);
        /* --host: the supervisor's helper for host execution, no sandbox. */
        bool host = argc >= 3 && strcmp(argv[2], "--host") == 0;
        int rc;
        if (argc >= 3 && strcmp(argv[2], "--stdio") == 0) {
            /* The channel moves off 0 and 1 (close-on-exec), which become
             * /dev/null: no call's process inherits the protocol stream. */
            int in = fcntl(0, F_DUPFD_CLOEXEC, 3);
            int out = fcntl(1, F_DUPFD_CLOEXEC, 3);
            int devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
            if (in < 0 || out < 0 || devnull < 0 || dup2(devnull, 0) < 0 || dup2(devnull, 1) < 0)
                _exit(CORDON_EXIT_FAILURE);
            close(devnull);
            rc = agent_serve_pipes(in, out, false);
        } else {
            rc = agent_serve(CONTROL_FD, host);
        }
        /* As PID 1, leaving ends the sandbox; _exit skips the sanitizers'
         * exit-time leak scan, which would need ptrace. */
        fflush(NULL);
        _exit(rc);
    }
    if (argc >= 2 && strcmp(argv[1], "connect") == 0) {
        /* Like probe: no exit-time leak scan (ptrace) under seccomp. */
        int rc = agent_connect(argc, argv);
        fflush(NULL);
        _exit(rc);
    }
    if (argc >= 2 && strcmp(argv[1], "probe") == 0) {
        /* Under seccomp the leak checker's exit-time ptrace is refused. */
        int rc = agent_probe();
        fflush(NULL);
        _exit(rc);
    }
    fprintf(stderr,
            "usage: cordon-agent init [--pty | --ctty] [--memory-mib N] -- CMD [ARG...]\n"
            "       cordon-agent serve [--host]   (agent protocol on fd 3)\n"
            "       cordon-agent serve --stdio    (agent protocol on stdin/stdout)\n"
            "       cordon-agent probe   (cordon verify's probe; JSON on stdin)\n"
            "       cordon-agent connect HOST PORT   (ssh's ProxyCommand through cordon's "
            "proxy)\n"
            "       cordon-agent --confine [--chdir DIR] [--writable PATH]... -- MODE ...\n"
            "       cordon-agent [--sock-guard PATH] [--proxy-socket PATH] [--publish-dir DIR]\n"
            "                    [--publish-port N]... --confine ...  (docker)\n");
    return CORDON_EXIT_FAILURE;
}
