/* `cordon run -- CMD...` and `cordon shell`: one command in a fresh sandbox of
 * the current workspace. Host context, unprivileged supervisor: a
 * single-threaded loop over a signalfd, the sandbox's pidfd, for a shell
 * on a terminal the pty relay, and the session's control socket
 * (`cordon verify NAME`), whose probe the sandbox's init runs when asked
 * over its channel (agent/init.h). */
#include "proto/init-channel.h"
#include "cli/commands.h"
#include "cli/options.h"
#include "util/term.h"
#include "net/fdpass.h"
#include "supervisor/control.h"
#include "supervisor/launch.h"
#include "supervisor/gitguard.h"
#include "supervisor/lifecycle.h"
#include "supervisor/state.h"
#include "supervisor/verify.h"
#include "util/cleanup.h"
#include "util/log.h"
#include "util/fs.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

static void usage(FILE *out, bool shell)
{
    if (shell)
        fprintf(out, "usage: cordon shell [OPTIONS] [NAME]\n\n"
                     "Starts an interactive bash in a sandbox of the current workspace. On a\n"
                     "terminal it gets a terminal of its own; otherwise it reads commands from\n"
                     "stdin (echo 'ls; id' | cordon shell). With NAME, it goes back into a\n"
                     "sandbox kept by teardown \"stop\" or \"none\" (its home and /tmp).\n\n");
    else
        fprintf(out, "usage: cordon run [OPTIONS] [--] CMD [ARG...]\n\n"
                     "Runs CMD in a sandbox of the current workspace and exits with its status.\n"
                     "cordon's own failures exit with 125; 126/127 mean the command could not\n"
                     "be executed / was not found inside the sandbox.\n\n");
    fprintf(out,
            "options:\n"
            "  --pty / --no-pty  force or refuse a terminal (default: when stdin is one)\n"
            "  -h, --help        this text\n\n%s",
            cli_config_flags_help);
}

struct run_options {
    bool shell;
    int want_pty; /* 1 --pty, 0 --no-pty, -1 neither: when stdin is a terminal */
};

static void run_usage(FILE *out, void *ctx)
{
    usage(out, ((struct run_options *)ctx)->shell);
}

static int set_pty(void *ctx, const char *option, const char *value)
{
    (void)value;
    ((struct run_options *)ctx)->want_pty = strcmp(option, "--pty") == 0;
    return 0;
}

const struct cli_option cli_run_options[] = {
    {.name = "--pty", .help = "force a terminal", .handle = set_pty},
    {.name = "--no-pty", .help = "refuse a terminal", .handle = set_pty},
    {0},
};

/* argv for the agent: init [--pty | --ctty] [--control] --memory-mib
 * MEMORY -- CMD..., as the backend takes it; NULL when out of memory. The
 * strings are borrowed. */
static char **init_argv(const struct backend_ops *be, bool pty, char *const *cmd, char *memory)
{
    size_t ncmd = 0;
    while (cmd[ncmd])
        ncmd++;
    char **agent_argv = calloc(ncmd + 8, sizeof(char *));
    if (!agent_argv)
        return NULL;
    size_t a = 0;
    agent_argv[a++] = "cordon-agent";
    agent_argv[a++] = "init";
    if (pty)
        agent_argv[a++] = backend_has(be, BACKEND_CAP_OUTER_TTY) ? "--ctty" : "--pty";
    if (backend_has(be, BACKEND_CAP_INIT_CONTROL))
        agent_argv[a++] = "--control"; /* fd 3: the probe of `cordon verify NAME` */
    agent_argv[a++] = "--memory-mib";
    agent_argv[a++] = memory;
    agent_argv[a++] = "--";
    for (size_t c = 0; c < ncmd; c++)
        agent_argv[a++] = cmd[c];
    agent_argv[a] = NULL;
    return agent_argv;
}

