/* `cordon run` on the docker backend: the docker CLI runs the container
 * attached to cordon's own stdin, stdout and stderr (`docker run -i`, the
 * agent's "init" mode inside), relays them and the signals it gets, and
 * exits with the container's status, which becomes cordon's. With a
 * terminal (`cordon shell`, --pty) it is `docker run -t`: the CLI puts the
 * host terminal in raw mode and follows its size; cordon saved that
 * terminal first and puts it back whatever the CLI did. Without a host
 * terminal on stdin (the CLI refuses one) the CLI gets a host pty whose
 * master cordon relays to its own stdin and stdout, as ns relays its
 * sandbox's. Host context, unprivileged supervisor. */
#include "backend/backend.h"
#include "backend/docker/docker.h"
#include "supervisor/lifecycle.h"
#include "backend/docker/run-docker-verify.h"
#include "util/term.h"
#include "util/cleanup.h"
#include "util/log.h"
#include "util/fs.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

/* A host pty for the CLI when cordon's stdin is no terminal: its master
 * (returned) and the slave (*slave, the CLI's stdio). -1 on failure. */
static int host_pty(int *slave, struct cordon_error *err)
{
    _cleanup_close_ int master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
    char name[128];
    if (master < 0 || grantpt(master) < 0 || unlockpt(master) < 0 ||
        ptsname_r(master, name, sizeof(name)) != 0)
        return error_set(err, errno, "docker: a terminal for --pty");
    *slave = open(name, O_RDWR | O_NOCTTY | O_CLOEXEC);
    if (*slave < 0)
        return error_set(err, errno, "docker: open %s", name);
    return TAKE_FD(master);
}

/* The CLI ended: its status (the container's, or 128 + the signal that
 * killed the CLI itself, when the container may still run and is removed),
 * told to verify, then what the host pty still holds. CORDON_EXIT_FAILURE
 * when it cannot be reaped. */
static int cli_reap(struct sandbox *sb, struct docker_verify *ver, int master, char *buf,
                    size_t size)
{
    int status = CORDON_EXIT_FAILURE;
    siginfo_t si = {0};
    if (waitid(P_PIDFD, (id_t)sb->pidfd, &si, WEXITED) == 0) {
        status = si.si_code == CLD_EXITED ? si.si_status : 128 + si.si_status;
        sb->pid = -1; /* reaped */
        /* The CLI itself was killed (it exits with the container's
         * status otherwise): the container may still run. */
        if (si.si_code != CLD_EXITED && docker_sandbox_rm_argv(sb))
            docker_remove_container(docker_sandbox_rm_argv(sb), docker_sandbox_rm_envp(sb), 10000);
    }
    docker_verify_exited(ver, status);
    /* Drain what the host pty still holds: the CLI is gone, so EIO (no
     * slave left) ends it. */
    while (master >= 0) {
        struct pollfd d = {master, POLLIN, 0};
        if (poll(&d, 1, 50) <= 0)
            break;
        ssize_t n = read(master, buf, size);
        if (n <= 0)
            break;
        fs_write_all(1, buf, (size_t)n);
    }
    return status;
}

int docker_run(struct launch *l, struct lifecycle *lc, char **agent_argv, bool shell)
{
    const struct backend_ops *ops = &docker_backend_ops;
    sigset_t mask;
    sigemptyset(&mask);
    backend_relayed_signals(&mask);
    sigaddset(&mask, SIGPIPE);
    sigprocmask(SIG_BLOCK, &mask, NULL);
    _cleanup_close_ int sigfd = signalfd(-1, &mask, SFD_CLOEXEC);

    struct cordon_error err = {0};
    /* The terminal as it was, put back on every way out below. */
    struct term_raw term = {.active = false};
    _cleanup_close_ int master = -1;
    if (l->pty && isatty(0)) {
        term_raw_enter(&term, 0);
    } else if (l->pty) {
        int slave = -1;
        master = host_pty(&slave, &err);
        if (master < 0) {
            log_error("%s", err.message);
            return CORDON_EXIT_FAILURE;
        }
        for (int i = 0; i < 3; i++)
            l->spec.stdio[i] = slave;
    }
    struct sandbox sb;
    long long t0 = log_now_us();
    int started = docker_sandbox_start(l, agent_argv, false, &sb, &err);
    if (master >= 0) {
        close(l->spec.stdio[0]);
        for (int i = 0; i < 3; i++)
            l->spec.stdio[i] = i;
    }
    if (started < 0) {
        log_error("%s", err.message);
        ops->stop(&sb);
        term_raw_restore(&term);
        return CORDON_EXIT_FAILURE;
    }
    log_debug("docker: CLI started in %lld ms: %s", (log_now_us() - t0) / 1000, sb.description);
    if (lifecycle_started(lc, l, &sb, &err) < 0) {
        log_error("%s", err.message);
        ops->stop(&sb);
        term_raw_restore(&term);
        return CORDON_EXIT_FAILURE;
    }
    /* After the lock and the container: `cordon verify NAME` reaches this
     * session through it. */
    struct docker_verify *ver = NULL;
    if (docker_verify_open(l, lc, &sb, shell, &ver, &err) < 0) {
        ver = NULL;
        log_warn("%s: `cordon verify %s` will not reach this session", err.message, l->name);
    }
    int status = CORDON_EXIT_FAILURE;
    bool stdin_open = master >= 0, master_open = master >= 0;
    char buf[16384];
    for (;;) {
        struct pollfd p[4 + DOCKER_VERIFY_NFDS] = {{sigfd, POLLIN, 0},
                                                   {sb.pidfd, POLLIN, 0},
                                                   {master_open ? master : -1, POLLIN, 0},
                                                   {stdin_open ? 0 : -1, POLLIN, 0}};
        docker_verify_poll(ver, p + 4);
        if (poll(p, ARRAY_SIZE(p), gitguard_poll_timeout(l->git, docker_verify_timeout_ms(ver))) <
            0) {
            if (errno == EINTR)
                continue;
            break;
        }
        gitguard_sync_if_due(l->git);
        docker_verify_handle(ver, p + 4);
        if (p[0].revents & POLLIN) {
            struct signalfd_siginfo si;
            /* The CLI shares cordon's process group (it reads the terminal):
             * a signal from the terminal reached it already; one sent to
             * cordon alone is passed on (the CLI proxies it to the
             * container). */
            if (read(sigfd, &si, sizeof(si)) == sizeof(si) && si.ssi_signo != SIGPIPE &&
                si.ssi_code != SI_KERNEL)
                kill(sb.pid, (int)si.ssi_signo);
        }
        if (p[2].revents & (POLLIN | POLLHUP | POLLERR)) {
            ssize_t n = read(master, buf, sizeof(buf));
            if (n > 0)
                fs_write_all(1, buf, (size_t)n);
            else if (n == 0 || (errno != EAGAIN && errno != EINTR))
                master_open = false; /* EIO: the CLI closed its end */
        }
        if (p[3].revents & (POLLIN | POLLHUP | POLLERR)) {
            ssize_t n = read(0, buf, sizeof(buf));
            if (n > 0)
                fs_write_all(master, buf, (size_t)n);
            else if (n == 0 || (errno != EAGAIN && errno != EINTR))
                stdin_open = false;
        }
        if (p[1].revents & POLLIN) {
            status = cli_reap(&sb, ver, master, buf, sizeof(buf));
            break;
        }
    }
    /* The socket goes with the sandbox it speaks for. */
    docker_verify_close(ver);
    ops->stop(&sb);
    term_raw_restore(&term);
    return status;
}
