/* `cordon` entry point: global flags and dispatch to subcommands. Host
 * context, unprivileged. */
#include "cli/commands.h"
#include "config.h"
#include "version.h"
#include "util/error.h"
#include "util/log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct cli_command commands[] = {
    {"run", cmd_run, "run a command in a sandbox of the current workspace"},
    {"shell", cmd_shell, "start an interactive shell in a sandbox"},
    {"config", cmd_config, "show the effective configuration (--explain, --where, check FILE)"},
    {"trust", cmd_trust, "trust this workspace's .cordon.toml (pinned to its content)"},
    {"untrust", cmd_untrust, "stop trusting this workspace's .cordon.toml"},
    {"tool", cmd_tool, "run one of the seven agent tools in a sandbox"},
    {"mcp", cmd_mcp, "serve the tools over MCP (stdio) from one sandbox"},
    {"ls", cmd_ls, "list the sandboxes cordon made (running and stopped)"},
    {"rm", cmd_rm, "remove a stopped sandbox's state"},
    {"changes", cmd_changes, "list what a review-mode sandbox changed (docs/review.md)"},
    {"diff", cmd_diff, "a unified diff of a review-mode sandbox's changes (--stat)"},
    {"apply", cmd_apply, "write a review-mode sandbox's changes into the workspace"},
    {"discard", cmd_discard, "drop a stopped review-mode sandbox's changes"},
    {"rewind", cmd_rewind, "return a review-mode sandbox's workspace to after call N"},
    {"fork", cmd_fork, "copy a review-mode sandbox's changes into a new sandbox"},
    {"gc", cmd_gc, "remove stale sandboxes (not running, older than gc_hours)"},
    {"log", cmd_log, "a session's tool calls and network decisions (--follow, --json)"},
    {"verify", cmd_verify,
     "audit a fresh sandbox, or a running session's (NAME): PASS/FAIL + evidence"},
    {"doctor", cmd_doctor, "check what this host allows each backend, with the fix (--json)"},
    {"help", cmd_help, "describe cordon, or one COMMAND (the same as COMMAND --help)"},
};

/* Not listed: the shell completion scripts (`cordon completions bash`). */
static const struct cli_command hidden_commands[] = {
    {"completions", cmd_completions, "print a shell completion script"},
};

static void usage(FILE *out)
{
    fprintf(out, "usage: cordon [--debug] COMMAND [ARGS...]\n"
                 "       cordon --version | --help\n\ncommands:\n");
    for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
        fprintf(out, "  %-10s %s\n", commands[i].name, commands[i].summary);
    fprintf(out, "\n`cordon help COMMAND` (or `cordon COMMAND --help`) describes a command;\n"
                 "`man cordon` describes them all, `man cordon.toml` the configuration.\n"
                 "Exit status: a usage error is 2 (125 for run, shell, tool, mcp and verify),\n"
                 "cordon's own failure 125; `cordon run` exits with the command's status.\n");
}

int cli_main(int argc, char **argv)
{
    int i = 1;
    for (; i < argc && argv[i][0] == '-'; i++) {
        if (strcmp(argv[i], "--debug") == 0) {
            log_debug_enabled = true;
        } else if (strcmp(argv[i], "--version") == 0) {
            printf("cordon %s (commit %s)\n", CORDON_VERSION, CORDON_COMMIT);
            return 0;
        } else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            usage(stdout);
            return 0;
        } else {
            fprintf(stderr, "cordon: unknown option '%s'\n", argv[i]);
            usage(stderr);
            return CORDON_EXIT_USAGE;
        }
    }
    if (getenv("CORDON_DEBUG") && strcmp(getenv("CORDON_DEBUG"), "1") == 0)
        log_debug_enabled = true;
    if (i >= argc) {
        usage(stderr);
        return CORDON_EXIT_USAGE;
    }
    for (size_t c = 0; c < sizeof(commands) / sizeof(commands[0]); c++) {
        if (strcmp(argv[i], commands[c].name) == 0)
            return commands[c].run(argc - i, argv + i);
    }
    for (size_t c = 0; c < sizeof(hidden_commands) / sizeof(hidden_commands[0]); c++) {
        if (strcmp(argv[i], hidden_commands[c].name) == 0)
            return hidden_commands[c].run(argc - i, argv + i);
    }
    fprintf(stderr, "cordon: unknown command '%s'\n", argv[i]);
    usage(stderr);
    return CORDON_EXIT_USAGE;
}

int main(int argc, char **argv)
{
    return cli_main(argc, argv);
}