static int run_common(int argc, char **argv, bool shell)
{
    struct cli_sets sets = {0};
    struct run_options ro = {.shell = shell, .want_pty = -1};
    const struct cli_parser parser = {.command = shell ? "shell" : "run",
                                      .word = "option",
                                      .usage = run_usage,
                                      .ctx = &ro,
                                      .options = cli_run_options,
                                      .sets = &sets,
                                      .options_first = true,
                                      .dash_dash = true};
    int optind_local;
    int parsed = cli_parse(&parser, argc, argv, &optind_local);
    if (parsed != CLI_PARSE_OK)
        return cli_parse_status(parsed);
    int want_pty = ro.want_pty;
    char **cmd = argv + optind_local;
    char *shell_argv[] = {"/bin/bash", NULL};
    if (shell) {
        if (optind_local + 1 < argc) {
            fprintf(stderr, "cordon: shell: unexpected argument '%s'\n", argv[optind_local + 1]);
            cli_sets_free(&sets);
            return CORDON_EXIT_FAILURE;
        }
        if (optind_local < argc) {
            /* `cordon shell NAME`: back into a kept sandbox's home and /tmp. */
            const char *name = argv[optind_local];
            char *set = NULL;
            if (!state_exists(name)) {
                fprintf(stderr, "cordon: shell: no sandbox named '%s' (see cordon ls)\n", name);
                cli_sets_free(&sets);
                return CORDON_EXIT_FAILURE;
            }
            if (asprintf(&set, "sandbox_name=\"%s\"", name) < 0 || cli_sets_push(&sets, set) < 0) {
                cli_sets_free(&sets);
                return CORDON_EXIT_FAILURE;
            }
        }
        cmd = shell_argv;
    } else if (optind_local >= argc) {
        fprintf(stderr, "cordon: run: no command given\n");
        usage(stderr, false);
        cli_sets_free(&sets);
        return CORDON_EXIT_FAILURE;
    }
    bool pty = want_pty == 1 || (want_pty == -1 && shell && isatty(0) && isatty(1));

    struct cordon_error err = {0};
    struct launch l;
    struct launch_request req = {(const char *const *)sets.items, sets.net_audit_log,
                                 sets.net_hosts_file, NULL};
    int prep = launch_prepare(&req, &l, &err);
    cli_sets_free(&sets);
    if (prep < 0) {
        log_error("%s", err.message);
        return CORDON_EXIT_FAILURE;
    }
    const struct backend_ops *be = l.backend;
    /* The command gets a terminal: made by init (--pty), or outside it
     * (docker run -t) and only made the command's controlling one by init
     * (--ctty); where the terminal is made at start (the vm guest's init),
     * it has the host terminal's size (0x0 without one). */
    l.pty = pty;
    if (pty && backend_has(be, BACKEND_CAP_TERM_SIZE_AT_START))
        term_size(0, &l.pty_rows, &l.pty_cols);
    if (be->report)
        be->report();
    /* Ownership of the name before any sandbox mutation. */
    struct lifecycle lc;
    if (lifecycle_begin(&l, &lc, &err) < 0) {
        log_error("%s", err.message);
        launch_free(&l);
        return CORDON_EXIT_FAILURE;
    }
    if (lifecycle_persist(&lc, &l, &err) < 0) {
        log_error("%s", err.message);
        lifecycle_end(&lc);
        launch_free(&l);
        return CORDON_EXIT_FAILURE;
    }

    char memory[32];
    snprintf(memory, sizeof(memory), "%lld", (long long)l.cfg.limits.memory_mib);
    _cleanup_free_ char **agent_argv = init_argv(be, pty, cmd, memory);
    if (!agent_argv) {
        log_error("out of memory");
        lifecycle_end(&lc);
        launch_free(&l);
        return CORDON_EXIT_FAILURE;
    }
    int status = be->run(&l, &lc, agent_argv, shell);
    long long t = log_now_us();
    lifecycle_end(&lc);
    launch_free(&l);
    log_debug("timing: lifecycle end %lld us", log_now_us() - t);
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
