/* `cordon run` on the docker backend: the docker CLI runs the container
 * attached to cordon's own stdin, stdout and stderr (`docker run -i`, the
 * agent's "init" mode inside), relays them and the signals it gets, and
 * exits with the container's status, which becomes cordon's. Host context,
 * unprivileged supervisor. */
#include "backend/backend.h"
#include "backend/docker/docker.h"
#include "supervisor/lifecycle.h"
#include "cli/commands.h"
#include "util/cleanup.h"
#include "util/log.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

static const int relayed_signals[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2};

int cli_run_docker(const struct launch *l, struct lifecycle *lc, char **agent_argv)
{
    const struct backend_ops *ops = backend_lookup("docker");
    sigset_t mask;
    sigemptyset(&mask);
    for (size_t i = 0; i < ARRAY_SIZE(relayed_signals); i++)
        sigaddset(&mask, relayed_signals[i]);
    sigaddset(&mask, SIGPIPE);
    sigprocmask(SIG_BLOCK, &mask, NULL);
    _cleanup_close_ int sigfd = signalfd(-1, &mask, SFD_CLOEXEC);

    struct cordon_error err = {0};
    struct sandbox sb;
    long long t0 = log_now_us();
    if (ops->start(l, agent_argv, &sb, &err) < 0) {
        log_error("%s", err.message);
        ops->stop(&sb);
        return CORDON_EXIT_FAILURE;
    }
    log_debug("docker: CLI started in %lld ms: %s", (log_now_us() - t0) / 1000, sb.description);
    if (lifecycle_started_docker(lc, l, &sb, &err) < 0) {
        log_error("%s", err.message);
        ops->stop(&sb);
        return CORDON_EXIT_FAILURE;
    }
    int status = CORDON_EXIT_FAILURE;
    for (;;) {
        struct pollfd p[2] = {{sigfd, POLLIN, 0}, {sb.pidfd, POLLIN, 0}};
        if (poll(p, 2, -1) < 0) {
            if (errno == EINTR)
                continue;
            break;
        }
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
        if (p[1].revents & POLLIN) {
            siginfo_t si = {0};
            if (waitid(P_PIDFD, (id_t)sb.pidfd, &si, WEXITED) == 0) {
                status = si.si_code == CLD_EXITED ? si.si_status : 128 + si.si_status;
                sb.pid = -1; /* reaped */
            }
            break;
        }
    }
    ops->stop(&sb);
    return status;
}
