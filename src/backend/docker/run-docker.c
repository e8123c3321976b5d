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
#include "backend/relay.h"
#include "backend/run.h"
#include "proto/init-channel.h"
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

struct docker_relay {
    struct sandbox *sb;
};

static void docker_signal(struct relay *r, void *ctx, const struct signalfd_siginfo *si)
{
    (void)r;
    struct docker_relay *d = ctx;
    /* The CLI shares cordon's process group (it reads the terminal): a
     * signal from the terminal reached it already; one sent to cordon alone
     * is passed on (the CLI proxies it to the container). */
    if (si->ssi_signo != SIGPIPE && si->ssi_code != SI_KERNEL)
        kill(d->sb->pid, (int)si->ssi_signo);
}

/* The CLI ended: its status (the container's, or 128 + the signal that
 * killed the CLI itself, when the container may still run and is
 * removed). The relay then drains what the host pty still holds: the CLI
 * is gone, so EIO (no slave left) ends it. */
static int docker_exited(struct relay *r, void *ctx)
{
    struct docker_relay *d = ctx;
    siginfo_t si;
    if (relay_reap(r, &si) < 0)
        return CORDON_EXIT_FAILURE;
    d->sb->pid = -1; /* reaped */
    /* The CLI itself was killed (it exits with the container's status
     * otherwise): the container may still run. */
    if (si.si_code != CLD_EXITED && docker_sandbox_rm_argv(d->sb))
        docker_remove_container(docker_sandbox_rm_argv(d->sb), docker_sandbox_rm_envp(d->sb),
                                10000);
    return relay_exit_status(&si);
}

static const struct relay_ops docker_relay_ops = {.signal = docker_signal, .exited = docker_exited};

/* The run's own state, beside the relay's. */
struct docker_run {
    struct docker_relay relay;
    struct docker_probe probe;
    int master;   /* the host pty's, or -1 */
    bool started; /* docker_sandbox_start ran: stop() releases what it made */
};

static int docker_run_start(struct backend_run *r, struct cordon_error *err)
{
    struct docker_run *d = r->ctx;
    struct launch *l = r->l;
    /* The terminal as it was, put back on every way out (backend_run). */
    if (l->pty && isatty(0)) {
        term_raw_enter(&r->term, 0);
    } else if (l->pty) {
        int slave = -1;
        d->master = host_pty(&slave, err);
        if (d->master < 0)
            return -1;
        for (int i = 0; i < 3; i++)
            l->spec.stdio[i] = slave;
    }
    long long t0 = log_now_us();
    d->started = true;
    int started = docker_sandbox_start(l, r->agent_argv, false, &r->sb, err);
    if (d->master >= 0) {
        close(l->spec.stdio[0]);
        for (int i = 0; i < 3; i++)
            l->spec.stdio[i] = i;
    }
    if (started < 0)
        return -1;
    log_debug("docker: CLI started in %lld ms: %s", (log_now_us() - t0) / 1000, r->sb.description);
    return 0;
}

static void docker_run_attach(struct backend_run *r, struct relay_spec *spec)
{
    struct docker_run *d = r->ctx;
    d->relay.sb = &r->sb;
    d->probe = DOCKER_PROBE_INIT(r->l, &r->sb);
    spec->ctx = &d->relay;
    spec->input = spec->output = d->master; /* the host pty's, or -1 */
    spec->verify.ops = &docker_verify_ops;
    spec->verify.ctx = &d->probe;
}

static void docker_run_teardown(struct backend_run *r)
{
    struct docker_run *d = r->ctx;
    if (d->started)
        docker_backend_ops.stop(&r->sb);
    if (d->master >= 0)
        close(d->master);
}

/* relay, resize, start, attach, teardown (backend/run.h) */
static const struct backend_run_ops docker_run_ops = {&docker_relay_ops, false, docker_run_start,
                                                      docker_run_attach, docker_run_teardown};

int docker_run(struct launch *l, struct lifecycle *lc, char **agent_argv, bool shell)
{
    struct docker_run d = {.master = -1};
    return backend_run(&docker_run_ops, &d, l, lc, agent_argv, shell);
}
