/* The run operation's one sequence for every backend (run.h): the order
 * matters and is written once. The signals are blocked before the sandbox
 * starts, so none is lost or kills the supervisor in between; the
 * lifecycle hears of the sandbox before anything is relayed, so a cordon
 * killed from here on leaves it to the watchdog; teardown and the terminal's
 * restoring happen on every way out. Host context, unprivileged
 * supervisor. */
#include "backend/run.h"
#include "util/cleanup.h"
#include "util/log.h"

int backend_run(const struct backend_run_ops *ops, void *ctx, struct launch *l,
                struct lifecycle *lc, char **agent_argv, bool shell)
{
    struct backend_run r = {.l = l,
                            .lc = lc,
                            .agent_argv = agent_argv,
                            .sb = {.pid = -1, .pidfd = -1, .channel_fd = -1},
                            .term = {.active = false},
                            .ctx = ctx};
    _cleanup_close_ int sigfd = relay_signals_open(ops->resize);
    struct cordon_error err = {0};
    int status = CORDON_EXIT_FAILURE;
    if (ops->start(&r, &err) < 0 || lifecycle_started(lc, l, &r.sb, &err) < 0) {
        log_error("%s", err.message);
    } else {
        struct relay_spec spec = relay_spec_init(ops->relay, ctx, &r.sb, l, lc, shell, sigfd);
        ops->attach(&r, &spec);
        status = relay_run(&spec);
    }
    long long t = log_now_us();
    ops->teardown(&r);
    term_raw_restore(&r.term);
    log_debug("timing: teardown %lld us", log_now_us() - t);
    return status;
}
